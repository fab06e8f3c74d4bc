"""Streaming readers of compound libraries: chunks of records, never the whole file in memory.

Formats (each optionally gzipped, detected from the name): ``.smi``/``.smiles`` (SMILES, then
an optional name, per line), ``.csv``, ``.tsv``, ``.parquet``, ``.sdf``/``.mol``-blocks.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

__all__ = ["Record", "library_format", "iter_record_chunks", "SMILES_COLUMN_NAMES"]

#: Column names tried, in order, when no SMILES column is given.
SMILES_COLUMN_NAMES = ("smiles", "SMILES", "Smiles", "canonical_smiles", "mol")


@dataclass(frozen=True)
class Record:
    """One input record.

    Attributes:
        row: 0-based record index in the input (data rows for tables, lines for ``.smi``,
            records for SDF; blank table rows are skipped by the table reader and not counted).
        id: the record's identifier: the id column, the ``.smi`` name, the SDF title or the
            ``id_column`` SD property, else ``str(row)``.
        text: the SMILES string, or the whole SDF record (molblock and properties).
        kind: ``"smiles"`` or ``"molblock"``.
    """

    row: int
    id: str
    text: str
    kind: str = "smiles"


def library_format(path: str | Path) -> str:
    """``"smi"``, ``"csv"``, ``"tsv"``, ``"parquet"`` or ``"sdf"`` from the file name.

    Raises:
        ValueError: an unsupported extension (the supported ones are listed).
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix, kind in ((".smi", "smi"), (".smiles", "smi"), (".csv", "csv"), (".tsv", "tsv"),
                         (".parquet", "parquet"), (".sdf", "sdf")):  # fmt: skip
        if name.endswith(suffix):
            return kind
    raise ValueError(
        f"{path}: unsupported input format; use .smi, .csv, .tsv, .parquet or .sdf (optionally .gz)"
    )


def _open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None)


def _chunks(records: Iterator[Record], size: int) -> Iterator[list[Record]]:
    chunk: list[Record] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _smi_records(path: Path) -> Iterator[Record]:
    with _open_text(path) as lines:
        for row, line in enumerate(lines):
            fields = line.split(maxsplit=1)
            smiles = fields[0] if fields else ""
            name = fields[1].strip() if len(fields) > 1 else str(row)
            yield Record(row, name, smiles)


def _sdf_records(path: Path, id_property: str | None) -> Iterator[Record]:
    with _open_text(path) as lines:
        block: list[str] = []
        row = 0
        for line in lines:
            if line.rstrip("\r\n") == "$$$$":
                yield _sdf_record(row, "".join(block), id_property)
                block, row = [], row + 1
            else:
                block.append(line)
        if "".join(block).strip():
            yield _sdf_record(row, "".join(block), id_property)


def _sdf_record(row: int, text: str, id_property: str | None) -> Record:
    identifier = text.split("\n", 1)[0].strip()
    if id_property is not None:
        marker = f"<{id_property}>"
        lines = text.split("\n")
        for index, line in enumerate(lines[:-1]):
            if line.startswith(">") and marker in line:
                identifier = lines[index + 1].strip()
                break
    return Record(row, identifier or str(row), text, "molblock")


def _pick_smiles_column(columns: list[str], wanted: str | None, path: Path) -> str:
    if wanted is not None:
        if wanted not in columns:
            raise ValueError(f"{path}: no column {wanted!r}; available columns: {columns}")
        return wanted
    for name in SMILES_COLUMN_NAMES:
        if name in columns:
            return name
    raise ValueError(
        f"{path}: no SMILES column found (tried {list(SMILES_COLUMN_NAMES)}); "
        f"name it with --smiles-column; available columns: {columns}"
    )


def _check_id_column(columns: list[str], id_column: str | None, path: Path) -> None:
    if id_column is not None and id_column not in columns:
        raise ValueError(f"{path}: no id column {id_column!r}; available columns: {columns}")


def _table_records(
    frames: Iterator[pd.DataFrame], smiles_column: str, id_column: str | None
) -> Iterator[Record]:
    row = 0
    for frame in frames:
        smiles = frame[smiles_column].tolist()
        ids = frame[id_column].tolist() if id_column else None
        for index, text in enumerate(smiles):
            text = "" if text is None or (isinstance(text, float) and text != text) else str(text)
            identifier = str(ids[index]) if ids is not None else str(row)
            yield Record(row, identifier, text)
            row += 1


def iter_record_chunks(
    path: str | Path,
    chunk_size: int,
    smiles_column: str | None = None,
    id_column: str | None = None,
) -> Iterator[list[Record]]:
    """Read a library in chunks of ``chunk_size`` records, streaming.

    Args:
        path: input file (see the module docstring for formats).
        chunk_size: records per chunk (the last chunk may be shorter).
        smiles_column: SMILES column of a table; default: the first of
            :data:`SMILES_COLUMN_NAMES` present.
        id_column: identifier column of a table, or SD property of an SDF; default: the
            ``.smi`` name, the SDF title line, else the row number.

    Yields:
        Lists of :class:`Record`, in input order. Bytes that are not UTF-8 are replaced by
        U+FFFD (the record is then rejected by the parser, with the row named).

    Raises:
        FileNotFoundError: no such file. ValueError: unsupported format, a missing column.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input {path} does not exist")
    kind = library_format(path)
    if kind == "smi":
        yield from _chunks(_smi_records(path), chunk_size)
    elif kind == "sdf":
        yield from _chunks(_sdf_records(path, id_column), chunk_size)
    elif kind == "parquet":
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        columns = parquet.schema_arrow.names
        smiles = _pick_smiles_column(columns, smiles_column, path)
        _check_id_column(columns, id_column, path)
        wanted = [smiles] + ([id_column] if id_column and id_column != smiles else [])
        frames = (b.to_pandas() for b in parquet.iter_batches(chunk_size, columns=wanted))
        yield from _chunks(_table_records(frames, smiles, id_column), chunk_size)
    else:
        separator = "\t" if kind == "tsv" else ","
        try:
            header = pd.read_csv(path, sep=separator, nrows=0, encoding_errors="replace")
        except pd.errors.EmptyDataError:
            raise ValueError(f"{path} is empty (no header, no records)") from None
        columns = list(header.columns)
        smiles = _pick_smiles_column(columns, smiles_column, path)
        _check_id_column(columns, id_column, path)
        frames = pd.read_csv(
            path,
            sep=separator,
            usecols=[smiles] + ([id_column] if id_column and id_column != smiles else []),
            dtype=str,
            keep_default_na=False,
            chunksize=chunk_size,
            encoding_errors="replace",
        )
        yield from _chunks(_table_records(iter(frames), smiles, id_column), chunk_size)
