"""Bond featurizers: one RDKit bond -> one 1-D feature row.

Two presets (see :mod:`chemgraph.featurize.presets`):

- :class:`CanonicalBondFeaturizer` (``"canonical"``): float32 one-hot, 15 columns.
- :class:`OGBBondFeaturizer` (``"ogb"``): int64 categorical, 3 columns, OGB's
  ``ogb.utils.features.bond_to_feature_vector``, for embedding tables.

Both implement :class:`BondFeaturizer` (``name``, ``dtype``, ``len()``, ``field_names``,
``__call__(bond)``, ``featurize_bonds(mol)``). Features are undirected: a bond's row does not
depend on which atom begins it (a dative bond ``N->Cu`` gets the same row as it would written
``Cu<-N``); ``chemgraph.graphs`` adds both directions of every bond as edges with this row.

Stereo is the bond's CIP descriptor (:func:`bond_stereo_labels`), never RDKit's
``bond.GetStereo()`` as such: with RDKit's new stereo perception (and after
:func:`rdkit.Chem.rdCIPLabeler.AssignCIPLabels`) that is ``STEREOCIS``/``STEREOTRANS``
relative to two "stereo atoms" picked by atom order, so ``Cl/C(F)=C/C`` is TRANS and
``F/C(Cl)=C\\C``, the same molecule, CIS; the descriptor of both is E.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import torch
from rdkit import Chem
from rdkit.Chem.rdchem import BondStereo, BondType

from chemgraph.featurize.atom import (
    PENDING_STEREO,
    cip_descriptors,
    column_indices,
    fill_stereo,
    index_of,
)

__all__ = [
    "BOND_STEREO_LABELS",
    "BondFeaturizer",
    "CanonicalBondFeaturizer",
    "OGBBondFeaturizer",
    "bond_ends_and_features",
    "bond_stereo_labels",
    "bonds_of",
]


def bonds_of(mol: Chem.Mol) -> Iterator[Chem.Bond]:
    """The bonds of ``mol`` in index order (twice as fast as ``mol.GetBonds()`` iteration)."""
    return map(mol.GetBondWithIdx, range(mol.GetNumBonds()))


def _bond_columns(
    mols: Sequence[Chem.Mol], getters: Sequence[Callable[[Chem.Bond], Any]]
) -> list[list]:
    """Per getter (an unbound ``Chem.Bond`` method), its value for every bond of ``mols``,
    molecule after molecule: each bond's Python object made once, in a per-molecule list, and
    the getters applied by ``map`` (see :func:`chemgraph.featurize.atom._atom_columns`)."""
    columns: list[list] = [[] for _ in getters]
    for mol in mols:
        bonds = list(map(mol.GetBondWithIdx, range(mol.GetNumBonds())))
        for column, getter in zip(columns, getters):
            column += map(getter, bonds)
    return columns


def _stereo_indices(stereo: list[BondStereo], none: int) -> np.ndarray:
    """``int64``: ``PENDING_STEREO`` for a bond with stereo (not ``STEREONONE``), else ``none``."""
    values = np.fromiter(stereo, dtype=np.int64, count=len(stereo))
    return np.where(values != int(BondStereo.STEREONONE), PENDING_STEREO, none)


_ENDS = (Chem.Bond.GetBeginAtomIdx, Chem.Bond.GetEndAtomIdx)


def bond_ends_and_features(
    featurizer: BondFeaturizer, mols: Sequence[Chem.Mol]
) -> tuple[np.ndarray, np.ndarray]:
    """The atoms of every bond and the bond features, in one pass over the bonds.

    Returns:
        ``(ends, features)``: ``int64 [total bonds, 2]``, the begin and end atom index (within
        its molecule) of every bond of ``mols``, molecule after molecule, and
        ``featurizer.featurize_bonds_of(mols)``. The presets' featurizers read their columns
        in the same pass; another featurizer makes its own.
    """
    getters = getattr(featurizer, "_GETTERS", None)
    if getters is None or not hasattr(featurizer, "_encode_columns"):
        features = featurizer.featurize_bonds_of(mols)
        columns = _bond_columns(mols, _ENDS)
    else:
        *columns, begin, end = _bond_columns(mols, (*getters, *_ENDS))
        features = featurizer._encode_columns(columns, mols)
        columns = [begin, end]
    ends = np.array(columns, dtype=np.int64).reshape(2, -1).T
    return np.ascontiguousarray(ends), features


#: The stereo values of a bond (:func:`bond_stereo_labels`), in the order of the canonical
#: preset's default vocabulary; ``"other"`` (stereo without a CIP descriptor) is not in it.
BOND_STEREO_LABELS: tuple[str, ...] = ("none", "any", "Z", "E", "M", "P")

# CIP descriptors of a bond: E/Z of a double bond (e/z: pseudo-asymmetric, seqTrans/seqCis),
# M/P of an atropisomeric single bond (m/p: pseudo-asymmetric).
_BOND_CIP = {"Z": "Z", "z": "Z", "E": "E", "e": "E", "M": "M", "m": "M", "P": "P", "p": "P"}
_ANY = BondStereo.STEREOANY


def bond_stereo_labels(mol: Chem.Mol) -> list[str]:
    """The stereo value of every bond, independent of the atom order.

    ``"none"`` (``STEREONONE``), ``"any"`` (``STEREOANY``: stereo of unknown configuration,
    e.g. a wavy bond), else the bond's CIP descriptor: ``"Z"`` or ``"E"`` for a double bond
    (whether RDKit perceived it as ``STEREOZ``/``STEREOE`` or as ``STEREOCIS``/``STEREOTRANS``),
    ``"M"`` or ``"P"`` for an atropisomeric bond (``STEREOATROPCW``/``CCW``), pseudo-asymmetric
    ``z``/``e``/``m``/``p`` as the upper-case ones; ``"other"`` when RDKit gives no descriptor
    (:func:`chemgraph.featurize.atom.cip_descriptors`). Molecules without bond stereo cost one
    pass over the bonds; the others are labelled once, on a copy (``mol`` is not modified).

    Returns:
        ``len == mol.GetNumBonds()``, entry ``i`` for bond ``i``, values of
        :data:`BOND_STEREO_LABELS` or ``"other"``.
    """
    labels = ["none"] * mol.GetNumBonds()
    stereo = [i for i, bond in enumerate(bonds_of(mol)) if bond.GetStereo()]  # STEREONONE: 0
    if stereo:
        for index, label in zip(stereo, _stereo_bond_labels(mol, stereo), strict=True):
            labels[index] = label
    return labels


def _stereo_bond_labels(mol: Chem.Mol, bonds: Sequence[int]) -> list[str]:
    """:func:`bond_stereo_labels` values of the bonds ``bonds`` (all with stereo)."""
    labels = ["any" if mol.GetBondWithIdx(i).GetStereo() == _ANY else "" for i in bonds]
    described = [position for position, label in enumerate(labels) if not label]
    if described:
        _, codes = cip_descriptors(mol, bonds=[bonds[position] for position in described])
        for position, code in zip(described, codes, strict=True):
            labels[position] = _BOND_CIP.get(code, "other")
    return labels


def _bond_stereo_label(bond: Chem.Bond) -> str:
    """:func:`bond_stereo_labels` of one bond (labels its whole molecule if it has stereo)."""
    if not bond.GetStereo():
        return "none"
    return _stereo_bond_labels(bond.GetOwningMol(), [bond.GetIdx()])[0]


@runtime_checkable
class BondFeaturizer(Protocol):
    """What every bond featurizer provides.

    Attributes:
        name: preset name, e.g. ``"canonical"``.
        dtype: ``torch.float32`` (one-hot presets) or ``torch.int64`` (categorical presets).
    """

    name: str
    dtype: torch.dtype

    def __len__(self) -> int:
        """Number of feature columns ``F``."""
        ...

    def __call__(self, bond: Chem.Bond) -> np.ndarray:
        """Features of one bond: ``[F]``, numpy float32 or int64 matching ``dtype``."""
        ...

    @property
    def field_names(self) -> tuple[str, ...]:
        """One name per column, in column order; ``len(field_names) == len(self)``."""
        ...

    def featurize_bonds(self, mol: Chem.Mol) -> np.ndarray:
        """``[num_bonds, F]``; row ``i`` is ``mol.GetBondWithIdx(i)``; ``(0, F)`` if no bonds."""
        ...

    def featurize_bonds_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """Features of the bonds of many molecules, concatenated: ``[total bonds, F]``."""
        ...


_CANONICAL_BOND_TYPES: tuple[BondType, ...] = (
    BondType.SINGLE,
    BondType.DOUBLE,
    BondType.TRIPLE,
    BondType.AROMATIC,
    BondType.DATIVE,
)


@dataclass(frozen=True)
class CanonicalBondFeaturizer:
    """One-hot bond features (preset ``"canonical"``): float32, 15 columns with the defaults.

    ========  ===============================================================================
    columns   field (``field_names``)
    ========  ===============================================================================
    0-4       ``bond_type=SINGLE``, ``=DOUBLE``, ``=TRIPLE``, ``=AROMATIC``, ``=DATIVE``
              (``bond.GetBondType()``; a dative bond, e.g. ``[NH3]->[Cu+2]``, is its own type,
              never single)
    5         ``bond_type=unknown`` (e.g. ``QUADRUPLE``, ``ZERO``, ``HYDROGEN``, ``DATIVEL``)
    6         ``is_conjugated`` (0.0 / 1.0)
    7         ``is_in_ring`` (0.0 / 1.0)
    8-13      ``stereo=none``, ``=any``, ``=Z``, ``=E``, ``=M``, ``=P``
              (:func:`bond_stereo_labels`: ``any`` is ``STEREOANY``; Z/E the CIP descriptor
              of a double bond, e.g. ``C/C=C/C`` is E; M/P that of an atropisomeric bond)
    14        ``stereo=unknown`` (stereo without CIP descriptor, ``"other"``)
    ========  ===============================================================================

    The two vocabularies are fields, for custom featurizers (give them a new ``name``).

    Raises:
        ValueError: at construction, when a vocabulary repeats a value.
    """

    name: str = "canonical"
    bond_types: tuple[BondType, ...] = _CANONICAL_BOND_TYPES
    stereo: tuple[str, ...] = BOND_STEREO_LABELS

    dtype: ClassVar[torch.dtype] = torch.float32

    def __post_init__(self) -> None:
        index_of(self.bond_types)
        index_of(self.stereo)

    @cached_property
    def _offsets(self) -> tuple[dict[Any, int], int, int, int, dict[Any, int], int]:
        """``(type columns, type unknown, conjugated, in ring, stereo columns, stereo unknown)``."""
        n_types = len(self.bond_types)
        stereo_start = n_types + 3
        return (
            index_of(self.bond_types),
            n_types,
            n_types + 1,
            n_types + 2,
            {v: stereo_start + i for v, i in index_of(self.stereo).items()},
            stereo_start + len(self.stereo),
        )

    def __len__(self) -> int:
        return len(self.bond_types) + 1 + 2 + len(self.stereo) + 1

    @property
    def field_names(self) -> tuple[str, ...]:
        """``("bond_type=SINGLE", …, "is_conjugated", "is_in_ring", "stereo=none", …)``."""
        return (
            *(f"bond_type={t.name}" for t in self.bond_types),
            "bond_type=unknown",
            "is_conjugated",
            "is_in_ring",
            *(f"stereo={s}" for s in self.stereo),
            "stereo=unknown",
        )

    def _stereo_column(self, label: str) -> int:
        """The hot column of a :func:`bond_stereo_labels` value."""
        _, _, _, _, stereo, stereo_unknown = self._offsets
        return stereo.get(label, stereo_unknown)

    def _row(self, bond: Chem.Bond) -> tuple[int, bool, bool, int]:
        """Type column, conjugated, in ring, stereo column (``PENDING_STEREO``: a stereo bond)."""
        types, type_unknown, _, _, stereo, stereo_unknown = self._offsets
        return (
            types.get(bond.GetBondType(), type_unknown),
            bond.GetIsConjugated(),
            bond.IsInRing(),
            PENDING_STEREO if bond.GetStereo() else stereo.get("none", stereo_unknown),
        )

    def _encode(self, rows: list[tuple], mols: Sequence[Chem.Mol]) -> np.ndarray:
        """One-hot rows of the bonds of ``mols`` from their :meth:`_row` tuples."""
        out = np.zeros((len(rows), len(self)), dtype=np.float32)
        if rows:
            _, _, conjugated, in_ring, _, _ = self._offsets
            table = np.array(rows, dtype=np.int64)
            fill_stereo(
                table[:, 3], mols, Chem.Mol.GetNumBonds, _stereo_bond_labels, self._stereo_column
            )
            np.put_along_axis(out, table[:, [0, 3]], 1.0, axis=1)
            out[:, [conjugated, in_ring]] = table[:, [1, 2]]
        return out

    def __call__(self, bond: Chem.Bond) -> np.ndarray:
        """Features of one bond: ``float32 [15]`` (``[len(self)]``). A stereo bond's molecule
        is CIP-labelled at each call: featurize whole molecules with :meth:`featurize_bonds`."""
        row = list(self._row(bond))
        row[3] = self._stereo_column(_bond_stereo_label(bond))
        return self._encode([row], [])[0]

    def featurize_bonds(self, mol: Chem.Mol) -> np.ndarray:
        """``float32 [num_bonds, 15]``; row ``i`` is bond ``i``; ``(0, 15)`` without bonds."""
        return self.featurize_bonds_of([mol])

    # what featurize_bonds_of reads of every bond (_bond_columns)
    _GETTERS: ClassVar[tuple[Callable[[Chem.Bond], Any], ...]] = (
        Chem.Bond.GetBondType,
        Chem.Bond.GetIsConjugated,
        Chem.Bond.IsInRing,
        Chem.Bond.GetStereo,
    )

    def _encode_columns(self, columns: list[list], mols: Sequence[Chem.Mol]) -> np.ndarray:
        """One-hot rows of the bonds of ``mols`` from their ``_GETTERS`` columns."""
        bond_type, conjugated, ring, stereo = columns
        out = np.zeros((len(bond_type), len(self)), dtype=np.float32)
        if len(out):
            types, type_unknown, conjugated_at, ring_at, stereos, stereo_unknown = self._offsets
            hot = np.stack(
                [
                    column_indices(bond_type, types, type_unknown),
                    _stereo_indices(stereo, stereos.get("none", stereo_unknown)),
                ],
                axis=1,
            )
            fill_stereo(
                hot[:, 1], mols, Chem.Mol.GetNumBonds, _stereo_bond_labels, self._stereo_column
            )
            np.put_along_axis(out, hot, 1.0, axis=1)
            out[:, conjugated_at] = np.array(conjugated, dtype=np.int64)
            out[:, ring_at] = np.array(ring, dtype=np.int64)
        return out

    def featurize_bonds_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """``float32 [total bonds, 15]``: the bonds of every molecule, molecule after molecule.

        One pass over the bonds, column by column (:func:`_bond_columns`), then one vectorised
        one-hot encoding; row ``i`` equals ``self(bond i)``.
        """
        return self._encode_columns(_bond_columns(mols, self._GETTERS), mols)


_OGB_BOND_TYPES: tuple[BondType, ...] = (
    BondType.SINGLE,
    BondType.DOUBLE,
    BondType.TRIPLE,
    BondType.AROMATIC,
)
_OGB_BOND_TYPE_INDEX = index_of(_OGB_BOND_TYPES)
_OGB_STEREO = index_of(("none", "Z", "E", "M", "P", "any"))


@dataclass(frozen=True)
class OGBBondFeaturizer:
    """OGB categorical bond features (preset ``"ogb"``): int64, 3 columns.

    ``ogb.utils.features.bond_to_feature_vector`` (OGB, Hu et al. 2020) except for the stereo
    column; ``vocabulary_sizes`` is OGB's ``get_bond_feature_dims()``.

    ======  ====================  ======================================================  ====
    column  field                 categories, index = position                            size
    ======  ====================  ======================================================  ====
    0       ``bond_type``         SINGLE 0, DOUBLE 1, TRIPLE 2, AROMATIC 3; misc 4         5
                                  (DATIVE is misc, 4: distinct from SINGLE, as in OGB)
    1       ``bond_stereo``       none 0, Z 1, E 2, M 3, P 4, any 5                        6
                                  (:func:`bond_stereo_labels`; ``"other"`` is 5)
    2       ``is_conjugated``     False 0, True 1                                          2
    ======  ====================  ======================================================  ====

    Where this departs from OGB: OGB's stereo list is RDKit's ``bond.GetStereo()``
    (STEREONONE 0, STEREOZ 1, STEREOE 2, STEREOCIS 3, STEREOTRANS 4, STEREOANY 5), and CIS/TRANS
    refer to stereo atoms chosen by atom order (module docstring), so one molecule can get 3 or
    4. Here the column keeps OGB's size and the indices of none, Z, E and any, but holds the
    CIP descriptor: a CIS/TRANS bond is Z (1) or E (2), and the CIS/TRANS indices hold the
    atropisomer descriptors M (3) and P (4) (``STEREOATROPCW``/``CCW``, which OGB raises
    ``ValueError`` for). OGB's list has no misc slot: a stereo bond without descriptor
    (``"other"``) takes the last index, 5, as OGB's ``safe_index`` would.
    """

    name: str = "ogb"

    dtype: ClassVar[torch.dtype] = torch.int64

    def __len__(self) -> int:
        return 3

    @property
    def field_names(self) -> tuple[str, ...]:
        return ("bond_type", "bond_stereo", "is_conjugated")

    @property
    def categories(self) -> tuple[tuple[str, ...], ...]:
        """Per column, the label of each category index (``categories[j][x[j]]`` decodes)."""
        return (
            (*(t.name for t in _OGB_BOND_TYPES), "misc"),
            tuple(_OGB_STEREO),
            ("False", "True"),
        )

    @property
    def vocabulary_sizes(self) -> tuple[int, ...]:
        """Categories per column: ``(5, 6, 2)``."""
        return tuple(len(c) for c in self.categories)

    def _values(self, bond: Chem.Bond) -> tuple[int, int, int]:
        """Category indices, stereo ``PENDING_STEREO`` for a stereo bond."""
        bond_type = bond.GetBondType()
        return (
            _OGB_BOND_TYPES.index(bond_type) if bond_type in _OGB_BOND_TYPES else 4,
            PENDING_STEREO if bond.GetStereo() else 0,
            int(bond.GetIsConjugated()),
        )

    @staticmethod
    def _stereo_index(label: str) -> int:
        """The category of a :func:`bond_stereo_labels` value (``"other"``: the last, 5)."""
        return _OGB_STEREO.get(label, 5)

    def __call__(self, bond: Chem.Bond) -> np.ndarray:
        """Category indices of one bond: ``int64 [3]``. A stereo bond's molecule is
        CIP-labelled at each call: featurize whole molecules with :meth:`featurize_bonds`."""
        values = list(self._values(bond))
        values[1] = self._stereo_index(_bond_stereo_label(bond))
        return np.array(values, dtype=np.int64)

    def featurize_bonds(self, mol: Chem.Mol) -> np.ndarray:
        """``int64 [num_bonds, 3]``; row ``i`` is bond ``i``; ``(0, 3)`` without bonds."""
        return self.featurize_bonds_of([mol])

    # what featurize_bonds_of reads of every bond (_bond_columns)
    _GETTERS: ClassVar[tuple[Callable[[Chem.Bond], Any], ...]] = (
        Chem.Bond.GetBondType,
        Chem.Bond.GetStereo,
        Chem.Bond.GetIsConjugated,
    )

    def _encode_columns(self, columns: list[list], mols: Sequence[Chem.Mol]) -> np.ndarray:
        """Category indices of the bonds of ``mols`` from their ``_GETTERS`` columns."""
        bond_type, stereo, conjugated = columns
        if not bond_type:
            return np.zeros((0, 3), dtype=np.int64)
        table = np.stack(
            [
                column_indices(bond_type, _OGB_BOND_TYPE_INDEX, len(_OGB_BOND_TYPES)),
                _stereo_indices(stereo, 0),
                np.array(conjugated, dtype=np.int64),
            ],
            axis=1,
        )
        fill_stereo(
            table[:, 1], mols, Chem.Mol.GetNumBonds, _stereo_bond_labels, self._stereo_index
        )
        return table

    def featurize_bonds_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """``int64 [total bonds, 3]``: the bonds of every molecule, molecule after molecule,
        read column by column (:func:`_bond_columns`); row ``i`` equals ``self(bond i)``."""
        return self._encode_columns(_bond_columns(mols, self._GETTERS), mols)
