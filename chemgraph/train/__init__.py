"""Training toolkit: run configurations, the Trainer, Lightning modules, checkpoints, metrics.

Layer rule: imports only from the layers below it (chem, featurize, graphs, batches, nn, models,
data); never from :mod:`chemgraph.jobs`, :mod:`chemgraph.recipes` or :mod:`chemgraph.cli`.

* :mod:`chemgraph.train.config`: :class:`RunConfig` (the base of every YAML-backed run
  configuration), :class:`TrainingConfig` (``chemgraph train``), partial-configuration merging.
* :mod:`chemgraph.train.trainer`: :func:`make_trainer` (the one ``lightning.Trainer`` factory),
  :func:`quiet_third_party_warnings`.
* :mod:`chemgraph.train.callbacks`: :class:`EpochProgress`, :class:`LossHistory`,
  :class:`ValidationLog` (progress).
* :mod:`chemgraph.train.checkpoint`: :func:`load_checkpoint` (the one loader of trained
  modules), best weights of a fit.
* :mod:`chemgraph.train.delta`: :class:`~chemgraph.train.delta.DeltaLearning` (the linear
  correction a Δ-learning transfer model's residual is added to, kept in its checkpoint).
* :mod:`chemgraph.train.module`: :class:`PropertyPredictionModule`, :func:`masked_loss`;
  :mod:`chemgraph.train.reaction_module`: ``ReactionModule`` (GRAT translation).
* :mod:`chemgraph.train.inference`: :func:`predict_graphs` (the one forward loop of trained
  modules over a set of graphs).
* :mod:`chemgraph.train.metrics`, :mod:`chemgraph.train.scaler`, :mod:`chemgraph.train.plots`.

The commands that use this toolkit (train, predict, transfer, react) live one level up, in
:mod:`chemgraph.jobs`.

Progress and notes are logged (``logging``, INFO) under ``chemgraph.train.*``; nothing here
prints but :class:`EpochProgress`'s bar (stderr, on a terminal).
"""

from chemgraph.train.callbacks import EpochProgress, LossHistory, ValidationLog
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.config import RunConfig, TrainingConfig
from chemgraph.train.metrics import classification_metrics, format_metrics, regression_metrics
from chemgraph.train.module import PropertyPredictionModule, masked_loss
from chemgraph.train.scaler import TargetScaler
from chemgraph.train.trainer import make_trainer, quiet_third_party_warnings

__all__ = [
    "EpochProgress",
    "LossHistory",
    "PropertyPredictionModule",
    "RunConfig",
    "TargetScaler",
    "TrainingConfig",
    "ValidationLog",
    "classification_metrics",
    "format_metrics",
    "load_checkpoint",
    "make_trainer",
    "masked_loss",
    "quiet_third_party_warnings",
    "regression_metrics",
]
