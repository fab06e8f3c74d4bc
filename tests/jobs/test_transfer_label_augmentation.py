"""The ``label_augmentation`` strategy of ``chemgraph transfer`` end to end: it fine-tunes the
transductive strategy's pretrained models (pretrained once), is ranked with the others on the
validation molecules, and ``chemgraph predict`` scores new molecules with its checkpoints from
their low-fidelity columns, refusing a record without one (its own error) and an input without
the column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from chemgraph.cli.main import main
from chemgraph.jobs.predict import predict_table

LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"
LOW = ["cheap_logp", "cheap_mr"]
TARGETS = ["fine_logp", "fine_mr"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """transductive and label_augmentation, 2 seeds, one joint model of both targets (so the
    model reads 2 low-fidelity columns), a tiny ESA and tiny epochs, one process."""
    folder = tmp_path_factory.mktemp("label_augmentation")
    config = folder / "settings.yaml"
    tiny_esa = {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2}
    config.write_text(
        yaml.safe_dump(
            {"training": {"model_options": tiny_esa, "joint_targets": True,
                          "early_stopping_patience": 3, "progress": False}}
        )
    )  # fmt: skip
    status = main([
        "transfer", "--config", str(config), "--data", str(LABELS), "--id-column", "id",
        "--low-fidelity-columns", ",".join(LOW), "--high-fidelity-columns", ",".join(TARGETS),
        "--model", "esa", "--strategies", "transductive,label_augmentation", "--seeds", "2",
        "--pretrain-epochs", "2", "--finetune-max-epochs", "3", "--batch-size", "16",
        "--workers", "1", "--split-fractions", "0.5,0.25,0.25", "--out", str(folder / "run"),
    ])  # fmt: skip
    assert status == 0
    return folder / "run"


def _checkpoints(run: Path) -> list[Path]:
    return [run / "checkpoints" / f"label_augmentation_seed{seed}" / "best.ckpt" for seed in (0, 1)]


def _library(path: Path, ids: pd.Series, **changes) -> Path:
    table = pd.read_csv(LABELS).set_index("id").loc[ids, ["smiles", *LOW]].reset_index()
    for column, values in changes.items():
        table[column] = np.asarray(values)
    table.to_csv(path, index=False)
    return path


def test_it_fine_tunes_the_transductive_pretraining_and_is_ranked_on_validation(run):
    runs = pd.read_csv(run / "runs.csv")
    augmented = runs[runs.strategy == "label_augmentation"].set_index(["seed", "target"])
    transductive = runs[runs.strategy == "transductive"].set_index(["seed", "target"])
    assert len(augmented) == 4 and (augmented["pretrain_seconds"] == 0).all()  # reused
    assert (augmented["pretrain_epochs"] == transductive["pretrain_epochs"]).all()
    selection = pd.read_csv(run / "selection.csv")
    rows = selection[selection.key == "label_augmentation"]
    assert sorted(rows.target) == TARGETS and (rows.setting == "transductive").all()
    assert (rows.model == "Trans., label augmentation, mean of 2 seeds").all()
    # its validation RMSE is that of its seeds' mean validation prediction: ranked as the others
    assert np.isfinite(rows.val_rmse).all()
    table = (run / "table.md").read_text()
    assert "Trans., label augmentation" in table
    stored = torch.load(_checkpoints(run)[0], map_location="cpu", weights_only=True)
    augmentation = stored["hyper_parameters"]["label_augmentation"]
    assert augmentation["low_fidelity_columns"] == LOW and len(augmentation["std"]) == 2
    assert "delta_learning" not in stored  # not a Δ-learning model: the labels themselves
    assert any(k.startswith("model.encoder.") for k in stored["state_dict"])


def test_predict_gives_the_runs_predictions_and_refuses_per_record_a_missing_value(run, tmp_path):
    expected = pd.read_csv(run / "predictions_unlabelled.csv")
    expected = expected[expected.strategy == "label_augmentation"].reset_index(drop=True)
    assert len(expected) == 16
    complete = predict_table(
        _checkpoints(run), _library(tmp_path / "all.csv", expected["id"]),
        tmp_path / "all_out.csv", progress=False,
    )  # fmt: skip
    assert (complete.predicted, complete.failed) == (16, 0)
    scored = pd.read_csv(tmp_path / "all_out.csv")
    for target in TARGETS:
        for suffix in ("_pred", "_std"):
            np.testing.assert_allclose(
                scored[target + suffix], expected[target + suffix], rtol=1e-5, atol=1e-5
            )
    values = pd.read_csv(LABELS).set_index("id").loc[expected["id"], "cheap_mr"].to_numpy(copy=True)
    values[5] = np.nan
    gap = predict_table(
        _checkpoints(run), _library(tmp_path / "gap.csv", expected["id"], cheap_mr=values),
        tmp_path / "gap_out.csv", progress=False,
    )  # fmt: skip
    assert (gap.predicted, gap.failed) == (15, 1)
    with_gap = pd.read_csv(tmp_path / "gap_out.csv")
    assert with_gap["error"][5] == (
        "no low-fidelity value in cheap_mr: this transductive model reads the molecule's own value"
    )
    assert with_gap["error"].drop(index=5).isna().all()
    assert with_gap.loc[5, ["fine_logp_pred", "fine_mr_pred", "fine_mr_std"]].isna().all()
    np.testing.assert_allclose(
        with_gap["fine_mr_pred"].drop(index=5), scored["fine_mr_pred"].drop(index=5), atol=1e-6
    )  # the other molecules of its batch are not touched
    library = _library(tmp_path / "no_mr.csv", expected["id"])
    pd.read_csv(library).drop(columns="cheap_mr").to_csv(library, index=False)
    with pytest.raises(ValueError, match=r"no label column \['cheap_mr'\].*label-augmented model"):
        predict_table(_checkpoints(run), library, tmp_path / "out.csv", progress=False)
    assert not (tmp_path / "out.csv").exists()


def test_fingerprint_refuses_a_label_augmented_model(run, tmp_path):
    from chemgraph.errors import ConfigError
    from chemgraph.jobs.fingerprint import fingerprint_table

    library = tmp_path / "new.smi"
    library.write_text("CCO\nc1ccccc1\n")
    with pytest.raises(ConfigError, match=r"label-augmented model .* \['cheap_logp', 'cheap_mr'\]"):
        fingerprint_table(_checkpoints(run)[0], library, tmp_path / "out.parquet", progress=False)


def test_a_chain_waits_for_the_pretraining_it_shares_rather_than_repeating_it():
    from collections import deque

    from chemgraph.transfer.chains import Chain
    from chemgraph.transfer.pool import _next_chain

    transductive = Chain("transductive", 1, (1,), ("fine_mr",), False)
    augmented = Chain("label_augmentation", 1, (1,), ("fine_mr",), False)
    other = Chain("inductive", 1, (1,), ("fine_mr",), False)
    assert augmented.key == transductive.key != other.key
    pretraining = {transductive.key}  # a busy worker is pretraining it
    assert _next_chain(deque([(7, augmented)]), pretraining, {}) is None  # wait
    pending = deque([(7, augmented), (8, other)])
    assert _next_chain(pending, pretraining, {}) == (8, other) and list(pending) == [(7, augmented)]
    assert _next_chain(pending, pretraining, {transductive.key: "model"}) == (7, augmented)
    assert _next_chain(deque([(7, augmented)]), pretraining, None) == (7, augmented)  # no cache
