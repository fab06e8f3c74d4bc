"""The one runner of shard tasks on a dask.distributed cluster: ``chemgraph featurize``'s
``--dask-scheduler`` path (:mod:`chemgraph.library.workers`) and ``chemgraph predict``'s
and ``chemgraph fingerprint``'s (:func:`chemgraph.train.inference.run_shard_tasks`).

A bottom module: it imports no chemgraph layer (only :mod:`chemgraph.errors`), no torch, and
dask.distributed only when it runs, so that ``featurize`` and its workers stay free of torch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from chemgraph.errors import ChemgraphError, MissingDependencyError

__all__ = ["WorkersDied", "run_on_dask"]


class WorkersDied(ChemgraphError):
    """A task whose dask workers all died while running it (dask's ``KilledWorker``), said in
    one line: the shard and its records, the likely cause (memory) and that the shards
    finished are kept for ``--resume``.

    Attributes:
        shard: the shard of the task.
    """

    def __init__(self, message: str, shard: int) -> None:
        super().__init__(message)
        self.shard = shard


Result = TypeVar("Result")


def run_on_dask(
    task: Callable[..., Result],
    calls: Iterable[tuple[Any, ...]],
    dask_scheduler: str,
    name: str,
    describe: Callable[[int], str | None] | None = None,
) -> Iterator[Result]:
    """Run ``task(*arguments)`` as one dask.distributed task per ``arguments`` of ``calls`` and
    yield what each returns, as the tasks finish (not in the order of ``calls``).

    At most ``2 ×`` the cluster's threads are in flight, and ``calls`` is read only as tasks
    finish, so that a lazy ``calls`` of large arguments (``featurize``'s shards of records)
    keeps the memory flat. A task whose worker dies is run again by dask on another worker
    (``distributed.scheduler.allowed-failures`` times; then :class:`WorkersDied` is raised in
    dask's ``KilledWorker``'s place). Closing the generator early (``contextlib.closing``)
    closes the client, and the scheduler cancels the tasks not done.

    Args:
        task: picklable; it runs on the cluster's workers, which need the files it reads and
            writes (a file system they share).
        calls: the arguments of each task; the first is the shard number, which names the task.
        dask_scheduler: the scheduler's address (``tcp://host:8786``).
        name: the first part of the task keys, ``"{name}-{shard:05d}-{run}"`` (``run`` is new
            for every call, so that two runs never share a key; the dashboard shows the name).
        describe: what a shard holds, for the message of :class:`WorkersDied` (``"records
            5000-9999 of lib.smi"``); None: the shard's number alone.

    Raises:
        MissingDependencyError: dask.distributed is not installed.
        WorkersDied: every worker that ran a task died (dask's ``KilledWorker``); the tasks
            that finished have written their files, so ``--resume`` continues.
        Exception: what a task raised.
    """
    try:
        from distributed import Client, KilledWorker, as_completed
    except ImportError as error:
        raise MissingDependencyError(
            "--dask-scheduler needs dask.distributed: pip install 'chemgraph[dask]'"
        ) from error
    client = Client(dask_scheduler)
    shards: dict[str, int] = {}
    try:
        window = 2 * max(1, sum(client.nthreads().values()))
        run = uuid.uuid4().hex
        running = as_completed()
        for arguments in calls:
            key = f"{name}-{arguments[0]:05d}-{run}"
            shards[key] = arguments[0]
            running.add(client.submit(task, *arguments, key=key))
            if running.count() >= window:
                yield next(running).result()
        for future in running:
            yield future.result()
    except KilledWorker as error:
        shard = shards.get(str(error.task), -1)
        raise WorkersDied(_died(error, shard, describe), shard) from None
    finally:
        client.close()  # releases the futures not done: the scheduler cancels their tasks


def _died(error: Any, shard: int, describe: Callable[[int], str | None] | None) -> str:
    """The message of :class:`WorkersDied` for dask's ``KilledWorker`` ``error``."""
    held = describe(shard) if describe is not None else None
    what = f"shard {shard}" + (f" ({held})" if held else "")
    worker = getattr(error.last_worker, "address", error.last_worker)
    return (
        f"{what}: every dask worker that ran it died ({error.allowed_failures + 1} of them, the "
        f"last {worker}). The likely cause is memory: a worker's nanny kills it past its memory "
        "limit (see the worker's log), and the shard it was running need not be the one that "
        "used the memory. Give the workers more memory (dask worker --memory-limit) or make the "
        "shards smaller (--shard-size); the shards that finished are kept: run the same "
        "command with --resume to continue"
    )
