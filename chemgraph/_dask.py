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

from chemgraph.errors import MissingDependencyError

__all__ = ["run_on_dask"]

Result = TypeVar("Result")


def run_on_dask(
    task: Callable[..., Result],
    calls: Iterable[tuple[Any, ...]],
    dask_scheduler: str,
    name: str,
) -> Iterator[Result]:
    """Run ``task(*arguments)`` as one dask.distributed task per ``arguments`` of ``calls`` and
    yield what each returns, as the tasks finish (not in the order of ``calls``).

    At most ``2 ×`` the cluster's threads are in flight, and ``calls`` is read only as tasks
    finish, so that a lazy ``calls`` of large arguments (``featurize``'s shards of records)
    keeps the memory flat. A task whose worker dies is run again by dask on another worker
    (``distributed.scheduler.allowed-failures`` times, then :class:`distributed.KilledWorker`
    is raised). Closing the generator early (``contextlib.closing``) closes the client, and the
    scheduler cancels the tasks not done.

    Args:
        task: picklable; it runs on the cluster's workers, which need the files it reads and
            writes (a file system they share).
        calls: the arguments of each task; the first is the shard number, which names the task.
        dask_scheduler: the scheduler's address (``tcp://host:8786``).
        name: the first part of the task keys, ``"{name}-{shard:05d}-{run}"`` (``run`` is new
            for every call, so that two runs never share a key; the dashboard shows the name).

    Raises:
        MissingDependencyError: dask.distributed is not installed.
        Exception: what a task raised.
    """
    try:
        from distributed import Client, as_completed
    except ImportError as error:
        raise MissingDependencyError(
            "--dask-scheduler needs dask.distributed: pip install 'chemgraph[dask]'"
        ) from error
    client = Client(dask_scheduler)
    try:
        window = 2 * max(1, sum(client.nthreads().values()))
        run = uuid.uuid4().hex
        running = as_completed()
        for arguments in calls:
            key = f"{name}-{arguments[0]:05d}-{run}"
            running.add(client.submit(task, *arguments, key=key))
            if running.count() >= window:
                yield next(running).result()
        for future in running:
            yield future.result()
    finally:
        client.close()  # releases the futures not done: the scheduler cancels their tasks
