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
from chemgraph.featurize import FeaturizerPreset, RadiusGraphFeaturizer, get_preset
from chemgraph.graph_keys import EDGE_FEATURES
from chemgraph.graphs import add_distance_features, add_shortest_paths
from chemgraph.model_names import MODEL_DESCRIPTIONS
from chemgraph.models.esa import ESA, ESAConfig
from chemgraph.models.gmoe import GMoE, GMoEConfig, MessagePassingConfig
from chemgraph.models.graphormer import Graphormer, GraphormerConfig
from chemgraph.models.grat import GRAT, GRATConfig

__all__ = [
    "GRAPH_KINDS",
    "MODELS",
    "ModelSpec",
    "PropertyModel",
    "build_model",
    "get_model_spec",
]

GRAPH_KINDS = ("bond", "radius")
"""What a model family reads: ``"bond"`` graphs of a molecule's 2D structure (atoms and bonds,
a :class:`~chemgraph.featurize.FeaturizerPreset`, built from SMILES or any molecule) or
``"radius"`` graphs of its 3D structure (atoms within a cutoff, a
:class:`~chemgraph.featurize.RadiusGraphFeaturizer`, built from coordinates)."""

Featurizer = FeaturizerPreset | RadiusGraphFeaturizer


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
        default_featurizer: featurizer used when the user names none: a preset name
            (``"bond"`` graphs) or the :class:`~chemgraph.featurize.RadiusGraphFeaturizer`
            name (``"radius"`` graphs, its default fields).
        input_options: configuration fields fixed by the featurizer (feature widths,
            vocabulary sizes, set type), merged into the user's options.
        batch_builder: ``batch_builder(config)`` returns the collate function
            ``DGLGraph (batched) -> batch`` for a built model's configuration; use
            :meth:`collate`, which also applies :attr:`batch_graph_transform`.
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
        graph_kind: one of :data:`GRAPH_KINDS`: the graphs the model reads and so the kind of
            featurizer (:meth:`featurizer`).
        batch_graph_transform: ``batch_graph_transform(featurizer)`` returns a function
            ``DGLGraph (batched) -> DGLGraph`` applied to every batched graph before
            :attr:`batch_builder` (e.g. the Gaussian distance features of radius graphs,
            expanded per batch so that the stored graphs keep one float per edge instead of
            ``K``); None = none.
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
    graph_kind: str = "bond"
    batch_graph_transform: Callable[[Any], Callable[[dgl.DGLGraph], dgl.DGLGraph]] | None = None

    def __post_init__(self) -> None:
        if self.graph_kind not in GRAPH_KINDS:
            raise ValueError(f"graph_kind must be one of {GRAPH_KINDS}, got {self.graph_kind!r}")

    def featurizer(self, values: str | Mapping[str, Any] | None = None) -> Featurizer:
        """The featurizer of this family's graphs from a name, a dict or None (the default).

        ``"bond"`` graphs: a preset name or its :meth:`FeaturizerPreset.to_dict` (as stored in
        checkpoints). ``"radius"`` graphs: :class:`RadiusGraphFeaturizer` fields as a dict
        (its :meth:`~RadiusGraphFeaturizer.to_dict`, or any subset; the others keep their
        defaults) or its name.

        Raises:
            ValueError: an unknown preset, bad featurizer fields, or a featurizer of the other
                graph kind (a preset for a radius-graph model or the reverse).
        """
        if values is None:
            values = self.default_featurizer
        if self.graph_kind == "bond":
            if isinstance(values, Mapping):
                if "name" not in values or "cutoff" in values:
                    raise ValueError(
                        f"{self.name} reads bond graphs: give a featurizer preset, not {values!r}"
                    )
                return FeaturizerPreset.from_dict(values)
            return get_preset(values)
        if isinstance(values, str):
            if values != RadiusGraphFeaturizer.name:
                raise ValueError(
                    f"{self.name} reads radius graphs of 3D structures: its featurizer is "
                    f"{RadiusGraphFeaturizer.name!r} (RadiusGraphFeaturizer fields), not {values!r}"
                )
            return RadiusGraphFeaturizer()
        values = dict(values)
        if values.get("name", RadiusGraphFeaturizer.name) != RadiusGraphFeaturizer.name:
            raise ValueError(
                f"{self.name} reads radius graphs of 3D structures, not {values['name']!r} graphs"
            )
        if "atomic_numbers" in values:
            values["atomic_numbers"] = tuple(values["atomic_numbers"])
        try:
            return RadiusGraphFeaturizer(**values)
        except TypeError as error:  # an unknown field
            raise ValueError(f"bad radius-graph featurizer fields {values}: {error}") from None

    def collate(self, config: Any, featurizer: Featurizer) -> Callable[[dgl.DGLGraph], Any]:
        """The DataLoader collate of a built model's ``config`` on graphs of ``featurizer``:
        ``DGLGraph (batched) -> batch``, :attr:`batch_graph_transform` then
        :attr:`batch_builder`."""
        build = self.batch_builder(config)
        if self.batch_graph_transform is None:
            return build
        return functools.partial(_transformed, self.batch_graph_transform(featurizer), build)

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


def _transformed(transform: Callable, build: Callable, graph: dgl.DGLGraph) -> Any:
    return build(transform(graph))


def _distance_features(featurizer: RadiusGraphFeaturizer) -> Callable[[dgl.DGLGraph], Any]:
    """Radius graphs' Gaussian distance features, unless the graphs already hold them."""
    return functools.partial(_add_distance_features, featurizer=featurizer)


def _add_distance_features(graph: dgl.DGLGraph, featurizer: RadiusGraphFeaturizer):
    if EDGE_FEATURES not in graph.edata:
        add_distance_features(graph, featurizer)
    return graph


def _categorical_inputs(preset: FeaturizerPreset, **fixed: Any) -> dict[str, Any]:
    """Vocabulary sizes of a categorical preset (embedding tables), plus fixed options."""
    return {
        "atom_vocabulary_sizes": list(preset.atom.vocabulary_sizes),
        "bond_vocabulary_sizes": list(preset.bond.vocabulary_sizes),
        **fixed,
    }


SET_ATTENTION_TRAINING = {"batch_size": 64}
"""ESA's batch size under the default protocol (its learning rate, 5e-4, is the protocol's),
chosen with the ``seeds+sum`` readout on validation metrics only, of the QM9 gap and ESOL
(``benchmarks/esa_defaults.py``: lowest mean validation rank of lr {1e-3, 5e-4} × batch {64,
128} × readout {seeds, seeds+sum}; ``benchmarks/README.md``, "How the defaults were chosen");
NSA, the same model on node sets, takes ESA's settings untuned."""


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
        training_settings=SET_ATTENTION_TRAINING,
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
    # ESA over the edges of a radius graph of the 3D structure: atom types and Gaussian
    # distances only (Buterez et al. 2024, section 4.1 and Table 5, the DFT -> GW transfer)
    "esa-3d": ModelSpec(
        name="esa-3d",
        config_class=ESAConfig,
        model_class=ESA,
        feature_dtype=torch.float32,
        default_featurizer=RadiusGraphFeaturizer.name,
        input_options=lambda featurizer: {
            "in_features": featurizer.edge_token_features,
            "set_type": "edge",
        },
        batch_builder=lambda config: batch_builder("edge", config.attention),
        graph_kind="radius",
        batch_graph_transform=_distance_features,
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
