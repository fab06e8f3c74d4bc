"""Δ-learning on a low level of theory: what a fine-tuned residual model adds its prediction to.

A Δ-learning model of transfer learning (``delta_learning`` of
:class:`chemgraph.transfer.config.TransferConfig`; Ramakrishnan, Dral, Rupp and von Lilienfeld
2015, "Big data meets quantum chemistry approximations: the Δ-machine learning approach",
J. Chem. Theory Comput. 11, 2087, doi:10.1021/acs.jctc.5b00099) predicts

    high ≈ low @ W + b + residual(molecule)

``residual`` is the fine-tuned network; ``W``, ``b`` (:class:`~chemgraph.train.baselines.
LinearCorrection`, in the high-fidelity units) were fitted by least squares on its
high-fidelity training molecules; ``low`` is, per strategy (Buterez, Janet, Kiddle, Oglic and
Liò 2024, "Transfer learning with graph neural networks for improved molecular property
prediction in the multi-fidelity setting", Nat. Commun. 15, 1517,
doi:10.1038/s41467-024-45566-8):

* ``"transductive"``: the molecule's own low-fidelity labels, which the user supplies (for
  ``chemgraph predict``: input columns named :attr:`DeltaLearning.low_fidelity_columns`);
* ``"inductive"``: the pretrained low-fidelity model's prediction of them.

:class:`DeltaLearning` is that correction. The fine-tuned module carries it (its
``delta_learning``, as does the predictor loaded from its checkpoint) and writes it into its
checkpoints under :data:`chemgraph.train.predictors.DELTA_LEARNING_KEY`
(:meth:`DeltaLearning.to_dict`: plain values and tensors only, so the checkpoint still loads
with ``torch.load(..., weights_only=True)``); the inductive strategy's pretrained model is
stored *in* the checkpoint (its hyper-parameters and weights), not as a reference to another
file: one file is the whole model, and it cannot go stale or missing.
:func:`chemgraph.train.checkpoint.load_checkpoint` rebuilds it, and
:class:`chemgraph.train.ensemble.Ensemble` (``chemgraph predict``) adds it to the residual.

**Stacked Δ-learning** (``stack_kernel_ridge`` of :class:`chemgraph.transfer.config.
TransferConfig`): the fine-tuned network and a fingerprint kernel ridge
(:func:`chemgraph.train.baselines.residual_kernel_ridge`) are two learners of the same
residual, and their blend

    high ≈ low @ W + b + w · residual(molecule) + (1 − w) · kernel_ridge(molecule)

is a linear stack of the two Δ-learning predictions (Breiman 1996, "Stacked regressions",
Machine Learning 24, 49, doi:10.1007/BF00117832), with one weight ``w`` per target chosen
on the high-fidelity validation molecules from :data:`STACK_WEIGHTS`
(:func:`stack_weights`, :func:`stack`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chemgraph._dgl import dgl
from chemgraph.train.baselines import LinearCorrection
from chemgraph.train.inference import model_inputs, predict_graphs
from chemgraph.train.predictors import PropertyPredictorBase

__all__ = ["DELTA_STRATEGIES", "STACK_WEIGHTS", "DeltaLearning", "stack", "stack_weights"]

DELTA_STRATEGIES = ("inductive", "transductive")

STACK_WEIGHTS = tuple(i / 10 for i in range(11))
"""The weights ``w`` of the network's prediction in a stacked Δ-learning model that
:func:`stack_weights` tries: 0, 0.1, …, 1 (0 = the kernel ridge alone, 1 = the network alone)."""


def stack(
    network: np.ndarray, kernel_ridge: np.ndarray, weights: Sequence[float] | float
) -> np.ndarray:
    """``w · network + (1 − w) · kernel_ridge`` per target, ``float64 [N, T]``.

    Args:
        network, kernel_ridge: ``[N, T]`` the two Δ-learning predictions (high-fidelity
            units), each with the linear correction included.
        weights: ``T`` weights ``w`` of ``network`` (or one for every target); ``w = 1``
            gives ``network`` and ``w = 0`` ``kernel_ridge``, each exactly.
    """
    weights = np.asarray(weights, dtype=np.float64)
    network = np.asarray(network, dtype=np.float64)
    return weights * network + (1.0 - weights) * np.asarray(kernel_ridge, dtype=np.float64)


def stack_weights(
    truth: np.ndarray,
    network: np.ndarray,
    kernel_ridge: np.ndarray,
    grid: Sequence[float] = STACK_WEIGHTS,
) -> np.ndarray:
    """Per target, the weight ``w`` of ``grid`` whose :func:`stack` of ``network`` and
    ``kernel_ridge`` has the lowest RMSE against ``truth`` (the validation molecules; NaN
    labels skipped); on a tie the first in ``grid`` order.

    Args:
        truth, network, kernel_ridge: ``[V, T]`` labels and the two predictions.
        grid: the weights tried.

    Returns:
        ``float64 [T]``.

    Raises:
        ValueError: shapes that differ, or a target without a validation label.
    """
    truth = np.asarray(truth, dtype=np.float64)
    if not truth.shape == np.shape(network) == np.shape(kernel_ridge) or truth.ndim != 2:
        raise ValueError(
            f"truth {truth.shape}, network {np.shape(network)} and kernel ridge "
            f"{np.shape(kernel_ridge)} must be the same [V, T]"
        )
    weights = np.zeros(truth.shape[1])
    for t in range(truth.shape[1]):
        rows = ~np.isnan(truth[:, t])
        if not rows.any():
            raise ValueError(f"target {t} has no validation label to choose its weight on")
        errors = [
            np.mean((stack(network[rows, t], kernel_ridge[rows, t], w) - truth[rows, t]) ** 2)
            for w in grid
        ]
        weights[t] = grid[int(np.argmin(errors))]
    return weights


@dataclass
class DeltaLearning:
    """The linear correction a Δ-learning model's residual is added to (module docstring).

    Attributes:
        strategy: ``"transductive"`` (``low`` = the molecule's low-fidelity labels, given) or
            ``"inductive"`` (``low`` = :attr:`low_fidelity_model`'s prediction).
        low_fidelity_columns: the ``S`` low-fidelity labels ``low`` holds, in order: the
            input columns ``chemgraph predict`` reads for ``"transductive"``; for
            ``"inductive"`` the labels the pretrained model was trained on (not read).
        correction: ``W`` ``float64 [S, T]`` and ``b`` ``float64 [T]``, high-fidelity units
            (``low`` in low-fidelity units).
        low_fidelity_model: ``"inductive"``: the pretrained module (its ``S`` outputs are the
            low-fidelity predictions); None for ``"transductive"``.
        stacked: the run that trained the model also stacked it with a fingerprint kernel
            ridge (``stack_kernel_ridge``; :func:`stack`), which is not stored: the model
            alone is the run's plain row, not its stacked one (``chemgraph predict`` says so).

    Raises:
        ValueError: an unknown strategy, a model missing (inductive) or given (transductive),
            or ``W`` not ``[S, T]`` for the ``S`` columns.
    """

    strategy: str
    low_fidelity_columns: list[str]
    correction: LinearCorrection
    low_fidelity_model: PropertyPredictorBase | None = None
    stacked: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in DELTA_STRATEGIES:
            raise ValueError(f"strategy must be one of {DELTA_STRATEGIES}, got {self.strategy!r}")
        if (self.strategy == "inductive") != (self.low_fidelity_model is not None):
            raise ValueError(
                "the inductive strategy needs its pretrained low-fidelity model, the "
                "transductive strategy reads the low-fidelity labels instead"
            )
        self.low_fidelity_columns = [str(c) for c in self.low_fidelity_columns]
        shape = np.shape(self.correction.weights)
        if len(shape) != 2 or shape[0] != len(self.low_fidelity_columns):
            raise ValueError(
                f"W must be [{len(self.low_fidelity_columns)}, T] for the low-fidelity columns "
                f"{self.low_fidelity_columns}, got {list(shape)}"
            )

    @property
    def input_columns(self) -> list[str]:
        """The input columns a prediction needs: :attr:`low_fidelity_columns` for
        ``"transductive"``, none for ``"inductive"``."""
        return list(self.low_fidelity_columns) if self.strategy == "transductive" else []

    def low_fidelity(
        self, graphs: dgl.DGLGraph, batch_size: int, given: np.ndarray | None = None
    ) -> np.ndarray:
        """``low``, ``float32 [N, S]``, of ``N`` molecules: ``given`` (``"transductive"``; a
        NaN stays NaN), or the pretrained model's predictions for ``graphs``, a batched
        DGLGraph (a graph shard's; ``"inductive"``).

        Raises:
            ValueError: ``"transductive"`` without ``given``, or ``given`` not ``[N, S]``.
        """
        if self.strategy == "inductive":
            model = self.low_fidelity_model
            return predict_graphs(model, *model_inputs(model, graphs), batch_size)
        if given is None:
            raise ValueError(
                f"a transductive Δ-learning model needs the low-fidelity values "
                f"{self.low_fidelity_columns} of every molecule"
            )
        given = np.asarray(given, dtype=np.float32)
        if given.shape != (graphs.batch_size, len(self.low_fidelity_columns)):
            raise ValueError(
                f"low-fidelity values must be [{graphs.batch_size}, "
                f"{len(self.low_fidelity_columns)}] ({self.low_fidelity_columns}), got "
                f"{list(given.shape)}"
            )
        return given

    def add_to(
        self,
        residual: np.ndarray,
        graphs: dgl.DGLGraph,
        batch_size: int,
        given: np.ndarray | None = None,
    ) -> np.ndarray:
        """The high-fidelity predictions ``float32 [N, T]``: ``residual`` (the fine-tuned
        model's outputs for ``graphs``) plus :meth:`base` of :meth:`low_fidelity`."""
        return residual + self.base(self.low_fidelity(graphs, batch_size, given))

    def base(self, low: np.ndarray) -> np.ndarray:
        """``low @ W + b``, ``float32 [N, T]`` in high-fidelity units, of ``low`` ``[N, S]``
        (read as float32, as the models are trained; a NaN input gives NaN)."""
        low = np.asarray(low, dtype=np.float32)
        return self.correction.predict(low).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (and the pretrained model's weight tensors), for a checkpoint."""
        model = self.low_fidelity_model
        return {
            "strategy": self.strategy,
            "low_fidelity_columns": list(self.low_fidelity_columns),
            "weights": self.correction.weights.tolist(),
            "intercept": self.correction.intercept.tolist(),
            "low_fidelity_model": None
            if model is None
            else {"hyper_parameters": dict(model.hparams), "state_dict": model.state_dict()},
            "stacked": self.stacked,
        }

    @classmethod
    def from_dict(
        cls,
        values: dict[str, Any],
        build: Callable[[dict[str, Any], dict[str, Any]], PropertyPredictorBase],
    ) -> DeltaLearning:
        """The inverse of :meth:`to_dict`; ``build(hyper_parameters, state_dict)`` rebuilds
        the inductive strategy's pretrained module (``stacked`` is False for a checkpoint
        written before it was stored)."""
        model = values.get("low_fidelity_model")
        return cls(
            values["strategy"],
            list(values["low_fidelity_columns"]),
            LinearCorrection(np.asarray(values["weights"]), np.asarray(values["intercept"])),
            None if model is None else build(model["hyper_parameters"], model["state_dict"]),
            bool(values.get("stacked", False)),
        )

    @classmethod
    def fit(
        cls,
        strategy: str,
        low_fidelity_columns: Sequence[str],
        low: np.ndarray,
        high: np.ndarray,
        low_fidelity_model: PropertyPredictorBase | None = None,
        stacked: bool = False,
    ) -> DeltaLearning:
        """Fit ``W``, ``b`` by least squares on training molecules (every low-fidelity column
        enters each target's fit; :meth:`LinearCorrection.fit` with ``same_column=False``).

        Args:
            strategy, low_fidelity_columns, low_fidelity_model, stacked: as the attributes.
            low: ``[N, S]`` the training molecules' ``low`` (labels or the pretrained model's
                predictions, per ``strategy``).
            high: ``[N, T]`` their high-fidelity labels.
        """
        correction = LinearCorrection.fit(low, high, same_column=False)
        return cls(strategy, list(low_fidelity_columns), correction, low_fidelity_model, stacked)
