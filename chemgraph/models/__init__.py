"""Models layer: the graph models and their registry (``chemgraph train --model NAME``).

May import :mod:`chemgraph.nn`, :mod:`chemgraph.batches` and the layers below them (``graphs``,
``featurize``, ``chem``, bottom modules); never ``data``, ``train`` or above.
"""

from chemgraph.models.esa import ESA, ESAConfig
from chemgraph.models.gmoe import GMoE, GMoEConfig
from chemgraph.models.graphormer import Graphormer, GraphormerConfig
from chemgraph.models.grat import GRAT, GRATConfig, GRATTranslator, GRATTranslatorConfig
from chemgraph.models.label_augmentation import (
    LabelAugmentation,
    LabelAugmentedBatch,
    augmented_batch_builder,
    readout_width,
)
from chemgraph.models.registry import MODELS, ModelSpec, PropertyModel, build_model, get_model_spec

__all__ = [
    "ESA",
    "ESAConfig",
    "GMoE",
    "GMoEConfig",
    "GRAT",
    "GRATConfig",
    "GRATTranslator",
    "GRATTranslatorConfig",
    "Graphormer",
    "GraphormerConfig",
    "LabelAugmentation",
    "LabelAugmentedBatch",
    "MODELS",
    "ModelSpec",
    "PropertyModel",
    "augmented_batch_builder",
    "build_model",
    "get_model_spec",
    "readout_width",
]
