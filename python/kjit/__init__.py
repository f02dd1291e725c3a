"""kjit: GPU kernels written as a body string, in Metal Shading Language or CUDA C++, run on
NVIDIA GPUs or on the CPU, from any array library.

>>> import kjit, numpy as np
>>> k = kjit.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
...                       source="uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
>>> x = np.arange(4, dtype=np.float32)
>>> k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
...   grid=(4, 1, 1), threadgroup=(4, 1, 1))[0]
array([0., 2., 4., 6.], dtype=float32)
"""

import glob as _glob
import os as _os
import sys as _sys

from ._earlier_api import DictFormKernel, MetalKernel, metal_kernel
from ._errors import CompileError, LaunchError
from ._shape_functions import ArraySpec
from ._kjit import (
    Array,
    BoundKernel,
    Dtype,
    Kernel,
    array,
    bfloat16,
    cache_info,
    clear_cache,
    complex64,
    cuda_kernel,
    default_device,
    devices,
    empty,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    precompiled_cuda_kernel,
    uint8,
    uint16,
    uint32,
    uint64,
    version,
    zeros,
)

from ._kjit import add_library_search_dir as _add_library_search_dir

bool_ = Dtype.bool
__version__ = version()

# NVRTC may come from NVIDIA's wheels (nvidia-cuda-nvrtc, cuda-toolkit): let the CUDA backend
# find them. Nothing is loaded until a CUDA kernel is built.
for _entry in _sys.path:
    for _lib in sorted(_glob.glob(_os.path.join(_entry, "nvidia", "*", "lib")), reverse=True):
        _add_library_search_dir(_lib)



def __getattr__(name: str) -> object:
    """kjit.torch, imported on first use: importing kjit never imports torch."""
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'kjit' has no attribute {name!r}")


__all__ = [
    "Array",
    "ArraySpec",
    "BoundKernel",
    "CompileError",
    "DictFormKernel",
    "Dtype",
    "Kernel",
    "LaunchError",
    "MetalKernel",
    "__version__",
    "array",
    "bfloat16",
    "bool_",
    "cache_info",
    "clear_cache",
    "complex64",
    "cuda_kernel",
    "default_device",
    "devices",
    "empty",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "metal_kernel",
    "precompiled_cuda_kernel",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "zeros",
]
