"""What help() shows of each function and what its calls accept agree with the type stubs."""

import ast
import pathlib
import pydoc
import re
from collections.abc import Iterator

import pytest

from kjit import _kjit

STUB = pathlib.Path(__file__).resolve().parents[2] / "python" / "kjit" / "_kjit.pyi"


def stub_functions() -> Iterator[tuple[str, ast.FunctionDef]]:
    """Each function and method of the stub, as "name" or "Class.name", but properties; an
    overloaded one once per overload, the general one last."""
    def overloaded(item: ast.FunctionDef) -> bool:
        return [ast.unparse(d) for d in item.decorator_list] == ["overload"]

    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (not item.decorator_list or
                                                          overloaded(item)):
                    yield f"{node.name}.{item.name}", item


def rendered(function: ast.FunctionDef) -> str:
    """The stub's signature as nanobind writes one: "name(a: int, *, b: str = 'x') -> None"."""
    def parameter(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
        text = prefix + arg.arg
        if arg.annotation is not None:
            text += ": " + ast.unparse(arg.annotation)
        if default is not None:
            text += " = " + ast.unparse(default)
        return text

    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [parameter(a, d) for a, d in zip(positional, defaults)]
    if args.posonlyargs:
        parts.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        parts.append(parameter(args.vararg, None, "*"))
    elif args.kwonlyargs:
        parts.append("*")
    parts += [parameter(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg is not None:
        parts.append(parameter(args.kwarg, None, "**"))
    returns = "" if function.returns is None else " -> " + ast.unparse(function.returns)
    return f"{function.name}({', '.join(parts)}){returns}"


def runtime(qualname: str) -> object:
    obj: object = _kjit
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


# The functions whose calls kjit decodes itself, from one table of each one's arguments.
DECODED = ["metal_kernel", "cuda_kernel", "Kernel.__call__", "Kernel.build", "Kernel.bind",
           "array", "empty", "zeros"]
OVERLOADS: dict[str, list[ast.FunctionDef]] = {}
for _name, _function in stub_functions():
    OVERLOADS.setdefault(_name, []).append(_function)
# Each function's general signature: the one its calls are decoded by.
FUNCTIONS = {name: overloads[-1] for name, overloads in OVERLOADS.items()}


def test_the_stub_has_every_decoded_function() -> None:
    assert set(DECODED) <= set(FUNCTIONS)


def unqualified(text: str) -> str:
    """|text| with the module names the stub imports or is in left out, as the stub writes it."""
    return re.sub(r"(?<![\w.])(collections\.abc|kjit\._kjit|typing)\.", "", text)


@pytest.mark.parametrize("qualname", sorted(FUNCTIONS))
def test_help_shows_the_stubs_signature(qualname: str) -> None:
    obj = runtime(qualname)
    if type(obj).__name__ not in ("nb_func", "nb_method"):
        pytest.skip(f"{qualname} is not a nanobind function")
    # nanobind writes each overload's signature on a line of its own, in the stub's order.
    shown = [unqualified(line) for line in (obj.__doc__ or "").split("\n")[:len(OVERLOADS[qualname])]]
    assert shown == [rendered(function) for function in OVERLOADS[qualname]]
    text = unqualified(pydoc.render_doc(obj, renderer=pydoc.plaintext))
    assert all(signature in text for signature in shown)


def parameters(qualname: str) -> list[tuple[str, bool]]:
    """The stub's (name, required) for each parameter of |qualname|, but self."""
    args = FUNCTIONS[qualname].args
    positional = [a for a in args.posonlyargs + args.args if a.arg != "self"]
    out = [(a.arg, i < len(positional) - len(args.defaults)) for i, a in enumerate(positional)]
    out += [(a.arg, d is None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return out


def kernel() -> object:
    return _kjit.metal_kernel(name="signature_copy", input_names=["x"], output_names=["y"],
                              source="y[0] = x[0];")


def decoded(qualname: str) -> list[object]:
    """The ways to call |qualname|: a kernel is called directly, and through __call__."""
    if "." not in qualname:
        return [runtime(qualname)]
    k = kernel()
    method = getattr(k, qualname.split(".")[1])
    return [k, method] if qualname == "Kernel.__call__" else [method]


class Unconvertible:
    """A value no parameter takes: the call gets past placing its arguments, then fails."""


@pytest.mark.parametrize("qualname", DECODED)
def test_calls_take_the_stubs_parameters_in_its_order(qualname: str) -> None:
    for function in decoded(qualname):
        check_parameters(qualname, function)


def check_parameters(qualname: str, function: object) -> None:
    assert callable(function)
    name = "kjit." + qualname + "()"
    given: dict[str, object] = {}
    # Each required parameter missing in turn is named, in the stub's order.
    for parameter, required in parameters(qualname):
        if not required:
            continue
        with pytest.raises(TypeError, match=rf"^{re.escape(name)} missing (keyword )?argument "
                                            rf"'{parameter}'$"):
            function(**given)
        given[parameter] = Unconvertible()
    # Every parameter of the stub is taken by name, and no other.
    for parameter, _ in parameters(qualname):
        with pytest.raises(Exception) as e:
            function(**{**given, parameter: Unconvertible()})
        assert "unexpected keyword" not in str(e.value) and "missing" not in str(e.value)
    with pytest.raises(TypeError, match=rf"^{re.escape(name)} got an unexpected keyword argument "
                                        r"'not_in_the_stub'$"):
        function(**given, not_in_the_stub=1)


@pytest.mark.parametrize("qualname", DECODED)
def test_calls_take_positions_where_the_stub_does(qualname: str) -> None:
    stub = FUNCTIONS[qualname].args
    n_positional = len([a for a in stub.posonlyargs + stub.args if a.arg != "self"])
    values = [Unconvertible()] * (len(parameters(qualname)) + 1)
    for function in decoded(qualname):
        assert callable(function)
        with pytest.raises(TypeError) as e:
            function(*values)
        if n_positional == 0:
            assert "takes keyword arguments only" in str(e.value)
        else:
            assert f"takes at most {n_positional} positional arguments" in str(e.value)
