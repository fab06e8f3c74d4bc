"""Atom featurizers: one RDKit atom -> one 1-D feature row.

Two presets (see :mod:`chemgraph.featurize.presets`):

- :class:`CanonicalAtomFeaturizer` (``"canonical"``): float32 one-hot, 76 columns, for models
  that take node features through a linear layer (ESA/NSA, GCN/GIN, GMoE).
- :class:`OGBAtomFeaturizer` (``"ogb"``): int64 categorical, 9 columns, OGB's
  ``ogb.utils.features.atom_to_feature_vector``, for embedding tables (Graphormer, GRAT token
  embeddings, OGB ``AtomEncoder``).

Every featurizer is a small frozen dataclass implementing :class:`AtomFeaturizer`: ``name``,
``dtype``, ``len()`` (number of columns), ``field_names`` (one name per column, in order),
``__call__(atom)`` and ``featurize_atoms(mol)``. The design follows Chemprop v2's
``MultiHotAtomFeaturizer`` (one-hot blocks with a trailing unknown slot, atomic mass scaled by
0.01), with one difference: *every* categorical block has its own explicit unknown slot, so a
value outside the vocabulary never shares a column with a real category.

Featurizers never sanitise: give them sanitised molecules (:func:`chemgraph.chem.mol_from_smiles`,
:func:`chemgraph.chem.iter_sdf`); implicit-H counts and hybridisation come from sanitisation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import torch
from rdkit import Chem
from rdkit.Chem.rdchem import ChiralType, HybridizationType

__all__ = [
    "CANONICAL_SYMBOLS",
    "AtomFeaturizer",
    "CanonicalAtomFeaturizer",
    "OGBAtomFeaturizer",
]


@runtime_checkable
class AtomFeaturizer(Protocol):
    """What every atom featurizer provides.

    Attributes:
        name: preset name, e.g. ``"canonical"``.
        dtype: ``torch.float32`` (one-hot/continuous presets) or ``torch.int64`` (categorical
            presets, one category index per column, for embedding tables).
    """

    name: str
    dtype: torch.dtype

    def __len__(self) -> int:
        """Number of feature columns ``F``."""
        ...

    def __call__(self, atom: Chem.Atom) -> np.ndarray:
        """Features of one atom: ``[F]``, numpy float32 or int64 matching ``dtype``."""
        ...

    @property
    def field_names(self) -> tuple[str, ...]:
        """One name per column, in column order; ``len(field_names) == len(self)``."""
        ...

    def featurize_atoms(self, mol: Chem.Mol) -> np.ndarray:
        """Features of every atom: ``[num_atoms, F]``, row ``i`` is ``mol.GetAtomWithIdx(i)``."""
        ...

    def featurize_atoms_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """Features of the atoms of many molecules, concatenated: ``[total atoms, F]``."""
        ...


def _atoms(mol: Chem.Mol) -> Iterator[Chem.Atom]:
    """The atoms of ``mol`` in index order (twice as fast as ``mol.GetAtoms()`` iteration)."""
    return map(mol.GetAtomWithIdx, range(mol.GetNumAtoms()))


def _index_of(vocabulary: Sequence[Any]) -> dict[Any, int]:
    """``{value: position}``; raises ``ValueError`` on a repeated value."""
    index = {value: i for i, value in enumerate(vocabulary)}
    if len(index) != len(vocabulary):
        raise ValueError(f"vocabulary has repeated values: {tuple(vocabulary)}")
    return index


def _label(value: Any) -> str:
    return value.name if hasattr(value, "name") else str(value)


#: Element symbols of the canonical preset, by atomic number: organic/drug-like elements,
#: common counter-ions and salts (Li Na K Cs Mg Ca), and metals common in catalysts, reagents and
#: metallodrugs. Anything else (e.g. Xe, U, the dummy atom ``*``) goes to ``symbol=unknown``.
CANONICAL_SYMBOLS: tuple[str, ...] = (
    "H", "Li", "B", "C", "N", "O", "F", "Na", "Mg", "Al", "Si", "P", "S", "Cl",
    "K", "Ca", "Ti", "V", "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn", "Ge", "As", "Se",
    "Br", "Zr", "Ru", "Rh", "Pd", "Ag", "Sn", "I", "Cs", "Ir", "Pt", "Au", "Hg",
)  # fmt: skip

_CANONICAL_CHIRAL_TAGS: tuple[ChiralType, ...] = (
    ChiralType.CHI_UNSPECIFIED,
    ChiralType.CHI_TETRAHEDRAL_CW,
    ChiralType.CHI_TETRAHEDRAL_CCW,
    ChiralType.CHI_OTHER,
)
_CANONICAL_HYBRIDIZATIONS: tuple[HybridizationType, ...] = (
    HybridizationType.S,
    HybridizationType.SP,
    HybridizationType.SP2,
    HybridizationType.SP3,
    HybridizationType.SP3D,
    HybridizationType.SP3D2,
)


@dataclass(frozen=True)
class CanonicalAtomFeaturizer:
    """One-hot atom features (preset ``"canonical"``): float32, 76 columns with the defaults.

    Six one-hot blocks, each followed by its own ``=unknown`` column (a value outside the block's
    vocabulary sets only that column), then three scalar columns. Columns with the default
    vocabularies (``field_names`` spells every one):

    ========  ======================================================================
    columns   field
    ========  ======================================================================
    0-40      ``symbol=<X>`` for X in :data:`CANONICAL_SYMBOLS` (H Li B C N O F Na Mg
              Al Si P S Cl K Ca Ti V Cr Mn Fe Co Ni Cu Zn Ge As Se Br Zr Ru Rh Pd Ag
              Sn I Cs Ir Pt Au Hg; ``atom.GetSymbol()``, so ``[2H]`` is ``H``)
    41        ``symbol=unknown``
    42-47     ``degree=0`` … ``degree=5`` (``atom.GetTotalDegree()``: heavy and H
              neighbours, dative bonds included)
    48        ``degree=unknown``
    49-53     ``formal_charge=-2`` … ``formal_charge=2``
    54        ``formal_charge=unknown``
    55-58     ``chiral_tag=CHI_UNSPECIFIED``, ``=CHI_TETRAHEDRAL_CW``,
              ``=CHI_TETRAHEDRAL_CCW``, ``=CHI_OTHER`` (``@@`` is CW, ``@`` is CCW)
    59        ``chiral_tag=unknown`` (e.g. ``CHI_SQUAREPLANAR``, ``CHI_ALLENE``)
    60-64     ``num_hs=0`` … ``num_hs=4`` (``atom.GetTotalNumHs()``: implicit + explicit)
    65        ``num_hs=unknown``
    66-71     ``hybridization=S``, ``=SP``, ``=SP2``, ``=SP3``, ``=SP3D``, ``=SP3D2``
    72        ``hybridization=unknown`` (``UNSPECIFIED``, ``SP2D``, ``OTHER``)
    73        ``is_aromatic`` (0.0 / 1.0)
    74        ``is_in_ring`` (0.0 / 1.0)
    75        ``atomic_mass*0.01`` (``atom.GetMass() * 0.01``; mass in Da, isotope-aware;
              the Chemprop scaling, so carbon is 0.12011)
    ========  ======================================================================

    The vocabularies are fields so that a custom one-hot featurizer can be built
    (``CanonicalAtomFeaturizer(name="mine", degrees=(0, 1, 2, 3, 4, 5, 6))``); give it a new
    ``name``. Column layout then follows the same order with the new block sizes.

    Raises:
        ValueError: at construction, when a vocabulary repeats a value.
    """

    name: str = "canonical"
    symbols: tuple[str, ...] = CANONICAL_SYMBOLS
    degrees: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    formal_charges: tuple[int, ...] = (-2, -1, 0, 1, 2)
    chiral_tags: tuple[ChiralType, ...] = _CANONICAL_CHIRAL_TAGS
    num_hs: tuple[int, ...] = (0, 1, 2, 3, 4)
    hybridizations: tuple[HybridizationType, ...] = _CANONICAL_HYBRIDIZATIONS

    dtype: ClassVar[torch.dtype] = torch.float32

    def __post_init__(self) -> None:
        for vocabulary in self._blocks:
            _index_of(vocabulary)

    @property
    def _blocks(self) -> tuple[tuple[Any, ...], ...]:
        return (
            self.symbols,
            self.degrees,
            self.formal_charges,
            self.chiral_tags,
            self.num_hs,
            self.hybridizations,
        )

    @cached_property
    def _lookup(self) -> tuple[tuple[dict[Any, int], int], ...]:
        """Per block: ``({value: column}, unknown column)``."""
        out = []
        offset = 0
        for vocabulary in self._blocks:
            index = _index_of(vocabulary)
            out.append(({v: offset + i for v, i in index.items()}, offset + len(vocabulary)))
            offset += len(vocabulary) + 1
        return tuple(out)

    def __len__(self) -> int:
        return sum(len(vocabulary) + 1 for vocabulary in self._blocks) + 3

    @property
    def field_names(self) -> tuple[str, ...]:
        """``("symbol=H", …, "symbol=unknown", "degree=0", …, "atomic_mass*0.01")``."""
        prefixes = ("symbol", "degree", "formal_charge", "chiral_tag", "num_hs", "hybridization")
        names: list[str] = []
        for prefix, vocabulary in zip(prefixes, self._blocks, strict=True):
            names += [f"{prefix}={_label(v)}" for v in vocabulary]
            names.append(f"{prefix}=unknown")
        return (*names, "is_aromatic", "is_in_ring", "atomic_mass*0.01")

    def _row(self, atom: Chem.Atom) -> tuple[int, int, int, int, int, int, bool, bool, float]:
        """Six hot column indices, then aromatic, in ring, mass (one RDKit call per field)."""
        symbols, degrees, charges, chiral, hs, hybrid = self._lookup
        return (
            symbols[0].get(atom.GetSymbol(), symbols[1]),
            degrees[0].get(atom.GetTotalDegree(), degrees[1]),
            charges[0].get(atom.GetFormalCharge(), charges[1]),
            chiral[0].get(atom.GetChiralTag(), chiral[1]),
            hs[0].get(atom.GetTotalNumHs(), hs[1]),
            hybrid[0].get(atom.GetHybridization(), hybrid[1]),
            atom.GetIsAromatic(),
            atom.IsInRing(),
            atom.GetMass(),
        )

    def _encode(self, rows: list[tuple]) -> np.ndarray:
        out = np.zeros((len(rows), len(self)), dtype=np.float32)
        if rows:
            table = np.array(rows, dtype=np.float64)
            hot = table[:, :6].astype(np.int64)
            np.put_along_axis(out, hot, 1.0, axis=1)
            out[:, -3:] = table[:, 6:] * (1.0, 1.0, 0.01)
        return out

    def __call__(self, atom: Chem.Atom) -> np.ndarray:
        """Features of one atom: ``float32 [76]`` (``[len(self)]``)."""
        return self._encode([self._row(atom)])[0]

    def featurize_atoms(self, mol: Chem.Mol) -> np.ndarray:
        """``float32 [num_atoms, 76]``; row ``i`` is atom ``i`` of ``mol``."""
        return self.featurize_atoms_of([mol])

    def featurize_atoms_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """``float32 [total atoms, 76]``: the atoms of every molecule, molecule after molecule.

        One pass over the atoms, then one vectorised one-hot encoding: the fast path for
        featurizing many molecules at once.
        """
        return self._encode([self._row(atom) for mol in mols for atom in _atoms(mol)])


_OGB_CHIRALITY: tuple[ChiralType, ...] = _CANONICAL_CHIRAL_TAGS
_OGB_HYBRIDIZATIONS: tuple[HybridizationType, ...] = (
    HybridizationType.SP,
    HybridizationType.SP2,
    HybridizationType.SP3,
    HybridizationType.SP3D,
    HybridizationType.SP3D2,
)


def _range_index(value: int, low: int, high: int) -> int:
    """``value - low`` for ``low <= value <= high``, else the misc index ``high - low + 1``."""
    return value - low if low <= value <= high else high - low + 1


@dataclass(frozen=True)
class OGBAtomFeaturizer:
    """OGB categorical atom features (preset ``"ogb"``): int64, 9 columns.

    Identical to ``ogb.utils.features.atom_to_feature_vector`` (OGB, Hu et al. 2020): column
    ``j`` holds the position of the atom's value in OGB's list ``j``, and a value missing from a
    list takes the list's last position (``misc``). ``vocabulary_sizes`` gives the embedding
    table size of each column, OGB's ``get_atom_feature_dims()``.

    ======  =========================  ===================================================  ====
    column  field (``field_names``)    categories, index = position                         size
    ======  =========================  ===================================================  ====
    0       ``atomic_num``             Z = 1 … 118 at index Z - 1; misc 118 (e.g. ``*``)    119
    1       ``chirality``              CHI_UNSPECIFIED 0, CHI_TETRAHEDRAL_CW 1,              5
                                       CHI_TETRAHEDRAL_CCW 2, CHI_OTHER 3; misc 4
    2       ``degree``                 ``GetTotalDegree()`` 0 … 10 at index = value;         12
                                       misc 11
    3       ``formal_charge``          -5 … 5 at index charge + 5; misc 11                  12
    4       ``num_hs``                 ``GetTotalNumHs()`` 0 … 8; misc 9                     10
    5       ``num_radical_electrons``  0 … 4; misc 5                                        6
    6       ``hybridization``          SP 0, SP2 1, SP3 2, SP3D 3, SP3D2 4; misc 5           6
                                       (S, e.g. ``[Na+]``, and UNSPECIFIED are misc)
    7       ``is_aromatic``            False 0, True 1                                      2
    8       ``is_in_ring``             False 0, True 1                                      2
    ======  =========================  ===================================================  ====

    One deliberate difference: OGB raises ``ValueError`` for chiral tags newer than its list
    (``CHI_SQUAREPLANAR``, ``CHI_ALLENE``, …); here they are misc (4).
    """

    name: str = "ogb"

    dtype: ClassVar[torch.dtype] = torch.int64

    def __len__(self) -> int:
        return 9

    @property
    def field_names(self) -> tuple[str, ...]:
        return (
            "atomic_num",
            "chirality",
            "degree",
            "formal_charge",
            "num_hs",
            "num_radical_electrons",
            "hybridization",
            "is_aromatic",
            "is_in_ring",
        )

    @property
    def categories(self) -> tuple[tuple[str, ...], ...]:
        """Per column, the label of each category index (``categories[j][x[j]]`` decodes)."""
        return (
            (*(str(z) for z in range(1, 119)), "misc"),
            (*(_label(t) for t in _OGB_CHIRALITY), "misc"),
            (*(str(d) for d in range(0, 11)), "misc"),
            (*(str(c) for c in range(-5, 6)), "misc"),
            (*(str(h) for h in range(0, 9)), "misc"),
            (*(str(r) for r in range(0, 5)), "misc"),
            (*(_label(h) for h in _OGB_HYBRIDIZATIONS), "misc"),
            ("False", "True"),
            ("False", "True"),
        )

    @property
    def vocabulary_sizes(self) -> tuple[int, ...]:
        """Categories per column: ``(119, 5, 12, 12, 10, 6, 6, 2, 2)``."""
        return tuple(len(c) for c in self.categories)

    def _values(self, atom: Chem.Atom) -> tuple[int, ...]:
        chiral = atom.GetChiralTag()
        hybrid = atom.GetHybridization()
        return (
            _range_index(atom.GetAtomicNum(), 1, 118),
            _OGB_CHIRALITY.index(chiral) if chiral in _OGB_CHIRALITY else 4,
            _range_index(atom.GetTotalDegree(), 0, 10),
            _range_index(atom.GetFormalCharge(), -5, 5),
            _range_index(atom.GetTotalNumHs(), 0, 8),
            _range_index(atom.GetNumRadicalElectrons(), 0, 4),
            _OGB_HYBRIDIZATIONS.index(hybrid) if hybrid in _OGB_HYBRIDIZATIONS else 5,
            int(atom.GetIsAromatic()),
            int(atom.IsInRing()),
        )

    def __call__(self, atom: Chem.Atom) -> np.ndarray:
        """Category indices of one atom: ``int64 [9]``."""
        return np.array(self._values(atom), dtype=np.int64)

    def featurize_atoms(self, mol: Chem.Mol) -> np.ndarray:
        """``int64 [num_atoms, 9]``; row ``i`` is atom ``i`` of ``mol``."""
        return self.featurize_atoms_of([mol])

    def featurize_atoms_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """``int64 [total atoms, 9]``: the atoms of every molecule, molecule after molecule."""
        rows = [self._values(atom) for mol in mols for atom in _atoms(mol)]
        return np.array(rows, dtype=np.int64).reshape(len(rows), 9)
