"""Trained models as plain ``torch.nn.Module``: what inference runs, without Lightning.

:func:`chemgraph.train.checkpoint.load_checkpoint` rebuilds a checkpoint into one of them:

* :class:`PropertyPredictor`: a property model (:class:`chemgraph.models.PropertyModel`), its
  target scaler and task (``chemgraph predict``, ``chemgraph fingerprint``, evaluation,
  fine-tuning's starting weights);
* :class:`ReactionPredictor`: a GRAT translator and its token vocabulary (``chemgraph react
  --decoder generate``, the reaction_outcome recipe's evaluation).

The Lightning modules that train them, :class:`chemgraph.train.module.PropertyPredictionModule`
and :class:`chemgraph.train.reaction_module.ReactionModule`, build their networks and compute
their outputs through the same bases (:class:`PropertyPredictorBase`,
:class:`ReactionPredictorBase`): a trained module and the predictor rebuilt from its
checkpoint hold the same parameters under the same names (``model.*``) and give the same
outputs, and every function that runs a trained model (:mod:`chemgraph.train.inference`,
:func:`chemgraph.reactions.translator_prediction.predict_reactions`) takes either.

This module imports no Lightning, so neither do the commands that only predict, nor their
worker processes: Lightning imports torchmetrics, which imports transformers when it is
installed (the ``mapping`` extra), seconds of CPU time per process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from chemgraph.batches.reaction import TokenVocabulary
from chemgraph.chem import MoleculePreparation
from chemgraph.models import (
    LabelAugmentation,
    augmented_batch_builder,
    build_model,
    get_model_spec,
)
from chemgraph.models.grat import GRATTranslator, GRATTranslatorConfig, ValenceRules
from chemgraph.train.scaler import TargetScaler

if TYPE_CHECKING:
    from chemgraph.train.baselines import BaselineModel
    from chemgraph.train.delta import DeltaLearning

__all__ = [
    "BASELINE_KIND",
    "DELTA_LEARNING_KEY",
    "BaselinePredictor",
    "TASKS",
    "Task",
    "HyperParameters",
    "PropertyPredictor",
    "PropertyPredictorBase",
    "ReactionPredictor",
    "ReactionPredictorBase",
]

Task = Literal["regression", "classification"]

TASKS = ("regression", "classification")
"""The tasks of a property model."""


class HyperParameters(dict):
    """A checkpoint's ``hyper_parameters`` as a predictor holds them: a dict whose keys also
    read as attributes (``hparams.task``), as a Lightning module's ``hparams`` do.

    Raises:
        AttributeError: reading an attribute that is not one of its keys.
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no hyper-parameter {name!r}") from None


DELTA_LEARNING_KEY = "delta_learning"
"""The checkpoint key of a Δ-learning model's correction
(:meth:`chemgraph.train.delta.DeltaLearning.to_dict`); absent for a model whose outputs are the
labels."""


def _preparation(hparams: Mapping[str, Any]) -> MoleculePreparation:
    return MoleculePreparation(
        standardize=hparams.get("standardize", "none"), fragments=hparams.get("fragments", "keep")
    )


class PropertyPredictorBase:
    """What a property model's Lightning module and its predictor share: the network
    (``model``, a registered family built by :func:`chemgraph.models.build_model`), the target
    scaler (``scaler``, regression only), the ``task``, the molecule preparation, and the
    outputs in target units (:meth:`predict_step`).

    A base of ``torch.nn.Module`` subclasses that hold their constructor's arguments as
    ``hparams`` (a mapping with attribute access) and call :meth:`_build` once.
    """

    model: torch.nn.Module
    scaler: TargetScaler | None
    task: Task
    hparams: Mapping[str, Any]
    delta_learning: DeltaLearning | None
    """None for a model whose outputs are the labels; for a Δ-learning model of transfer
    learning the correction its outputs (a residual) are added to, held by its checkpoints under
    :data:`DELTA_LEARNING_KEY`; set after construction."""

    def _build(
        self,
        model: str,
        model_config: dict,
        task: str,
        scaler: dict | None,
        label_augmentation: dict | None = None,
    ) -> None:
        """Set ``model``, ``scaler`` and ``task`` (the arguments as
        :class:`PropertyPredictor`'s); with ``label_augmentation`` the family's model inside a
        :class:`chemgraph.models.LabelAugmentation`.

        Raises:
            ValueError: a task not in :data:`TASKS`, or see :func:`chemgraph.models.build_model`
                and :class:`~chemgraph.models.LabelAugmentation`.
        """
        if task not in TASKS:
            raise ValueError(f"task must be 'regression' or 'classification', got {task!r}")
        network = build_model(model, model_config)
        if label_augmentation is not None:
            network = LabelAugmentation(
                network, network.config.num_outputs, label_augmentation["mean"],
                label_augmentation["std"], label_augmentation.get("hidden_dim"),
            )  # fmt: skip
        self.model = network
        self.scaler = TargetScaler(**scaler) if scaler is not None else None
        self.task = task
        self.delta_learning = None

    @property
    def preparation(self) -> MoleculePreparation:
        """How the training molecules were prepared before featurization (and so must be
        every molecule this model predicts)."""
        return _preparation(self.hparams)

    @property
    def low_fidelity_inputs(self) -> list[str]:
        """The input columns the network itself reads, in order: a label-augmented model's
        low-fidelity labels (hyper-parameter ``label_augmentation``); empty for the others."""
        augmentation = self.hparams.get("label_augmentation") or {}
        return list(augmentation.get("low_fidelity_columns", []))

    def batch_builder(self) -> Callable[..., Any]:
        """The model's collate: ``batched DGLGraph -> batch`` of its family
        (:meth:`chemgraph.models.ModelSpec.collate` on its featurizer); for a label-augmented
        model ``(batched DGLGraph, float [B, S] values of`` :attr:`low_fidelity_inputs`
        ``) -> LabelAugmentedBatch`` (:func:`chemgraph.models.augmented_batch_builder`)."""
        spec = get_model_spec(self.hparams.get("model", "esa"))
        build = spec.collate(self.model.config, spec.featurizer(self.hparams.featurizer))
        return augmented_batch_builder(build) if self.low_fidelity_inputs else build

    def forward(self, batch) -> torch.Tensor:
        """The model's raw outputs ``[B, T]``: standardised values (regression) or logits."""
        return self.model(batch)

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Predictions ``float32 [B, T]`` in target units (regression) or probabilities of
        class 1 (classification) for ``batch = (inputs, labels)`` (labels not used)."""
        inputs, _ = batch
        outputs = self(inputs).float()
        if self.task == "classification":
            return torch.sigmoid(outputs)
        return self.scaler.inverse_transform(outputs) if self.scaler is not None else outputs


class PropertyPredictor(PropertyPredictorBase, torch.nn.Module):
    """A trained property model for inference: what ``load_checkpoint(path, kind="property")``
    gives (its state dict is the checkpoint's: ``model.*``).

    Args:
        model_config: the model family's configuration as a dict.
        task: ``"regression"`` or ``"classification"``.
        target_columns: names of the T predicted targets.
        featurizer: the featurizer preset as a dict (``FeaturizerPreset.to_dict()``).
        scaler: :class:`TargetScaler` as a dict (regression) or None.
        fragments, standardize: the molecule preparation of the training molecules
            (:attr:`preparation`).
        model: registered model family (:data:`chemgraph.models.MODELS`).
        train_fingerprints: the training molecules' packed Morgan fingerprints (applicability
            domain) or None.
        train_label_range: a regression's smallest and largest training label per target
            (:class:`chemgraph.data.applicability.TrainingLabelRange`) or None.
        label_augmentation: None, or the low-fidelity labels a label-augmented model reads
            (:class:`chemgraph.train.module.PropertyPredictionModule`).
        **training: the training settings the checkpoint holds besides (learning rate,
            schedule, ...; see :class:`chemgraph.train.module.PropertyPredictionModule`): kept
            in ``hparams``, not used.

    The defaults are :class:`~chemgraph.train.module.PropertyPredictionModule`'s, so that a
    checkpoint written before a hyper-parameter existed reads as that module reads it.

    Raises:
        ValueError: an unknown task or model family; TypeError: a bad model configuration.
    """

    def __init__(
        self,
        model_config: dict,
        task: Task,
        target_columns: list[str],
        featurizer: dict,
        scaler: dict | None = None,
        fragments: str = "keep",
        standardize: str = "none",
        model: str = "esa",
        train_fingerprints: dict | None = None,
        train_label_range: dict | None = None,
        label_augmentation: dict | None = None,
        **training: Any,
    ) -> None:
        super().__init__()
        self.hparams = HyperParameters(
            model_config=model_config, task=task, target_columns=target_columns,
            featurizer=featurizer, scaler=scaler, fragments=fragments, standardize=standardize,
            model=model, train_fingerprints=train_fingerprints,
            train_label_range=train_label_range, label_augmentation=label_augmentation,
            **training,
        )  # fmt: skip
        self._build(model, model_config, task, scaler, label_augmentation)


BASELINE_KIND = "baseline"
"""The ``kind`` hyper-parameter of a baseline checkpoint (:class:`BaselinePredictor`)."""


class BaselinePredictor:
    """A baseline of ``chemgraph transfer`` (the mean predictor, a linear correction, a
    fingerprint kernel ridge, Δ-learning; :class:`chemgraph.train.baselines.BaselineModel`)
    that its model selection recommended, loaded for ``chemgraph predict``: what
    ``load_checkpoint`` gives for a checkpoint whose ``hyper_parameters["kind"]`` is
    :data:`BASELINE_KIND`. Its molecules are featurized as its run's networks' were (the
    checkpoint holds their featurizer, preparation and training fingerprints), so a baseline
    and a network accept and reject the same records.

    Args:
        hyper_parameters: ``kind``, ``baseline`` (its label), ``target_columns`` (one),
            ``low_fidelity_columns`` (the input columns it reads, in order; empty for the
            mean, the kernel ridge and the inductive baselines), ``task``
            (``"regression"``), ``model``, ``featurizer``, ``fragments``, ``standardize``,
            ``train_fingerprints``.
        baseline: the fitted baseline.
    """

    delta_learning: DeltaLearning | None = None

    def __init__(self, hyper_parameters: dict[str, Any], baseline: BaselineModel) -> None:
        self.hparams = HyperParameters(hyper_parameters)
        self.baseline = baseline

    @property
    def preparation(self) -> MoleculePreparation:
        """As :attr:`PropertyPredictorBase.preparation`."""
        return _preparation(self.hparams)

    @property
    def low_fidelity_columns(self) -> list[str]:
        """The input columns :meth:`predict` reads (``low``), in order."""
        return list(self.hparams.low_fidelity_columns)

    def predict(self, fingerprints: np.ndarray, low: np.ndarray | None) -> np.ndarray:
        """``float32 [N, 1]`` predictions of ``N`` molecules from their Morgan bits
        ``[N, 2048]`` and their :attr:`low_fidelity_columns` values ``[N, S]`` (None when
        it reads none; a NaN gives NaN)."""
        return self.baseline.predict(fingerprints, low).astype(np.float32)


class ReactionPredictorBase:
    """What a GRAT translator's Lightning module and its predictor share: the network
    (``model``, :class:`chemgraph.models.GRATTranslator`), its token ``vocabulary`` and the
    valence rules of beam search (:attr:`valence_rules`).

    A base of ``torch.nn.Module`` subclasses that hold their constructor's arguments as
    ``hparams`` and call :meth:`_build` once.
    """

    model: GRATTranslator
    vocabulary: TokenVocabulary
    hparams: Mapping[str, Any]

    def _build(
        self, model_config: dict, vocabulary: list[str], allowed_valences: list[list[int]] | None
    ) -> None:
        """Set ``model`` and ``vocabulary`` (the arguments as :class:`ReactionPredictor`'s).

        Raises:
            ValueError: a vocabulary that does not start with the special tokens, or
                ``allowed_valences`` of another length; see also
                :class:`chemgraph.models.GRATTranslatorConfig`.
        """
        self.model = GRATTranslator(GRATTranslatorConfig(**model_config))
        self.vocabulary = TokenVocabulary(vocabulary[len(TokenVocabulary([]).tokens) :])
        if self.vocabulary.tokens != list(vocabulary):
            raise ValueError("vocabulary must start with the special tokens of TokenVocabulary")
        if allowed_valences is not None and len(allowed_valences) != len(vocabulary):
            raise ValueError("allowed_valences must have one entry per vocabulary token")

    @property
    def valence_rules(self) -> ValenceRules | None:
        """:class:`ValenceRules` of ``allowed_valences`` on the module's device (None without)."""
        valences = self.hparams.allowed_valences
        if valences is None:
            return None
        return ValenceRules.from_lists(valences, next(self.parameters()).device)

    def forward(self, batch):
        """The translator's teacher-forced ``(label_logits, edge_logits)``."""
        return self.model(batch)


class ReactionPredictor(ReactionPredictorBase, torch.nn.Module):
    """A trained GRAT translator for inference: what ``load_checkpoint(path, kind="reaction")``
    gives (its state dict is the checkpoint's: ``model.*``).

    Args:
        model_config: :class:`GRATTranslatorConfig` as a dict (``vocab_size`` included).
        vocabulary: the token list of :class:`TokenVocabulary`.
        allowed_valences: per token, the bond-order sums (half bonds) its atoms have in the
            training reactions; None: no limits (:attr:`valence_rules`).
        **training: the training settings the checkpoint holds besides (see
            :class:`chemgraph.train.reaction_module.ReactionModule`): kept in ``hparams``,
            not used.

    Raises:
        ValueError: see :meth:`ReactionPredictorBase._build`.
    """

    def __init__(
        self,
        model_config: dict,
        vocabulary: list[str],
        allowed_valences: list[list[int]] | None = None,
        **training: Any,
    ) -> None:
        super().__init__()
        self.hparams = HyperParameters(
            model_config=model_config, vocabulary=vocabulary, allowed_valences=allowed_valences,
            **training,
        )  # fmt: skip
        self._build(model_config, vocabulary, allowed_valences)
