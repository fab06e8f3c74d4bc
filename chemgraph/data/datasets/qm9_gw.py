"""QM9-GW (Fediai et al., "Accurate GW frontier orbital energies of 134 kilo molecules", Sci.
Data 10, 581 (2023); figshare https://doi.org/10.6084/m9.figshare.21610077, CC BY 4.0).

PBE, G0W0@PBE and evGW@PBE HOMO/LUMO energies (eV) of QM9 molecules, keyed by QM9 index.

Layout (from the data descriptor; it could not be checked offline, so the reader is strict and
every expectation sits in the card's ``layout`` so a mismatch is fixed in the card): one YAML
mapping (``db_new_qm9_gw.yaml``) whose keys are the six-digit QM9 index (``"000001"``) and whose
values hold, per level of theory, the HOMO and LUMO. The card's ``layout.fields`` maps each
output column to a key path in a record (e.g. ``g0w0_homo: [G0W0, HOMO]``);
``layout.optional`` lists the columns that may be absent (evGW did not converge for every
molecule); ``layout.unit`` (``eV``, the descriptor's unit, or ``hartree``) is the unit of the
file's values, which are returned in eV. Anything else stops the parse with an error that names
the record, the key path expected and the keys found.

Columns: the DFT level of the file itself (``pbe_homo``, ``pbe_lumo``: PBE, the starting point
of the GW calculations) and the GW levels (``g0w0_*``, ``evgw_*``), all in eV.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from chemgraph.data.datasets.base import CardDataset, rejected_frame
from chemgraph.data.datasets.download import open_text
from chemgraph.data.datasets.qm9 import QM9Dataset, build_qm9_graphs
from chemgraph.data.table import MoleculeDataset
from chemgraph.errors import DatasetError
from chemgraph.featurize import FeaturizerPreset
from chemgraph.units import HARTREE_TO_EV

__all__ = ["UNITS", "QM9GWDataset", "QM9GWLayoutError", "count_split", "read_qm9_gw"]

logger = logging.getLogger(__name__)

_INDEX = re.compile(r"^\d{6}$")

UNITS = {"eV": 1.0, "hartree": HARTREE_TO_EV}
"""``layout.unit`` -> factor to eV."""


class QM9GWLayoutError(DatasetError, ValueError):
    """The QM9-GW file does not have the layout the card documents."""


def read_qm9_gw(path: str | Path, layout: dict[str, Any]) -> pd.DataFrame:
    """Read the QM9-GW YAML strictly.

    Args:
        path: ``db_new_qm9_gw.yaml`` (plain, gzip, or inside a zip/tar as that member).
        layout: the card's ``layout``: ``member`` (archive member name), ``fields`` (column ->
            key path), ``optional`` (columns that may be missing) and ``unit`` (of the values
            in the file, a key of :data:`UNITS`; default ``eV``).

    Returns:
        One row per molecule: ``qm9_index`` (int) and the ``fields`` columns (float64, eV;
        NaN where an optional value is absent), sorted by ``qm9_index``.

    Raises:
        QM9GWLayoutError: the top level is not a mapping keyed by six-digit indices, or a
            record lacks a required key path or holds a non-number; the message names the
            record, what was expected and what was found.
    """
    fields: dict[str, list[str]] = {k: list(v) for k, v in layout["fields"].items()}
    optional = set(layout.get("optional", ()))
    unit = layout.get("unit", "eV")
    if unit not in UNITS:
        raise QM9GWLayoutError(f"layout.unit must be one of {sorted(UNITS)}, got {unit!r}")
    to_ev = UNITS[unit]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open_text(path, layout.get("member")) as fh:
        data = yaml.load(fh, Loader=loader)  # noqa: S506 (safe loader)
    if not isinstance(data, dict) or not data:
        raise QM9GWLayoutError(
            f"{path}: expected a mapping keyed by six-digit QM9 index ('000001': ...), "
            f"got {type(data).__name__}"
        )
    rows = []
    for key, record in data.items():
        key = f"{key:06d}" if isinstance(key, int) else str(key)
        if not _INDEX.match(key):
            raise QM9GWLayoutError(f"{path}: expected six-digit QM9 index keys, found {key!r}")
        row: dict[str, Any] = {"qm9_index": int(key)}
        for column, key_path in fields.items():
            value: Any = record
            for depth, part in enumerate(key_path):
                if not isinstance(value, dict) or part not in value:
                    if column in optional:
                        value = None
                        break
                    found = sorted(value) if isinstance(value, dict) else type(value).__name__
                    raise QM9GWLayoutError(
                        f"{path}: record {key}: expected key path {key_path} for {column!r}; "
                        f"at {key_path[:depth] or 'the record'} found {found}"
                    )
                value = value[part]
            if value is not None and not isinstance(value, int | float):
                raise QM9GWLayoutError(
                    f"{path}: record {key}: {column!r} at {key_path} is {value!r}, "
                    "not a number (eV)"
                )
            row[column] = np.nan if value is None else float(value) * to_ev
        rows.append(row)
    return pd.DataFrame(rows).sort_values("qm9_index", ignore_index=True)


def count_split(num_items: int, counts: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Seeded random split into fixed sizes (Buterez et al. 2024 SI 4: 25,000 / 5,000 / 10,000).

    The permutation is ``numpy.random.default_rng(seed).permutation(num_items)``; the first
    ``counts["train"]`` items are train, the next ``counts["valid"]`` valid, then test; the
    rest are in no split.

    Returns:
        ``{"train", "valid", "test"}`` -> sorted ``int64`` indices.

    Raises:
        ValueError: fewer items than the counts add up to.
    """
    sizes = [int(counts[name]) for name in ("train", "valid", "test")]
    if sum(sizes) > num_items:
        raise ValueError(f"split sizes {sizes} need {sum(sizes)} items; only {num_items} given")
    order = np.random.default_rng(seed).permutation(num_items)
    bounds = np.cumsum([0, *sizes])
    return {
        name: np.sort(order[bounds[i] : bounds[i + 1]]).astype(np.int64)
        for i, name in enumerate(("train", "valid", "test"))
    }


class QM9GWDataset(CardDataset):
    """GW and DFT frontier orbital energies keyed by QM9 index.

    Table: ``qm9_index`` and the card's ``layout.fields`` columns (eV). Options: ``targets``
    (default the card's ``targets``); ``qm9_root`` (folder of a QM9 source, for
    :meth:`featurize`, which joins the QM9 structures on ``qm9_index`` and builds the QM9
    graphs, e.g. ``geometry="radius"``). Split (card ``method: counts``): seeded
    25,000/5,000/10,000 among the molecules with every target present (:func:`count_split`).
    """

    family = "qm9_gw"
    smiles_column = "smiles"
    default_options = {"targets": None, "qm9_root": None}

    @property
    def target_columns(self) -> list[str]:
        return list(self.options["targets"] or self.card.targets)

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        (path,) = files.values()
        table = read_qm9_gw(path, self.card.raw["layout"])
        return table, rejected_frame([])

    def joined(self) -> pd.DataFrame:
        """The GW table inner-joined on ``qm9_index`` with QM9 (option ``qm9_root``): the GW
        columns, ``gw_row`` (position in the GW table) and every QM9 column (B3LYP ``homo``,
        ``lumo`` in eV, ``atomic_numbers``, ``positions`` in Å, ...)."""
        from chemgraph.data.datasets import dataset_card

        qm9 = QM9Dataset(dataset_card("qm9"), self.options["qm9_root"], download=self.auto_download)
        gw = self.parse().table.assign(gw_row=lambda t: np.arange(len(t)))
        return gw.merge(qm9.parse().table, on="qm9_index", suffixes=("", "_dft"))

    def _build_graphs(
        self, table: pd.DataFrame, preset: FeaturizerPreset, **options: Any
    ) -> tuple[MoleculeDataset, pd.DataFrame]:
        joined = self.joined()
        dataset, rejected = build_qm9_graphs(joined, self.target_columns, preset, **options)
        gw_rows = joined["gw_row"].to_numpy()[dataset.rows]
        return MoleculeDataset(
            dataset.graphs, dataset.labels, gw_rows, dataset.smiles, dataset.target_columns
        ), rejected

    def _family_split(self, rows: np.ndarray, method: str, seed: int) -> dict[str, np.ndarray]:
        if method != "counts":
            return super()._family_split(rows, method, seed)
        labels = self.parse().table[self.target_columns].to_numpy()[rows]
        complete = np.flatnonzero(~np.isnan(labels).any(axis=1))
        parts = count_split(len(complete), self.card.split["counts"], seed)
        return {name: complete[index] for name, index in parts.items()}
