"""Label cells as numbers: the one rule of ``chemgraph train`` and ``chemgraph featurize``.

Pandas-free (``featurize`` workers import neither pandas nor DGL).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MISSING_LABEL_TOKENS", "parse_label"]

MISSING_LABEL_TOKENS: frozenset[str] = frozenset({"", "nan", "na", "n/a", "null", "none"})
"""Target cells that mean "label missing" (compared after ``strip().lower()``)."""

_FLOAT32_MAX = float(np.finfo(np.float32).max)


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
            return float("nan"), f"target {column!r}: {cell!r} is not a number"
    else:
        try:
            value = float(cell)
        except (TypeError, ValueError):
            return float("nan"), f"target {column!r}: {cell!r} is not a number"
    if not np.isnan(value) and abs(value) > _FLOAT32_MAX:
        return value, (
            f"target {column!r}: {value} is not a finite float32 number "
            f"(|value| must be at most {_FLOAT32_MAX:.3e})"
        )
    return value, None
