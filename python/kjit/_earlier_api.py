"""MLX's two earlier forms of the custom Metal kernel API, on kjit's kernels.

The form kjit teaches is MLX's current one: ``metal_kernel(name, input_names, output_names,
source)`` and calls with lists. Code written for an earlier MLX runs too:

- MLX 0.17.0 to 0.17.2 (August and September 2024): ``metal_kernel(name=, source=)`` without
  names, called with dicts (``inputs={"inp": a}``, ``output_shapes={"out": shape}``, ...) and
  returning a dict keyed by output name. A kernel made with names takes such calls as well.
- The first form of MLX's proposal: ``MetalKernel(name, source, grid, threadgroup,
  output_shapes, output_dtypes)``, ``kernel.template(T=...)`` and ``kernel(inp=a)``.

Both are converted here to the current form's calls, so that they share its checks, caches and
launch path.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, overload

from . import _kjit

Dim3 = tuple[int, int, int]
Template = Mapping[str, object] | Sequence[tuple[str, object]]

_METAL_PREFIX = "[kjit.metal_kernel] kernel '{}': "


def _names(prefix: str, param: str, value: object, why: str) -> list[str]:
    """The keys of the dict |value|, which must be str names; |why| says why it must be a
    dict."""
    if not isinstance(value, dict):
        raise TypeError(f"{prefix}{param}: expected a dict keyed by name, {why}; got "
                        f"{type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{prefix}{param}: every key must be a str name, got {key!r}")
    return list(value)


# Why output_dtypes and outputs must be dicts when inputs and output_shapes are: a list's order
# would say nothing about which output is which.
_AS_INPUTS = "as inputs and output_shapes are (MLX 0.17's form)"


def _in_order(prefix: str, param: str, value: object, names: Sequence[str],
              named_by: str) -> list[Any]:
    """The values of the dict |value| in the order of |names|, which its keys must be;
    |named_by| says where the names come from."""
    keys = _names(prefix, param, value, _AS_INPUTS)
    assert isinstance(value, dict)
    missing = [repr(n) for n in names if n not in value]
    unknown = [repr(k) for k in keys if k not in names]
    if missing or unknown:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(unknown)}"] if unknown else [])
        raise ValueError(f"{prefix}{param}: {'; '.join(problems)} ({named_by}: "
                         f"{', '.join(names)})")
    return [value[n] for n in names]


def _template_pairs(template: object) -> Any:
    """A template dict as the current form's (name, value) pairs; anything else as it is."""
    return list(template.items()) if isinstance(template, dict) else template


def call_with_dicts(kernel: _kjit.Kernel, prefix: str, inputs: object, output_shapes: object,
                    output_dtypes: object, grid: Any, threadgroup: Any, template: object = None,
                    init_value: Any = None, verbose: Any = False, stream: Any = None,
                    device: Any = None, outputs: object = None,
                    outputs_named_by: str = "the kernel's outputs") -> dict[str, object]:
    """Runs |kernel| on a call in MLX 0.17's form: inputs, output_shapes, output_dtypes and
    outputs are dicts keyed by the kernel's names, template a dict or (name, value) pairs.
    Returns the outputs keyed by name, in the kernel's order. |prefix| starts every error;
    |outputs_named_by| says in them where the output names come from.

    Kernel.__call__ comes here when inputs is a dict."""
    input_names = kernel.input_names
    output_names = kernel.output_names
    ordered_inputs = _in_order(prefix, "inputs", inputs, input_names, "the kernel's inputs")
    shapes = _in_order(prefix, "output_shapes", output_shapes, output_names, outputs_named_by)
    dtypes = _in_order(prefix, "output_dtypes", output_dtypes, output_names, outputs_named_by)
    given = None
    if outputs is not None:
        given = _in_order(prefix, "outputs", outputs, output_names, outputs_named_by)
    # The values are checked by the call, as those of a call with lists are.
    results = kernel(inputs=ordered_inputs, output_shapes=shapes, output_dtypes=dtypes,
                     grid=grid, threadgroup=threadgroup, template=_template_pairs(template),
                     init_value=init_value, verbose=verbose, stream=stream, device=device,
                     outputs=given)
    return dict(zip(output_names, results))


_NAMELESS = ("as the kernel was made without input_names and output_names (MLX 0.17's form: "
             "pass them to metal_kernel for calls with lists)")


class DictFormKernel:
    """A Metal kernel of MLX 0.17's form, made by ``metal_kernel(name=, source=)``: the names of
    its inputs and outputs come from each call's dicts.

    >>> k = kjit.metal_kernel(name="twice", source="uint i = thread_position_in_grid.x; "
    ...                                           "y[i] = 2 * x[i];")
    >>> k(inputs={"x": x}, output_shapes={"y": x.shape}, output_dtypes={"y": x.dtype},
    ...   grid=(x.size, 1, 1), threadgroup=(256, 1, 1))["y"]

    Each set of names is a kjit kernel of the current form, made at its first call and kept.
    """

    def __init__(self, name: str, source: str, header: str = "",
                 ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options: dict[str, str | bool] | None = None) -> None:
        self.name = name
        self._settings: dict[str, Any] = {
            "name": name, "source": source, "header": header,
            "ensure_row_contiguous": ensure_row_contiguous, "atomic_outputs": atomic_outputs,
            "compile_options": compile_options}
        self._kernels: dict[tuple[tuple[str, ...], tuple[str, ...]], _kjit.Kernel] = {}

    def kernel_for(self, input_names: Sequence[str],
                   output_names: Sequence[str]) -> _kjit.Kernel:
        """The kernel of the current form with these input and output names."""
        key = (tuple(input_names), tuple(output_names))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = _kjit.metal_kernel(input_names=list(input_names),
                                        output_names=list(output_names), **self._settings)
            self._kernels[key] = kernel
        return kernel

    def __call__(self, *, inputs: Mapping[str, object],
                 output_shapes: Mapping[str, Sequence[int]], output_dtypes: Mapping[str, object],
                 grid: Dim3, threadgroup: Dim3, template: Template | None = None,
                 init_value: float | None = None, verbose: bool = False,
                 stream: object | None = None, device: str | None = None,
                 outputs: Mapping[str, object] | None = None) -> dict[str, object]:
        """Runs the kernel and returns its outputs keyed by name.

        The inputs are named by inputs' keys, in their order; the outputs by output_shapes'
        keys, which output_dtypes' (and outputs', when given) must be. Everything else is as in
        the current form's call."""
        prefix = _METAL_PREFIX.format(self.name)
        kernel = self.kernel_for(_names(prefix, "inputs", inputs, _NAMELESS),
                                 _names(prefix, "output_shapes", output_shapes, _NAMELESS))
        return call_with_dicts(kernel, prefix, inputs, output_shapes, output_dtypes, grid,
                               threadgroup, template, init_value, verbose, stream, device,
                               outputs, outputs_named_by="the outputs of output_shapes")


class MetalKernel:
    """A Metal kernel in the first form of MLX's custom-kernel proposal: the launch is fixed
    when the kernel is made, the template set with template(), the inputs passed by name.

    >>> kernel = kjit.MetalKernel(name="myexp", source=source, grid=(a.size, 1, 1),
    ...                           threadgroup=(256, 1, 1), output_shapes={"out": a.shape},
    ...                           output_dtypes={"out": a.dtype})
    >>> kernel.template(T=kjit.float32)
    >>> out = kernel(inp=a)["out"]

    grid, threadgroup, output_shapes, output_dtypes and verbose may be changed between calls.
    """

    def __init__(self, name: str, source: str, grid: Dim3, threadgroup: Dim3,
                 output_shapes: Mapping[str, Sequence[int]],
                 output_dtypes: Mapping[str, object], verbose: bool = False) -> None:
        self.grid = grid
        self.threadgroup = threadgroup
        self.output_shapes = output_shapes
        self.output_dtypes = output_dtypes
        self.verbose = verbose
        self._kernel = DictFormKernel(name, source)
        self._template: dict[str, object] = {}

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self._kernel.name

    def template(self, **args: object) -> None:
        """Sets the template arguments of the calls that follow (replacing those set before):
        template(T=kjit.float32, N=4) declares T and N at the top of the body."""
        self._template = dict(args)

    def __call__(self, **inputs: object) -> dict[str, object]:
        """Runs the kernel on the inputs, each passed by its name in the body, and returns the
        outputs keyed by name."""
        return self._kernel(inputs=inputs, output_shapes=self.output_shapes,
                            output_dtypes=self.output_dtypes, grid=self.grid,
                            threadgroup=self.threadgroup, template=self._template or None,
                            verbose=self.verbose)


@overload
def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str],
                 source: str, header: str = "", ensure_row_contiguous: bool = True,
                 atomic_outputs: bool = False,
                 compile_options: dict[str, str | bool] | None = None) -> _kjit.Kernel: ...


@overload
def metal_kernel(name: str, *, source: str, header: str = "", ensure_row_contiguous: bool = True,
                 atomic_outputs: bool = False,
                 compile_options: dict[str, str | bool] | None = None) -> DictFormKernel: ...


def metal_kernel(*args: Any, **kwargs: Any) -> _kjit.Kernel | DictFormKernel:
    """A kernel whose body is Metal Shading Language (the API of mlx.core.fast.metal_kernel).

    Parameters:
        name (str): the kernel's name, in errors and verbose output; any letters, digits and
            underscores (a leading digit too, as MLX allows).
        input_names (Sequence[str]): the names the body reads its inputs by, in call order.
        output_names (Sequence[str]): the names the body writes its outputs by.
        source (str): the body only: the statements inside the kernel function, which kjit
            declares (its signature follows the inputs, outputs and what the body names).
        header (str, default ""): code put before the kernel: helper functions, structs,
            constants, ``#include`` of MLX's headers (kjit provides their contents).
        ensure_row_contiguous (bool, default True): inputs are copied to row-contiguous
            memory first; with False the body gets each input as it is, with its strides.
        atomic_outputs (bool, default False): outputs are ``device atomic<T>*``, for
            ``atomic_fetch_add_explicit`` and the other atomic functions.
        compile_options (dict[str, str | bool] | None): ``"math_mode"``: ``"safe"`` (the
            default: every operation rounded as IEEE does), ``"relaxed"`` (approximate
            division and square roots) or ``"fast"`` (fast math); ``"debug": True`` for
            bounds checks and unwritten-output reports (docs/debugging.md); ``"line_info":
            True`` for the line tables GPU tools read.

    What the body sees: each input as ``const device T* name`` (a 0-d input by value), each
    output as ``device T* name``; ``name_shape``, ``name_strides`` and ``name_ndim`` for the
    arrays it names them for; Metal's thread attributes (``thread_position_in_grid``,
    ``threadgroup_position_in_grid``, ``thread_position_in_threadgroup``,
    ``threads_per_threadgroup``, ``thread_index_in_simdgroup``, ...) as ``uint`` or
    ``uint3``; template arguments as the names the call's ``template`` gives; ``threadgroup``
    arrays, ``threadgroup_barrier``, ``simd_*`` operations and atomics; and MLX's kernel
    utilities (``elem_to_loc``, ``ceildiv``, ...). docs/dialects.md lists it all.

    The kernel compiles when first called (or ``kernel.build(...)``) for the inputs' dtypes
    and the template, once per combination, and is kept in memory and on disk.

    Without input_names and output_names (``metal_kernel(name=, source=)``, or ``(name,
    source)`` positionally), as in MLX 0.17, it returns a DictFormKernel, whose calls name the
    inputs and outputs with dicts.

    Example::

        kernel = kjit.metal_kernel(
            name="myexp", input_names=["inp"], output_names=["out"],
            source="uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);")
        (out,) = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                        grid=(a.size, 1, 1), threadgroup=(256, 1, 1))

    ``grid`` counts threads, not groups (Metal's dispatchThreads): ``grid=(a.size, 1, 1)``
    runs one thread per element, in groups of 256.
    """
    positional_source = len(args) >= 2 and isinstance(args[1], str)
    if "input_names" not in kwargs and "output_names" not in kwargs and (
            len(args) < 2 or positional_source):
        return DictFormKernel(*args, **kwargs)
    return _kjit.metal_kernel(*args, **kwargs)


# help() shows the current form's parameters, not the (*args, **kwargs) that also takes MLX's
# earlier forms.
metal_kernel.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=a, default=d)
     for n, a, d in [
         ("name", "str", inspect.Parameter.empty),
         ("input_names", "Sequence[str]", inspect.Parameter.empty),
         ("output_names", "Sequence[str]", inspect.Parameter.empty),
         ("source", "str", inspect.Parameter.empty), ("header", "str", ""),
         ("ensure_row_contiguous", "bool", True), ("atomic_outputs", "bool", False),
         ("compile_options", "dict[str, str | bool] | None", None)]],
    return_annotation="Kernel")
