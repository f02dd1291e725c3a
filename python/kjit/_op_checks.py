"""What the framework ops (kjit.torch.op, kjit.jax.op) check alike: the kernel they are made
of, the inputs they take as Python numbers, the gradients a backward returns, and a backward op
matched by names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

# A backward as a function (inputs, outputs, grad_outputs) -> one gradient or None per input.
GradFunction = Callable[[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]], Sequence[Any]]

# The types a scalar input may be declared as.
SCALAR_TYPES = (int, float, bool)


def check_kernel(prefix: str, kernel: object) -> None:
    """A clear error unless |kernel| is a kjit kernel (what an op is made of). |prefix| starts
    errors."""
    if not all(hasattr(kernel, a) for a in ("bind", "build", "input_names", "output_names")):
        raise TypeError(f"{prefix}kernel: expected a kjit.Kernel (kjit.metal_kernel, "
                        f"kjit.cuda_kernel), got {type(kernel).__name__}")


def checked_scalars(prefix: str, scalars: Mapping[str, type] | None,
                    input_names: Sequence[str]) -> dict[str, type]:
    """|scalars| (input name to int, float or bool), checked: each names an input, and at
    least one input is left an array, whose device the op runs on. |prefix| starts errors."""
    if scalars is None:
        return {}
    if not isinstance(scalars, Mapping):
        raise TypeError(f"{prefix}scalars: expected a dict of input name to int, float or bool")
    for n, t in scalars.items():
        if n not in input_names:
            raise ValueError(f"{prefix}scalars: '{n}' is not an input of the kernel (inputs: "
                             f"{', '.join(input_names)})")
        if not isinstance(t, type) or t not in SCALAR_TYPES:
            raise TypeError(f"{prefix}scalars['{n}']: expected int, float or bool, got {t!r}")
    if len(scalars) == len(input_names):
        raise ValueError(f"{prefix}scalars: every input is a scalar; an op needs an array input, "
                         f"whose device it runs on")
    return dict(scalars)


def check_gradient_count(prefix: str, grads: object, input_names: Sequence[str]) -> None:
    """A clear error unless |grads|, a backward's result, is a sequence of one gradient (or
    None) per input. |prefix| starts errors."""
    names = ", ".join(input_names)
    if not isinstance(grads, (tuple, list)):
        raise TypeError(f"{prefix}backward: expected a sequence of gradients, one per input "
                        f"({names}), got {type(grads).__name__}")
    if len(grads) != len(input_names):
        raise ValueError(f"{prefix}backward: returned {len(grads)} gradient(s) for "
                         f"{len(input_names)} input(s) ({names}); return one per input (None "
                         f"for an input with no gradient)")


def backward_by_name(prefix: str, op_name: str, op_inputs: Sequence[str],
                     op_outputs: Sequence[str], run: Callable[..., Any],
                     input_names: Sequence[str], output_names: Sequence[str]) -> GradFunction:
    """An op as a backward: its inputs |op_inputs| are named after the forward's inputs,
    outputs or 'grad_<output>', the outputs it returns |op_outputs| 'grad_<input>'. |run| calls
    it on its inputs in order and returns one array or a tuple of them. A clear error, naming
    the op |op_name|, for a name that matches nothing."""
    sources: list[tuple[int, int]] = []  # (0 inputs, 1 outputs, 2 grad_outputs; index)
    for n in op_inputs:
        if n in input_names:
            sources.append((0, list(input_names).index(n)))
        elif n in output_names:
            sources.append((1, list(output_names).index(n)))
        elif n.startswith("grad_") and n[5:] in output_names:
            sources.append((2, list(output_names).index(n[5:])))
        else:
            raise ValueError(
                f"{prefix}backward: input '{n}' of '{op_name}' names nothing of the "
                f"forward: name its inputs after the forward's inputs ({', '.join(input_names)}),"
                f" outputs ({', '.join(output_names)}) or gradients (grad_<output>)")
    targets = []
    for n in op_outputs:
        if not (n.startswith("grad_") and n[5:] in input_names):
            raise ValueError(f"{prefix}backward: output '{n}' of '{op_name}' is not "
                             f"named grad_<input> (inputs: {', '.join(input_names)})")
        targets.append(list(input_names).index(n[5:]))

    def gradients(inputs: tuple[Any, ...], outputs: tuple[Any, ...],
                  grad_outputs: tuple[Any, ...]) -> list[Any]:
        groups = (inputs, outputs, grad_outputs)
        made = run(*[groups[g][i] for g, i in sources])
        made = made if isinstance(made, tuple) else (made,)
        grads: list[Any] = [None] * len(input_names)
        for i, g in zip(targets, made):
            grads[i] = g
        return grads

    return gradients
