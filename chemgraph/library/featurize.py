"""A library file into graph shards and feature tables: :func:`featurize_library`.

What ``chemgraph featurize`` runs (:mod:`chemgraph.jobs.featurize`, where the output folder is
described), and what ``chemgraph predict`` and ``chemgraph fingerprint`` run on a file input
(:class:`chemgraph.library.scoring.LibraryRun`): the records are read in shards
(:mod:`chemgraph.data.readers`), each shard is featurized in a worker process
(:mod:`~chemgraph.library.workers`: heartbeats, per-record time limits, crashed workers
replaced; or a dask task) by :func:`chemgraph.library.output.featurize_shard`, complete shards
are kept on ``resume``, and the folder is finished with ``rejected.csv``, the counts and the
duplicate ids (:mod:`~chemgraph.library.output`).

Progress. ``progress`` counts the records finished as the workers finish them (from their
heartbeat), and — once a background thread has counted the input's records with the same
reader — the total and an estimate of the time left: a bar on a terminal, else (a log file,
where a bar is one line of carriage-return-joined text) a plain line every 30 s
(:mod:`~chemgraph.library.progress`).

Interrupts. SIGINT (Ctrl-C) and SIGTERM make :func:`featurize_library` kill its workers at once
(they ignore SIGINT themselves, and die with their parent on Linux), mark the manifest
``"interrupted"`` and raise :class:`FeaturizeInterrupted`; complete shards are kept, stale
temporary files are removed on ``resume``, and the resumed output equals an uninterrupted run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chemgraph
from chemgraph._files import file_digest
from chemgraph._interrupts import ShardsInterrupted, interrupts_raise
from chemgraph._output import claimed_folder
from chemgraph.data.readers import Record, iter_record_chunks
from chemgraph.library.output import (
    DuplicateIds,
    ShardSummary,
    completed_shard,
    finish_output,
    mark_interrupted,
    prepare_output,
)
from chemgraph.library.records import FeaturizeOptions, check_input_format
from chemgraph.library.runner import check_restart, check_run, run_shards, say
from chemgraph.library.workers import run_dask, run_local

__all__ = ["OUTPUTS", "FeaturizeInterrupted", "featurize_library"]

#: What must match for ``resume`` to continue a run (the manifest's keys).
_IDENTITY = ("input_sha256", "options", "graph_featurizer", "shard_size", "chemgraph_version")

#: Everything :func:`featurize_library` writes in its output folder: what ``overwrite`` removes.
OUTPUTS = ("manifest.json", "graphs", "features", "parts", "rejected.csv")


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
    overwrite: bool = False,
) -> dict[str, Any]:
    """Featurize a library file into ``output`` (the layout: :mod:`chemgraph.jobs.featurize`).

    Args:
        input_path: ``.smi``, ``.csv``, ``.tsv``, ``.parquet`` or ``.sdf`` (``.xyz`` and
            ``.extxyz`` for radius graphs), optionally gzipped; read streaming,
            ``shard_size`` records at a time.
        output: output folder; must be new or empty unless ``resume`` or ``overwrite``.
        options: what to compute.
        workers: local worker processes (at least one: shards never run in this process).
            They are started with ``forkserver`` (``spawn`` where there is none), so a script
            that calls this function needs the usual ``if __name__ == "__main__":`` guard.
        shard_size: records per shard.
        resume: continue an interrupted run in ``output`` (same input and options): complete
            shards are kept, the others are computed again.
        dask_scheduler: address of a dask.distributed scheduler; shards then run as dask tasks
            (``output`` must be on a file system the workers share; no per-record limit).
        progress: show progress: records finished (as the workers finish them), the rate, and
            once the input's records are counted (by a background thread) the total and the
            time left; a bar on stderr when it is a terminal, else a plain ``logging`` INFO
            line every 30 s (:mod:`~chemgraph.library.progress`).
        record_timeout: the most seconds one record may spend in one step (parse, standardize,
            conformers, canonical SMILES, fingerprints, descriptors); a record over it is
            rejected as ``"timeout: <step> (over N s)"``. None: no limit. Records that take
            long are named on stderr after 10 s (or half the limit) either way.
        overwrite: start again in an ``output`` that holds an earlier run or other files:
            what this function writes there (:data:`OUTPUTS`) is removed once the input and its
            columns have been checked; any other file is left.

    Returns:
        The manifest (also written to ``output/manifest.json``): ``counts`` holds ``read``,
        ``blank``, ``featurized``, ``rejected`` (``read == featurized + rejected``; a blank
        record is counted in ``blank`` only),
        ``rejected_by_reason``, ``shards`` and ``duplicate_ids``.

    Raises:
        ConfigError: ``resume`` with ``overwrite``.
        ValueError: bad options, an input the options cannot read
            (:func:`~chemgraph.library.records.check_input_format`: SMILES for radius graphs,
            an XYZ file for bond graphs), an input with no records, or (without ``overwrite``)
            an ``output`` that holds a different run, any run without ``resume``, or other
            files.
        FeaturizeInterrupted: SIGINT or SIGTERM (main thread only); the workers are stopped
            and the manifest's status is ``"interrupted"``.
    """
    check_restart(resume, overwrite)
    input_path, out = check_run(input_path, output, workers, shard_size, record_timeout)
    check_input_format(input_path, options.radius_graphs is not None)
    with interrupts_raise(FeaturizeInterrupted), claimed_folder(out, "--output"):
        manifest: dict[str, Any] = {
            "chemgraph_version": chemgraph.__version__,
            "input": input_path.name,
            "input_sha256": file_digest(input_path),
            "options": options.to_dict(),
            # the preset's full description (e.g. its stereo encoding), not only its name
            "graph_featurizer": options.graph_featurizer,
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
        prepare_output(
            out, manifest, _IDENTITY, ("graphs", "features", "parts"), resume,
            OUTPUTS if overwrite else None,
        )  # fmt: skip
        try:
            summaries, duplicate_ids = _featurize_shards(
                input_path, out, options, workers, shard_size, resume, dask_scheduler,
                progress, record_timeout,
            )  # fmt: skip
            return finish_output(manifest, summaries, out, duplicate_ids=duplicate_ids)
        except FeaturizeInterrupted as stop:
            done = mark_interrupted(manifest, out)
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
    duplicates = DuplicateIds()

    def runner(
        shards: Iterator[tuple[int, list[Record]]],
        notice: Callable[[str], None],
        advance: Callable[[int], None],
    ) -> Iterator[ShardSummary]:
        if dask_scheduler is not None:
            return run_dask(shards, options, out, dask_scheduler, advance)
        return run_local(shards, options, out, workers, record_timeout, notice, advance)

    summaries = run_shards(
        input_path, shard_size, runner, command="featurize", progress=progress,
        smiles_column=options.smiles_column, id_column=options.id_column,
        label_columns=options.label_columns,
        completed=(lambda shard: completed_shard(out, shard, options)) if resume else None,
        on_records=duplicates.add,
    )  # fmt: skip
    if dask_scheduler is None and workers > len(summaries):
        say(
            "featurize",
            f"note: {workers} workers but the input made {len(summaries)} shard(s) of up to "
            f"{shard_size} records, one worker each, so {workers - len(summaries)} had nothing "
            "to do; a smaller --shard-size spreads a small library over the workers (the shard "
            "size is never chosen from --workers, so that the output does not depend on them)",
        )
    return summaries, duplicates.report(out, shard_size)
