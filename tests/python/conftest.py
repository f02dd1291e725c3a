"""Shared test set-up: a private kernel cache, fresh random data, and poisoned outputs."""

import os
import tempfile

# Before kjit is imported: tests never read or write a user's cache.
os.environ.setdefault("KJIT_CACHE_DIR", tempfile.mkdtemp(prefix="kjit-test-cache-"))
# Before JAX is imported: JAX takes three quarters of a GPU's memory at its first use, which left
# the test processes sharing the GPU (and the fresh ones some tests start) out of memory.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import pathlib  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# The seed kernels' bodies (examples/seed_kernels.py) are shared with the tests.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator seeded afresh for every test (the seed is printed on failure)."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)


def poisoned(shape, dtype) -> np.ndarray:
    """An output buffer filled with a value no kernel under test writes (NaN, or -7 for ints)."""
    out = np.empty(shape, dtype=dtype)
    if np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.complexfloating):
        out.fill(np.nan)
    elif out.dtype == np.bool_:
        out.fill(True)
    else:
        out.fill(np.array(-7).astype(out.dtype))
    return out


# Every kernel the tests run is also built by NVRTC for a GPU architecture (KJIT_TEST_CUDA_TARGET,
# default sm_90) wherever NVRTC loads, GPU or not: a body that runs on the CPU must compile for
# CUDA too. With KJIT_TEST_DEVICE set (e.g. "cuda"), every call without a device= runs there:
# NumPy inputs are copied over and the outputs come back as NumPy arrays, so the same
# assertions check the other backend.
import kjit  # noqa: E402

CUDA_TARGET = os.environ.get("KJIT_TEST_CUDA_TARGET", "sm_90")
TEST_DEVICE = os.environ.get("KJIT_TEST_DEVICE") or None
CUDA_STATUS = kjit._kjit.cuda_status()
NVRTC = CUDA_STATUS["nvrtc"] is not None
# GPU cases are skipped where no CUDA device works; DEVICES runs a test on the CPU and the GPU.
needs_gpu = pytest.mark.skipif(not CUDA_STATUS["devices"],
                               reason=f"no CUDA device: {CUDA_STATUS['unavailable']}")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_gpu)]


class _CheckedKernel:
    """A kernel that also compiles each call's signature for CUDA_TARGET."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._built = set()

    def __getattr__(self, name):
        return getattr(self._kernel, name)

    def __call__(self, **kwargs):
        if TEST_DEVICE and kwargs.get("device") is None and kwargs.get("outputs") is None:
            kwargs["device"] = TEST_DEVICE
        result = self._kernel(**kwargs)
        self.check_build(kwargs["inputs"], kwargs["output_dtypes"], kwargs.get("template"))
        return result

    def check_build(self, inputs, output_dtypes, template):
        """Compiles the signature of a call with |inputs| for CUDA_TARGET, once."""
        if not NVRTC:
            return
        signature = [(a.dtype, a.ndim) for a in map(kjit.array, inputs)]
        dtypes = list(output_dtypes)
        key = repr((signature, dtypes, template))
        if key not in self._built:
            self._kernel.build(inputs=signature, output_dtypes=dtypes, template=template,
                               target=CUDA_TARGET)
            self._built.add(key)


    def bind(self, **kwargs):
        if TEST_DEVICE and kwargs.get("device") is None:
            kwargs["device"] = TEST_DEVICE
        return _CheckedBound(self, self._kernel.bind(**kwargs), kwargs)


class _CheckedBound:
    """A bound kernel whose calls also compile their signature for CUDA_TARGET."""

    def __init__(self, checked, bound, settings):
        self._checked = checked
        self._bound = bound
        self._settings = settings

    def __call__(self, *arrays, **kwargs):
        result = self._bound(*arrays, **kwargs)
        self._checked.check_build(arrays[:len(self._checked.input_names)],
                                  self._settings["output_dtypes"], self._settings.get("template"))
        return result


def _checked(factory):
    def make(*args, **kwargs):
        return _CheckedKernel(factory(*args, **kwargs))

    make.__doc__ = factory.__doc__
    return make


kjit.metal_kernel = _checked(kjit.metal_kernel)
kjit.cuda_kernel = _checked(kjit.cuda_kernel)


# A kernel many GPU tests run: exp of each element.
EXP = """
    uint i = thread_position_in_grid.x;
    out[i] = metal::exp(inp[i]);
"""


def exp_kernel():
    return kjit.metal_kernel(name="gpu_exp", input_names=["inp"], output_names=["out"],
                             source=EXP)


def run_exp(x, **kw):
    return exp_kernel()(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[x.dtype],
                        grid=(int(np.prod(x.shape)), 1, 1), threadgroup=(256, 1, 1), **kw)[0]


DIALECTS = ["metal", "cuda"]


def make_kernel(dialect, **kwargs):
    """A kernel of |dialect| ("metal" or "cuda"), made with |kwargs|."""
    factory = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    return factory(**kwargs)
