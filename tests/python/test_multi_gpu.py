"""Kernels on a machine with two GPUs or more: each device's primary context, stream, memory and
framework arrays, and arrays of two devices in one call refused. Skipped with fewer than two."""

import numpy as np
import pytest

import kjit
from conftest import CUDA_STATUS, exp_kernel, poisoned

needs_two_gpus = pytest.mark.skipif(len(CUDA_STATUS["devices"]) < 2,
                                    reason=f"fewer than two CUDA devices: {CUDA_STATUS['devices']}")
pytestmark = needs_two_gpus

AXPY = "uint i = thread_position_in_grid.x; out[i] = 2.0f * x[i] + y[i];"


def axpy_kernel():
    # kjit._kjit's factory: these tests choose devices themselves, which KJIT_TEST_DEVICE (see
    # conftest) must not redirect.
    return kjit._kjit.metal_kernel(name="two_gpu_axpy", input_names=["x", "y"],
                                   output_names=["out"], source=AXPY)


def run_axpy(x, y, **kw):
    n = int(np.prod(x.shape))
    return axpy_kernel()(inputs=[x, y], output_shapes=[tuple(x.shape)],
                         output_dtypes=[np.float32], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                         **kw)[0]


def test_both_devices_are_listed():
    assert {"cuda:0", "cuda:1"} <= set(kjit.devices())


def test_torch_tensors_on_the_second_gpu_run_there(rng):
    torch = pytest.importorskip("torch")
    assert torch.cuda.current_device() == 0
    hx, hy = (rng.standard_normal(10_001).astype(np.float32) for _ in range(2))
    x, y = torch.from_numpy(hx).to("cuda:1"), torch.from_numpy(hy).to("cuda:1")
    out = run_axpy(x, y)
    assert out.device == torch.device("cuda:1")
    np.testing.assert_allclose(out.cpu().numpy(), 2.0 * hx.astype(np.float64) + hy,
                               rtol=1e-6, atol=1e-6)
    # The caller's device and CUDA context are left as they were: torch's next op on its
    # current device works, and kjit's next kernel on device 0 too.
    assert torch.cuda.current_device() == 0
    z = torch.from_numpy(hx).cuda() * 3
    np.testing.assert_allclose(z.cpu().numpy(), 3.0 * hx.astype(np.float64), rtol=1e-6)
    out0 = run_axpy(z, z)
    assert out0.device == torch.device("cuda:0")
    np.testing.assert_allclose(out0.cpu().numpy(), 9.0 * hx.astype(np.float64), rtol=1e-6,
                               atol=1e-6)


def test_side_stream_of_the_second_gpu_orders_with_torch(rng):
    torch = pytest.importorskip("torch")
    host = rng.standard_normal(1 << 22).astype(np.float32)
    with torch.cuda.device(1):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            x = torch.from_numpy(host).to("cuda:1")
            x.mul_(0.5)  # queued on device 1's side stream just before the kernel
            out = run_axpy(x, x)  # 2 * x + x, on that stream
            z = out + 1.0
        side.synchronize()
    np.testing.assert_allclose(z.cpu().numpy(), 1.5 * host.astype(np.float64) + 1.0, rtol=1e-6,
                               atol=1e-6)


def test_numpy_inputs_sent_to_the_second_gpu(rng):
    x = rng.standard_normal(5000).astype(np.float32)
    for device in ("cuda:1", "cuda:0", "cuda:1"):
        out = exp_kernel()(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                           grid=(x.size, 1, 1), threadgroup=(256, 1, 1), device=device)[0]
        assert isinstance(out, np.ndarray)
        np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=2e-7)


def test_kjit_arrays_on_both_devices_and_fresh_outputs_on_each(rng):
    hx, hy = (rng.standard_normal(4096).astype(np.float32) for _ in range(2))
    for _ in range(20):  # outputs made and released on both devices, in turns
        for device in ("cuda:0", "cuda:1"):
            x, y = kjit.array(hx, device=device), kjit.array(hy, device=device)
            out = run_axpy(x, y)
            assert out.device == device
            np.testing.assert_allclose(out.numpy(), 2.0 * hx.astype(np.float64) + hy, rtol=1e-6,
                                       atol=1e-6)


def test_arrays_of_two_devices_in_one_call_are_refused(rng):
    torch = pytest.importorskip("torch")
    a = torch.ones(8, device="cuda:0")
    b = torch.ones(8, device="cuda:1")
    with pytest.raises(ValueError, match=r"arrays on different devices \(cuda:0 and cuda:1"):
        run_axpy(a, b)
    # An output on another device than the kernel's.
    with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) is on cuda:1 but the kernel "
                                         r"runs on cuda:0"):
        run_axpy(a, a, outputs=[torch.zeros(8, device="cuda:1")])
    # A device asked for that the arrays are not on.
    with pytest.raises(ValueError, match=r"inputs\[0\] \('x'\) is on cuda:0 but the kernel runs "
                                         r"on cuda:1"):
        run_axpy(a, a, device="cuda:1")


def test_bound_kernel_and_cupy_on_the_second_gpu(rng):
    cupy = pytest.importorskip("cupy")
    hx, hy = (rng.standard_normal(777).astype(np.float32) for _ in range(2))
    bound = axpy_kernel().bind(output_shapes=[(777,)], output_dtypes=[np.float32],
                               grid=(777, 1, 1), threadgroup=(128, 1, 1))
    with cupy.cuda.Device(1):
        x, y = cupy.asarray(hx), cupy.asarray(hy)
        out = cupy.asarray(poisoned((777,), np.float32))
        (res,) = bound(x, y, out)
        (fresh,) = bound(x, y)
        assert res is out and fresh.device.id == 1
        expected = 2.0 * hx.astype(np.float64) + hy
        np.testing.assert_allclose(cupy.asnumpy(out), expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(cupy.asnumpy(fresh), expected, rtol=1e-6, atol=1e-6)
