"""Shared fixtures of the job tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from chemgraph.cli.main import main

TRANSFER_LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"


@pytest.fixture(scope="session")
def delta_learning_run(tmp_path_factory) -> Callable[..., Path]:
    """A function that runs ``chemgraph transfer --delta-learning`` (plus its extra arguments)
    on ``tests/fixtures/transfer/labels.csv`` and returns the run folder: inductive and
    transductive, 2 seeds, one joint model of both targets (so each correction has 2
    low-fidelity inputs), a tiny ESA and tiny epochs."""

    def run(name: str, *extra: str) -> Path:
        folder = tmp_path_factory.mktemp(name)
        config = folder / "settings.yaml"
        tiny_esa = {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2}
        config.write_text(
            yaml.safe_dump(
                {"training": {"model_options": tiny_esa, "joint_targets": True,
                              "early_stopping_patience": 3, "progress": False}}
            )
        )  # fmt: skip
        status = main([
            "transfer", "--config", str(config), "--data", str(TRANSFER_LABELS),
            "--id-column", "id", "--low-fidelity-columns", "cheap_logp,cheap_mr",
            "--high-fidelity-columns", "fine_logp,fine_mr", "--model", "esa",
            "--strategies", "inductive,transductive", "--seeds", "2", "--pretrain-epochs", "2",
            "--finetune-max-epochs", "3", "--batch-size", "16", "--workers", "1",
            "--split-fractions", "0.5,0.25,0.25", "--delta-learning", *extra,
            "--out", str(folder / "run"),
        ])  # fmt: skip
        assert status == 0
        return folder / "run"

    return run
