import math

import numpy as np
import pytest
import torch

from chemgraph.train import TargetScaler, classification_metrics, masked_loss, regression_metrics


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
