"""kjit kernels as JAX operations (kjit.jax.op): eager and jitted calls against NumPy, a
cooperative kernel under jit, gradients through a custom VJP against finite differences and
pure-JAX references, vmap, and the errors of bad settings and of tracers given to a plain call.
Each case runs on the CPU, and on the GPU where jax and kjit both have one."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import conftest
import kjit
from conftest import needs_gpu

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
kj = pytest.importorskip("kjit.jax")

# The kernels are made by kjit's own factories: kjit.jax.op registers their bound kernels with
# XLA, which the suite's checking wrappers are not. test_kernels_build_for_cuda builds them for a
# GPU, as the suite's compile check does for the others.
metal_kernel = kjit._kjit.metal_kernel

# y = a * exp(b), elementwise over N elements (N from the template).
SCALED_EXP = metal_kernel(
    name="scaled_exp", input_names=["a", "b"], output_names=["y"],
    source="uint i = thread_position_in_grid.x; if (i < N) y[i] = a[i] * metal::exp(b[i]);")
# y = x * x * w, elementwise.
SQUARE_SCALE = metal_kernel(
    name="square_scale", input_names=["x", "w"], output_names=["y"],
    source="uint i = thread_position_in_grid.x; if (i < N) y[i] = x[i] * x[i] * w[i];")
# grad_x = 2 * x * w * grad_y, elementwise: the backward of SQUARE_SCALE's x.
SQUARE_SCALE_GRAD_X = metal_kernel(
    name="square_scale_grad_x", input_names=["x", "w", "grad_y"], output_names=["grad_x"],
    source="uint i = thread_position_in_grid.x; "
           "if (i < N) grad_x[i] = 2 * x[i] * w[i] * grad_y[i];")
# y = alpha * x, alpha a Python float.
AXPY = metal_kernel(
    name="alpha_x", input_names=["x", "alpha"], output_names=["y"],
    source="uint i = thread_position_in_grid.x; if (i < N) y[i] = alpha * x[i];")
# The sum of each block of 64 elements, by a tree reduction in threadgroup memory.
BLOCK_SUM = metal_kernel(
    name="block_sum", input_names=["x"], output_names=["y"],
    source="""
    threadgroup float partial[64];
    uint t = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    partial[t] = i < x_shape[0] ? x[i] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 32; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) y[threadgroup_position_in_grid.x] = partial[0];
    """)
# out[i] += x[i]: out starts as the input acc, which it aliases.
ACCUMULATE = metal_kernel(
    name="accumulate", input_names=["acc", "x"], output_names=["out"],
    source="uint i = thread_position_in_grid.x; if (i < N) out[i] += x[i];")

def like_first(*specs):
    return [specs[0].shape]


def dtype_of_first(*specs):
    return [specs[0].dtype]


def threads(x, *rest):
    return (x.size, 1, 1)


def size_of_first(x, *rest):
    return [("N", int(x.size))]


ELEMENTWISE = dict(output_shapes=like_first, output_dtypes=dtype_of_first, grid=threads,
                   threadgroup=(64, 1, 1), template=size_of_first)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=needs_gpu)])
def device(request):
    """A JAX device of the platform: the op's inputs are placed there, and it runs there."""
    try:
        return jax.devices(request.param)[0]
    except RuntimeError:
        pytest.skip(f"jax has no {request.param} device here")


def on(device, *arrays):
    return [jax.device_put(a, device) for a in arrays]


def test_kernels_build_for_cuda():
    if not conftest.NVRTC:
        pytest.skip(f"NVRTC is {conftest.CUDA_STATUS['nvrtc_error']}")
    f32, n = kjit.float32, [("N", 1)]
    signatures = [(SCALED_EXP, [(f32, 1)] * 2, n), (SQUARE_SCALE, [(f32, 1)] * 2, n),
                  (SQUARE_SCALE_GRAD_X, [(f32, 1)] * 3, n), (AXPY, [(f32, 1), (f32, 0)], n),
                  (BLOCK_SUM, [(f32, 1)], None), (ACCUMULATE, [(f32, 1)] * 2, n)]
    for kernel, inputs, template in signatures:
        kernel.build(inputs=inputs, output_dtypes=[f32], template=template,
                     target=conftest.CUDA_TARGET)


def test_jit_equals_eager_and_numpy(device, rng):
    op = kj.op(SCALED_EXP, **ELEMENTWISE)
    a64, b64 = rng.standard_normal(1000), rng.uniform(-2, 2, 1000)
    a, b = on(device, a64.astype(np.float32), b64.astype(np.float32))
    eager = op(a, b)
    jitted = jax.jit(op)(a, b)
    assert eager.shape == (1000,) and eager.dtype == jnp.float32
    assert list(jitted.devices()) == [device]
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))
    np.testing.assert_allclose(np.asarray(jitted), a64 * np.exp(b64), rtol=1e-5, atol=1e-6)


def test_mixed_with_jnp_ops_in_one_jitted_function(device, rng):
    op = kj.op(SCALED_EXP, **ELEMENTWISE)
    a64, b64 = rng.standard_normal((8, 16)), rng.uniform(-1, 1, (8, 16))
    a, b = on(device, a64.astype(np.float32), b64.astype(np.float32))

    @jax.jit
    def f(a, b):
        return jnp.sum(op(2 * a, jnp.tanh(b)), axis=1) + 1

    # jnp.sum adds 16 float32 terms of up to about 6: a row whose terms cancel is off by a few
    # of their roundings, not by a fraction of its small sum.
    np.testing.assert_allclose(np.asarray(f(a, b)),
                               np.sum(2 * a64 * np.exp(np.tanh(b64)), axis=1) + 1, rtol=1e-5,
                               atol=1e-5)


def test_a_retrace_for_new_shapes_resolves_its_settings_again(device, rng):
    op = kj.op(SCALED_EXP, **ELEMENTWISE)
    f = jax.jit(op)
    for n in (5, 300, 64):
        a64, b64 = rng.standard_normal(n), rng.standard_normal(n)
        a, b = on(device, a64.astype(np.float32), b64.astype(np.float32))
        np.testing.assert_allclose(np.asarray(f(a, b)), a64 * np.exp(b64), rtol=1e-5, atol=1e-6)


def test_cooperative_kernel_under_jit(device, rng):
    blocks = lambda x: [((x.shape[0] + 63) // 64,)]  # noqa: E731
    op = kj.op(BLOCK_SUM, output_shapes=blocks, output_dtypes=[kjit.float32],
               grid=lambda x: (blocks(x)[0][0] * 64, 1, 1), threadgroup=(64, 1, 1))
    x64 = rng.standard_normal(1000)
    (x,) = on(device, x64.astype(np.float32))
    got = np.asarray(jax.jit(op)(x))
    padded = np.concatenate([x64.astype(np.float32).astype(np.float64), np.zeros(24)])
    np.testing.assert_allclose(got, padded.reshape(16, 64).sum(axis=1), rtol=1e-5, atol=1e-5)


def square_scale_op():
    grad_x = kj.op(SQUARE_SCALE_GRAD_X, **ELEMENTWISE)

    def backward(inputs, outputs, grad_outputs):
        x, w = inputs
        (g,) = grad_outputs
        return grad_x(x, w, g), x * x * g  # one gradient by a kjit op, one by jnp

    return kj.op(SQUARE_SCALE, **ELEMENTWISE, backward=backward)


def test_grad_through_the_backward_matches_jax_and_finite_differences(device, rng):
    op = square_scale_op()
    x64, w64 = rng.uniform(0.5, 1.5, 16), rng.uniform(-1, 1, 16)
    x, w = on(device, x64.astype(np.float32), w64.astype(np.float32))

    def loss(x, w):
        return jnp.sum(jnp.sin(op(x, w)))

    def reference(x, w):
        return jnp.sum(jnp.sin(x * x * w))

    gx, gw = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, w)
    rx, rw = jax.grad(reference, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(rx), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(rw), rtol=1e-5, atol=1e-6)
    # Against the exact gradient in float64, and central differences of the op itself.
    y = x64 * x64 * w64
    np.testing.assert_allclose(np.asarray(gx), np.cos(y) * 2 * x64 * w64, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), np.cos(y) * x64 * x64, rtol=1e-4, atol=1e-5)
    h = 1e-2
    f = jax.jit(loss)
    for i in rng.choice(16, 4, replace=False):
        e = np.zeros(16, np.float32)
        e[i] = h
        (step,) = on(device, e)
        fd = (float(f(x + step, w)) - float(f(x - step, w))) / (2 * h)
        assert fd == pytest.approx(float(gx[i]), rel=2e-2, abs=2e-3)


def test_a_backward_op_gets_its_arguments_by_name(device, rng):
    # grad_x from the kernel's names (x, w, grad_y -> grad_x); w, which it does not name, gets
    # a zero gradient.
    op = kj.op(SQUARE_SCALE, **ELEMENTWISE, backward=kj.op(SQUARE_SCALE_GRAD_X, **ELEMENTWISE))
    x64, w64 = rng.uniform(0.5, 1.5, 16), rng.uniform(-1, 1, 16)
    x, w = on(device, x64.astype(np.float32), w64.astype(np.float32))
    gx, gw = jax.jit(jax.grad(lambda x, w: jnp.sum(jnp.sin(op(x, w))), argnums=(0, 1)))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.cos(x64 * x64 * w64) * 2 * x64 * w64,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(gw), np.zeros(16))


def test_a_backward_op_whose_names_match_nothing_is_refused():
    grad_wrong_input = metal_kernel(name="wrong_in", input_names=["z", "grad_y"],
                                    output_names=["grad_x"], source="grad_x[0] = z[0];")
    grad_wrong_output = metal_kernel(name="wrong_out", input_names=["x", "grad_y"],
                                     output_names=["dx"], source="dx[0] = x[0];")
    with pytest.raises(ValueError, match=r"backward: input 'z' of 'wrong_in' names nothing of "
                                         r"the forward: name its inputs after the forward's "
                                         r"inputs \(x, w\), outputs \(y\)"):
        kj.op(SQUARE_SCALE, **ELEMENTWISE, backward=kj.op(grad_wrong_input, **ELEMENTWISE))
    with pytest.raises(ValueError, match=r"backward: output 'dx' of 'wrong_out' is not named "
                                         r"grad_<input> \(inputs: x, w\)"):
        kj.op(SQUARE_SCALE, **ELEMENTWISE, backward=kj.op(grad_wrong_output, **ELEMENTWISE))


def test_an_op_without_backward_refuses_grad(device):
    op = kj.op(SCALED_EXP, **ELEMENTWISE)
    a, b = on(device, np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"'scaled_exp'\] cannot be differentiated: give "
                                        r"kjit.jax.op a backward="):
        jax.grad(lambda a: jnp.sum(op(a, b)))(a)


def test_the_backward_must_return_one_gradient_per_input(device):
    op = kj.op(SQUARE_SCALE, **ELEMENTWISE, backward=lambda i, o, g: (g[0],))
    x, w = on(device, np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"backward: returned 1 gradient\(s\) for 2 input\(s\)"):
        jax.grad(lambda x: jnp.sum(op(x, w)))(x)


@pytest.mark.parametrize("vmap_method", ["sequential", "broadcast_all", "expand_dims"])
def test_vmap(device, rng, vmap_method):
    calls = []

    def grid(a, b):
        calls.append((a.shape, b.shape))
        return (a.size, 1, 1)

    op = kj.op(SCALED_EXP, **dict(ELEMENTWISE, grid=grid), vmap_method=vmap_method)
    a64, b64 = rng.standard_normal((3, 50)), rng.standard_normal(50)
    a, b = on(device, a64.astype(np.float32), b64.astype(np.float32))
    if vmap_method == "expand_dims":
        # The kernel sees b with an axis of 1, which it does not broadcast: N covers a only.
        b = jnp.broadcast_to(b, (3, 50))
        got = jax.jit(jax.vmap(op))(a, b)
    else:
        got = jax.jit(jax.vmap(op, in_axes=(0, None)))(a, b)
    np.testing.assert_allclose(np.asarray(got), a64 * np.exp(b64), rtol=1e-5, atol=1e-6)
    # The settings are resolved for what each launch is given: a slice, or the whole batch.
    expected = ((50,), (50,)) if vmap_method == "sequential" else ((3, 50), (3, 50))
    assert calls == [expected]


def test_scalar_inputs_are_static(device, rng):
    op = kj.op(AXPY, **ELEMENTWISE, scalars={"alpha": float})
    x64 = rng.standard_normal(100)
    (x,) = on(device, x64.astype(np.float32))
    f = jax.jit(lambda x: op(x, 2.5) + op(x, -1))
    np.testing.assert_allclose(np.asarray(f(x)), 1.5 * x64, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match=r"alpha: expected a Python float"):
        op(x, jnp.float32(2))


def test_grad_of_an_op_with_a_scalar_input(device, rng):
    op = kj.op(AXPY, **ELEMENTWISE, scalars={"alpha": float},
               backward=lambda inputs, outputs, grads: (inputs[1] * grads[0], None))
    x64 = rng.standard_normal(40)
    (x,) = on(device, x64.astype(np.float32))
    got = jax.jit(jax.grad(lambda x: jnp.sum(op(x, 3.0) ** 2)))(x)
    np.testing.assert_allclose(np.asarray(got), 18 * x64, rtol=1e-5, atol=1e-5)


def test_a_shape_function_of_the_wrong_type_is_named():
    x = jnp.ones(8, jnp.float32)
    bad_shapes = kj.op(SCALED_EXP, **dict(ELEMENTWISE, output_shapes=lambda a, b: a.shape))
    with pytest.raises(TypeError, match=r"'scaled_exp'\] output_shapes: the output_shapes "
                                        r"function returned .*expected a list of shapes"):
        jax.jit(bad_shapes)(x, x)
    bad_grid = kj.op(SCALED_EXP, **dict(ELEMENTWISE, grid=lambda a, b: a.size))
    with pytest.raises(TypeError, match=r"grid: the grid function returned 8 \(int\); "
                                        r"expected a tuple of 3 ints"):
        jax.jit(bad_grid)(x, x)


def test_unsupported_dtype_is_named():
    op = kj.op(SCALED_EXP, **ELEMENTWISE)
    x = jnp.ones(8, jnp.float8_e4m3fn)
    with pytest.raises(TypeError, match=r"a: arrays of dtype float8_e4m3fn are not supported"):
        jax.jit(op)(x, x)


def test_bad_settings_of_op_itself():
    with pytest.raises(ValueError, match=r"vmap_method: expected one of 'sequential'"):
        kj.op(SCALED_EXP, **ELEMENTWISE, vmap_method="vectorized")
    with pytest.raises(ValueError, match=r"scalars: 'c' is not an input"):
        kj.op(SCALED_EXP, **ELEMENTWISE, scalars={"c": float})
    with pytest.raises(TypeError, match=r"kernel: expected a kjit.Kernel"):
        kj.op(lambda x: x, **ELEMENTWISE)
    op = kj.op(SCALED_EXP, **ELEMENTWISE)
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\) \(a, b\), got 1"):
        op(jnp.ones(3))


def test_a_plain_call_given_a_tracer_points_to_the_op():
    def f(x):
        return SCALED_EXP(inputs=[x, x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                          grid=(8, 1, 1), threadgroup=(8, 1, 1), template=[("N", 8)])[0]

    x = jnp.ones(8, jnp.float32)
    np.testing.assert_allclose(np.asarray(f(x)), np.e * np.ones(8), rtol=1e-6)  # eager: fine
    for transform in (jax.jit, jax.vmap, jax.grad):
        arg = x[0] if transform is jax.grad else x
        with pytest.raises(TypeError, match=r"inputs\[0\] \('a'\): a JAX tracer cannot be read "
                                            r"here: use kjit.jax.op\(\.\.\.\)"):
            transform(lambda x: jnp.sum(f(x)) if transform is jax.grad else f(x))(arg)


def test_shard_map_runs_the_kernel_on_each_host_devices_block():
    # XLA's host platform takes its device count at start: a fresh process.
    script = textwrap.dedent("""
        import numpy as np, jax, jax.numpy as jnp
        from jax.sharding import Mesh, PartitionSpec as P
        import kjit, kjit.jax
        k = kjit._kjit.metal_kernel(
            name="block_exp", input_names=["x"], output_names=["y"],
            source="uint i = thread_position_in_grid.x; if (i < x_shape[0]) "
                   "y[i] = metal::exp(x[i]) + float(x_shape[0]);")
        op = kjit.jax.op(k, output_shapes=lambda x: [x.shape], output_dtypes=lambda x: [x.dtype],
                         grid=lambda x: (x.size, 1, 1), threadgroup=(32, 1, 1))
        devices = jax.devices("cpu")
        assert len(devices) == 4, devices
        mesh = Mesh(np.array(devices), ("i",))
        f = jax.jit(jax.shard_map(op, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
        x = np.linspace(-1, 1, 400).astype(np.float32)
        y = f(x)
        assert len(y.sharding.device_set) == 4
        # Each shard's kernel sees its own block of 100 elements.
        np.testing.assert_allclose(np.asarray(y), np.exp(x.astype(np.float64)) + 100, rtol=1e-6)
        print("ok")
        """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


def test_the_handlers_are_built_for_the_installed_jax():
    assert kjit._kjit.jax_ffi_version() != "", "kjit was built without jax's FFI headers"
    assert set(kjit._kjit.jax_ffi_targets()) == {"cpu", "CUDA"}


def test_doctor_names_the_jax_the_handlers_serve():
    done = subprocess.run([sys.executable, "-m", "kjit", "doctor"], capture_output=True,
                          text=True, timeout=300)
    assert (f"jax: {jax.__version__}; kjit.jax's XLA FFI handlers built for jax "
            f"{kjit._kjit.jax_ffi_version()}\n") in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("donate", [False, True])
def test_an_aliased_output_starts_as_its_input(device, rng, donate):
    op = kj.op(ACCUMULATE, **ELEMENTWISE, input_output_aliases={"acc": "out"})
    acc64, x64 = rng.standard_normal(200) + 3, rng.standard_normal(200)
    acc, x = on(device, acc64.astype(np.float32), x64.astype(np.float32))
    f = jax.jit(op, donate_argnums=(0,) if donate else ())
    expected = acc64.astype(np.float32) + x64.astype(np.float32)
    got = np.asarray(f(acc, x))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    if not donate:
        np.testing.assert_array_equal(np.asarray(acc), acc64.astype(np.float32))  # kept
    # Twice in one program: the second reads the first's result.
    twice = jax.jit(lambda acc, x: op(op(acc, x), x))
    (acc,) = on(device, acc64.astype(np.float32))
    np.testing.assert_allclose(np.asarray(twice(acc, x)), expected + x64.astype(np.float32),
                               rtol=1e-6)


def test_aliases_are_checked():
    with pytest.raises(ValueError, match=r"input_output_aliases: 'y' is not an array input"):
        kj.op(ACCUMULATE, **ELEMENTWISE, input_output_aliases={"y": "out"})
    with pytest.raises(ValueError, match=r"input_output_aliases: 'acc' is not an output"):
        kj.op(ACCUMULATE, **ELEMENTWISE, input_output_aliases={"x": "acc"})
    op = kj.op(ACCUMULATE, **dict(ELEMENTWISE, output_shapes=lambda acc, x: [x.shape]),
               input_output_aliases={"acc": "out"})
    with pytest.raises(ValueError, match=r"input 'acc' \(float32\[4\]\) and output 'out' "
                                         r"\(float32\[8\]\) must have the same shape"):
        jax.jit(op)(jnp.ones(4), jnp.ones(8))
