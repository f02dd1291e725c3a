"""Shared test set-up: a private kernel cache, fresh random data, poisoned outputs, and the
suite's kernel factories, which also compile every kernel a test runs for a GPU (see
suite_kernel_factories; --no-nvrtc-check turns that off)."""

import os
import tempfile

# Before kjit is imported: tests never read or write a user's cache.
os.environ.setdefault("KJIT_CACHE_DIR", tempfile.mkdtemp(prefix="kjit-test-cache-"))
# Before JAX is imported: JAX takes three quarters of a GPU's memory at its first use, which left
# the test processes sharing the GPU (and the fresh ones some tests start) out of memory.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import pathlib  # noqa: E402
import sys  # noqa: E402
from typing import Iterator, Optional  # noqa: E402

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


def library_path_first(directory) -> str:
    """LD_LIBRARY_PATH with |directory| searched first: where a test's stand-in libraries
    (a driver that fails in a chosen way) are found before the machine's own."""
    return os.pathsep.join(p for p in (str(directory), os.environ.get("LD_LIBRARY_PATH")) if p)


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


import kjit  # noqa: E402
from kjit import _shape_functions as shape_functions  # noqa: E402

CUDA_STATUS = kjit._kjit.cuda_status()
NVRTC = CUDA_STATUS["nvrtc"] is not None
# GPU cases are skipped where no CUDA device works; DEVICES runs a test on the CPU and the GPU.
needs_gpu = pytest.mark.skipif(not CUDA_STATUS["devices"],
                               reason=f"no CUDA device: {CUDA_STATUS['unavailable']}")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_gpu)]

# --- the suite's kernel factories ----------------------------------------------------------
# Every kernel the tests run is also built by NVRTC for a GPU architecture (KJIT_TEST_CUDA_TARGET,
# default sm_90) wherever NVRTC loads, GPU or not: a body that runs on the CPU must compile for
# CUDA too. With KJIT_TEST_DEVICE set (e.g. "cuda"), every call without a device= runs there:
# NumPy inputs are copied over and the outputs come back as NumPy arrays, so the same
# assertions check the other backend. Both come from the factories that
# suite_kernel_factories puts in place of kjit.metal_kernel and kjit.cuda_kernel.

CUDA_TARGET = os.environ.get("KJIT_TEST_CUDA_TARGET", "sm_90")
TEST_DEVICE = os.environ.get("KJIT_TEST_DEVICE") or None
REAL_FACTORIES = {"metal_kernel": kjit.metal_kernel, "cuda_kernel": kjit.cuda_kernel}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-nvrtc-check", action="store_false", dest="nvrtc_check",
                     help=f"do not also build each kernel the tests run for {CUDA_TARGET} "
                          "(KJIT_TEST_CUDA_TARGET) with NVRTC")


def nvrtc_check_off(config: pytest.Config) -> Optional[str]:
    """Why the tests' kernels are not also built for CUDA_TARGET, or None when they are."""
    if not config.getoption("nvrtc_check"):
        return "--no-nvrtc-check"
    if not NVRTC:
        return f"NVRTC is {CUDA_STATUS['nvrtc_error']}"
    return None


def nvrtc_check_line(config: pytest.Config) -> str:
    """Whether the check is on, and if not why, in a line of the test report."""
    why = nvrtc_check_off(config)
    if why is None:
        return f"{CUDA_TARGET} compile check: on (every kernel a test runs is also built by NVRTC)"
    return f"{CUDA_TARGET} compile check: OFF ({why})"


def pytest_report_header(config: pytest.Config) -> str:
    return nvrtc_check_line(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    # The header is not shown under -q: a check that did not run is said again at the end.
    if nvrtc_check_off(config) is not None:
        terminalreporter.write_sep("-", nvrtc_check_line(config), yellow=True)


class _CheckedKernel:
    """A kernel whose calls run on TEST_DEVICE when they name no device, and then also build
    their signature for |target| (None: no build)."""

    def __init__(self, kernel, target):
        self._kernel = kernel
        self._target = target
        self._built = set()

    def __getattr__(self, name):
        return getattr(self._kernel, name)

    def __call__(self, **kwargs):
        if TEST_DEVICE and kwargs.get("device") is None and kwargs.get("outputs") is None:
            kwargs["device"] = TEST_DEVICE
        result = self._kernel(**kwargs)
        inputs, dtypes, template = kwargs["inputs"], kwargs["output_dtypes"], kwargs.get("template")
        if not isinstance(inputs, dict) and (shape_functions.is_function(dtypes)
                                             or shape_functions.is_function(template)):
            specs = [shape_functions.spec_of(x) for x in inputs]
            values = shape_functions.resolve("", {"output_dtypes": dtypes, "template": template},
                                             specs)
            dtypes, template = values["output_dtypes"], values["template"]
        kernel = self._kernel
        if isinstance(inputs, dict):  # MLX 0.17's form: the same call with lists
            if isinstance(kernel, kjit.DictFormKernel):
                kernel = kernel.kernel_for(list(inputs), list(kwargs["output_shapes"]))
            inputs = [inputs[name] for name in kernel.input_names]
            dtypes = [dtypes[name] for name in kernel.output_names]
            if isinstance(template, dict):
                template = list(template.items())
        self.check_build(inputs, dtypes, template, kernel)
        return result

    def check_build(self, inputs, output_dtypes, template, kernel=None):
        """Compiles the signature of a call of |kernel| (by default the one checked) with
        |inputs| for the target, once."""
        if self._target is None:
            return
        kernel = self._kernel if kernel is None else kernel
        signature = [(a.dtype, a.ndim) for a in map(kjit.array, inputs)]
        dtypes = list(output_dtypes)
        key = repr((kernel.input_names, kernel.output_names, signature, dtypes, template))
        if key not in self._built:
            try:
                kernel.build(inputs=signature, output_dtypes=dtypes, template=template,
                             target=self._target)
            except Exception as error:
                if hasattr(error, "add_note"):  # Python 3.11
                    error.add_note(f"(raised by the suite's {self._target} compile check of the "
                                   "call's kernel; --no-nvrtc-check turns it off)")
                raise
            self._built.add(key)

    def bind(self, **kwargs):
        if TEST_DEVICE and kwargs.get("device") is None:
            kwargs["device"] = TEST_DEVICE
        return _CheckedBound(self, self._kernel.bind(**kwargs), kwargs)


class _CheckedBound:
    """A bound kernel whose calls also compile their signature for the target."""

    def __init__(self, checked, bound, settings):
        self._checked = checked
        self._bound = bound
        self._settings = settings

    def __call__(self, *arrays, **kwargs):
        result = self._bound(*arrays, **kwargs)
        self._checked.check_build(arrays[:len(self._checked.input_names)],
                                  self._settings["output_dtypes"], self._settings.get("template"))
        return result


def _checked(factory, target):
    def make(*args, **kwargs):
        return _CheckedKernel(factory(*args, **kwargs), target)

    make.__doc__ = factory.__doc__
    return make


@pytest.fixture(scope="session", autouse=True)
def suite_kernel_factories(pytestconfig: pytest.Config) -> Iterator[None]:
    """For the whole session, kjit.metal_kernel and kjit.cuda_kernel make kernels that also
    build each call's signature for CUDA_TARGET with NVRTC (unless --no-nvrtc-check, or NVRTC
    does not load: the report says so), and that run calls naming no device on KJIT_TEST_DEVICE
    when it is set. kjit._kjit keeps the factories themselves; a test that needs them as
    kjit.metal_kernel / kjit.cuda_kernel takes the real_factories fixture."""
    target = None if nvrtc_check_off(pytestconfig) else CUDA_TARGET
    if target is None and TEST_DEVICE is None:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for name, factory in REAL_FACTORIES.items():
            patch.setattr(kjit, name, _checked(factory, target))
        yield


@pytest.fixture
def real_factories(monkeypatch: pytest.MonkeyPatch) -> None:
    """Puts kjit's own metal_kernel and cuda_kernel back for one test: its kernels are
    kjit.Kernel objects, built for CUDA_TARGET only when they run there and run where the test
    says, whatever KJIT_TEST_DEVICE is."""
    for name, factory in REAL_FACTORIES.items():
        monkeypatch.setattr(kjit, name, factory)


DIALECTS = ["metal", "cuda"]


def make_kernel(dialect, **kwargs):
    """A kernel of |dialect| ("metal" or "cuda"), made with |kwargs|."""
    factory = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    return factory(**kwargs)


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
