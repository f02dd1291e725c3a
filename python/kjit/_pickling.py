"""Kernels and bound kernels made again from what made them, as pickle and copy do.

A kernel pickles as its factory (``metal_kernel`` or ``cuda_kernel``) and the checked arguments
it was made with; a bound kernel as its kernel's and ``bind``'s. Nothing of a device goes into a
pickle: the kernel made again in another process finds its programs in the disk cache, or
compiles them there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _kjit

# The factories a pickle may name: nothing else is ever called on a pickle's word.
_FACTORIES: dict[str, Callable[..., _kjit.Kernel]] = {
    "metal_kernel": _kjit.metal_kernel, "cuda_kernel": _kjit.cuda_kernel}


def kernel_from(factory: str, arguments: tuple[Any, ...]) -> _kjit.Kernel:
    """The kernel |factory| makes of |arguments|."""
    if factory not in _FACTORIES:
        raise ValueError(f"kjit: a pickled kernel names the factory {factory!r}, which kjit "
                         f"does not have (known: {', '.join(_FACTORIES)})")
    return _FACTORIES[factory](*arguments)


def bound_from(kernel: tuple[str, tuple[Any, ...]], settings: dict[str, Any]) -> _kjit.BoundKernel:
    """The kernel made by the recipe |kernel|, bound to |settings|."""
    return kernel_from(*kernel).bind(**settings)
