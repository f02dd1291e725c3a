"""kjit.precompiled_cuda_kernel: kernels compiled elsewhere (here by NVRTC, to PTX and to a cubin
for sm_90) launched through kjit. Without a GPU the tests check everything up to the launch; the
runs against NumPy, and the driver's own errors, need a GPU."""

import ast
import ctypes
import pathlib

import numpy as np
import pytest

import kjit
from conftest import needs_gpu

STATUS = kjit._kjit.cuda_status()
needs_nvrtc = pytest.mark.skipif(STATUS["nvrtc"] is None, reason=f"NVRTC is {STATUS['nvrtc_error']}")
pytestmark = needs_nvrtc

# Inputs, outputs, then scalars of each kind: the order MLX passes them in.
AXPBY = r"""
extern "C" __global__ void axpby(const float* x, const float* y, float* out, float a, int n,
                                 bool negate) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = a * x[i] + y[i];
    out[i] = negate ? -v : v;
  }
}
"""

# A 0-d input (by its address), two outputs and a two-dimensional grid with partial edge blocks.
GRID_IDS = r"""
extern "C" __global__ void grid_ids(const int* base, int* rows, int* cols, int width,
                                    int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    rows[y * width + x] = base[0] + y;
    cols[y * width + x] = x;
  }
}
"""

# Dynamic shared memory: each block reverses its part of x.
BLOCK_REVERSE = r"""
extern "C" __global__ void block_reverse(const float* x, float* out) {
  extern __shared__ float tile[];
  unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
  tile[t] = x[base + t];
  __syncthreads();
  out[base + t] = tile[blockDim.x - 1 - t];
}
"""


def nvrtc_compile(source: str, arch: str, cubin: bool) -> bytes:
    """|source| compiled by the NVRTC kjit found, to PTX (arch compute_XY) or a cubin (sm_XY)."""
    lib = ctypes.CDLL(STATUS["nvrtc"])
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None,
                                  None) == 0
    try:
        options = [f"--gpu-architecture={arch}".encode()]
        rc = lib.nvrtcCompileProgram(prog, len(options), (ctypes.c_char_p * 1)(*options))
        if rc != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise AssertionError(log.value.decode())
        get_size, get = ((lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if cubin
                         else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX))
        size = ctypes.c_size_t()
        assert get_size(prog, ctypes.byref(size)) == 0
        image = ctypes.create_string_buffer(size.value)
        assert get(prog, image) == 0
        return image.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def ptx(source: str) -> bytes:
    return nvrtc_compile(source, "compute_90", cubin=False)


def cubin(source: str) -> bytes:
    return nvrtc_compile(source, "sm_90", cubin=True)


def gpu_ptx(source: str) -> bytes:
    """PTX for the GPU here: its driver must be as new as the NVRTC that wrote it to JIT it."""
    major, minor = (int(v) for v in STATUS["nvrtc_version"].split("."))
    if STATUS["driver_version"] < major * 1000 + minor * 10:
        pytest.skip(f"the driver ({STATUS['driver_version']}) cannot JIT PTX from NVRTC "
                    f"{STATUS['nvrtc_version']}")
    return ptx(source)


def call_axpby(image: bytes, **changes):
    """axpby on 256 elements, with |changes| to its arguments."""
    x = np.arange(256, dtype=np.float32)
    y = np.ones(256, dtype=np.float32)
    arguments = dict(name="axpby", compiled_source=image, inputs=[x, y], output_shapes=[x.shape],
                     output_dtypes=[np.float32], scalars=[2.0, 256, False], grid=(256, 1, 1),
                     threadgroup=(128, 1, 1))
    arguments.update(changes)
    return kjit.precompiled_cuda_kernel(**arguments)


# --- the signature ---------------------------------------------------------------------------


def test_the_signature_is_mlxs_with_device_and_outputs_after_it():
    # The stubs are checked against the module's own signatures (test_signatures.py).
    stub = pathlib.Path(__file__).resolve().parents[2] / "python" / "kjit" / "_kjit.pyi"
    # Its overloads differ only in the types of inputs and results: the last is the general one.
    overloads = [node for node in ast.parse(stub.read_text()).body
                 if isinstance(node, ast.FunctionDef) and node.name == "precompiled_cuda_kernel"]
    assert len(overloads) == 4
    function = overloads[-1]
    assert not function.args.args
    names = [a.arg for a in function.args.kwonlyargs]
    assert names == ["name", "compiled_source", "inputs", "output_shapes", "output_dtypes",
                     "scalars", "grid", "threadgroup", "shared_memory", "init_value",
                     "ensure_row_contiguous", "stream", "device", "outputs"]
    defaults = {a.arg: ast.literal_eval(d) for a, d in
                zip(function.args.kwonlyargs, function.args.kw_defaults) if d is not None}
    assert defaults == {"shared_memory": 0, "init_value": None, "ensure_row_contiguous": False,
                        "stream": None, "device": None, "outputs": None}
    with pytest.raises(TypeError, match="keyword arguments only"):
        kjit.precompiled_cuda_kernel("axpby")
    with pytest.raises(TypeError, match="missing keyword argument 'scalars'"):
        kjit.precompiled_cuda_kernel(name="axpby", compiled_source=ptx(AXPBY), inputs=[],
                                     output_shapes=[(1,)], output_dtypes=[np.float32],
                                     grid=(1, 1, 1), threadgroup=(1, 1, 1))


# --- what is checked before the launch (no GPU needed) ---------------------------------------


@pytest.mark.skipif(bool(STATUS["devices"]), reason="a GPU runs the kernel")
@pytest.mark.parametrize("form", ["ptx", "cubin", "bytearray", "memoryview"])
def test_ptx_and_cubin_are_taken_and_the_cpu_refuses_them(form):
    image = cubin(AXPBY) if form == "cubin" else ptx(AXPBY)
    source = {"bytearray": bytearray, "memoryview": memoryview}.get(form, bytes)(image)
    # The bytes pass every check; the launch alone needs a GPU.
    with pytest.raises(ValueError, match=r"\[kjit.precompiled_cuda_kernel\] kernel 'axpby': "
                                         r"device: cpu cannot run a precompiled kernel.*GPU code"):
        call_axpby(source)


@pytest.mark.skipif(bool(STATUS["devices"]), reason="a GPU runs the kernel")
def test_the_cpu_error_names_device_and_stream():
    with pytest.raises(ValueError) as e:
        call_axpby(ptx(AXPBY), device="cpu")
    assert "device: cpu" in str(e.value) and "none works here" in str(e.value)
    with pytest.raises(ValueError, match="device: cpu cannot run"):
        call_axpby(ptx(AXPBY), stream=0)
    with pytest.raises(ValueError, match="device: cpu cannot run"):
        call_axpby(cubin(AXPBY), inputs=[kjit.array(np.ones(4, np.float32)), np.ones(4, np.float32)])


@needs_gpu
def test_device_cpu_is_refused_with_a_gpu_here():
    with pytest.raises(ValueError, match=r"device: cpu cannot run a precompiled kernel.*"
                                         r"device='cuda'.*stream="):
        call_axpby(ptx(AXPBY), device="cpu")


def test_bytes_that_are_no_kernel_are_a_compile_error_naming_it():
    for garbage in (b"garbage", b"\x00\x01\x02\x03" * 8, b".version 8.0\n.target sm_90\n"):
        with pytest.raises(kjit.CompileError,
                           match=r"kernel 'axpby': compiled_source: \d+ bytes that are neither PTX"):
            call_axpby(garbage)


def test_an_entry_the_ptx_lacks_is_named():
    with pytest.raises(ValueError, match=r"kernel 'axpy': name: compiled_source declares no "
                                         r"kernel 'axpy' \(its .entry kernels: 'axpby'\)"):
        call_axpby(ptx(AXPBY), name="axpy")
    two = ptx(AXPBY + GRID_IDS)
    with pytest.raises(ValueError, match=r"its .entry kernels: 'axpby', 'grid_ids'"):
        call_axpby(two, name="block_reverse")
    with pytest.raises(ValueError, match=r"name: the kernel's entry point name cannot be empty"):
        call_axpby(ptx(AXPBY), name="")
    with pytest.raises(ValueError, match=r"name: 'ax pby' is not an entry point name"):
        call_axpby(ptx(AXPBY), name="ax pby")
    with pytest.raises(TypeError, match=r"\[kjit.precompiled_cuda_kernel\] name: expected a str"):
        call_axpby(ptx(AXPBY), name=b"axpby")


def test_compiled_source_must_be_bytes():
    with pytest.raises(TypeError, match=r"kernel 'axpby': compiled_source: expected bytes.*got "
                                        r"str: pass PTX text encoded"):
        call_axpby(ptx(AXPBY).decode("ascii", "replace"))
    with pytest.raises(TypeError, match=r"compiled_source: expected bytes.*got 'list'"):
        call_axpby([1, 2, 3])


@pytest.mark.parametrize("bad, error, message", [
    ("2.0", TypeError, r"scalars\[0\]: expected a bool, int or float, got 'str'"),
    (None, TypeError, r"scalars\[0\]: expected a bool, int or float, got 'NoneType'"),
    (1j, TypeError, r"scalars\[0\]: expected a bool, int or float, got 'complex'"),
    (np.float32(2), TypeError, r"scalars\[0\]: expected a bool, int or float, got 'float32'"),
    (2**31, ValueError, r"scalars\[0\]: 2147483648 does not fit in a 32-bit int"),
    (-2**31 - 1, ValueError, r"scalars\[0\]: -2147483649 does not fit in a 32-bit int"),
    (1e39, ValueError, r"scalars\[0\]: 1e\+39 is out of range of a 32-bit float"),
])
def test_scalars_of_the_wrong_type_are_named(bad, error, message):
    with pytest.raises(error, match=r"kernel 'axpby': " + message):
        call_axpby(ptx(AXPBY), scalars=[bad, 256, False])
    with pytest.raises(TypeError, match=r"kernel 'axpby': scalars: expected a list"):
        call_axpby(ptx(AXPBY), scalars=2.0)


def test_shared_memory_is_checked():
    with pytest.raises(ValueError, match=r"kernel 'axpby': shared_memory: must be in \[0, 2\^31\) "
                                         r"bytes, got -1"):
        call_axpby(ptx(AXPBY), shared_memory=-1)
    with pytest.raises(ValueError, match=r"shared_memory: must be in \[0, 2\^31\) bytes"):
        call_axpby(ptx(AXPBY), shared_memory=2**31)
    with pytest.raises(TypeError, match=r"shared_memory: expected an int \(bytes\)"):
        call_axpby(ptx(AXPBY), shared_memory=1.5)


def test_the_call_settings_are_checked_as_a_kernels_are():
    with pytest.raises(ValueError, match=r"kernel 'axpby': output_shapes: a kernel needs at least "
                                         r"one output"):
        call_axpby(ptx(AXPBY), output_shapes=[], output_dtypes=[])
    with pytest.raises(ValueError, match=r"kernel 'axpby': output_dtypes: expected 1"):
        call_axpby(ptx(AXPBY), output_dtypes=[np.float32, np.float32])
    with pytest.raises(ValueError, match=r"kernel 'axpby': threadgroup"):
        call_axpby(ptx(AXPBY), threadgroup=(2048, 1, 1))
    with pytest.raises(TypeError, match=r"kernel 'axpby': inputs: expected a list"):
        call_axpby(ptx(AXPBY), inputs=np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"\[kjit.precompiled_cuda_kernel\] ensure_row_contiguous: "
                                        r"expected a bool"):
        call_axpby(ptx(AXPBY), ensure_row_contiguous=1)
    with pytest.raises(ValueError, match=r"kernel 'axpby': device: expected 'cpu', 'cuda'"):
        call_axpby(ptx(AXPBY), device="gpu")


# --- runs on a GPU -----------------------------------------------------------------------------


@needs_gpu
@pytest.mark.parametrize("form", ["ptx", "cubin"])
def test_axpby_matches_numpy(form, rng):
    image = gpu_ptx(AXPBY) if form == "ptx" else cubin(AXPBY)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    for a, negate in [(2.5, False), (-0.5, True)]:
        out, = kjit.precompiled_cuda_kernel(
            name="axpby", compiled_source=image, inputs=[x, y], output_shapes=[x.shape],
            output_dtypes=[np.float32], scalars=[a, x.size, negate], grid=(x.size, 1, 1),
            threadgroup=(256, 1, 1))
        assert isinstance(out, np.ndarray)
        expected = np.float32(a) * x + y
        np.testing.assert_allclose(out, -expected if negate else expected, rtol=1e-6, atol=1e-5)


@needs_gpu
def test_init_value_fills_what_the_kernel_leaves():
    out, = call_axpby(cubin(AXPBY), scalars=[2.0, 100, False], init_value=-3.0)
    expected = np.full(256, -3.0, np.float32)
    expected[:100] = 2 * np.arange(100, dtype=np.float32) + 1
    np.testing.assert_array_equal(out, expected)


@needs_gpu
def test_a_two_dimensional_grid_with_a_0d_input_and_two_outputs():
    width, height = 37, 21  # partial edge blocks in both dimensions
    rows, cols = kjit.precompiled_cuda_kernel(
        name="grid_ids", compiled_source=cubin(GRID_IDS), inputs=[100],
        output_shapes=[(height, width), (height, width)], output_dtypes=[np.int32, np.int32],
        scalars=[width, height], grid=(width, height, 1), threadgroup=(16, 8, 1), init_value=-1)
    expected_rows, expected_cols = np.indices((height, width), dtype=np.int32)
    np.testing.assert_array_equal(rows, expected_rows + 100)
    np.testing.assert_array_equal(cols, expected_cols)


BLOCK_SIZE = r"""
extern "C" __global__ void block_size(const float* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = blockDim.x * 1000 + blockDim.y;
}
"""


@needs_gpu
@pytest.mark.parametrize("grid, threadgroup", [((10, 1, 1), (64, 1, 1)),
                                               ((100, 1, 1), (64, 4, 1))])
def test_every_block_is_the_whole_threadgroup_as_mlx_launches_it(grid, threadgroup):
    # A grid smaller than the threadgroup in a dimension still gets blocks of the threadgroup.
    out, = kjit.precompiled_cuda_kernel(
        name="block_size", compiled_source=cubin(BLOCK_SIZE), inputs=[np.zeros(1, np.float32)],
        output_shapes=[(grid[0],)],
        output_dtypes=[np.int32], scalars=[grid[0]], grid=grid, threadgroup=threadgroup,
        init_value=-1)
    np.testing.assert_array_equal(out, np.full(grid[0], threadgroup[0] * 1000 + threadgroup[1]))


@needs_gpu
@pytest.mark.parametrize("shared_memory", [256 * 4, 64 * 1024])
def test_dynamic_shared_memory(shared_memory, rng):
    x = rng.standard_normal(4 * 256).astype(np.float32)
    out, = kjit.precompiled_cuda_kernel(
        name="block_reverse", compiled_source=cubin(BLOCK_REVERSE), inputs=[x],
        output_shapes=[x.shape], output_dtypes=[np.float32], scalars=[], grid=(x.size, 1, 1),
        threadgroup=(256, 1, 1), shared_memory=shared_memory)
    np.testing.assert_array_equal(out, x.reshape(4, 256)[:, ::-1].reshape(-1))


@needs_gpu
def test_outputs_given_are_written_in_place_on_the_gpu():
    x = kjit.array(np.arange(256, dtype=np.float32), device="cuda")
    y = kjit.array(np.ones(256, dtype=np.float32), device="cuda")
    out = kjit.zeros((256,), kjit.float32, device="cuda")
    result, = call_axpby(cubin(AXPBY), inputs=[x, y], outputs=[out])
    assert result is out
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(256, dtype=np.float32) + 1)


@needs_gpu
def test_the_module_is_loaded_once_per_device():
    image = cubin(AXPBY.replace("axpby", "axpby_once"))
    def loaded():  # modules kept, and those the cache's limits let go
        info = kjit.cache_info()
        return info["memory_entries"] + info["memory_evictions"]
    before = loaded()
    for _ in range(3):
        out, = call_axpby(image, name="axpby_once")
        np.testing.assert_array_equal(out, 2 * np.arange(256, dtype=np.float32) + 1)
    assert loaded() == before + 1


@needs_gpu
def test_ptx_the_driver_cannot_load_is_a_compile_error_naming_the_kernel():
    broken = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry axpby(\n{ garbage }\n"
    with pytest.raises(kjit.CompileError, match=r"kernel 'axpby': compiled_source: the CUDA "
                                                r"driver cannot load it"):
        call_axpby(broken)


@needs_gpu
def test_an_entry_the_cubin_lacks_is_named():
    with pytest.raises(ValueError, match=r"kernel 'axpy': name: compiled_source has no kernel "
                                         r"'axpy'"):
        call_axpby(cubin(AXPBY), name="axpy")


@needs_gpu
def test_shared_memory_beyond_the_device_is_named():
    with pytest.raises(ValueError, match=r"shared_memory: 1048576 bytes is more than .* allows"):
        call_axpby(cubin(AXPBY), shared_memory=1 << 20)
