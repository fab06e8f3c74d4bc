"""MoleculeNet (Wu et al., Chem. Sci. 9, 513 (2018)) as the DeepChem CSV files.

ESOL, FreeSolv, Lipophilicity, BBBP, BACE, HIV, Tox21 and ClinTox; one card each gives the file
(https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/<file>), its SMILES column, targets,
task, standard metric and split. The real files' quirks are handled by
:func:`chemgraph.data.read_table` (CRLF in FreeSolv, ``\\r\\n\\n`` in HIV, gzip for Tox21) and
here (trailing spaces in ESOL SMILES are stripped; SMILES that RDKit rejects in BBBP, HIV,
ClinTox and Tox21 are rejected with RDKit's reason). Multi-task sets keep missing labels as NaN.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chemgraph.chem import MoleculeParseError, mols_from_smiles
from chemgraph.data.datasets.base import CardDataset, rejected_frame
from chemgraph.data.table import read_table

__all__ = ["MoleculeNetDataset", "read_moleculenet_file"]


def read_moleculenet_file(
    path: str | Path, smiles_column: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read one MoleculeNet CSV and check every SMILES with RDKit.

    Args:
        path: the CSV (optionally gzipped).
        smiles_column: the file's SMILES column (``"smiles"``, ``"mol"`` for BACE).

    Returns:
        ``(table, rejected)``: the file's columns for the rows RDKit parses, plus ``smiles``
        (stripped SMILES) and ``row`` (0-based data row of the file); rejected rows as
        ``row, input, reason`` (+ ``file``).

    Raises:
        ValueError: the SMILES column is missing (available columns named).
    """
    path = Path(path)
    frame = read_table(path)
    if smiles_column not in frame.columns:
        raise ValueError(f"{path}: no SMILES column {smiles_column!r}; columns: {list(frame)}")
    smiles = [
        "" if pd.isna(s) else str(s).strip() for s in frame[smiles_column].to_numpy(dtype=object)
    ]
    mols = mols_from_smiles(smiles)
    bad = [
        (i, smiles[i], m.reason) for i, m in enumerate(mols) if isinstance(m, MoleculeParseError)
    ]
    keep = [i for i, m in enumerate(mols) if not isinstance(m, MoleculeParseError)]
    table = frame.iloc[keep].copy()
    table["smiles"] = [smiles[i] for i in keep]
    table["row"] = keep
    rejected = rejected_frame(bad)
    rejected["file"] = path.name
    return table.reset_index(drop=True), rejected


class MoleculeNetDataset(CardDataset):
    """One MoleculeNet set; the card's ``smiles_column``, ``targets``, ``task``, ``metric``.

    Table columns: the file's columns, ``smiles`` (stripped) and ``row``. Labels:
    ``float32 [N, T]`` of the card's targets, NaN = missing (Tox21, ClinTox multi-task).
    Splits: ``"random"`` 80/10/10 (seeded) and ``"scaffold"`` (Bemis-Murcko); the card's
    ``split.method`` is MoleculeNet's recommendation for the set.
    """

    family = "moleculenet"

    @property
    def task(self) -> str:
        """``"regression"`` or ``"classification"``."""
        return str(self.card.raw["task"])

    @property
    def metric(self) -> str:
        """MoleculeNet's standard metric for the set (``"rmse"`` or ``"roc_auc"``)."""
        return str(self.card.raw["metric"])

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        ((name, path),) = files.items()
        table, rejected = read_moleculenet_file(path, self.card.raw.get("smiles_column", "smiles"))
        self.records_read[name] = len(table) + len(rejected)
        return table, rejected
