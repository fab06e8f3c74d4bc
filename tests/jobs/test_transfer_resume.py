"""``chemgraph transfer --resume``: a run stopped by SIGTERM keeps its finished chains and
continues the interrupted one from its ``last.ckpt``, ending with the uninterrupted run's
outputs (one torch thread)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"
SETTINGS = {
    "training": {
        "model": "esa", "strategies": ["transductive"], "seeds": 2, "pretrain_epochs": 20,
        "early_stopping_patience": 20, "finetune_max_epochs": 4, "batch_size": 8,
        "workers": 1, "progress": False,
        "model_options": {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP",
                          "num_seeds": 2},
    },
}  # fmt: skip
SECONDS = ["pretrain_seconds", "finetune_seconds"]


def _command(out: Path, settings: Path, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "chemgraph", "transfer", "-i", str(LABELS), "--id-column", "id",
        "--low-fidelity-columns", "cheap_logp", "--high-fidelity-columns", "fine_logp",
        "--split-fractions", "0.5,0.25,0.25", "--config", str(settings), "-o", str(out), *more,
    ]  # fmt: skip


def test_transfer_stopped_by_sigterm_resumes_to_the_uninterrupted_outputs(tmp_path):
    """Two chains (transductive, seeds 0 and 1): SIGTERM once the second is pretraining (its
    ``last.ckpt`` written) stops the run with 143 and a message naming --resume; the resumed
    run reads the first chain back, continues the second from its ``last.ckpt`` and writes the
    uninterrupted run's runs.csv (but the seconds), predictions, table and checkpoints. Other
    settings and a finished run are refused."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump(SETTINGS))
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    whole = tmp_path / "whole"
    subprocess.run(_command(whole, settings), check=True, env=environment, capture_output=True)

    stopped = tmp_path / "stopped"
    second = stopped / "chains" / "transductive_seed1_fine_logp"
    process = subprocess.Popen(
        _command(stopped, settings), env=environment, stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not (second / "pretrain" / "last.ckpt").is_file() and process.poll() is None:
        assert time.monotonic() < deadline, "no last.ckpt of the second chain within 5 minutes"
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr
    assert "1 of 2 chains finished" in stderr and "--resume to continue" in stderr
    first = stopped / "chains" / "transductive_seed0_fine_logp" / "result.pt"
    kept = first.stat().st_mtime_ns
    epoch = torch.load(second / "pretrain" / "last.ckpt", weights_only=True)["epoch"]
    assert epoch < 19 and not (stopped / "table.md").exists()

    refused = subprocess.run(
        _command(stopped, settings, "--resume", "--split-seed", "3"), env=environment,
        capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode == 2 and "settings differ" in refused.stderr, refused.stderr
    assert "split_seed" in refused.stderr

    resumed = subprocess.run(
        _command(stopped, settings, "--resume"), env=environment, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    log = resumed.stdout + resumed.stderr
    assert "transductive seed 0 fine_logp: trained before the interruption" in log
    assert f"continuing from {second / 'pretrain' / 'last.ckpt'}" in log
    assert first.stat().st_mtime_ns == kept  # read back, not trained again

    runs = [pd.read_csv(folder / "runs.csv") for folder in (whole, stopped)]
    pd.testing.assert_frame_equal(runs[1].drop(columns=SECONDS), runs[0].drop(columns=SECONDS))
    for name in ("predictions.csv", "predictions_unlabelled.csv", "table.csv",
                 "learning_curves.csv", "selection.csv"):  # fmt: skip
        pd.testing.assert_frame_equal(
            pd.read_csv(stopped / name), pd.read_csv(whole / name), obj=name
        )
    for stem in ("transductive_seed0_fine_logp", "transductive_seed1_fine_logp"):
        best = [
            torch.load(folder / "checkpoints" / stem / "best.ckpt", weights_only=True)
            for folder in (whole, stopped)
        ]
        for name, tensor in best[0]["state_dict"].items():
            torch.testing.assert_close(best[1]["state_dict"][name], tensor, rtol=0, atol=0)
    # the chains' state is cleared as they finish: only their results stay
    assert sorted(p.name for p in (stopped / "chains").rglob("*") if p.is_file()) == [
        "result.pt",
        "result.pt",
    ]
    assert not (stopped / "checkpoints" / "transductive_seed1_fine_logp" / "last.ckpt").exists()
    again = subprocess.run(
        _command(stopped, settings, "--resume"), env=environment, capture_output=True, text=True
    )
    assert again.returncode == 2 and "finished (table.md)" in again.stderr
