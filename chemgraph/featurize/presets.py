"""Named featurizer presets: the atom/bond featurizer pair a dataset or checkpoint uses.

========== ======= ================ ================ =====================================
preset     dtype   atom columns     bond columns     for
========== ======= ================ ================ =====================================
canonical  float32 76 (one-hot)     15 (one-hot)     linear input layers (ESA/NSA)
ogb        int64   9 (categorical)  3 (categorical)  embedding tables (Graphormer, GRAT,
                                                     GMoE, GCN/GIN as OGB's
                                                     ``AtomEncoder``/``BondEncoder``)
========== ======= ================ ================ =====================================

Field order: :class:`~chemgraph.featurize.atom.CanonicalAtomFeaturizer`,
:class:`~chemgraph.featurize.bond.CanonicalBondFeaturizer`,
:class:`~chemgraph.featurize.atom.OGBAtomFeaturizer`,
:class:`~chemgraph.featurize.bond.OGBBondFeaturizer`.

Same molecule, same features: no column depends on the atom order. Stereo is encoded by CIP
descriptors (atoms: none, R, S, other; bonds: none, any, Z, E and the atropisomer descriptors
M, P; :func:`~chemgraph.featurize.atom.atom_stereo_labels`,
:func:`~chemgraph.featurize.bond.bond_stereo_labels`), not by RDKit's chiral tag (CW/CCW) and
bond stereo (CIS/TRANS), which refer to the neighbours' atom indices: ``C[C@H](N)C(=O)O`` and
``N[C@@H](C)C(=O)O`` are both L-alanine but carry opposite tags. The ``ogb`` preset departs
from OGB's vocabulary there, keeping its column sizes (OGB encodes the raw tags, so
OGB-featurised models give one molecule several predictions).

A preset is saved into every checkpoint with :meth:`FeaturizerPreset.to_dict` and restored with
:meth:`FeaturizerPreset.from_dict`, which refuses a checkpoint whose feature widths or stereo
encoding differ from this version's preset of the same name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch

from chemgraph.featurize.atom import AtomFeaturizer, CanonicalAtomFeaturizer, OGBAtomFeaturizer
from chemgraph.featurize.bond import BondFeaturizer, CanonicalBondFeaturizer, OGBBondFeaturizer

__all__ = ["PRESETS", "STEREO_ENCODING", "FeaturizerPreset", "available_presets", "get_preset"]

#: How the presets encode stereo, recorded by :meth:`FeaturizerPreset.to_dict` (so that data
#: and checkpoints featurised with RDKit's raw, order-dependent tags are not mistaken for these).
STEREO_ENCODING = "cip"


@dataclass(frozen=True)
class FeaturizerPreset:
    """A named, frozen pair of atom and bond featurizers.

    Attributes:
        name: the preset's name, a key of :data:`PRESETS`.
        atom: node features, ``len(atom)`` columns (``ndata["x"]`` is ``[num_atoms, len(atom)]``).
        bond: edge features, ``len(bond)`` columns (``edata["e"]`` is ``[2 * num_bonds,
            len(bond)]``, both directions of a bond sharing its row).
    """

    name: str
    atom: AtomFeaturizer
    bond: BondFeaturizer

    def __post_init__(self) -> None:
        if self.atom.dtype != self.bond.dtype:
            raise ValueError(
                f"preset {self.name!r}: atom dtype {self.atom.dtype} != bond dtype "
                f"{self.bond.dtype}"
            )

    @property
    def dtype(self) -> torch.dtype:
        """``torch.float32`` (one-hot presets) or ``torch.int64`` (categorical presets)."""
        return self.atom.dtype

    def to_dict(self) -> dict[str, Any]:
        """``{"name": str, "atom_dim": int, "bond_dim": int, "stereo": "cip"}``, plain types for
        YAML, checkpoints and featurization cache keys."""
        return {
            "name": self.name,
            "atom_dim": len(self.atom),
            "bond_dim": len(self.bond),
            "stereo": STEREO_ENCODING,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeaturizerPreset:
        """The registered preset named ``d["name"]`` (inverse of :meth:`to_dict`).

        A dict without ``"stereo"`` (saved before chemgraph recorded it, when the presets held
        RDKit's raw chiral tags and bond stereo) is accepted: its widths are the same.

        Raises:
            ValueError: no ``"name"`` key, an unknown name (the message lists the available
                ones), or ``"atom_dim"`` / ``"bond_dim"`` / ``"stereo"`` (when present)
                differing from this version's preset, i.e. the checkpoint was featurised
                differently.
        """
        if "name" not in d:
            raise ValueError(f"featurizer preset dict needs a 'name' key, got {dict(d)!r}")
        preset = get_preset(d["name"])
        for key, width in (("atom_dim", len(preset.atom)), ("bond_dim", len(preset.bond))):
            if key in d and int(d[key]) != width:
                raise ValueError(
                    f"featurizer preset {preset.name!r}: saved {key}={d[key]} but this chemgraph "
                    f"version's preset has {width} columns; the data were featurised by another "
                    "version and must be featurised again"
                )
        if "stereo" in d and d["stereo"] != STEREO_ENCODING:
            raise ValueError(
                f"featurizer preset {preset.name!r}: saved stereo={d['stereo']!r} but this "
                f"chemgraph version encodes stereo as {STEREO_ENCODING!r}; the data must be "
                "featurised again"
            )
        return preset


#: Registered presets by name (read-only).
PRESETS: Mapping[str, FeaturizerPreset] = MappingProxyType(
    {
        "canonical": FeaturizerPreset(
            "canonical", CanonicalAtomFeaturizer(), CanonicalBondFeaturizer()
        ),
        "ogb": FeaturizerPreset("ogb", OGBAtomFeaturizer(), OGBBondFeaturizer()),
    }
)


def available_presets() -> tuple[str, ...]:
    """Names of the registered presets, sorted: ``("canonical", "ogb")``."""
    return tuple(sorted(PRESETS))


def get_preset(name: str) -> FeaturizerPreset:
    """The registered preset called ``name``.

    Raises:
        ValueError: unknown name; the message lists the available names.
    """
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown featurizer preset {name!r}; available: {', '.join(available_presets())}"
        ) from None
