"""USPTO reaction datasets: USPTO-MIT (Jin et al., NeurIPS 2017) and USPTO-50K (GLN split).

Every reaction is split by :func:`chemgraph.chem.reactions.parse_reaction_smiles` into
reactants, reagents (molecules contributing no mapped atom to the product) and products, as
canonical SMILES without atom maps; the mapped input stays in the ``reaction`` column.

Formats:

- USPTO-MIT ``{train,valid,test}.txt`` (rexgen_direct, Coley et al. 2019): one reaction per
  line, ``<mapped reactants>>``\\ ``<mapped products> <edits>``; ``edits`` are ``;``-separated
  ``i-j`` or ``i-j-order`` atom-map pairs of changed bonds.
- USPTO-50K ``raw_{train,val,test}.csv`` (Dai et al., NeurIPS 2019):
  ``id,class,reactants>reagents>production`` (class 1-10, or ``UNK``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from chemgraph.chem.reactions import ReactionParseError, parse_reaction_smiles
from chemgraph.data.datasets.base import CardDataset, rejected_frame
from chemgraph.data.datasets.download import open_text

__all__ = ["USPTODataset", "read_uspto_mit", "read_uspto_50k"]

_50K_COLUMNS = ("id", "class", "reactants>reagents>production")


def _record(row: int, text: str, extra: dict, out: list, bad: list) -> None:
    try:
        reaction = parse_reaction_smiles(text)
    except ReactionParseError as error:
        bad.append((row, text, error.reason))
        return
    out.append(
        {
            "row": row,
            "reaction": reaction.mapped,
            "reactants": ".".join(reaction.reactants),
            "reagents": ".".join(reaction.reagents),
            "products": ".".join(reaction.products),
            **extra,
        }
    )


def _frames(
    out: list, bad: list, path: Path, split: str | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = pd.DataFrame(out)
    if split is not None:
        table["split"] = split
    rejected = rejected_frame(bad)
    rejected["file"] = path.name
    return table, rejected


def read_uspto_mit(
    path: str | Path, split: str | None = None, max_lines: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read a USPTO-MIT ``.txt`` (plain, gzip, or the rexgen ``.txt.tar.gz``).

    ``max_lines``: read only the first N lines (None = all).

    Returns:
        ``(table, rejected)``; table columns ``row`` (0-based line), ``reaction`` (mapped),
        ``reactants``, ``reagents``, ``products`` (``.``-joined canonical SMILES), ``edits``
        (``str``, ``""`` when absent) and ``split``. Blank lines are skipped (not counted).
        A line whose reaction does not parse is rejected with the reason.
    """
    path = Path(path)
    out: list = []
    bad: list = []
    with open_text(path) as lines:
        for row, line in enumerate(lines):
            if max_lines is not None and row >= max_lines:
                break
            fields = line.split()
            if not fields:
                continue
            if len(fields) > 2:
                bad.append(
                    (row, line.strip(), f"expected '<reaction> [edits]', got {len(fields)} fields")
                )
                continue
            edits = fields[1] if len(fields) == 2 else ""
            _record(row, fields[0], {"edits": edits}, out, bad)
    return _frames(out, bad, path, split)


def read_uspto_50k(path: str | Path, split: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read a USPTO-50K CSV (``id,class,reactants>reagents>production``; plain or gzip).

    Returns:
        ``(table, rejected)``; table columns ``row`` (0-based data row), ``reaction``,
        ``reactants``, ``reagents``, ``products``, ``id``, ``reaction_class`` (``Int64``,
        missing for ``UNK``) and ``split``.

    Raises:
        ValueError: the header is not ``id,class,reactants>reagents>production``.
    """
    path = Path(path)
    out: list = []
    bad: list = []
    with open_text(path) as fh:
        reader = csv.reader(fh)
        header = tuple(next(reader, ()))
        if header != _50K_COLUMNS:
            raise ValueError(f"{path}: expected header {','.join(_50K_COLUMNS)}, got {header}")
        for row, fields in enumerate(reader):
            if not fields:
                continue
            if len(fields) != 3:
                bad.append((row, ",".join(fields), f"expected 3 fields, got {len(fields)}"))
                continue
            identifier, label, text = fields
            if label != "UNK" and not label.isdigit():
                bad.append((row, text, f"reaction class {label!r} is neither 1-10 nor UNK"))
                continue
            reaction_class = None if label == "UNK" else int(label)
            _record(row, text, {"id": identifier, "reaction_class": reaction_class}, out, bad)
    table, rejected = _frames(out, bad, path, split)
    if "reaction_class" in table:
        table["reaction_class"] = table["reaction_class"].astype("Int64")
    return table, rejected


class USPTODataset(CardDataset):
    """USPTO-MIT or USPTO-50K (card ``format: mit`` or ``format: 50k``).

    Table: see :func:`read_uspto_mit` / :func:`read_uspto_50k`, one file per split, in card
    order. Graphs: the reactants (and, with option ``reagents=True``, the reagents) of each
    reaction as one disconnected molecule graph, no labels (targets are the products' SMILES,
    in the table). Split: ``"official"``, the files' splits.
    """

    family = "uspto"
    smiles_column = "model_input"
    default_options = {"reagents": False}

    @property
    def target_columns(self) -> list[str]:
        return []

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        reader = read_uspto_mit if self.card.raw["format"] == "mit" else read_uspto_50k
        tables, rejected = [], []
        for name, path in files.items():
            table, bad = reader(path, split=self.card.file(name).split)
            self.records_read[name] = len(table) + len(bad)
            tables.append(table)
            rejected.append(bad)
        table = pd.concat(tables, ignore_index=True)
        parts = [table["reactants"]]
        if self.options["reagents"]:
            parts.append(table["reagents"])
        table["model_input"] = [".".join(p for p in ps if p) for ps in zip(*parts)]
        return table, pd.concat(rejected, ignore_index=True)
