"""Kernels, bound kernels and kjit.torch ops pickle and copy by what made them (to pool and
torch.multiprocessing workers too): in a fresh process an unpickled kernel finds its programs
in the disk cache and compiles nothing."""

import copy
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import conftest
import kjit

TWICE = "uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = x[i] * scale;"


@pytest.fixture(autouse=True)
def real_kernels(real_factories, monkeypatch):
    """kjit's own kernels (the suite's wrappers are test objects, not kjit's), run where
    the test says."""
    monkeypatch.setattr(conftest, "TEST_DEVICE", None)


def scaled_kernel(**options):
    return kjit.metal_kernel(name="pickled_scale", input_names=["x"], output_names=["y"],
                             source=TWICE, header="constant float scale = 3.0f;", **options)


def run(kernel, x):
    return kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                  grid=(x.size, 1, 1), threadgroup=(32, 1, 1))[0]


@pytest.mark.parametrize("copier", [lambda k: pickle.loads(pickle.dumps(k)), copy.copy,
                                    copy.deepcopy], ids=["pickle", "copy", "deepcopy"])
def test_a_kernel_is_made_again_from_its_arguments(rng, copier):
    kernel = scaled_kernel(compile_options={"math_mode": "relaxed"})
    again = copier(kernel)
    assert isinstance(again, kjit.Kernel) and again is not kernel
    assert (again.name, again.input_names, again.output_names) == (
        "pickled_scale", ["x"], ["y"])
    assert again.__reduce__()[1] == kernel.__reduce__()[1]
    x = rng.standard_normal(100).astype(np.float32)
    np.testing.assert_allclose(run(again, x), x.astype(np.float64) * 3, rtol=1e-6)


def test_a_cuda_kernel_keeps_its_shared_memory_and_options():
    kernel = kjit.cuda_kernel(name="pickled_cuda", input_names=["x"], output_names=["y"],
                              source="y[threadIdx.x] = x[threadIdx.x];", shared_memory=4096,
                              ensure_row_contiguous=False, atomic_outputs=True,
                              compile_options={"debug": True, "line_info": True})
    factory, arguments = pickle.loads(pickle.dumps(kernel)).__reduce__()[1]
    assert factory == "cuda_kernel"
    assert arguments[5:] == (False, 4096, {"math_mode": "safe", "debug": True,
                                           "line_info": True}, True)


@pytest.mark.parametrize("copier", [lambda k: pickle.loads(pickle.dumps(k)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_bound_kernel_is_bound_again(rng, copier):
    kernel = kjit.metal_kernel(name="pickled_bound", input_names=["x"], output_names=["y"],
                               source="uint i = thread_position_in_grid.x; "
                                      "if (i < N && flag) y[i] = T(x[i]) + 0.5;")
    bound = kernel.bind(output_shapes=[(60,)], output_dtypes=[np.float64], grid=(64, 1, 1),
                        threadgroup=(32, 1, 1),
                        template=[("T", kjit.float64), ("N", 50), ("flag", True)],
                        init_value=-1.0, device="cpu")
    again = copier(bound)
    assert isinstance(again, kjit.BoundKernel) and again is not bound
    x = rng.standard_normal(60).astype(np.float32)
    y = again(x)[0]
    np.testing.assert_array_equal(y[:50], x[:50].astype(np.float64) + 0.5)
    np.testing.assert_array_equal(y[50:], -1.0)  # init_value kept: the rest never written


def test_a_bound_kernel_with_a_stream_object_is_refused_by_pickle():
    class Stream:
        cuda_stream = 0

    bound = scaled_kernel().bind(output_shapes=[(4,)], output_dtypes=[np.float32],
                                 grid=(4, 1, 1), threadgroup=(4, 1, 1), stream=Stream())
    with pytest.raises(TypeError, match="bound to a stream object cannot be pickled"):
        pickle.dumps(bound)


def test_a_pickle_naming_another_factory_is_refused():
    from kjit import _pickling

    with pytest.raises(ValueError, match="names the factory 'eval'"):
        _pickling.kernel_from("eval", ("1",))


CHILD = """
import pickle, sys
import numpy as np
import kjit
kernel, x = pickle.load(open(sys.argv[1], "rb"))
y = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
           threadgroup=(32, 1, 1))[0]
info = kjit.cache_info()
print(repr((y.tolist(), info["compiles"], info["disk_hits"])))
"""


def test_an_unpickled_kernel_in_a_fresh_process_compiles_nothing(rng, tmp_path):
    kernel = scaled_kernel()
    x = rng.standard_normal(40).astype(np.float32)
    expected = run(kernel, x)  # compiled here, into the shared disk cache
    path = tmp_path / "kernel.pickle"
    path.write_bytes(pickle.dumps((kernel, x)))
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    values, compiles, disk_hits = eval(done.stdout.strip().splitlines()[-1])
    np.testing.assert_array_equal(np.array(values, np.float32), expected)
    np.testing.assert_allclose(values, x.astype(np.float64) * 3, rtol=1e-6)
    assert compiles == 0 and disk_hits >= 1


OPS_MODULE = """
import kjit
import kjit.torch

SQUARE = "uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = x[i] * x[i];"
SQUARE_GRAD = ("uint i = thread_position_in_grid.x; "
               "if (i < x_shape[0]) grad_x[i] = 2 * x[i] * grad_y[i];")


def same_shape(x, *rest):
    return [x.shape]


def same_dtype(x, *rest):
    return [x.dtype]


def threads(x, *rest):
    return (x.size, 1, 1)


settings = dict(output_shapes=same_shape, output_dtypes=same_dtype, grid=threads,
                threadgroup=(32, 1, 1))
square_grad = kjit.torch.op(
    kjit.metal_kernel(name="square_grad", input_names=["x", "grad_y"], output_names=["grad_x"],
                      source=SQUARE_GRAD), "kjit_pickled::square_grad", **settings)
square = kjit.torch.op(
    kjit.metal_kernel(name="square", input_names=["x"], output_names=["y"], source=SQUARE),
    "kjit_pickled::square", backward=square_grad, **settings)
"""

MODEL_CHILD = """
import io, sys
import torch
sys.path.insert(0, sys.argv[1])
model = torch.load(sys.argv[2], weights_only=False)
x = torch.linspace(-1, 1, 16, requires_grad=True)
model(x).sum().backward()
import kjit
print(repr((model(x).tolist(), x.grad.tolist(), kjit.cache_info()["compiles"])))
"""


MODEL_MODULE = """
import torch
import kjit_pickled_ops as ops


class Squares(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.square = ops.square

    def forward(self, x):
        return self.square(self.linear(x))
"""


def test_a_module_holding_kjit_ops_saves_loads_and_deep_copies(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    (tmp_path / "kjit_pickled_ops.py").write_text(OPS_MODULE)
    (tmp_path / "kjit_pickled_model.py").write_text(MODEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import kjit_pickled_model
    import kjit_pickled_ops

    model = kjit_pickled_model.Squares()
    assert pickle.loads(pickle.dumps(kjit_pickled_ops.square)) is kjit_pickled_ops.square
    twin = copy.deepcopy(model)
    assert twin.square is kjit_pickled_ops.square  # an op is its registration: one per name
    x = torch.linspace(-1, 1, 16, requires_grad=True)
    torch.testing.assert_close(twin(x), model(x))
    y = model(x)
    y.sum().backward()
    reference = model.linear(x)
    expected_grad = torch.autograd.grad((reference ** 2).sum(), x)[0]
    torch.testing.assert_close(x.grad, expected_grad)
    # A fresh process: unpickling imports the modules the pickle names, and their ops.
    path = tmp_path / "model.pt"
    torch.save(model, path)
    done = subprocess.run([sys.executable, "-c", MODEL_CHILD, str(tmp_path), str(path)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    values, grads, compiles = eval(done.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(values, y.tolist(), rtol=1e-6)
    np.testing.assert_allclose(grads, x.grad.tolist(), rtol=1e-6)
    assert compiles == 0


def scaled_by_kernel(job):
    """A pool worker's task: the kernel it was sent, run on the array it was sent."""
    kernel, x = job
    return run(kernel, x)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_kernels_go_to_pool_workers_by_every_start_method(rng, method):
    import multiprocessing

    kernel = scaled_kernel()
    jobs = [(kernel, rng.standard_normal(n).astype(np.float32)) for n in (10, 33, 70)]
    run(kernel, jobs[0][1])  # the parent has run it: a forked child inherits a used backend
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map(scaled_by_kernel, jobs, chunksize=1)
    for (_, x), y in zip(jobs, results):
        np.testing.assert_allclose(y, x.astype(np.float64) * 3, rtol=1e-6)


def scale_in_place_by_kernel(rank, kernel, shared):
    """A torch.multiprocessing worker: |kernel| writes its row of the shared tensor."""
    import torch

    row = shared[rank]
    x = torch.arange(row.numel(), dtype=torch.float32) + rank
    kernel(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[x.dtype],
           grid=(x.numel(), 1, 1), threadgroup=(32, 1, 1), outputs=[row])


def test_torch_multiprocessing_workers_run_a_kernel_into_shared_tensors():
    torch = pytest.importorskip("torch")
    import torch.multiprocessing

    kernel = scaled_kernel()
    shared = torch.full((2, 40), float("nan")).share_memory_()  # poisoned, seen by the workers
    torch.multiprocessing.spawn(scale_in_place_by_kernel, args=(kernel, shared), nprocs=2,
                                join=True)
    expected = (np.arange(40)[None, :] + np.arange(2)[:, None]) * 3.0
    np.testing.assert_allclose(shared.numpy(), expected, rtol=1e-6)
