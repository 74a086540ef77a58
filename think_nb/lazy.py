"""Lazy names (PEP 562): a package's public names, imported on first access instead of with the package.

A package lists where each name is defined and lets this module import it when it is first read:

    _LAZY = {"Session": ".builder", "Skill": ".skills"}   # name -> module (".x": beside this module)
    __getattr__ = lazy.attach(__name__, _LAZY)

so `import think_nb` imports only `think_nb._version`, `from think_nb import Think` imports what
`Think` needs, and a turn imports only the subsystems it uses (tests/test_imports.py, issue 29 §3).
A name is kept in the package's namespace once imported (the next access is a plain attribute); an
unknown name is Python's own `AttributeError: module 'think_nb.x' has no attribute 'y'`.

This module imports only `sys` (imported by every interpreter): not `importlib` and not `typing`,
which `import think_nb` does not import. Not scientific-python's `lazy_loader` for that reason: it
imports importlib.util, inspect and threading to do the same.
"""

import sys

TYPE_CHECKING = False  # not typing's: importing typing costs more than this module (think_nb/__init__.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping
    from typing import Any


def load(module: str, where: "Mapping[str, str]", name: str, submodules: "Collection[str]" = ()) -> "Any":
    """`module.name`, imported now and kept in `module`'s namespace.

    Args:
        module: the package's (or module's) `__name__`.
        where: public name -> the module that defines it: a full name (`think_nb.agent`) or one
            beside `module` (`.builder`: in `module`'s package).
        name: the name read.
        submodules: names that are submodules of `module` (`think_nb.workspace.ops`), imported as such.

    Raises:
        AttributeError: `name` is in neither (`module 'think_nb.x' has no attribute 'y'`).
    """
    if name in submodules:
        target = f"{module}.{name}"
    elif name in where:
        target = where[name]
        if target.startswith("."):
            target = f"{sys.modules[module].__package__}{target}"
    else:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    __import__(target)  # not importlib: `import think_nb` does not import it
    value = sys.modules[target] if name in submodules else getattr(sys.modules[target], name)
    setattr(sys.modules[module], name, value)  # the next access is a plain attribute
    return value


def attach(module: str, where: "Mapping[str, str]", submodules: "Collection[str]" = ()) -> "Callable[[str], Any]":
    """The module-level `__getattr__` (PEP 562) that `load`s `where`'s names and `submodules` for `module`."""

    def __getattr__(name: str) -> "Any":
        return load(module, where, name, submodules)

    return __getattr__


def listing(module: str, where: "Mapping[str, str]", submodules: "Collection[str]" = ()) -> list[str]:
    """What `dir(module)` lists: its namespace, the lazy names (imported or not) and the submodules."""
    return sorted({*vars(sys.modules[module]), *where, *submodules})
