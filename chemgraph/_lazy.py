"""Package attributes imported on first use (PEP 562), so that importing a package does not
import every module beneath it (``chemgraph featurize`` and its workers import neither DGL nor
pandas). A bottom module: it imports nothing from chemgraph."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` that imports ``package.<modules[name]>`` when
    ``name`` is first used and returns its ``name``.

    Args:
        package: the package's ``__name__``.
        modules: public name -> the submodule (relative name) that defines it.

    Raises (from the returned function):
        AttributeError: a name not in ``modules``.
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
