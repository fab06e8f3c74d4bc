"""Streaming readers of compound libraries: chunks of records, never the whole file in memory.

Every record of the file is yielded — blank and malformed ones too, flagged — so a caller can
account for each one. ``Record.row`` is always the 0-based index of the record in the file,
blank records included; what a record is depends on the format (each optionally gzipped):

- ``.smi``/``.smiles``: one line (``\\n``, ``\\r\\n`` or ``\\r`` ends it): a SMILES, its
  CXSMILES extension block ``|...|`` if any, then optional whitespace and a name
  (:func:`chemgraph.chem.parse.split_smiles_line`, as RDKit reads a SMILES line). ``row`` is
  the 0-based line number (line ``row + 1`` in an editor).
- ``.csv``/``.tsv``: one data row after the header line, read with Python's :mod:`csv`
  (RFC 4180 quoting, so a quoted field may span lines). ``row`` is the 0-based data row; when
  no quoted field spans lines, it is on line ``row + 2`` of the file (the header is line 1).
  It is also the row's index in ``pandas.read_csv(path, skip_blank_lines=False)``.
- ``.parquet``: one table row; ``row`` is its 0-based index.
- ``.sdf``: one record, ended by a line that starts with ``$$$$`` (cut by
  :func:`chemgraph.chem.parse.iter_sdf_blocks`, as RDKit does); ``row`` is the 0-based record
  number. Whitespace after the last ``$$$$`` is not a record.
- ``.xyz``/``.extxyz`` (XYZ and extended XYZ): one frame, its atom count line, its comment
  line and that many atom lines; ``row`` is the 0-based frame number. Blank lines between
  frames are not records. A count line that is not a number is a malformed record (the
  reader goes on at the next line that is one), and so is a frame the file ends inside.
  3D structures without bonds: only the radius graphs of 3D models read them
  (:class:`chemgraph.library.records.FeaturizeOptions`).

A *blank* record (``kind == "blank"``) holds nothing but whitespace: a blank ``.smi`` line, a
table row whose every field is empty or whitespace (``""`` or ``",,"``), an SDF record with
nothing before its ``$$$$``. Parquet rows are never blank: a null SMILES is an empty SMILES. A
table row with more fields than the header is *malformed* (``error`` says so): its columns cannot
be told apart.

The one way chemgraph reads its users' files, for every command (this module's streaming
readers, :func:`chemgraph.data.read_table` and the SD files of ``chemgraph train``, the files of
reactions): compression is told by the file's first bytes, never by its name
(:func:`chemgraph._files.open_compressed`); the format by the name, ``.gz`` ignored
(:func:`library_format`); text is UTF-8 (a leading byte-order mark dropped), and bytes that are
not UTF-8 are never replaced: the record that holds them is refused, naming the record and where
the bytes are (:func:`not_utf8`), since replacing them would make distinct ids, titles or
properties equal; a table whose header names a column twice is refused with the names
(:func:`check_header`).
"""

from __future__ import annotations

import collections
import csv
import io
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from chemgraph._files import open_compressed
from chemgraph.chem.parse import iter_sdf_blocks, split_smiles_line

__all__ = [
    "ENCODING",
    "ENCODING_ERRORS",
    "NOT_UTF8",
    "REJECTED_COLUMNS",
    "Record",
    "check_header",
    "escaped",
    "library_format",
    "iter_record_chunks",
    "not_utf8",
    "open_text",
    "pick_id_column",
    "sdf_not_utf8",
    "SMILES_COLUMN_NAMES",
    "text_stream",
]

ENCODING = "utf-8-sig"
"""The encoding of every text file chemgraph reads: UTF-8, a leading byte-order mark (Excel's
"CSV UTF-8") dropped."""
ENCODING_ERRORS = "surrogateescape"
"""How bytes that are not UTF-8 are decoded: kept as lone surrogates (U+DC80-U+DCFF), so that
:func:`not_utf8` finds them and names their record; never replaced."""
NOT_UTF8 = "not valid UTF-8"
"""The start of the reason of a record that holds bytes that are not UTF-8 (:func:`not_utf8`)."""
_UNDECODED = re.compile("[\udc80-\udcff]")
_CONVERT = "convert the file to UTF-8 (e.g. iconv -f cp1252 -t utf-8, for Excel on Windows)"

REJECTED_COLUMNS: tuple[str, str, str, str] = ("row", "id", "input", "reason")
"""The one schema of every ``rejected.csv`` chemgraph writes (``train``, ``featurize``,
``predict``'s featurization, dataset caches): the 0-based source row, the record's id (its id
column, ``.smi`` name or SDF title; the row when it has none), the input as read and why it was
not used. Multi-file datasets add a ``file`` column."""

#: Column names tried, in order, when no SMILES column is given.
SMILES_COLUMN_NAMES = ("smiles", "SMILES", "Smiles", "canonical_smiles", "mol")
ID_COLUMN_NAMES = ("id", "ID", "Id")
"""A table's identifier column when none is named: the first of these present."""


@dataclass(frozen=True)
class Record:
    """One input record.

    Attributes:
        row: 0-based index of the record in the file, blank records included (see the module
            docstring for what it means per format).
        id: the record's identifier: the id column, the ``.smi`` name, the SDF title or the
            ``id_column`` SD property; ``str(row)`` where that is missing or empty.
        text: the SMILES string, or the whole SDF record (molblock, properties, ``$$$$``),
            or the whole XYZ frame (count, comment and atom lines); ``""`` for a blank record;
            the row's fields joined by the separator for a malformed table row; the line read
            for a malformed XYZ count line.
        kind: ``"smiles"``, ``"molblock"``, ``"xyz"`` or ``"blank"`` (nothing but whitespace).
        error: why the reader could not make sense of the record (a malformed table row or
            XYZ frame), else ``None``.
        labels: the cells of the ``label_columns`` asked for, as read (text of a text table or
            SD property, a parquet value; None where the field or property is absent), in
            their order; ``()`` when none were asked for.
    """

    row: int
    id: str
    text: str
    kind: Literal["smiles", "molblock", "xyz", "blank"] = "smiles"
    error: str | None = None
    labels: tuple[Any, ...] = ()


def library_format(path: str | Path) -> str:
    """``"smi"``, ``"csv"``, ``"tsv"``, ``"parquet"``, ``"sdf"`` or ``"xyz"`` (``.xyz``,
    ``.extxyz``) from the file name.

    Raises:
        ValueError: an unsupported extension (the supported ones are listed).
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix, kind in ((".smi", "smi"), (".smiles", "smi"), (".csv", "csv"), (".tsv", "tsv"),
                         (".parquet", "parquet"), (".sdf", "sdf"), (".extxyz", "xyz"),
                         (".xyz", "xyz")):  # fmt: skip
        if name.endswith(suffix):
            return kind
    raise ValueError(
        f"{path}: unsupported input format; use .smi, .csv, .tsv, .parquet, .sdf, .xyz or "
        ".extxyz (optionally .gz)"
    )


def text_stream(binary: IO[bytes], newline: str | None) -> io.TextIOWrapper:
    """``binary`` read as text: :data:`ENCODING`, with :data:`ENCODING_ERRORS` (bytes that are
    not UTF-8 kept for :func:`not_utf8`); ``newline`` as :func:`open` takes it."""
    return io.TextIOWrapper(binary, encoding=ENCODING, errors=ENCODING_ERRORS, newline=newline)


def open_text(path: str | Path, newline: str | None) -> io.TextIOWrapper:
    """A user's text file (plain, gzip or bzip2, told by its first bytes) as
    :func:`text_stream`."""
    return text_stream(open_compressed(path), newline)


def escaped(text: str) -> str:
    """``text`` with each byte that was not UTF-8 written as ``\\xNN`` (what a report or an
    output holds of it: distinct bytes stay distinct, and every writer can write it)."""
    if not _UNDECODED.search(text):
        return text
    return text.encode("utf-8", ENCODING_ERRORS).decode("utf-8", "backslashreplace")


def not_utf8(parts: Sequence[tuple[str, str | None]]) -> str | None:
    """Why a record is refused when one of its ``parts`` holds bytes that are not UTF-8, else
    None.

    Args:
        parts: ``(where, text)`` of the record's parts as read (:func:`text_stream`), e.g.
            ``("column 'id'", cell)`` or ``("the SDF title (line 1)", line)``; None for an
            absent part.

    Returns:
        ``"not valid UTF-8: byte 0xe9 in column 'id' ('caf\\xe9'); convert the file to UTF-8
        (...)"`` (the first such part, its first such byte), or None.
    """
    for where, text in parts:
        found = _UNDECODED.search(text) if text else None
        if found:
            return (
                f"{NOT_UTF8}: byte {ord(found.group()) - 0xDC00:#04x} in {where} "
                f"('{escaped(text.strip())[:80]}'); {_CONVERT}"
            )
    return None


def check_header(names: Sequence[Any], path: str | Path) -> None:
    """Refuse a table whose header names a column more than once (which of the columns a name
    means cannot be told), or whose names hold bytes that are not UTF-8.

    Raises:
        ValueError: the names given twice or more (with their positions, 1-based), or the
            name with the bytes.
    """
    reason = not_utf8([("the header", str(name)) for name in names])
    if reason is not None:
        raise ValueError(f"{path}: {reason}")
    positions: dict[str, list[int]] = collections.defaultdict(list)
    for position, name in enumerate(names, start=1):
        if str(name).strip():
            positions[str(name)].append(position)
    repeated = [
        f"{name!r} (columns {', '.join(map(str, at))})" for name, at in positions.items()
        if len(at) > 1
    ]  # fmt: skip
    if repeated:
        raise ValueError(
            f"{path}: the header names {'; '.join(repeated)} more than once, so which column "
            "is meant cannot be told; rename or remove the repeated columns"
        )


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
    with open_text(path, newline=None) as lines:
        for row, line in enumerate(lines):
            smiles, name = split_smiles_line(line)
            if not smiles:
                yield Record(row, str(row), "", "blank")
                continue
            error = not_utf8([(f"line {row + 1}", line)])
            yield Record(row, escaped(name) or str(row), escaped(smiles), error=error)


def _sdf_records(
    path: Path, id_property: str | None, label_properties: Sequence[str]
) -> Iterator[Record]:
    for row, block in enumerate(iter_sdf_blocks(path)):
        text = block.decode("utf-8", ENCODING_ERRORS)
        lines = text.splitlines()
        if lines and lines[-1].startswith("$$$$"):
            lines.pop()
        if any(line.strip() for line in lines):
            lines = [escaped(line) for line in lines]
            labels = tuple(_sdf_property(lines, name) for name in label_properties)
            identifier = _sdf_id(lines, id_property) or str(row)
            yield Record(
                row, identifier, escaped(text), "molblock", sdf_not_utf8(block), labels=labels
            )
        else:
            yield Record(row, str(row), "", "blank", labels=(None,) * len(label_properties))


def sdf_not_utf8(block: bytes) -> str | None:
    """:func:`not_utf8` of an SDF record (its bytes, from
    :func:`chemgraph.chem.parse.iter_sdf_blocks`), naming the part that holds the bytes: its
    title (line 1), an SD property (by name) or another line of the record."""
    text = block.decode("utf-8", ENCODING_ERRORS)
    if not _UNDECODED.search(text):
        return None
    lines = text.splitlines()
    parts = []
    for number, line in enumerate(lines, start=1):
        where = f"line {number} of the record"
        if number == 1:
            where = "the SDF title (line 1)"
        elif line.startswith(">") and "<" in line:
            where = f"the SD property header on line {number}"
        elif number > 1 and lines[number - 2].startswith(">") and "<" in lines[number - 2]:
            name = lines[number - 2].split("<", 1)[1].split(">", 1)[0]
            where = f"SD property <{escaped(name)}> (line {number})"
        parts.append((where, line))
    return not_utf8(parts)


def _xyz_records(path: Path, id_key: str | None) -> Iterator[Record]:
    """The frames of an XYZ or extended-XYZ file (the module docstring)."""

    def is_count(text: str) -> bool:
        text = text.strip()
        return text.isascii() and text.isdigit()

    with open_text(path, newline=None) as handle:
        lines = iter(handle)
        row, number, line = 0, 1, next(lines, None)
        while line is not None:
            if not line.strip():
                number, line = number + 1, next(lines, None)
                continue
            if not is_count(line):
                error = (
                    f"XYZ parse error: line {number}: {line.strip()[:40]!r} is not an atom "
                    "count (a frame starts with its number of atoms)"
                )
                yield Record(row, str(row), line.strip(), "xyz", error=error)
                row, number, line = row + 1, number + 1, next(lines, None)
                while line is not None and not is_count(line):
                    number, line = number + 1, next(lines, None)
                continue
            count = int(line)
            frame = [line, *itertools.islice(lines, count + 1)]
            text = "".join(frame)
            if len(frame) < count + 2:
                read = max(len(frame) - 2, 0)
                error = (
                    f"XYZ parse error: the file ends inside frame {row + 1}, at {read} of its "
                    f"{count} atom lines"
                )
                yield Record(row, str(row), text, "xyz", error=error)
                return
            identifier = _xyz_id(escaped(frame[1]), id_key) if id_key is not None else ""
            error = not_utf8([(f"line {number + k} (frame {row + 1})", line)
                              for k, line in enumerate(frame)])  # fmt: skip
            yield Record(row, identifier or str(row), escaped(text), "xyz", error)
            row, number, line = row + 1, number + len(frame), next(lines, None)


def _xyz_id(comment: str, key: str) -> str:
    """The value of ``key`` among the ``key=value`` pairs of an extended-XYZ comment line (as
    ASE parses them), else ``""``."""
    from ase.io.extxyz import key_val_str_to_dict

    try:
        value = key_val_str_to_dict(comment.strip()).get(key)
    except Exception:  # noqa: BLE001 - a comment ASE cannot parse names no id
        return ""
    return "" if value is None else str(value).strip()


def _sdf_id(lines: list[str], id_property: str | None) -> str:
    """The ``id_property`` SD field of a record (its lines), else its title line."""
    if id_property is not None:
        value = _sdf_property(lines, id_property)
        if value is not None:
            return value.strip()
    return lines[0].strip()


def _sdf_property(lines: list[str], name: str) -> str | None:
    """The first line of SD property ``name`` of a record (its lines), or None."""
    marker = f"<{name}>"
    for index, line in enumerate(lines[:-1]):
        if line.startswith(">") and marker in line:
            return lines[index + 1]
    return None


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


def pick_id_column(columns: list[str], id_column: str | None, path: Path) -> str | None:
    """``id_column`` (checked), else the first of :data:`ID_COLUMN_NAMES` present, else None.

    Raises:
        ValueError: ``id_column`` is not among ``columns`` (they are given).
    """
    if id_column is not None and id_column not in columns:
        raise ValueError(f"{path}: no id column {id_column!r}; available columns: {columns}")
    if id_column is None:
        return next((name for name in ID_COLUMN_NAMES if name in columns), None)
    return id_column


def _check_label_columns(columns: list[str], label_columns: Sequence[str], path: Path) -> None:
    missing = [name for name in label_columns if name not in columns]
    if missing:
        raise ValueError(f"{path}: no label column {missing}; available columns: {columns}")


def _text_table_records(
    path: Path,
    separator: str,
    smiles_column: str | None,
    id_column: str | None,
    label_columns: Sequence[str],
) -> Iterator[Record]:
    with open_text(path, newline="") as handle:
        reader = csv.reader(handle, delimiter=separator)
        try:
            header = next(reader, None)
            if header is None:
                raise ValueError(f"{path} is empty (no header, no records)")
            check_header(header, path)
            smiles_at = header.index(_pick_smiles_column(header, smiles_column, path))
            id_column = pick_id_column(header, id_column, path)
            id_at = header.index(id_column) if id_column is not None else None
            _check_label_columns(header, label_columns, path)
            labels_at = [header.index(name) for name in label_columns]
            absent = (None,) * len(labels_at)
            for row, fields in enumerate(reader):
                if not any(field.strip() for field in fields):
                    yield Record(row, str(row), "", "blank", labels=absent)
                    continue
                error = None
                if _UNDECODED.search("".join(fields)):  # rare: refused, its fields escaped
                    error = not_utf8([(f"column {name!r}", field)
                                      for name, field in zip(header, fields)])  # fmt: skip
                    fields = [escaped(field) for field in fields]
                identifier = (
                    fields[id_at].strip() if id_at is not None and id_at < len(fields) else ""
                )
                if len(fields) > len(header):
                    error = (
                        f"malformed row: {len(fields)} fields where the header has "
                        f"{len(header)} (an unquoted {separator!r} in a field?)"
                    )
                    text = separator.join(fields)
                    yield Record(row, identifier or str(row), text, error=error, labels=absent)
                    continue
                smiles = fields[smiles_at] if smiles_at < len(fields) else ""
                labels = tuple(fields[at] if at < len(fields) else None for at in labels_at)
                yield Record(row, identifier or str(row), smiles, error=error, labels=labels)
        except csv.Error as error:
            raise ValueError(f"{path}, line {reader.line_num}: unreadable table: {error}") from None


def _parquet_records(
    path: Path,
    batch_size: int,
    smiles_column: str | None,
    id_column: str | None,
    label_columns: Sequence[str],
) -> Iterator[Record]:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    columns = parquet.schema_arrow.names
    check_header(columns, path)
    smiles = _pick_smiles_column(columns, smiles_column, path)
    id_column = pick_id_column(columns, id_column, path)
    _check_label_columns(columns, label_columns, path)
    wanted = [smiles] + ([id_column] if id_column and id_column != smiles else [])
    wanted += [name for name in label_columns if name not in wanted]
    row = 0
    for batch in parquet.iter_batches(batch_size, columns=wanted):
        texts = batch.column(smiles).to_pylist()
        ids = batch.column(id_column).to_pylist() if id_column else [None] * len(texts)
        labels = list(zip(*(batch.column(name).to_pylist() for name in label_columns)))
        labels = labels or [()] * len(texts)
        for text, identifier, values in zip(texts, ids, labels):
            identifier = "" if identifier is None else str(identifier).strip()
            text = "" if text is None else str(text)
            yield Record(row, identifier or str(row), text, labels=values)
            row += 1


def iter_record_chunks(
    path: str | Path,
    chunk_size: int,
    smiles_column: str | None = None,
    id_column: str | None = None,
    label_columns: Sequence[str] = (),
) -> Iterator[list[Record]]:
    """Read a library in chunks of ``chunk_size`` records, streaming.

    Args:
        path: input file (see the module docstring for formats and what ``row`` means).
        chunk_size: records per chunk (the last chunk may be shorter).
        smiles_column: SMILES column of a table; default: the first of
            :data:`SMILES_COLUMN_NAMES` present.
        id_column: identifier column of a table, SD property of an SDF, or key of an
            extended-XYZ comment line (``name=...``); default: the ``.smi`` name, the SDF
            title line, a table's column of :data:`ID_COLUMN_NAMES`, else the row number.
        label_columns: columns of a table, or SD properties of an SDF, whose cells each
            record carries in :attr:`Record.labels` (a ``.smi`` or XYZ file has none).

    Yields:
        Lists of :class:`Record`, every record of the file once, in file order (blank and
        malformed ones included, flagged by ``kind`` and ``error``). A record that holds bytes
        that are not UTF-8 (anywhere: a table row's fields, a ``.smi`` line, an SDF record, an
        XYZ frame) is malformed, its ``error`` :func:`not_utf8`'s reason; its ``id`` and
        ``text`` show those bytes as ``\\xNN`` (:func:`escaped`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: unsupported format, a missing column, a column named twice in the header
            (:func:`check_header`), an empty table file (no header), a table the :mod:`csv`
            module cannot parse (the line is named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input {path} does not exist")
    kind = library_format(path)
    label_columns = tuple(label_columns)
    if kind in ("smi", "xyz") and label_columns:
        raise ValueError(f"{path}: a .{kind} file has no label columns; use a table or an SDF")
    if kind == "smi":
        records = _smi_records(path)
    elif kind == "xyz":
        records = _xyz_records(path, id_column)
    elif kind == "sdf":
        records = _sdf_records(path, id_column, label_columns)
    elif kind == "parquet":
        records = _parquet_records(path, chunk_size, smiles_column, id_column, label_columns)
    else:
        records = _text_table_records(
            path, "\t" if kind == "tsv" else ",", smiles_column, id_column, label_columns
        )
    yield from _chunks(records, chunk_size)
