"""
kjit: GPU kernels written as a body string, run on NVIDIA GPUs or the CPU.
"""

from collections.abc import Callable, Sequence
import enum
from typing import Any, overload

import numpy.typing

import kjit._array_types


class Dtype(enum.Enum):
    """
    Element types of arrays and kernel parameters. Each is also kjit.<name> (kjit.float32, kjit.bool_ for bool); wherever a dtype goes, NumPy's, torch's, JAX's and MLX's dtypes and names ('float16') are taken too.

    Example::

        kjit.empty((4,), dtype=kjit.float16)
        kernel(..., output_dtypes=[kjit.int32], template=[('T', kjit.float32)])
    """

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    bool = 0

    int8 = 1

    int16 = 2

    int32 = 3

    int64 = 4

    uint8 = 5

    uint16 = 6

    uint32 = 7

    uint64 = 8

    float16 = 9

    bfloat16 = 10

    float32 = 11

    float64 = 12

    complex64 = 13

    @property
    def itemsize(self) -> int: ...

    @property
    def name(self) -> str: ...

int8: Dtype = Dtype.int8

int16: Dtype = Dtype.int16

int32: Dtype = Dtype.int32

int64: Dtype = Dtype.int64

uint8: Dtype = Dtype.uint8

uint16: Dtype = Dtype.uint16

uint32: Dtype = Dtype.uint32

uint64: Dtype = Dtype.uint64

float16: Dtype = Dtype.float16

bfloat16: Dtype = Dtype.bfloat16

float32: Dtype = Dtype.float32

float64: Dtype = Dtype.float64

complex64: Dtype = Dtype.complex64

class Array:
    """
    An n-dimensional array on a device, owning or borrowing memory.

    Made by kjit.array (a view of another library's array), kjit.empty or kjit.zeros, and
    returned by kernel calls given kjit.Array inputs. Read it with numpy() or np.asarray
    (CPU arrays), pass it to any DLPack consumer (torch.from_dlpack, jax.dlpack), or move it
    with to(device).

    Attributes: shape and strides (tuples of ints; strides in elements), dtype (a
    kjit.Dtype), ndim, size (elements), nbytes, device ('cpu' or 'cuda:N').

    Example:
        >>> a = kjit.zeros((2, 3), kjit.float32)
        >>> a.shape, a.dtype, a.device
        ((2, 3), kjit.float32, 'cpu')
    """

    @property
    def shape(self, /) -> tuple[int, ...]: ...

    @property
    def strides(self, /) -> tuple[int, ...]:
        """Strides in elements."""

    @property
    def dtype(self) -> Dtype: ...

    @property
    def ndim(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def device(self) -> str: ...

    def numpy(self) -> object:
        """A NumPy view of the array (CPU arrays only)."""

    def __array__(self, dtype: object | None = None, copy: object | None = None) -> object: ...

    def __dlpack__(self, **kwargs: object) -> object: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...

    def to(self, device: object | None) -> Array:
        """The array on another device (itself when already there)."""

    def __repr__(self) -> str: ...

def array(obj: object, device: str | None = None, dtype: object | None = None) -> Array:
    """
    A kjit.Array viewing obj's memory, or a new one converted from it.

    Parameters:
        obj: a NumPy array, any DLPack producer (torch, JAX, CuPy, MLX arrays) or a Python
            scalar. Its memory is shared, not copied, and kept alive by the result.
        device (str | None, default None): 'cpu', 'cuda' or 'cuda:N'; the array is copied
            there when it lives elsewhere. None keeps obj's device.
        dtype (default None): a kjit dtype, NumPy dtype or name ('float16'...); a new array
            converted as NumPy's astype converts. None keeps obj's dtype.

    Raises TypeError for an object that is no array (or of a dtype kjit does not know,
    such as datetime64), ValueError for an unknown device.

    Example:
        >>> a = kjit.array(np.arange(4, dtype=np.float32))
        >>> kjit.array(a, dtype='float16').dtype
        kjit.float16
    """

def empty(shape: Sequence[int], dtype: object = float32, device: str | None = None) -> Array:
    """
    A new row-contiguous array whose elements are not set.

    Parameters:
        shape (sequence of ints): the extent of each dimension, each >= 0.
        dtype (default kjit.float32): a kjit dtype, NumPy dtype or name.
        device (str | None, default None): 'cpu', 'cuda' or 'cuda:N'; None is
            kjit.default_device().

    Raises ValueError for a negative extent or an unknown device, TypeError for
    a shape that is no sequence of ints.

    Example:
        >>> kjit.empty((4,), 'int32', device='cpu').shape
        (4,)
    """

def zeros(shape: Sequence[int], dtype: object = float32, device: str | None = None) -> Array:
    """
    A new row-contiguous array of zeros.

    Parameters:
        shape (sequence of ints): the extent of each dimension, each >= 0.
        dtype (default kjit.float32): a kjit dtype, NumPy dtype or name.
        device (str | None, default None): 'cpu', 'cuda' or 'cuda:N'; None is
            kjit.default_device().

    Raises ValueError for a negative extent or an unknown device, TypeError for
    a shape that is no sequence of ints.

    Example:
        >>> kjit.zeros((2, 2), device='cpu').numpy().sum()
        np.float32(0.0)
    """

def devices() -> list[str]:
    """
    The devices that can run kernels now: 'cpu' first, then 'cuda:0', 'cuda:1'... for each
    GPU whose driver works (`python -m kjit doctor` says why one does not).

    Example:
        >>> kjit.devices()[0]
        'cpu'
    """

def default_device() -> str:
    """
    The device kernels and new arrays use when none is named: 'cuda:0' when a GPU works,
    else 'cpu'.

    Example:
        >>> kjit.default_device() in kjit.devices()
        True
    """

def cache_info() -> dict[str, object]:
    """
    What the compile caches hold, and how many compiles, disk hits and launches made again from their record this process had: the disk cache's directory, entries, bytes and limit; the programs kept loaded in memory (memory_entries, memory_bytes), the limits of each device type's memory cache (memory_limit_entries, memory_limit_bytes) and how many programs those limits unloaded (memory_evictions).

    Example:
        >>> sorted(kjit.cache_info())[:3]
        ['compiles', 'directory', 'disk_bytes']
    """

def host_compiler() -> tuple[str, bool]:
    """The CPU backend's compiler: (path, found)."""

def cuda_status() -> dict[str, object]:
    """
    What the CUDA backend found: driver and NVRTC libraries and versions, devices, and why it cannot run (empty when it can).
    """

def torch_path() -> str:
    """
    How torch tensors are read and made: through kjit._torch, or through DLPack and why. Call it after importing torch.
    """

def add_library_search_dir(dir: str) -> None:
    """
    Adds a directory to search for CUDA libraries (NVRTC) before /usr/local/cuda.
    """

def clear_cache() -> None:
    """
    Empties the compile caches: the CPU's in-memory cache of loaded programs, and the
    entries of the disk cache (KJIT_CACHE_DIR). Modules loaded on a GPU stay loaded.
    Kernels made before still run: they are compiled again when next called.

    Example:
        >>> kjit.clear_cache()
        >>> kjit.cache_info()['memory_entries']
        0
    """

def version() -> str:
    """
    The library version, as kjit.__version__ and python -m kjit --version show it.
    """

class Kernel:
    """
    A kernel built from a body string, made by kjit.metal_kernel or kjit.cuda_kernel. It is compiled at its first call for each device and signature of its inputs, and kept.

    kernel(inputs=..., output_shapes=..., output_dtypes=..., grid=..., threadgroup=...) runs it (see Kernel.__call__); kernel.bind(...) fixes everything but the arrays for repeated calls; kernel.build(...) compiles ahead of time. Kernels pickle, and are safe to call from several threads.

    Example::

        kernel = kjit.metal_kernel(name='twice', input_names=['x'], output_names=['y'],
                                   source='uint i = thread_position_in_grid.x; y[i] = 2 * x[i];')
        (y,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                      grid=(x.size, 1, 1), threadgroup=(256, 1, 1))
    """

    def __reduce__(self) -> tuple[object, ...]: ...

    @property
    def name(self) -> str: ...

    @property
    def input_names(self) -> list[str]: ...

    @property
    def output_names(self) -> list[str]: ...

    @overload
    def __call__(self, *, inputs: Sequence[float], output_shapes: Sequence[Sequence[int]] | Callable[..., Sequence[Sequence[int]]], output_dtypes: Sequence[object] | Callable[..., Sequence[object]], grid: Sequence[int] | Callable[..., Sequence[int]], threadgroup: Sequence[int] | Callable[..., Sequence[int]], template: Sequence[tuple[str, object]] | Callable[..., Sequence[tuple[str, object]]] | None = None, init_value: float | None = None, verbose: bool = False, stream: object | None = None, device: str | None = None, outputs: None = None) -> list[Array]: ...

    @overload
    def __call__(self, *, inputs: Sequence[numpy.typing.NDArray[Any]], output_shapes: Sequence[Sequence[int]] | Callable[..., Sequence[Sequence[int]]], output_dtypes: Sequence[object] | Callable[..., Sequence[object]], grid: Sequence[int] | Callable[..., Sequence[int]], threadgroup: Sequence[int] | Callable[..., Sequence[int]], template: Sequence[tuple[str, object]] | Callable[..., Sequence[tuple[str, object]]] | None = None, init_value: float | None = None, verbose: bool = False, stream: object | None = None, device: str | None = None, outputs: None = None) -> list[numpy.typing.NDArray[Any]]: ...

    @overload
    def __call__(self, *, inputs: Sequence[kjit._array_types.ArrayT], output_shapes: Sequence[Sequence[int]] | Callable[..., Sequence[Sequence[int]]], output_dtypes: Sequence[object] | Callable[..., Sequence[object]], grid: Sequence[int] | Callable[..., Sequence[int]], threadgroup: Sequence[int] | Callable[..., Sequence[int]], template: Sequence[tuple[str, object]] | Callable[..., Sequence[tuple[str, object]]] | None = None, init_value: float | None = None, verbose: bool = False, stream: object | None = None, device: str | None = None, outputs: None = None) -> list[kjit._array_types.ArrayT]: ...

    @overload
    def __call__(self, *, inputs: Sequence[object], output_shapes: Sequence[Sequence[int]] | Callable[..., Sequence[Sequence[int]]], output_dtypes: Sequence[object] | Callable[..., Sequence[object]], grid: Sequence[int] | Callable[..., Sequence[int]], threadgroup: Sequence[int] | Callable[..., Sequence[int]], template: Sequence[tuple[str, object]] | Callable[..., Sequence[tuple[str, object]]] | None = None, init_value: float | None = None, verbose: bool = False, stream: object | None = None, device: str | None = None, outputs: Sequence[object] | None = None) -> list[Any]:
        """
        Runs the kernel and returns its outputs as a list of arrays of the inputs' library (NumPy in, NumPy out; torch, JAX, CuPy and MLX likewise).

        Parameters:
            inputs (Sequence): the arrays (or Python numbers, as 0-d inputs), one per input name, in order.
            output_shapes (Sequence[Sequence[int]]): one shape per output.
            output_dtypes (Sequence): one dtype per output: kjit.float32, NumPy's, torch's, JAX's, MLX's or a name ('float16').
            grid (Sequence[int]): threads in x, y, z, as MLX counts them (Metal's dispatchThreads), not groups: grid=(n, 1, 1) runs n threads.
            threadgroup (Sequence[int]): the group size in x, y, z (CUDA's blockDim).
            template (Sequence[tuple[str, object]] | None): names declared at the top of the body: ('T', kjit.float32) is using T = float; ('N', 4) is constexpr int N = 4.
            init_value (float | None): every output filled with it first.
            verbose (bool): prints the kernel as MLX generates it, then the source kjit compiles.
            stream (object | None): a CUDA stream (a handle, or an object with __cuda_stream__, .cuda_stream or .ptr; MLX's mx.cpu / mx.gpu name a device); by default the inputs' framework's current stream.
            device (str | None): 'cpu', 'cuda' or 'cuda:N'; by default the inputs' device.
            outputs (Sequence | None): preallocated arrays to write, instead of new ones.

        output_shapes, output_dtypes, grid, threadgroup and template may each be a function of the inputs, called with one argument per input (a kjit.ArraySpec of its shape and dtype, or a scalar's value) once per signature of the inputs.

        Example::

            (out,) = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                            grid=(a.size, 1, 1), threadgroup=(256, 1, 1))

        For a call repeated in a loop, kernel.bind(...) fixes everything but the arrays (docs/calling-kernels.md).
        """

    def build(self, *, inputs: Sequence[tuple[object, int]], output_dtypes: Sequence[object], template: Sequence[tuple[str, object]] | None = None, target: str = 'cpu') -> None:
        """
        Compiles and caches the kernel for inputs given as (dtype, ndim) pairs, without running it. target is 'cpu', 'cuda', 'cuda:N', or a CUDA architecture such as 'sm_90', which needs NVRTC but no GPU. On CUDA it compiles the entry point of every launch shape (a call compiles the one its launch needs).

        Parameters:
            inputs (Sequence[tuple[object, int]]): one (dtype, number of dimensions) per input.
            output_dtypes (Sequence): one dtype per output.
            template (Sequence[tuple[str, object]] | None): the call's template arguments.
            target (str, default 'cpu'): where the kernel will run.

        Example (warming the disk cache before a job)::

            kernel.build(inputs=[(kjit.float16, 2)], output_dtypes=[kjit.float16],
                         template=[('T', kjit.float32)], target='sm_90')
        """

    def bind(self, *, output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[object], grid: Sequence[int], threadgroup: Sequence[int], template: Sequence[tuple[str, object]] | None = None, init_value: float | None = None, verbose: bool = False, stream: object | None = None, device: str | None = None) -> BoundKernel:
        """
        The kernel with every argument of a call but its arrays fixed, and checked now (all but what depends on the arrays and the device): bound(x, y) runs it as kernel(inputs=[x, y], ...) would, and bound(x, y, out) writes into out as outputs=[out] would. The cheapest way to launch a kernel many times.

        Parameters: those of a call (see Kernel.__call__) but inputs and outputs, as values, not functions of the inputs. stream=None follows the inputs' framework's current stream at each call. Input dtypes and ranks may change from call to call; a call on arrays laid out as the previous one's launches again without repeating its checks.

        Example::

            bound = kernel.bind(output_shapes=[x.shape], output_dtypes=[x.dtype],
                                grid=(x.size, 1, 1), threadgroup=(256, 1, 1))
            for x in batches:
                (y,) = bound(x)          # a new output each call
                bound(x, out)            # or into out
        """

class BoundKernel:
    """
    A kernel with everything but its arrays fixed (Kernel.bind). Call it with the inputs, then optionally the outputs to write, as positional arguments: the cheapest way to launch a kernel many times.

    Example::

        bound = kernel.bind(output_shapes=[x.shape], output_dtypes=[x.dtype],
                            grid=(x.size, 1, 1), threadgroup=(256, 1, 1))
        (y,) = bound(x)   # a new output
        bound(x, y)       # into y
    """

    def __reduce__(self) -> tuple[object, ...]: ...

    @overload
    def __call__(self, *arrays: float) -> list[Array]: ...

    @overload
    def __call__(self, *arrays: numpy.typing.NDArray[Any]) -> list[numpy.typing.NDArray[Any]]: ...

    @overload
    def __call__(self, *arrays: kjit._array_types.ArrayT) -> list[kjit._array_types.ArrayT]: ...

    @overload
    def __call__(self, *arrays: object) -> list[Any]:
        """
        Runs the kernel on the inputs, then writes the outputs when they follow; returns the outputs as a list of arrays of the inputs' library.

        bound(x, y) takes the inputs in the order of input_names; bound(x, y, out) also every output, in the order of output_names, written in place (as outputs= would). Keywords are refused: the settings were fixed by bind.
        """

def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str, header: str = '', ensure_row_contiguous: bool = True, atomic_outputs: bool = False, compile_options: dict[str, str | bool] | None = None) -> Kernel:
    """
    A kernel whose body is Metal Shading Language (the API of mlx.core.fast.metal_kernel).
    """

def cuda_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str, header: str = '', ensure_row_contiguous: bool = True, shared_memory: int = 0, compile_options: dict[str, str | bool] | None = None, atomic_outputs: bool = False) -> Kernel:
    """
    A kernel whose body is CUDA C++ (the API of mlx.core.fast.cuda_kernel).

    Parameters:
        name (str): the kernel's name, in errors and verbose output; letters, digits and underscores (a leading digit too, as MLX allows).
        input_names (Sequence[str]): the names the body reads its inputs by, in call order.
        output_names (Sequence[str]): the names the body writes its outputs by.
        source (str): the body only: the statements inside the __global__ function kjit declares.
        header (str, default ''): code put before the kernel: __device__ functions, structs, constants.
        ensure_row_contiguous (bool, default True): inputs are copied to row-contiguous memory first; with False the body reads each input through its strides.
        shared_memory (int, default 0): bytes of dynamic shared memory, for extern __shared__ arrays.
        compile_options (dict[str, str | bool] | None): 'math_mode': 'safe' (the default), 'relaxed' or 'fast'; 'debug': True for bounds checks; 'line_info': True for GPU tools.
        atomic_outputs (bool, default False): accepted for MLX's signature; CUDA's atomic* functions take the outputs' plain pointers.

    What the body sees: each input as const T* __restrict__ name, each output as T* __restrict__ name; name_shape, name_strides (MLX's Shape and Strides) and name_ndim where it names them; threadIdx, blockIdx, blockDim and gridDim (blockDim is threadgroup, the grid counts threads as MLX counts them); cooperative_groups; template arguments; MLX's CUDA utilities (elem_to_loc, Shape, complex64_t, ...). docs/dialects.md lists it all.

    Example::

        kernel = kjit.cuda_kernel(
            name='myexp', input_names=['inp'], output_names=['out'],
            source='size_t i = blockIdx.x * blockDim.x + threadIdx.x;'
                   'if (i < inp_shape[0]) out[i] = expf(inp[i]);')
        (out,) = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                        grid=(a.size, 1, 1), threadgroup=(256, 1, 1))
    """

@overload
def precompiled_cuda_kernel(*, name: str, compiled_source: bytes | bytearray | memoryview, inputs: Sequence[float], output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[object], scalars: Sequence[bool | int | float], grid: Sequence[int], threadgroup: Sequence[int], shared_memory: int = 0, init_value: float | None = None, ensure_row_contiguous: bool = False, stream: object | None = None, device: str | None = None, outputs: None = None) -> list[Array]: ...

@overload
def precompiled_cuda_kernel(*, name: str, compiled_source: bytes | bytearray | memoryview, inputs: Sequence[numpy.typing.NDArray[Any]], output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[object], scalars: Sequence[bool | int | float], grid: Sequence[int], threadgroup: Sequence[int], shared_memory: int = 0, init_value: float | None = None, ensure_row_contiguous: bool = False, stream: object | None = None, device: str | None = None, outputs: None = None) -> list[numpy.typing.NDArray[Any]]: ...

@overload
def precompiled_cuda_kernel(*, name: str, compiled_source: bytes | bytearray | memoryview, inputs: Sequence[kjit._array_types.ArrayT], output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[object], scalars: Sequence[bool | int | float], grid: Sequence[int], threadgroup: Sequence[int], shared_memory: int = 0, init_value: float | None = None, ensure_row_contiguous: bool = False, stream: object | None = None, device: str | None = None, outputs: None = None) -> list[kjit._array_types.ArrayT]: ...

@overload
def precompiled_cuda_kernel(*, name: str, compiled_source: bytes | bytearray | memoryview, inputs: Sequence[object], output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[object], scalars: Sequence[bool | int | float], grid: Sequence[int], threadgroup: Sequence[int], shared_memory: int = 0, init_value: float | None = None, ensure_row_contiguous: bool = False, stream: object | None = None, device: str | None = None, outputs: Sequence[object] | None = None) -> list[Any]:
    """
    Runs the kernel `name` of compiled_source (PTX text, a cubin or a fatbin, as bytes) and returns its outputs as a list of arrays of the inputs' library (the API of mlx.core.fast.precompiled_cuda_kernel).

    The kernel takes, in this order: a pointer to each input (0-d ones too), a pointer to each output, then each of scalars by value (bool: 1 byte, int: a 32-bit int, float: a 32-bit float); no shapes or strides. grid counts threads: the launch has ceil(grid / threadgroup) blocks of threadgroup threads, every block whole (a grid smaller than the threadgroup too, as MLX launches it), so the kernel checks its own bounds. shared_memory is the dynamic shared memory in bytes. It runs on a GPU only: device=, else the inputs' GPU, else the first GPU (NumPy inputs are copied there and the outputs come back as NumPy arrays); the CPU is an error. The module is loaded once per device and kept.

    Parameters:
        name (str): the kernel's entry point in compiled_source (extern "C" or mangled).
        compiled_source (bytes | bytearray | memoryview): PTX text, a cubin or a fatbin.
        inputs (Sequence): the input arrays, passed as pointers in order.
        output_shapes (Sequence[Sequence[int]]): one shape per output.
        output_dtypes (Sequence): one dtype per output.
        scalars (Sequence[bool | int | float]): passed by value after the outputs.
        grid (Sequence[int]): threads in x, y, z (not blocks).
        threadgroup (Sequence[int]): the block size in x, y, z.
        shared_memory (int, default 0): bytes of dynamic shared memory.
        init_value (float | None): every output filled with it first.
        ensure_row_contiguous (bool, default False): inputs copied to row-contiguous memory first.
        stream (object | None): a CUDA stream, as for a kernel's call.
        device (str | None): 'cuda' or 'cuda:N'.
        outputs (Sequence | None): preallocated arrays to write, instead of new ones.

    Example::

        (y,) = kjit.precompiled_cuda_kernel(
            name='axpb', compiled_source=ptx, inputs=[x], output_shapes=[x.shape],
            output_dtypes=[x.dtype], scalars=[2.0, 1.0], grid=(x.size, 1, 1),
            threadgroup=(256, 1, 1))
    """

def jax_ffi_version() -> str:
    """
    The jax version whose XLA FFI headers kjit's handlers were built with ('' when kjit was built without jax).
    """

def jax_ffi_targets() -> dict[str, object]:
    """
    kjit's XLA FFI handlers by platform ('cpu', 'CUDA'), as capsules for jax.ffi.register_ffi_target.
    """

def jax_ffi_register(bound: BoundKernel) -> int:
    """
    Registers |bound| for kjit's XLA FFI handlers and returns its key (the custom call's attribute 'key'). Kept for the life of the process: a compiled program may use it as long.
    """
