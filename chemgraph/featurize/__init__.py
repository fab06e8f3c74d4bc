"""Featurize layer: atom/bond featurizers and presets, fingerprints, descriptors, distance bases.
May import :mod:`chemgraph.chem` and the bottom modules (``_dgl``, ``graph_keys``).

``get_preset("canonical")`` (float32 one-hot: 76 atom, 15 bond columns) and ``get_preset("ogb")``
(int64 categorical: 9 atom, 3 bond columns); see :mod:`chemgraph.featurize.presets` and the
class docstrings for the exact field order. Also: RDKit fingerprints and 2D descriptors, the
Gaussian distance basis, and (optional extra) a DeepChem graph-featurizer adapter in
:mod:`chemgraph.featurize.deepchem_adapter`.
"""

from chemgraph.featurize.atom import (
    CANONICAL_SYMBOLS,
    AtomFeaturizer,
    CanonicalAtomFeaturizer,
    OGBAtomFeaturizer,
)
from chemgraph.featurize.bond import BondFeaturizer, CanonicalBondFeaturizer, OGBBondFeaturizer
from chemgraph.featurize.descriptors import RDKitDescriptors, parse_descriptors
from chemgraph.featurize.distance import GaussianBasis, cosine_cutoff
from chemgraph.featurize.fingerprints import (
    FeatureMorganFingerprint,
    MACCSFingerprint,
    MorganFingerprint,
    fingerprint_from_dict,
    parse_fingerprint,
)
from chemgraph.featurize.geometry import ElementOneHot, RadiusGraphFeaturizer
from chemgraph.featurize.presets import PRESETS, FeaturizerPreset, available_presets, get_preset

__all__ = [
    "FeatureMorganFingerprint",
    "MACCSFingerprint",
    "MorganFingerprint",
    "RDKitDescriptors",
    "fingerprint_from_dict",
    "parse_descriptors",
    "parse_fingerprint",
    "CANONICAL_SYMBOLS",
    "PRESETS",
    "AtomFeaturizer",
    "BondFeaturizer",
    "CanonicalAtomFeaturizer",
    "CanonicalBondFeaturizer",
    "ElementOneHot",
    "FeaturizerPreset",
    "GaussianBasis",
    "OGBAtomFeaturizer",
    "OGBBondFeaturizer",
    "RadiusGraphFeaturizer",
    "available_presets",
    "cosine_cutoff",
    "get_preset",
]
