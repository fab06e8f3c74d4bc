import math

import numpy as np
import pytest
import torch

from chemgraph.train import TargetScaler, classification_metrics, masked_loss, regression_metrics
from chemgraph.train.metrics import domain_metrics, spread_error_correlation


def test_regression_metrics_by_hand():
    result = regression_metrics(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 5.0]))
    assert result["rmse"] == pytest.approx(math.sqrt(4 / 3))
    assert result["mae"] == pytest.approx(2 / 3)
    assert result["r2"] == pytest.approx(1 - 4 / 2)


def test_regression_metrics_ignore_missing_labels_and_average_tasks():
    truth = np.array([[1.0, np.nan], [2.0, 0.0], [3.0, 2.0]])
    predicted = np.array([[1.0, 100.0], [2.0, 1.0], [5.0, 2.0]])
    result = regression_metrics(truth, predicted)
    assert result["mae"] == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_classification_metrics_by_hand():
    result = classification_metrics(np.array([0, 1, 1, 0.0]), np.array([0.2, 0.8, 0.4, 0.6]))
    assert result["accuracy"] == pytest.approx(0.5)
    assert result["mcc"] == pytest.approx(0.0)
    assert result["roc_auc"] == pytest.approx(0.75)


def test_masked_loss_by_hand():
    outputs = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    labels = torch.tensor([[0.0, float("nan")], [1.0, 1.0]])
    assert masked_loss(outputs, labels, "regression").item() == pytest.approx((1 + 4 + 9) / 3)
    logits = torch.tensor([[0.0, 5.0]])
    labels = torch.tensor([[1.0, float("nan")]])
    assert masked_loss(logits, labels, "classification").item() == pytest.approx(math.log(2))


def test_masked_loss_without_labels_is_zero_with_zero_gradient():
    outputs = torch.ones(2, 1, requires_grad=True)
    loss = masked_loss(outputs, torch.full((2, 1), float("nan")), "regression")
    loss.backward()
    assert loss.item() == 0 and torch.equal(outputs.grad, torch.zeros(2, 1))


def test_target_scaler_ignores_missing_and_round_trips():
    labels = torch.tensor([[1.0, 5.0], [3.0, float("nan")], [5.0, 5.0]])
    scaler = TargetScaler.fit(labels)
    assert scaler.mean == pytest.approx([3.0, 5.0])
    assert scaler.std == pytest.approx([math.sqrt(8 / 3), 1.0])  # constant task -> std 1
    values = torch.tensor([[0.5, -1.0]])
    torch.testing.assert_close(scaler.transform(scaler.inverse_transform(values)), values)


def test_domain_metrics_by_hand():
    truth = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    predicted = np.array([1.0, 2.0, 5.0, 4.0, 8.0, 0.0])
    in_domain = np.array([True, True, True, False, False, False])
    truth[5] = np.nan  # an unlabelled molecule still counts as a molecule of its group
    result = domain_metrics(truth, predicted, in_domain, "regression", ["y"])
    # in: errors 0, 0, 2; out: errors 0, 3
    assert result["in_domain"] == pytest.approx(
        {"molecules": 3, "rmse": math.sqrt(4 / 3), "mae": 2 / 3, "r2": 1 - 4 / 2}
    )
    assert result["out_of_domain"]["molecules"] == 3
    assert result["out_of_domain"]["rmse"] == pytest.approx(math.sqrt(9 / 2))
    assert result["out_of_domain"]["mae"] == pytest.approx(3 / 2)
    every = domain_metrics(truth[:3], predicted[:3], in_domain[:3], "regression", ["y"])
    assert every["out_of_domain"]["molecules"] == 0
    assert all(math.isnan(every["out_of_domain"][name]) for name in ("rmse", "mae", "r2"))
    labels = np.array([[1.0], [0.0], [1.0], [0.0]])
    probability = np.array([[0.9], [0.2], [0.3], [0.6]])
    classes = domain_metrics(labels, probability, np.array([1, 1, 0, 0], bool), "classification")
    assert classes["in_domain"]["roc_auc"] == 1.0 and classes["out_of_domain"]["roc_auc"] == 0.0


def test_spread_error_correlation_by_hand():
    truth = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, np.nan], [np.nan, 0.0]])
    predicted = np.array([[1.0, 1.0], [-3.0, 2.0], [2.0, 3.0], [4.0, 4.0], [9.0, 5.0]])
    spread = np.array([[0.1, 0.5], [0.2, 0.5], [0.3, 0.5], [0.4, 0.5], [0.5, 0.5]])
    result = spread_error_correlation(truth, predicted, spread, ["a", "b"])
    # a: spread ranks 1 2 3 4, absolute error 1 3 2 4 -> ranks 1 3 2 4; d = 0 -1 1 0:
    # rho = 1 - 6 x 2 / (4 x (16 - 1)) = 0.8
    assert result["a"] == {"molecules": 4, "spearman": pytest.approx(0.8)}
    # b: a constant spread says nothing: undefined
    assert result["b"]["molecules"] == 4 and math.isnan(result["b"]["spearman"])
    two = spread_error_correlation(truth[:2, :1], predicted[:2, :1], spread[:2, :1])
    assert two["0"]["molecules"] == 2 and math.isnan(two["0"]["spearman"])
