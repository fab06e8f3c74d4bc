"""Recipe registry: name -> module with ``DESCRIPTION``, ``default_config()`` and ``run()``.

``chemgraph recipe list`` shows the names and descriptions; ``chemgraph recipe run NAME``
calls ``run(config=..., seeds=..., out=...)``, after refusing an ``--out`` folder that is not
empty unless ``--overwrite`` is given (``run`` itself writes over files of the same name). Add a
recipe by adding its module path here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["RECIPES", "get_recipe"]

#: Recipe name -> module path (imported on use, so listing imports nothing heavy).
RECIPES: dict[str, str] = {
    "dft_to_gw": "chemgraph.recipes.dft_to_gw",
    "reaction_outcome": "chemgraph.recipes.reaction_outcome",
}


def get_recipe(name: str) -> ModuleType:
    """The module of recipe ``name``.

    Raises:
        ValueError: unknown name (the registered ones are listed).
    """
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; available: {', '.join(RECIPES)}")
    return importlib.import_module(RECIPES[name])
