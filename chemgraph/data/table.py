"""Tables of molecules (CSV, TSV, Parquet) -> :class:`MoleculeDataset` of DGL graphs.

:func:`read_table` reads a table as it comes from MoleculeNet and friends (CRLF or ``\\r\\n\\n``
line endings, gzip, trailing spaces in SMILES); :func:`featurize_table` turns the rows into
graphs plus a label tensor and reports every row it could not use in a *rejected* table
(``row, input, reason``) instead of raising; :func:`write_rejected` saves that table.

Row numbers are 0-based data-row indices of the input table (the header is not a row), so row
``r`` of a CSV is on line ``r + 2`` when the file has no blank lines.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from chemgraph._dgl import dgl
from chemgraph._files import open_compressed
from chemgraph.chem import MoleculeParseError, MoleculePreparation, mol_from_smiles
from chemgraph.chem.parse import check_complete_molecule
from chemgraph.data.labels import MISSING_LABEL_TOKENS, parse_label
from chemgraph.data.readers import (
    ENCODING,
    REJECTED_COLUMNS,
    check_header,
    library_format,
    not_utf8,
    open_text,
)
from chemgraph.featurize import FeaturizerPreset
from chemgraph.graphs import mol_to_graph

__all__ = [
    "MISSING_LABEL_TOKENS",
    "MoleculeDataset",
    "featurize_table",
    "parse_labels",
    "read_table",
    "write_rejected",
]

logger = logging.getLogger(__name__)


_SEPARATORS = {"csv": ",", "tsv": "\t"}


def read_table(path: str | os.PathLike[str], keep_blank_lines: bool = False) -> pd.DataFrame:
    """Read a table of molecules, as every chemgraph command reads one
    (:mod:`chemgraph.data.readers`).

    Formats (by file name, case-insensitive, ``.gz`` ignored): ``.csv``, ``.tsv`` and
    ``.parquet``; gzip or bzip2 compression is told by the file's first bytes, whatever its name.
    CRLF line endings and blank lines (HIV.csv ends every row with ``\\r\\n\\n``) are handled.
    Only empty cells are read as missing (``keep_default_na=False``), so text such as ``"NA"``
    or ``"nan"`` stays a string; numeric target columns are converted by
    :func:`featurize_table`.

    Args:
        path: the table file.
        keep_blank_lines: keep a blank line of a CSV/TSV file as a row of empty cells (so that
            the output of ``chemgraph predict`` has one row per input line); by default blank
            lines are skipped, as pandas does.

    Returns:
        The table, one row per data line, columns named by the header.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: unsupported extension; the file holds no data rows; a header that names a
            column twice (:func:`chemgraph.data.readers.check_header`); cells with bytes that
            are not UTF-8 (the first named by its row and column, with what to do; the
            other rows listed).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"table file not found: {path}")
    try:
        kind = library_format(path)
    except ValueError:
        kind = None
    if kind == "parquet":
        import pyarrow.parquet as pq

        check_header(pq.read_schema(path).names, path)
        frame = pd.read_parquet(path)
    elif kind in _SEPARATORS:
        with open_text(path, newline="") as handle:
            header = next(csv.reader(handle, delimiter=_SEPARATORS[kind]), None)
        if header is None:
            raise ValueError(f"{path}: the file is empty (no header, no rows)")
        check_header(header, path)
        try:
            with open_compressed(path) as handle:
                frame = pd.read_csv(
                    handle,
                    sep=_SEPARATORS[kind],
                    keep_default_na=False,
                    na_values=[""],
                    skip_blank_lines=not keep_blank_lines,
                    encoding=ENCODING,
                )
        except UnicodeDecodeError:
            raise ValueError(_rows_not_utf8(path, _SEPARATORS[kind])) from None
    else:
        raise ValueError(
            f"{path}: unsupported table format; expected .csv, .tsv or .parquet (optionally .gz)"
        )
    if len(frame) == 0:
        raise ValueError(f"{path}: the table has no data rows (columns: {list(frame.columns)})")
    return frame


def _rows_not_utf8(path: Path, separator: str) -> str:
    """Which rows of a table pandas could not decode hold bytes that are not UTF-8: the first
    by its row (0-based data row, blank lines counted), line and column, with what to do, and
    the others' rows."""
    rows, first = [], ""
    with open_text(path, newline="") as handle:
        reader = csv.reader(handle, delimiter=separator)
        header = next(reader)
        for row, fields in enumerate(reader):
            parts = [
                (f"column {header[at]!r}" if at < len(header) else f"field {at + 1}", cell)
                for at, cell in enumerate(fields)
            ]
            reason = not_utf8(parts)
            if reason is not None:
                first = first or f"row {row} (line {reader.line_num}): {reason}"
                rows.append(row)
    if len(rows) > 1:
        shown = ", ".join(map(str, rows[:10])) + (", ..." if len(rows) > 10 else "")
        first += f" ({len(rows)} rows hold such bytes: {shown})"
    return f"{path}: {first or 'bytes that are not UTF-8; convert the file to UTF-8'}"


@dataclass(eq=False)
class MoleculeDataset(Dataset):
    """Featurised molecules with their labels.

    Attributes:
        graphs: one :class:`dgl.DGLGraph` per molecule (``ndata["x"]``, ``edata["e"]``).
        labels: ``float32 [N, T]`` targets, NaN = missing; ``T == 0`` for prediction-only data.
        rows: ``int64 [N]`` 0-based data-row index of each molecule in the input table.
        smiles: the input SMILES as given (whitespace stripped), ``N`` strings.
        target_columns: the ``T`` target column names, in label order.
        inputs: ``float32 [N, S]`` values a model reads besides each graph (the low-fidelity
            labels of a label-augmented model, :class:`chemgraph.models.LabelAugmentation`);
            None = none. With them an item is ``((graph, inputs[i]), labels[i])``.
    """

    graphs: list[dgl.DGLGraph]
    labels: torch.Tensor
    rows: np.ndarray
    smiles: list[str]
    target_columns: list[str]
    inputs: torch.Tensor | None = None

    def __post_init__(self) -> None:
        n = len(self.graphs)
        if self.labels.ndim != 2 or self.labels.shape[0] != n:
            raise ValueError(f"labels must have shape [{n}, T], got {tuple(self.labels.shape)}")
        if self.labels.shape[1] != len(self.target_columns):
            raise ValueError(
                f"labels have {self.labels.shape[1]} columns but target_columns names "
                f"{len(self.target_columns)}: {self.target_columns}"
            )
        if len(self.rows) != n or len(self.smiles) != n:
            raise ValueError(
                f"graphs ({n}), rows ({len(self.rows)}) and smiles ({len(self.smiles)}) "
                "must have the same length"
            )
        self.labels = self.labels.to(torch.float32)
        self.rows = np.asarray(self.rows, dtype=np.int64)
        if self.inputs is not None:
            self.inputs = torch.as_tensor(self.inputs, dtype=torch.float32)
            if self.inputs.ndim != 2 or self.inputs.shape[0] != n:
                raise ValueError(f"inputs must have shape [{n}, S], got {tuple(self.inputs.shape)}")

    @property
    def num_tasks(self) -> int:
        """``T``, the number of target columns."""
        return len(self.target_columns)

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, index: int) -> tuple[Any, torch.Tensor]:
        """Return ``(graph, labels[index])``, or with :attr:`inputs` ``((graph,
        inputs[index]), labels[index])``; the labels are ``float32 [T]``, the inputs
        ``float32 [S]``."""
        if self.inputs is not None:
            return (self.graphs[index], self.inputs[index]), self.labels[index]
        return self.graphs[index], self.labels[index]

    def subset(self, indices: Sequence[int] | np.ndarray | torch.Tensor) -> MoleculeDataset:
        """The molecules at ``indices`` (positions in this dataset, not table rows), in order."""
        index = np.asarray(indices, dtype=np.int64).reshape(-1)
        if index.size and (index.min() < -len(self) or index.max() >= len(self)):
            raise IndexError(f"subset index out of range for a dataset of {len(self)} molecules")
        return MoleculeDataset(
            graphs=[self.graphs[i] for i in index],
            labels=self.labels[torch.from_numpy(index)],
            rows=self.rows[index],
            smiles=[self.smiles[i] for i in index],
            target_columns=list(self.target_columns),
            inputs=None if self.inputs is None else self.inputs[torch.from_numpy(index)],
        )


def _check_columns(df: pd.DataFrame, wanted: Sequence[str]) -> None:
    missing = [column for column in wanted if column not in df.columns]
    if missing:
        raise ValueError(
            f"column(s) not in the table: {', '.join(map(repr, missing))}; available columns: "
            f"{', '.join(map(repr, map(str, df.columns)))}"
        )


def _smiles_text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    return str(value).strip()


def parse_labels(
    df: pd.DataFrame, target_columns: Sequence[str]
) -> tuple[np.ndarray, list[str | None]]:
    """Label columns as ``float64 [N, T]`` (NaN = missing: an empty cell or one of
    :data:`MISSING_LABEL_TOKENS`) and, per row, the first bad-cell reason or None
    (:func:`chemgraph.data.labels.parse_label`); ``chemgraph train`` and ``chemgraph transfer``
    read labels with it."""
    n = len(df)
    values = np.full((n, len(target_columns)), np.nan, dtype=np.float64)
    errors: list[str | None] = [None] * n
    for j, column in enumerate(target_columns):
        series = df[column]
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            cells = series.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            cells = series.to_numpy(dtype=object)
        for i in range(n):
            cell = cells[i]
            if cell is pd.NA:
                continue
            values[i, j], error = parse_label(cell, column)
            if error is not None and errors[i] is None:
                errors[i] = error
    return values, errors


def featurize_table(
    df: pd.DataFrame,
    smiles_column: str,
    target_columns: Sequence[str],
    preset: FeaturizerPreset,
    preparation: MoleculePreparation | None = None,
    require_labels: bool = True,
    progress: bool = True,
    rows: Sequence[int] | np.ndarray | None = None,
) -> tuple[MoleculeDataset, pd.DataFrame]:
    """Featurise every row of a table; rows that cannot be used are reported, never raised.

    A row is rejected (checked in this order, one reason per row) when its SMILES is empty,
    a target cell is not a number (cells in :data:`MISSING_LABEL_TOKENS`, e.g. ``""``,
    ``"nan"``, count as missing, not as errors), ``require_labels`` is set and all of its
    targets are missing, RDKit cannot parse the SMILES (reason = RDKit's message), it holds a
    dummy atom ``*`` (not a complete molecule, as ``chemgraph featurize`` and ``predict`` reject
    it: :func:`chemgraph.chem.parse.check_complete_molecule`), its preparation fails (e.g.
    standardisation), the molecule has no atoms, or graph building fails. Partially missing
    labels are kept as NaN.

    Args:
        df: the table (e.g. from :func:`read_table`).
        smiles_column: column holding the SMILES.
        target_columns: ``T`` target columns (may be empty for prediction-only data).
        preset: the atom/bond featurizer preset.
        preparation: standardisation and fragment policy applied to every parsed molecule
            (:class:`chemgraph.chem.MoleculePreparation`, the same step ``chemgraph
            featurize`` and ``predict`` run); default none and every fragment kept.
        require_labels: reject rows whose targets are all missing (ignored when ``T == 0``).
        progress: show a tqdm progress bar over the rows when stderr is a terminal.
        rows: the source-file row of each row of ``df`` (``int [len(df)]``), e.g. a dataset
            card's table from which unparsable records were already removed; default the
            position in ``df`` (right for a table read whole by :func:`read_table`).

    Returns:
        ``(dataset, rejected)``: the molecules that were featurised, and a table with columns
        ``row`` (int64, the source row: ``rows[i]``, or the 0-based data row), ``input`` (the
        stripped SMILES) and ``reason``.

    Raises:
        ValueError: ``smiles_column`` or a target column is not in ``df`` (the message lists
            the available columns), or ``rows`` does not have one entry per row.
    """
    if isinstance(target_columns, str):
        target_columns = [target_columns]
    target_columns = list(target_columns)
    _check_columns(df, [smiles_column, *target_columns])
    values, target_errors = parse_labels(df, target_columns)
    check_labels = require_labels and len(target_columns) > 0
    smiles_cells = df[smiles_column].to_numpy(dtype=object)
    source_rows = np.arange(len(df)) if rows is None else np.asarray(rows, dtype=np.int64)
    if source_rows.shape != (len(df),):
        raise ValueError(
            f"rows must give one source row per table row ({len(df)}), got {source_rows.shape}"
        )

    graphs: list[dgl.DGLGraph] = []
    kept_rows: list[int] = []
    kept_smiles: list[str] = []
    rejected: list[tuple[int, str, str]] = []
    prepare = preparation or MoleculePreparation()
    bar = progress and sys.stderr.isatty()  # a bar in a log file is a line of \r-joined text
    for row in tqdm(range(len(df)), total=len(df), disable=not bar, desc="featurize", unit="mol"):
        smiles = _smiles_text(smiles_cells[row])
        reason = _reject_reason(
            smiles, target_errors[row], values[row], check_labels, target_columns
        )
        if reason is None:
            try:
                mol = prepare(check_complete_molecule(mol_from_smiles(smiles), smiles))
            except MoleculeParseError as error:
                reason = error.reason or str(error)
            else:
                if mol.GetNumAtoms() == 0:
                    reason = "molecule has no atoms"
                else:
                    try:
                        graph = mol_to_graph(mol, preset)
                    except Exception as error:  # noqa: BLE001  (a bad row must not stop a load)
                        reason = f"featurization failed: {type(error).__name__}: {error}"
        if reason is not None:
            rejected.append((row, smiles, reason))
            continue
        graphs.append(graph)
        kept_rows.append(row)
        kept_smiles.append(smiles)

    kept = np.asarray(kept_rows, dtype=np.int64)
    labels = torch.from_numpy(values[kept].astype(np.float32)).reshape(
        len(kept), len(target_columns)
    )
    dataset = MoleculeDataset(
        graphs=graphs,
        labels=labels,
        rows=source_rows[kept],
        smiles=kept_smiles,
        target_columns=target_columns,
    )
    rejected_rows = source_rows[[r[0] for r in rejected]]
    rejected_table = pd.DataFrame(
        {
            "row": pd.Series(rejected_rows, dtype=np.int64),
            "id": pd.Series([str(row) for row in rejected_rows], dtype=object),
            "input": pd.Series([r[1] for r in rejected], dtype=object),
            "reason": pd.Series([r[2] for r in rejected], dtype=object),
        }
    )
    logger.debug(
        "featurised %d of %d rows (%d rejected), preset %r, %d target(s)",
        len(dataset),
        len(df),
        len(rejected),
        getattr(preset, "name", preset),
        len(target_columns),
    )
    return dataset, rejected_table


def _reject_reason(
    smiles: str,
    target_error: str | None,
    targets: np.ndarray,
    check_labels: bool,
    target_columns: Sequence[str],
) -> str | None:
    if not smiles:
        return "empty SMILES"
    if target_error is not None:
        return target_error
    if check_labels and bool(np.isnan(targets).all()):
        return f"all targets missing: {', '.join(target_columns)}"
    return None


def write_rejected(
    rejected: pd.DataFrame, path: str | os.PathLike[str], append: bool = False
) -> None:
    """Write the rejected-rows table as CSV with header ``row,id,input,reason``
    (:data:`chemgraph.data.readers.REJECTED_COLUMNS`, also when empty; a ``file`` column is
    kept). A row without an id gets its row number. Parent folders are created. With
    ``append``, the rows are added below those of an existing file (same columns).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = [column for column in ("file",) if column in rejected]
    table = pd.DataFrame(rejected).reindex(columns=[*REJECTED_COLUMNS, *extra])
    table["id"] = table["id"].astype(object)
    missing = table["id"].isna()
    table.loc[missing, "id"] = table.loc[missing, "row"].map(str)
    if append and path.exists():
        table.to_csv(path, mode="a", header=False, index=False)
        return
    table.to_csv(path, index=False)
