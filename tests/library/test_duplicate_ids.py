"""Ids used by more than one record (:class:`chemgraph.library.output.DuplicateIds`): the
counts and examples, exact even where two ids share half their digest, and the memory of the
main process of a library job: 16 bytes per record, and its report about 9 more per record for
a moment (issue 46: it took 97 more)."""

from __future__ import annotations

import hashlib
import tracemalloc

from chemgraph.data.readers import Record
from chemgraph.library import output
from chemgraph.library.output import DuplicateIds


def _records(ids: list[str], start: int = 0) -> list[Record]:
    return [Record(start + row, identifier, "C") for row, identifier in enumerate(ids)]


def _report(ids: list[str], monkeypatch) -> dict:
    """The report of ``ids``, its examples' ids read from the rows (as the output's files)."""
    monkeypatch.setattr(
        output, "_ids_of_rows", lambda out, shard_size, rows: {row: ids[row] for row in rows}
    )
    duplicates = DuplicateIds()
    duplicates.add(_records(ids[:4]))
    duplicates.add(_records(ids[4:], 4))  # one shard after another
    return duplicates.report(None, 4)


def test_counts_and_the_first_five_repeated_ids_in_file_order(monkeypatch):
    ids = ["a", "b", "a", "c", "d", "b", "a", "e", "c", "f", "g", "f", "h", "g", "i", "h", "j"]
    report = _report(ids, monkeypatch)
    # a: rows 0, 2, 6; b: 1, 5; c: 3, 8; f: 9, 11; g: 10, 13; h: 12, 15
    assert report["records"] == 2 + 1 + 1 + 1 + 1 + 1
    assert report["ids"] == 6
    assert report["examples"] == [
        {"id": "a", "rows": [0, 2, 6]},
        {"id": "b", "rows": [1, 5]},
        {"id": "c", "rows": [3, 8]},
        {"id": "f", "rows": [9, 11]},
        {"id": "g", "rows": [10, 13]},
    ]


def test_no_repeated_id_and_no_records(monkeypatch):
    assert _report(["x", "y", "z"], monkeypatch) == {"records": 0, "ids": 0, "examples": []}
    assert _report([], monkeypatch) == {"records": 0, "ids": 0, "examples": []}


def test_ids_whose_digests_share_their_first_half_are_told_apart(monkeypatch):
    blake2b = hashlib.blake2b

    def digest(text: str) -> bytes:  # "p" and "q" share their first 8 bytes; "r" does not
        whole = blake2b(text.encode(), digest_size=16).digest()
        return whole if text == "r" else b"\x01" * 8 + whole[8:]

    class Digest:
        def __init__(self, data: bytes, digest_size: int) -> None:
            self.data = data

        def digest(self) -> bytes:
            return digest(self.data.decode())

    monkeypatch.setattr(output.hashlib, "blake2b", Digest)
    report = _report(["p", "q", "r", "q", "p", "s"], monkeypatch)
    assert report["records"] == 2 and report["ids"] == 2  # not 3 records of one id
    assert report["examples"] == [{"id": "p", "rows": [0, 4]}, {"id": "q", "rows": [1, 3]}]


def test_memory_is_16_bytes_per_record_and_the_report_needs_about_9_more(monkeypatch):
    records = 200_000
    monkeypatch.setattr(output, "_ids_of_rows", lambda out, shard_size, rows: {})
    duplicates = DuplicateIds()
    for start in range(0, records, 5_000):
        duplicates.add(_records([f"m{row}" for row in range(start, start + 5_000)], start))
    tracemalloc.start()
    try:
        report = duplicates.report(None, 5_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report == {"records": 0, "ids": 0, "examples": []}
    # numpy's allocations, traced exactly: the sorted keys and a flag per record, and the
    # blocks of records compared with the repeated keys (it was 97 bytes per record)
    assert peak <= 9 * records + 2**21
    assert duplicates.nbytes == 16 * records
