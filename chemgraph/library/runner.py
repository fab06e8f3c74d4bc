"""Every shard of a library job run once: :func:`run_shards` (``featurize``, ``qc``).

The input is read in shards of records (:func:`chemgraph.data.readers.iter_record_chunks`); a
shard that an earlier run completed (``--resume``) is kept, every other one is handed to the
job's runner (:func:`chemgraph.library.workers.run_local` or
:func:`~chemgraph.library.workers.run_dask`), and the records finished are counted by the job's
progress (:class:`~chemgraph.library.progress.LibraryProgress`: a bar on a terminal, else plain
lines).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from tqdm.auto import tqdm

from chemgraph.data.readers import Record, iter_record_chunks, library_format
from chemgraph.errors import ConfigError
from chemgraph.library.output import ShardSummary
from chemgraph.library.progress import LibraryProgress, input_records

__all__ = ["Runner", "check_restart", "check_run", "run_shards", "say"]

Runner = Callable[
    [Iterator[tuple[int, list[Record]]], Callable[[str], None], Callable[[int], None]],
    Iterator[ShardSummary],
]
"""``runner(shards, say, advance)``: run ``(shard, records)`` pairs, yield their summaries as
they complete, report notices to ``say`` and ``advance(n)`` as ``n`` more records finish."""


def check_run(
    input_path: str | Path,
    output: str | Path,
    workers: int,
    shard_size: int,
    record_timeout: float | None,
) -> tuple[Path, Path]:
    """The input file and the output folder of a library job, its arguments checked before
    anything is read or written.

    Raises:
        ValueError: ``workers`` or ``shard_size`` below 1, ``record_timeout`` not above 0 (None
            is no limit), an input of an unsupported format
            (:func:`chemgraph.data.readers.library_format`).
        FileNotFoundError: no such input.
    """
    if shard_size < 1 or workers < 1:
        raise ValueError(f"shard_size and workers must be >= 1, got {shard_size}, {workers}")
    if record_timeout is not None and not record_timeout > 0:
        raise ValueError(f"record_timeout must be > 0 seconds or None, got {record_timeout}")
    input_path = Path(input_path)
    library_format(input_path)
    if not input_path.is_file():
        raise FileNotFoundError(f"input {input_path} does not exist")
    return input_path, Path(output)


def check_restart(resume: bool, overwrite: bool) -> None:
    """Refuse ``resume`` with ``overwrite`` (``--resume``, ``--overwrite``) before anything is
    read or written.

    Raises:
        ConfigError: both are set.
    """
    if resume and overwrite:
        raise ConfigError(
            "--resume continues the run in the output folder and --overwrite starts it again: "
            "give one of them"
        )


def say(command: str, message: str) -> None:
    """A notice on stderr, ``"<command>: <message>"``, above the progress bar."""
    tqdm.write(f"{command}: {message}", file=sys.stderr)


def run_shards(
    input_path: Path,
    shard_size: int,
    runner: Runner,
    *,
    command: str,
    progress: bool,
    smiles_column: str | None,
    id_column: str | None,
    label_columns: tuple[str, ...] = (),
    completed: Callable[[int], ShardSummary | str | None] | None = None,
    on_records: Callable[[list[Record]], None] | None = None,
) -> list[ShardSummary]:
    """Run every shard of ``input_path`` that is not already complete.

    Args:
        input_path: the library file.
        shard_size: records per shard.
        runner: runs the shards to compute (:data:`Runner`).
        command: the command's name, on the progress and its notices.
        progress: show progress (:class:`~chemgraph.library.progress.LibraryProgress`: a
            bar on stderr when it is a terminal, else plain lines).
        smiles_column, id_column, label_columns: the reader's columns.
        completed: ``completed(shard)`` when resuming: the summary of a complete shard (kept),
            None (computed), or why its files are damaged (said, and computed again); None when
            not resuming.
        on_records: called with every shard's records, complete ones included, in order.

    Returns:
        The summaries of every shard, in shard order.
    """
    summaries: list[ShardSummary] = []
    count = functools.partial(input_records, input_path, smiles_column, id_column, label_columns)
    bar = LibraryProgress(command, progress, count=count)

    def notice(message: str) -> None:
        say(command, message)

    def todo() -> Iterator[tuple[int, list[Record]]]:
        chunks = iter_record_chunks(input_path, shard_size, smiles_column, id_column, label_columns)
        for shard, records in enumerate(chunks):
            if on_records is not None:
                on_records(records)
            done = completed(shard) if completed is not None else None
            if isinstance(done, str):
                notice(done)
                done = None
            if done is not None:
                summaries.append(done)
                bar.advance(done.read + done.blank, resumed=True)
            else:
                yield shard, records

    results = runner(todo(), notice, bar.advance)
    try:
        with contextlib.closing(results):
            summaries.extend(results)
    finally:
        bar.close()
    return sorted(summaries, key=lambda s: s.shard)
