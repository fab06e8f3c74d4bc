"""Training: Lightning modules, losses, metrics, target scaling and the training runner."""

from chemgraph.train.metrics import classification_metrics, regression_metrics
from chemgraph.train.module import PropertyPredictionModule, masked_loss
from chemgraph.train.scaler import TargetScaler

__all__ = [
    "PropertyPredictionModule",
    "TargetScaler",
    "classification_metrics",
    "masked_loss",
    "regression_metrics",
]
