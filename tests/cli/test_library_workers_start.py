"""``start_library_workers``: the featurization workers' server starts before a library job's
imports only when the job will featurize a file locally."""

from __future__ import annotations

import argparse

import pytest

import chemgraph.library.workers as workers
from chemgraph.cli.common import start_library_workers


@pytest.mark.parametrize(
    ("is_folder", "scheduler", "started"),
    [(False, None, 1), (True, None, 0), (False, "tcp://127.0.0.1:8786", 0)],
)
def test_started_for_a_local_featurization_only(
    tmp_path, monkeypatch, is_folder, scheduler, started
):
    calls = []
    monkeypatch.setattr(workers, "start_worker_server", lambda: calls.append(1))
    source = tmp_path / ("featurized" if is_folder else "library.smi")
    source.mkdir() if is_folder else source.write_text("CCO\n")
    start_library_workers(argparse.Namespace(input=str(source), dask_scheduler=scheduler))
    assert len(calls) == started
