"""Datasets of molecules: table reading, featurisation into DGL graphs, and splits.

- :func:`read_table`, :func:`featurize_table`, :func:`write_rejected`, :class:`MoleculeDataset`
  (:mod:`chemgraph.data.table`)
- :func:`random_split`, :func:`scaffold_split`, :func:`murcko_scaffold`,
  :func:`warn_single_class` (:mod:`chemgraph.data.splits`)
- :class:`MoleculeDataModule`, :func:`collate_graphs` (:mod:`chemgraph.data.datamodule`)
"""

from chemgraph.data.splits import murcko_scaffold, random_split, scaffold_split, warn_single_class
from chemgraph.data.table import (
    MISSING_LABEL_TOKENS,
    REJECTED_COLUMNS,
    MoleculeDataset,
    featurize_table,
    read_table,
    write_rejected,
)

__all__ = [
    "MISSING_LABEL_TOKENS",
    "REJECTED_COLUMNS",
    "MoleculeDataModule",
    "MoleculeDataset",
    "collate_graphs",
    "featurize_table",
    "murcko_scaffold",
    "random_split",
    "read_table",
    "scaffold_split",
    "warn_single_class",
    "write_rejected",
]


def __getattr__(name: str):
    # The DataModule imports Lightning (~150 MB); library featurisation workers never need it.
    if name in ("MoleculeDataModule", "collate_graphs"):
        from chemgraph.data import datamodule

        return getattr(datamodule, name)
    raise AttributeError(f"module 'chemgraph.data' has no attribute {name!r}")
