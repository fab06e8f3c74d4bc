"""Checkpoints: the one loader of trained models, and the best weights of a finished fit.

A chemgraph checkpoint is Lightning's ``best.ckpt``: a dict with ``hyper_parameters`` (plain
Python values only: model configuration, featurizer or token vocabulary, target scaler) and
``state_dict``, so it loads with ``torch.load(..., weights_only=True)`` and nothing else. Two
kinds (:data:`KINDS`), told apart by their hyper-parameters, each rebuilt into a plain
``torch.nn.Module`` (:mod:`chemgraph.train.predictors`):

* ``"property"``: :class:`~chemgraph.train.predictors.PropertyPredictor`, the model of
  :class:`chemgraph.train.module.PropertyPredictionModule` (``chemgraph train``; used by
  ``chemgraph predict``). A Δ-learning model of ``chemgraph transfer`` also holds its linear
  correction, and for the inductive strategy the pretrained model's hyper-parameters and
  weights, under ``delta_learning`` (:class:`chemgraph.train.delta.DeltaLearning`).
  A baseline that ``chemgraph transfer`` recommended is a property checkpoint too:
  ``hyper_parameters["kind"]`` ``"baseline"``, an empty ``state_dict`` and the fitted baseline
  under ``"baseline"`` (:meth:`chemgraph.train.baselines.BaselineModel.to_dict`), loaded into a
  :class:`~chemgraph.train.predictors.BaselinePredictor`.
* ``"reaction"``: :class:`~chemgraph.train.predictors.ReactionPredictor`, the model of
  :class:`chemgraph.train.reaction_module.ReactionModule` (the reaction_outcome recipe; used by
  ``chemgraph react``), recognised by its ``vocabulary``.

This module imports no Lightning (only its type, for :func:`best_checkpoint_path`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from chemgraph.models.grat.translator import LEGACY_OPTIONS
from chemgraph.train.baselines import BaselineModel
from chemgraph.train.delta import DeltaLearning
from chemgraph.train.predictors import (
    BASELINE_KIND,
    DELTA_LEARNING_KEY,
    BaselinePredictor,
    PropertyPredictor,
    ReactionPredictor,
)

if TYPE_CHECKING:
    import lightning as L

__all__ = [
    "KINDS",
    "best_checkpoint_path",
    "checkpoint_kind",
    "load_checkpoint",
    "load_weights",
    "read_checkpoint_file",
]

Kind = Literal["property", "reaction"]

KINDS: dict[str, type[PropertyPredictor] | type[ReactionPredictor]] = {
    "property": PropertyPredictor,
    "reaction": ReactionPredictor,
}
_USE = {
    "property": "a property-prediction checkpoint of `chemgraph train`: use it with "
    "`chemgraph predict`",
    "reaction": "a reaction-outcome (GRAT) checkpoint: use it with `chemgraph react`",
    "reaction_centre": "a reaction-centre model: use it with `chemgraph react --checkpoint`",
}


def read_checkpoint_file(path: str | Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The checkpoint dict of ``path``, on the CPU, holding ``keys``, read with
    ``torch.load(..., weights_only=True)``; why a file cannot be read is said in one line.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable PyTorch file, or a key missing.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a file that is not a checkpoint
        raise ValueError(
            f"{path} is not a readable PyTorch checkpoint: {_load_failure(error)}"
        ) from error
    if not isinstance(checkpoint, dict) or not set(keys) <= set(checkpoint):
        raise ValueError(f"{path} is not a chemgraph checkpoint (no {'/'.join(keys)})")
    return checkpoint


def _load_failure(error: Exception) -> str:
    """Why ``torch.load(..., weights_only=True)`` failed, in one short line: torch's messages
    run over several lines and advise loading with ``weights_only=False``, which chemgraph
    never does (a checkpoint of ours holds plain values only)."""
    text = str(error).strip()
    found = re.search(r"Unsupported global: GLOBAL (\S+)", text)
    if found:
        return (
            f"it holds a Python object ({found.group(1)}) that a chemgraph checkpoint never holds"
        )
    found = re.search(r"WeightsUnpickler error: ([^\n]+?)(?:\.\s|\.?$)", text, re.MULTILINE)
    if found:  # another refusal of the weights-only reader
        return found.group(1)
    if isinstance(error, EOFError):
        return "the file ends early (empty or truncated)"
    if isinstance(error, RuntimeError) and text:  # the zip reader: its first sentence
        return text.splitlines()[0].split(". ")[0].rstrip(".")
    # the pickle reader stumbled over bytes it does not know (KeyError, IndexError, ...)
    return "not a file written by torch.save"


def checkpoint_kind(hyper_parameters: dict[str, Any]) -> Kind:
    """``"reaction"`` for a GRAT translator's hyper-parameters (they hold its token
    ``vocabulary``), else ``"property"``."""
    return "reaction" if "vocabulary" in hyper_parameters else "property"


def load_checkpoint(
    path: str | Path, kind: Kind | None = None, device: str | torch.device = "cpu"
) -> PropertyPredictor | BaselinePredictor | ReactionPredictor:
    """Rebuild a trained model from a checkpoint, in eval mode.

    Args:
        path: ``best.ckpt`` of ``chemgraph train`` or of the reaction_outcome recipe.
        kind: the kind the caller needs (``"property"`` or ``"reaction"``); None = either.
        device: where the model is put.

    Returns:
        A :class:`~chemgraph.train.predictors.PropertyPredictor` (with its ``delta_learning``
        restored, and its pretrained low-fidelity model on ``device`` in eval mode too) or
        :class:`~chemgraph.train.predictors.ReactionPredictor` (see :data:`KINDS`): the
        trained module's network, with its ``hparams`` (the checkpoint's hyper-parameters)
        and state dict; or, for a baseline checkpoint of ``chemgraph transfer`` (a property
        checkpoint), a :class:`~chemgraph.train.predictors.BaselinePredictor`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a chemgraph checkpoint, or one of the other kind (the message says
            which command takes it).
    """
    checkpoint = read_checkpoint_file(path, ("hyper_parameters", "state_dict"))
    parameters = checkpoint["hyper_parameters"]
    if parameters.get("kind") == BASELINE_KIND and kind in (None, "property"):
        return BaselinePredictor(parameters, BaselineModel.from_dict(checkpoint["baseline"]))
    if parameters.get("kind") == BASELINE_KIND:
        raise ValueError(f"{path} is {_USE['property']}")
    if parameters.get("kind") in _USE:  # a chemgraph model that is not a Lightning module
        raise ValueError(f"{path} is {_USE[parameters['kind']]}")
    found = checkpoint_kind(parameters)
    if kind is not None and found != kind:
        raise ValueError(f"{path} is {_USE[found]}")
    if found == "reaction" and "allowed_valences" not in parameters:
        # written before the bond-head options: the model had the paper's bond head
        parameters = {
            **parameters, "model_config": {**LEGACY_OPTIONS, **parameters["model_config"]}
        }  # fmt: skip
    try:
        module = KINDS[found](**parameters)
    except TypeError as error:  # another Lightning module's checkpoint
        raise ValueError(f"{path} is not a chemgraph {found} checkpoint: {error}") from error
    if _saved_per_head_edge_conditioning(module, parameters, checkpoint["state_dict"]):
        model_config = {**parameters["model_config"], "edge_conditioning": "per_head"}
        module = KINDS[found](**{**parameters, "model_config": model_config})
    module.load_state_dict(checkpoint["state_dict"])
    delta = checkpoint.get(DELTA_LEARNING_KEY)
    if delta is not None:

        def low_fidelity_model(parameters: dict, state_dict: dict) -> PropertyPredictor:
            model = PropertyPredictor(**parameters)
            model.load_state_dict(state_dict)
            return model.to(device).eval()

        module.delta_learning = DeltaLearning.from_dict(delta, low_fidelity_model)
    return module.to(device).eval()


def _saved_per_head_edge_conditioning(
    module: torch.nn.Module, parameters: dict[str, Any], state_dict: dict[str, torch.Tensor]
) -> bool:
    """Whether a GRAT checkpoint written before the ``edge_conditioning`` option holds one
    ``(γ, β)`` per head (the form of that time; see :class:`chemgraph.models.grat.
    EdgeConditioning`): its ``f_a`` output layer is wider than the per-pair one just built."""
    if "edge_conditioning" in parameters.get("model_config", {}):
        return False
    built = module.state_dict()
    return any(
        name.endswith("edge_conditioning.mlp.2.weight")
        and name in state_dict
        and state_dict[name].shape != tensor.shape
        for name, tensor in built.items()
    )


def load_weights(module: torch.nn.Module, path: str | Path) -> None:
    """Load the ``state_dict`` of checkpoint ``path`` (any Lightning checkpoint) into
    ``module``, e.g. the best weights after a fit (:func:`best_checkpoint_path`).

    Raises:
        FileNotFoundError, ValueError: no such file, not a readable checkpoint, no
            ``state_dict``.
        RuntimeError: the weights do not fit ``module``.
    """
    module.load_state_dict(read_checkpoint_file(path, ("state_dict",))["state_dict"])


def best_checkpoint_path(trainer: L.Trainer, hint: str) -> Path:
    """The best checkpoint written during ``trainer.fit`` (see
    :func:`chemgraph.train.trainer.make_trainer`'s ``checkpoint_dir``).

    Raises:
        ValueError: none was written: training stopped before its first validation; ``hint``
            (which limits to raise) ends the message.
    """
    callback = trainer.checkpoint_callback
    if callback is None or not callback.best_model_path:
        raise ValueError(f"training stopped before its first validation (no checkpoint); {hint}")
    return Path(callback.best_model_path)
