"""The output folder of a library job: shard parts, manifest, resume, duplicate ids, counts.

``chemgraph featurize``'s folder is described in :mod:`chemgraph.jobs.featurize`, ``chemgraph
qc``'s in :mod:`chemgraph.jobs.qc`; both keep a ``manifest.json``, a ``parts/shard-NNNNN.csv``
of each shard's rejected records and a ``parts/shard-NNNNN.json`` of its counts, written last
(:func:`finish_shard`: the shard is complete). :func:`featurize_shard` computes one shard of
``featurize`` (:mod:`~chemgraph.library.records`) and writes its files;
:func:`completed_shard` tells ``--resume`` whether a shard is complete; :func:`prepare_output`
checks and starts the folder (:func:`chemgraph._output.resumable_folder`);
:func:`finish_output` concatenates ``rejected.csv`` and writes the complete manifest with the
counts (:func:`shard_counts`); :func:`summary_lines` are the end-of-run summary's lines of
those counts; :class:`DuplicateIds` finds ids used by more than one record.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from chemgraph._files import (
    atomic_path,
    write_parquet_atomically,
    write_text_atomically,
)
from chemgraph._output import resumable_folder
from chemgraph.data.readers import REJECTED_COLUMNS, Record
from chemgraph.featurize import RadiusGraphFeaturizer, get_preset
from chemgraph.featurize.descriptors import parse_descriptors
from chemgraph.featurize.fingerprints import parse_fingerprint
from chemgraph.graphs.arrays import GraphArrays
from chemgraph.graphs.molecule import mols_to_graph_arrays
from chemgraph.graphs.shards import save_shard_arrays, shard_rows
from chemgraph.library.records import (
    BLANK_RECORD,
    FeaturizeOptions,
    Steps,
    Structure,
    features_table,
    featurize_record,
    process_records,
    reason_kind,
)

__all__ = [
    "DuplicateIds",
    "ShardSummary",
    "completed_shard",
    "concatenate_rejected",
    "featurize_shard",
    "finish_output",
    "finish_shard",
    "mark_interrupted",
    "prepare_output",
    "read_manifest",
    "rejected_csv",
    "shard_counts",
    "shard_name",
    "summary_lines",
    "write_manifest",
]

_DUPLICATE_EXAMPLES = 5
_KEY_BLOCK = 1 << 16  # records compared at a time with the repeated keys of DuplicateIds


@dataclass
class ShardSummary:
    """Counts of one shard (``parts/shard-NNNNN.json``): ``read`` records with content, of
    which ``featurized`` (or labelled) and ``rejected`` (counts by reason kind), and ``blank``
    blank ones, neither featurized nor rejected: ``read == featurized + sum(rejected)``."""

    shard: int
    read: int = 0
    blank: int = 0
    featurized: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


def rejected_csv(rows: list[tuple]) -> str:
    """A shard's rejected part: one CSV line ``row,id,input,reason`` per record, no header."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(rows)
    return buffer.getvalue()


def shard_name(shard: int) -> str:
    return f"shard-{shard:05d}"


def featurize_shard(
    shard: int,
    records: list[Record],
    options: FeaturizeOptions,
    output: str,
    skip: Mapping[int, str] | None = None,
    on_step: Callable[[int, str], None] | None = None,
) -> ShardSummary:
    """Featurize one shard of records and write its files (a pure function of its inputs).

    Writes ``graphs/``, ``features/`` and ``parts/`` files of shard ``shard`` under ``output``;
    the ``parts/<shard>.json`` summary is written last and marks the shard complete.

    Args:
        shard: shard number (names the files).
        records: the shard's records, in input order.
        options: what to compute.
        output: the output folder (its ``graphs``, ``features``, ``parts`` folders exist).
        skip: ``{row: reason}`` of records to reject without processing them (records that
            timed out or crashed a worker in an earlier attempt).
        on_step: called as ``on_step(position, step)`` when record ``records[position]`` enters
            a step of :data:`~chemgraph.library.records.STEPS`, and with ``position == -1`` for
            the shard-level phases.

    Returns:
        The shard's counts. Bad records never raise: they are listed in the shard's rejected
        part with RDKit's reason (or ``"<step> failed: <exception>"`` for an unexpected error
        in a step).
    """
    torch.set_num_threads(1)
    out = Path(output)
    name = shard_name(shard)
    fingerprints = [parse_fingerprint(spec) for spec in options.fingerprints]
    descriptors = parse_descriptors(options.descriptors) if options.descriptors else None
    steps = Steps(on_step)

    def compute(record: Record, steps: Steps) -> Any:
        return featurize_record(record, options, fingerprints, descriptors, steps)

    done, rejected = process_records(records, compute, steps, skip or {})
    kept_records = [record for record, _ in done]
    results = [result for _, result in done]
    steps("graphs")
    graphs = None
    if options.graphs is not None:
        graphs = mols_to_graph_arrays(
            [r.graph_mol for r in results],
            get_preset(options.graphs),
            with_positions=options.conformers > 0,
        )
    elif options.radius_graphs is not None:
        graphs = _radius_graph_arrays([r.structure for r in results], options.radius_graphs)
    if graphs is not None:
        rows = torch.tensor([r.row for r in kept_records], dtype=torch.int64)
        save_shard_arrays(out / "graphs" / f"{name}.bin", graphs, rows)
    steps("write")
    table = features_table(kept_records, results, options)
    write_parquet_atomically(table, out / "features" / f"{name}.parquet")
    return finish_shard(out, shard, records, len(kept_records), rejected, reason_kind)


def _radius_graph_arrays(
    structures: list[Structure], featurizer: RadiusGraphFeaturizer
) -> GraphArrays:
    """The radius graphs of ``structures`` as ``chemgraph transfer --geometry`` builds them
    (:func:`chemgraph.graphs.atoms_to_radius_graph` without the Gaussian distance features,
    which the model's collate adds per batch), batched; imports DGL (only this kind of shard
    does)."""
    from chemgraph._dgl import dgl
    from chemgraph.graphs.radius import atoms_to_radius_graph

    if not structures:  # a shard without survivors
        none = torch.zeros(0, dtype=torch.int64)
        return GraphArrays(none, none, none, none, {}, {})
    graphs = [
        atoms_to_radius_graph(s.numbers, s.positions, featurizer, edge_features=False)
        for s in structures
    ]
    return GraphArrays.of_graph(dgl.batch(graphs))


def finish_shard(
    out: Path,
    shard: int,
    records: list[Record],
    done: int,
    rejected: list[tuple],
    kind: Callable[[str], str],
) -> ShardSummary:
    """Write a shard's rejected part ``parts/shard-NNNNN.csv`` (:func:`rejected_csv`) and then
    its counts ``parts/shard-NNNNN.json``, which mark the shard complete: a job writes its own
    files of the shard first. A blank record is counted once, in ``blank``: its row of the part
    (:data:`~chemgraph.library.records.BLANK_RECORD`, so that the parts give every record a
    row) is not a reject, and :func:`concatenate_rejected` leaves it out of ``rejected.csv``.

    Args:
        out: the output folder (its ``parts`` folder exists).
        shard: the shard's number.
        records: the shard's records.
        done: records featurized (or labelled).
        rejected: the rejected rows (``row, id, input, reason``).
        kind: the category of a reason in the counts (:func:`~chemgraph.library.records.
            reason_kind`, or a job's own that extends it).

    Returns:
        The shard's counts.
    """
    name = shard_name(shard)
    write_text_atomically(rejected_csv(rejected), out / "parts" / f"{name}.csv")
    blank = {record.row for record in records if record.kind == "blank"}
    summary = ShardSummary(
        shard=shard,
        read=len(records) - len(blank),
        blank=len(blank),
        featurized=done,
        rejected=dict(sorted(Counter(kind(r[3]) for r in rejected if r[0] not in blank).items())),
    )
    write_text_atomically(
        json.dumps(asdict(summary), sort_keys=True), out / "parts" / f"{name}.json"
    )
    return summary


def completed_shard(out: Path, shard: int, options: FeaturizeOptions) -> ShardSummary | str | None:
    """The summary of a complete shard; ``None`` when the shard was not finished; a reason
    (``str``) when its summary says finished but a file of it is missing or damaged (a
    truncated or foreign graph shard, a features table of another length), so that
    ``--resume`` featurizes it again instead of keeping it."""
    name = shard_name(shard)
    path = out / "parts" / f"{name}.json"
    if not path.exists():
        return None
    try:
        summary = ShardSummary(**json.loads(path.read_text()))
        rows = pq.read_table(out / "features" / f"{name}.parquet", columns=["row"])["row"]
        if len(rows) != summary.featurized:
            raise ValueError(
                f"features/{name}.parquet has {len(rows)} rows, not {summary.featurized}"
            )
        if options.graph_featurizer is not None:
            graph_rows = shard_rows(out / "graphs" / f"{name}.bin")
            if graph_rows.tolist() != rows.to_pylist():
                raise ValueError(f"graphs/{name}.bin holds the graphs of other records")
        (out / "parts" / f"{name}.csv").stat()
    except (OSError, TypeError, ValueError, pa.ArrowException) as error:
        return f"shard {shard} is damaged ({error}); featurizing it again"
    return summary


class DuplicateIds:
    """Finds ids used by more than one record, with 16 bytes of memory per record: the
    BLAKE2b-128 digest of each id, indexed by row (rows are consecutive from 0). The report
    needs about 9 bytes more per record for a moment (a sorted copy of the digests' first
    halves and a flag each; 97 before issue 46), and a little more per record whose id may be
    repeated."""

    def __init__(self) -> None:
        self._digests = bytearray()

    def add(self, records: list[Record]) -> None:
        for record in records:
            self._digests += hashlib.blake2b(
                record.id.encode("utf-8", "surrogatepass"), digest_size=16
            ).digest()

    @property
    def nbytes(self) -> int:
        """Bytes held: 16 per record added."""
        return len(self._digests)

    def report(self, out: Path, shard_size: int) -> dict[str, Any]:
        """``{"records": n, "ids": k, "examples": [{"id": ..., "rows": [...]}, ...]}``: ``n``
        records reuse an id of an earlier record, ``k`` ids are used more than once; the first
        five such ids in file order, with their first five rows.

        The records whose digest's first 8 bytes (``uint64``) occur more than once are found
        by sorting those alone; only they are then compared on their whole digests (two ids
        that share the first half of their digest are told apart)."""
        digests = np.frombuffer(self._digests, dtype=[("key", "<u8"), ("rest", "<u8")])
        keys = np.sort(digests["key"])
        repeated_keys = np.unique(keys[1:][keys[1:] == keys[:-1]])
        del keys
        rows = np.concatenate(
            [
                np.flatnonzero(np.isin(digests["key"][start : start + _KEY_BLOCK], repeated_keys))
                + start
                for start in range(0, len(digests), _KEY_BLOCK)
            ]
            or [np.zeros(0, np.int64)]
        )
        _, first, inverse, counts = np.unique(
            digests[rows], return_index=True, return_inverse=True, return_counts=True
        )
        repeated = np.flatnonzero(counts > 1)
        repeated = repeated[np.argsort(first[repeated])][:_DUPLICATE_EXAMPLES]
        examples = [
            rows[inverse.reshape(-1) == group][:_DUPLICATE_EXAMPLES].tolist() for group in repeated
        ]
        ids = _ids_of_rows(out, shard_size, {r[0] for r in examples})
        return {
            "records": int((counts - 1).sum()),
            "ids": int((counts > 1).sum()),
            "examples": [{"id": ids[r[0]], "rows": r} for r in examples],
        }


def _ids_of_rows(out: Path, shard_size: int, rows: set[int]) -> dict[int, str]:
    """The id written for each of ``rows``, read back from the shards' features and rejected
    parts (every record is in one of them)."""
    found: dict[int, str] = {}
    for shard in sorted({row // shard_size for row in rows}):
        name = shard_name(shard)
        # ParquetFile, not pq.read_table, which imports pandas (start-up time: benchmarks/README.md)
        with pq.ParquetFile(out / "features" / f"{name}.parquet") as features:
            table = features.read(columns=["row", "id"])
        pairs = list(zip(table["row"].to_pylist(), table["id"].to_pylist()))
        with open(out / "parts" / f"{name}.csv", encoding="utf-8", newline="") as handle:
            pairs += [(int(line[0]), line[1]) for line in csv.reader(handle)]
        found.update((row, identifier) for row, identifier in pairs if row in rows)
    return found


def shard_counts(shards: list[ShardSummary], done: str = "featurized") -> dict[str, Any]:
    """The run's counts of its shards' summaries: ``read``, ``blank``, ``done`` (the records
    featurized, or labelled), ``rejected``, ``rejected_by_reason`` (sorted by category) and
    ``shards``; ``read == done + rejected`` (a blank record is counted once, in ``blank``)."""
    rejected: Counter[str] = Counter()
    for summary in shards:
        rejected.update(summary.rejected)
    return {
        "read": sum(s.read for s in shards),
        "blank": sum(s.blank for s in shards),
        done: sum(s.featurized for s in shards),
        "rejected": sum(rejected.values()),
        "rejected_by_reason": dict(sorted(rejected.items())),
        "shards": len(shards),
    }


def finish_output(
    manifest: dict[str, Any],
    shards: list[ShardSummary],
    out: Path,
    done: str = "featurized",
    **counts: Any,
) -> dict[str, Any]:
    """Write ``rejected.csv`` and the complete manifest; return the manifest.

    Args:
        manifest: the run's manifest, given its ``counts`` (:func:`shard_counts` of ``shards``
            under ``done``, and ``counts``, e.g. ``duplicate_ids``) and ``status`` here.
        shards: the summaries of every shard, in shard order.
        out: the output folder.
        done: the name of the count of records done (``"featurized"``, ``"labelled"``).
    """
    concatenate_rejected(out, [s.shard for s in shards])
    manifest["counts"] = {**shard_counts(shards, done), **counts}
    manifest["status"] = "complete"
    write_manifest(manifest, out)
    return manifest


def mark_interrupted(manifest: dict[str, Any], out: Path) -> int:
    """Record an interrupted run (the manifest's status ``"interrupted"``); returns the complete
    shards in ``out``."""
    write_manifest({**manifest, "status": "interrupted"}, out)
    return len(list((out / "parts").glob("shard-*.json")))


def summary_lines(counts: dict[str, Any], done: str = "featurized") -> list[str]:
    """The end-of-run summary of :func:`shard_counts`: read, blank, ``done``, rejected, then the
    rejected records by category, one line each."""
    lines = [f"{name:<12}{counts[name]:>10,}" for name in ("read", "blank", done, "rejected")]
    lines += [f"  {kind:<28}{n:>8,}" for kind, n in counts["rejected_by_reason"].items()]
    return lines


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a complete ``chemgraph featurize`` output folder, for its readers
    (``chemgraph train --data FOLDER``).

    Raises:
        ValueError: ``folder`` holds no ``manifest.json``, or its run is not complete.
    """
    folder = Path(folder)
    if not (folder / "manifest.json").is_file():
        raise ValueError(
            f"{folder} is a folder but not a chemgraph featurize output (no manifest.json)"
        )
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("status") != "complete":
        raise ValueError(
            f"{folder} is not a complete featurization (status {manifest.get('status')!r}); "
            "finish it with the same chemgraph featurize command and --resume"
        )
    return manifest


def write_manifest(manifest: dict[str, Any], out: Path) -> None:
    write_text_atomically(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", out / "manifest.json"
    )


def prepare_output(
    out: Path,
    manifest: dict[str, Any],
    identity: tuple[str, ...],
    folders: tuple[str, ...],
    resume: bool,
    overwrite: tuple[str, ...] | None = None,
) -> None:
    """Open the output folder (:func:`chemgraph._output.resumable_folder`: new or empty, or with
    ``resume`` the earlier run whose manifest has the same values of the ``identity`` keys),
    create its ``folders`` and write the manifest with the status ``"running"``.

    Args:
        out: the output folder.
        manifest: the run's manifest.
        identity: the keys of ``manifest`` that must match to resume.
        folders: the folders the job writes into, created here.
        resume: continue the earlier run in ``out``.
        overwrite: start again (``--overwrite``): the names of everything the job writes in
            ``out``, removed first; any other file is left. None: a folder that holds a run
            or other files is refused.

    Raises:
        ValueError: see :func:`chemgraph._output.resumable_folder` (``resume`` with
            ``overwrite`` among its refusals).
    """
    kept = {key: manifest[key] for key in identity}
    resumable_folder(
        out, "manifest.json", kept, resume=resume, option="--output",
        restart_option="--overwrite", overwrite=overwrite,
    )  # fmt: skip
    for folder in folders:
        (out / folder).mkdir(parents=True, exist_ok=True)
    write_manifest({**manifest, "status": "running"}, out)


def concatenate_rejected(out: Path, shards: list[int]) -> None:
    """Write ``out/rejected.csv``: the header :data:`~chemgraph.data.readers.REJECTED_COLUMNS`
    and the rejected parts ``parts/shard-NNNNN.csv`` of ``shards``, in that order, without the
    blank records (counted as blank, not rejected: :func:`finish_shard`)."""
    temporary = atomic_path(out / "rejected.csv")
    with open(temporary, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(REJECTED_COLUMNS)
        for shard in shards:
            path = out / "parts" / f"{shard_name(shard)}.csv"
            with open(path, encoding="utf-8", newline="") as part:
                writer.writerows(row for row in csv.reader(part) if row[3] != BLANK_RECORD)
    os.replace(temporary, out / "rejected.csv")
