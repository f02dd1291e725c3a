"""A kernel called on torch tensors that autograd tracks: the call runs, its outputs carry no
gradient, and the kernel warns once that the input's gradient is lost. Calls below autograd
(inside a torch operator's own implementation), under no_grad or inference mode, and on tensors
that do not require grad say nothing. The whole file runs through kjit._torch and, in a
subprocess, through DLPack (KJIT_TORCH_BRIDGE=0)."""

import contextlib
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kjit
from conftest import needs_gpu

torch = pytest.importorskip("torch")

N = 16
SCALE = """
uint i = thread_position_in_grid.x;
out[i] = a[i] * w[i];
"""
LOST = (r"kernel 'scale': inputs\[1\] \('w'\) requires grad.*no gradient reaches it.*"
        r"kjit\.torch\.op\(kernel, \.\.\., backward=\.\.\.\).*torch\.no_grad\(\)")


def scale_kernel():
    return kjit.metal_kernel(name="scale", input_names=["a", "w"], output_names=["out"],
                             source=SCALE)


def settings(device="cpu"):
    return dict(output_shapes=[(N,)], output_dtypes=[torch.float32], grid=(N, 1, 1),
                threadgroup=(N, 1, 1), device=device)


def operands(rng, device="cpu"):
    a = torch.from_numpy(rng.standard_normal(N).astype(np.float32)).to(device)
    w = torch.from_numpy(rng.standard_normal(N).astype(np.float32)).to(device)
    return a, w.requires_grad_()


@contextlib.contextmanager
def every_warning():
    """The warnings issued inside the block, every one of them (no filter hides a repeat)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def check_result(out, a, w):
    assert isinstance(out, torch.Tensor)
    assert not out.requires_grad and out.grad_fn is None
    assert torch.equal(out.cpu(), torch.mul(a.detach(), w.detach()).cpu())


def test_tensors_take_the_path_this_run_is_for():
    path = kjit._kjit.torch_path()
    bridge = os.environ.get("KJIT_TORCH_BRIDGE") != "0"
    assert path.startswith("kjit._torch" if bridge else "DLPack"), path


def test_a_keyword_call_warns_once_and_still_runs(rng):
    k = scale_kernel()
    a, w = operands(rng)
    with pytest.warns(UserWarning, match=LOST):
        (out,) = k(inputs=[a, w], **settings())
    check_result(out, a, w)
    with every_warning() as caught:
        (again,) = k(inputs=[a, w], **settings())
        (other,) = k(inputs=[a, torch.nn.Parameter(w.detach() + 1)], **settings())
    assert caught == []
    check_result(again, a, w)
    check_result(other, a, w.detach() + 1)


def test_a_bound_call_warns_once_for_the_kernel_and_its_bound_kernels(rng):
    k = scale_kernel()
    bound = k.bind(**settings())
    a, w = operands(rng)
    with pytest.warns(UserWarning, match=LOST):
        (out,) = bound(a, w)
    check_result(out, a, w)
    with every_warning() as caught:
        (again,) = bound(a, w)
        (keyword,) = k(inputs=[a, w], **settings())
        (rebound,) = k.bind(**settings())(a, w)
    assert caught == []
    for result in (again, keyword, rebound):
        check_result(result, a, w)
    # Another kernel of the same body warns for itself.
    with pytest.warns(UserWarning, match=LOST):
        scale_kernel().bind(**settings())(a, w)


def test_writing_given_outputs_warns_too(rng):
    k = scale_kernel()
    a, w = operands(rng)
    out = torch.full((N,), float("nan"))
    with pytest.warns(UserWarning, match=LOST):
        k(inputs=[a, w], **settings(), outputs=[out])
    check_result(out, a, w)


def test_no_warning_where_no_gradient_is_lost(rng):
    k = scale_kernel()
    bound = k.bind(**settings())
    a, w = operands(rng)
    with every_warning() as caught:
        with torch.no_grad():
            results = [k(inputs=[a, w], **settings())[0], bound(a, w)[0]]
        with torch.inference_mode():
            results += [k(inputs=[a, w], **settings())[0], bound(a, w)[0]]
        results += [k(inputs=[a, w.detach()], **settings())[0], bound(a, w.detach())[0]]
        plain = w.detach().clone()
        results += [k(inputs=[a, plain], **settings())[0], bound(a, plain)[0]]
    assert caught == []
    for result in results:
        check_result(result, a, w)
    # None of these used up the kernel's warning.
    with pytest.warns(UserWarning, match=LOST):
        k(inputs=[a, w], **settings())


def test_no_warning_below_autograd_with_grad_mode_on(rng):
    # As torch runs an operator's CPU or CUDA implementation from its autograd kernel: autograd's
    # functionality excluded, grad mode untouched.
    k = scale_kernel()
    a, w = operands(rng)
    with every_warning() as caught:
        with torch._C._AutoDispatchBelowAutograd():
            assert torch.is_grad_enabled()
            (out,) = k(inputs=[a, w], **settings())
    assert caught == []
    check_result(out, a, w)
    with pytest.warns(UserWarning, match=LOST):
        k(inputs=[a, w], **settings())


def test_no_warning_inside_a_torch_operator_with_its_own_autograd(rng):
    k = scale_kernel()
    bound = k.bind(**settings())
    library = torch.library.Library("kjit_test_gradwarn", "FRAGMENT")
    library.define("scale(Tensor a, Tensor w) -> Tensor")

    def scale_cpu(a, w):
        (out,) = k(inputs=[a, w], **settings())
        (again,) = bound(a, w)
        assert torch.equal(out, again)
        return out

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        a, w = ctx.saved_tensors
        return grad * w, grad * a

    library.impl("scale", scale_cpu, "CPU")
    torch.library.register_autograd("kjit_test_gradwarn::scale", backward,
                                    setup_context=setup_context, lib=library)
    a, w = operands(rng)
    with every_warning() as caught:
        out = torch.ops.kjit_test_gradwarn.scale(a, w)
    assert not [c for c in caught if "kjit" in str(c.message)], [str(c.message) for c in caught]
    assert out.requires_grad and out.grad_fn is not None
    assert torch.equal(out.detach(), torch.mul(a, w.detach()))
    out.sum().backward()
    assert torch.equal(w.grad, a)
    # The same kernel called directly still warns.
    with pytest.warns(UserWarning, match=LOST):
        k(inputs=[a, w], **settings())


def test_a_filter_that_makes_the_warning_an_error_fails_every_call(rng):
    k = scale_kernel()
    a, w = operands(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            with pytest.raises(UserWarning, match=LOST):
                k(inputs=[a, w], **settings())
    with pytest.warns(UserWarning, match=LOST):
        (out,) = k(inputs=[a, w], **settings())
    check_result(out, a, w)


@needs_gpu
def test_a_gpu_bound_call_warns_once_and_then_runs_as_recorded(rng):
    k = scale_kernel()
    bound = k.bind(**settings("cuda"))
    a, w = operands(rng, "cuda")
    # The first call records its launch; the next, on a tensor that needs grad, must still warn.
    (out,) = bound(a, w.detach())
    check_result(out, a, w)
    with pytest.warns(UserWarning, match=LOST):
        (out,) = bound(a, w)
    check_result(out, a, w)
    with every_warning() as caught:
        results = [bound(a, w)[0] for _ in range(3)] + [k(inputs=[a, w], **settings("cuda"))[0]]
    assert caught == []
    for result in results:
        check_result(result, a, w)


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
