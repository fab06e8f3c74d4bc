"""Graph models and their registry (``chemgraph train --model NAME``)."""

from chemgraph.models.esa import ESA, ESAConfig
from chemgraph.models.registry import MODELS, ModelSpec, build_model, get_model_spec

__all__ = ["ESA", "ESAConfig", "MODELS", "ModelSpec", "build_model", "get_model_spec"]
