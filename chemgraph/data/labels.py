"""Label cells as numbers: the one rule of ``chemgraph train`` and ``chemgraph featurize``.

Pandas-free (``featurize`` workers import neither pandas nor DGL).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MISSING_LABEL_TOKENS", "OUTLIER_ROBUST_Z", "label_outliers", "parse_label"]

MISSING_LABEL_TOKENS: frozenset[str] = frozenset({"", "nan", "na", "n/a", "null", "none"})
"""Target cells that mean "label missing" (compared after ``strip().lower()``)."""

_FLOAT32_MAX = float(np.finfo(np.float32).max)

OUTLIER_ROBUST_Z = 1000.0
"""Robust z-score (distance from the median in units of ``1.4826 × MAD``) above which a
regression label is reported by :func:`label_outliers`. Noise and the long tails of real
assay data stay far below it (a log-normal IC50 in nM a thousandfold above the median scores
about 750 in a set that spans two decades); a wrong unit or a typed exponent (``1e20`` among
log solubilities) is far above it, and would dominate the target scaler and every RMSE."""


def parse_label(cell: Any, column: str) -> tuple[float, str | None]:
    """One label cell as ``(float64 value, None)``, NaN when missing (``None`` or a text in
    :data:`MISSING_LABEL_TOKENS`), or ``(NaN, reason)`` when it is not a number or not a
    finite float32 number (models train in float32).

    Args:
        cell: the cell as read: text (a CSV field, an SD property), a number, or None.
        column: the column's name, for the reason.
    """
    if cell is None:
        return float("nan"), None
    if isinstance(cell, str):
        text = cell.strip()
        if text.lower() in MISSING_LABEL_TOKENS:
            return float("nan"), None
        try:
            value = float(text)
        except ValueError:
            return float("nan"), f"column {column!r}: {cell!r} is not a number"
    else:
        try:
            value = float(cell)
        except (TypeError, ValueError):
            return float("nan"), f"column {column!r}: {cell!r} is not a number"
    if not np.isnan(value) and abs(value) > _FLOAT32_MAX:
        return value, (
            f"column {column!r}: {value} is not a finite float32 number "
            f"(|value| must be at most {_FLOAT32_MAX:.3e})"
        )
    return value, None


def label_outliers(
    labels: np.ndarray, columns: list[str], rows: np.ndarray, inputs: list[str]
) -> list[str]:
    """Regression labels so far from the rest of their column that they are almost surely an
    error of the data (a unit, a typed exponent), one message per label, naming it.

    A label is reported when its robust z-score ``|y - median| / (1.4826 MAD)`` exceeds
    :data:`OUTLIER_ROBUST_Z` (Rousseeuw and Croux 1993, "Alternatives to the median absolute
    deviation", J. Am. Stat. Assoc. 88, 1273, doi:10.1080/01621459.1993.10476408); a column
    whose MAD is 0 (most labels equal) uses its mean absolute deviation from the median
    instead, and a constant column reports nothing. Labels are not changed: the caller warns.

    Args:
        labels: ``float [N, T]`` labels in the targets' units, NaN = missing.
        columns: the ``T`` target names.
        rows: ``int [N]`` source-file row of each molecule (0-based data rows).
        inputs: the ``N`` inputs as given (SMILES), for the message.

    Returns:
        ``"target 'logS': row 5 (CCO) has 1e+20, 2.1e+19 robust standard deviations from the
        median -3.06"``-style messages, largest first per column; empty when none.
    """
    values = np.asarray(labels, dtype=np.float64).reshape(len(rows), len(columns))
    messages = []
    for j, column in enumerate(columns):
        present = np.flatnonzero(~np.isnan(values[:, j]))
        if present.size < 3:
            continue
        column_values = values[present, j]
        median = float(np.median(column_values))
        deviation = np.abs(column_values - median)
        scale = 1.4826 * float(np.median(deviation)) or float(deviation.mean())
        if scale == 0.0:
            continue
        robust_z = deviation / scale
        for k in np.argsort(-robust_z):
            if robust_z[k] <= OUTLIER_ROBUST_Z:
                break
            i = present[k]
            messages.append(
                f"target {column!r}: row {int(rows[i])} ({inputs[i]}) has {values[i, j]:.6g}, "
                f"{robust_z[k]:.3g} robust standard deviations from the median {median:.6g}"
            )
    return messages
