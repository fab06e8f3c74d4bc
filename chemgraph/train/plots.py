"""Plots people read: learning curves; parity plots and residual histograms (regression); ROC
curves, precision-recall curves and confusion matrices (classification).

Each function draws on its own :class:`matplotlib.figure.Figure` (no pyplot, so importing this
module leaves the caller's matplotlib backend alone; the PNG is written by matplotlib's Agg
renderer), saves it to ``path`` and returns it, so that its axes can be inspected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator
from sklearn import metrics as skm

from chemgraph.train.metrics import THRESHOLD, per_task_metrics, regression_metrics

__all__ = [
    "MAX_TASKS",
    "plot_confusion_matrices",
    "plot_label_curve",
    "plot_learning_curve",
    "plot_parity",
    "plot_precision_recall",
    "plot_residuals",
    "plot_roc",
]

MAX_TASKS = 12
"""Classification plots show the first this many tasks (e.g. all 12 of Tox21) and say so when
there are more; ``metrics.json`` has every task."""

_DPI = 120


def _save(figure: Figure, path: str | Path) -> Figure:
    figure.savefig(path, dpi=_DPI, bbox_inches="tight")  # whole legends outside the axes
    return figure


def _grid(count: int, size: float) -> tuple[Figure, list[Axes]]:
    """A figure of ``count`` square panels, at most 4 a row."""
    columns = min(count, 4)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(size * columns, size * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[count:]:
        extra.remove()
    return figure, list(axes[:count])


def _labelled(predictions: pd.DataFrame, target: str) -> tuple[np.ndarray, np.ndarray]:
    """A target's labels and predictions (columns ``<target>``, ``<target>_pred``), rows
    without a label left out."""
    truth = predictions[target].to_numpy(dtype=float)
    predicted = predictions[f"{target}_pred"].to_numpy(dtype=float)
    present = ~np.isnan(truth)
    return truth[present], predicted[present]


def _text_box(axis: Axes, *lines: str) -> None:
    """``lines`` in a box at the panel's top left."""
    axis.text(
        0.04, 0.96, "\n".join(lines), transform=axis.transAxes, va="top", ha="left",
        bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85},
    )  # fmt: skip


def _with_unit(name: str, unit: str | None) -> str:
    return f"{name} ({unit})" if unit else name


def plot_learning_curve(
    epochs: list[dict[str, float]], path: str | Path, loss_name: str = "loss"
) -> Figure:
    """Training and validation loss per epoch to ``path`` (PNG).

    Epochs are numbered from 1 on the x axis; the y axis is logarithmic when the losses span
    more than a factor of 10; a dotted line marks the epoch of lowest validation loss (the
    checkpoint that :func:`chemgraph.jobs.train.train` keeps).

    Args:
        epochs: one dict per epoch with ``epoch`` (0-based), ``train_loss``, ``val_loss``.
        path: PNG file.
        loss_name: the loss, the y-axis label, e.g. ``"binary cross-entropy"``.
    """
    figure = Figure(figsize=(6, 4), layout="constrained")
    axis = figure.add_subplot()
    log_scale = False
    if epochs:
        frame = pd.DataFrame(epochs)
        number = frame["epoch"].to_numpy() + 1
        axis.plot(number, frame["train_loss"], marker=".", label="train")
        axis.plot(number, frame["val_loss"], marker=".", label="validation")
        validation = frame["val_loss"].to_numpy(dtype=float)
        if np.isfinite(validation).any():
            best = number[np.nanargmin(validation)]
            axis.axvline(best, color="grey", linestyle=":", label=f"lowest validation ({best})")
        losses = frame[["train_loss", "val_loss"]].to_numpy(dtype=float).ravel()
        positive = losses[np.isfinite(losses) & (losses > 0)]
        log_scale = positive.size > 0 and positive.max() > 10 * positive.min()
        if log_scale:
            axis.set_yscale("log")
        axis.legend()
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("epoch")
    axis.set_ylabel(f"{loss_name} (log scale)" if log_scale else loss_name)
    axis.set_title("training and validation loss")
    return _save(figure, path)


def plot_label_curve(curve: pd.DataFrame, path: str | Path, unit: str | None = None) -> Figure:
    """Test RMSE against the number of high-fidelity training labels, one panel per target,
    one line per method (mean over seeds, error bars = sample std where there are 2 or more),
    both axes logarithmic; to ``path`` (PNG).

    Args:
        curve: rows with ``target``, ``method`` (the line's label), ``labels`` (training
            labels), ``rmse_mean``, ``rmse_std`` (NaN = none)
            (:func:`chemgraph.transfer.run.label_curve`).
        path: PNG file.
        unit: of the RMSE, for the axis label (e.g. ``"eV"``).
    """
    targets = list(dict.fromkeys(curve["target"]))
    figure, axes = _grid(len(targets), 4.5)
    for axis, target in zip(axes, targets):
        rows = curve[curve["target"] == target]
        for method, line in rows.groupby("method", sort=False):
            line = line.sort_values("labels")
            error = line["rmse_std"].to_numpy(dtype=float)
            axis.errorbar(
                line["labels"], line["rmse_mean"],
                yerr=None if np.isnan(error).all() else np.nan_to_num(error),
                marker="o", capsize=3, label=method,
            )  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        counts = sorted(set(rows["labels"]))
        axis.set_xticks(counts, [str(n) for n in counts])
        axis.xaxis.set_minor_locator(NullLocator())
        for ticks in (axis.yaxis.set_major_formatter, axis.yaxis.set_minor_formatter):
            ticks(FuncFormatter(lambda value, _: f"{value:.2g}"))
        axis.set_xlabel("high-fidelity training labels")
        axis.set_ylabel(_with_unit("test RMSE", unit))
        axis.set_title(str(target))
    axes[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    return _save(figure, path)


def plot_parity(
    predictions: pd.DataFrame,
    targets: Sequence[str],
    path: str | Path,
    split: str = "test",
    units: Mapping[str, str | None] | None = None,
) -> Figure:
    """Predicted vs true values, one panel per target, with the identity line.

    Args:
        predictions: one split's rows, columns ``<target>`` and ``<target>_pred``.
        targets: target column names.
        path: PNG file.
        split: the split's name, in each panel's title (``"<target>: test split"``).
        units: target -> unit, in the axis labels and the text box; a target without one is
            labelled by its name alone.

    Each panel has a text box with n, MAE, RMSE (in the target's unit) and R² of that split;
    a target without labels there gets an empty panel saying so.
    """
    units = units or {}
    figure, axes = _grid(len(targets), 4.5)
    for axis, target in zip(axes, targets):
        truth, predicted = _labelled(predictions, target)
        label = _with_unit(target, units.get(target))
        axis.set_xlabel(f"true {label}")
        axis.set_ylabel(f"predicted {label}")
        if not truth.size:
            axis.set_title(f"{target}: no labels in the {split} split")
            continue
        axis.set_title(f"{target}: {split} split")
        axis.scatter(truth, predicted, s=8, alpha=0.5)
        low = min(truth.min(), predicted.min())
        high = max(truth.max(), predicted.max())
        axis.plot([low, high], [low, high], color="black", linewidth=1, label="y = x")
        axis.set_aspect("equal", adjustable="datalim")
        metrics = regression_metrics(truth, predicted)
        unit = f" {units[target]}" if units.get(target) else ""
        r2 = "n/a" if math.isnan(metrics["r2"]) else f"{metrics['r2']:.3f}"
        _text_box(
            axis,
            f"n = {truth.size}",
            f"MAE {metrics['mae']:.3g}{unit}",
            f"RMSE {metrics['rmse']:.3g}{unit}",
            f"R² {r2}",
        )
        axis.legend(loc="lower right")
    return _save(figure, path)


def plot_residuals(
    predictions: pd.DataFrame,
    targets: Sequence[str],
    path: str | Path,
    split: str = "test",
    units: Mapping[str, str | None] | None = None,
) -> Figure:
    """Histogram of the residuals (predicted - true), one panel per target, with a line at 0
    and a text box with n, mean (the bias) and standard deviation.

    Args: as :func:`plot_parity`.
    """
    units = units or {}
    figure, axes = _grid(len(targets), 4.5)
    for axis, target in zip(axes, targets):
        truth, predicted = _labelled(predictions, target)
        axis.set_xlabel(f"predicted - true {_with_unit(target, units.get(target))}")
        axis.set_ylabel("molecules")
        if not truth.size:
            axis.set_title(f"{target}: no labels in the {split} split")
            continue
        axis.set_title(f"{target}: {split} split")
        residual = predicted - truth
        counts, _, _ = axis.hist(residual, bins="auto", color="C0", alpha=0.8)
        axis.set_ylim(0, 1.4 * counts.max())  # room for the text box above the bars
        axis.axvline(0, color="black", linewidth=1)
        unit = f" {units[target]}" if units.get(target) else ""
        _text_box(
            axis,
            f"n = {residual.size}",
            f"mean {residual.mean():+.3g}{unit}",
            f"SD {residual.std():.3g}{unit}",
        )
    return _save(figure, path)


def _curves(
    predictions: pd.DataFrame, targets: Sequence[str], path: str | Path, split: str, kind: str
) -> Figure:
    """ROC (``kind="roc"``) or precision-recall (``"pr"``) curves of up to :data:`MAX_TASKS`
    targets on one axes; a target whose labels hold one class (or none) is listed in the legend
    without a curve."""
    shown = list(targets[:MAX_TASKS])
    frame = predictions[[*shown, *(f"{t}_pred" for t in shown)]].to_numpy(dtype=float)
    table = per_task_metrics(
        frame[:, : len(shown)], frame[:, len(shown) :], "classification", shown
    )
    colours = matplotlib.colormaps["tab10" if len(shown) <= 10 else "tab20"]
    figure = Figure(figsize=(8, 5), layout="constrained")
    axis = figure.add_subplot()
    for index, target in enumerate(shown):
        row = table[target]
        if row["n"] == 0 or math.isnan(row["roc_auc"]):
            why = "no labels" if row["n"] == 0 else f"only class {round(row['positives'])}"
            axis.plot([], [], " ", label=f"{target}: {why}, no curve")
            continue
        truth, probability = _labelled(predictions, target)
        if kind == "roc":
            x, y, _ = skm.roc_curve(truth, probability)
            axis.plot(x, y, color=colours(index), label=f"{target}: AUC {row['roc_auc']:.3f}")
        else:
            y, x, _ = skm.precision_recall_curve(truth, probability)
            axis.step(
                x, y, where="post", color=colours(index),
                label=f"{target}: AP {row['pr_auc']:.3f} (chance {row['positives']:.3f})",
            )  # fmt: skip
            axis.axhline(row["positives"], color=colours(index), linestyle=":", linewidth=1)
    if kind == "roc":
        axis.plot([0, 1], [0, 1], color="grey", linestyle="--", label="chance")
        axis.set_xlabel("false positive rate (1 - specificity)")
        axis.set_ylabel("true positive rate (sensitivity)")
        title = "ROC curves"
    else:
        axis.plot([], [], color="grey", linestyle=":", label="chance: share of class 1")
        axis.set_xlabel("recall (sensitivity)")
        axis.set_ylabel("precision")
        title = "precision-recall curves"
    more = f", first {len(shown)} of {len(targets)} tasks" if len(targets) > len(shown) else ""
    axis.set_title(f"{title}, {split} split{more}")
    axis.set_xlim(-0.02, 1.02)
    axis.set_ylim(-0.02, 1.02)
    axis.set_aspect("equal")
    axis.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize="small")
    return _save(figure, path)


def plot_roc(
    predictions: pd.DataFrame, targets: Sequence[str], path: str | Path, split: str = "test"
) -> Figure:
    """ROC curves (true vs false positive rate as the threshold moves; ``roc_curve`` of
    scikit-learn) of the first :data:`MAX_TASKS` targets on one axes, each labelled with its
    ROC-AUC, and the chance diagonal.

    Args:
        predictions: one split's rows, columns ``<target>`` (0/1, NaN = missing) and
            ``<target>_pred`` (probability of class 1).
        targets: target column names.
        path: PNG file.
        split: the split's name, in the title.
    """
    return _curves(predictions, targets, path, split, "roc")


def plot_precision_recall(
    predictions: pd.DataFrame, targets: Sequence[str], path: str | Path, split: str = "test"
) -> Figure:
    """Precision-recall curves (``precision_recall_curve`` of scikit-learn, drawn as steps)
    of the first :data:`MAX_TASKS` targets on one axes, each labelled with its average
    precision (PR-AUC) and chance level (its share of class 1, also a dotted line).

    Args: as :func:`plot_roc`.
    """
    return _curves(predictions, targets, path, split, "pr")


def plot_confusion_matrices(
    predictions: pd.DataFrame,
    targets: Sequence[str],
    path: str | Path,
    split: str = "test",
    threshold: float = THRESHOLD,
) -> Figure:
    """The confusion matrix of each of the first :data:`MAX_TASKS` targets at ``threshold``:
    counts, and in brackets each count's share of its true class (so the diagonal reads
    specificity, then sensitivity), shaded by that share.

    Args:
        predictions: as :func:`plot_roc`.
        targets: target column names.
        path: PNG file.
        split: the split's name, in the figure title with the threshold.
        threshold: class 1 is predicted at a probability at or above it.
    """
    shown = list(targets[:MAX_TASKS])
    figure, axes = _grid(len(shown), 3.4)
    more = f"; first {len(shown)} of {len(targets)} tasks" if len(targets) > len(shown) else ""
    figure.suptitle(
        f"confusion matrices, {split} split, threshold {threshold:g} "
        f"(class 1 predicted at probability ≥ {threshold:g}){more}"
    )
    for axis, target in zip(axes, shown):
        truth, probability = _labelled(predictions, target)
        matrix = skm.confusion_matrix(
            truth.astype(int), (probability >= threshold).astype(int), labels=[0, 1]
        )
        totals = matrix.sum(axis=1, keepdims=True)
        share = np.divide(matrix, totals, out=np.zeros(matrix.shape), where=totals > 0)
        axis.imshow(share, cmap="Blues", vmin=0, vmax=1)
        for (i, j), count in np.ndenumerate(matrix):
            colour = "white" if share[i, j] > 0.5 else "black"
            axis.text(j, i, f"{count}\n({share[i, j]:.0%})", ha="center", va="center", color=colour)
        axis.set_xticks([0, 1], ["0", "1"])
        axis.set_yticks([0, 1], ["0", "1"])
        axis.set_xlabel("predicted class")
        axis.set_ylabel("true class")
        axis.set_title(f"{target} (n = {truth.size})")
    return _save(figure, path)
