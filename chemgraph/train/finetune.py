"""Fine-tuning: start a model from a trained property checkpoint's weights.

One function copies the weights, :func:`transfer_weights`: every weight of the model but its
output head (``model.head``, :class:`chemgraph.models.registry.PropertyModel`), which stays
freshly initialised for the new targets; optionally the copied encoder is frozen. The
multi-fidelity transfer of :mod:`chemgraph.transfer` (pretrained on the low-fidelity
labels) and ``chemgraph train --init-from CKPT [--freeze-encoder]`` (any property checkpoint,
as Chemprop's ``--checkpoint``/``--freeze-encoder``) both use it.

:func:`checkpoint_settings` reads what a run started from a checkpoint must share with it (the
model family, its options and the featurizer preset), and :func:`resolve_init_from` merges
them into the settings of ``chemgraph train``, refusing a setting that contradicts them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch

from chemgraph._files import file_digest
from chemgraph.errors import ConfigError
from chemgraph.featurize import get_preset
from chemgraph.models import LabelAugmentation, get_model_spec
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.predictors import PropertyPredictor, PropertyPredictorBase

__all__ = [
    "CheckpointSettings",
    "checkpoint_settings",
    "load_pretrained",
    "resolve_init_from",
    "transfer_weights",
]

log = logging.getLogger(__name__)


def load_pretrained(path: str | Path) -> PropertyPredictor:
    """The property model of checkpoint ``path``
    (:func:`chemgraph.train.checkpoint.load_checkpoint`), rebuilt without drawing from the
    global random number generators: reading the checkpoint of ``init_from`` leaves a seeded
    run's weights, dropout and shuffling as they would be without it, however often the
    settings are checked.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a chemgraph property checkpoint.
    """
    with torch.random.fork_rng(devices=[]):
        return load_checkpoint(path, kind="property")


def transfer_weights(
    pretrained: PropertyPredictorBase, module: PropertyPredictorBase, freeze_encoder: bool
) -> None:
    """Copy every weight but the output head (``model.head``) from ``pretrained``; a
    label-augmented model's (:class:`chemgraph.models.LabelAugmentation`) are its inner
    model's, so a plain pretrained model starts its encoder and the reverse.

    With ``freeze_encoder``, every copied parameter stops requiring gradients, so only the
    fresh head trains (buffers such as BatchNorm running statistics still follow the new data
    in training mode, as in PyTorch generally).

    Args:
        pretrained: the module whose weights are copied.
        module: a module of the same family and options (the head may differ in width).
        freeze_encoder: freeze the copied parameters.

    Raises:
        RuntimeError: the two modules' weights other than the head do not match (names or
            shapes).
    """
    state = {
        name: value
        for name, value in _encoder(pretrained.model).state_dict().items()
        if not name.startswith("head.")
    }
    missing, unexpected = _encoder(module.model).load_state_dict(state, strict=False)
    if unexpected or any(not name.startswith("head.") for name in missing):
        raise RuntimeError(f"weights do not match: missing {missing}, unexpected {unexpected}")
    if freeze_encoder:
        for name, parameter in module.model.named_parameters():
            parameter.requires_grad_(name.startswith("head."))


def _encoder(model: torch.nn.Module) -> torch.nn.Module:
    """The family's model of a property network: ``model``, or the inner model of a
    :class:`chemgraph.models.LabelAugmentation` (whose own head is the new one)."""
    return model.encoder if isinstance(model, LabelAugmentation) else model


@dataclass(frozen=True)
class CheckpointSettings:
    """What a run started from a checkpoint takes from it.

    Attributes:
        path: the checkpoint file.
        sha256: its SHA-256 (hex), recorded with the run.
        model: the model family (:data:`chemgraph.models.MODELS`).
        featurizer: the featurizer preset name.
        model_options: the model configuration's user options that differ from the
            configuration class's defaults (so that the class rebuilds the checkpoint's model;
            no feature widths, vocabularies or output count).
        resolved_options: every user option of the checkpoint's model configuration, defaults
            included (what a user's option is compared with).
    """

    path: str
    sha256: str
    model: str
    featurizer: str
    model_options: dict[str, Any]
    resolved_options: dict[str, Any]


def _plain(value: Any) -> Any:
    """Tuples as lists, recursively, so a YAML value compares with a checkpoint's."""
    return json.loads(json.dumps(value))


def checkpoint_settings(path: str | Path) -> CheckpointSettings:
    """The model family, model options and featurizer preset of a property checkpoint.

    The checkpoint is rebuilt with :func:`chemgraph.train.checkpoint.load_checkpoint` (read
    with ``torch.load(..., weights_only=True)``), so an older checkpoint's options are read as
    it loads them.

    Args:
        path: the checkpoint file, or a ``chemgraph train`` output folder (its ``best.ckpt``;
            :attr:`CheckpointSettings.path` is then that file).

    Raises:
        ConfigError: no such file, a folder without ``best.ckpt``, not a chemgraph property
            checkpoint (e.g. a reaction checkpoint), a model of 3D structures, or a featurizer
            the installed chemgraph no longer builds the same way.
    """
    path = Path(path)
    if path.is_dir():
        if not (path / "best.ckpt").is_file():
            raise ConfigError(
                f"init_from {path} is a folder without best.ckpt; name a checkpoint file (for "
                "an ensemble, one member's model-<k>/best.ckpt)"
            )
        path = path / "best.ckpt"
    try:
        module = load_pretrained(path)
    except (FileNotFoundError, ValueError) as error:
        raise ConfigError(f"init_from: {error}") from None
    delta = getattr(module, "delta_learning", None)
    if delta is not None:
        log.warning(
            "init_from %s is a %s Δ-learning model of chemgraph transfer (it predicts the "
            "residual of a linear correction of %s): its weights are copied, the correction "
            "is not, so the new model learns the targets themselves",
            path, delta.strategy, ", ".join(delta.low_fidelity_columns),
        )  # fmt: skip
    family = module.hparams.get("model", "esa")
    spec = get_model_spec(family)
    if spec.graph_kind != "bond":
        raise ConfigError(
            f"init_from {path} holds the model {family!r} of 3D structures ({spec.graph_kind} "
            "graphs); chemgraph train fine-tunes models of bond graphs from SMILES: fine-tune "
            "it on geometries with chemgraph transfer --geometry"
        )
    stored = module.hparams["featurizer"]
    preset = get_preset(stored["name"])
    if _plain(preset.to_dict()) != _plain(stored):
        raise ConfigError(
            f"init_from {path}: its featurizer {stored} is not what the preset "
            f"{stored['name']!r} gives now ({preset.to_dict()}); its weights cannot be fine-tuned "
            "on graphs of this chemgraph version: train a new model instead"
        )
    config = module.model.config
    fixed = set(type(config).FIXED) | set(spec.input_options(preset)) | {"num_outputs"}
    defaults = {f.name: f.default for f in fields(config)}
    resolved = {k: v for k, v in _plain(asdict(config)).items() if k not in fixed}
    options = {k: v for k, v in resolved.items() if _plain(defaults.get(k)) != v}
    return CheckpointSettings(
        path=str(path),
        sha256=file_digest(path),
        model=family,
        featurizer=preset.name,
        model_options=options,
        resolved_options=resolved,
    )


def resolve_init_from(
    init_from: str,
    model: str | None,
    featurizer: str | None,
    model_options: Mapping[str, Any],
    sha256: str | None = None,
) -> tuple[CheckpointSettings, str, str, dict[str, Any]]:
    """The run's model family, featurizer preset and model options when it starts from the
    checkpoint ``init_from``: the checkpoint's; the ones the user gave must agree with them.

    Args:
        init_from: the checkpoint file.
        model, featurizer: the user's, or None (not given).
        model_options: the user's options (any subset; each must equal the checkpoint's).
        sha256: the digest an earlier run recorded (``config.yaml``), or None.

    Returns:
        ``(settings, model, featurizer, model_options)``.

    Raises:
        ConfigError: a setting that differs from the checkpoint (each named with both values and
            what to do), a digest that does not match the file, or see
            :func:`checkpoint_settings`.
    """
    settings = checkpoint_settings(init_from)
    if sha256 is not None and sha256 != settings.sha256:
        raise ConfigError(
            f"init_from {init_from} has changed since the run was recorded (sha256 "
            f"{settings.sha256}, recorded {sha256}); restore that file, or remove "
            "init_from_sha256 from the configuration to start from the file as it is"
        )
    differences = []
    if model is not None and model != settings.model:
        differences.append(f"model {model!r} (the checkpoint's: {settings.model!r})")
    if featurizer is not None and featurizer != settings.featurizer:
        differences.append(f"featurizer {featurizer!r} (the checkpoint's: {settings.featurizer!r})")
    for name, value in model_options.items():
        theirs = settings.resolved_options.get(name)
        if name not in settings.resolved_options or _plain(value) != theirs:
            differences.append(f"model option {name}={value!r} (the checkpoint's: {theirs!r})")
    if differences:
        raise ConfigError(
            f"init_from {init_from} holds the model {settings.model!r} on the "
            f"{settings.featurizer!r} featurizer; these settings differ from it: "
            f"{'; '.join(differences)}. Leave them out (a fine-tuned model keeps the "
            "checkpoint's family, options and featurizer), or train without --init-from"
        )
    return settings, settings.model, settings.featurizer, dict(settings.model_options)
