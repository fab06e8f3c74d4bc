"""Recipe registry: name -> module with ``DESCRIPTION``, ``default_config()`` and ``run()``.

``chemgraph recipe list`` shows the names and descriptions; ``chemgraph recipe run NAME``
calls ``run(config=..., seeds=..., out=...)``, after refusing an ``--out`` folder that is not
empty unless ``--overwrite`` is given (``run`` itself writes over files of the same name). Add a
recipe by adding its module path here and its YAML files to ``recipes/NAME/``.

Profiles. Each YAML file of ``recipes/NAME/`` is a profile of the recipe, named by its stem
(``config`` = ``config.yaml``, the default; ``cpu`` = ``cpu.yaml``). A ``--config`` file needs
only the keys it changes: :func:`recipe_settings` merges it over the profile it names with a
``profile`` key (``profile: cpu``), or over ``config.yaml`` when it names none
(:func:`chemgraph.train.config.over_profile`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from chemgraph._resources import recipe_path
from chemgraph.train.config import over_profile

__all__ = ["DEFAULT_PROFILE", "RECIPES", "get_recipe", "recipe_profiles", "recipe_settings"]

#: Recipe name -> module path (imported on use, so listing imports nothing heavy).
RECIPES: dict[str, str] = {
    "dft_to_gw": "chemgraph.recipes.dft_to_gw",
    "reaction_outcome": "chemgraph.recipes.reaction_outcome",
    "qm9_gap": "chemgraph.recipes.qm9_gap_demo",
}

DEFAULT_PROFILE = "config"
"""The profile of a ``--config`` without a ``profile`` key: ``recipes/NAME/config.yaml``."""


def get_recipe(name: str) -> ModuleType:
    """The module of recipe ``name``.

    Raises:
        ValueError: unknown name (the registered ones are listed).
    """
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; available: {', '.join(RECIPES)}")
    return importlib.import_module(RECIPES[name])


def recipe_profiles(name: str) -> dict[str, Path]:
    """Profile name -> YAML file of recipe ``name`` (every ``recipes/NAME/*.yaml``).

    Raises:
        FileNotFoundError: the recipe has no ``config.yaml``.
    """
    folder = recipe_path(name, f"{DEFAULT_PROFILE}.yaml").parent
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def recipe_settings(name: str, config: str | Path | Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings of a run of recipe ``name``: ``config`` (a YAML file, a mapping or None)
    merged over the profile its ``profile`` key names (default :data:`DEFAULT_PROFILE`).

    Raises:
        FileNotFoundError: no such recipe folder or ``config`` file.
        ValueError: an unknown profile (the available ones are listed).
    """
    return over_profile(config, recipe_profiles(name), DEFAULT_PROFILE)
