"""Platt scaling and reliability tables (chemgraph.train.calibration), and the reaction-centre
model's calibration features, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chemgraph.reactions.reaction_centre_calibration import (
    CALIBRATION_FEATURES,
    calibration_features,
    product_probabilities,
)
from chemgraph.train.calibration import (
    PlattScaling,
    expected_calibration_error,
    fit_platt_scaling,
    reliability_table,
)


def test_reliability_table_and_ece_by_hand():
    confidence = np.array([0.05, 0.15, 0.95, 0.97, 1.0])
    right = np.array([False, True, True, False, True])
    table = reliability_table(confidence, right)
    # bins [0, .1), [.1, .2), ..., [.9, 1]: 1.0 falls in the last one
    assert np.array(table) == pytest.approx(
        np.array([[0.05, 0.0, 1], [0.15, 1.0, 1], [0.9733333, 2 / 3, 3]]), abs=1e-6
    )
    ece = 1 / 5 * 0.05 + 1 / 5 * 0.85 + 3 / 5 * abs(2 / 3 - 0.9733333)
    assert expected_calibration_error(confidence, right) == pytest.approx(ece, abs=1e-6)
    assert math.isnan(expected_calibration_error(np.zeros(0), np.zeros(0, dtype=bool)))


def test_platt_scaling_recovers_the_logistic_it_was_drawn_from():
    generator = np.random.default_rng(0)
    x = generator.normal(size=(20_000, 2))
    p = 1 / (1 + np.exp(-(1.5 * x[:, 0] - 0.5 * x[:, 1] + 0.25)))
    right = generator.random(20_000) < p
    fit = fit_platt_scaling(x, right, ["a", "b"])
    assert fit.coefficients == pytest.approx((1.5, -0.5), abs=0.08)
    assert fit.intercept == pytest.approx(0.25, abs=0.08)
    assert fit.examples == 20_000
    assert fit.probability(x) == pytest.approx(p, abs=0.05)
    assert PlattScaling.from_dict(fit.to_dict()) == fit


def test_platt_scaling_needs_both_kinds_and_matching_shapes():
    with pytest.raises(ValueError, match="right and wrong"):
        fit_platt_scaling(np.zeros((3, 1)), np.ones(3, dtype=bool), ["a"])
    with pytest.raises(ValueError, match="do not match"):
        fit_platt_scaling(np.zeros((3, 2)), np.array([True, False, True]), ["a"])


def test_calibration_features_by_hand():
    features = calibration_features(
        np.array([0.3, 0.5, 0.2]), [1.5, 2.0, -1.0], [1, 2, 3], CALIBRATION_FEATURES,
        [0.5, -1.0, 2.0], [3.0, -4.0, -20.0], [0.0, -0.5, -3.5],
    )  # fmt: skip
    log = np.log([0.3, 0.5, 0.2])
    assert features.shape == (3, 8)
    assert features[:, 5].tolist() == [0.5, -1.0, 2.0]
    assert features[:, 6].tolist() == [3.0, -4.0, -20.0]
    assert features[:, 7].tolist() == [0.0, -0.5, -3.5]  # gaps below the best refused product
    assert features[:, 0] == pytest.approx(log)
    # margin over the best other candidate: 0.5 for the others, 0.3 for the best
    margin = [log[0] - log[1], log[1] - log[0], log[2] - log[1]]
    assert features[:, 1] == pytest.approx(margin)
    assert features[:, 2] == pytest.approx([margin[0], 0.0, margin[2]])  # gap to the best
    assert features[:, 3].tolist() == [1.5, 2.0, -1.0] and features[:, 4].tolist() == [1, 2, 3]
    (only,) = calibration_features(
        np.array([1.0]), [0.5], [2], CALIBRATION_FEATURES, [1], [0], [-2.0]
    )
    assert only == pytest.approx([0.0, 20.0, 0.0, 0.5, 2.0, 1.0, 0.0, -2.0])
    # a model calibrated on the earlier two features gets those two columns, in its order
    two = calibration_features(np.array([0.3, 0.5, 0.2]), [0, 0, 0], [1, 1, 1],
                               ("log_margin", "log_probability"))  # fmt: skip
    assert two == pytest.approx(features[:, [1, 0]])
    with pytest.raises(KeyError):
        calibration_features(np.array([1.0]), [0.5], [2], ("confidence",))


def test_product_probabilities_sum_to_at_most_one():
    # one feature, weight 1, no intercept: sigmoid of the feature
    calibration = PlattScaling(("x",), (1.0,), 0.0, 10)
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    high = np.array([[logit(0.75)], [logit(0.5)]])  # 1.25 together: scaled to 0.6, 0.4
    assert product_probabilities(calibration, high) == pytest.approx([0.6, 0.4])
    low = np.array([[logit(0.3)], [logit(0.2)]])  # 0.5 together: kept
    assert product_probabilities(calibration, low) == pytest.approx([0.3, 0.2])
