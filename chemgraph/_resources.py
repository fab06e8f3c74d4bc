"""Files that ship with chemgraph: dataset cards and recipes (which live outside the package)
and the trained reaction model (inside it, ``chemgraph/_data/models/``, :func:`model_path`).

The top-level ``datasets/`` (cards) and ``recipes/`` folders of the source tree are reached
through the links ``chemgraph/_data/datasets -> ../../datasets`` and ``chemgraph/_data/recipes
-> ../../recipes``; ``pyproject.toml`` lists their YAML/CSV/Markdown files as package data, so a
non-editable ``pip install .`` copies them into the installed package as
``chemgraph/_data/datasets`` and ``chemgraph/_data/recipes``. In a source checkout (editable
install) the links resolve to the folders themselves; where links are not checked out as links
(Git on Windows without symlink support), the folders beside the package are used.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SHIPPED_REACTION_MODEL", "card_path", "cards_folder", "model_path", "recipe_path"]

_PACKAGE = Path(__file__).resolve().parent


def _folder(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"chemgraph's {name!r} folder was found neither in the installed package "
        f"({_PACKAGE / '_data' / name}) nor in a source checkout ({_PACKAGE.parent / name}); "
        "reinstall chemgraph (pip install .)"
    )


def cards_folder() -> Path:
    """The folder of dataset cards (``datasets/*.yaml``)."""
    return _folder("datasets")


def card_path(name: str) -> Path:
    """The card of dataset ``name``: ``datasets/<name>.yaml``.

    Raises:
        FileNotFoundError: no such card (the message lists the available cards).
    """
    folder = cards_folder()
    path = folder / f"{name}.yaml"
    if not path.is_file():
        available = ", ".join(sorted(p.stem for p in folder.glob("*.yaml")))
        raise FileNotFoundError(f"no dataset card {name!r} in {folder}; available: {available}")
    return path


def recipe_path(*parts: str) -> Path:
    """A recipe file, e.g. ``recipe_path("qm9_gap", "config.yaml")``.

    Raises:
        FileNotFoundError: no such file under ``recipes/``.
    """
    path = _folder("recipes").joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"no recipe file {'/'.join(parts)} in {_folder('recipes')}")
    return path


SHIPPED_REACTION_MODEL = "reaction_centre_uspto_mit_30k.pt"
"""The trained reaction-outcome model in ``chemgraph/_data/models/`` (its card: ``README.md``
there), used by ``chemgraph react`` when no ``--checkpoint`` is given."""


def model_path(name: str = SHIPPED_REACTION_MODEL) -> Path:
    """A trained model that ships inside the package: ``chemgraph/_data/models/<name>``.

    Raises:
        FileNotFoundError: no such file (reinstall chemgraph).
    """
    path = _PACKAGE / "_data" / "models" / name
    if not path.is_file():
        raise FileNotFoundError(
            f"the shipped model {name} is missing from {path.parent}; reinstall chemgraph "
            "(pip install .)"
        )
    return path
