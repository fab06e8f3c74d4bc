"""Atom and bond featurizers and their named presets.

``get_preset("canonical")`` (float32 one-hot: 76 atom, 15 bond columns) and ``get_preset("ogb")``
(int64 categorical: 9 atom, 3 bond columns); see :mod:`chemgraph.featurize.presets` and the
class docstrings for the exact field order.
"""

from chemgraph.featurize.atom import (
    CANONICAL_SYMBOLS,
    AtomFeaturizer,
    CanonicalAtomFeaturizer,
    OGBAtomFeaturizer,
)
from chemgraph.featurize.bond import BondFeaturizer, CanonicalBondFeaturizer, OGBBondFeaturizer
from chemgraph.featurize.presets import PRESETS, FeaturizerPreset, available_presets, get_preset

__all__ = [
    "CANONICAL_SYMBOLS",
    "PRESETS",
    "AtomFeaturizer",
    "BondFeaturizer",
    "CanonicalAtomFeaturizer",
    "CanonicalBondFeaturizer",
    "FeaturizerPreset",
    "OGBAtomFeaturizer",
    "OGBBondFeaturizer",
    "available_presets",
    "get_preset",
]
