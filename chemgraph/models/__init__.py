"""Graph models: ESA/NSA (more to come: Graphormer, GRAT, GMoE)."""

from chemgraph.models.esa import ESA, ESAConfig

__all__ = ["ESA", "ESAConfig"]
