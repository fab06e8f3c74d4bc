"""The progress of a library job (``featurize``, ``qc``, ``predict``, ``fingerprint``): records
finished, out of the input's records once known, as a bar on a terminal and as plain lines in a
log file.

On a terminal (stderr a TTY) a tqdm bar on stderr. Otherwise (``nohup``, SLURM, CI: a bar in a
log file is one line of ``\\r``-joined text) a ``logging`` INFO line of the
``chemgraph.library.progress`` logger at most every :data:`LINE_SECONDS` seconds, written when
records finish, as ``chemgraph train`` logs its steps (``chemgraph`` prints INFO lines on
stdout)::

    featurize: 120,000 of 1,000,000 records (12%), 410 records/s, elapsed 4:53, left 35:46

The rate counts the records finished in this run since the job started (not those an earlier
run completed, ``--resume``); the time left is the records left at that rate.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from chemgraph.data.readers import iter_record_chunks

__all__ = ["LINE_SECONDS", "LibraryProgress", "input_records", "progress_line"]

log = logging.getLogger(__name__)

LINE_SECONDS = 30.0
"""Seconds between two plain progress lines, at least (read when a progress is made)."""

_COUNT_CHUNK = 10_000  # records per chunk of the input's count


def progress_line(
    description: str, done: int, total: int | None, elapsed: float, rate: float
) -> str:
    """One plain progress line (module docstring); ``rate`` in records per second, ``elapsed``
    in seconds; the time left only with a ``total`` and a positive ``rate``."""
    if total is None:
        line = f"{description}: {done:,} records"
    else:
        line = f"{description}: {done:,} of {total:,} records ({done / max(total, 1):.0%})"
    line += f", {rate:,.0f} records/s, elapsed {tqdm.format_interval(elapsed)}"
    if total is not None and rate > 0:
        line += f", left {tqdm.format_interval(max(total - done, 0) / rate)}"
    return line


def input_records(
    input_path: Path,
    smiles_column: str | None,
    id_column: str | None,
    label_columns: tuple[str, ...],
    stop: threading.Event,
) -> int | None:
    """The records of a library file as the run's own reader counts them
    (:func:`~chemgraph.data.readers.iter_record_chunks`: blank and malformed records count as
    in the manifest); None when ``stop`` is set first or the file cannot be read (the run's
    own reading says why)."""
    total = 0
    try:
        for chunk in iter_record_chunks(
            input_path, _COUNT_CHUNK, smiles_column, id_column, label_columns
        ):
            if stop.is_set():
                return None
            total += len(chunk)
    except (OSError, ValueError):
        return None
    return total


class LibraryProgress:
    """The progress of a library job's records: a bar on a terminal, else plain lines (module
    docstring).

    Args:
        description: the command, which starts the bar's label and every line.
        show: show progress; when False nothing is counted, drawn or logged.
        total: the records of the run, when known.
        count: ``count(stop)`` returns the total (or None); run in a daemon thread while the
            job goes on (:func:`input_records`), when ``total`` is None; it should return early
            once ``stop`` is set (:meth:`close`).
        interval: seconds between two lines, at least; None: :data:`LINE_SECONDS`.
        clock: seconds, for the lines' rate and times (default :func:`time.monotonic`).
    """

    def __init__(
        self,
        description: str,
        show: bool,
        total: int | None = None,
        count: Callable[[threading.Event], int | None] | None = None,
        *,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        terminal = show and sys.stderr.isatty()
        self.lines = show and not terminal
        self.bar = tqdm(
            total=total, unit="mol", unit_scale=True, disable=not terminal, desc=description
        )
        self.description, self.total = description, total
        self.interval = LINE_SECONDS if interval is None else interval
        self.clock = clock
        self.start = self.last = clock()
        self.done = self.resumed = 0
        self._stop = threading.Event()
        if show and total is None and count is not None:
            threading.Thread(target=self._count, args=(count,), daemon=True).start()

    def _count(self, count: Callable[[threading.Event], int | None]) -> None:
        self.total = count(self._stop)

    def advance(self, records: int, resumed: bool = False) -> None:
        """``records`` more are finished (called in the main thread only); ``resumed``: an
        earlier run finished them (counted, not in the rate)."""
        if self.bar.total is None and self.total is not None:
            self.bar.total = self.total
        self.bar.update(records)
        self.done += records
        if resumed:
            self.resumed += records
            return
        now = self.clock()
        if self.lines and now - self.last >= self.interval:
            self.last = now
            elapsed = now - self.start
            rate = (self.done - self.resumed) / elapsed if elapsed > 0 else 0.0
            log.info(progress_line(self.description, self.done, self.total, elapsed, rate))

    def close(self) -> None:
        self._stop.set()
        self.bar.close()
