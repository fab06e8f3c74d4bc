"""Plots people read: learning curves and parity plots (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_learning_curve", "plot_parity"]


def plot_learning_curve(
    epochs: list[dict[str, float]], path: str | Path, loss_name: str = "loss"
) -> None:
    """Training and validation loss per epoch (log scale) to ``path`` (PNG).

    Args:
        epochs: one dict per epoch with ``epoch``, ``train_loss``, ``val_loss``.
        path: PNG file.
        loss_name: y-axis label, e.g. ``"MSE of standardised targets"``.
    """
    figure, axis = plt.subplots(figsize=(6, 4))
    if epochs:
        frame = pd.DataFrame(epochs)
        axis.plot(frame["epoch"], frame["train_loss"], marker=".", label="train")
        axis.plot(frame["epoch"], frame["val_loss"], marker=".", label="validation")
        axis.set_yscale("log")
        axis.legend()
    axis.set_xlabel("epoch")
    axis.set_ylabel(loss_name)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_parity(predictions: pd.DataFrame, targets: list[str], path: str | Path) -> None:
    """Predicted vs true values, one panel per target, with the identity line.

    Args:
        predictions: columns ``<target>`` and ``<target>_pred`` for each target.
        targets: target column names.
        path: PNG file. Each panel's title gives that target's RMSE, MAE and R²; a target
            without labels in ``predictions`` gets an empty panel saying so.
    """
    from chemgraph.train.metrics import regression_metrics

    figure, axes = plt.subplots(1, len(targets), figsize=(4.5 * len(targets), 4.5), squeeze=False)
    for axis, target in zip(axes[0], targets):
        truth = predictions[target].to_numpy(dtype=float)
        predicted = predictions[f"{target}_pred"].to_numpy(dtype=float)
        present = ~np.isnan(truth)
        axis.set_xlabel(f"true {target}")
        axis.set_ylabel(f"predicted {target}")
        if not present.any():
            axis.set_title("no labels in this split")
            continue
        truth, predicted = truth[present], predicted[present]
        axis.scatter(truth, predicted, s=6, alpha=0.5)
        low = min(truth.min(), predicted.min())
        high = max(truth.max(), predicted.max())
        axis.plot([low, high], [low, high], color="black", linewidth=1)
        metrics = regression_metrics(truth, predicted)
        axis.set_title(", ".join(f"{k.upper()} {v:.3f}" for k, v in metrics.items()))
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
