"""Evaluation metrics (scikit-learn), computed per task over present labels, then averaged."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn import metrics as skm

__all__ = [
    "CLASSIFICATION",
    "REGRESSION",
    "classification_metrics",
    "format_metrics",
    "regression_metrics",
]

REGRESSION = ("rmse", "mae", "r2")
CLASSIFICATION = ("mcc", "roc_auc", "accuracy")


def _per_task(y_true: np.ndarray, y_pred: np.ndarray, compute) -> dict[str, float]:
    y_true = np.asarray(y_true, dtype=np.float64).reshape(len(y_true), -1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(len(y_pred), -1)
    results: dict[str, list[float]] = {}
    for task in range(y_true.shape[1]):
        present = ~np.isnan(y_true[:, task])
        if not present.any():
            continue
        for name, value in compute(y_true[present, task], y_pred[present, task]).items():
            results.setdefault(name, []).append(value)
    return {name: _mean_of_defined(values) for name, values in results.items()}


def _mean_of_defined(values: list[float]) -> float:
    defined = [v for v in values if not np.isnan(v)]
    return float(np.mean(defined)) if defined else float("nan")


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """RMSE, MAE and R² in the targets' own units.

    Args:
        y_true: ``[N, T]`` (or ``[N]``) labels; NaN = missing, ignored.
        y_pred: same shape, predictions.

    Returns:
        ``{"rmse", "mae", "r2"}``, each the mean over tasks of the per-task value.
    """

    def compute(t, p):
        return {
            "rmse": float(np.sqrt(skm.mean_squared_error(t, p))),
            "mae": float(skm.mean_absolute_error(t, p)),
            "r2": float(skm.r2_score(t, p)) if len(t) > 1 else float("nan"),
        }

    return _per_task(y_true, y_pred, compute)


def classification_metrics(
    y_true: np.ndarray, probability: np.ndarray, threshold: float = 0.5
) -> dict[str, float]:
    """MCC, ROC-AUC and accuracy of binary (multi-label) classification.

    Args:
        y_true: ``[N, T]`` labels in {0, 1}; NaN = missing, ignored.
        probability: ``[N, T]`` predicted probability of class 1.
        threshold: probability above which class 1 is predicted (MCC and accuracy).

    Returns:
        ``{"mcc", "roc_auc", "accuracy"}``, each the mean over tasks. ROC-AUC is NaN (and left
        out of the mean) for a task whose labels hold a single class.
    """

    def compute(t, p):
        predicted = (p >= threshold).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mcc = float(skm.matthews_corrcoef(t.astype(int), predicted))
        auc = float(skm.roc_auc_score(t, p)) if len(np.unique(t)) == 2 else float("nan")
        return {"mcc": mcc, "roc_auc": auc, "accuracy": float(skm.accuracy_score(t, predicted))}

    return _per_task(y_true, probability, compute)


def format_metrics(metrics: dict) -> str:
    """A plain-text table of ``{"val": {...}, "test": {...}}`` metrics (the ``metrics.json`` of
    :func:`chemgraph.train.runner.train`): a header row of metric names, then one row per
    split, 4 decimals."""
    splits = [name for name in ("val", "test") if name in metrics]
    names = list(metrics[splits[0]])
    lines = [f"{'split':<6}" + "".join(f"{n.upper():>10}" for n in names)]
    for split in splits:
        lines.append(f"{split:<6}" + "".join(f"{metrics[split][n]:>10.4f}" for n in names))
    return "\n".join(lines)
