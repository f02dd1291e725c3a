"""help() on kjit's factories shows what a user needs: the current form's parameters with their
defaults (the binding's, as its stub states them), each explained, what a body sees, and an
example."""

import ast
import inspect
import pydoc

import pytest

import kjit
from test_signatures import FUNCTIONS


def stub_parameters(qualname: str) -> list[tuple[str, object]]:
    """(name, default) of each parameter of |qualname| in the stub."""
    args = FUNCTIONS[qualname].args
    defaults = [inspect.Parameter.empty] * (len(args.args) - len(args.defaults))
    defaults += [ast.literal_eval(d) for d in args.defaults]
    keywords = [inspect.Parameter.empty if d is None else ast.literal_eval(d)
                for d in args.kw_defaults]
    return [(a.arg, d) for a, d in zip(args.args + args.kwonlyargs, defaults + keywords)]


def test_metal_kernel_help_shows_its_parameters_as_the_binding_takes_them(real_factories):
    signature = inspect.signature(kjit.metal_kernel)
    assert [(p.name, p.default) for p in signature.parameters.values()] == \
        stub_parameters("metal_kernel")
    text = pydoc.render_doc(kjit.metal_kernel, renderer=pydoc.plaintext)
    assert "metal_kernel(name: 'str', input_names: 'Sequence[str]'" in text
    for name in signature.parameters:
        assert f"    {name} (" in text, name  # each parameter explained
    for what in ("What the body sees", "thread_position_in_grid", "Example::",
                 "``grid`` counts threads, not groups", "DictFormKernel"):
        assert what in text, what


def test_a_kernel_call_help_explains_each_parameter():
    text = pydoc.render_doc(kjit.Kernel.__call__, renderer=pydoc.plaintext)
    names = [name for name, _ in stub_parameters("Kernel.__call__")][1:]  # all but self
    assert len(names) == 11
    for name in names:
        assert f"    {name} (" in text, name
    for what in ("Example::", "not groups", "kernel.bind("):
        assert what in text, what


def test_cuda_kernel_help_explains_each_parameter_and_the_body():
    text = pydoc.render_doc(kjit._kjit.cuda_kernel, renderer=pydoc.plaintext)
    for name, _ in stub_parameters("cuda_kernel"):
        assert f"    {name} (" in text, name
    for what in ("What the body sees", "threadIdx", "Example::", "the grid counts threads"):
        assert what in text, what


def test_bind_and_build_help_show_an_example():
    for method in (kjit.Kernel.bind, kjit.Kernel.build):
        assert "Example" in pydoc.render_doc(method, renderer=pydoc.plaintext), method
    text = pydoc.render_doc(kjit.Kernel.build, renderer=pydoc.plaintext)
    for name, _ in stub_parameters("Kernel.build")[1:]:
        assert f"    {name} (" in text, name


@pytest.mark.parametrize("name,parameters", [
    ("array", ["obj", "device", "dtype"]),
    ("empty", ["shape", "dtype", "device"]),
    ("zeros", ["shape", "dtype", "device"]),
])
def test_array_makers_help_explains_each_parameter(name, parameters):
    doc = getattr(kjit, name).__doc__
    assert "Parameters:" in doc and "Example:" in doc and "Raises" in doc, doc
    for p in parameters:
        assert f"\n    {p} " in doc or f"\n    {p}:" in doc, (p, doc)


@pytest.mark.parametrize("name", ["Array", "devices", "default_device", "clear_cache",
                                  "cache_info", "Kernel", "BoundKernel", "Dtype",
                                  "precompiled_cuda_kernel"])
def test_the_other_public_names_show_an_example(name):
    assert "Example:" in getattr(kjit, name).__doc__


def test_precompiled_cuda_kernel_help_explains_each_parameter():
    text = pydoc.render_doc(kjit.precompiled_cuda_kernel, renderer=pydoc.plaintext)
    for name, _ in stub_parameters("precompiled_cuda_kernel"):
        assert f"    {name} (" in text, name
