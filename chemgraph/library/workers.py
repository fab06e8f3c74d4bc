"""The worker processes of a library job: a local pool with heartbeats, or Dask.

``chemgraph featurize`` (:func:`chemgraph.library.output.featurize_shard`) and ``chemgraph qc``
(:func:`chemgraph.jobs.qc.label_shard`) run their shards here.

Slow records. Local runs featurize shards in worker processes (``forkserver``, else ``spawn``)
that publish, in shared memory, which record and which step (parse, standardize, conformers,
canonical SMILES, fingerprints, descriptors) they are working on. The parent names a record
that has spent 10 s (or half the limit) in one step, and when it exceeds ``record_timeout`` it
kills the worker — the only way to stop C++ code such as RDKit's ``Ipc`` that holds the GIL —
starts a new one and computes the shard again with that record rejected as ``"timeout: <step>
(over N s)"``. A worker that dies on a record (segfault, out-of-memory kill) is handled the same
way (``"crash: <step> (...)"``). Whether a record hits the limit depends on the machine, so the
default limit (60 s per step) is far above what any normal molecule needs. Dask runs do not
enforce the limit.

The forkserver preloads this module (and so :mod:`chemgraph.library.output` and
:mod:`chemgraph.library.records`), which imports neither DGL nor pandas.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from chemgraph._dask import run_on_dask
from chemgraph._processes import WorkerProcess, raise_remote, serve, worker_pool
from chemgraph.data.readers import Record
from chemgraph.library.output import ShardSummary, featurize_shard
from chemgraph.library.records import STEP_CODE, STEPS, FeaturizeOptions

__all__ = ["run_dask", "run_local", "start_worker_server", "worker_context"]

_POLL_SECONDS = 0.1
_NOTICE_SECONDS = 10.0


def _worker_main(connection: Any, heartbeat: Any) -> None:
    """A worker process (:class:`chemgraph._processes.WorkerProcess`): run the shards sent on
    ``connection`` (:func:`chemgraph._processes.serve`); a task is ``(shard_function,
    arguments)``, run as ``shard_function(*arguments, on_step=...)``.

    ``heartbeat`` (shared ``int64[3]``) holds ``[tick, position, step code]``: the tick is
    incremented after every step change, so the parent can time each record's steps.
    """

    def beat(position: int, step: str) -> None:
        heartbeat[1] = position
        heartbeat[2] = STEP_CODE[step]
        heartbeat[0] += 1

    serve(
        connection,
        lambda task: task[0](*task[1], on_step=beat),
        lambda task: f"in the worker running shard {task[1][0]}",
    )


def start_worker_server() -> None:
    """Start the server the local worker processes are forked from (:func:`worker_context`) now,
    so that its import of this module (torch, RDKit: seconds) runs beside the caller's own
    imports on a second core instead of after them; a later pool uses it. Nothing without
    ``forkserver`` (``spawn`` starts each worker afresh)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        worker_context()


def worker_context() -> multiprocessing.context.BaseContext:
    """How a library job's worker processes start (its featurizing workers, and the scoring
    workers of ``predict`` and ``fingerprint``, :class:`chemgraph.library.scoring.LibraryRun`):
    ``forkserver`` (workers forked from a server that has imported this module: a restart
    after a timeout is cheap) where available, else ``spawn``; never plain ``fork`` of a parent
    that may run threads."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        _start_forkserver()
        return context
    return multiprocessing.get_context("spawn")


def _start_forkserver() -> None:
    """Start the forkserver (if it is not running) with ``PYTHONSAFEPATH=1`` and SIGINT ignored.

    SIGINT is ignored in this process while the server is spawned (a few milliseconds), so that
    the server starts with it ignored (an ignored signal stays ignored across ``exec``, and
    Python then installs no ``KeyboardInterrupt`` handler) and so does every worker forked
    from it: a Ctrl-C while the server preloads this module (torch, RDKit: seconds) or while a
    worker starts no longer prints their ``KeyboardInterrupt`` tracebacks. This process's
    handler is back before it waits for the server, and it stops the workers. (Blocking the
    signal instead, as CPython's ``resource_tracker`` does, is not inherited through the
    ``vfork`` path of ``multiprocessing.util.spawnv_passfds`` on CPython 3.11.)

    The server is ``python -c ...``, which puts the current folder first on its import path and
    ignores the parent's (CPython passes ``sys_path`` but its ``forkserver.main`` does not
    apply it): run from a folder holding another ``chemgraph`` checkout, the server would
    preload that code and every worker forked from it would featurize with it."""
    saved = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
        if saved is None:
            del os.environ["PYTHONSAFEPATH"]
        else:
            os.environ["PYTHONSAFEPATH"] = saved


@dataclass
class _Task:
    """A shard to featurize; ``skip`` grows as records time out or crash a worker, and
    ``counted`` records were reported as finished (a retried shard does not count them again)."""

    shard: int
    records: list[Record]
    skip: dict[int, str] = field(default_factory=dict)
    counted: int = 0

    def finished(self, done: int, advance: Callable[[int], None]) -> None:
        """Report to ``advance`` the records newly finished, ``done`` of ``records`` now."""
        if done > self.counted:
            advance(done - self.counted)
            self.counted = done


class _Worker(WorkerProcess):
    """One worker process, its pipe and heartbeat, and the task it is working on."""

    def __init__(self, context: multiprocessing.context.BaseContext) -> None:
        self.heartbeat = context.RawArray("q", 3)
        self.heartbeat[1] = -1
        super().__init__(context, _worker_main, self.heartbeat)
        self.task: _Task | None = None
        self.tick, self.since, self.noticed = -1, time.monotonic(), False

    def assign(
        self, task: _Task, options: Any, output: Path, shard_function: Callable[..., Any]
    ) -> None:
        # the worker waits for the task, so this does not race its own writes: without it, the
        # previous shard's last phase would count the new shard as finished
        self.heartbeat[1], self.heartbeat[2] = -1, STEP_CODE["start"]
        self.task = task
        arguments = (task.shard, task.records, options, str(output), task.skip)
        self.send((shard_function, arguments))

    def state(self) -> tuple[int, str, float]:
        """``(position, step, seconds in that step)``, timed by the parent's clock."""
        tick, position, code = self.heartbeat[:]
        now = time.monotonic()
        if tick != self.tick:
            self.tick, self.since, self.noticed = tick, now, False
        return position, STEPS[code], now - self.since


def _died(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"the worker was killed by {signal.Signals(-exitcode).name}"
    return f"the worker exited with code {exitcode}"


def run_local(
    chunks: Iterator[tuple[int, list[Record]]],
    options: Any,
    out: Path,
    workers: int,
    record_timeout: float | None,
    say: Callable[[str], None],
    advance: Callable[[int], None],
    shard_function: Callable[..., Any] = featurize_shard,
) -> Iterator[Any]:
    """Featurize shards in ``workers`` processes, one shard each at a time, watching every
    record's steps (see the module docstring); yields summaries as shards complete and calls
    ``advance(n)`` as ``n`` more records are finished (every record once).

    ``shard_function`` is what a worker runs for a shard: :func:`~chemgraph.library.output.
    featurize_shard` (``options`` a :class:`FeaturizeOptions`), or another job's
    function of the same form, ``shard_function(shard, records, options, output, skip,
    on_step=...)``, that rejects the rows of ``skip`` with their reasons, reports its steps
    (:data:`~chemgraph.library.records.STEPS`) to ``on_step`` and returns the shard's
    summary (``chemgraph qc``: :func:`chemgraph.jobs.qc.label_shard`); it must be importable
    by the workers (a module-level function)."""
    context = worker_context()
    retries: deque[_Task] = deque()
    notice = _NOTICE_SECONDS if record_timeout is None else min(_NOTICE_SECONDS, record_timeout / 2)
    more = True

    def next_task() -> _Task | None:
        nonlocal more
        if retries:
            return retries.popleft()
        chunk = next(chunks, None) if more else None
        more = chunk is not None
        return _Task(*chunk) if chunk is not None else None

    # an error, an interrupt or an abandoned generator kills every worker at once
    with worker_pool() as pool:
        pool += [_Worker(context) for _ in range(workers)]
        while True:
            for worker in pool:
                if worker.task is None and (task := next_task()) is not None:
                    worker.assign(task, options, out, shard_function)
            busy = [w for w in pool if w.task is not None]
            if not busy:
                break
            wait([w.connection for w in busy] + [w.process.sentinel for w in busy], _POLL_SECONDS)
            for index, worker in enumerate(pool):
                task = worker.task
                if task is None:
                    continue
                message = worker.receive()
                if message is not None:
                    kind, payload = message
                    if kind == "error":
                        raise_remote(payload)
                    task.finished(len(task.records), advance)
                    worker.task = None
                    yield payload
                    continue
                position, step, seconds = worker.state()
                alive = worker.process.is_alive()
                if position < 0:
                    if step in ("graphs", "write"):  # past the last record
                        task.finished(len(task.records), advance)
                    if alive:
                        continue
                    raise RuntimeError(
                        f"shard {task.shard}: {_died(worker.process.exitcode)} during {step}"
                    )
                task.finished(position, advance)  # the records before ``position``
                record = task.records[position]
                where = f"shard {task.shard}, row {record.row} (id {record.id!r})"
                if not alive:
                    reason = f"crash: {step} ({_died(worker.process.exitcode)})"
                elif record_timeout is not None and seconds > record_timeout:
                    reason = f"timeout: {step} (over {record_timeout:g} s)"
                else:
                    if seconds >= notice and not worker.noticed:
                        worker.noticed = True
                        limit = f" (limit {record_timeout:g} s)" if record_timeout else ""
                        say(f"{where}: {step} still running after {seconds:.0f} s{limit}")
                    continue
                worker.kill()
                say(f"{where}: rejected, {reason}; computing the shard again without it")
                task.skip[record.row] = reason
                retries.append(task)
                pool[index] = _Worker(context)


def run_dask(
    chunks: Iterator[tuple[int, list[Record]]],
    options: FeaturizeOptions,
    out: Path,
    dask_scheduler: str,
    advance: Callable[[int], None],
) -> Iterator[ShardSummary]:
    """Featurize shards as dask tasks (:func:`chemgraph._dask.run_on_dask`: at most ``2 ×``
    threads in flight, so memory stays flat), yielding their summaries as they finish;
    ``advance(n)`` is called with the records of each shard as it completes.

    Raises:
        MissingDependencyError: dask.distributed is not installed.
        chemgraph._dask.WorkersDied: every worker that ran a shard died (the shard is named
            with its input rows; the finished shards are kept for ``--resume``).
    """
    rows: dict[int, str] = {}

    def calls() -> Iterator[tuple[int, list[Record], FeaturizeOptions, str]]:
        for shard, records in chunks:
            rows[shard] = f"input rows {records[0].row}-{records[-1].row}"
            yield shard, records, options, str(out)

    tasks = run_on_dask(featurize_shard, calls(), dask_scheduler, "featurize-shard", rows.get)
    for summary in tasks:
        advance(summary.read + summary.blank)
        yield summary
