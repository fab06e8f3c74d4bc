"""The model families ``chemgraph train --model NAME`` can build, and how each is fed.

A :class:`ModelSpec` tells the training loop, the predictor and the CLI everything that
differs between model families: the configuration dataclass, the feature kind the model
embeds (float one-hot or integer categorical), the configuration fields fixed by the
featurizer, and the collate-time builder of the model's plain-tensor batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chemgraph.batches import batch_builder
from chemgraph.featurize import FeaturizerPreset
from chemgraph.models.esa import ESA, ESAConfig

__all__ = ["MODELS", "ModelSpec", "build_model", "get_model_spec"]


@dataclass(frozen=True)
class ModelSpec:
    """How to build, check and feed one model family.

    Attributes:
        name: the ``--model`` name.
        description: one line for ``--help``.
        config_class: configuration dataclass with ``check_options(options)`` (raises
            ``ValueError`` on unknown or bad user options) and ``to_dict()``.
        model_class: ``model_class(config)`` builds the :class:`torch.nn.Module`; its forward
            takes the batch made by :attr:`batch_builder` and returns ``[B, num_outputs]``.
        feature_dtype: atom/bond feature dtype the model takes: ``torch.float32`` (one-hot,
            e.g. the ``canonical`` preset) or ``torch.int64`` (categorical, e.g. ``ogb``).
        default_featurizer: featurizer preset used when the user names none.
        input_options: configuration fields fixed by the featurizer preset (feature widths,
            vocabulary sizes, set type), merged into the user's options.
        batch_builder: ``batch_builder(config)`` returns the collate function
            ``DGLGraph (batched) -> batch`` for a built model's configuration.
    """

    name: str
    description: str
    config_class: type
    model_class: type[nn.Module]
    feature_dtype: torch.dtype
    default_featurizer: str
    input_options: Callable[[FeaturizerPreset], dict[str, Any]]
    batch_builder: Callable[[Any], Callable]


MODELS: dict[str, ModelSpec] = {
    "esa": ModelSpec(
        name="esa",
        description="edge-set attention over bonds (Buterez et al., seed 000)",
        config_class=ESAConfig,
        model_class=ESA,
        feature_dtype=torch.float32,
        default_featurizer="canonical",
        input_options=lambda preset: {
            "in_features": 2 * len(preset.atom) + len(preset.bond),
            "set_type": "edge",
        },
        batch_builder=lambda config: batch_builder(config.set_type, config.attention),
    ),
    "nsa": ModelSpec(
        name="nsa",
        description="node-set attention over atoms (Buterez et al., seed 000)",
        config_class=ESAConfig,
        model_class=ESA,
        feature_dtype=torch.float32,
        default_featurizer="canonical",
        input_options=lambda preset: {"in_features": len(preset.atom), "set_type": "node"},
        batch_builder=lambda config: batch_builder(config.set_type, config.attention),
    ),
}


def get_model_spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` registered as ``name``.

    Raises:
        ValueError: unknown name (the registered ones are listed).
    """
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; available: {', '.join(MODELS)}")
    return MODELS[name]


def build_model(name: str, config: dict[str, Any]) -> nn.Module:
    """Build model family ``name`` from a configuration dict (as stored in checkpoints).

    Raises:
        ValueError: unknown model name.
        TypeError: unknown configuration fields.
    """
    spec = get_model_spec(name)
    return spec.model_class(spec.config_class(**config))
