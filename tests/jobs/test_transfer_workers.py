"""The chains of a transfer run in worker processes: the serial run's digits, a worker's error
raised with its chain, SIGTERM stops the workers."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import psutil
import pytest
import torch

from chemgraph.data.multi_fidelity import MultiFidelityData, high_fidelity_split
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.graphs import atoms_to_radius_graph
from chemgraph.train.module import PropertyPredictionModule
from chemgraph.transfer import pool
from chemgraph.transfer.config import TransferConfig
from chemgraph.transfer.run import run_transfer

FEATURIZER = RadiusGraphFeaturizer(cutoff=3.0, num_basis=8)
TINY = dict(
    pretrain_epochs=2, finetune_max_epochs=3, batch_size=8, learning_rate=1e-3,
    pretrain_val_fraction=0.2, featurizer=FEATURIZER.to_dict(), progress=False,
    model_options={"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2},
)  # fmt: skip


def _data(num_molecules: int = 40, num_high: int = 24) -> MultiFidelityData:
    """Random 3-6 atom point clouds of H/C/O with a geometric low-fidelity label and a scaled
    high-fidelity copy for the first ``num_high`` molecules."""
    rng = np.random.default_rng(0)
    graphs, low = [], []
    for _ in range(num_molecules):
        n = int(rng.integers(3, 7))
        z = rng.choice([1, 6, 8], size=n)
        positions = rng.uniform(0, 2.5, size=(n, 3))
        graphs.append(atoms_to_radius_graph(z, positions, FEATURIZER))
        distance = np.linalg.norm(positions[:, None] - positions[None], axis=-1).sum() / n
        low.append([-6.0 - 0.3 * distance - 0.1 * (z == 8).sum(), 1.0 + 0.2 * distance])
    low = np.asarray(low, dtype=np.float32)
    high = np.full_like(low, np.nan)
    high[:num_high] = 1.2 * low[:num_high] - 0.5
    return MultiFidelityData(graphs, np.arange(num_molecules), low, high, ["homo", "lumo"])


# the transfer strategies of one seed with Δ-learning: 4 chains (one per target), what the pool
# sends to the workers and back (data once, chains, cached pretrained models, corrections)
SMALL_RUN = dict(**TINY, seeds=1, strategies=["inductive", "transductive"], delta_learning=True)


@pytest.fixture
def two_cpus(monkeypatch):
    """Two worker processes even on a one-CPU machine (the cap would make the run serial)."""
    monkeypatch.setattr(pool, "available_cpus", lambda: 2)


def test_two_workers_give_the_serial_runs_digits(tmp_path, two_cpus, caplog):
    data = _data()
    split = high_fidelity_split(data, seed=0, fractions=(0.5, 0.25, 0.25))
    ids = [f"m{i}" for i in range(len(data))]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers' thread count: the same reductions, the same digits
    try:
        serial = run_transfer(
            data, split, TransferConfig(**SMALL_RUN, workers=1), tmp_path / "serial",
            unlabelled_ids=ids,
        )[0]  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    cache: dict = {}
    with caplog.at_level("INFO", logger="chemgraph"):
        parallel = run_transfer(
            data, split, TransferConfig(**SMALL_RUN, workers=2), tmp_path / "parallel",
            pretrained_cache=cache, unlabelled_ids=ids,
        )[0]  # fmt: skip
    assert "4 chains in 2 worker processes" in caplog.text
    assert len(serial) == 2 * 2  # strategies x targets, one chain per target
    metrics = ["strategy", "seed", "target", "rmse", "mae", "val_rmse", "finetune_epochs"]
    pd.testing.assert_frame_equal(serial[metrics], parallel[metrics])
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "serial" / "runs.csv")[metrics],
        pd.read_csv(tmp_path / "parallel" / "runs.csv")[metrics],
    )
    for name in ("predictions.csv", "predictions_unlabelled.csv"):
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "serial" / name), pd.read_csv(tmp_path / "parallel" / name)
        )
    unlabelled = pd.read_csv(tmp_path / "parallel" / "predictions_unlabelled.csv")
    assert len(unlabelled) == 2 * 16 and unlabelled["homo_std"].isna().all()  # one seed
    # the pretrained models came back from the workers, for a later run on the same pools
    assert sorted(cache) == [
        (strategy, 0, (t,)) for strategy in ("inductive", "transductive") for t in (0, 1)
    ]
    assert all(isinstance(entry[0], PropertyPredictionModule) for entry in cache.values())


def test_a_worker_error_is_raised_with_its_chain(tmp_path, two_cpus):
    data = _data()
    for graph in data.graphs:
        del graph.ndata["x"]  # no atom features: the first training batch fails
    split = high_fidelity_split(data, seed=0, fractions=(0.5, 0.25, 0.25))
    config = TransferConfig(
        **TINY, seeds=2, strategies=["high_fidelity_only"], joint_targets=True, workers=2
    )
    with pytest.raises(KeyError, match="x") as raised:
        run_transfer(data, split, config, tmp_path)
    assert any(
        "in the worker process training high_fidelity_only seed" in note
        for note in raised.value.__notes__
    )
    assert "Traceback" in str(raised.value.__cause__)  # the worker's own traceback


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_transfer_workers import TINY, _data
from chemgraph.data.multi_fidelity import high_fidelity_split
from chemgraph.transfer.config import TransferConfig
from chemgraph.transfer.run import run_transfer
import chemgraph.transfer.pool as pool
pool.available_cpus = lambda: 2
data = _data()
split = high_fidelity_split(data, seed=0, fractions=(0.5, 0.25, 0.25))
config = TransferConfig(**{{**TINY, "pretrain_epochs": 100000}}, seeds=2, workers=2)
try:
    run_transfer(data, split, config, {out!r})
except KeyboardInterrupt as stop:
    print("stopped:", stop, flush=True)
    sys.exit(130)
"""


def test_sigterm_stops_the_workers_and_leaves_none_behind(tmp_path):
    from pathlib import Path

    code = textwrap.dedent(SCRIPT.format(tests=str(Path(__file__).parent), out=str(tmp_path)))
    job = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    parent = psutil.Process(job.pid)
    deadline = time.monotonic() + 240
    workers: list[psutil.Process] = []
    while len(workers) < 2 and time.monotonic() < deadline and job.poll() is None:
        workers = [p for p in parent.children() if "spawn" in " ".join(p.cmdline())]
        time.sleep(0.5)
    assert len(workers) == 2, job.communicate()
    time.sleep(2)  # the workers are importing or training
    job.send_signal(signal.SIGTERM)
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 130, stderr
    assert "stopped: stopped by SIGTERM" in stdout
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive
