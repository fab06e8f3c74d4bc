"""The model families ``chemgraph train --model NAME`` can build, and how each is fed.

A :class:`ModelSpec` tells the training loop, the predictor and the CLI everything that
differs between model families: the configuration dataclass, the feature kind the model
embeds (float one-hot or integer categorical), the configuration fields fixed by the
featurizer, and the collate-time builder of the model's plain-tensor batch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from chemgraph._dgl import dgl
from chemgraph.batches import (
    batch_builder,
    dense_batch_builder,
    num_edge_types,
    sparse_batch_builder,
)
from chemgraph.featurize import FeaturizerPreset
from chemgraph.graphs import add_shortest_paths
from chemgraph.model_names import MODEL_DESCRIPTIONS
from chemgraph.models.esa import ESA, ESAConfig
from chemgraph.models.gmoe import GMoE, GMoEConfig, MessagePassingConfig
from chemgraph.models.graphormer import Graphormer, GraphormerConfig
from chemgraph.models.grat import GRAT, GRATConfig

__all__ = ["MODELS", "ModelSpec", "PropertyModel", "build_model", "get_model_spec"]


@runtime_checkable
class PropertyModel(Protocol):
    """The contract every registered model family keeps (checked for each entry of
    :data:`MODELS` by ``tests/models/test_registry.py``).

    ``forward(batch)`` is ``head(embed(batch))``: ``embed`` maps the batch of ``B`` graphs to
    their readout, ``float32 [B, D]`` (the learned molecular representation that transfer
    learning keeps and fingerprints are read from), and ``head`` maps it to the
    ``[B, num_outputs]`` predictions. Fine-tuning replaces ``head`` alone
    (:func:`chemgraph.train.finetune.transfer_weights` copies every weight not under ``head.``).
    """

    head: nn.Module

    def embed(self, batch: Any) -> torch.Tensor: ...

    def __call__(self, batch: Any) -> torch.Tensor: ...


@dataclass(frozen=True)
class ModelSpec:
    """How to build, check and feed one model family.

    Attributes:
        name: the ``--model`` name.
        config_class: configuration dataclass with ``check_options(options)`` (raises
            ``ValueError`` on unknown or bad user options) and ``to_dict()``.
        model_class: ``model_class(config)`` builds the :class:`torch.nn.Module`, a
            :class:`PropertyModel`: its forward takes the batch made by :attr:`batch_builder`
            and returns ``head(embed(batch))``, ``[B, num_outputs]``.
        feature_dtype: atom/bond feature dtype the model takes: ``torch.float32`` (one-hot,
            e.g. the ``canonical`` preset) or ``torch.int64`` (categorical, e.g. ``ogb``).
        default_featurizer: featurizer preset used when the user names none.
        input_options: configuration fields fixed by the featurizer preset (feature widths,
            vocabulary sizes, set type), merged into the user's options.
        batch_builder: ``batch_builder(config)`` returns the collate function
            ``DGLGraph (batched) -> batch`` for a built model's configuration.
        graph_transform: ``graph_transform(config)`` returns a per-molecule function
            ``DGLGraph -> DGLGraph`` applied once to every featurised graph before batching
            (e.g. caching shortest paths for Graphormer); None = graphs are used as built.
        training_options: model options ``chemgraph train`` uses unless the user sets them
            (:class:`chemgraph.train.config.TrainingConfig` records them in ``model_options``):
            departures from the configuration dataclass's defaults, which stay the paper's so
            that stored configurations without the option load as they were trained.
        training_settings: optimisation settings of ``chemgraph train``'s default protocol
            that this family overrides (:data:`chemgraph.train.config.PROTOCOLS`), e.g. the
            smaller batches and larger learning rate message passing needs to learn in 50
            epochs.
        padded_batches: the batch builder pads graphs to the largest of the batch, so training
            batches are drawn by size (:class:`chemgraph.data.datamodule.
            SizeBucketBatchSampler`); False for disjoint-union batches, which have no padding
            to save and whose BatchNorm statistics would be skewed by batches of one size.
    """

    name: str
    config_class: type
    model_class: type[nn.Module]
    feature_dtype: torch.dtype
    default_featurizer: str
    input_options: Callable[[FeaturizerPreset], dict[str, Any]]
    batch_builder: Callable[[Any], Callable]
    graph_transform: Callable[[Any], Callable[[dgl.DGLGraph], dgl.DGLGraph]] | None = None
    training_options: Mapping[str, Any] = field(default_factory=dict)
    training_settings: Mapping[str, Any] = field(default_factory=dict)
    padded_batches: bool = True

    @property
    def description(self) -> str:
        """One line for ``--help``, from :data:`chemgraph.model_names.MODEL_DESCRIPTIONS`."""
        return MODEL_DESCRIPTIONS[self.name]

    def transform_graphs(self, config: Any, graphs: Sequence[dgl.DGLGraph]) -> list:
        """``graphs`` after :attr:`graph_transform` (the same list when there is none)."""
        if self.graph_transform is None:
            return list(graphs)
        transform = self.graph_transform(config)
        return [transform(graph) for graph in graphs]


def _categorical_inputs(preset: FeaturizerPreset, **fixed: Any) -> dict[str, Any]:
    """Vocabulary sizes of a categorical preset (embedding tables), plus fixed options."""
    return {
        "atom_vocabulary_sizes": list(preset.atom.vocabulary_sizes),
        "bond_vocabulary_sizes": list(preset.bond.vocabulary_sizes),
        **fixed,
    }


def _set_attention_spec(
    name: str, input_options: Callable[[FeaturizerPreset], dict[str, Any]]
) -> ModelSpec:
    """ESA or NSA: the same model class on edge or node sets of one-hot features."""
    return ModelSpec(
        name=name,
        config_class=ESAConfig,
        model_class=ESA,
        feature_dtype=torch.float32,
        default_featurizer="canonical",
        input_options=input_options,
        batch_builder=lambda config: batch_builder(config.set_type, config.attention),
        training_options={"readout": "seeds+sum"},
    )


OGB_TRAINING = {"batch_size": 32, "learning_rate": 1e-3}
"""The batch size and learning rate of OGB's GCN/GIN examples (Hu et al. 2020, "Open Graph
Benchmark", arXiv:2005.00687), which GMoE keeps (Wang et al. 2023, section 4.1): at the default
protocol's batch 128 and 5e-4 these models barely learn ESOL in 50 epochs (measured in
``benchmarks/README.md``, "How the defaults were chosen")."""

GMOE_TRAINING_OPTIONS = {
    "k": 2, "noisy_gating": False, "gate_init": "normal", "norm": "layer", "dropout": 0.1
}  # fmt: skip
"""GMoE's model options under ``chemgraph train`` (a departure from the paper, whose form stays
:class:`~chemgraph.models.gmoe.GMoEConfig`'s defaults: ``k = 1``, noisy gate, zero gate
weights, BatchNorm, dropout 0.5). With the paper's, GMoE-GCN/GIN do not learn ESOL at these
settings: with ``k = 1`` the task loss gives the gate no gradient and
the routing in training is the gate's noise alone, and the experts' BatchNorm layers normalise
differently in evaluation than on the size-bucketed training batches. ``k = 2`` with a gate
trained by the task, without noise (the same routing in training and evaluation), starting
from random weights, with LayerNorm and dropout 0.1 learns ESOL (:mod:`chemgraph.models.gmoe`;
the experiments and results are in ``benchmarks/README.md``, "GMoE on ESOL")."""


def _message_passing_spec(name: str, kind: str, plain: bool) -> ModelSpec:
    """GMoE-GCN/GIN (``plain=False``) or the one-expert GCN/GIN baseline (``plain=True``)."""
    return ModelSpec(
        name=name,
        config_class=MessagePassingConfig if plain else GMoEConfig,
        model_class=GMoE,
        feature_dtype=torch.int64,
        default_featurizer="ogb",
        input_options=lambda preset: _categorical_inputs(preset, kind=kind),
        batch_builder=lambda config: sparse_batch_builder(two_hop=config.two_hop),
        training_options={} if plain else GMOE_TRAINING_OPTIONS,
        training_settings=OGB_TRAINING,
        padded_batches=False,
    )


MODELS: dict[str, ModelSpec] = {
    "esa": _set_attention_spec(
        "esa",
        lambda preset: {"in_features": 2 * len(preset.atom) + len(preset.bond), "set_type": "edge"},
    ),
    "nsa": _set_attention_spec(
        "nsa",
        lambda preset: {"in_features": len(preset.atom), "set_type": "node"},
    ),
    "graphormer": ModelSpec(
        name="graphormer",
        config_class=GraphormerConfig,
        model_class=Graphormer,
        feature_dtype=torch.int64,
        default_featurizer="ogb",
        input_options=_categorical_inputs,
        batch_builder=lambda config: dense_batch_builder(
            config.max_distance, config.multi_hop_max_distance
        ),
        graph_transform=lambda config: functools.partial(
            add_shortest_paths, max_path_edges=config.multi_hop_max_distance
        ),
    ),
    "grat": ModelSpec(
        name="grat",
        config_class=GRATConfig,
        model_class=GRAT,
        feature_dtype=torch.int64,
        default_featurizer="ogb",
        input_options=lambda preset: {
            "atom_vocabulary_sizes": list(preset.atom.vocabulary_sizes),
            "num_bond_types": num_edge_types(preset),
        },
        batch_builder=lambda config: dense_batch_builder(config.max_distance, 0),
        graph_transform=lambda config: functools.partial(add_shortest_paths, max_path_edges=0),
    ),
    "gmoe-gcn": _message_passing_spec("gmoe-gcn", "gcn", plain=False),
    "gmoe-gin": _message_passing_spec("gmoe-gin", "gin", plain=False),
    "gcn": _message_passing_spec("gcn", "gcn", plain=True),
    "gin": _message_passing_spec("gin", "gin", plain=True),
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
