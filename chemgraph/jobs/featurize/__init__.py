"""Featurize a compound library into graph shards and feature tables (``chemgraph featurize``).

Output folder::

    manifest.json                 input sha256, options, chemgraph version, counts, status
    graphs/shard-NNNNN.bin        the shard's graphs, compact (chemgraph.graphs.load_shard)
    features/shard-NNNNN.parquet  id, row, canonical SMILES, fingerprints, named descriptors,
                                  label columns (float64; ``chemgraph train --data FOLDER``)
    rejected.csv                  row, id, input, reason (every record that was not featurized)
    parts/shard-NNNNN.json        per-shard counts; written last, it marks the shard complete
    parts/shard-NNNNN.csv         per-shard rejected records (concatenated into rejected.csv)

Every record of the input is accounted for: the manifest's counts satisfy
``read + blank == featurized + rejected`` (``read``: records with content; ``blank``: blank
records, each listed in ``rejected.csv`` as ``"blank record"``), and ids used by more than one
record are counted with examples (``counts["duplicate_ids"]``). ``row`` is the record's 0-based
index in the file as :mod:`chemgraph.data.readers` defines it per format.

Each shard is a pure function of its records and the options, so the output does not depend on
the number of workers or on whether the run was resumed. Every file is written to a temporary
name and renamed. Every file, graph shards included (:mod:`chemgraph.graphs.shards`), is
byte-identical between runs of the same input and options, so a file's sha256 can key a cache.

Progress. On a terminal (never in a log file, where a bar is a line of ``\r``-joined text),
``progress`` shows a bar of the records finished, counted as the workers finish them (from their
heartbeat), and — once a background thread has counted the input's records with the same
reader — the total and an estimate of the time left.

Slow records. Local runs watch every record's steps in their worker processes and reject a
record that exceeds ``record_timeout`` or crashes its worker
(:mod:`~chemgraph.jobs.featurize.workers`).

Interrupts. SIGINT (Ctrl-C) and SIGTERM make :func:`featurize_library` kill its workers at once
(they ignore SIGINT themselves, and die with their parent on Linux), mark the manifest
``"interrupted"`` and raise :class:`FeaturizeInterrupted`; complete shards are kept, stale
temporary files are removed on ``resume``, and the resumed output equals an uninterrupted run.

Modules, by concern: :mod:`~chemgraph.jobs.featurize.records` (one record -> molecule ->
features, the features table, rejection reasons), :mod:`~chemgraph.jobs.featurize.workers`
(the local worker pool with heartbeats and timeouts, the forkserver, Dask) and
:mod:`~chemgraph.jobs.featurize.output` (the folder: shard files, manifest, resume,
``rejected.csv``, duplicate ids); this module runs the job.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

import chemgraph
from chemgraph._files import file_digest
from chemgraph._interrupts import ShardsInterrupted, interrupts_raise
from chemgraph.data.readers import Record, iter_record_chunks, library_format
from chemgraph.featurize import get_preset
from chemgraph.jobs.featurize.output import (
    DuplicateIds,
    ShardSummary,
    completed_shard,
    featurize_shard,
    finish_output,
    prepare_output,
    read_manifest,
    shard_name,
    write_manifest,
)
from chemgraph.jobs.featurize.records import (
    BLANK_RECORD,
    STEPS,
    FeaturizeOptions,
    reason_kind,
)
from chemgraph.jobs.featurize.workers import run_dask, run_local

__all__ = [
    "BLANK_RECORD",
    "FeaturizeInterrupted",
    "FeaturizeOptions",
    "LibraryProgress",
    "STEPS",
    "ShardSummary",
    "featurize_library",
    "featurize_shard",
    "read_manifest",
    "reason_kind",
    "shard_name",
    "summary_table",
]

_COUNT_CHUNK = 10_000  # records per chunk of the progress bar's count


class FeaturizeInterrupted(ShardsInterrupted):
    """SIGINT (Ctrl-C) or SIGTERM stopped :func:`featurize_library`.

    By the time it is raised every worker process has been killed; the complete shards stay in
    ``output`` and ``resume=True`` (``--resume``) continues the run. An
    :class:`~chemgraph._interrupts.Interrupted`, so ``except Exception`` does not swallow it.

    Attributes:
        signum: ``signal.SIGINT`` or ``signal.SIGTERM``.
        output: the output folder, or None when the signal came before it was prepared.
        shards_done: complete shards in ``output``.
    """


def featurize_library(
    input_path: str | Path,
    output: str | Path,
    options: FeaturizeOptions,
    workers: int = 1,
    shard_size: int = 5_000,
    resume: bool = False,
    dask_scheduler: str | None = None,
    progress: bool = True,
    record_timeout: float | None = 60.0,
) -> dict[str, Any]:
    """Featurize a library file into ``output`` (see the module docstring for the layout).

    Args:
        input_path: ``.smi``, ``.csv``, ``.tsv``, ``.parquet`` or ``.sdf``, optionally gzipped;
            read streaming, ``shard_size`` records at a time.
        output: output folder; must be new or empty unless ``resume``.
        options: what to compute.
        workers: local worker processes (at least one: shards never run in this process).
            They are started with ``forkserver`` (``spawn`` where there is none), so a script
            that calls this function needs the usual ``if __name__ == "__main__":`` guard.
        shard_size: records per shard.
        resume: continue an interrupted run in ``output`` (same input and options): complete
            shards are kept, the others are computed again.
        dask_scheduler: address of a dask.distributed scheduler; shards then run as dask tasks
            (``output`` must be on a file system the workers share; no per-record limit).
        progress: show a progress bar on stderr when it is a terminal: records finished (as
            the workers finish them), the rate, and once the input's records are counted (by a
            background thread) the total and the time left.
        record_timeout: the most seconds one record may spend in one step (parse, standardize,
            conformers, canonical SMILES, fingerprints, descriptors); a record over it is
            rejected as ``"timeout: <step> (over N s)"``. None: no limit. Records that take
            long are named on stderr after 10 s (or half the limit) either way.

    Returns:
        The manifest (also written to ``output/manifest.json``): ``counts`` holds ``read``,
        ``blank``, ``featurized``, ``rejected`` (``read + blank == featurized + rejected``),
        ``rejected_by_reason``, ``shards`` and ``duplicate_ids``.

    Raises:
        ValueError: bad options, an input with no records, or an ``output`` that holds a
            different run (or any run, without ``resume``).
        FeaturizeInterrupted: SIGINT or SIGTERM (main thread only); the workers are stopped
            and the manifest's status is ``"interrupted"``.
    """
    if shard_size < 1 or workers < 1:
        raise ValueError(f"shard_size and workers must be >= 1, got {shard_size}, {workers}")
    if record_timeout is not None and not record_timeout > 0:
        raise ValueError(f"record_timeout must be > 0 seconds or None, got {record_timeout}")
    input_path, out = Path(input_path), Path(output)
    library_format(input_path)
    if not input_path.is_file():
        raise FileNotFoundError(f"input {input_path} does not exist")
    with interrupts_raise(FeaturizeInterrupted):
        manifest: dict[str, Any] = {
            "chemgraph_version": chemgraph.__version__,
            "input": input_path.name,
            "input_sha256": file_digest(input_path),
            "options": options.to_dict(),
            # the preset's full description (e.g. its stereo encoding), not only its name
            "graph_featurizer": get_preset(options.graphs).to_dict() if options.graphs else None,
            "shard_size": shard_size,
        }
        first = next(
            iter_record_chunks(
                input_path, 1, options.smiles_column, options.id_column, options.label_columns
            ),
            None,
        )  # checks the columns before anything is written
        if first is None:
            raise ValueError(f"{input_path} holds no records")
        prepare_output(out, manifest, resume)
        try:
            summaries, duplicate_ids = _featurize_shards(
                input_path, out, options, workers, shard_size, resume, dask_scheduler,
                progress, record_timeout,
            )  # fmt: skip
            return finish_output(manifest, summaries, duplicate_ids, out)
        except FeaturizeInterrupted as stop:
            write_manifest({**manifest, "status": "interrupted"}, out)
            done = len(list((out / "parts").glob("shard-*.json")))
            raise FeaturizeInterrupted(stop.signum, out, done) from None


def _featurize_shards(
    input_path: Path,
    out: Path,
    options: FeaturizeOptions,
    workers: int,
    shard_size: int,
    resume: bool,
    dask_scheduler: str | None,
    progress: bool,
    record_timeout: float | None,
) -> tuple[list[ShardSummary], dict[str, Any]]:
    """Run every shard not already complete; ``(summaries in shard order, duplicate ids)``."""
    summaries: list[ShardSummary] = []
    duplicates = DuplicateIds()
    bar = LibraryProgress(
        input_path, options.smiles_column, options.id_column, options.label_columns,
        show=progress and sys.stderr.isatty(), description="featurize",
    )  # fmt: skip

    def say(message: str) -> None:
        tqdm.write(f"featurize: {message}", file=sys.stderr)

    def todo() -> Iterator[tuple[int, list[Record]]]:
        chunks = iter_record_chunks(
            input_path, shard_size, options.smiles_column, options.id_column, options.label_columns
        )
        for shard, records in enumerate(chunks):
            duplicates.add(records)
            done = completed_shard(out, shard, options) if resume else None
            if isinstance(done, str):
                say(done)
                done = None
            if done is not None:
                summaries.append(done)
                bar.advance(done.read + done.blank)
            else:
                yield shard, records

    if dask_scheduler is not None:
        results = run_dask(todo(), options, out, dask_scheduler, bar.advance)
    else:
        results = run_local(todo(), options, out, workers, record_timeout, say, bar.advance)
    try:
        with contextlib.closing(results):
            summaries.extend(results)
    finally:
        bar.close()
    summaries.sort(key=lambda s: s.shard)
    if dask_scheduler is None and workers > len(summaries):
        say(
            f"note: {workers} workers but the input made {len(summaries)} shard(s) of up to "
            f"{shard_size} records, one worker each, so {workers - len(summaries)} had nothing "
            "to do; a smaller --shard-size spreads a small library over the workers (the shard "
            "size is never chosen from --workers, so that the output does not depend on them)"
        )
    return summaries, duplicates.report(out, shard_size)


class LibraryProgress:
    """The bar of a library job (``featurize``, ``qc``): records finished, out of the input's
    records once known.

    Args:
        input_path, smiles_column, id_column, label_columns: the input, whose records a daemon
            thread counts with :func:`~chemgraph.data.readers.iter_record_chunks` (the run's
            own reader, so blank and malformed records count as they do in the manifest) while
            the run goes on.
        show: draw the bar (on stderr); when False nothing is counted or drawn.
        description: the bar's label (the command).
    """

    def __init__(
        self,
        input_path: Path,
        smiles_column: str | None,
        id_column: str | None,
        label_columns: tuple[str, ...],
        show: bool,
        description: str,
    ) -> None:
        self.bar = tqdm(unit="mol", unit_scale=True, disable=not show, desc=description)
        self._total: int | None = None
        self._stop = threading.Event()
        if show:
            arguments = (input_path, smiles_column, id_column, label_columns)
            threading.Thread(target=self._count, args=arguments, daemon=True).start()

    def _count(
        self,
        input_path: Path,
        smiles_column: str | None,
        id_column: str | None,
        label_columns: tuple[str, ...],
    ) -> None:
        total = 0
        try:
            for chunk in iter_record_chunks(
                input_path, _COUNT_CHUNK, smiles_column, id_column, label_columns
            ):
                if self._stop.is_set():
                    return
                total += len(chunk)
        except (OSError, ValueError):  # the run's own reader raises it
            return
        self._total = total

    def advance(self, records: int) -> None:
        """``records`` more are finished (called in the main thread only)."""
        if self.bar.total is None and self._total is not None:
            self.bar.total = self._total
        self.bar.update(records)

    def close(self) -> None:
        self._stop.set()
        self.bar.close()


def summary_table(manifest: dict[str, Any]) -> str:
    """The end-of-run summary: read, blank, featurized, rejected by reason, duplicate ids."""
    counts = manifest["counts"]
    lines = [
        f"read        {counts['read']:>10,}",
        f"blank       {counts['blank']:>10,}",
        f"featurized  {counts['featurized']:>10,}",
        f"rejected    {counts['rejected']:>10,}",
    ]
    lines += [f"  {kind:<28}{n:>8,}" for kind, n in counts["rejected_by_reason"].items()]
    duplicates = counts["duplicate_ids"]
    if duplicates["ids"]:
        examples = ", ".join(
            f"{e['id']!r} (rows {', '.join(map(str, e['rows']))})" for e in duplicates["examples"]
        )
        lines.append(
            f"duplicate ids {duplicates['ids']:,} ({duplicates['records']:,} records reuse an "
            f"earlier record's id), e.g. {examples}"
        )
    return "\n".join(lines)
