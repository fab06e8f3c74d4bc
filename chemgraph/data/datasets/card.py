"""Dataset cards: the YAML files in ``datasets/`` that describe each dataset.

A card names the dataset's loader family, its source files (canonical URL, checksum, size,
row count, the split a file holds), licence, citation, columns with units, targets and split
protocol. Loaders read everything dataset-specific from their card.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from chemgraph._resources import card_path, cards_folder

__all__ = ["DatasetCard", "SourceFile", "read_card", "card_names"]


@dataclass(frozen=True)
class SourceFile:
    """One file of a dataset.

    Attributes:
        name: the canonical file name (as downloaded; the name looked for under ``root``).
        url: canonical download URL, or ``None`` when the file cannot be downloaded.
        sha256: hex SHA-256 of the file's bytes, or ``None`` when unpublished.
        md5: hex MD5 (used only when no ``sha256`` is known, e.g. TorchDrug's pinned md5s).
        bytes: size in bytes, when known.
        rows: number of records the file holds, when known.
        split: the split the file holds (``"train"``, ``"valid"``, ``"test"``), if any.
        aliases: other file names (glob patterns) accepted under ``root`` for this file, e.g.
            a recompressed copy: ``uspto_mit_test.txt.gz`` for ``test.txt.tar.gz``.
        optional: the dataset loads without this file.
        raw_role: a family-specific role (e.g. ``"uncharacterized"`` for QM9's list).
    """

    name: str
    url: str | None = None
    sha256: str | None = None
    md5: str | None = None
    bytes: int | None = None
    rows: int | None = None
    split: str | None = None
    aliases: tuple[str, ...] = ()
    optional: bool = False
    raw_role: str | None = None


@dataclass(frozen=True)
class DatasetCard:
    """A parsed card (``datasets/<name>.yaml``).

    Attributes:
        name: the dataset's registered name.
        family: the loader family (``"qm9"``, ``"moleculenet"``, ...).
        files: its source files.
        rows: the number of records of the full dataset.
        targets: target column names, in label order.
        units: column -> unit (``None`` for unitless columns).
        raw: the whole YAML mapping, for family-specific keys.
    """

    name: str
    family: str
    description: str
    license: str
    citation: str
    files: tuple[SourceFile, ...]
    rows: int | None
    targets: tuple[str, ...]
    units: dict[str, str | None]
    split: dict[str, Any]
    raw: dict[str, Any] = field(repr=False)
    path: Path | None = None

    def file(self, name: str) -> SourceFile:
        """The source file called ``name``. Raises KeyError naming the card's files."""
        for spec in self.files:
            if spec.name == name:
                return spec
        raise KeyError(f"card {self.name!r} has no file {name!r}: {[f.name for f in self.files]}")


_REQUIRED = ("name", "family", "description", "license", "citation", "files")


def read_card(name_or_path: str | Path) -> DatasetCard:
    """Read a card by dataset name (``"esol"``) or by path.

    Raises:
        FileNotFoundError: no such card. ValueError: a required key is missing (named).
    """
    path = Path(name_or_path) if str(name_or_path).endswith(".yaml") else card_path(name_or_path)
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a dataset card must be a YAML mapping")
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise ValueError(f"{path}: card lacks required key(s) {missing}")
    files = tuple(
        SourceFile(
            name=str(f["name"]),
            url=f.get("url"),
            sha256=f.get("sha256"),
            md5=f.get("md5"),
            bytes=f.get("bytes"),
            rows=f.get("rows"),
            split=f.get("split"),
            aliases=tuple(f.get("aliases", ())),
            optional=bool(f.get("optional", False)),
            raw_role=f.get("role"),
        )
        for f in data["files"]
    )
    columns = data.get("columns") or {}
    return DatasetCard(
        name=str(data["name"]),
        family=str(data["family"]),
        description=" ".join(str(data["description"]).split()),
        license=str(data["license"]),
        citation=" ".join(str(data["citation"]).split()),
        files=files,
        rows=data.get("rows"),
        targets=tuple(data.get("targets") or ()),
        units={k: (v or {}).get("unit") for k, v in columns.items()},
        split=dict(data.get("split") or {}),
        raw=data,
        path=path,
    )


def card_names() -> list[str]:
    """Names of every card in ``datasets/`` that names a loader family, sorted."""
    names = []
    for path in sorted(cards_folder().glob("*.yaml")):
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
        if "family" in data:
            names.append(path.stem)
    return names
