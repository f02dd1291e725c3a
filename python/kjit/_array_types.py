"""The types kjit's stubs give arrays: a kernel's results are arrays of the library of its first
array input, so a call on arrays of one library is typed as returning that library's arrays."""

from typing import Any, Protocol, TypeVar


class SupportsDLPack(Protocol):
    """An array of any library kjit reads: NumPy, torch, JAX, CuPy and MLX arrays and
    kjit.Array all export themselves through DLPack."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """The array as a DLPack capsule."""


ArrayT = TypeVar("ArrayT", bound=SupportsDLPack)
"""An array type of one library: the inputs' and, in the same call, the results'."""
