"""verbose=True: the kernel as MLX generates it and the source kjit compiles, each under its own
heading, or printed nowhere."""

import re
import sys

import numpy as np
import pytest

import kjit
from conftest import DEVICES


def test_verbose_prints_generated_source(capsys, rng):
    source = """
        uint i = thread_position_in_grid.x;
        // scale by seven
        out[i] = inp[i] * 7;
    """
    kernel = kjit.metal_kernel(name="verbose_probe", input_names=["inp"], output_names=["out"],
                               source=source)
    a = rng.standard_normal(10).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(10, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(10,)],
                    output_dtypes=[np.float32], verbose=True)
    printed = capsys.readouterr().out
    assert "Generated source code for `verbose_probe`" in printed
    for line in source.strip().splitlines():
        assert line.strip() in printed
    np.testing.assert_array_equal(out, a * np.float32(7))
    # Not verbose: nothing printed.
    kernel(inputs=[a], grid=(10, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(10,)],
           output_dtypes=[np.float32])
    assert capsys.readouterr().out == ""


def test_verbose_without_a_stdout_prints_nowhere(monkeypatch, rng):
    # As print() does when sys.stdout is None (pythonw, a closed console).
    monkeypatch.setattr(sys, "stdout", None)
    kernel = kjit.metal_kernel(name="verbose_nowhere", input_names=["inp"], output_names=["out"],
                               source="uint i = thread_position_in_grid.x; out[i] = inp[i];")
    a = rng.standard_normal(4).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                    output_dtypes=[np.float32], verbose=True)
    np.testing.assert_array_equal(out, a)


MYEXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

# The listing the MLX proposal shows for its myexp example (verbose=True).
PROPOSAL_LISTING = """template <typename T>
[[kernel]] void custom_kernel_myexp(
  const device float16_t* inp [[buffer(0)]],
  device float16_t* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {

    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);

}

template [[host_name("custom_kernel_myexp_float_")]] [[kernel]] decltype(custom_kernel_myexp<float>) custom_kernel_myexp<float>;
"""

# MLX today names the function and its instance alike: custom_kernel_<name>, "_" and the template
# arguments as "_float" (from "<float>"), then each input's and each output's type.
MLX_MYEXP_NAME = "custom_kernel_myexp__float_float16_t_float16_t"

MLX_HEADING = "Generated source code for `{}` (as MLX generates it):\n```\n"
KJIT_HEADING = re.compile(r"Source kjit compiles for `(\w+)` on ([\w:]+):\n```\n")


def sections(printed: str) -> tuple[str, str]:
    """The MLX form and the compiled source of one verbose print, each without its fences."""
    mlx = re.fullmatch(r"Generated source code for `\w+` \(as MLX generates it\):\n```\n"
                       r"(.*)\n```\n(Source kjit compiles .*)", printed, re.S)
    assert mlx, printed
    # On the CPU, a last line says how the kernel's threads run there.
    compiled = re.fullmatch(KJIT_HEADING.pattern + r"(.*)```\n"
                            r"(On the CPU its threads run in \w+ mode: [^\n]+\.\n)?",
                            mlx.group(2), re.S)
    assert compiled, mlx.group(2)
    assert (compiled.group(4) is not None) == (compiled.group(2) == "cpu"), mlx.group(2)
    return mlx.group(1), compiled.group(3)


@pytest.mark.parametrize("device", DEVICES)
def test_myexp_prints_the_proposals_listing_then_the_compiled_source(capsys, device, rng):
    kernel = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                               source=MYEXP)
    a = rng.standard_normal((4, 16)).astype(np.float16)
    capsys.readouterr()  # what the fixtures printed
    (out,) = kernel(inputs=[a], template=[("T", kjit.float32)], grid=(a.size, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype],
                    verbose=True, device=device)
    printed = capsys.readouterr().out
    assert printed.startswith(MLX_HEADING.format("myexp")), printed
    on = "cpu" if device == "cpu" else "cuda:0"
    assert KJIT_HEADING.search(printed).groups() == ("myexp", on)
    mlx, compiled = sections(printed)
    if device == "cpu":
        assert printed.endswith("On the CPU its threads run in loop mode: the body waits for no "
                                "other thread: a group's threads run as one loop.\n"), printed
    assert mlx == re.sub(r"custom_kernel_myexp\w*", MLX_MYEXP_NAME, PROPOSAL_LISTING)
    # The compiled source: kjit's function of the body, with the body's own lines.
    assert "namespace kjit_user" in compiled and "custom_kernel_myexp(" in compiled
    assert '#line 1 "<source>"' in compiled
    for line in MYEXP.strip().splitlines():
        assert line in compiled
    # Qualifiers the translation drops leave no doubled blank behind (blanks before a comment
    # aside).
    assert "const float16_t* inp" in compiled
    doubled = re.compile(r".*\S  +(?!//)\S.*")
    assert not doubled.findall(mlx + compiled), doubled.findall(mlx + compiled)
    ref = np.exp(a.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=1e-3)


CUDA_MYEXP = """
    const unsigned elem = blockIdx.x * blockDim.x + threadIdx.x;
    if (elem < inp_shape[0] * inp_shape[1]) {
        T tmp = inp[elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim)];
        out[elem] = exp(tmp) * K;
    }
"""

# What MLX's CUDA generator writes for CUDA_MYEXP with T=float, K=2 on a float32 input: its
# includes, the __global__ function in mlx::core::cu named after the template arguments, shapes
# and strides as __grid_constant__ Shape and Strides, the template arguments as declarations.
MLX_CUDA_MYEXP = """
#include "mlx/backend/cuda/device/utils.cuh"

#include <cooperative_groups.h>

namespace mlx::core::cu {

namespace cg = cooperative_groups;

__global__ void custom_kernel_myexp_float_2(
    const float* inp,
    const __grid_constant__ Shape inp_shape,
    const __grid_constant__ Strides inp_strides,
    const __grid_constant__ int inp_ndim,
    float* out) {
  using T = float;
  constexpr int K = 2;

""" + CUDA_MYEXP + """
}

} // namespace mlx::core::cu
"""


@pytest.mark.parametrize("device", DEVICES)
def test_cuda_myexp_prints_what_mlxs_cuda_generator_writes(capsys, device, rng):
    kernel = kjit.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                              source=CUDA_MYEXP, ensure_row_contiguous=False)
    a = rng.standard_normal((16, 4)).astype(np.float32).T
    capsys.readouterr()  # what the fixtures printed
    (out,) = kernel(inputs=[a], template=[("T", kjit.float32), ("K", 2)], grid=(a.size, 1, 1),
                    threadgroup=(32, 1, 1), output_shapes=[(a.size,)],
                    output_dtypes=[np.float32], verbose=True, device=device)
    printed = capsys.readouterr().out
    assert printed.startswith(MLX_HEADING.format("myexp")), printed
    mlx, compiled = sections(printed)
    assert mlx == MLX_CUDA_MYEXP
    assert "custom_kernel_myexp(" in compiled and "constexpr int K = 2;" in compiled
    for line in CUDA_MYEXP.strip().splitlines():
        assert line.strip() in compiled
    np.testing.assert_allclose(out, np.exp(a.reshape(-1)) * 2, rtol=1e-6)
