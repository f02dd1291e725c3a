"""A griffe extension for the docs build: a function of a stub whose every definition is an
@overload (as nanobind's stub generator writes an overloaded binding) has no implementation for
griffe to show, so it would be left out of the API page. Its last overload, the general one
that carries the docstring, stands for it, with the others listed as its overloads."""

from typing import Any

import griffe


class StubOverloads(griffe.Extension):
    """Makes the last overload of each implementation-less overloaded function its member."""

    def on_members(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Runs after griffe has read the members of a module or class."""
        overloads = getattr(obj, "overloads", None)
        if not isinstance(overloads, dict):
            return
        for name, functions in list(overloads.items()):
            if not functions or name in obj.members:
                continue
            general = functions[-1]
            general.overloads = functions[:-1]
            obj.set_member(name, general)
            del overloads[name]
