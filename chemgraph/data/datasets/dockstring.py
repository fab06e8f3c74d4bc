"""DOCKSTRING (García-Ortegón et al., J. Chem. Inf. Model. 62, 3486 (2022)).

``dockstring-dataset.tsv`` (https://figshare.com/ndownloader/files/35948138): tab-separated,
``inchikey``, ``smiles`` and 58 target columns of AutoDock Vina scores (kcal/mol, lower = better
binding; failed dockings empty). ``cluster_split.tsv`` (https://figshare.com/ndownloader/files/
35948123): the official train/test assignment per molecule (columns ``inchikey``, ``smiles``,
``split``). The regression benchmark uses five targets: PARP1, F2, KIT, ESR2, PGR; Buterez et
al. 2024 (SI 7.1) keeps the official test set and takes 20,000 random training molecules for
validation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from chemgraph.chem import MoleculeParseError, mols_from_smiles
from chemgraph.data.datasets.base import CardDataset, rejected_frame
from chemgraph.data.datasets.download import open_binary

__all__ = ["BENCHMARK_TARGETS", "DockstringDataset", "read_dockstring"]

BENCHMARK_TARGETS = ("PARP1", "F2", "KIT", "ESR2", "PGR")


def read_dockstring(
    scores: str | Path, split: str | Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read the score table (and the official split), checking every SMILES with RDKit.

    Returns:
        ``(table, rejected)``: ``row`` (0-based data row), ``inchikey``, ``smiles``, every
        target column (float64, kcal/mol, NaN = failed docking) and, with ``split``, the
        ``split`` column (``"train"``/``"test"``).

    Raises:
        ValueError: a required column is missing, or a molecule has no split entry (named).
    """
    scores = Path(scores)
    table = pd.read_csv(open_binary(scores), sep="\t")
    missing = [c for c in ("inchikey", "smiles", *BENCHMARK_TARGETS) if c not in table.columns]
    if missing:
        raise ValueError(f"{scores}: missing column(s) {missing}; found {list(table.columns)}")
    table.insert(0, "row", np.arange(len(table)))
    if split is not None:
        assignment = pd.read_csv(open_binary(split), sep="\t")
        if not {"inchikey", "split"} <= set(assignment.columns):
            raise ValueError(
                f"{split}: expected columns inchikey and split; found {list(assignment.columns)}"
            )
        mapping = dict(zip(assignment["inchikey"], assignment["split"].str.strip().str.lower()))
        table["split"] = table["inchikey"].map(mapping)
        unassigned = table.loc[table["split"].isna(), "inchikey"].tolist()
        if unassigned:
            raise ValueError(
                f"{split}: no split for {len(unassigned)} molecules, e.g. {unassigned[:3]}"
            )
    smiles = [str(s).strip() if isinstance(s, str) else "" for s in table["smiles"]]
    mols = mols_from_smiles(smiles)
    bad = [
        (i, smiles[i], m.reason) for i, m in enumerate(mols) if isinstance(m, MoleculeParseError)
    ]
    keep = np.asarray([not isinstance(m, MoleculeParseError) for m in mols], dtype=bool)
    table = table[keep].assign(smiles=[s for s, k in zip(smiles, keep) if k])
    rejected = rejected_frame(bad)
    rejected["file"] = scores.name
    return table.reset_index(drop=True), rejected


class DockstringDataset(CardDataset):
    """DOCKSTRING docking scores; targets = the card's five benchmark targets (kcal/mol).

    Options: ``targets`` (any of the 58 score columns; default the five benchmark targets).
    Split ``"official"``: the cluster split's test set; validation = ``validation_size``
    (card, 20,000) training molecules drawn with ``numpy.random.default_rng(seed)``; the rest
    is train.
    """

    family = "dockstring"
    default_options = {"targets": None}

    @property
    def target_columns(self) -> list[str]:
        return list(self.options["targets"] or self.card.targets)

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        scores, split = (files[f.name] for f in self.card.files)
        table, rejected = read_dockstring(scores, split)
        self.records_read[self.card.files[0].name] = len(table) + len(rejected)
        return table, rejected

    def _family_split(self, rows: np.ndarray, method: str, seed: int) -> dict[str, np.ndarray]:
        if method != "official":
            return super()._family_split(rows, method, seed)
        names = self.parse().table["split"].to_numpy(dtype=object)[rows]
        train = np.flatnonzero(names == "train")
        size = int(self.card.split["validation_size"])
        if size >= len(train):
            raise ValueError(f"validation size {size} needs more than {len(train)} train molecules")
        chosen = np.random.default_rng(seed).permutation(len(train))[:size]
        valid = np.sort(train[chosen])
        return {
            "train": np.setdiff1d(train, valid),
            "valid": valid,
            "test": np.flatnonzero(names == "test"),
        }
