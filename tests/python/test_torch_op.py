"""kjit kernels as torch operators (kjit.torch.op): torch's own op checks, autograd against torch's
own ops, torch.compile without graph breaks, torch.export, vmap, CUDA graphs, and the errors of
bad settings."""

import io
import itertools
import warnings

import numpy as np
import pytest

import conftest
import kjit
from conftest import DEVICES, needs_gpu

torch = pytest.importorskip("torch")
kt = pytest.importorskip("kjit.torch")

_names = itertools.count()


def unique(name):
    """An op name no other test of this process registered."""
    return f"kjit_test::{name}_{next(_names)}"


@pytest.fixture(autouse=True)
def devices_as_given(monkeypatch):
    """Ops run where their tensors are: the suite's KJIT_TEST_DEVICE does not move them."""
    monkeypatch.setattr(conftest, "TEST_DEVICE", None)


def threads(x, *rest):
    """One thread per element of the first input."""
    return (x.size, 1, 1)


def like_first(*specs):
    return [specs[0].shape]


def dtype_of_first(*specs):
    return [specs[0].dtype]


# y = x * x * w, elementwise (Metal), and its backward as a kernel op named after it.
SCALE = "uint i = thread_position_in_grid.x; if (i < x_shape[0] * x_shape[1]) y[i] = x[i] * x[i] * w[i];"
SCALE_BACKWARD = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0] * x_shape[1]) {
    grad_x[i] = 2 * x[i] * w[i] * grad_y[i];
    grad_w[i] = x[i] * x[i] * grad_y[i];
}
"""


def scale_op(backward=True):
    grad = None
    if backward:
        grad = kt.op(kjit.metal_kernel(name="scale_backward", input_names=["x", "w", "grad_y"],
                                       output_names=["grad_x", "grad_w"], source=SCALE_BACKWARD),
                     unique("scale_backward"),
                     output_shapes=lambda x, w, g: [x.shape, w.shape],
                     output_dtypes=lambda x, w, g: [x.dtype, w.dtype], grid=threads,
                     threadgroup=(64, 1, 1))
    return kt.op(kjit.metal_kernel(name="scale", input_names=["x", "w"], output_names=["y"],
                                   source=SCALE),
                 unique("scale"), output_shapes=like_first, output_dtypes=dtype_of_first,
                 grid=threads, threadgroup=(64, 1, 1), backward=grad)


# y[r] = sum_c x[r, c]^2: one block of 32 threads per row, a tree in shared memory (CUDA C++).
ROW_SUM_SQUARES = """
__shared__ T partial[32];
const unsigned row = blockIdx.x, t = threadIdx.x, cols = x_shape[1];
T s = 0;
for (unsigned c = t; c < cols; c += blockDim.x) {
    const T v = x[row * cols + c];
    s += v * v;
}
partial[t] = s;
__syncthreads();
for (unsigned w = 16; w > 0; w /= 2) {
    if (t < w) partial[t] += partial[t + w];
    __syncthreads();
}
if (t == 0) y[row] = partial[0];
"""
# grad_x[r, c] = 2 x[r, c] grad_y[r] (Metal)
ROW_SUM_SQUARES_BACKWARD = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0] * x_shape[1]) grad_x[i] = 2 * x[i] * grad_y[i / x_shape[1]];
"""


def row_sum_squares_op():
    grad_kernel = kt.op(
        kjit.metal_kernel(name="row_sum_squares_backward", input_names=["x", "grad_y"],
                          output_names=["grad_x"], source=ROW_SUM_SQUARES_BACKWARD),
        unique("row_sum_squares_backward"), output_shapes=like_first,
        output_dtypes=dtype_of_first, grid=threads, threadgroup=(64, 1, 1))

    def backward(inputs, outputs, grad_outputs):
        return [grad_kernel(inputs[0].contiguous(), grad_outputs[0].contiguous())]

    return kt.op(kjit.cuda_kernel(name="row_sum_squares", input_names=["x"], output_names=["y"],
                                  source=ROW_SUM_SQUARES),
                 unique("row_sum_squares"), output_shapes=lambda x: [(x.shape[0],)],
                 output_dtypes=dtype_of_first, grid=lambda x: (32 * x.shape[0], 1, 1),
                 threadgroup=(32, 1, 1), template=lambda x: [("T", x.dtype)],
                 backward=backward)


SIN_COS = "uint i = thread_position_in_grid.x; if (i < x_shape[0]) { s[i] = sin(x[i]); c[i] = cos(x[i]); }"


def sin_cos_op():
    return kt.op(kjit.metal_kernel(name="sin_cos", input_names=["x"], output_names=["s", "c"],
                                   source=SIN_COS),
                 unique("sin_cos"), output_shapes=lambda x: [x.shape, x.shape],
                 output_dtypes=lambda x: [x.dtype, x.dtype], grid=threads,
                 threadgroup=(64, 1, 1))


def tensor(rng, shape, device, dtype=torch.float32, requires_grad=False):
    t = torch.from_numpy(rng.standard_normal(shape)).to(dtype=dtype, device=device)
    return t.requires_grad_(requires_grad)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes_for_an_elementwise_metal_op(rng, device):
    op = scale_op()
    x, w = (tensor(rng, (6, 5), device, requires_grad=True) for _ in range(2))
    torch.library.opcheck(op.overload, (x, w))
    torch.testing.assert_close(op(x, w), x * x * w)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes_for_a_cooperative_cuda_op(rng, device):
    op = row_sum_squares_op()
    x = tensor(rng, (7, 45), device, requires_grad=True)
    torch.library.opcheck(op.overload, (x,))
    torch.testing.assert_close(op(x), (x * x).sum(1))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes_for_a_two_output_op(rng, device):
    op = sin_cos_op()
    x = tensor(rng, (100,), device)
    torch.library.opcheck(op.overload, (x,))
    s, c = op(x)
    torch.testing.assert_close(s, torch.sin(x))
    torch.testing.assert_close(c, torch.cos(x))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_in_float64_through_a_kernel_op_backward(rng, device):
    op = scale_op()
    x, w = (tensor(rng, (3, 4), device, torch.float64, True) for _ in range(2))
    assert torch.autograd.gradcheck(op, (x, w))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_in_float64_through_a_python_backward_calling_a_kernel(rng, device):
    op = row_sum_squares_op()
    x = tensor(rng, (5, 37), device, torch.float64, True)
    assert torch.autograd.gradcheck(op, (x,))


# tanh(x) * a, a learned per feature: the kernel's backward gives the input's gradient; the
# parameter's, a sum over the batch, is torch's.
SCALED_TANH = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0] * x_shape[1]) y[i] = tanh(x[i]) * a[i % x_shape[1]];
"""
SCALED_TANH_BACKWARD = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0] * x_shape[1]) {
    const auto t = tanh(x[i]);
    grad_x[i] = (1 - t * t) * a[i % x_shape[1]] * grad_y[i];
}
"""


def scaled_tanh_op():
    grad_x = kt.op(kjit.metal_kernel(name="scaled_tanh_backward", input_names=["x", "a", "grad_y"],
                                     output_names=["grad_x"], source=SCALED_TANH_BACKWARD),
                   unique("scaled_tanh_backward"), output_shapes=like_first,
                   output_dtypes=dtype_of_first, grid=threads, threadgroup=(64, 1, 1))

    def backward(inputs, outputs, grad_outputs):
        x, a = inputs
        (g,) = grad_outputs
        return [grad_x(x, a, g.contiguous()), (torch.tanh(x) * g).sum(0)]

    return kt.op(kjit.metal_kernel(name="scaled_tanh", input_names=["x", "a"], output_names=["y"],
                                   source=SCALED_TANH),
                 unique("scaled_tanh"), output_shapes=like_first, output_dtypes=dtype_of_first,
                 grid=threads, threadgroup=(64, 1, 1), backward=backward)


class Model(torch.nn.Module):
    def __init__(self, activation):
        super().__init__()
        self.first = torch.nn.Linear(8, 16)
        self.a = torch.nn.Parameter(torch.ones(16))
        self.last = torch.nn.Linear(16, 1)
        self.activation = activation

    def forward(self, x):
        return self.last(self.activation(self.first(x), self.a))


@pytest.mark.parametrize("device", DEVICES)
def test_a_model_with_a_kernel_op_trains_as_the_same_model_in_torch_ops(rng, device):
    # In float64, so that the two models' rounding differences stay far below the tolerance
    # over the 20 steps.
    op = scaled_tanh_op()
    torch.manual_seed(int(rng.integers(1 << 31)))
    ours = Model(op).to(device, torch.float64)
    theirs = Model(lambda x, a: torch.tanh(x) * a).to(device, torch.float64)
    theirs.load_state_dict(ours.state_dict())
    x = tensor(rng, (32, 8), device, torch.float64)
    target = torch.sin(x.sum(1, keepdim=True))
    optimisers = [torch.optim.Adam(m.parameters(), lr=0.03) for m in (ours, theirs)]
    losses = []
    for _ in range(20):
        for model, optimiser in zip((ours, theirs), optimisers):
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
            if model is ours:
                losses.append(loss.item())
            else:
                reference = loss.item()
        assert losses[-1] == pytest.approx(reference, rel=1e-9)
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            assert p.grad is not None, name
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-9, atol=1e-12, msg=name)
        for optimiser in optimisers:
            optimiser.step()
    assert losses[-1] < 0.8 * losses[0]


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_traces_forward_and_backward(rng, device):
    scale, rows = scale_op(), row_sum_squares_op()

    def f(x, w):
        return torch.log1p(rows(scale(torch.sin(x), w) + 1)).sum()

    compiled = torch.compile(f, fullgraph=True)
    for shape in [(4, 33), (6, 9)]:
        x, w = (tensor(rng, shape, device, requires_grad=True) for _ in range(2))
        expected = f(x, w)
        expected_grads = torch.autograd.grad(expected, (x, w))
        got = compiled(x, w)
        grads = torch.autograd.grad(got, (x, w))
        torch.testing.assert_close(got, expected)
        for g, e in zip(grads, expected_grads):
            torch.testing.assert_close(g, e)
        y = torch.sin(x) ** 2 * w + 1
        torch.testing.assert_close(got, torch.log1p((y * y).sum(1)).sum())


def test_torch_export_round_trip(rng):
    op = row_sum_squares_op()

    class Norms(torch.nn.Module):
        def forward(self, x):
            return torch.sqrt(op(x * 2))

    x = tensor(rng, (5, 12), "cpu")
    program = torch.export.export(Norms(), (x,))
    assert any(op.name.replace("::", ".") in str(n.target) for n in program.graph.nodes)
    saved = io.BytesIO()
    torch.export.save(program, saved)
    saved.seek(0)
    loaded = torch.export.load(saved)
    x2 = tensor(rng, (5, 12), "cpu")
    torch.testing.assert_close(loaded.module()(x2), torch.linalg.vector_norm(2 * x2, dim=1))


@pytest.mark.parametrize("device", DEVICES)
def test_an_op_without_backward_warns_once_and_gives_outputs_without_grad(rng, device):
    op = sin_cos_op()
    x = tensor(rng, (50,), device, requires_grad=True)
    with pytest.warns(UserWarning, match=r"\(x\).*has no backward.*backward="):
        s, c = op(x)
    assert not s.requires_grad and s.grad_fn is None and not c.requires_grad
    torch.testing.assert_close(s, torch.sin(x.detach()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op(x)
        with torch.no_grad():
            op(x)
    assert not caught


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_through_a_backward_without_its_own_is_refused(rng, device):
    op = scale_op()
    x, w = (tensor(rng, (2, 3), device, torch.float64, True) for _ in range(2))
    (gx,) = torch.autograd.grad(op(x, w).sum(), x)  # once is fine
    torch.testing.assert_close(gx, 2 * x * w)
    (gx,) = torch.autograd.grad(op(x, w).sum(), x, create_graph=True)
    torch.testing.assert_close(gx, 2 * x * w)
    with pytest.raises(RuntimeError, match=r"double backward.*scale_backward.*has no backward"):
        gx.sum().backward()


def test_double_backward_through_a_differentiable_backward_works(rng):
    kernel = kjit.metal_kernel(name="cube", input_names=["x"], output_names=["y"],
                               source="uint i = thread_position_in_grid.x; "
                                      "if (i < x_shape[0]) y[i] = x[i] * x[i] * x[i];")
    op = kt.op(kernel, unique("cube"), output_shapes=like_first, output_dtypes=dtype_of_first,
               grid=threads, threadgroup=(32, 1, 1),
               backward=lambda inputs, outputs, grads: [3 * inputs[0] ** 2 * grads[0]])
    x = tensor(rng, (9,), "cpu", torch.float64, True)
    assert torch.autograd.gradgradcheck(op, (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_and_grad_of_torch_func(rng, device):
    op = scale_op()
    x, w = (tensor(rng, (4, 3, 5), device) for _ in range(2))
    batched = torch.func.vmap(op)(x, w)
    torch.testing.assert_close(batched, x * x * w)
    shared_w = tensor(rng, (3, 5), device)
    torch.testing.assert_close(torch.func.vmap(op, in_dims=(0, None))(x, shared_w),
                               x * x * shared_w)
    grad = torch.func.grad(lambda a: op(a, shared_w).sum())(x[0])
    torch.testing.assert_close(grad, 2 * x[0] * shared_w)


@pytest.mark.parametrize("device", DEVICES)
def test_an_op_writing_an_output_in_place(rng, device):
    kernel = kjit.metal_kernel(name="axpy", input_names=["x", "a"], output_names=["y"],
                               source="uint i = thread_position_in_grid.x; "
                                      "if (i < x_shape[0]) y[i] += a * x[i];")
    op = kt.op(kernel, unique("axpy"), output_shapes=like_first, output_dtypes=dtype_of_first,
               grid=threads, threadgroup=(32, 1, 1), scalars={"a": float}, mutates=["y"])
    assert "Tensor(a!) y" in str(op.overload._schema)
    assert "float a" in str(op.overload._schema)
    x, y = tensor(rng, (70,), device), tensor(rng, (70,), device)
    expected = y + 2.5 * x
    assert op(x, 2.5, y) is None
    torch.testing.assert_close(y, expected)
    torch.library.opcheck(op.overload, (x, 2.5, y.clone()))

    def f(x, y):
        op(x, -1.0, y)
        return y * 2

    y2 = tensor(rng, (70,), device)
    expected = (y2 - x) * 2
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x, y2), expected)
    torch.testing.assert_close(y2, expected / 2)


def test_eager_calls_skip_the_dispatcher_only_when_nothing_needs_it(rng, monkeypatch):
    op = scale_op()
    dispatched = []
    real = op.overload
    monkeypatch.setattr(op, "overload", lambda *a: dispatched.append(1) or real(*a))
    x, w = tensor(rng, (3, 3), "cpu"), tensor(rng, (3, 3), "cpu")
    torch.testing.assert_close(op(x, w), x * x * w)
    assert not dispatched
    op(x.requires_grad_(), w)
    assert dispatched


class NoOpFunctionMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("device", DEVICES)
def test_the_eager_checks_in_cpp_and_python_agree(rng, device):
    checks = [kt._eager_ready_in_python]
    if kjit._kjit.torch_path().startswith("kjit._torch"):
        checks.append(kt._eager_ready)
        assert kt._eager_ready is not kt._eager_ready_in_python
    x = tensor(rng, (3,), device)
    on_gpu = kt.READY | (kt.ON_GPU if device == "cuda" else 0)
    w = tensor(rng, (3,), device, requires_grad=True)
    cases = [((x,), on_gpu), ((x, 2.0, 3, True), on_gpu | kt.NUMBERS), ((w,), 0),
             ((x, "text"), 0), ((torch.nn.Parameter(x.clone()),), 0),
             ((x.numpy() if device == "cpu" else [],), 0),
             ((torch.empty(3, device="meta"),), 0)]
    for check in checks:
        for args, expected in cases:
            assert check(*args) == expected, (check, args)
        with torch.no_grad():
            assert check(w) == on_gpu
        with NoOpFunctionMode():
            assert check(x) == 0
        with torch._subclasses.fake_tensor.FakeTensorMode():
            assert check(x) == 0
        seen = []
        torch.func.vmap(lambda t: seen.append(check(t)) or t)(x.reshape(3, 1))
        torch.jit.trace(lambda t: seen.append(check(t)) or t * 2, (x,), check_trace=False)
        assert seen == [0, 0]


def test_bad_settings_and_results_are_clear_errors(rng):
    kernel = kjit.metal_kernel(name="bad", input_names=["x"], output_names=["y"],
                               source="uint i = thread_position_in_grid.x; y[i] = x[i];")
    settings = dict(output_dtypes=dtype_of_first, grid=threads, threadgroup=(1, 1, 1))
    x = tensor(rng, (4,), "cpu", requires_grad=True)
    op = kt.op(kernel, unique("bad_shape"), output_shapes=lambda x: x.shape[0], **settings)
    with pytest.raises(TypeError, match=r"output_shapes: the output_shapes function returned 4 "
                                        r"\(int\); expected a list of shapes"):
        op(x.detach())
    # torch.compile reports the shape function's error in its own type, with its message.
    with pytest.raises((TypeError, torch._dynamo.exc.TorchRuntimeError),
                       match="output_shapes function returned 4"):
        torch.compile(op, fullgraph=True, backend="eager")(x.detach())

    op = kt.op(kernel, unique("bad_grads"), output_shapes=like_first,
               backward=lambda inputs, outputs, grads: [grads[0], grads[0]], **settings)
    with pytest.raises(ValueError, match=r"backward: returned 2 gradient\(s\) for 1 input\(s\) "
                                         r"\(x\)"):
        op(x).sum().backward()
    op = kt.op(kernel, unique("bad_grad_shape"), output_shapes=like_first,
               backward=lambda inputs, outputs, grads: [grads[0][:2]], **settings)
    with pytest.raises(ValueError, match=r"gradient for 'x' has shape \(2,\), but 'x' has "
                                         r"shape \(4,\)"):
        op(x).sum().backward()

    name = unique("taken")
    kept = kt.op(kernel, name, output_shapes=like_first, **settings)
    with pytest.raises(ValueError, match=f"name: torch already has an operator '{name}'"):
        kt.op(kernel, name, output_shapes=like_first, **settings)
    del kept
    for bad in ["no_namespace", "aten::mine", "a::b::c", "my lib::x"]:
        with pytest.raises(ValueError, match="name: expected 'namespace::name'"):
            kt.op(kernel, bad, output_shapes=like_first, **settings)
    with pytest.raises(ValueError, match="scalars: 'z' is not an input"):
        kt.op(kernel, unique("s"), output_shapes=like_first, scalars={"z": float}, **settings)
    with pytest.raises(ValueError, match="mutates: 'x' is not an output"):
        kt.op(kernel, unique("m"), output_shapes=like_first, mutates=["x"], **settings)
    with pytest.raises(TypeError, match="kernel: expected a kjit.Kernel"):
        kt.op(lambda x: x, unique("k"), output_shapes=like_first, **settings)
    misnamed = kt.op(kjit.metal_kernel(name="bad_backward", input_names=["q"],
                                       output_names=["grad_x"], source="grad_x[0] = q[0];"),
                     unique("misnamed"), output_shapes=like_first, **settings)
    with pytest.raises(ValueError, match="input 'q' of .* names nothing of the forward"):
        kt.op(kernel, unique("b"), output_shapes=like_first, backward=misnamed, **settings)
    with pytest.raises(TypeError, match=r"takes 1 argument\(s\) \(x\), got 2"):
        kt.op(kernel, unique("count"), output_shapes=like_first, **settings)(x.detach(), x)


@needs_gpu
def test_cuda_graph_capture_and_replay_of_ops(rng):
    scale, rows = scale_op(), row_sum_squares_op()
    x, w = tensor(rng, (64, 40), "cuda"), tensor(rng, (64, 40), "cuda")
    rows(scale(x, w))  # warm-up: built and loaded before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = rows(scale(x, w))
    for _ in range(3):
        x.copy_(tensor(rng, (64, 40), "cuda"))
        graph.replay()
        torch.testing.assert_close(y, (x * x * w).pow(2).sum(1))
        # Other allocations between replays must not reuse the graph's memory.
        junk = [torch.full((1 << 16,), 7.0, device="cuda") for _ in range(8)]
        graph.replay()
        torch.testing.assert_close(y, (x * x * w).pow(2).sum(1))
        del junk


@needs_gpu
def test_reduce_overhead_compiles_ops_into_cuda_graphs(rng):
    scale, rows = scale_op(), row_sum_squares_op()

    def f(x, w):
        return rows(scale(x, w)) + 1

    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    w = tensor(rng, (16, 70), "cuda")
    for _ in range(5):
        x = tensor(rng, (16, 70), "cuda")
        torch.testing.assert_close(compiled(x, w).clone(), f(x, w))


@needs_gpu
def test_prepare_builds_an_op_so_its_first_call_may_be_captured(rng):
    op = sin_cos_op()
    x = tensor(rng, (300,), "cuda")
    op.prepare(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        s, c = op(x)
    x.copy_(tensor(rng, (300,), "cuda"))
    graph.replay()
    torch.testing.assert_close(s, torch.sin(x))
    torch.testing.assert_close(c, torch.cos(x))


@pytest.mark.parametrize("device", DEVICES)
def test_scalar_inputs_are_taken_as_their_declared_type_on_every_path(rng, device):
    kernel = kjit.metal_kernel(name="half_scale", input_names=["x", "a"], output_names=["y"],
                               source="uint i = thread_position_in_grid.x; "
                                      "if (i < x_shape[0]) y[i] = x[i] * (a / 2);")
    op = kt.op(kernel, unique("half_scale"), output_shapes=like_first,
               output_dtypes=dtype_of_first, grid=threads, threadgroup=(32, 1, 1),
               scalars={"a": float})
    x = tensor(rng, (40,), device)
    # An int given for a float input is a float, as torch's dispatcher makes it: 3 / 2 = 1.5.
    torch.testing.assert_close(op(x, 3), x * 1.5)
    torch.testing.assert_close(op.overload(x, 3), x * 1.5)
    with pytest.raises(TypeError, match=r"a: expected a Python float, got Tensor"):
        op(x, x)
    with pytest.raises(TypeError, match=r"x: expected a tensor, got float"):
        op(2.0, 1.0)
    counted = kt.op(kernel, unique("half_scale_int"), output_shapes=like_first,
                    output_dtypes=dtype_of_first, grid=threads, threadgroup=(32, 1, 1),
                    scalars={"a": int})
    torch.testing.assert_close(counted(x, 3), x * 1.0)  # integer division in the kernel
    with pytest.raises(TypeError, match=r"a: expected a Python int, got float"):
        counted(x, 3.0)


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_written_in_place_follow_the_order_given_and_bump_versions(rng, device):
    kernel = kjit.metal_kernel(name="two_fills", input_names=["x"], output_names=["p", "q"],
                               source="uint i = thread_position_in_grid.x; "
                                      "if (i < x_shape[0]) { p[i] = x[i] + 1; q[i] = x[i] - 1; }")
    op = kt.op(kernel, unique("two_fills"), output_shapes=lambda x: [x.shape, x.shape],
               output_dtypes=lambda x: [x.dtype, x.dtype], grid=threads,
               threadgroup=(32, 1, 1), mutates=["q", "p"])
    assert str(op.overload._schema).startswith(
        op.name + "(Tensor x, Tensor(a!) q, Tensor(b!) p)")
    x, q, p = tensor(rng, (20,), device), torch.zeros(20, device=device), torch.zeros(20,
                                                                                     device=device)
    versions = (q._version, p._version)
    op(x, q, p)
    torch.testing.assert_close(q, x - 1)
    torch.testing.assert_close(p, x + 1)
    assert q._version > versions[0] and p._version > versions[1]
    # autograd sees the write: a backward needing q's old values is refused, not wrong.
    w = torch.ones(20, device=device, requires_grad=True)
    z = w * q
    op(x, q, p)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with pytest.raises(ValueError, match="mutates: 'p' is named twice"):
        kt.op(kernel, unique("twice"), output_shapes=lambda x: [x.shape, x.shape],
              output_dtypes=lambda x: [x.dtype, x.dtype], grid=threads,
              threadgroup=(32, 1, 1), mutates=["p", "p"])


def test_tracers_and_meta_tensors_go_through_the_dispatcher(rng):
    op = sin_cos_op()
    x = tensor(rng, (30,), "cpu")
    traced = torch.jit.trace(lambda t: op(t)[0] + 1, (x,), check_trace=False)
    x2 = tensor(rng, (30,), "cpu")
    torch.testing.assert_close(traced(x2), torch.sin(x2) + 1)  # not the first call's constant
    s, c = op(torch.empty(30, device="meta"))
    assert s.device.type == "meta" and s.shape == (30,)


def test_forward_mode_ad_is_refused_not_dropped(rng):
    op = scale_op()
    x, w = tensor(rng, (2, 3), "cpu"), tensor(rng, (2, 3), "cpu")
    # torch.func.jvp reaches the op's autograd.Function, which torch refuses, saying why.
    with pytest.raises(RuntimeError, match="forward-mode AD .* is not supported|"
                                           "implement the jvp function"):
        torch.func.jvp(lambda t: op(t, w), (x,), (torch.ones_like(x),))
    with pytest.raises(RuntimeError, match="forward-mode AD .* is not supported"):
        torch.func.jvp(lambda t: sin_cos_op()(t[0])[0], (x,), (torch.ones_like(x),))
    with torch.autograd.forward_ad.dual_level():
        dual = torch.autograd.forward_ad.make_dual(x, torch.ones_like(x))
        with pytest.raises(RuntimeError, match="forward-mode AD .* is not supported"):
            op(dual, w)


def test_a_dtype_for_a_list_of_dtypes_and_a_failing_function_name_the_setting(rng):
    op = kt.op(kjit.metal_kernel(name="slips", input_names=["x"], output_names=["y"],
                                 source="y[0] = x[0];"),
               unique("slips"), output_shapes=like_first, output_dtypes=lambda x: [x.dtype],
               grid=(1, 1, 1), threadgroup=(1, 1, 1))
    with pytest.raises(TypeError) as e:
        op.kernel(inputs=[np.zeros(2, np.float32)], output_shapes=[(2,)],
                  output_dtypes=np.float32, grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert "output_dtypes: expected a list" in str(e.value)
    broken = kt.op(op.kernel, unique("broken"), output_shapes=lambda x, y: [x.shape],
                   output_dtypes=dtype_of_first, grid=(1, 1, 1), threadgroup=(1, 1, 1))
    with pytest.raises(TypeError) as e:
        broken(tensor(rng, (2,), "cpu"))
    assert "output_shapes: raised by the output_shapes function" in "".join(e.value.__notes__)
