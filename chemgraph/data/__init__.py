"""Data layer: molecule tables, compound libraries and reaction files -> featurised datasets.

Layer rule: imports only from the layers below it (chem, featurize, graphs, batches, nn, models)
and from :mod:`chemgraph.errors`; never from :mod:`chemgraph.train`, :mod:`chemgraph.recipes` or
:mod:`chemgraph.cli`.

- :func:`read_table`, :func:`featurize_table`, :func:`write_rejected`, :class:`MoleculeDataset`
  (:mod:`chemgraph.data.table`)
- :func:`random_split`, :func:`scaffold_split`, :func:`murcko_scaffold`,
  :func:`duplicate_groups`, :func:`find_duplicates`, :func:`warn_single_class`
  (:mod:`chemgraph.data.splits`)
- :class:`MoleculeDataModule`, :func:`collate_graphs` (:mod:`chemgraph.data.datamodule`)
- :mod:`chemgraph.data.readers` (streaming SMILES/SDF/table records; ``chemgraph featurize``
  itself is :mod:`chemgraph.library.featurize`)
- :mod:`chemgraph.data.reactions` (reaction files -> reaction graphs, size-bucketed loaders)
- :mod:`chemgraph.data.datasets` (registered benchmark datasets, their cards and downloads),
  :mod:`chemgraph.data.qm9pack` (the offline QM9 package)

Every module is imported on first use of one of its names (``from chemgraph.data import
read_table`` imports :mod:`chemgraph.data.table`), and the readers, reaction and dataset modules
by their own names (``from chemgraph.data.readers import ...``): ``chemgraph featurize`` and its
workers import neither pandas nor DGL, and the command-line parser stays light.
"""

from chemgraph._lazy import lazy_attributes

# name -> the module that defines it
_MODULES = {
    "MISSING_LABEL_TOKENS": "table",
    "REJECTED_COLUMNS": "readers",
    "MoleculeDataset": "table",
    "featurize_table": "table",
    "parse_labels": "table",
    "read_table": "table",
    "write_rejected": "table",
    "Duplicates": "splits",
    "duplicate_groups": "splits",
    "find_duplicates": "splits",
    "murcko_scaffold": "splits",
    "predefined_parts": "splits",
    "read_split_file": "splits",
    "random_split": "splits",
    "scaffold_split": "splits",
    "warn_single_class": "splits",
    # the DataModule imports Lightning (~150 MB)
    "MoleculeDataModule": "datamodule",
    "collate_graphs": "datamodule",
}

__all__ = sorted(_MODULES)

__getattr__ = lazy_attributes(__name__, _MODULES)
