"""Kernel names: whatever MLX accepts, since the generated function is custom_kernel_<name>, so
a name may start with a digit; messages and verbose output show the name as given."""

import re

import numpy as np
import pytest

import kjit

CONV_METAL = """
    uint i = thread_position_in_grid.x;
    float acc = 0.0f;
    for (int k = 0; k < w_shape[0]; ++k) acc += w[k] * x[i + k];
    out[i] = acc;
"""

CONV_CUDA = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= out_size) return;
    float acc = 0.0f;
    for (int k = 0; k < w_shape[0]; ++k) acc += w[k] * x[i + k];
    out[i] = acc;
"""


@pytest.mark.parametrize("name", ["1D_conv", "0", "9_9", "_", "_1", "conv__1d"])
@pytest.mark.parametrize("api", ["metal", "cuda"])
def test_names_mlx_accepts_build_and_run(api, name, rng):
    n, taps = int(rng.integers(20, 90)), int(rng.integers(2, 6))
    x = rng.standard_normal(n + taps - 1).astype(np.float32)
    w = rng.standard_normal(taps).astype(np.float32)
    if api == "metal":
        kernel = kjit.metal_kernel(name=name, input_names=["x", "w"], output_names=["out"],
                                   source=CONV_METAL)
        inputs = [x, w]
    else:
        kernel = kjit.cuda_kernel(name=name, input_names=["x", "w", "out_size"],
                                  output_names=["out"], source=CONV_CUDA)
        inputs = [x, w, np.int32(n)]
    (out,) = kernel(inputs=inputs, grid=(n, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(n,)],
                    output_dtypes=[np.float32])
    assert kernel.name == name
    np.testing.assert_allclose(out, np.correlate(x, w, mode="valid"), rtol=1e-5, atol=1e-5)


def test_verbose_shows_the_name_as_given_and_the_prefixed_function(capsys, rng):
    kernel = kjit.metal_kernel(name="1D_conv", input_names=["x", "w"], output_names=["out"],
                               source=CONV_METAL)
    x = rng.standard_normal(12).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    (out,) = kernel(inputs=[x, w], grid=(10, 1, 1), threadgroup=(16, 1, 1),
                    output_shapes=[(10,)], output_dtypes=[np.float32], verbose=True)
    printed = capsys.readouterr().out
    assert "Generated source code for `1D_conv`" in printed
    assert "custom_kernel_1D_conv(" in printed
    np.testing.assert_allclose(out, np.correlate(x, w, mode="valid"), rtol=1e-5, atol=1e-5)


def test_call_errors_name_the_kernel_as_given(rng):
    kernel = kjit.metal_kernel(name="2pass", input_names=["x"], output_names=["out"],
                               source="out[thread_position_in_grid.x] = x[0];")
    with pytest.raises(ValueError, match=r"^\[kjit\.metal_kernel\] kernel '2pass': "):
        kernel(inputs=[rng.standard_normal(4).astype(np.float32)], grid=(4, 1, 1),
               threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[np.float32],
               template=[("1T", np.float32)])


def test_compile_errors_name_the_kernel_as_given():
    kernel = kjit.metal_kernel(name="3d_bad", input_names=["x"], output_names=["out"],
                               source="out[0] = x[0] + not_declared_anywhere;")
    with pytest.raises(Exception, match=r"kernel '3d_bad'") as excinfo:
        kernel(inputs=[np.zeros(1, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
               output_shapes=[(1,)], output_dtypes=[np.float32])
    assert "not_declared_anywhere" in str(excinfo.value)


@pytest.mark.parametrize("name,why", [
    ("1D-conv", "a kernel name has only ASCII letters, digits and underscores"),
    ("conv.1d", "a kernel name has only ASCII letters, digits and underscores"),
    ("", "a kernel name cannot be empty"),
    ("while", "it is a C\\+\\+ keyword"),
])
@pytest.mark.parametrize("api", ["metal", "cuda"])
def test_other_names_are_refused_naming_the_parameter(api, name, why):
    factory = kjit.metal_kernel if api == "metal" else kjit.cuda_kernel
    pattern = rf"^\[kjit\.{api}_kernel\] name: '{re.escape(name)}' is not a valid identifier: {why}$"
    with pytest.raises(ValueError, match=pattern):
        factory(name=name, input_names=["a"], output_names=["o"], source="o[0] = a[0];")
