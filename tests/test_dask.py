"""chemgraph._dask.run_on_dask: the one runner of shard tasks on a dask.distributed cluster
(featurize's and predict's ``--dask-scheduler``; their tests check the outputs it makes)."""

import builtins
import contextlib

import pytest

from chemgraph._dask import run_on_dask
from chemgraph.errors import MissingDependencyError


def _shard_and_key(shard, factor):
    from distributed import get_worker

    return shard * factor, str(get_worker().get_current_task())


def test_every_call_runs_once_under_its_shard_name_and_the_calls_are_read_as_tasks_finish():
    distributed = pytest.importorskip("distributed")
    drawn = []

    def calls():
        for shard in range(7):
            drawn.append(shard)
            yield shard, 10

    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        results = run_on_dask(_shard_and_key, calls(), cluster.scheduler_address, "test-shard")
        with contextlib.closing(results):
            first = next(results)
            assert len(drawn) == 2  # the window: 2 × the cluster's one thread
            rest = list(results)
        assert list(run_on_dask(_shard_and_key, [], cluster.scheduler_address, "none")) == []
    values = sorted(value for value, _ in [first, *rest])
    assert values == [0, 10, 20, 30, 40, 50, 60]
    keys = {value // 10: key for value, key in [first, *rest]}
    assert all(keys[shard].startswith(f"test-shard-{shard:05d}-") for shard in range(7))
    assert len({key.rsplit("-", 1)[1] for key in keys.values()}) == 1  # one run, one suffix


def test_without_dask_distributed_the_error_says_what_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed":
            raise ImportError("No module named 'distributed'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    with pytest.raises(MissingDependencyError, match=r"pip install 'chemgraph\[dask\]'"):
        next(run_on_dask(_shard_and_key, [(0, 1)], "tcp://127.0.0.1:1", "test-shard"))


def _dies_on_shard_3(shard):
    import os

    if shard == 3:
        os._exit(1)  # as the nanny's kill of a worker past its memory limit
    return shard


def test_a_shard_whose_workers_die_is_named_with_its_records_and_memory_as_the_cause():
    """dask's KilledWorker traceback named only a task key; the error names the shard and what
    it holds, says memory is the likely cause and that --resume continues (issue 45)."""
    import dask

    from chemgraph._dask import WorkersDied

    distributed = pytest.importorskip("distributed")
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
    ):
        results = run_on_dask(
            _dies_on_shard_3, [(shard,) for shard in range(5)], cluster.scheduler_address,
            "test-shard", describe=lambda shard: f"input rows {shard * 10}-{shard * 10 + 9}",
        )  # fmt: skip
        with pytest.raises(WorkersDied) as died, contextlib.closing(results):
            list(results)
    # the worker (one thread) holds two tasks (the window is 2 x threads): shard 3 running and
    # shard 4 waiting; dask fails both, and which KilledWorker arrives first is not fixed
    shard = died.value.shard
    assert shard in (3, 4)
    message = str(died.value)
    assert message.startswith(
        f"shard {shard} (input rows {shard * 10}-{shard * 10 + 9}): every dask worker that ran "
        "it died (1"
    )
    assert "The likely cause is memory" in message and "--memory-limit" in message
    assert message.endswith("run the same command with --resume to continue")
