"""What the framework ops (kjit.torch.op, kjit.jax.op) check alike: the inputs they take as
Python numbers, and the gradients a backward returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The types a scalar input may be declared as.
SCALAR_TYPES = (int, float, bool)


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
