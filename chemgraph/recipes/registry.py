"""Recipe registry: name -> module with ``DESCRIPTION``, ``default_config()`` and ``run()``.

``chemgraph recipe list`` shows the names and descriptions of :data:`RECIPES`
without importing a recipe (nor torch, DGL or RDKit: this module imports
:mod:`chemgraph.train.config` only when a function needs it); ``chemgraph recipe run NAME``
calls ``run(config=..., seeds=..., out=...)``, after refusing an ``--out`` folder that is not
empty unless ``--overwrite`` is given (``run`` itself writes over files of the same name); a
:attr:`Recipe.resumable` recipe's ``run`` also takes ``resume`` (``--resume``). Add a
recipe by adding its :class:`Recipe` record here and its YAML files to ``recipes/NAME/``.

Profiles. Each YAML file of ``recipes/NAME/`` is a profile of the recipe, named by its stem
(``config`` = ``config.yaml``, the default; ``cpu`` = ``cpu.yaml``). A ``--config`` file needs
only the keys it changes: :func:`recipe_settings` merges it over the profile it names with a
``profile`` key (``profile: cpu``), or over ``config.yaml`` when it names none
(:func:`chemgraph.train.config.over_profile`).

Command-line settings. ``chemgraph recipe run NAME --set key=value`` (and
``--max-time-minutes N``, short for ``--set max_time_minutes=N``) are merged over the
``--config`` file by :func:`with_overrides`, so they win over it and over the profile; their
keys are checked first (:func:`check_setting_keys`): a key must be a key of the recipe's YAML
files at that place or a field of the settings class that reads that block
(:attr:`Recipe.settings_classes`); keys below such a field (``model_options.hidden_dim``) are
left to that class's own checks.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from chemgraph._resources import recipe_path
from chemgraph.errors import ConfigError

__all__ = [
    "DEFAULT_PROFILE",
    "RECIPES",
    "Recipe",
    "check_setting_keys",
    "get_recipe",
    "recipe_config",
    "recipe_profiles",
    "recipe_settings",
    "valid_setting_keys",
    "with_overrides",
]


@dataclass(frozen=True)
class Recipe:
    """One registered recipe.

    Attributes:
        name: the ``chemgraph recipe run NAME`` name (and its ``recipes/NAME/`` folder).
        module: dotted path of the module with ``DESCRIPTION``, ``default_config()`` and
            ``run()`` (imported on use, so listing imports nothing heavy).
        description: one line for ``chemgraph recipe list`` (the module's ``DESCRIPTION``).
        settings_classes: dotted place in the recipe's settings (``""`` = the top level) ->
            the settings class that reads the block there (``"module:Class"``, imported on
            use), whose fields are its valid keys.
        resumable: its ``run`` takes ``resume=True`` and then continues an interrupted run
            in its output folder (``chemgraph recipe run NAME --resume``).
    """

    name: str
    module: str
    description: str
    settings_classes: Mapping[str, str] = field(default_factory=dict)
    resumable: bool = False


_TRANSFER_CONFIG = "chemgraph.transfer.config:TransferConfig"

#: Recipe name -> its :class:`Recipe`, in ``chemgraph recipe list`` order.
RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe(
            "dft_to_gw",
            "chemgraph.recipes.dft_to_gw",
            "DFT -> GW transfer learning of HOMO/LUMO energies with 3D ESA (Buterez et al. "
            "2024, Table 5): GW only, inductive and transductive pretraining",
            {
                place: _TRANSFER_CONFIG
                for place in ("training", "profiles.full", "profiles.embedded")
            },
            resumable=True,
        ),
        Recipe(
            "reaction_outcome",
            "chemgraph.recipes.reaction_outcome",
            "reaction outcome prediction: GRAT graph-to-graph translation on USPTO-MIT, beam "
            "search, top-1/2/3/5 accuracy (Yoo et al. 2020, section 4.2)",
            {"": "chemgraph.recipes.reaction_outcome:ReactionOutcomeConfig"},
        ),
        Recipe(
            "reaction_centre",
            "chemgraph.recipes.reaction_centre",
            "reaction outcome prediction: reaction centres scored by a GRAT encoder, candidate "
            "products built with RDKit and ranked (WLN/WLDN, Jin et al. 2017); the shipped "
            "model's settings",
            {"": "chemgraph.recipes.reaction_centre:ReactionCentreRecipeConfig"},
        ),
        Recipe(
            "qm9_gap",
            "chemgraph.recipes.qm9_gap_demo",
            "ESA on the HOMO-LUMO gap (eV) of 10,000 QM9 molecules from the qm9pack package, "
            "offline: one model, 40 epochs, about 5 minutes on 2 CPU cores (make demo-gap)",
            {"": "chemgraph.train.config:TrainingConfig"},
        ),
    )
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
    return importlib.import_module(RECIPES[name].module)


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
    from chemgraph.train.config import over_profile

    return over_profile(config, recipe_profiles(name), DEFAULT_PROFILE)


def recipe_config(
    name: str,
    config: str | Path | Mapping[str, Any] | Any | None,
    settings_class: type,
    out: str | Path | None = None,
) -> Any:
    """The settings object of a run of recipe ``name``: ``config`` itself when it is a
    ``settings_class``, else :func:`recipe_settings` (``config`` a YAML file, a mapping or None
    merged over a profile) read by ``settings_class.from_dict`` (a
    :class:`chemgraph.train.config.RunConfig` subclass); ``out``, when given, replaces its
    ``out`` setting.

    Raises:
        FileNotFoundError: no such recipe folder or ``config`` file.
        ValueError: an unknown profile.
        ConfigError: what ``settings_class`` refuses (the ``config`` file is named).
    """
    if isinstance(config, settings_class):
        return config if out is None else replace(config, out=str(out))
    values = recipe_settings(name, config)
    if out is not None:
        values["out"] = str(out)
    source = str(config) if isinstance(config, (str, Path)) else None
    return settings_class.from_dict(values, source)


def _settings_class_fields(name: str, place: str) -> list[str] | None:
    """The fields of the settings class at ``place`` of recipe ``name``; None when none."""
    target = RECIPES[name].settings_classes.get(place) if name in RECIPES else None
    if target is None:
        return None
    module, _, attribute = target.partition(":")
    return list(getattr(importlib.import_module(module), attribute).field_names())


def valid_setting_keys(name: str, place: str = "") -> list[str] | None:
    """The valid keys of recipe ``name`` at the dotted ``place`` of its settings (``""`` = the
    top level): the keys found there in any of its YAML files, the fields of the settings
    class of that place (:attr:`Recipe.settings_classes`), and ``profile`` at the top level. None
    when ``place`` lies inside a field of a settings class (checked by that class)."""
    from chemgraph.train.config import PROFILE_KEY, read_settings

    parts = place.split(".") if place else []
    for depth in range(len(parts)):
        fields = _settings_class_fields(name, ".".join(parts[:depth]))
        if fields is not None:
            return None  # inside a field of a settings class
    keys = set(_settings_class_fields(name, place) or ())
    for path in recipe_profiles(name).values():
        block: Any = read_settings(path)
        for part in parts:
            block = block.get(part) if isinstance(block, Mapping) else None
        if isinstance(block, Mapping):
            keys.update(block)
    if not parts:
        keys.add(PROFILE_KEY)
    return sorted(keys)


def check_setting_keys(name: str, values: Mapping[str, Any], source: str = "--set") -> None:
    """Refuse keys of ``values`` (a partial configuration) that recipe ``name`` does not have
    (:func:`valid_setting_keys`), before any work is done.

    Raises:
        ConfigError: ``"<source>: unknown keys [...]; valid keys: [...]"`` (the dotted keys of a
            nested block: ``"... unknown keys ['data.sourse']; valid keys of data: [...]"``).
    """

    def check(block: Mapping[str, Any], place: str) -> None:
        valid = valid_setting_keys(name, place)
        if valid is None:
            return
        unknown = sorted(str(key) for key in block if key not in valid)
        if unknown:
            where = f" of {place}" if place else ""
            shown = [f"{place}.{key}" if place else key for key in unknown]
            raise ConfigError(f"{source}: unknown keys {shown}; valid keys{where}: {valid}")
        for key, value in block.items():
            if isinstance(value, Mapping):
                check(value, f"{place}.{key}" if place else str(key))

    check(values, "")


def with_overrides(
    name: str,
    config: str | Path | Mapping[str, Any] | None,
    overrides: Mapping[str, Any],
    source: str = "--set",
) -> str | Path | Mapping[str, Any] | None:
    """``config`` (a ``--config`` file, a mapping or None) with ``overrides`` (command-line
    settings, :func:`chemgraph.train.config.parse_assignments`) merged over it, as a mapping
    that :func:`recipe_settings` and the recipe's ``run`` take; ``config`` itself when there
    are no overrides. ``overrides`` may name the profile (``profile: cpu``).

    Raises:
        ConfigError: an unknown key in ``overrides`` (:func:`check_setting_keys`), or a
            ``config`` file that does not hold a mapping.
    """
    from chemgraph.train.config import merge_settings, read_settings

    if not overrides:
        return config
    check_setting_keys(name, overrides, source)
    return merge_settings(read_settings(config), overrides)
