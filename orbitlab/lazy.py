"""Public names of a package imported from their modules on first access (PEP 562).

A package's `__init__` lists its names and where they live; importing the package then
costs nothing, so a process that needs one light module of it (the orbit math, a numpy
controller) does not load torch, MuJoCo or Warp through the package:

    __getattr__, __dir__ = lazy_exports(__name__, {"Scene": "orbitlab.scene.scene", ...})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public `names` live in the given
    modules (a value equal to `package + '.' + name` exports that submodule itself)."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module '{package}' has no attribute {name!r}")
        loaded = importlib.import_module(module)
        value = loaded if module == f"{package}.{name}" else getattr(loaded, name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
