"""Graph-Aware Transformer (GRAT): edge-conditioned attention encoder and graph decoder.

Reference: S. Yoo, Y.-S. Kim, K. H. Lee, K. Jeong, J. Choi, H. Lee, Y. S. Choi (2020),
"Graph-Aware Transformer: Is Attention All Graphs Need?", https://arxiv.org/abs/2006.05213.

* :mod:`~chemgraph.models.grat.layers`: the edge-conditioned attention of section 3.1
  (:class:`EdgeConditioning` ``f_a``, :class:`GRATLayer`, :class:`GRATStack`), shared by
  every encoder and decoder below.
* :mod:`~chemgraph.models.grat.encoder`: :class:`GRAT`, the encoder with a ``<CLS>`` readout
  for property prediction (sections 3.3, 4.1).
* :mod:`~chemgraph.models.grat.translator`: :class:`GRATTranslator`, encoder and two-path
  auto-regressive graph decoder for reaction outcomes (sections 3.2, 4.2).
* :mod:`~chemgraph.models.grat.beam_search`: its beam search over product graphs
  (:class:`GraphHypothesis`).

Departure from the paper: its node tokens are elements (a vocabulary of "the number of elements
in the periodic table plus a few special tokens", section 4.2); chemgraph's atom tokens
(:class:`chemgraph.chem.graph_codec.AtomLabel`) also carry the formal charge, the hydrogen
count, aromaticity, the isotope and the chirality, so that a decoded product graph is one
molecule without a separate step that guesses charges, hydrogens and stereo.
"""

from chemgraph.models.grat.beam_search import GraphHypothesis, ValenceRules
from chemgraph.models.grat.encoder import GRAT, GRATConfig
from chemgraph.models.grat.layers import EdgeConditioning, GRATLayer, GRATStack
from chemgraph.models.grat.translator import (
    DecoderCache,
    GRATTranslator,
    GRATTranslatorConfig,
    sinusoidal_encoding,
)

__all__ = [
    "GRAT",
    "DecoderCache",
    "EdgeConditioning",
    "GRATConfig",
    "GRATLayer",
    "GRATStack",
    "GRATTranslator",
    "GRATTranslatorConfig",
    "GraphHypothesis",
    "ValenceRules",
    "sinusoidal_encoding",
]
