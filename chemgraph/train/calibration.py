"""Probability calibration on held-out data: Platt scaling and reliability tables.

A model's scores are calibrated when, of the predictions given probability ``p``, a share ``p``
is right. :func:`fit_platt_scaling` fits ``P(right) = sigmoid(w · features + b)`` by logistic
regression on held-out predictions (Platt 1999, "Probabilistic outputs for support vector
machines and comparisons to regularized likelihood methods", in *Advances in Large Margin
Classifiers*; scikit-learn's ``LogisticRegression``); :func:`reliability_table` and
:func:`expected_calibration_error` measure calibration in equal-width probability bins (Guo et
al. 2017, "On calibration of modern neural networks", ICML, arXiv:1706.04599, eq. 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "PlattScaling",
    "expected_calibration_error",
    "fit_platt_scaling",
    "reliability_table",
]


@dataclass(frozen=True)
class PlattScaling:
    """``P(right) = sigmoid(coefficients · features + intercept)``.

    Attributes:
        features: the names of the feature columns, in order.
        coefficients: one weight per feature.
        intercept: the bias.
        examples: how many held-out predictions it was fitted on.
    """

    features: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    examples: int

    def probability(self, features: np.ndarray) -> np.ndarray:
        """Calibrated probabilities ``float64 [N]`` of ``features float [N, F]`` (columns in
        the order of :attr:`features`)."""
        features = np.asarray(features, dtype=np.float64).reshape(-1, len(self.coefficients))
        logit = features @ np.asarray(self.coefficients, dtype=np.float64) + self.intercept
        return 1.0 / (1.0 + np.exp(-logit))

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for a ``weights_only`` checkpoint or JSON)."""
        return {
            "features": list(self.features),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "examples": self.examples,
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> PlattScaling:
        """Inverse of :meth:`to_dict`."""
        return cls(
            tuple(values["features"]),
            tuple(float(c) for c in values["coefficients"]),
            float(values["intercept"]),
            int(values["examples"]),
        )


def fit_platt_scaling(
    features: np.ndarray, right: np.ndarray, names: Sequence[str]
) -> PlattScaling:
    """Fit :class:`PlattScaling` to held-out predictions: logistic regression with scikit-learn's
    default L2 penalty (C = 1: negligible for thousands of predictions, and it keeps the
    weights finite when the features separate right from wrong perfectly).

    Args:
        features: ``float [N, F]``, one row per held-out prediction.
        right: ``bool [N]``, whether each prediction is right.
        names: the ``F`` feature names.

    Raises:
        ValueError: shapes that disagree, or ``right`` all True or all False (nothing to fit).
    """
    from sklearn.linear_model import LogisticRegression

    features = np.asarray(features, dtype=np.float64)
    right = np.asarray(right, dtype=bool)
    if features.ndim != 2 or features.shape != (len(right), len(names)):
        raise ValueError(
            f"features {features.shape} do not match {len(right)} labels and {len(names)} names"
        )
    if right.all() or not right.any():
        raise ValueError("calibration needs right and wrong predictions; got only one kind")
    fit = LogisticRegression(C=1.0, max_iter=1000).fit(features, right)
    return PlattScaling(
        tuple(names),
        tuple(float(c) for c in fit.coef_[0]),
        float(fit.intercept_[0]),
        len(right),
    )


def _bins(confidence: np.ndarray, bins: int) -> np.ndarray:
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.clip(np.digitize(confidence, edges[1:-1]), 0, bins - 1)


def reliability_table(
    confidence: np.ndarray, right: np.ndarray, bins: int = 10
) -> list[list[float]]:
    """Per non-empty equal-width probability bin, ``[mean probability, share right, count]``.

    Args:
        confidence: ``float [N]`` probabilities in [0, 1].
        right: ``bool [N]``.
        bins: number of bins of [0, 1] (the last one includes 1).
    """
    confidence = np.asarray(confidence, dtype=np.float64)
    right = np.asarray(right, dtype=bool)
    index = _bins(confidence, bins)
    counts = np.bincount(index, minlength=bins)
    return [
        [float(confidence[index == b].mean()), float(right[index == b].mean()), int(counts[b])]
        for b in range(bins)
        if counts[b]
    ]


def expected_calibration_error(confidence: np.ndarray, right: np.ndarray, bins: int = 10) -> float:
    """The expected calibration error: over the bins of :func:`reliability_table`, the mean of
    ``abs(share right - mean probability)`` weighted by the bin's count (Guo et al. 2017,
    eq. 3); 0 for perfectly calibrated scores, NaN for no predictions."""
    rows = reliability_table(confidence, right, bins)
    total = sum(row[2] for row in rows)
    if total == 0:
        return float("nan")
    return float(sum(count / total * abs(share - mean) for mean, share, count in rows))
