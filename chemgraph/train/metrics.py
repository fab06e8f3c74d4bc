"""Evaluation metrics (scikit-learn), computed per task over present labels, then averaged.

Regression: RMSE, MAE and R² in the targets' own units. Classification (binary, one
probability of class 1 per task): ROC-AUC, PR-AUC, MCC, balanced accuracy and plain accuracy;
see :func:`classification_metrics` for what each one is. :func:`per_task_metrics` gives each
task's values, :func:`mean_over_tasks` their means; :func:`format_metrics` (what
``chemgraph train`` prints) leads with ROC-AUC and, when a task's classes are imbalanced, PR-AUC
against its chance level. How far the error can be foreseen: :func:`domain_metrics` (the
metrics of molecules in and out of the applicability domain) and
:func:`spread_error_correlation` (an ensemble's spread against its absolute error).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np
from scipy import stats
from sklearn import metrics as skm

__all__ = [
    "CLASSIFICATION",
    "IMBALANCED",
    "REGRESSION",
    "THRESHOLD",
    "classification_metrics",
    "domain_metrics",
    "format_ensemble_metrics",
    "format_metrics",
    "mean_over_tasks",
    "per_task_metrics",
    "regression_metrics",
    "spread_error_correlation",
]

REGRESSION = ("rmse", "mae", "r2")
CLASSIFICATION = ("roc_auc", "pr_auc", "mcc", "balanced_accuracy", "accuracy")

THRESHOLD = 0.5
"""Probability of class 1 at or above which class 1 is predicted (MCC, accuracies, confusion
matrix)."""

IMBALANCED = 0.2
"""A classification task is imbalanced when its rarer class is under this share of its labels;
:func:`format_metrics` then also leads with PR-AUC."""

_SHOWN = {
    "rmse": "RMSE", "mae": "MAE", "r2": "R2",
    "roc_auc": "ROC-AUC", "pr_auc": "PR-AUC", "mcc": "MCC", "balanced_accuracy": "BAL-ACC",
}  # fmt: skip
"""Metrics printed by :func:`format_metrics` and their column headers (accuracy is left out:
on imbalanced tasks it mostly measures the share of the majority class)."""


def _regression(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """One task's metrics (:func:`regression_metrics`), on its present labels."""
    return {
        "rmse": float(np.sqrt(skm.mean_squared_error(truth, predicted))),
        "mae": float(skm.mean_absolute_error(truth, predicted)),
        "r2": float(skm.r2_score(truth, predicted)) if len(truth) > 1 else math.nan,
    }


def _classification(
    truth: np.ndarray, probability: np.ndarray, threshold: float
) -> dict[str, float]:
    """One task's share of class 1 and metrics (:func:`classification_metrics`), on its present
    labels."""
    truth = truth.astype(int)
    predicted = (probability >= threshold).astype(int)
    both = len(np.unique(truth)) == 2
    with warnings.catch_warnings():  # MCC of constant predictions: 0, with a warning
        warnings.simplefilter("ignore")
        mcc = float(skm.matthews_corrcoef(truth, predicted)) if both else math.nan
    return {
        "positives": float(truth.mean()),
        "roc_auc": float(skm.roc_auc_score(truth, probability)) if both else math.nan,
        "pr_auc": float(skm.average_precision_score(truth, probability)) if both else math.nan,
        "mcc": mcc,
        "balanced_accuracy": (
            float(skm.balanced_accuracy_score(truth, predicted)) if both else math.nan
        ),
        "accuracy": float(skm.accuracy_score(truth, predicted)),
    }


def per_task_metrics(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    task: str,
    targets: Sequence[str] | None = None,
    threshold: float = THRESHOLD,
) -> dict[str, dict[str, float]]:
    """Each task's metrics on its present labels: the per-task table of ``metrics.json``.

    Args:
        y_true: ``[N, T]`` (or ``[N]``) labels; NaN = missing, ignored.
        y_pred: same shape: predictions in the targets' units (regression) or probabilities of
            class 1 (classification).
        task: ``"regression"`` or ``"classification"``.
        targets: the ``T`` task names, the keys of the result (default ``"0"``, ``"1"``, ...).
        threshold: see :data:`THRESHOLD`.

    Returns:
        ``{target: {"n": labels, ...}}``: for regression ``rmse``, ``mae``, ``r2`` (NaN with
        fewer than 2 labels); for classification ``positives`` (share of class 1) and the
        metrics of :func:`classification_metrics`, all but accuracy NaN when the task's labels
        hold one class only. Every metric is NaN for a task without labels, and (with a
        ``UserWarning``) for a task with a prediction that is not a finite number.
    """
    if task == "regression":
        names, compute = REGRESSION, _regression
    else:
        names = ("positives", *CLASSIFICATION)
        compute = partial(_classification, threshold=threshold)
    y_true = np.asarray(y_true, dtype=np.float64).reshape(len(y_true), -1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(len(y_pred), -1)
    if targets is None:
        targets = [str(index) for index in range(y_true.shape[1])]
    table: dict[str, dict[str, float]] = {}
    for index, target in enumerate(targets):
        present = ~np.isnan(y_true[:, index])
        n = int(present.sum())
        bad = int((~np.isfinite(y_pred[present, index])).sum())
        if bad:  # a metric error must not lose a finished training: NaN, said once
            warnings.warn(
                f"target {target!r}: {bad} of {n} predictions are not finite numbers; its "
                "metrics are NaN",
                UserWarning,
                stacklevel=2,
            )
        values = (
            compute(y_true[present, index], y_pred[present, index])
            if n and not bad
            else dict.fromkeys(names, math.nan)
        )
        table[target] = {"n": n, **values}
    return table


def mean_over_tasks(per_task: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each metric of a :func:`per_task_metrics` table averaged over the tasks where it is
    defined (NaN when it is defined for none); the counts ``n`` and ``positives`` are left
    out."""
    first = next(iter(per_task.values()))
    names = [name for name in first if name in REGRESSION or name in CLASSIFICATION]
    means = {}
    for name in names:
        defined = [row[name] for row in per_task.values() if not math.isnan(row[name])]
        means[name] = float(np.mean(defined)) if defined else math.nan
    return means


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """RMSE, MAE and R² in the targets' own units (scikit-learn's ``mean_squared_error``,
    ``mean_absolute_error``, ``r2_score``).

    Args:
        y_true: ``[N, T]`` (or ``[N]``) labels; NaN = missing, ignored.
        y_pred: same shape, predictions.

    Returns:
        ``{"rmse", "mae", "r2"}``, each the mean over tasks of the per-task value.
    """
    return mean_over_tasks(per_task_metrics(y_true, y_pred, "regression"))


def classification_metrics(
    y_true: np.ndarray, probability: np.ndarray, threshold: float = THRESHOLD
) -> dict[str, float]:
    """Metrics of binary (multi-label) classification, each the mean over tasks.

    - ``roc_auc``: area under the receiver operating characteristic curve (true vs false
      positive rate over all thresholds): the chance that a random active is ranked above a
      random inactive; 0.5 = chance. ``sklearn.metrics.roc_auc_score``.
    - ``pr_auc``: area under the precision-recall curve as average precision,
      ``sum_k (R_k - R_{k-1}) P_k`` over the thresholds (no interpolation); its chance level is
      the share of class 1, so it shows what ROC-AUC hides on rare actives.
      ``sklearn.metrics.average_precision_score``.
    - ``mcc``: Matthews correlation coefficient of the predictions at ``threshold``,
      ``(TP TN - FP FN) / sqrt((TP + FP)(TP + FN)(TN + FP)(TN + FN))``, from -1 to 1, 0 =
      chance (and constant predictions); B. W. Matthews, Biochim. Biophys. Acta 405, 442
      (1975). ``sklearn.metrics.matthews_corrcoef``.
    - ``balanced_accuracy``: mean of sensitivity ``TP / (TP + FN)`` and specificity
      ``TN / (TN + FP)`` at ``threshold``; 0.5 = chance; K. H. Brodersen et al., ICPR 2010,
      3121. ``sklearn.metrics.balanced_accuracy_score``.
    - ``accuracy``: share of correct predictions at ``threshold``; misleading on imbalanced
      tasks (predicting the majority class scores its share). ``sklearn.metrics.accuracy_score``.

    Args:
        y_true: ``[N, T]`` labels in {0, 1}; NaN = missing, ignored.
        probability: ``[N, T]`` predicted probability of class 1.
        threshold: see :data:`THRESHOLD`.

    Returns:
        ``{"roc_auc", "pr_auc", "mcc", "balanced_accuracy", "accuracy"}``. All but accuracy
        are NaN (and left out of the mean) for a task whose labels hold a single class.
    """
    return mean_over_tasks(
        per_task_metrics(y_true, probability, "classification", threshold=threshold)
    )


def domain_metrics(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    in_domain: np.ndarray,
    task: str,
    targets: Sequence[str] | None = None,
) -> dict[str, dict[str, float]]:
    """The metrics of the molecules in and out of the applicability domain, apart.

    Args:
        y_true, y_pred, task, targets: as :func:`per_task_metrics`.
        in_domain: ``bool [N]``, each molecule's ``in_domain``
            (:mod:`chemgraph.data.applicability`).

    Returns:
        ``{"in_domain": {"molecules": n, ...}, "out_of_domain": {"molecules": m, ...}}``: the
        number of molecules and the :func:`mean_over_tasks` of :func:`per_task_metrics` of
        each group (every metric NaN for an empty group).
    """
    in_domain = np.asarray(in_domain, dtype=bool)
    y_true = np.asarray(y_true, dtype=np.float64).reshape(len(in_domain), -1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(len(in_domain), -1)
    names = REGRESSION if task == "regression" else CLASSIFICATION
    groups = {}
    for name, members in (("in_domain", in_domain), ("out_of_domain", ~in_domain)):
        values = dict.fromkeys(names, math.nan)
        if members.any():
            table = per_task_metrics(y_true[members], y_pred[members], task, targets)
            values = mean_over_tasks(table)
        groups[name] = {"molecules": int(members.sum()), **values}
    return groups


def spread_error_correlation(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    spread: np.ndarray,
    targets: Sequence[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Per target, the Spearman rank correlation of an ensemble's spread with its absolute
    error: 1 when the molecules with the larger spread are always those with the larger error,
    0 when the spread says nothing about the error (C. Spearman, Am. J. Psychol. 15, 72 (1904);
    ``scipy.stats.spearmanr``, ties at their mean rank).

    Args:
        y_true: ``[N, T]`` (or ``[N]``) labels; NaN = missing, ignored.
        y_pred: same shape: the ensemble's mean prediction (target units, or a probability of
            class 1, whose absolute error is then ``|p - y|``).
        spread: same shape: the members' standard deviation.
        targets: the ``T`` target names, the keys of the result (default ``"0"``, ...).

    Returns:
        ``{target: {"molecules": n, "spearman": rho}}`` over the ``n`` labelled molecules;
        ``rho`` NaN with fewer than 3 of them or a constant spread or error.
    """
    y_true = np.asarray(y_true, dtype=np.float64).reshape(len(y_true), -1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(len(y_true), -1)
    spread = np.asarray(spread, dtype=np.float64).reshape(len(y_true), -1)
    if targets is None:
        targets = [str(index) for index in range(y_true.shape[1])]
    table = {}
    for index, target in enumerate(targets):
        present = ~np.isnan(y_true[:, index])
        error = np.abs(y_pred[present, index] - y_true[present, index])
        deviation = spread[present, index]
        rho = math.nan
        if len(error) >= 3 and np.ptp(error) > 0 and np.ptp(deviation) > 0:
            rho = float(stats.spearmanr(deviation, error).statistic)
        table[target] = {"molecules": int(present.sum()), "spearman": rho}
    return table


def _missing(value: float | None) -> bool:
    """NaN, or None (NaN as written to ``metrics.json``)."""
    return value is None or math.isnan(value)


def format_ensemble_metrics(metrics: dict, seeds: list[int]) -> str:
    """What ``chemgraph train --ensemble K`` prints: a table of the test metrics of each member
    (``metrics["members"]``, with its weight seed from ``seeds``) and of the members' mean
    prediction, then :func:`format_metrics` of the mean prediction.

    Args:
        metrics: the metrics of :func:`chemgraph.jobs.train.train_ensemble`.
        seeds: each member's weight seed, in member order.
    """
    names = [name for name in metrics["test"] if name in _SHOWN]
    header = f"{'test split':<12}{'seed':>6}" + "".join(f"{_SHOWN[n]:>10}" for n in names)
    lines = [header]
    for index, (member, seed) in enumerate(zip(metrics["members"], seeds, strict=True)):
        values = "".join(_number(member["test"][n], 10) for n in names)
        lines.append(f"{f'model-{index}':<12}{seed:>6}{values}")
    mean = "".join(_number(metrics["test"][n], 10) for n in names)
    lines.append(f"{'ensemble':<12}{'-':>6}{mean}")
    return "\n".join(
        [*lines, "", f"ensemble (mean prediction of {len(seeds)} models):", format_metrics(metrics)]
    )


def _number(value: float | None, width: int, digits: int = 4) -> str:
    """``value`` right-aligned in ``width`` characters; NaN or None as n/a; in scientific
    notation when ``digits`` decimals would not leave a space before it (e.g. the RMSE of a
    target with a mislabelled 1e20 among its values), so that the columns stay aligned."""
    if _missing(value):
        return f"{'n/a':>{width}}"
    text = f"{value:.{digits}f}"
    if width and len(text) >= width:
        text = f"{value:.{max(digits - 2, 1)}e}"
    return f"{text:>{width}}"


def _headline(split: str, means: dict, per_task: dict[str, dict] | None) -> str | None:
    """The ROC-AUC of a classification split, and its PR-AUC against chance when a task there is
    imbalanced (:data:`IMBALANCED`); None for regression."""
    if "roc_auc" not in means:
        return None
    line = f"{split} ROC-AUC {_number(means['roc_auc'], 0, 3)}"
    shares = [row["positives"] for row in (per_task or {}).values() if not _missing(row["pr_auc"])]
    if any(min(share, 1 - share) < IMBALANCED for share in shares):
        line += (
            f", PR-AUC {_number(means['pr_auc'], 0, 3)} (chance {np.mean(shares):.3f}): "
            "imbalanced classes, so read PR-AUC and MCC rather than accuracy"
        )
    return line


def _per_task_table(per_task: dict[str, dict]) -> list[str]:
    """One aligned row per task: n, % of class 1 (classification) and the shown metrics."""
    first = next(iter(per_task.values()))
    names = [name for name in first if name in _SHOWN]
    share = "positives" in first
    width = max(len("task"), *map(len, per_task))
    header = f"{'task':<{width}}{'n':>7}" + ("  pos%" if share else "")
    lines = [header + "".join(f"{_SHOWN[n]:>9}" for n in names)]
    for target, row in per_task.items():
        line = f"{target:<{width}}{row['n']:>7}"
        if share:
            line += _number(None if _missing(row["positives"]) else 100 * row["positives"], 6, 1)
        lines.append(line + "".join(_number(row[n], 9) for n in names))
    return lines


def _notes(split: str, per_task: dict[str, dict]) -> list[str]:
    """Why a task's metrics read n/a in ``split``."""
    notes = []
    for target, row in per_task.items():
        if row["n"] == 0:
            notes.append(f"note: {target!r} has no labels in the {split} split (n/a)")
        elif "roc_auc" in row and _missing(row["roc_auc"]):
            notes.append(
                f"note: {target!r} holds only class {round(row['positives'])} in the {split} "
                "split: ROC-AUC, PR-AUC, MCC, BAL-ACC n/a (left out of the means)"
            )
        elif "r2" in row and row["n"] == 1:
            notes.append(f"note: {target!r} has one label in the {split} split: R2 n/a")
    return notes


def format_metrics(metrics: dict) -> str:
    """What ``chemgraph train`` prints: the metrics of
    :func:`chemgraph.jobs.train.train` (``{"val": {...}, "test": {...}}``, optionally
    ``"per_task": {split: {target: {...}}}`` and ``"mean_predictor": {split: {...}}``, the
    metrics of predicting the training mean, printed as a last row of the test split) as plain
    text.

    For classification, a headline with the test ROC-AUC (and PR-AUC with its chance level when
    a task is imbalanced); then a table of the mean metrics, one row per split (4 decimals,
    ``n/a`` for NaN or null); with several tasks, the per-task table of the test split; last, a
    note for each task whose metrics are undefined in a split (no labels, a single class).
    """
    splits = [name for name in ("val", "test") if name in metrics]
    per_task = metrics.get("per_task", {})
    names = [name for name in metrics[splits[0]] if name in _SHOWN]
    lines = []
    headline = _headline(splits[-1], metrics[splits[-1]], per_task.get(splits[-1]))
    if headline:
        lines.append(headline)
    rows = [(split, metrics[split]) for split in splits]
    if "mean_predictor" in metrics:  # the simplest baseline, on the same molecules
        rows.append((f"{splits[-1]}, mean predictor", metrics["mean_predictor"][splits[-1]]))
    width = max(6, *(len(label) + 2 for label, _ in rows))
    lines.append(f"{'split':<{width}}" + "".join(f"{_SHOWN[n]:>10}" for n in names))
    for label, values in rows:
        lines.append(f"{label:<{width}}" + "".join(_number(values[n], 10) for n in names))
    if len(per_task.get("test", {})) > 1:
        lines += ["", "per task (test split):", *_per_task_table(per_task["test"])]
    for split in splits:
        lines += _notes(split, per_task.get(split, {}))
    return "\n".join(lines)
