"""Dataset registry (data layer): cards in ``datasets/`` + one loader class per dataset family.
May import the rest of :mod:`chemgraph.data`, :mod:`chemgraph.graphs`, :mod:`chemgraph.featurize`,
:mod:`chemgraph.chem` and the bottom modules; never ``train`` or above.

>>> from chemgraph.data.datasets import list_datasets, load_dataset
>>> esol = load_dataset("esol", root="path/to/moleculenet")   # parses (downloads if needed)
>>> graphs, rejected = esol.featurize("canonical")              # cached shards
>>> splits = esol.split(graphs)                                  # card's split protocol

Families: ``qm9`` (:mod:`.qm9`), ``qm9_gw`` (:mod:`.qm9_gw`), ``dockstring``
(:mod:`.dockstring`), ``moleculenet`` (:mod:`.moleculenet`), ``uspto`` (:mod:`.uspto`),
``oc20`` (:mod:`.oc20`). Cache: ``$CHEMGRAPH_HOME`` (default ``~/.cache/chemgraph``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chemgraph._lazy import lazy_attributes
from chemgraph.data.datasets.card import DatasetCard, SourceFile, card_names, read_card
from chemgraph.data.datasets.download import ChecksumError, chemgraph_home

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from chemgraph.data.datasets.base import CardDataset, ParseResult

__all__ = [
    "FAMILIES",
    "CardDataset",
    "ChecksumError",
    "DataSource",
    "DatasetCard",
    "ParseResult",
    "SourceFile",
    "chemgraph_home",
    "dataset_card",
    "get_dataset",
    "list_datasets",
    "load_dataset",
    "read_data",
]

# The loaders import torch, DGL and pandas: imported on first use, so that reading cards
# (``chemgraph datasets list`` and ``info``) stays light.
_lazy_getattr = lazy_attributes(__name__, {"CardDataset": "base", "ParseResult": "base"})


@functools.cache
def _families() -> dict[str, type[CardDataset]]:
    """Loader class of each family named by the cards (:data:`FAMILIES`)."""
    from chemgraph.data.datasets.dockstring import DockstringDataset
    from chemgraph.data.datasets.moleculenet import MoleculeNetDataset
    from chemgraph.data.datasets.oc20 import OC20Dataset
    from chemgraph.data.datasets.qm9 import QM9Dataset
    from chemgraph.data.datasets.qm9_gw import QM9GWDataset
    from chemgraph.data.datasets.uspto import USPTODataset

    loaders = (
        QM9Dataset, QM9GWDataset, DockstringDataset, MoleculeNetDataset, USPTODataset,
        OC20Dataset,
    )  # fmt: skip
    return {cls.family: cls for cls in loaders}


def __getattr__(name: str) -> Any:
    """``FAMILIES`` (loader class of each family named by the cards), ``CardDataset`` and
    ``ParseResult``, imported on first use."""
    if name == "FAMILIES":
        return _families()
    return _lazy_getattr(name)


def list_datasets() -> list[str]:
    """Names of the registered datasets (cards with a loader family), sorted."""
    return card_names()


def dataset_card(name: str) -> DatasetCard:
    """The card of dataset ``name``.

    Raises:
        FileNotFoundError: unknown name (the available names are listed).
    """
    return read_card(name)


def get_dataset(
    name: str, root: str | os.PathLike[str] | None = None, *, download: bool = True, **options: Any
) -> CardDataset:
    """The loader object of dataset ``name`` (nothing is read yet).

    Raises:
        FileNotFoundError: unknown dataset. ValueError: unknown family or option.
    """
    card = dataset_card(name)
    families = _families()
    if card.family not in families:
        raise ValueError(
            f"card {name!r}: unknown family {card.family!r}; known: {sorted(families)}"
        )
    return families[card.family](card, root, download=download, **options)


def load_dataset(
    name: str, root: str | os.PathLike[str] | None = None, *, download: bool = True, **options: Any
) -> CardDataset:
    """Load (find or download, verify, parse) dataset ``name``.

    Args:
        name: a registered name (:func:`list_datasets`).
        root: folder with a local copy of the source files; default
            ``$CHEMGRAPH_HOME/raw/<name>`` (downloaded into when missing).
        download: fetch missing files (needs internet).
        **options: ``splits=[...]`` (read only those splits' files) and family options
            (e.g. ``targets=[...]``, ``drop_uncharacterized`` for QM9).

    Returns:
        The parsed dataset: ``.parse().table`` (records), ``.parse().rejected`` (row, input,
        reason), ``.featurize(preset)``, ``.split(...)``.

    Raises:
        FileNotFoundError: missing files with ``download=False``. ChecksumError: a download
        does not match its card. ValueError: bad options or a malformed source file.
    """
    dataset = get_dataset(name, root, download=download, **options)
    dataset.parse()
    return dataset


@dataclass
class DataSource:
    """What :func:`read_data` read: the table, each row's source row, the records already
    rejected while reading, and which file it was.

    Attributes:
        table: one row per usable record (a registered dataset's parsed table, or a table file
            as :func:`chemgraph.data.read_table` reads it).
        rows: ``int64 [len(table)]``, the source-file row of each table row (0-based record of
            the file; for a table file, the data row).
        rejected: ``row, input, reason`` of the records rejected while reading (a registered
            dataset's unparsable records; empty for a table file).
        description: the file(s) read, for the log.
    """

    table: pd.DataFrame
    rows: np.ndarray
    rejected: pd.DataFrame
    description: str

    def head(self, max_rows: int | None) -> DataSource:
        """The records of the first ``max_rows`` source rows (all when ``None``)."""
        if max_rows is None:
            return self
        keep = self.rows < max_rows
        return replace(
            self,
            table=self.table[keep].reset_index(drop=True),
            rows=self.rows[keep],
            rejected=self.rejected[self.rejected["row"] < max_rows].reset_index(drop=True),
        )


def _is_sdf(path: Path) -> bool:
    return path.name.lower().endswith((".sdf", ".sdf.gz"))


def _read_sdf(path: Path, smiles_column: str) -> DataSource:
    """An SDF file as a table: one row per readable record, its SD properties as columns (text;
    targets are converted as table cells are) and ``smiles_column`` the isomeric SMILES RDKit
    writes for the record's molecule (stereo from its coordinates and wedges); unreadable
    records, query structures included, are ``rejected`` with RDKit's reason, and records with
    bytes that are not UTF-8 with where they are (:func:`chemgraph.data.readers.sdf_not_utf8`,
    as every command reads an SDF)."""
    import numpy as np
    import pandas as pd
    from rdkit import Chem

    from chemgraph.chem import MoleculeParseError
    from chemgraph.chem.parse import iter_sdf_blocks, mol_from_sdf_block
    from chemgraph.data.datasets.base import rejected_frame
    from chemgraph.data.readers import sdf_not_utf8

    records, rows, bad = [], [], []
    for index, block in enumerate(iter_sdf_blocks(path)):
        reason = sdf_not_utf8(block)
        if reason is None:
            try:
                mol = mol_from_sdf_block(block)
            except MoleculeParseError as error:
                reason = error.reason
        if reason is not None:
            bad.append((index, f"record {index}", reason))
            continue
        properties = {k: str(v) for k, v in mol.GetPropsAsDict(includePrivate=False).items()}
        records.append({**properties, smiles_column: Chem.MolToSmiles(mol)})
        rows.append(index)
    if not records and not bad:
        raise ValueError(f"{path}: the SDF file holds no records")
    return DataSource(
        table=pd.DataFrame.from_records(records),
        rows=np.asarray(rows, dtype=np.int64),
        rejected=rejected_frame(bad),
        description=str(path),
    )


def read_data(
    data: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    smiles_column: str = "smiles",
) -> DataSource:
    """A table file (:func:`chemgraph.data.read_table`), an SDF file, or a registered
    dataset's records.

    ``chemgraph train --data`` accepts all three: an SDF file (``.sdf``, ``.sdf.gz``) gives
    one row per record with its SD properties as columns (the targets) and, in
    ``smiles_column``, the SMILES of its molecule; ``rows`` are the record numbers (0-based)
    and unreadable records are ``rejected``. Another existing path is read as a table; otherwise a
    registered name (:func:`list_datasets`) is loaded (from ``$CHEMGRAPH_HOME``, downloading
    when needed; its files checked against the card, see :meth:`CardDataset.parse`) and its
    parsed table returned (SMILES in ``smiles``, the card's targets as columns) with the
    records RDKit rejected in ``rejected`` and, in ``rows``, each record's row in the source
    file (the table's ``row`` column), so that a row number always names the source record.
    ``root``: a folder with a local copy of a registered dataset's source files (as
    :func:`load_dataset`); ignored for table files.

    Raises:
        FileNotFoundError: neither an existing file nor a registered name.
    """
    import numpy as np
    import pandas as pd

    from chemgraph.data.readers import REJECTED_COLUMNS
    from chemgraph.data.table import read_table

    if Path(data).is_file() or str(data) not in list_datasets():
        if not Path(data).exists() and not Path(data).suffix:
            raise FileNotFoundError(
                f"{data!r} is neither a file nor a registered dataset; datasets: "
                f"{', '.join(list_datasets())}"
            )
        if _is_sdf(Path(data)):
            return _read_sdf(Path(data), smiles_column)
        table = read_table(data)
        return DataSource(
            table=table,
            rows=np.arange(len(table), dtype=np.int64),
            rejected=pd.DataFrame({c: pd.Series(dtype=object) for c in REJECTED_COLUMNS}),
            description=str(data),
        )
    parsed = load_dataset(str(data), root).parse()
    table = parsed.table
    rows = (
        table["row"].to_numpy(dtype=np.int64)
        if "row" in table
        else np.arange(len(table), dtype=np.int64)
    )
    return DataSource(
        table=table,
        rows=rows,
        rejected=parsed.rejected.reindex(columns=list(REJECTED_COLUMNS)),
        description=", ".join(str(path) for path in parsed.files),
    )
