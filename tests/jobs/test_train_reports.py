"""What a chemist reads after ``chemgraph train``: per-task metrics, the printed summary, plots."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from chemgraph.jobs.train import _json_safe, _target_units, train, train_ensemble
from chemgraph.train.config import TrainingConfig
from chemgraph.train.metrics import (
    classification_metrics,
    format_metrics,
    mean_over_tasks,
    per_task_metrics,
)
from chemgraph.train.plots import (
    plot_confusion_matrices,
    plot_learning_curve,
    plot_parity,
    plot_precision_recall,
    plot_residuals,
    plot_roc,
)

# Two actives among six molecules. At threshold 0.5 the predictions are [1, 0, 1, 0, 0, 0]:
# TP 1 (0.9), FN 1 (0.45), FP 1 (0.6), TN 3.
TRUTH = np.array([1, 1, 0, 0, 0, 0.0])
PROBABILITY = np.array([0.9, 0.45, 0.6, 0.3, 0.1, 0.2])


def test_classification_metrics_by_hand():
    result = classification_metrics(TRUTH, PROBABILITY)
    # MCC = (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (3 - 1) / sqrt(2 2 4 4)
    assert result["mcc"] == pytest.approx(2 / 8)
    # (sensitivity 1/2 + specificity 3/4) / 2
    assert result["balanced_accuracy"] == pytest.approx((1 / 2 + 3 / 4) / 2)
    # ranked 0.9+ 0.6- 0.45+ ...: precision 1 at recall 1/2, 2/3 at recall 1, no interpolation
    assert result["pr_auc"] == pytest.approx(1 / 2 * 1 + 1 / 2 * 2 / 3)
    # active 0.9 outranks all 4 inactives, active 0.45 outranks 3 of them: 7 of 8 pairs
    assert result["roc_auc"] == pytest.approx(7 / 8)
    assert result["accuracy"] == pytest.approx(4 / 6)


def test_threshold_moves_the_thresholded_metrics_only():
    result = classification_metrics(TRUTH, PROBABILITY, threshold=0.4)
    # predictions [1, 1, 1, 0, 0, 0]: TP 2, FN 0, FP 1, TN 3
    assert result["balanced_accuracy"] == pytest.approx((1 + 3 / 4) / 2)
    assert result["mcc"] == pytest.approx(6 / math.sqrt(3 * 2 * 4 * 3))
    assert result["roc_auc"] == pytest.approx(7 / 8)


def test_per_task_table_with_a_single_class_task_and_one_without_labels():
    truth = np.stack([TRUTH, np.zeros(6), np.full(6, np.nan)], axis=1)
    truth[0, 1] = np.nan
    probability = np.stack([PROBABILITY, PROBABILITY, PROBABILITY], axis=1)
    table = per_task_metrics(truth, probability, "classification", ["active", "inactive", "none"])
    assert list(table) == ["active", "inactive", "none"]
    assert table["active"] == pytest.approx(
        {"n": 6, "positives": 1 / 3, "roc_auc": 7 / 8, "pr_auc": 5 / 6, "mcc": 0.25,
         "balanced_accuracy": 0.625, "accuracy": 4 / 6}
    )  # fmt: skip
    single = table["inactive"]
    assert single["n"] == 5 and single["positives"] == 0
    for name in ("roc_auc", "pr_auc", "mcc", "balanced_accuracy"):
        assert math.isnan(single[name])
    assert single["accuracy"] == pytest.approx(4 / 5)  # of 0.45 0.6 0.3 0.1 0.2, 0.6 is wrong
    assert table["none"]["n"] == 0 and all(
        math.isnan(v) for k, v in table["none"].items() if k != "n"
    )
    means = mean_over_tasks(table)
    assert list(means) == ["roc_auc", "pr_auc", "mcc", "balanced_accuracy", "accuracy"]
    assert means["roc_auc"] == pytest.approx(7 / 8)  # the single-class task is left out
    assert means["accuracy"] == pytest.approx((4 / 6 + 4 / 5) / 2)


def test_regression_per_task_table():
    truth = np.array([[1.0, np.nan], [2.0, 4.0], [3.0, np.nan]])
    predicted = np.array([[1.0, 0.0], [2.0, 5.0], [5.0, 0.0]])
    table = per_task_metrics(truth, predicted, "regression", ["a", "b"])
    assert table["a"] == pytest.approx(
        {"n": 3, "rmse": math.sqrt(4 / 3), "mae": 2 / 3, "r2": 1 - 4 / 2}
    )
    assert table["b"]["n"] == 1 and table["b"]["mae"] == 1 and math.isnan(table["b"]["r2"])


def _report(truth, probability, targets):
    per_task = {
        split: per_task_metrics(truth, probability, "classification", targets)
        for split in ("val", "test")
    }
    return {**{s: mean_over_tasks(t) for s, t in per_task.items()}, "per_task": per_task}


def test_format_metrics_leads_with_roc_auc_and_pr_auc_on_imbalanced_tasks():
    # one active in ten, ranked second (after an inactive at 0.9): at 0.5 TP 1, FP 1, TN 8
    rare = np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 0.0])
    probability = np.array([0.8, 0.9, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.4, 0.1])
    truth = np.stack([rare, np.zeros(10)], axis=1)
    metrics = _report(truth, np.stack([probability, probability], axis=1), ["tox", "flat"])
    text = format_metrics(json.loads(json.dumps(_json_safe(metrics))))  # as in metrics.json
    lines = text.splitlines()
    # ROC-AUC: 8 of 9 inactives below the active; PR-AUC: precision 1/2 at recall 1
    assert lines[0] == (
        "test ROC-AUC 0.889, PR-AUC 0.500 (chance 0.100): imbalanced classes, so read PR-AUC "
        "and MCC rather than accuracy"
    )
    assert lines[1].split() == ["split", "ROC-AUC", "PR-AUC", "MCC", "BAL-ACC"]
    # MCC (1 * 8 - 1 * 0) / sqrt(2 * 1 * 9 * 8) = 8 / 12; balanced accuracy (1 + 8 / 9) / 2
    assert lines[3].split() == ["test", "0.8889", "0.5000", "0.6667", "0.9444"]
    assert lines[6].split() == ["task", "n", "pos%", "ROC-AUC", "PR-AUC", "MCC", "BAL-ACC"]
    assert lines[7].split() == ["tox", "10", "10.0", "0.8889", "0.5000", "0.6667", "0.9444"]
    assert lines[8].split() == ["flat", "10", "0.0", "n/a", "n/a", "n/a", "n/a"]
    assert lines[9].startswith("note: 'flat' holds only class 0 in the val split")
    assert lines[10].startswith("note: 'flat' holds only class 0 in the test split")
    assert len(lines) == 11  # plain accuracy is in metrics.json only


def test_format_metrics_ends_with_the_mean_predictor():
    metrics = {
        "val": {"rmse": 0.5, "mae": 0.4, "r2": 0.8},
        "test": {"rmse": 0.6, "mae": 0.5, "r2": 0.7},
        "mean_predictor": {
            "val": {"rmse": 1.3, "mae": 1.1, "r2": -0.01},
            "test": {"rmse": 1.2, "mae": 1.0, "r2": -0.02},
        },
    }
    lines = format_metrics(metrics).splitlines()
    assert lines[-1].split() == ["test,", "mean", "predictor", "1.2000", "1.0000", "-0.0200"]
    assert lines[2].split() == ["test", "0.6000", "0.5000", "0.7000"]
    assert len({len(line) for line in lines}) == 1  # right-aligned columns under the header


def test_format_metrics_of_a_balanced_single_task():
    truth = np.array([1, 1, 0, 0.0])
    text = format_metrics(_report(truth, np.array([0.9, 0.4, 0.6, 0.1]), ["active"]))
    assert text.splitlines()[0] == "test ROC-AUC 0.750"  # no PR-AUC headline: classes balanced
    assert "per task" not in text  # one task: the split rows say it all


def test_learning_curve_axes(tmp_path):
    epochs = [
        {"epoch": e, "train_loss": 10.0 / (e + 1) ** 2, "val_loss": 5.0 / (e + 1)} for e in range(5)
    ]
    axis = plot_learning_curve(epochs, tmp_path / "lc.png", "BCE").axes[0]
    assert axis.get_yscale() == "log"  # train loss 10 -> 0.4: over a decade
    assert axis.get_ylabel() == "BCE (log scale)" and axis.get_xlabel() == "epoch"
    assert [line.get_label() for line in axis.get_lines()] == [
        "train", "validation", "lowest validation (5)"
    ]  # fmt: skip
    assert list(axis.get_lines()[0].get_xdata()) == [1, 2, 3, 4, 5]
    flat = [{"epoch": e, "train_loss": 1.0 - 0.1 * e, "val_loss": 1.0} for e in range(3)]
    axis = plot_learning_curve(flat, tmp_path / "flat.png", "MSE").axes[0]
    assert axis.get_yscale() == "linear" and axis.get_ylabel() == "MSE"


def test_parity_and_residual_plots_name_split_metrics_and_units(tmp_path):
    frame = pd.DataFrame({"gap": [1.0, 2.0, 3.0, np.nan], "gap_pred": [1.0, 2.0, 5.0, 0.0],
                          "b": np.nan, "b_pred": 0.0})  # fmt: skip
    parity = plot_parity(frame, ["gap", "b"], tmp_path / "parity.png", "test", {"gap": "eV"})
    axis, empty = parity.axes
    assert axis.get_title() == "gap: test split"
    assert axis.get_xlabel() == "true gap (eV)" and axis.get_ylabel() == "predicted gap (eV)"
    box = axis.texts[0].get_text().splitlines()
    assert box == ["n = 3", "MAE 0.667 eV", f"RMSE {math.sqrt(4 / 3):.3g} eV", "R² -1.000"]
    assert empty.get_title() == "b: no labels in the test split" and empty.get_xlabel() == "true b"
    residuals = plot_residuals(frame, ["gap"], tmp_path / "residuals.png", "val", {"gap": "eV"})
    axis = residuals.axes[0]
    assert axis.get_title() == "gap: val split"
    assert axis.get_xlabel() == "predicted - true gap (eV)" and axis.get_ylabel() == "molecules"
    assert axis.texts[0].get_text().splitlines() == ["n = 3", "mean +0.667 eV", "SD 0.943 eV"]
    for name in ("parity.png", "residuals.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _classified():
    return pd.DataFrame({"tox": TRUTH, "tox_pred": PROBABILITY, "flat": 0.0,
                         "flat_pred": PROBABILITY})  # fmt: skip


def test_roc_and_precision_recall_plots(tmp_path):
    axis = plot_roc(_classified(), ["tox", "flat"], tmp_path / "roc.png", "test").axes[0]
    assert axis.get_title() == "ROC curves, test split"
    assert axis.get_xlabel() == "false positive rate (1 - specificity)"
    assert axis.get_ylabel() == "true positive rate (sensitivity)"
    labels = [text.get_text() for text in axis.get_legend().get_texts()]
    assert labels == ["tox: AUC 0.875", "flat: only class 0, no curve", "chance"]
    axis = plot_precision_recall(_classified(), ["tox", "flat"], tmp_path / "pr.png").axes[0]
    assert axis.get_title() == "precision-recall curves, test split"
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("recall (sensitivity)", "precision")
    labels = [text.get_text() for text in axis.get_legend().get_texts()]
    assert labels == [
        "tox: AP 0.833 (chance 0.333)", "flat: only class 0, no curve", "chance: share of class 1"
    ]  # fmt: skip


def test_roc_plot_of_many_tasks_says_how_many_it_shows(tmp_path):
    targets = [f"t{i}" for i in range(14)]
    frame = pd.DataFrame(
        {**{t: TRUTH for t in targets}, **{f"{t}_pred": PROBABILITY for t in targets}}
    )
    axis = plot_roc(frame, targets, tmp_path / "roc.png", "test").axes[0]
    assert axis.get_title() == "ROC curves, test split, first 12 of 14 tasks"
    assert len(axis.get_legend().get_texts()) == 12 + 1  # and the chance line


def test_confusion_matrix_counts_and_threshold_in_title(tmp_path):
    figure = plot_confusion_matrices(_classified(), ["tox", "flat"], tmp_path / "cm.png", "test")
    assert figure.get_suptitle().startswith("confusion matrices, test split, threshold 0.5 ")
    tox, flat = figure.axes
    assert tox.get_title() == "tox (n = 6)"
    assert (tox.get_xlabel(), tox.get_ylabel()) == ("predicted class", "true class")
    # rows true 0, 1; columns predicted 0, 1; in brackets the share of the true class
    assert [t.get_text() for t in tox.texts] == ["3\n(75%)", "1\n(25%)", "1\n(50%)", "1\n(50%)"]
    assert [t.get_text() for t in flat.texts] == ["4\n(67%)", "2\n(33%)", "0\n(0%)", "0\n(0%)"]


def test_units_come_from_the_dataset_card(tmp_path):
    assert _target_units("esol")["measured log solubility in mols per litre"] == "log10(mol/L)"
    table = tmp_path / "esol"  # a file of that name is a table, not the registered dataset
    table.write_text("smiles,y\nC,1\n")
    assert _target_units(str(table)) == {}


SMILES = [f"{'C' * k}{end}" for end in ("", "O", "N", "Cl") for k in range(1, 11)]


def test_a_classification_run_writes_per_task_metrics_and_its_plots(tmp_path):
    active = [i % 2 for i in range(len(SMILES))]
    pd.DataFrame({"smiles": SMILES, "active": active, "never": 0}).to_csv(
        tmp_path / "t.csv", index=False
    )
    out = tmp_path / "run"
    config = TrainingConfig.from_dict(
        {"data": str(tmp_path / "t.csv"), "target_columns": ["active", "never"], "out": str(out),
         "max_epochs": 1, "batch_size": 8, "progress": False,
         "model_options": {"hidden_dim": 16, "num_heads": 2}}
    )  # fmt: skip
    with pytest.warns(UserWarning) as caught:  # 'never': one class only, in every split
        metrics = train(config)
    assert any("task 'never'" in str(w.message) for w in caught)
    written = json.loads((out / "metrics.json").read_text())
    assert list(written) == [
        "val",
        "test",
        "per_task",
        "mean_predictor",
        "epochs_trained",
        "applicability_domain",
        "duplicates",
    ]
    domain = written["applicability_domain"]["val"]  # classification: its own metrics
    assert domain["in_domain"]["molecules"] + domain["out_of_domain"]["molecules"] == 4
    assert set(domain["in_domain"]) == {"molecules", "roc_auc", "pr_auc", "mcc",
                                        "balanced_accuracy", "accuracy"}  # fmt: skip
    assert list(written["per_task"]["test"]) == ["active", "never"]
    never = written["per_task"]["test"]["never"]
    assert never["n"] == 4 and never["positives"] == 0 and never["roc_auc"] is None
    assert math.isnan(metrics["per_task"]["test"]["never"]["mcc"])
    assert written["test"]["accuracy"] == pytest.approx(
        np.mean([row["accuracy"] for row in written["per_task"]["test"].values()])
    )
    for name in ("roc_curve.png", "pr_curve.png", "confusion_matrix.png", "learning_curve.png"):
        assert (out / name).stat().st_size > 0
    assert not (out / "parity.png").exists() and not (out / "residuals.png").exists()
    assert "note: 'never' holds only class 0 in the test split" in format_metrics(written)


def test_metrics_json_relates_the_validation_error_to_the_domain_and_the_spread(tmp_path):
    values = np.linspace(-1.0, 3.0, len(SMILES))
    pd.DataFrame({"smiles": SMILES, "y": values}).to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "ensemble"
    config = TrainingConfig.from_dict(
        {"data": str(tmp_path / "t.csv"), "target_columns": ["y"], "out": str(out),
         "max_epochs": 1, "batch_size": 8, "progress": False, "split_fractions": [0.5, 0.4, 0.1],
         "model_options": {"hidden_dim": 16, "num_heads": 2}}
    )  # fmt: skip
    train_ensemble(config, 2)
    written = json.loads((out / "metrics.json").read_text())
    predictions = pd.read_csv(out / "predictions.csv")
    val = predictions[predictions["split"] == "val"]
    assert len(val) == 16
    # the checkpoints hold the training molecules' calibrated threshold and labels' range
    rows = sorted(set(range(len(SMILES))) - set(predictions["row"]))
    training = [SMILES[row] for row in rows]
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    prints = [generator.GetFingerprint(Chem.MolFromSmiles(s)) for s in training]
    nearest = [
        max(DataStructs.BulkTanimotoSimilarity(p, prints[:i] + prints[i + 1 :]))
        for i, p in enumerate(prints)
    ]
    threshold = written["applicability_domain"]["similarity_threshold"]
    assert threshold == pytest.approx(np.percentile(nearest, 5), rel=1e-6)
    for member in (0, 1):
        stored = torch.load(out / f"model-{member}" / "best.ckpt", weights_only=True)
        parameters = stored["hyper_parameters"]
        assert parameters["train_fingerprints"]["similarity_threshold"] == threshold
        assert parameters["train_label_range"]["min"] == pytest.approx([values[rows].min()])
        assert parameters["train_label_range"]["max"] == pytest.approx([values[rows].max()])
        alone = json.loads((out / f"model-{member}" / "metrics.json").read_text())
        assert alone["applicability_domain"]["similarity_threshold"] == threshold
        assert "spread_vs_error" not in alone  # one model has no spread
    # in and out of the domain: the validation molecules' errors, apart
    assert val["in_domain"].tolist() == (val["max_similarity_to_train"] >= threshold).tolist()
    error = val["y_pred"] - val["y"]
    domain = written["applicability_domain"]["val"]
    for name, members in (("in_domain", val["in_domain"]), ("out_of_domain", ~val["in_domain"])):
        assert domain[name]["molecules"] == members.sum()
        if members.any():
            assert domain[name]["rmse"] == pytest.approx(np.sqrt((error[members] ** 2).mean()))
            assert domain[name]["mae"] == pytest.approx(error[members].abs().mean())
    assert domain["in_domain"]["molecules"] > 0
    # the spread against the absolute error: Spearman = Pearson of the ranks
    spearman = val["y_std"].rank().corr(error.abs().rank())
    assert written["spread_vs_error"]["val"]["y"] == {
        "molecules": 16, "spearman": pytest.approx(spearman, abs=1e-9)
    }  # fmt: skip
