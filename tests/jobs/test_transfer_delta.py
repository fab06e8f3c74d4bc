"""Δ-learning checkpoints of ``chemgraph transfer --delta-learning`` scored by ``chemgraph
predict``: the stored correction (checked against the run's own baseline), predict on the
run's unlabelled molecules giving its ``predictions_unlabelled.csv``, the transductive
models' low-fidelity input columns (missing column, empty cell, featurize folder)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.jobs.predict import PredictOptions, predict_table
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.delta import DeltaLearning

LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"
LOW = ["cheap_logp", "cheap_mr"]
TARGETS = ["fine_logp", "fine_mr"]


@pytest.fixture(scope="module")
def run(delta_learning_run) -> Path:
    """``chemgraph transfer --delta-learning``: inductive and transductive, 2 seeds, one joint
    model of both targets (so each correction has 2 low-fidelity inputs), tiny epochs."""
    return delta_learning_run("delta")


def _checkpoints(run: Path, strategy: str) -> list[Path]:
    return [run / "checkpoints" / f"{strategy}_seed{seed}" / "best.ckpt" for seed in (0, 1)]


def _unlabelled(run: Path, strategy: str) -> pd.DataFrame:
    table = pd.read_csv(run / "predictions_unlabelled.csv")
    return table[table.strategy == strategy].reset_index(drop=True)


def _library(path: Path, ids: pd.Series, **changes) -> Path:
    """The molecules ``ids`` of the fixture with their SMILES and low-fidelity labels (a new
    library), with ``changes`` applied to its columns."""
    table = pd.read_csv(LABELS).set_index("id").loc[ids, ["smiles", *LOW]].reset_index()
    for column, values in changes.items():
        table[column] = np.asarray(values)
    table.to_csv(path, index=False)
    return path


def test_the_checkpoints_hold_the_correction_and_load_weights_only(run):
    assert yaml.safe_load((run / "transfer.yaml").read_text())["training"]["delta_learning"]
    for strategy in ("inductive", "transductive"):
        for path in _checkpoints(run, strategy):
            stored = torch.load(path, map_location="cpu", weights_only=True)["delta_learning"]
            assert stored["strategy"] == strategy and stored["low_fidelity_columns"] == LOW
            assert np.shape(stored["weights"]) == (2, 2) and len(stored["intercept"]) == 2
            pretrained = stored["low_fidelity_model"]
            assert (pretrained is None) == (strategy == "transductive")
            assert stored["stacked"] is False  # no --stack-kernel-ridge: predict notes nothing
    # the transductive correction is the least-squares fit of both low-fidelity labels of the
    # training molecules: on the test molecules it is the run's "linear_all" baseline
    delta = load_checkpoint(_checkpoints(run, "transductive")[0]).delta_learning
    test = pd.read_csv(run / "predictions.csv")
    baseline = test[test.strategy == "linear_all"]
    low = pd.read_csv(LABELS).set_index("id").loc[baseline["id"], LOW].to_numpy()
    np.testing.assert_allclose(
        delta.base(low), baseline[[f"{t}_pred" for t in TARGETS]].to_numpy(), rtol=1e-5
    )
    # the inductive model carries its pretrained model, which predicts the low-fidelity values
    module = load_checkpoint(_checkpoints(run, "inductive")[0])
    assert module.delta_learning.input_columns == []
    low_model = module.delta_learning.low_fidelity_model
    assert low_model.training is False and low_model.hparams.model == "esa"
    assert len(low_model.hparams.target_columns) == 2  # one output per low-fidelity column


@pytest.mark.parametrize("strategy", ["inductive", "transductive"])
def test_predict_gives_the_runs_predictions_of_its_unlabelled_molecules(run, tmp_path, strategy):
    expected = _unlabelled(run, strategy)
    assert len(expected) == 16 and (expected["seeds"] == 2).all()
    library = _library(tmp_path / "new.csv", expected["id"])
    output = tmp_path / "scored.csv"
    options = PredictOptions(batch_size=5)  # other batches than the run's: float32 tolerance
    summary = predict_table(_checkpoints(run, strategy), library, output, options, progress=False)
    assert (summary.predicted, summary.failed) == (16, 0)
    scored = pd.read_csv(output)
    for target in TARGETS:
        for suffix in ("_pred", "_std"):
            np.testing.assert_allclose(
                scored[target + suffix], expected[target + suffix], rtol=1e-5, atol=1e-5
            )
    assert (scored["fine_logp_std"] > 0).all()
    assert scored["max_similarity_to_train"].notna().all() and scored["in_domain"].notna().all()


def test_a_transductive_model_adds_the_correction_of_the_given_low_fidelity_values(run, tmp_path):
    """The residual depends on the molecule only: raising its cheap_logp by 1 raises each
    target's prediction by that column's W (the same for both seeds: one training set)."""
    ids = _unlabelled(run, "transductive")["id"]
    checkpoints = _checkpoints(run, "transductive")
    frames = []
    for name, shift in (("as_given", 0.0), ("raised", 1.0)):
        table = pd.read_csv(LABELS).set_index("id").loc[ids]
        library = _library(tmp_path / f"{name}.csv", ids, cheap_logp=table["cheap_logp"] + shift)
        predict_table(checkpoints, library, tmp_path / f"{name}_out.csv", progress=False)
        frames.append(pd.read_csv(tmp_path / f"{name}_out.csv"))
    weights = np.asarray(load_checkpoint(checkpoints[0]).delta_learning.correction.weights)
    for t, target in enumerate(TARGETS):
        change = frames[1][f"{target}_pred"] - frames[0][f"{target}_pred"]
        np.testing.assert_allclose(change, weights[0, t], atol=1e-4)
        np.testing.assert_allclose(
            frames[1][f"{target}_std"], frames[0][f"{target}_std"], atol=1e-6
        )  # the seeds differ in their residuals only


def test_the_low_fidelity_columns_a_transductive_model_reads(run, tmp_path):
    ids = _unlabelled(run, "transductive")["id"]
    checkpoints = _checkpoints(run, "transductive")
    # no such column: refused before any work, naming it and what to do
    library = _library(tmp_path / "no_mr.csv", ids)
    pd.read_csv(library).drop(columns="cheap_mr").to_csv(library, index=False)
    with pytest.raises(ValueError, match=r"no label column \['cheap_mr'\].*transductive Δ-l"):
        predict_table(checkpoints, library, tmp_path / "out.csv", progress=False)
    assert not (tmp_path / "out.csv.partial").exists()
    smi = tmp_path / "new.smi"
    smi.write_text("CCO\n")
    with pytest.raises(ValueError, match="a .smi file has no label columns.*inductive"):
        predict_table(checkpoints, smi, tmp_path / "out.csv", progress=False)
    # an empty cell: that record's error, the others predicted as with every value
    complete = predict_table(
        checkpoints, _library(tmp_path / "all.csv", ids), tmp_path / "all_out.csv", progress=False
    )
    values = pd.read_csv(LABELS).set_index("id").loc[ids, "cheap_mr"].to_numpy(copy=True)
    values[3] = np.nan
    summary = predict_table(
        checkpoints, _library(tmp_path / "gap.csv", ids, cheap_mr=values),
        tmp_path / "gap_out.csv", progress=False,
    )  # fmt: skip
    assert (summary.predicted, summary.failed) == (15, 1)
    scored, full = pd.read_csv(tmp_path / "gap_out.csv"), pd.read_csv(complete.output)
    assert scored["error"][3] == (
        "no low-fidelity value in cheap_mr: this transductive model corrects the molecule's "
        "own value"
    )
    assert scored["error"].drop(index=3).isna().all()
    assert scored.loc[3, ["fine_logp_pred", "fine_mr_std", "max_similarity_to_train"]].isna().all()
    assert pd.isna(scored["in_domain"][3]) and scored["smiles"][3] == full["smiles"][3]
    others = scored.drop(index=3)
    np.testing.assert_allclose(others["fine_mr_pred"], full["fine_mr_pred"].drop(index=3))
    # a featurize folder: only one featurized with the column
    folder = tmp_path / "lib"
    featurize_library(
        _library(tmp_path / "lib.csv", ids), folder, FeaturizeOptions(), progress=False
    )
    with pytest.raises(ValueError, match=r"holds no column \['cheap_logp', 'cheap_mr'\].*"
                                         "--target-columns cheap_logp,cheap_mr"):  # fmt: skip
        predict_table(checkpoints, folder, tmp_path / "folder_out.csv", progress=False)
    labelled = tmp_path / "lib_labelled"
    featurize_library(
        tmp_path / "lib.csv", labelled, FeaturizeOptions(label_columns=tuple(LOW)), progress=False
    )
    predict_table(checkpoints, labelled, tmp_path / "folder_out.csv", progress=False)
    from_folder = pd.read_csv(tmp_path / "folder_out.csv")
    np.testing.assert_allclose(from_folder["fine_logp_pred"], full["fine_logp_pred"], atol=1e-5)


def test_an_inductive_model_needs_no_column_and_mixing_strategies_is_refused(run, tmp_path):
    expected = _unlabelled(run, "inductive")
    smi = tmp_path / "new.smi"
    smi.write_text("\n".join(expected["smiles"]) + "\n")
    predict_table(_checkpoints(run, "inductive"), smi, tmp_path / "out.csv", progress=False)
    scored = pd.read_csv(tmp_path / "out.csv")
    np.testing.assert_allclose(scored["fine_mr_pred"], expected["fine_mr_pred"], atol=1e-5)
    mixed = [_checkpoints(run, "inductive")[0], _checkpoints(run, "transductive")[0]]
    with pytest.raises(ValueError, match="differ in delta_learning"):
        predict_table(mixed, smi, tmp_path / "mixed.csv", progress=False)


def test_delta_learning_round_trips_and_adds_low_times_w_plus_b():
    from chemgraph.train.baselines import LinearCorrection

    delta = DeltaLearning(
        "transductive", ["a", "b"], LinearCorrection(np.array([[2.0], [0.5]]), np.array([1.0]))
    )
    # 2·1 + 0.5·2 + 1 = 4; 2·(−1) + 0.5·0 + 1 = −1; a missing value gives NaN
    np.testing.assert_array_equal(
        delta.base(np.array([[1.0, 2.0], [-1.0, 0.0], [np.nan, 0.0]]))[:, 0], [4.0, -1.0, np.nan]
    )
    again = DeltaLearning.from_dict(delta.to_dict(), build=None)
    assert again.input_columns == ["a", "b"] and again.to_dict() == delta.to_dict()
    assert DeltaLearning.from_dict({**delta.to_dict(), "stacked": True}, build=None).stacked
    older = {k: v for k, v in delta.to_dict().items() if k != "stacked"}  # before it was kept
    assert DeltaLearning.from_dict(older, build=None).stacked is False
    with pytest.raises(ValueError, match="needs its pretrained low-fidelity model"):
        DeltaLearning("inductive", ["a"], LinearCorrection(np.ones((1, 1)), np.zeros(1)))
    with pytest.raises(ValueError, match=r"W must be \[1, T\]"):
        DeltaLearning("transductive", ["a"], LinearCorrection(np.ones((2, 1)), np.zeros(1)))


def test_fine_tuning_a_delta_model_warns_that_its_correction_is_not_carried(run, caplog):
    from chemgraph.train.finetune import checkpoint_settings

    with caplog.at_level(logging.WARNING, logger="chemgraph.train.finetune"):
        checkpoint_settings(_checkpoints(run, "transductive")[0])
    assert "transductive Δ-learning model of chemgraph transfer" in caplog.text
    assert "the correction is not" in caplog.text
