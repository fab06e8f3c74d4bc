"""Training toolkit: run configurations, the Trainer, Lightning modules, checkpoints, metrics.

Layer rule: imports only from the layers below it (chem, featurize, graphs, batches, nn, models,
data); never from :mod:`chemgraph.jobs`, :mod:`chemgraph.recipes` or :mod:`chemgraph.cli`.

* :mod:`chemgraph.train.config`: :class:`RunConfig` (the base of every YAML-backed run
  configuration), :class:`TrainingConfig` (``chemgraph train``), partial-configuration merging.
* :mod:`chemgraph.train.trainer`: :func:`make_trainer` (the one ``lightning.Trainer`` factory),
  :func:`quiet_third_party_warnings`.
* :mod:`chemgraph.train.callbacks`: :class:`EpochProgress`, :class:`LossHistory`,
  :class:`ValidationLog` (progress).
* :mod:`chemgraph.train.predictors`: :class:`PropertyPredictor` and
  :class:`~chemgraph.train.predictors.ReactionPredictor`, the trained models as plain
  ``torch.nn.Module`` (what inference runs; no Lightning), and the parts the Lightning modules
  share with them.
* :mod:`chemgraph.train.checkpoint`: :func:`load_checkpoint` (the one loader of trained
  models, into those predictors), best weights of a fit.
* :mod:`chemgraph.train.delta`: :class:`~chemgraph.train.delta.DeltaLearning` (the linear
  correction a Δ-learning transfer model's residual is added to, kept in its checkpoint).
* :mod:`chemgraph.train.module`: :class:`PropertyPredictionModule`, :func:`masked_loss`;
  :mod:`chemgraph.train.reaction_module`: ``ReactionModule`` (GRAT translation): the Lightning
  modules that train them.
* :mod:`chemgraph.train.inference`: :func:`predict_graphs` (the one forward loop of trained
  models over a set of graphs).
* :mod:`chemgraph.train.metrics`, :mod:`chemgraph.train.scaler`, :mod:`chemgraph.train.plots`.

The commands that use this toolkit (train, predict, transfer, react) live one level up, in
:mod:`chemgraph.jobs`.

Every module is imported on first use of one of its names (``from chemgraph.train import
TargetScaler`` imports :mod:`chemgraph.train.scaler` alone), and by its own name: inference
(:mod:`~chemgraph.train.predictors`, :mod:`~chemgraph.train.checkpoint`,
:mod:`~chemgraph.train.inference`, :mod:`~chemgraph.train.ensemble`) imports no Lightning,
so ``chemgraph predict``, ``fingerprint`` and ``react`` and their worker processes start
without it (Lightning imports torchmetrics, which imports transformers when it is installed:
seconds of start-up per process).

Progress and notes are logged (``logging``, INFO) under ``chemgraph.train.*``; nothing here
prints but :class:`EpochProgress`'s bar (stderr, on a terminal).
"""

from chemgraph._lazy import lazy_attributes

# name -> the module that defines it
_MODULES = {
    # these import Lightning
    "EpochProgress": "callbacks",
    "LossHistory": "callbacks",
    "ValidationLog": "callbacks",
    "PropertyPredictionModule": "module",
    "masked_loss": "module",
    "make_trainer": "trainer",
    "quiet_third_party_warnings": "trainer",
    # these do not
    "RunConfig": "config",
    "TrainingConfig": "config",
    "PropertyPredictor": "predictors",
    "load_checkpoint": "checkpoint",
    "classification_metrics": "metrics",
    "format_metrics": "metrics",
    "regression_metrics": "metrics",
    "TargetScaler": "scaler",
}

__all__ = sorted(_MODULES)

__getattr__ = lazy_attributes(__name__, _MODULES)
