"""torch tensors in and out, on the CPU and the GPU: read and made through kjit._torch (torch's
C++ API) where it was built for this torch, through DLPack otherwise; the whole file runs both
ways and must give the same results."""

import gc
import os
import pathlib
import resource
import subprocess
import sys

import numpy as np
import pytest

import kjit
from conftest import DEVICES, needs_gpu, run_exp

torch = pytest.importorskip("torch")

COPY = "out[thread_position_in_grid.x] = inp[thread_position_in_grid.x];"
# Every dtype kjit and torch share, with the NumPy type its values are drawn as.
DTYPES = {
    torch.bool: np.bool_, torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32,
    torch.int64: np.int64, torch.uint8: np.uint8, torch.uint16: np.uint16,
    torch.uint32: np.uint32, torch.uint64: np.uint64, torch.float16: np.float16,
    torch.bfloat16: np.float32, torch.float32: np.float32, torch.float64: np.float64,
    torch.complex64: np.complex64,
}


def copy_kernel():
    return kjit.metal_kernel(name="torch_copy", input_names=["inp"], output_names=["out"],
                             source=COPY)


def random_tensor(rng, dtype, shape, device):
    np_type = DTYPES[dtype]
    if np_type == np.bool_:
        values = rng.standard_normal(shape) > 0
    elif np.issubdtype(np_type, np.integer):
        info = np.iinfo(np_type)
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, dtype=np_type)
    elif np_type == np.complex64:
        values = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_type)
    else:
        values = rng.standard_normal(shape).astype(np_type)
    return torch.from_numpy(np.ascontiguousarray(values)).to(dtype).to(device)


def test_tensors_go_the_expected_way():
    built = any(pathlib.Path(kjit.__file__).parent.glob("_torch*.so"))
    path = kjit._kjit.torch_path()
    if os.environ.get("KJIT_TORCH_BRIDGE") == "0":
        assert path.startswith("DLPack") and "KJIT_TORCH_BRIDGE=0" in path, path
    elif built:
        assert path.startswith("kjit._torch"), path
        from kjit import _torch

        assert _torch.torch_version == torch.__version__
    else:  # built at first use for this torch, in the disk cache
        assert path.startswith("kjit._torch"), path
        from kjit import _torch

        assert _torch.torch_version == torch.__version__
        assert pathlib.Path(_torch.__file__).is_relative_to(kjit.cache_info()["directory"])


@pytest.mark.parametrize("device", DEVICES)
def test_every_dtype_in_and_out(device, rng):
    copy = copy_kernel()
    for dtype in DTYPES:
        x = random_tensor(rng, dtype, (3, 7), device)
        (out,) = copy(inputs=[x], output_shapes=[(3, 7)], output_dtypes=[dtype],
                      grid=(21, 1, 1), threadgroup=(32, 1, 1), device=device)
        assert isinstance(out, torch.Tensor), dtype
        assert out.dtype == dtype and out.device == x.device and out.shape == x.shape, dtype
        assert out.is_contiguous() and not out.requires_grad, dtype
        assert torch.equal(out.cpu(), x.cpu()), dtype
        given = random_tensor(rng, dtype, (3, 7), device)  # overwritten in place
        (same,) = copy(inputs=[x], output_shapes=[(3, 7)], output_dtypes=[dtype],
                       grid=(21, 1, 1), threadgroup=(32, 1, 1), outputs=[given])
        assert same is given and torch.equal(given.cpu(), x.cpu()), dtype


@pytest.mark.parametrize("device", DEVICES)
def test_views_scalars_and_parameters(device, rng):
    base = torch.from_numpy(rng.standard_normal((9, 8)).astype(np.float32)).to(device)
    scale = kjit.metal_kernel(
        name="torch_scale", input_names=["inp", "s"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] * s;")
    views = {
        "transposed": base.t(),
        "offset rows": base[3:7],
        "every other column": base[:, ::2],
        "broadcast row": base[2].expand(5, 8),
        "parameter": torch.nn.Parameter(base.clone()),
    }
    for what, v in views.items():
        s = torch.tensor(rng.uniform(1, 2), dtype=torch.float32, device=device)  # 0-d: a value
        (out,) = scale(inputs=[v, s], output_shapes=[tuple(v.shape)],
                       output_dtypes=[torch.float32], grid=(v.numel(), 1, 1),
                       threadgroup=(64, 1, 1), device=device)
        expected = v.detach().cpu().double().numpy() * float(s)
        np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, err_msg=what)


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_outlive_the_kernel_and_inputs(device, rng):
    values = rng.standard_normal(1000).astype(np.float32)
    x = torch.from_numpy(values).to(device)
    (out,) = copy_kernel()(inputs=[x], output_shapes=[(1000,)], output_dtypes=[torch.float32],
                           grid=(1000, 1, 1), threadgroup=(128, 1, 1), device=device)
    del x
    gc.collect()
    twice = out * 2  # a torch operation on the kernel's output
    np.testing.assert_array_equal(twice.cpu().numpy(), values * 2)


def test_released_outputs_give_their_memory_back():
    # 40 outputs of 64 MiB, each released before the next: kept, they would hold 2.5 GiB.
    n = 16 << 20
    fill = kjit.metal_kernel(name="torch_fill", input_names=["inp"], output_names=["out"],
                             source="out[thread_position_in_grid.x] = inp[0];")
    x = torch.ones(1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(40):
        (out,) = fill(inputs=[x], output_shapes=[(n,)], output_dtypes=[torch.float32],
                      grid=(n, 1, 1), threadgroup=(256, 1, 1), device="cpu")
        assert out[n - 1].item() == 1.0
        del out
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 512 << 10, grown_kib


@needs_gpu
def test_torch_in_torch_out(rng):
    x = torch.from_numpy(rng.standard_normal(50_000).astype(np.float32)).cuda()
    out = run_exp(x)
    assert isinstance(out, torch.Tensor) and out.device == x.device and out.dtype == x.dtype
    np.testing.assert_allclose(out.cpu().numpy(), np.exp(x.cpu().numpy().astype(np.float64)),
                               rtol=2e-7)


@needs_gpu
def test_torch_side_stream_orders_with_torch_ops(rng):
    n = 1 << 24
    side = torch.cuda.Stream()
    host = rng.standard_normal(n).astype(np.float32)
    with torch.cuda.stream(side):
        x = torch.from_numpy(host).cuda(non_blocking=False)
        x.mul_(0.5)  # queued on the side stream just before the kernel
        y = run_exp(x)  # must run after mul_, on the side stream
        z = y * 2.0  # and torch's next op must see its output
    side.synchronize()
    np.testing.assert_allclose(z.cpu().numpy(), 2 * np.exp(0.5 * host.astype(np.float64)),
                               rtol=1e-6)


@needs_gpu
def test_outputs_in_place_torch(rng):
    x = torch.from_numpy(rng.standard_normal(3000).astype(np.float32)).cuda()
    out = torch.full_like(x, float("nan"))
    res = run_exp(x, outputs=[out])
    assert res is out
    np.testing.assert_allclose(out.cpu().numpy(), np.exp(x.cpu().numpy().astype(np.float64)),
                               rtol=2e-7)


@needs_gpu
def test_strided_torch_views(rng):
    base = torch.from_numpy(rng.standard_normal((64, 48)).astype(np.float32)).cuda()
    view = base.t()[::2]  # (24, 64), not row-contiguous
    ref = np.exp(view.cpu().numpy().astype(np.float64))
    out = run_exp(view)  # copied on the GPU first
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=2e-7)
    strided = kjit.metal_kernel(name="strided_exp", input_names=["inp"], output_names=["out"],
                                ensure_row_contiguous=False, source="""
        uint i = thread_position_in_grid.x;
        out[i] = metal::exp(inp[elem_to_loc(i, inp_shape, inp_strides, inp_ndim)]);
    """)
    (out2,) = strided(inputs=[view], output_shapes=[tuple(view.shape)],
                      output_dtypes=[view.dtype], grid=(view.numel(), 1, 1),
                      threadgroup=(128, 1, 1))
    np.testing.assert_allclose(out2.cpu().numpy(), ref, rtol=2e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_tensors_of_every_kind(device, rng):
    copy = kjit.metal_kernel(name="torch_copy", input_names=["inp"], output_names=["out"],
                             source="out[thread_position_in_grid.x] = "
                                    "inp[thread_position_in_grid.x];")
    values = rng.standard_normal(24)
    complex_values = values[:12] + 1j * values[12:]
    cases = {
        "float32 needing grad": torch.tensor(values, dtype=torch.float32, requires_grad=True),
        "float16": torch.tensor(values, dtype=torch.float16),
        "bfloat16": torch.tensor(values, dtype=torch.bfloat16),
        "bool": torch.tensor(values > 0),
        "int64 transposed": torch.tensor((values * 100).astype(np.int64)).reshape(4, 6).t(),
        "lazily conjugated complex64": torch.tensor(complex_values, dtype=torch.complex64).conj(),
        "lazily negated float32": torch.tensor(complex_values, dtype=torch.complex64).conj().imag,
    }
    for what, t in cases.items():
        t = t.to(device)
        expected = t.detach().resolve_conj().contiguous().cpu()
        (out,) = copy(inputs=[t], output_shapes=[tuple(t.shape)], output_dtypes=[t.dtype],
                      grid=(t.numel(), 1, 1), threadgroup=(32, 1, 1), device=device)
        assert isinstance(out, torch.Tensor) and out.dtype == t.dtype, what
        assert out.device == t.device, what
        assert torch.equal(out.cpu(), expected), what
    lazy = torch.zeros(12, dtype=torch.complex64, device=device).conj()
    with pytest.raises(ValueError, match=r"outputs\[0\].*lazy conjugation or negation"):
        copy(inputs=[lazy.resolve_conj()], output_shapes=[(12,)], output_dtypes=[lazy.dtype],
             grid=(12, 1, 1), threadgroup=(32, 1, 1), device=device, outputs=[lazy])


@pytest.mark.parametrize("device", DEVICES)
def test_tensors_torch_would_not_write_in_place_are_refused_as_outputs(device, rng):
    x = torch.from_numpy(rng.standard_normal(8).astype(np.float32)).to(device)
    weight = torch.zeros(8, device=device, requires_grad=True)
    # Not a leaf: torch would record an in-place write for autograd, which cannot see a kernel's.
    scaled = torch.zeros(8, device=device, requires_grad=True) * 2
    with torch.inference_mode():
        frozen = torch.zeros(8, device=device)
    call = dict(inputs=[x], output_shapes=[(8,)], output_dtypes=[x.dtype], grid=(8, 1, 1),
                threadgroup=(8, 1, 1), device=device)
    copy = copy_kernel()
    bound = copy.bind(**{k: v for k, v in call.items() if k != "inputs"})
    for out, words in [(weight, "a leaf tensor that requires grad"),
                       (scaled, "a tensor that requires grad cannot be written while grad mode"),
                       (frozen, "an inference tensor")]:
        with pytest.raises(ValueError, match=r"outputs\[0\]: " + words):
            copy(**call, outputs=[out])
        with pytest.raises(ValueError, match=words):
            bound(x, out)
        assert not out.detach().any()
    # Where torch allows it, so does kjit: under no_grad, in inference mode, and as inputs.
    with torch.no_grad():
        copy(**call, outputs=[weight])
        bound(x, scaled)
    with torch.inference_mode():
        bound(x, frozen)
    assert torch.equal(weight.detach(), x) and torch.equal(scaled.detach(), x)
    assert torch.equal(frozen, x)
    (out,) = copy(**{**call, "inputs": [weight]})
    assert torch.equal(out, x)


@needs_gpu
def test_kjit_may_make_a_programs_first_cuda_tensor(rng):
    # torch's CUDA state is set up as its own constructors do, so torch can work on the output.
    script = r"""
import sys, numpy as np, torch, kjit
k = kjit.metal_kernel(name="torch_copy", input_names=["inp"], output_names=["out"],
                      source=sys.argv[1])
x = torch.from_numpy(np.array(sys.argv[2].split(","), dtype=np.float32))
assert not torch.cuda.is_initialized()
(out,) = k(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[x.dtype],
           grid=(x.numel(), 1, 1), threadgroup=(32, 1, 1), device="cuda")
assert out.is_cuda and torch.cuda.is_initialized()
assert torch.equal((out * 2 + torch.ones_like(out)).cpu(), x * 2 + 1)
"""
    values = ",".join(str(v) for v in rng.standard_normal(10).astype(np.float32))
    run = subprocess.run([sys.executable, "-c", script, COPY, values], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_another_torch_version_goes_through_dlpack(rng):
    script = r"""
import sys, numpy as np, torch
torch.__version__ = "0.0.1"  # as if torch had changed since kjit was built
import kjit
k = kjit.metal_kernel(name="torch_copy", input_names=["inp"], output_names=["out"],
                      source=sys.argv[1])
x = torch.from_numpy(np.array(sys.argv[2].split(","), dtype=np.float32))
(out,) = k(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[x.dtype],
           grid=(x.numel(), 1, 1), threadgroup=(32, 1, 1), device="cpu")
assert isinstance(out, torch.Tensor) and torch.equal(out, x)
print(kjit._kjit.torch_path())
"""
    values = ",".join(str(v) for v in rng.standard_normal(10).astype(np.float32))
    env = {k: v for k, v in os.environ.items() if k != "KJIT_TORCH_BRIDGE"}
    run = subprocess.run([sys.executable, "-c", script, COPY, values], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    path = run.stdout.strip()
    if any(pathlib.Path(kjit.__file__).parent.glob("_torch*.so")):
        assert path.startswith("DLPack"), path
        assert "built for torch" in path and "not torch 0.0.1" in path, path
    else:  # without a bridge of kjit's build, one is built at first use for the torch running
        assert path.startswith("kjit._torch"), path


@pytest.mark.skipif(os.environ.get("KJIT_TORCH_BRIDGE") == "0", reason="already the DLPack run")
def test_this_file_through_dlpack():
    package_dir = str(pathlib.Path(kjit.__file__).parents[1])
    path = os.pathsep.join(filter(None, [package_dir, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, KJIT_TORCH_BRIDGE="0", PYTHONPATH=path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          __file__, "-k", "not test_this_file_through_dlpack"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
