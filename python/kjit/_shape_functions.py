"""Settings given as functions of the inputs: ``output_shapes``, ``output_dtypes``, ``grid``,
``threadgroup`` and ``template`` may each be a callable, called with one argument per input: an
``ArraySpec`` (shape and dtype) for an array, the value itself for a Python scalar. Its result
for a signature (the inputs' shapes, dtypes and scalar values) is kept, so that a function runs
once per distinct signature; the call then goes on as if the values had been given.

This is what a framework's tracer needs: torch's fake tensors and JAX's abstract values have
shapes and dtypes, and no data.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _kjit

# The settings that may be functions, in the order of a call's parameters.
SETTINGS = ("output_shapes", "output_dtypes", "grid", "threadgroup", "template")

# Results kept per function, beyond which its oldest are forgotten: a function of shapes that
# change with every call (a growing sequence) must not hold memory without bound.
_KEPT_PER_FUNCTION = 1024


@dataclass(frozen=True)
class ArraySpec:
    """What a setting function sees of an input array: its shape and dtype, no data.

    >>> ArraySpec((2, 3), kjit.float32).size
    6
    """

    shape: tuple[Any, ...]  # ints, or a tracer's symbolic sizes
    dtype: _kjit.Dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> Any:
        """The number of elements."""
        n: Any = 1
        for extent in self.shape:
            n = n * extent
        return n


def dtype_of(dtype: object) -> _kjit.Dtype:
    """kjit's dtype for anything a call accepts as one (kjit.float32, np.float32, torch.int64,
    'float16')."""
    if isinstance(dtype, _kjit.Dtype):
        return dtype
    try:
        return _dtypes[dtype]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        found = _kjit.empty([0], dtype=dtype, device="cpu").dtype
        try:
            _dtypes[dtype] = found
        except TypeError:
            pass
        return found


# The dtypes of other libraries met so far, as kjit's: a few dozen at most.
_dtypes: dict[object, _kjit.Dtype] = {}


def spec_of(value: object) -> object:
    """What a setting function is given for the input |value|: an ArraySpec for an array, the
    value itself for a Python scalar."""
    if isinstance(value, (bool, int, float)):
        return value
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        try:
            return ArraySpec(tuple(shape), dtype_of(dtype))
        except (TypeError, ValueError):
            pass  # a dtype kjit has not: read as kjit reads the array, which says why
    array = _kjit.array(value)
    return ArraySpec(tuple(array.shape), array.dtype)


def signature_of(specs: Sequence[object]) -> Hashable | None:
    """The key a function's results are kept under for inputs |specs|, or None when they have
    none (a tracer's symbolic sizes)."""
    key = tuple(s if isinstance(s, ArraySpec) else (type(s), s) for s in specs)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _kept_results(function: Callable[..., object]) -> dict[Hashable, object] | None:
    """The results kept for |function|, or None when it cannot hold them (no weak reference to
    it can be made)."""
    try:
        return _results.setdefault(function, {})
    except TypeError:
        return None


_results: weakref.WeakKeyDictionary[Callable[..., object], dict[Hashable, object]] = (
    weakref.WeakKeyDictionary())


def _checked(prefix: str, setting: str, value: object) -> object:
    """|value|, which the function for |setting| returned, if it has the type a call takes; a
    TypeError naming the setting otherwise (the call checks the elements)."""
    got = f"the {setting} function returned {value!r:.60} ({type(value).__name__})"
    if setting in ("grid", "threadgroup"):
        if not isinstance(value, (tuple, list)) or len(value) != 3:
            raise TypeError(f"{prefix}{setting}: {got}; expected a tuple of 3 ints")
    elif setting == "template":
        if value is not None and not isinstance(value, (tuple, list, dict)):
            raise TypeError(f"{prefix}{setting}: {got}; expected a list of (name, value) pairs")
        if isinstance(value, dict):
            value = list(value.items())
    elif not isinstance(value, (tuple, list)):
        what = "shapes" if setting == "output_shapes" else "dtypes"
        raise TypeError(f"{prefix}{setting}: {got}; expected a list of {what}, one per output")
    elif setting == "output_shapes":
        for shape in value:
            if not isinstance(shape, (tuple, list)):
                raise TypeError(f"{prefix}{setting}: {got}; expected a list of shapes (each a "
                                f"tuple of ints), one per output")
    return value


def evaluate(prefix: str, setting: str, function: Callable[..., object],
             specs: Sequence[object], key: Hashable | None) -> object:
    """What |function|, given for |setting|, returns for inputs |specs| (kept under |key|, when
    there is one), checked; |prefix| starts the errors."""
    kept = _kept_results(function) if key is not None else None
    if kept is not None and key in kept:
        return kept[key]
    try:
        returned = function(*specs)
    except Exception as e:
        e.add_note(f"{prefix}{setting}: raised by the {setting} function")
        raise
    value = _checked(prefix, setting, returned)
    if kept is not None:
        if len(kept) >= _KEPT_PER_FUNCTION:
            kept.pop(next(iter(kept)), None)
        kept[key] = value
    return value


def resolve(prefix: str, settings: dict[str, object], specs: Sequence[object]) -> dict[str, object]:
    """|settings| with each callable among them replaced by its value for inputs |specs|."""
    key = signature_of(specs)
    return {
        name: evaluate(prefix, name, value, specs, key)  # type: ignore[arg-type]
        if is_function(value) else value
        for name, value in settings.items()
    }


def is_function(setting: object) -> bool:
    """Whether |setting| is a function of the inputs. A type is not: np.float32 given for
    output_dtypes is a slip for [np.float32], which the call then reports as such."""
    return callable(setting) and not isinstance(setting, type)


def has_functions(settings: dict[str, object]) -> bool:
    """Whether any of |settings| is a function."""
    return any(is_function(value) for value in settings.values())


def call_with_functions(kernel: _kjit.Kernel, prefix: str, inputs: Sequence[object],
                        output_shapes: Any, output_dtypes: Any, grid: Any, threadgroup: Any,
                        template: Any, init_value: Any, verbose: Any, stream: Any, device: Any,
                        outputs: Any) -> object:
    """Runs |kernel| on a call some of whose settings are functions of the inputs; |prefix|
    starts every error. Kernel.__call__ comes here when one of them is callable."""
    specs = [spec_of(x) for x in inputs]
    values: dict[str, Any] = resolve(
        prefix, {"output_shapes": output_shapes, "output_dtypes": output_dtypes, "grid": grid,
                 "threadgroup": threadgroup, "template": template}, specs)
    return kernel(inputs=inputs, **values, init_value=init_value, verbose=verbose,
                  stream=stream, device=device, outputs=outputs)
