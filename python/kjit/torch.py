"""kjit kernels as PyTorch operators.

``kjit.torch.op(kernel, "mylib::name", output_shapes=..., ...)`` registers a kernel with
``torch.library`` (a schema, CPU and CUDA implementations, a fake implementation from the shape
functions, autograd and a vmap rule) and returns a callable that runs it. Through it a kernel
works as torch's own operators do: ``torch.compile(fullgraph=True)`` traces it without a graph
break, ``torch.export`` exports it, autograd differentiates it through its ``backward``, and CUDA
graphs capture it. Called eagerly, it skips torch's dispatcher whenever nothing (autograd, a
tracer, a transform) needs it, so that it costs little more than a bound kernel's call.
"""

from __future__ import annotations

import contextvars
import keyword
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Union

import torch

from ._errors import LaunchError
from . import _kjit
from ._op_checks import backward_by_name, check_gradient_count, check_kernel, checked_scalars
from . import _shape_functions as shape_functions
from ._shape_functions import ArraySpec

__all__ = ["ArraySpec", "KernelOp", "op"]

# torch's dtype for each of kjit's, and back.
_TORCH_DTYPES: dict[_kjit.Dtype, torch.dtype] = {
    d: getattr(torch, d.name) for d in _kjit.Dtype if hasattr(torch, d.name)
}
_KJIT_DTYPES: dict[torch.dtype, _kjit.Dtype] = {t: d for d, t in _TORCH_DTYPES.items()}

# The schema type of each kind of scalar input.
# Ints are SymInts, so that torch.compile traces a new value instead of compiling again; a float
# is a constant of the graph (pass a 0-d tensor for a value that changes every step).
_SCALAR_SCHEMA = {int: "SymInt", float: "float", bool: "bool"}

# The op whose backward runs now with create_graph (its name), seen by the ops it calls.
_differentiating: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kjit_differentiating", default=None)

# Bound kernels kept per op, beyond which the oldest go: scalars' values that never repeat (a
# step counter) must not hold memory without bound.
_KEPT_LAUNCHES = 1024

GradFunction = Callable[[tuple[Any, ...], tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]],
                        Sequence[Union[torch.Tensor, None]]]


def _torch_dtype(dtype: object) -> torch.dtype:
    """torch's dtype for anything kjit takes as one."""
    if isinstance(dtype, torch.dtype):
        return dtype
    return _TORCH_DTYPES[shape_functions.dtype_of(dtype)]


def _spec(prefix: str, name: str, value: object) -> object:
    """What a shape function sees of the op's input |name|, |value|."""
    if isinstance(value, torch.Tensor):
        dtype = _KJIT_DTYPES.get(value.dtype)
        if dtype is None:
            raise TypeError(f"{prefix}{name}: a tensor of dtype {value.dtype}, which kjit "
                            f"kernels do not take")
        return ArraySpec(tuple(value.shape), dtype)
    return value


# torch's checks of its own state, looked up once: an eager call makes each of them.
_is_compiling = torch.compiler.is_compiling
_functorch_active = torch._C._are_functorch_transforms_active
_forward_ad = torch.autograd.forward_ad  # _current_level >= 0 while dual tensors may exist
_stream_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)  # CUDA builds
_Tensor = torch.Tensor


# What the eager checks answer: 0, the dispatcher must see the call; else READY, with ON_GPU
# when a tensor is on a GPU and NUMBERS when an argument is a Python number.
READY, ON_GPU, NUMBERS = 1, 2, 4


def _eager_ready_in_python(*args: object) -> int:
    """Whether an eager call on |args| may go straight to the kernel: 0 when torch's
    dispatcher must see it (a transform, a dispatch or function mode, or the JIT tracer is
    active, an argument is not a plain CPU or CUDA tensor or a Python number, or autograd has a
    tensor to record), else READY | ON_GPU | NUMBERS as they apply. kjit._torch answers the same
    in C++, faster."""
    if (_functorch_active() or torch._C._len_torch_dispatch_stack()
            or torch._C._is_torch_function_mode_enabled() or torch._C._get_tracing_state()):
        return 0
    grad, ready = torch.is_grad_enabled(), READY
    for a in args:
        if type(a) is torch.Tensor:
            if grad and a.requires_grad or not (a.is_cpu or a.is_cuda):
                return 0
            if a.is_cuda:
                ready |= ON_GPU
        elif isinstance(a, (int, float)):  # bools are ints
            ready |= NUMBERS
        else:
            return 0
    return ready


def _eager_check() -> Callable[..., int]:
    """kjit._torch's eager check where it serves, else the same in Python."""
    if not _kjit.torch_path().startswith("kjit._torch"):
        return _eager_ready_in_python
    from . import _torch_bridge

    check: Callable[..., int] = _torch_bridge.load().eager_ready
    return check


_eager_ready = _eager_check()


# A signature's launch: the bound kernel, its outputs' shapes and torch dtypes, and the values
# of the settings.
_Launch = tuple[_kjit.BoundKernel, list[tuple[Any, torch.dtype]], dict[str, Any]]


def _device_of(args: Sequence[object]) -> torch.device:
    """The device the op runs on for |args|: the GPU of its CUDA tensors, as torch dispatches
    to the CUDA implementation when there are any, else the CPU."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return next((t.device for t in tensors if t.is_cuda), tensors[0].device)


class KernelOp:
    """A kjit kernel registered as the torch operator |name| ('namespace::name');
    ``kjit.torch.op(kernel, name, ...)`` makes one.

    Call it with the kernel's inputs (tensors, and Python numbers for the inputs named in
    ``scalars``), then the outputs it writes in place (``mutates``), positionally. It returns
    its other outputs: one tensor, a tuple of them, or None.

    The settings are a call's: ``output_shapes``, ``output_dtypes``, ``grid``,
    ``threadgroup`` and ``template``, each a value or a function of the inputs (called with an
    ``ArraySpec`` of shape and dtype per tensor input and the value of each scalar input, once
    per signature: torch's fake tensors get their outputs from these), and ``init_value``.

    backward: how gradients reach the inputs. A function ``(inputs, outputs, grad_outputs) ->
    grad_inputs`` (one tensor or None per input; it may call kjit ops), or a KernelOp whose
    inputs are named after the forward's inputs, outputs and ``grad_<output>`` and whose outputs
    are ``grad_<input>``. Without one, the outputs do not require grad, and the first call on
    tensors that do warns.

    scalars: inputs passed as Python numbers, by name, with their type (int, float or bool).
    mutates: outputs the op takes as arguments after the inputs, in this order, and writes in
    place (torch's mutated arguments) rather than returning them.
    """

    def __init__(self, kernel: _kjit.Kernel, name: str, *, output_shapes: object,
                 output_dtypes: object, grid: object, threadgroup: object,
                 template: object = None, init_value: float | None = None,
                 backward: GradFunction | KernelOp | None = None,
                 scalars: Mapping[str, type] | None = None, mutates: Sequence[str] = ()):
        prefix = f"[kjit.torch.op '{name}'] "
        check_kernel(prefix, kernel)
        namespace, opname = _split_name(prefix, name)
        self.kernel = kernel
        self.name = name
        self._prefix = prefix
        self._input_names = list(kernel.input_names)
        self._output_names = list(kernel.output_names)
        self._scalars = checked_scalars(prefix, scalars, self._input_names)
        self._mutated = _checked_mutates(prefix, mutates, self._output_names)
        self._returned = [o for o in range(len(self._output_names)) if o not in self._mutated]
        # The op's arguments: the inputs, then the outputs it writes in place.
        self._argument_names = self._input_names + [self._output_names[o] for o in self._mutated]
        self._arity = len(self._argument_names)
        self._single = len(self._output_names) == 1 and not self._mutated
        self._settings = {"output_shapes": output_shapes, "output_dtypes": output_dtypes,
                          "grid": grid, "threadgroup": threadgroup, "template": template}
        self._init_value = init_value
        self._launches: dict[Hashable, _Launch] = {}
        # Settings that are values bind once, now, for every signature (and are checked now).
        self._static: _Launch | None = None
        if not shape_functions.has_functions(self._settings):
            self._static = self._launch_for([])
        self._warned = False
        if backward is not None and self._mutated:
            raise ValueError(f"{prefix}backward: an op that writes outputs in place (mutates) "
                             f"cannot have a backward; return those outputs instead")
        self._backward = _checked_backward(prefix, backward, self._input_names,
                                           [self._output_names[o] for o in self._returned])
        if torch._C._jit_get_schemas_for_operator(name):
            raise ValueError(f"{prefix}name: torch already has an operator '{name}' (an op stays "
                             f"registered until the process ends; give this one another name)")
        # torch.library's Library methods are untyped.
        self._lib = torch.library.Library(namespace, "FRAGMENT")  # type: ignore[no-untyped-call]
        self._lib.define(opname + self._schema())  # type: ignore[no-untyped-call]
        self.overload: torch._ops.OpOverload = torch._library.utils.lookup_op(name + ".default")
        for device in ("CPU", "CUDA"):
            self._lib.impl(opname, self._run, device)  # type: ignore[no-untyped-call]
        torch.library.register_fake(name, self._fake, lib=self._lib)
        self._lib.impl(opname, self._autograd, "Autograd")  # type: ignore[no-untyped-call]
        torch.library.register_vmap(name, self._vmap, lib=self._lib)
        self._made_with = (kernel, name, dict(self._settings), init_value, backward, scalars,
                           tuple(mutates))
        _ops[name] = self

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what made it: unpickled where an op of its name exists, that op (a
        module's ops are made again as the module is imported), else a new one. Its settings
        and backward pickle as any Python object does: module-level functions, not lambdas."""
        return (_op_named, self._made_with)

    def __copy__(self) -> KernelOp:
        return self  # an op is its registration with torch: one per name

    def __deepcopy__(self, memo: dict[int, object]) -> KernelOp:
        return self

    def __repr__(self) -> str:
        return f"kjit.torch.KernelOp('{self.name}', kernel '{self.kernel.name}')"

    def __call__(self, *args: Any) -> Any:
        """Runs the op: straight to the kernel when nothing of torch's needs to see the call,
        else through torch's dispatcher (autograd, torch.compile, export, vmap)."""
        if len(args) != self._arity:
            self._check_count(args)
        ready = 0 if _is_compiling() or _forward_ad._current_level >= 0 else _eager_ready(*args)
        if ready:
            if ready & NUMBERS or self._scalars:
                args = self._checked_arguments(args)
            if self._mutated:
                return self._launch(args)
            if self._static:
                bound = self._static[0]
            else:  # _launch_for's lookup, written out: it is most of an eager call's own cost
                key = tuple([(a.shape, a.dtype) if type(a) is _Tensor else (type(a), a)
                             for a in args])
                bound = (self._launches.get(key) or self._launch_for(args))[0]
            try:
                made = bound(*args)
            except LaunchError:
                # kjit refuses its own pool to a stream that captures a CUDA graph, before it
                # queues anything: the outputs come from torch then. Asked only here, as
                # asking costs a good part of a call.
                if not (ready & ON_GPU and _stream_capturing and _stream_capturing()):
                    raise
                return self._launch(args)
            return made[0] if self._single else tuple(made)
        if self._backward is not None and _functorch_active():
            # torch.func's transforms differentiate an autograd.Function called here, not one
            # called from the op's autograd kernel.
            return _Differentiated.apply(self, *args)
        return self.overload(*args)

    def prepare(self, *args: Any) -> None:
        """Resolves the settings for arguments like |args| and builds the kernel for their
        device, every launch shape, so that a later call (inside CUDA graph capture, too)
        compiles and loads nothing."""
        self._check_count(args)
        args = self._checked_arguments(args)
        values = self._launch_for(args)[2]
        device = _device_of(args)
        self.kernel.build(
            inputs=[(_KJIT_DTYPES[a.dtype], a.dim()) if isinstance(a, torch.Tensor)
                    else (_kjit.array(a).dtype, 0) for a in args[:len(self._input_names)]],
            output_dtypes=values["output_dtypes"], template=values["template"],
            target="cpu" if device.type == "cpu" else f"cuda:{device.index or 0}")

    # The schema, e.g. "(Tensor x, float alpha, Tensor(a!) out) -> (Tensor, Tensor)".
    def _schema(self) -> str:
        params = [f"{_SCALAR_SCHEMA[self._scalars[n]]} {n}" if n in self._scalars
                  else f"Tensor {n}" for n in self._input_names]
        params += [f"Tensor({_alias(i)}!) {self._output_names[o]}"
                   for i, o in enumerate(self._mutated)]
        returns = ["Tensor"] * len(self._returned)
        result = returns[0] if len(returns) == 1 else f"({', '.join(returns)})"
        return f"({', '.join(params)}) -> {result}"

    def _check_count(self, args: Sequence[object]) -> None:
        """A TypeError naming the op's arguments unless there are as many |args|."""
        if len(args) != self._arity:
            raise TypeError(f"{self._prefix}takes {self._arity} argument(s) "
                            f"({', '.join(self._argument_names)}), got {len(args)}")

    def _checked_arguments(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """|args| as the schema takes them, as torch's dispatcher would have them: a number
        only for a scalar input, converted to its type (an int for a float input), a tensor
        everywhere else; a TypeError naming the argument otherwise."""
        checked = list(args)
        for i, (name, a) in enumerate(zip(self._argument_names, args)):
            kind = self._scalars.get(name) if i < len(self._input_names) else None
            if kind is None:
                if not isinstance(a, torch.Tensor):
                    raise TypeError(f"{self._prefix}{name}: expected a tensor, got "
                                    f"{type(a).__name__} (name it in scalars= to pass a number)")
            elif isinstance(a, torch.Tensor) or (kind is not bool and isinstance(a, bool)) or \
                    (kind is bool and not isinstance(a, bool)) or \
                    (kind is int and not isinstance(a, int)):
                raise TypeError(f"{self._prefix}{name}: expected a Python {kind.__name__}, got "
                                f"{type(a).__name__}")
            else:
                checked[i] = kind(a)
        return tuple(checked)

    def _launch_for(self, args: Sequence[object]) -> _Launch:
        """The bound kernel for arguments like |args|, with the shapes and dtypes of its
        outputs and the settings' values, resolved and bound on the first call of their
        signature."""
        if self._static:
            return self._static
        key = tuple([(a.shape, a.dtype) if isinstance(a, torch.Tensor) else (type(a), a)
                     for a in args])
        launch = self._launches.get(key)
        if launch is None:
            specs = [_spec(self._prefix, n, a) for n, a in zip(self._input_names, args)]
            values: dict[str, Any] = shape_functions.resolve(self._prefix, self._settings, specs)
            bound = self.kernel.bind(init_value=self._init_value, **values)
            outputs = [(tuple(s), _torch_dtype(d)) for s, d in
                       zip(values["output_shapes"], values["output_dtypes"])]
            if len(self._launches) >= _KEPT_LAUNCHES:  # scalars' values that never repeat
                self._launches.pop(next(iter(self._launches)), None)
            launch = self._launches[key] = (bound, outputs, values)
        return launch

    def _launch(self, args: Sequence[object]) -> Any:
        """Runs the kernel on |args| with new outputs from torch's allocator (torch calls the
        op, a CUDA graph captures, or outputs are written in place)."""
        bound, outputs, _ = self._launch_for(args)
        n_in = len(self._input_names)
        device = _device_of(args)
        written: dict[int, Any] = dict(zip(self._mutated, args[n_in:]))
        made = [written[o] if o in written else
                torch.empty(outputs[o][0], dtype=outputs[o][1], device=device)
                for o in range(len(outputs))]
        # Inputs made row-contiguous by torch: kjit would copy them into its own pool, which a
        # captured graph must not use.
        inputs = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args[:n_in]]
        bound(*inputs, *made)
        for t in written.values():
            # As torch's own in-place ops do: autograd then refuses a backward that needs the
            # values from before the write.
            torch.autograd.graph.increment_version(t)
        return self._packed([made[o] for o in self._returned])

    @staticmethod
    def _packed(returned: list[torch.Tensor]) -> Any:
        """The op's result: None, one tensor, or a tuple of them."""
        if not returned:
            return None
        return returned[0] if len(returned) == 1 else tuple(returned)

    def _run(self, *args: Any) -> Any:
        """torch's CPU and CUDA implementation."""
        return self._launch(args)

    def _fake(self, *args: Any) -> Any:
        """torch's fake implementation: outputs of the right shapes and dtypes, nothing run."""
        self._check_count(args)
        specs = [_spec(self._prefix, n, a) for n, a in zip(self._input_names, args)]
        values = shape_functions.resolve(
            self._prefix, {k: self._settings[k] for k in ("output_shapes", "output_dtypes")},
            specs)
        device = _device_of(args)
        shapes: Any = values["output_shapes"]
        dtypes: Any = values["output_dtypes"]
        if len(shapes) != len(self._output_names) or len(dtypes) != len(self._output_names):
            raise ValueError(f"{self._prefix}output_shapes and output_dtypes: expected "
                             f"{len(self._output_names)} each (one per output), got "
                             f"{len(shapes)} and {len(dtypes)}")
        return self._packed([torch.empty(tuple(shapes[o]), dtype=_torch_dtype(dtypes[o]),
                                         device=device) for o in self._returned])

    def _autograd(self, *args: Any) -> Any:
        """torch's autograd kernel: through the backward when there is one, else the outputs do
        not require grad, and the first call that loses a gradient says so."""
        if _forward_ad._current_level >= 0 and any(
                isinstance(a, torch.Tensor)
                and _forward_ad.unpack_dual(a).tangent is not None  # type: ignore[no-untyped-call]
                for a in args):
            raise RuntimeError(f"{self._prefix}forward-mode AD (torch.func.jvp, dual tensors) "
                               f"is not supported: a kjit op has only a backward")
        needs_grad = torch.is_grad_enabled() and [
            n for n, a in zip(self._input_names, args)
            if isinstance(a, torch.Tensor) and a.requires_grad]
        if needs_grad and self._backward is not None:
            return _Differentiated.apply(self, *args)
        if needs_grad:
            outer = _differentiating.get()
            if outer is not None:
                # Called by a backward that autograd records (create_graph): differentiating
                # its result again fails. torch.func's transforms record every backward, and
                # differentiate it only when nested: they see the outputs as constants.
                if _functorch_active():
                    with torch._C._AutoDispatchBelowADInplaceOrView():
                        return self.overload(*args)
                return _SecondBackwardRefused.apply(
                    f"[kjit.torch.op '{outer}'] double backward: its backward calls "
                    f"'{self.name}', which has no backward; give '{self.name}' a backward=, or "
                    f"differentiate once (create_graph=False)", self, *args)
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"{self._prefix}called on tensors that require grad ({', '.join(needs_grad)})"
                    f", but the op has no backward: its outputs do not require grad, and no "
                    f"gradient reaches those inputs. Give kjit.torch.op a backward= to train "
                    f"through it, or call it under torch.no_grad().", stacklevel=4)
        with torch._C._AutoDispatchBelowADInplaceOrView():
            return self.overload(*args)

    def _save(self, ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        """Keeps what the backward is given: the inputs and outputs."""
        outputs = output if isinstance(output, tuple) else (output,)
        ctx.kjit_scalars = [None if isinstance(a, torch.Tensor) else a for a in inputs]
        ctx.save_for_backward(*[a for a in inputs if isinstance(a, torch.Tensor)], *outputs)

    def _grad(self, ctx: Any, *grad_outputs: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """The input's gradients from the backward, checked."""
        saved = iter(ctx.saved_tensors)
        inputs = tuple(next(saved) if s is None else s for s in ctx.kjit_scalars)
        outputs = tuple(saved)
        assert self._backward is not None
        token = _differentiating.set(self.name) if torch.is_grad_enabled() else None
        try:
            grads = self._backward(inputs, outputs, tuple(grad_outputs))
        finally:
            if token is not None:
                _differentiating.reset(token)
        return self._checked_grads(grads, inputs)

    def _checked_grads(self, grads: object, inputs: tuple[Any, ...]
                       ) -> tuple[torch.Tensor | None, ...]:
        """|grads|, the backward's result, if it is one gradient (or None) per input of the
        input's shape; a clear error otherwise."""
        p = f"{self._prefix}backward: "
        names = self._input_names
        check_gradient_count(self._prefix, grads, names)
        assert isinstance(grads, (tuple, list))
        for n, g, x in zip(names, grads, inputs):
            if g is None:
                continue
            if not isinstance(x, torch.Tensor):
                raise ValueError(f"{p}the gradient for '{n}', a scalar input, must be None")
            if not isinstance(g, torch.Tensor):
                raise TypeError(f"{p}the gradient for '{n}' must be a tensor or None, got "
                                f"{type(g).__name__}")
            if g.shape != x.shape:
                raise ValueError(f"{p}the gradient for '{n}' has shape {tuple(g.shape)}, but "
                                 f"'{n}' has shape {tuple(x.shape)}")
        return tuple(grads)

    def _vmap(self, info: Any, in_dims: tuple[Any, ...], *args: Any) -> Any:
        """torch.func.vmap's rule: the op once per slice of the batch, the results stacked."""
        if self._mutated:
            raise RuntimeError(f"{self._prefix}vmap over an op that writes outputs in place "
                               f"(mutates) is not supported; vmap an op that returns them")
        per_slice = [self.overload(*[a.select(d, b) if d is not None else a
                                     for a, d in zip(args, in_dims)])
                     for b in range(info.batch_size)]
        if len(self._returned) == 1:
            return torch.stack(per_slice), 0
        return (tuple(torch.stack([r[o] for r in per_slice]) for o in range(len(self._returned))),
                tuple(0 for _ in self._returned))


class _Differentiated(torch.autograd.Function):
    """A KernelOp with a backward, for autograd (torch.func's transforms too): the op's forward
    below autograd, its backward through KernelOp._grad."""

    generate_vmap_rule = True  # vmap of the forward reaches the op's own rule

    @staticmethod
    def forward(op: KernelOp, *args: Any) -> Any:
        with torch._C._AutoDispatchBelowAutograd():
            return op.overload(*args)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        op = inputs[0]
        ctx.kjit_op = op
        op._save(ctx, inputs[1:], output)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        return (None, *ctx.kjit_op._grad(ctx, *grad_outputs))


class _SecondBackwardRefused(torch.autograd.Function):
    """A KernelOp without a backward called by another op's recorded backward: its outputs
    carry a backward that fails with the message it was given."""

    @staticmethod
    def forward(ctx: Any, message: str, op: KernelOp, *args: Any) -> Any:
        ctx.kjit_message = message
        with torch._C._AutoDispatchBelowAutograd():
            return op.overload(*args)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise RuntimeError(ctx.kjit_message)


def _alias(i: int) -> str:
    """The schema's alias name for the |i|th written argument: a, b, ..., z, a1, b1, ..."""
    return chr(ord("a") + i % 26) + (str(i // 26) if i >= 26 else "")


def _split_name(prefix: str, name: object) -> tuple[str, str]:
    """'mylib::op' as ('mylib', 'op'), checked."""
    if not isinstance(name, str):
        raise TypeError(f"{prefix}name: expected a str 'namespace::name', got "
                        f"{type(name).__name__}")
    namespace, sep, opname = name.partition("::")
    if not sep or not namespace.isidentifier() or not opname.isidentifier() or \
            keyword.iskeyword(opname) or namespace in ("aten", "prim", "prims"):
        raise ValueError(f"{prefix}name: expected 'namespace::name' of two identifiers, the "
                         f"namespace one of your own (not aten or prims), e.g. 'mylib::myexp'")
    return namespace, opname


def _checked_mutates(prefix: str, mutates: Sequence[str], output_names: Sequence[str]
                     ) -> list[int]:
    """The indices of the outputs in |mutates|, in its order (the order of the op's arguments
    after its inputs), checked."""
    if isinstance(mutates, str) or not isinstance(mutates, (list, tuple)):
        raise TypeError(f"{prefix}mutates: expected a list of output names")
    indices = []
    for n in mutates:
        if n not in output_names:
            raise ValueError(f"{prefix}mutates: '{n}' is not an output of the kernel (outputs: "
                             f"{', '.join(output_names)})")
        if list(output_names).index(n) in indices:
            raise ValueError(f"{prefix}mutates: '{n}' is named twice")
        indices.append(list(output_names).index(n))
    return indices


def _checked_backward(prefix: str, backward: object, input_names: Sequence[str],
                      output_names: Sequence[str]) -> GradFunction | None:
    """The backward as a function of (inputs, outputs, grad_outputs): |backward| itself, or for
    a KernelOp one that passes it its arguments by name."""
    if backward is None:
        return None
    if isinstance(backward, KernelOp):
        return _by_name(prefix, backward, input_names, output_names)
    if not callable(backward):
        raise TypeError(f"{prefix}backward: expected a KernelOp or a function (inputs, "
                        f"outputs, grad_outputs) -> grad_inputs, got {type(backward).__name__}")
    return backward


def _by_name(prefix: str, backward: KernelOp, input_names: Sequence[str],
             output_names: Sequence[str]) -> GradFunction:
    """A KernelOp as a backward: its inputs are named after the forward's inputs, outputs or
    'grad_<output>', its returned outputs 'grad_<input>'."""
    if backward._mutated:
        raise ValueError(f"{prefix}backward: '{backward.name}' writes outputs in place "
                         f"(mutates); a backward op must return its gradients")
    returned = [backward._output_names[o] for o in backward._returned]
    return backward_by_name(prefix, backward.name, backward._input_names, returned, backward,
                            input_names, output_names)


op = KernelOp
"""``kjit.torch.op(kernel, name, ...)``, the name the documentation uses: makes a
[KernelOp][kjit.torch.KernelOp], the kernel registered as the torch operator ``name``."""

# The ops of this process by name: each stays registered with torch until the process ends.
_ops: dict[str, KernelOp] = {}


def _op_named(kernel: _kjit.Kernel, name: str, settings: dict[str, object],
              init_value: float | None, backward: GradFunction | KernelOp | None,
              scalars: Mapping[str, type] | None, mutates: Sequence[str]) -> KernelOp:
    """The op |name| of this process, or one made with these arguments (unpickling)."""
    if name in _ops:
        return _ops[name]
    return KernelOp(kernel, name, **settings, init_value=init_value, backward=backward,
                    scalars=scalars, mutates=mutates)
