"""Reaction data for reaction outcome prediction: files of reactions -> labelled graphs ->
batches of similar size.

Reactions become :class:`chemgraph.batches.reaction.ReactionGraphs`; reactions that cannot be
read or turned into graphs are reported in ``row, input, reason, file`` tables, never dropped
silently. :class:`LengthBucketSampler` and :func:`reaction_loader` batch them for training and
evaluation.

Files of reactions (:func:`reaction_records`; plain, gzip, bzip2, or an archive of one file):

- a text file (any name but ``.csv``/``.tsv``: USPTO-MIT ``.txt``, ``.smi``, ...): one reaction
  SMILES ``reactants>reagents>products`` a line, atom maps optional; text after the first
  whitespace (USPTO-MIT edit labels, a name, an id) is ignored; blank lines are skipped;
  ``row`` is the 0-based line number.
- a table, ``.csv`` (comma) or ``.tsv`` (tab), with a header naming a reaction column
  (:data:`REACTION_COLUMNS`, any case: ``reaction``, ``reactions``, ``rxn_smiles``,
  ``reaction_smiles``, ``rxn``, or USPTO-50K's ``reactants>reagents>production``); other
  columns are ignored; ``row`` is the 0-based data row (the header not counted).

Reactions whose products are all written on the left of ``>>`` with atom maps (USPTO-MIT,
USPTO-50K) are split into reactants and reagents by the maps
(:func:`chemgraph.chem.reactions.parse_reaction_smiles`).
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd
import torch
from torch.utils.data import DataLoader, Sampler
from tqdm.auto import tqdm

from chemgraph.batches.reaction import (
    ReactionGraphs,
    TokenVocabulary,
    reaction_batch,
    reaction_graphs,
)
from chemgraph.chem.graph_codec import GraphEncodingError
from chemgraph.chem.reactions import Reaction, ReactionParseError, parse_reaction_smiles
from chemgraph.data.datasets.base import rejected_frame
from chemgraph.data.datasets.download import open_binary
from chemgraph.data.readers import check_header, escaped, not_utf8, pick_id_column, text_stream

__all__ = [
    "REACTION_COLUMNS",
    "TABLE_DELIMITERS",
    "LengthBucketSampler",
    "encode_reactions",
    "load_reaction_graphs",
    "parse_input_reaction",
    "reaction_ids",
    "reaction_loader",
    "reaction_records",
    "read_reaction_file",
]

#: Header names (compared in lower case) of the column holding reaction SMILES in a table of
#: reactions, in order of preference; the last is USPTO-50K's (GLN ``raw_*.csv``).
REACTION_COLUMNS = (
    "reaction",
    "reactions",
    "rxn_smiles",
    "reaction_smiles",
    "rxn",
    "reactants>reagents>production",
)

#: File suffix (before any ``.gz``/``.bz2``) -> delimiter of a table of reactions; any other
#: file is read as one reaction a line.
TABLE_DELIMITERS = {".csv": ",", ".tsv": "\t"}

_COMPRESSED = {".gz", ".bz2", ".tar", ".tgz", ".zip"}


def _table_delimiter(path: Path) -> str | None:
    """The delimiter when ``path`` names a table (``x.csv``, ``x.tsv.gz``), else None."""
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    return TABLE_DELIMITERS.get(suffixes[-1]) if suffixes else None


def _first_field(text: str) -> str:
    """The reaction SMILES of a record: its text up to the first whitespace."""
    fields = text.split()
    return fields[0] if fields else ""


def reaction_records(
    path: str | Path, limit: int | None = None
) -> Iterator[tuple[int, str, str | None]]:
    """The reaction SMILES of a file of reactions, in file order, without parsing them (see the
    module docstring for the formats).

    Args:
        path: the file.
        limit: read only the first N lines of a text file or data rows of a table (blank ones
            included; None = all).

    Yields:
        ``(row, text, reason)``: the 0-based line number (text file) or data row (table), the
        reaction SMILES (text after its first whitespace dropped), and None, or why the record
        holds no reaction (then ``text`` is the reaction field as read, ``""`` or blanks for an
        empty one, or the row as read when it has no such field), such as bytes that are not
        UTF-8 in the line or any field of the row
        (:func:`chemgraph.data.readers.not_utf8`; ``text`` shows them as ``\\xNN``). Blank
        lines and rows are skipped.

    Raises:
        OSError: the file cannot be read.
        ValueError: a table whose header names no reaction column (the accepted names and the
            header are given), or names a column twice
            (:func:`chemgraph.data.readers.check_header`).
    """
    path = Path(path)
    delimiter = _table_delimiter(path)
    with _open(path) as lines:
        if delimiter is None:
            for row, line in enumerate(lines):
                if limit is not None and row >= limit:
                    break
                if line.strip():
                    reason = not_utf8([(f"line {row + 1}", line)])
                    yield row, escaped(_first_field(line)), reason
            return
        reader = csv.reader(lines, delimiter=delimiter)
        header = next(reader, [])
        check_header(header, path)
        names = [name.strip().lower() for name in header]
        found = [name for name in REACTION_COLUMNS if name in names]
        if not found:
            raise ValueError(
                f"{path}: no reaction column; the header must name one of "
                f"{', '.join(REACTION_COLUMNS)} (any case); found {header}"
            )
        column = names.index(found[0])
        for row, fields in enumerate(reader):
            if limit is not None and row >= limit:
                break
            if not any(field.strip() for field in fields):
                continue
            reason = not_utf8([(f"column {name!r}", field) for name, field in zip(header, fields)])
            if reason is not None:
                record = fields[column] if column < len(fields) else delimiter.join(fields)
                yield row, escaped(record), reason
            elif column >= len(fields):
                record = delimiter.join(fields)
                reason = f"no {header[column].strip()!r} field: {len(fields)} of {len(header)}"
                yield row, record, reason
            elif len(fields) > len(header):
                reason = (
                    f"malformed row: {len(fields)} fields where the header has {len(header)} "
                    f"(an unquoted {delimiter!r} in a field?)"
                )
                yield row, delimiter.join(fields), reason
            elif not fields[column].strip():  # the field as read (its blanks), not the row
                yield row, fields[column], f"empty {header[column].strip()!r} field"
            else:
                yield row, _first_field(fields[column]), None


def reaction_ids(path: str | Path, id_column: str | None = None) -> dict[int, str]:
    """The identifiers of a table of reactions, ``{row: identifier}`` with the rows of
    :func:`reaction_records`: the column ``id_column``, else the first of
    :data:`chemgraph.data.readers.ID_COLUMN_NAMES` (``id``, ``ID``, ``Id``) in the header,
    stripped of surrounding blanks (``""`` for an empty cell, never another record's row
    number); ``{}`` for a text file or a table without such a column (a record is then known
    by its row).

    Raises:
        OSError: the file cannot be read. ValueError: ``id_column`` for a text file, or not in
            the table's header (the header is given).
    """
    path = Path(path)
    delimiter = _table_delimiter(path)
    if delimiter is None:
        if id_column is not None:
            raise ValueError(
                f"{path}: an id column ({id_column!r}) needs a .csv or .tsv table; a text file "
                "holds one reaction SMILES a line"
            )
        return {}
    with _open(path) as lines:
        reader = csv.reader(lines, delimiter=delimiter)
        header = [name.strip() for name in next(reader, [])]
        check_header(header, path)
        column = pick_id_column(header, id_column, path)
        if column is None:
            return {}
        at = header.index(column)
        return {
            row: escaped(fields[at].strip()) if at < len(fields) else ""
            for row, fields in enumerate(reader)
        }


def _open(path: Path) -> io.TextIOWrapper:
    """A file of reactions (plain, compressed or an archive of one file,
    :func:`chemgraph.data.datasets.download.open_binary`) as every user's file is read
    (:func:`chemgraph.data.readers.text_stream`: UTF-8, bytes that are not UTF-8 kept for the
    record's reason), with universal newlines."""
    return text_stream(open_binary(path), newline=None)


def read_reaction_file(
    path: str | Path, limit: int | None = None
) -> tuple[list[Reaction], list[int], pd.DataFrame]:
    """The reactions of a file (:func:`reaction_records`: one reaction SMILES a line, USPTO-MIT
    ``.txt``, or a ``.csv``/``.tsv`` with a reaction column such as USPTO-50K's), of the first
    ``limit`` lines or data rows (None = all). Every reaction needs products.

    Returns:
        ``(reactions, rows, rejected)``: parsed reactions, their rows (0-based line number, or
        data row of a table), and the ``row, input, reason, file`` table of the records that
        could not be read.

    Raises:
        OSError: the file cannot be read. ValueError: a table without a reaction column.
    """
    reactions, rows, bad = [], [], []
    for row, text, reason in reaction_records(path, limit):
        if reason is None:
            try:
                reactions.append(parse_reaction_smiles(text))
                rows.append(row)
                continue
            except ReactionParseError as error:
                reason = error.reason
        bad.append((row, text, reason))
    return reactions, rows, rejected_frame(bad).assign(file=Path(path).name)


def parse_input_reaction(text: str) -> Reaction:
    """A reaction whose products may be missing (``"CC(=O)Cl.OCC>c1ccncc1>"``); text after
    the first whitespace is ignored.

    Raises:
        ReactionParseError: see :func:`chemgraph.chem.parse_reaction_smiles`.
    """
    return parse_reaction_smiles(text, allow_empty_products=True)


def encode_reactions(
    reactions: Sequence[Reaction],
    rows: Sequence[int],
    with_product: bool = True,
    progress: bool = False,
) -> tuple[list[ReactionGraphs], list[int], list[tuple[int, str, str]]]:
    """Labelled graphs of each reaction; molecules the graphs cannot hold are reported.

    Args:
        reactions: parsed reactions.
        rows: their row numbers (reported with rejected reactions).
        with_product: encode the products too (False for reactions to predict).
        progress: a tqdm bar (reactions encoded of the total) on stderr.

    Returns:
        ``(graphs, kept_rows, rejected)`` with rejected ``(row, reaction SMILES, reason)``.
    """
    graphs, kept, rejected = [], [], []
    pairs = zip(rows, reactions)
    for row, reaction in tqdm(
        pairs, total=len(reactions), desc="reaction graphs", unit="reaction", disable=not progress
    ):
        try:
            graphs.append(reaction_graphs(reaction, with_product=with_product))
            kept.append(row)
        except (GraphEncodingError, ValueError) as error:
            rejected.append((row, reaction.to_smiles(), f"graph: {error}"))
    return graphs, kept, rejected


def load_reaction_graphs(
    path: str | Path, limit: int | None = None, progress: bool = False
) -> tuple[list[ReactionGraphs], list[int], pd.DataFrame]:
    """:func:`read_reaction_file`, then :func:`encode_reactions` with products (``progress``:
    its tqdm bar).

    Returns:
        ``(graphs, rows, rejected)``: the graphs, their 0-based line numbers, and the
        ``row, input, reason, file`` table of every line that was not encoded (unparsable
        lines first, then reactions the graphs cannot hold).

    Raises:
        OSError: the file cannot be read.
    """
    reactions, rows, unreadable = read_reaction_file(path, limit)
    graphs, kept, bad = encode_reactions(reactions, rows, progress=progress)
    unencodable = rejected_frame(bad).assign(file=Path(path).name)
    return graphs, kept, pd.concat([unreadable, unencodable], ignore_index=True)


class LengthBucketSampler(Sampler):
    """Batches of reactions of similar size (less padding), in a fresh order every epoch.

    Each epoch, a permutation (seeded by ``seed`` + epoch) is cut into pools of 50 batches,
    each pool is sorted by size and cut into batches, and the batches are shuffled.

    Args:
        sizes: one size per reaction (e.g. input atoms + 2 × product atoms).
        batch_size: reactions per batch (the last batch of a pool may hold fewer).
        seed: seed of the first epoch's order.
    """

    def __init__(self, sizes: Sequence[int], batch_size: int, seed: int) -> None:
        self.sizes, self.batch_size, self.seed, self.epoch = list(sizes), batch_size, seed, 0

    def __len__(self) -> int:
        return -(-len(self.sizes) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.sizes), generator=generator).tolist()
        pool = 50 * self.batch_size
        batches = []
        for start in range(0, len(order), pool):
            part = sorted(order[start : start + pool], key=self.sizes.__getitem__)
            batches += [part[i : i + self.batch_size] for i in range(0, len(part), self.batch_size)]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index]


def reaction_loader(
    items: Sequence[ReactionGraphs],
    vocabulary: TokenVocabulary,
    max_distance: int,
    batch_size: int,
    shuffle: bool = False,
    num_workers: int = 0,
    seed: int = 0,
) -> DataLoader:
    """A DataLoader of :class:`chemgraph.batches.reaction.ReactionBatch` (collated in the
    workers).

    Args:
        items: reactions as graphs (with products, for training and validation).
        vocabulary: the token vocabulary of the model.
        max_distance: the encoder's distance buckets (``GRATTranslatorConfig.max_distance``).
        batch_size: reactions per batch.
        shuffle: batches of similar size in a fresh order each epoch
            (:class:`LengthBucketSampler`); False = input order.
        num_workers: DataLoader worker processes.
        seed: seed of the shuffled order.
    """
    collate = functools.partial(reaction_batch, vocabulary=vocabulary, max_distance=max_distance)
    if shuffle:
        sizes = [item.num_input_atoms + 2 * item.product.num_atoms for item in items]
        batching = {"batch_sampler": LengthBucketSampler(sizes, batch_size, seed)}
    else:
        batching = {"batch_size": batch_size}
    return DataLoader(
        items, collate_fn=collate, num_workers=num_workers,
        pin_memory=torch.cuda.is_available(), persistent_workers=num_workers > 0, **batching,
    )  # fmt: skip
