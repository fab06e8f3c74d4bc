"""Data layer: molecule tables, compound libraries and reaction files -> featurised datasets.

Layer rule: imports only from the layers below it (chem, featurize, graphs, batches, nn, models)
and from :mod:`chemgraph.errors`; never from :mod:`chemgraph.train`, :mod:`chemgraph.recipes` or
:mod:`chemgraph.cli`.

- :func:`read_table`, :func:`featurize_table`, :func:`write_rejected`, :class:`MoleculeDataset`
  (:mod:`chemgraph.data.table`)
- :func:`random_split`, :func:`scaffold_split`, :func:`murcko_scaffold`,
  :func:`warn_single_class` (:mod:`chemgraph.data.splits`)
- :class:`MoleculeDataModule`, :func:`collate_graphs` (:mod:`chemgraph.data.datamodule`)
- :mod:`chemgraph.data.readers` (streaming SMILES/SDF/table records) and
  :mod:`chemgraph.data.library` (``chemgraph featurize``: a library into graph shards and
  feature tables, in worker processes, resumable)
- :mod:`chemgraph.data.reactions` (reaction files -> reaction graphs, size-bucketed loaders)
- :mod:`chemgraph.data.datasets` (registered benchmark datasets, their cards and downloads),
  :mod:`chemgraph.data.qm9pack` (the offline QM9 package)

The library, reaction and dataset modules are imported on use (``from chemgraph.data.library
import ...``): featurisation workers and the command-line parser stay light.
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
