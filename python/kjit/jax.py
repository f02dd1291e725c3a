"""kjit kernels as JAX operations, usable eagerly and under ``jax.jit``.

``kjit.jax.op(kernel, output_shapes=..., grid=..., ...)`` returns a function of JAX arrays. Each
call binds a JAX primitive; when XLA lowers it for a platform (the CPU, CUDA), kjit resolves the
settings from the inputs' shapes and dtypes, binds the kernel, builds it for that platform and
registers the bound kernel under a key, which the custom call carries as a static attribute.
XLA's FFI then calls kjit's handler (C++, no Python, no GIL) with the buffers and its stream,
and the handler launches the bound kernel: nothing compiles while XLA runs the program.

``backward=`` makes the op differentiable (a ``jax.custom_vjp``); ``vmap_method`` says how
``jax.vmap`` maps it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import jax
import jax.extend
import numpy as np
from jax._src import dispatch
from jax.interpreters import ad, batching, mlir

from . import _kjit
from ._op_checks import (GradFunction, backward_by_name, check_gradient_count, check_kernel,
                         checked_scalars)
from . import _shape_functions as shape_functions
from ._shape_functions import ArraySpec

__all__ = ["ArraySpec", "KernelOp", "op"]

# The FFI target's name, for every op: the attribute "key" says which launch a call runs.
_TARGET = "kjit_launch"

# How jax.vmap may map an op (jax.ffi.ffi_call's names).
_VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")

_targets_lock = threading.Lock()
_targets_registered = False


def _register_targets() -> None:
    """Registers kjit's FFI handlers with XLA, once per process; says why it cannot when kjit
    was built without jax."""
    global _targets_registered
    with _targets_lock:
        if _targets_registered:
            return
        for platform, capsule in _kjit.jax_ffi_targets().items():
            jax.ffi.register_ffi_target(_TARGET, capsule, platform=platform)
        _targets_registered = True


def _kjit_dtype(dtype: object) -> _kjit.Dtype:
    """kjit's dtype for a JAX (NumPy) dtype, by name."""
    return shape_functions.dtype_of(np.dtype(dtype).name)  # type: ignore[call-overload]


def _numpy_dtype(dtype: object) -> np.dtype[Any]:
    """NumPy's dtype (JAX's) for anything kjit takes as one."""
    name = shape_functions.dtype_of(dtype).name
    return jax.numpy.dtype("bool" if name == "bool" else name)


class KernelOp:
    """A kjit kernel as a JAX operation (see ``kjit.jax.op``).

    Call it with the kernel's inputs positionally: JAX arrays (NumPy arrays too), and Python
    numbers for the inputs named in ``scalars``. It returns one array, or a tuple of them.
    """

    def __init__(self, kernel: _kjit.Kernel, *, output_shapes: object, output_dtypes: object,
                 grid: object, threadgroup: object, template: object = None,
                 init_value: float | None = None,
                 backward: GradFunction | KernelOp | None = None,
                 vmap_method: str = "sequential",
                 scalars: Mapping[str, type] | None = None,
                 input_output_aliases: Mapping[str, str] | None = None):
        check_kernel("[kjit.jax.op] ", kernel)
        self.kernel = kernel
        self._prefix = prefix = f"[kjit.jax.op '{kernel.name}'] "
        self._input_names = list(kernel.input_names)
        self._output_names = list(kernel.output_names)
        if vmap_method not in _VMAP_METHODS:
            raise ValueError(f"{prefix}vmap_method: expected one of "
                             f"{', '.join(map(repr, _VMAP_METHODS))}, got {vmap_method!r}")
        self._vmap_method = vmap_method
        self._scalars = checked_scalars(prefix, scalars, self._input_names)
        self._aliases = _checked_aliases(prefix, input_output_aliases, self._input_names,
                                         self._output_names, self._scalars)
        if isinstance(backward, KernelOp):
            backward = backward_by_name(prefix, backward.kernel.name, backward._input_names,
                                        backward._output_names, backward, self._input_names,
                                        self._output_names)
        elif backward is not None and not callable(backward):
            raise TypeError(f"{prefix}backward: expected a KernelOp or a function (inputs, "
                            f"outputs, grad_outputs) -> grad_inputs, got "
                            f"{type(backward).__name__}")
        self._backward = backward
        self._settings = {"output_shapes": output_shapes, "output_dtypes": output_dtypes,
                          "grid": grid, "threadgroup": threadgroup, "template": template}
        self._init_value = init_value
        # The key of each launch registered, by signature and platform: a program traced again
        # (another jit, a retrace) reuses its launch.
        self._keys: dict[Hashable, int] = {}
        self._keys_lock = threading.Lock()
        _register_targets()
        self._differentiable = jax.custom_vjp(self._apply, nondiff_argnums=(0,))
        self._differentiable.defvjp(self._forward, self._grad)

    def __repr__(self) -> str:
        return f"kjit.jax.KernelOp(kernel '{self.kernel.name}')"

    def __call__(self, *args: Any) -> Any:
        """Runs the op on |args|, the kernel's inputs in order."""
        if len(args) != len(self._input_names):
            raise TypeError(f"{self._prefix}takes {len(self._input_names)} argument(s) "
                            f"({', '.join(self._input_names)}), got {len(args)}")
        scalars = tuple((i, self._scalar(n, a)) for i, (n, a) in
                        enumerate(zip(self._input_names, args)) if n in self._scalars)
        arrays = [a for n, a in zip(self._input_names, args) if n not in self._scalars]
        if self._backward is None:
            outputs = self._apply(scalars, *arrays)
        else:
            outputs = self._differentiable(scalars, *arrays)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _scalar(self, name: str, value: object) -> object:
        kind = self._scalars[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)  # Python's numeric tower: an int is a float's value too
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"{self._prefix}{name}: expected a Python {kind.__name__} (a scalar "
                            f"input is static: it reaches the shape functions), got "
                            f"{type(value).__name__}")
        return value

    # The primitive's operands: the arrays, with each scalar as a 0-d constant in its place.
    def _apply(self, scalars: tuple[tuple[int, object], ...], *arrays: Any) -> list[Any]:
        given = dict(scalars)
        rest = iter(arrays)
        operands = [np.asarray(given[i], _numpy_dtype(_kjit.array(given[i]).dtype))
                    if i in given else next(rest) for i in range(len(self._input_names))]
        return _bind(operands, self, scalars)

    def _specs(self, avals: Sequence[Any], scalars: tuple[tuple[int, object], ...]
               ) -> list[object]:
        """What the shape functions see of operands of |avals|: an ArraySpec per array, the
        value of each scalar."""
        given = dict(scalars)
        specs: list[object] = []
        for i, (name, aval) in enumerate(zip(self._input_names, avals)):
            if i in given:
                specs.append(given[i])
                continue
            try:
                dtype = _kjit_dtype(aval.dtype)
            except (TypeError, ValueError):
                raise TypeError(f"{self._prefix}{name}: arrays of dtype {aval.dtype} are not "
                                f"supported by kjit kernels") from None
            specs.append(ArraySpec(tuple(aval.shape), dtype))
        return specs

    def _outputs(self, avals: Sequence[Any], scalars: tuple[tuple[int, object], ...]
                 ) -> list[jax.core.ShapedArray]:
        """The outputs' shapes and dtypes for operands of |avals|."""
        values: dict[str, Any] = shape_functions.resolve(
            self._prefix, {k: self._settings[k] for k in ("output_shapes", "output_dtypes")},
            self._specs(avals, scalars))
        shapes, dtypes = values["output_shapes"], values["output_dtypes"]
        n = len(self._output_names)
        if len(shapes) != n or len(dtypes) != n:
            raise ValueError(f"{self._prefix}output_shapes and output_dtypes: expected {n} "
                             f"each (one per output: {', '.join(self._output_names)}), got "
                             f"{len(shapes)} and {len(dtypes)}")
        try:
            outputs = [jax.core.ShapedArray(tuple(int(e) for e in s), _numpy_dtype(d))
                       for s, d in zip(shapes, dtypes)]
        except (TypeError, ValueError) as e:
            raise TypeError(f"{self._prefix}output_shapes and output_dtypes: {e}") from None
        for i, o in self._aliases.items():
            given, made = avals[i], outputs[o]
            if (tuple(given.shape), given.dtype) != (made.shape, made.dtype):
                raise ValueError(
                    f"{self._prefix}input_output_aliases: input '{self._input_names[i]}' "
                    f"({given.dtype}{list(given.shape)}) and output '{self._output_names[o]}' "
                    f"({made.dtype}{list(made.shape)}) must have the same shape and dtype")
        return outputs

    def _key(self, avals: Sequence[Any], scalars: tuple[tuple[int, object], ...],
             platform: str) -> int:
        """The key of the launch for operands of |avals| on |platform|: the kernel bound and
        built for them, registered on the first request."""
        specs = self._specs(avals, scalars)
        signature = (tuple((type(s), s) if not isinstance(s, ArraySpec) else s for s in specs),
                     platform)
        with self._keys_lock:
            key = self._keys.get(signature)
            if key is not None:
                return key
            values: dict[str, Any] = shape_functions.resolve(self._prefix, self._settings, specs)
            bound = self.kernel.bind(init_value=self._init_value, **values)
            for target in _targets_of(platform):
                self.kernel.build(
                    inputs=[(s.dtype, s.ndim) if isinstance(s, ArraySpec)
                            else (_kjit.array(s).dtype, 0) for s in specs],
                    output_dtypes=values["output_dtypes"], template=values["template"],
                    target=target)
            key = self._keys[signature] = _kjit.jax_ffi_register(bound)
            return key

    # The custom VJP's forward: the outputs, and what the backward needs.
    def _forward(self, scalars: tuple[tuple[int, object], ...], *arrays: Any
                 ) -> tuple[list[Any], tuple[tuple[Any, ...], tuple[Any, ...]]]:
        outputs = self._apply(scalars, *arrays)
        return outputs, (arrays, tuple(outputs))

    def _grad(self, scalars: tuple[tuple[int, object], ...],
              saved: tuple[tuple[Any, ...], tuple[Any, ...]], grad_outputs: Sequence[Any]
              ) -> tuple[Any, ...]:
        arrays, outputs = saved
        given = dict(scalars)
        rest = iter(arrays)
        inputs = tuple(given[i] if i in given else next(rest)
                       for i in range(len(self._input_names)))
        assert self._backward is not None
        grads = self._backward(inputs, outputs, tuple(grad_outputs))
        return tuple(self._checked_grads(grads, inputs, given))

    def _checked_grads(self, grads: object, inputs: tuple[Any, ...], scalars: dict[int, object]
                       ) -> list[Any]:
        """|grads|, the backward's result, as the custom VJP returns them (one per array
        input, zeros for None) when it is one gradient (or None) per input of its shape; a
        clear error otherwise."""
        p = f"{self._prefix}backward: "
        names = self._input_names
        check_gradient_count(self._prefix, grads, names)
        assert isinstance(grads, (tuple, list))
        checked = []
        for i, (n, g, x) in enumerate(zip(names, grads, inputs)):
            if i in scalars:
                if g is not None:
                    raise ValueError(f"{p}the gradient for '{n}', a scalar input, must be None")
                continue
            if g is None:
                checked.append(jax.numpy.zeros_like(x))
                continue
            if tuple(np.shape(g)) != tuple(np.shape(x)):
                raise ValueError(f"{p}the gradient for '{n}' has shape {tuple(np.shape(g))}, "
                                 f"but '{n}' has shape {tuple(np.shape(x))}")
            checked.append(g)
        return checked


def _targets_of(platform: str) -> list[str]:
    """The targets kernel.build builds for, for XLA's |platform|: each local GPU's on CUDA."""
    if platform == "cpu":
        return ["cpu"]
    return [f"cuda:{d.local_hardware_id}" for d in jax.local_devices(backend="gpu")]


def _checked_aliases(prefix: str, aliases: Mapping[str, str] | None,
                     input_names: Sequence[str], output_names: Sequence[str],
                     scalars: Mapping[str, type]) -> dict[int, int]:
    """|aliases| (input name to output name) as positions, checked."""
    if aliases is None:
        return {}
    if not isinstance(aliases, Mapping):
        raise TypeError(f"{prefix}input_output_aliases: expected a dict of input name to "
                        f"output name")
    positions: dict[int, int] = {}
    for i, o in aliases.items():
        if i not in input_names or i in scalars:
            raise ValueError(f"{prefix}input_output_aliases: '{i}' is not an array input of the "
                             f"kernel (inputs: {', '.join(input_names)})")
        if o not in output_names:
            raise ValueError(f"{prefix}input_output_aliases: '{o}' is not an output of the "
                             f"kernel (outputs: {', '.join(output_names)})")
        if output_names.index(o) in positions.values():
            raise ValueError(f"{prefix}input_output_aliases: output '{o}' is given twice")
        positions[input_names.index(i)] = output_names.index(o)
    return positions


# The primitive every op binds: its parameters are the op (hashed by identity) and the values
# of its scalar inputs, by position.
_kjit_op_p = jax.extend.core.Primitive("kjit_op")
_kjit_op_p.multiple_results = True
# jax's Primitive is untyped. Eager calls run the primitive as a small compiled program.
_kjit_op_p.def_impl(  # type: ignore[no-untyped-call]
    functools.partial(dispatch.apply_primitive, _kjit_op_p))


def _bind(operands: Sequence[Any], op: KernelOp, scalars: tuple[tuple[int, object], ...]
          ) -> list[Any]:
    """The outputs of |op| on |operands| (its inputs, scalars as 0-d constants)."""
    outputs = _kjit_op_p.bind(*operands, op=op, scalars=scalars)  # type: ignore[no-untyped-call]
    return list(outputs)


def _abstract_eval(*avals: Any, op: KernelOp, scalars: tuple[tuple[int, object], ...]
                   ) -> list[jax.core.ShapedArray]:
    return op._outputs(avals, scalars)


_kjit_op_p.def_abstract_eval(_abstract_eval)  # type: ignore[no-untyped-call]


def _lowering(platform: str) -> Callable[..., Any]:
    """The primitive's lowering on XLA's |platform|: the custom call of the launch that kjit
    registers for the operands' shapes and dtypes."""
    def lower(ctx: Any, *operands: Any, op: KernelOp,
              scalars: tuple[tuple[int, object], ...]) -> Any:
        call = jax.ffi.ffi_lowering(_TARGET, operand_output_aliases=op._aliases or None)
        return call(ctx, *operands, key=np.int64(op._key(ctx.avals_in, scalars, platform)))

    return lower


mlir.register_lowering(_kjit_op_p, _lowering("cpu"), platform="cpu")
mlir.register_lowering(_kjit_op_p, _lowering("cuda"), platform="cuda")


def _no_derivative(primals: Any, tangents: Any, *, op: KernelOp, **_: Any) -> Any:
    raise TypeError(f"{op._prefix}cannot be differentiated: give kjit.jax.op a backward= "
                    f"(a function (inputs, outputs, grad_outputs) -> grad_inputs)")


ad.primitive_jvps[_kjit_op_p] = _no_derivative


def _batch(args: Sequence[Any], dims: Sequence[Any], *, op: KernelOp,
           scalars: tuple[tuple[int, object], ...]) -> tuple[list[Any], list[int]]:
    """vmap of an op, as its vmap_method says: once per slice ('sequential'), or once on
    inputs given the batch axis first, unbatched arrays broadcast to it ('broadcast_all') or
    given an axis of 1 ('expand_dims'). Scalars stay 0-d."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [a if d is None else jax.numpy.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    given = dict(scalars)
    if op._vmap_method == "sequential":
        batched = [d is not None for d in dims]

        def one(slices: list[Any]) -> list[Any]:
            it = iter(slices)
            merged = [next(it) if b else a for a, b in zip(moved, batched)]
            return _bind(merged, op, scalars)

        outputs = jax.lax.map(one, [a for a, b in zip(moved, batched) if b])
    else:
        n = size if op._vmap_method == "broadcast_all" else 1
        operands = [jax.lax.broadcast(a, (n,)) if d is None and i not in given else a
                    for i, (a, d) in enumerate(zip(moved, dims))]
        outputs = _bind(operands, op, scalars)
    return list(outputs), [0] * len(outputs)


batching.primitive_batchers[_kjit_op_p] = _batch


def op(kernel: _kjit.Kernel, *, output_shapes: object, output_dtypes: object, grid: object,
       threadgroup: object, template: object = None, init_value: float | None = None,
       backward: GradFunction | KernelOp | None = None, vmap_method: str = "sequential",
       scalars: Mapping[str, type] | None = None,
       input_output_aliases: Mapping[str, str] | None = None) -> KernelOp:
    """|kernel| as a function of JAX arrays, usable eagerly and under ``jax.jit``.

    The settings are a call's (``output_shapes``, ``output_dtypes``, ``grid``, ``threadgroup``,
    ``template``, ``init_value``); each may be a function of the inputs, called with an
    ``ArraySpec`` (shape, dtype) per array input and the value of each scalar input, when JAX
    traces and lowers the op.

    backward: a function ``(inputs, outputs, grad_outputs) -> grad_inputs`` of JAX arrays (one
    gradient or None per input), or a KernelOp whose inputs are named after this op's inputs,
    outputs and ``grad_<output>`` and whose outputs are ``grad_<input>`` (inputs it does not
    name get zeros); either makes the op a ``jax.custom_vjp``. Without one, differentiating the
    op is an error.

    vmap_method: how ``jax.vmap`` maps the op: 'sequential' (once per slice, the default),
    'broadcast_all' (once, every array input given the batch axis first: for elementwise
    kernels whose settings follow their inputs' shapes) or 'expand_dims' (once, unbatched
    inputs given an axis of 1).

    scalars: inputs passed as Python numbers, by name, with their type (int, float or bool):
    static values, which reach the shape functions.

    input_output_aliases: outputs that share an input's buffer, as {input name: output name}:
    the output starts as the input's contents (updated in place, e.g. ``y[i] += ...``), and XLA
    writes into the input's memory when it may (a donated argument), else into a copy. The two
    must have the same shape and dtype.
    """
    return KernelOp(kernel, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                    threadgroup=threadgroup, template=template, init_value=init_value,
                    backward=backward, vmap_method=vmap_method, scalars=scalars,
                    input_output_aliases=input_output_aliases)
