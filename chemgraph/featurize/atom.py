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

Stereo is encoded by CIP descriptors, never by RDKit's chiral tag: ``CHI_TETRAHEDRAL_CW`` /
``CCW`` say how the neighbours turn *in the order of their atom indices*, so the same molecule
written from another atom (``C[C@H](N)C(=O)O`` and ``N[C@@H](C)C(=O)O``, both L-alanine) gets
the other tag. :func:`atom_stereo_labels` gives every atom ``"none"``, ``"R"``, ``"S"`` or
``"other"`` from RDKit's CIP labeller (:func:`rdkit.Chem.rdCIPLabeler.AssignCIPLabels`, the
Hanson et al. 2018 implementation of the CIP rules), which depends on the molecule only, so
every row is the same whatever the atom order. The labeller runs on a copy (the caller's
molecule is left as it was), once per molecule that has a chiral tag; molecules without stereo,
most of a typical library, cost nothing more.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import torch
from rdkit import Chem
from rdkit.Chem import rdCIPLabeler, rdqueries
from rdkit.Chem.rdchem import HybridizationType

from chemgraph.chem.iteration import atom_list

__all__ = [
    "ATOM_STEREO_LABELS",
    "CANONICAL_SYMBOLS",
    "CIP_MAX_ITERATIONS",
    "AtomFeaturizer",
    "CanonicalAtomFeaturizer",
    "OGBAtomFeaturizer",
    "atom_stereo_labels",
    "cip_descriptors",
    "column_indices",
    "fill_stereo",
    "index_of",
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


def _atom_columns(
    mols: Sequence[Chem.Mol], getters: Sequence[Callable[[Chem.Atom], Any]]
) -> list[list]:
    """Per getter (an unbound ``Chem.Atom`` method), its value for every atom of ``mols``,
    molecule after molecule.

    The fast path of the batched featurizers: each atom's Python object is made once, in a
    short per-molecule list (made and freed per molecule, the cheapest way), and every getter
    is applied by ``map`` (C loops, no Python code per atom). This is faster than calling the
    getters on each atom in a Python loop, which ``benchmarks/featurize.py``'s floor does
    (``benchmarks/README.md``, "The whole command beside the in-memory featurizer").
    """
    columns: list[list] = [[] for _ in getters]
    for mol in mols:
        atoms = list(map(mol.GetAtomWithIdx, range(mol.GetNumAtoms())))
        for column, getter in zip(columns, getters):
            column += map(getter, atoms)
    return columns


def column_indices(values: Sequence[Any], columns: dict[Any, int], unknown: int) -> np.ndarray:
    """``int64 [len(values)]``: ``columns.get(value, unknown)`` of every value."""
    return np.fromiter(
        map(columns.get, values, itertools.repeat(unknown)), dtype=np.int64, count=len(values)
    )


# ``atom.GetChiralTag() != CHI_UNSPECIFIED``, as an atom query: a molecule's tagged atoms in one
# call (most molecules have none) instead of one chiral-tag call per atom.
_HAS_CHIRAL_TAG = rdqueries.HasChiralTagQueryAtom()


def _chiral_column(mols: Sequence[Chem.Mol], counts: np.ndarray, value: int) -> np.ndarray:
    """``int64 [Σ counts]``: ``PENDING_STEREO`` for the atoms with a chiral tag, ``value`` for the
    others (``counts``: atoms per molecule)."""
    column = np.full(int(counts.sum()), value, dtype=np.int64)
    start = 0
    for mol, count in zip(mols, counts.tolist()):
        tagged = mol.GetAtomsMatchingQuery(_HAS_CHIRAL_TAG)
        if tagged:
            column[[start + atom.GetIdx() for atom in tagged]] = PENDING_STEREO
        start += count
    return column


def _atom_counts(mols: Sequence[Chem.Mol]) -> np.ndarray:
    return np.fromiter(map(Chem.Mol.GetNumAtoms, mols), dtype=np.int64, count=len(mols))


def _symbol_columns(
    numbers: list[int],
    mols: Sequence[Chem.Mol],
    counts: np.ndarray,
    by_number: np.ndarray,
    by_symbol: dict[str, int],
    unknown: int,
) -> np.ndarray:
    """``int64``: ``by_symbol.get(atom.GetSymbol(), unknown)`` of every atom of ``mols``, from
    the atoms' atomic numbers (``numbers``) and ``by_number`` (:func:`_symbol_table`).

    ``atom.GetSymbol()`` is the periodic table's symbol of the atomic number, except for a
    dummy atom (``Z == 0``), which may carry a label (``R1`` from a mol file): those atoms are
    asked for their symbol.
    """
    z = np.fromiter(numbers, dtype=np.int64, count=len(numbers))
    out = by_number[np.minimum(z, len(by_number) - 1)]
    asked = np.flatnonzero((z == 0) | (z >= len(by_number) - 1))
    if asked.size:
        ends = np.cumsum(counts)
        for position, owner in zip(asked.tolist(), np.searchsorted(ends, asked, "right").tolist()):
            atom = mols[owner].GetAtomWithIdx(position - int(ends[owner] - counts[owner]))
            out[position] = by_symbol.get(atom.GetSymbol(), unknown)
    return out


def _symbol_table(by_symbol: dict[str, int], unknown: int) -> np.ndarray:
    """``int64 [120]``: ``by_symbol.get(symbol of Z, unknown)`` for Z = 1-118; entries 0 and
    119 (beyond the table) are placeholders, those atoms are asked (:func:`_symbol_columns`)."""
    table = Chem.GetPeriodicTable()
    columns = [by_symbol.get(table.GetElementSymbol(z), unknown) for z in range(1, 119)]
    return np.array([unknown, *columns, unknown], dtype=np.int64)


def index_of(vocabulary: Sequence[Any]) -> dict[Any, int]:
    """``{value: position}``; raises ``ValueError`` on a repeated value."""
    index = {value: i for i, value in enumerate(vocabulary)}
    if len(index) != len(vocabulary):
        raise ValueError(f"vocabulary has repeated values: {tuple(vocabulary)}")
    return index


def _label(value: Any) -> str:
    return value.name if hasattr(value, "name") else str(value)


#: Recursion budget of the CIP labeller per molecule: about one second (RDKit's documentation of
#: ``maxRecursiveIterations``); drug-like molecules need fewer than 10,000 steps.
CIP_MAX_ITERATIONS = 1_250_000

#: The stereo value of an atom (:func:`atom_stereo_labels`), in the order of the default
#: vocabularies of both presets.
ATOM_STEREO_LABELS: tuple[str, ...] = ("none", "R", "S", "other")

# CIP descriptors of a tetrahedral centre: R/S, and r/s for a pseudo-asymmetric one (C1 and C4
# of cis- and trans-4-methylcyclohexanol), which share the R/S values.
_ATOM_CIP = {"R": "R", "r": "R", "S": "S", "s": "S"}


def cip_descriptors(
    mol: Chem.Mol, atoms: Sequence[int] = (), bonds: Sequence[int] = ()
) -> tuple[list[str | None], list[str | None]]:
    """CIP descriptors of some atoms and bonds of ``mol``, which is left unchanged.

    RDKit's CIP labeller, :func:`rdkit.Chem.rdCIPLabeler.AssignCIPLabels` (the CIP rules as
    implemented by Hanson et al. 2018, J. Chem. Inf. Model. 58, 1755), labels every atom with a
    tetrahedral chiral tag (``R``, ``S``; ``r``, ``s`` when pseudo-asymmetric), every double
    bond with stereo (``E``, ``Z``; ``e``, ``z``) and every atropisomeric bond (``M``, ``P``;
    ``m``, ``p``). It runs on a copy without conformers, because it rewrites bond stereo
    (``STEREOE`` becomes ``STEREOTRANS`` of other stereo atoms), and the copy's ``_CIPCode``
    of ``atoms`` and ``bonds`` is cleared first: RDKit's SMILES parser leaves its legacy
    approximations there, which would otherwise stand for the centres the labeller cannot
    rank.

    Args:
        mol: a sanitised molecule.
        atoms: indices of the atoms whose descriptor is wanted.
        bonds: indices of the bonds whose descriptor is wanted.

    Returns:
        ``(atom descriptors, bond descriptors)``, one per index asked, None where the labeller
        gives none (a centre it cannot rank, a non-tetrahedral tag). All are None when RDKit
        gives up: more than :data:`CIP_MAX_ITERATIONS` recursion steps (highly symmetric cages,
        where whether the budget suffices may depend on the atom order) or inconsistent stereo
        input (RDKit raises ``RuntimeError``).
    """
    labelled = Chem.Mol(mol, quickCopy=True)
    items = [*map(labelled.GetAtomWithIdx, atoms), *map(labelled.GetBondWithIdx, bonds)]
    for item in items:
        item.ClearProp("_CIPCode")
    try:
        rdCIPLabeler.AssignCIPLabels(labelled, maxRecursiveIterations=CIP_MAX_ITERATIONS)
    except RuntimeError:
        return [None] * len(atoms), [None] * len(bonds)
    codes = [item.GetProp("_CIPCode") if item.HasProp("_CIPCode") else None for item in items]
    return codes[: len(atoms)], codes[len(atoms) :]


def atom_stereo_labels(mol: Chem.Mol) -> list[str]:
    """The stereo value of every atom, independent of the atom order.

    ``"none"`` for an atom without chiral tag; for a tetrahedral centre its CIP descriptor,
    ``"R"`` or ``"S"`` (pseudo-asymmetric ``r``/``s`` count as ``R``/``S``); ``"other"`` for a
    chiral tag without descriptor (a non-tetrahedral tag such as ``CHI_SQUAREPLANAR``, a tag on
    an atom that is no stereocentre in an unsanitised molecule, or a molecule RDKit cannot
    label, see :func:`cip_descriptors`). Molecules without chiral tags cost one pass over the
    atoms; the others are labelled once, on a copy (``mol`` is not modified).

    Returns:
        ``len == mol.GetNumAtoms()``, entry ``i`` for atom ``i``, values of
        :data:`ATOM_STEREO_LABELS`.
    """
    labels = ["none"] * mol.GetNumAtoms()
    tagged = [i for i, atom in enumerate(atom_list(mol)) if atom.GetChiralTag()]  # UNSPECIFIED: 0
    if tagged:
        for index, label in zip(tagged, _tagged_atom_labels(mol, tagged), strict=True):
            labels[index] = label
    return labels


def _tagged_atom_labels(mol: Chem.Mol, tagged: Sequence[int]) -> list[str]:
    """:func:`atom_stereo_labels` values of the atoms ``tagged`` (all with a chiral tag)."""
    codes, _ = cip_descriptors(mol, atoms=tagged)
    return [_ATOM_CIP.get(code, "other") for code in codes]


def _atom_stereo_label(atom: Chem.Atom) -> str:
    """:func:`atom_stereo_labels` of one atom (labels its whole molecule if it is tagged)."""
    if not atom.GetChiralTag():
        return "none"
    return _tagged_atom_labels(atom.GetOwningMol(), [atom.GetIdx()])[0]


# The stereo index of a tagged atom (or stereo bond) in a feature row until its molecule is
# CIP-labelled: rows are read in one pass, and only molecules with stereo are labelled.
PENDING_STEREO = -1
"""Stands in a stereo column for an atom or bond whose label is computed later
(:func:`fill_stereo`), once per molecule rather than per atom."""


def fill_stereo(
    column: np.ndarray,
    mols: Sequence[Chem.Mol],
    count: Callable[[Chem.Mol], int],
    labels_of: Callable[[Chem.Mol, list[int]], list[str]],
    index_of: Callable[[str], int],
) -> None:
    """Replace the ``PENDING_STEREO`` entries of a stereo column by their indices, in place.

    Args:
        column: ``[total items]`` the stereo column of the rows of the atoms (or bonds) of
            ``mols``, molecule after molecule.
        count: items of a molecule (``Chem.Mol.GetNumAtoms`` or ``GetNumBonds``).
        labels_of: ``labels_of(mol, items)``, the stereo labels of those atoms (bonds) of
            ``mol``; called once per molecule with pending items.
        index_of: the featurizer's index of a label.
    """
    pending = np.flatnonzero(column == PENDING_STEREO)
    if pending.size == 0:
        return
    ends = np.cumsum([count(mol) for mol in mols])
    owners, first = np.unique(np.searchsorted(ends, pending, side="right"), return_index=True)
    for owner, items in zip(owners.tolist(), np.split(pending, first[1:]), strict=True):
        start = int(ends[owner]) - count(mols[owner])
        labels = labels_of(mols[owner], (items - start).tolist())
        column[items] = [index_of(label) for label in labels]


#: Element symbols of the canonical preset, by atomic number: organic/drug-like elements,
#: common counter-ions and salts (Li Na K Cs Mg Ca), and metals common in catalysts, reagents and
#: metallodrugs. Anything else (e.g. Xe, U, the dummy atom ``*``) goes to ``symbol=unknown``.
CANONICAL_SYMBOLS: tuple[str, ...] = (
    "H", "Li", "B", "C", "N", "O", "F", "Na", "Mg", "Al", "Si", "P", "S", "Cl",
    "K", "Ca", "Ti", "V", "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn", "Ge", "As", "Se",
    "Br", "Zr", "Ru", "Rh", "Pd", "Ag", "Sn", "I", "Cs", "Ir", "Pt", "Au", "Hg",
)  # fmt: skip

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
    55-58     ``chirality=none``, ``=R``, ``=S``, ``=other``
              (:func:`atom_stereo_labels`: CIP descriptor of a tetrahedral centre, pseudo-
              asymmetric r/s as R/S; ``other``: a chiral tag without R/S, e.g.
              ``CHI_SQUAREPLANAR`` or an unresolvable centre)
    59        ``chirality=unknown`` (a value outside a custom ``chiralities``)
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

    The chirality block replaces the raw chiral tag (CW/CCW) that Chemprop v2 and OGB encode,
    which depends on the atom order (module docstring): ``C[C@H](N)C(=O)O`` and ``N[C@@H](C)C(=O)O``
    (L-alanine) both give their C2 ``chirality=S``, and D-alanine ``chirality=R``.

    Raises:
        ValueError: at construction, when a vocabulary repeats a value.
    """

    name: str = "canonical"
    symbols: tuple[str, ...] = CANONICAL_SYMBOLS
    degrees: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    formal_charges: tuple[int, ...] = (-2, -1, 0, 1, 2)
    chiralities: tuple[str, ...] = ATOM_STEREO_LABELS
    num_hs: tuple[int, ...] = (0, 1, 2, 3, 4)
    hybridizations: tuple[HybridizationType, ...] = _CANONICAL_HYBRIDIZATIONS

    dtype: ClassVar[torch.dtype] = torch.float32

    def __post_init__(self) -> None:
        for vocabulary in self._blocks:
            index_of(vocabulary)

    @property
    def _blocks(self) -> tuple[tuple[Any, ...], ...]:
        return (
            self.symbols,
            self.degrees,
            self.formal_charges,
            self.chiralities,
            self.num_hs,
            self.hybridizations,
        )

    @cached_property
    def _lookup(self) -> tuple[tuple[dict[Any, int], int], ...]:
        """Per block: ``({value: column}, unknown column)``."""
        out = []
        offset = 0
        for vocabulary in self._blocks:
            index = index_of(vocabulary)
            out.append(({v: offset + i for v, i in index.items()}, offset + len(vocabulary)))
            offset += len(vocabulary) + 1
        return tuple(out)

    def __len__(self) -> int:
        return sum(len(vocabulary) + 1 for vocabulary in self._blocks) + 3

    @property
    def field_names(self) -> tuple[str, ...]:
        """``("symbol=H", …, "symbol=unknown", "degree=0", …, "atomic_mass*0.01")``."""
        prefixes = ("symbol", "degree", "formal_charge", "chirality", "num_hs", "hybridization")
        names: list[str] = []
        for prefix, vocabulary in zip(prefixes, self._blocks, strict=True):
            names += [f"{prefix}={_label(v)}" for v in vocabulary]
            names.append(f"{prefix}=unknown")
        return (*names, "is_aromatic", "is_in_ring", "atomic_mass*0.01")

    def _chirality_column(self, label: str) -> int:
        """The hot column of an :func:`atom_stereo_labels` value."""
        columns, unknown = self._lookup[3]
        return columns.get(label, unknown)

    def _row(self, atom: Chem.Atom) -> tuple[int, int, int, int, int, int, bool, bool, float]:
        """Six hot column indices (chirality ``PENDING_STEREO`` for a tagged atom), then aromatic,
        in ring, mass (one RDKit call per field)."""
        symbols, degrees, charges, chiral, hs, hybrid = self._lookup
        return (
            symbols[0].get(atom.GetSymbol(), symbols[1]),
            degrees[0].get(atom.GetTotalDegree(), degrees[1]),
            charges[0].get(atom.GetFormalCharge(), charges[1]),
            PENDING_STEREO if atom.GetChiralTag() else chiral[0].get("none", chiral[1]),
            hs[0].get(atom.GetTotalNumHs(), hs[1]),
            hybrid[0].get(atom.GetHybridization(), hybrid[1]),
            atom.GetIsAromatic(),
            atom.IsInRing(),
            atom.GetMass(),
        )

    def _encode(self, rows: list[tuple], mols: Sequence[Chem.Mol]) -> np.ndarray:
        """One-hot rows of the atoms of ``mols`` from their :meth:`_row` tuples."""
        out = np.zeros((len(rows), len(self)), dtype=np.float32)
        if rows:
            table = np.array(rows, dtype=np.float64)
            fill_stereo(
                table[:, 3], mols, Chem.Mol.GetNumAtoms, _tagged_atom_labels, self._chirality_column
            )
            np.put_along_axis(out, table[:, :6].astype(np.int64), 1.0, axis=1)
            out[:, -3:] = table[:, 6:] * (1.0, 1.0, 0.01)
        return out

    def __call__(self, atom: Chem.Atom) -> np.ndarray:
        """Features of one atom: ``float32 [76]`` (``[len(self)]``). A chiral atom's molecule
        is CIP-labelled at each call: featurize whole molecules with :meth:`featurize_atoms`."""
        row = list(self._row(atom))
        row[3] = self._chirality_column(_atom_stereo_label(atom))
        return self._encode([row], [])[0]

    def featurize_atoms(self, mol: Chem.Mol) -> np.ndarray:
        """``float32 [num_atoms, 76]``; row ``i`` is atom ``i`` of ``mol``."""
        return self.featurize_atoms_of([mol])

    # what featurize_atoms_of reads of every atom (symbol from the atomic number, chirality
    # from an atom query: see _symbol_columns and _chiral_column)
    _GETTERS: ClassVar[tuple[Callable[[Chem.Atom], Any], ...]] = (
        Chem.Atom.GetAtomicNum,
        Chem.Atom.GetTotalDegree,
        Chem.Atom.GetFormalCharge,
        Chem.Atom.GetTotalNumHs,
        Chem.Atom.GetHybridization,
        Chem.Atom.GetIsAromatic,
        Chem.Atom.IsInRing,
        Chem.Atom.GetMass,
    )

    @cached_property
    def _symbol_by_number(self) -> np.ndarray:
        return _symbol_table(*self._lookup[0])

    def featurize_atoms_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """``float32 [total atoms, 76]``: the atoms of every molecule, molecule after molecule.

        One pass over the atoms, reading them column by column (:func:`_atom_columns`), then
        one vectorised one-hot encoding: the fast path for featurizing many molecules at once.
        Row ``i`` equals ``self(atom i)``.
        """
        counts = _atom_counts(mols)
        out = np.zeros((int(counts.sum()), len(self)), dtype=np.float32)
        if not len(out):
            return out
        numbers, degree, charge, hs, hybrid, aromatic, ring, mass = _atom_columns(
            mols, self._GETTERS
        )
        symbols, degrees, charges, chiral, num_hs, hybrids = self._lookup
        hot = np.stack(
            [
                _symbol_columns(numbers, mols, counts, self._symbol_by_number, *symbols),
                column_indices(degree, *degrees),
                column_indices(charge, *charges),
                _chiral_column(mols, counts, chiral[0].get("none", chiral[1])),
                column_indices(hs, *num_hs),
                column_indices(hybrid, *hybrids),
            ],
            axis=1,
        )
        fill_stereo(
            hot[:, 3], mols, Chem.Mol.GetNumAtoms, _tagged_atom_labels, self._chirality_column
        )
        np.put_along_axis(out, hot, 1.0, axis=1)
        out[:, -3] = np.array(aromatic, dtype=np.float64)
        out[:, -2] = np.array(ring, dtype=np.float64)
        out[:, -1] = np.array(mass, dtype=np.float64) * 0.01
        return out


_OGB_HYBRIDIZATIONS: tuple[HybridizationType, ...] = (
    HybridizationType.SP,
    HybridizationType.SP2,
    HybridizationType.SP3,
    HybridizationType.SP3D,
    HybridizationType.SP3D2,
)


_OGB_CHIRALITY = index_of(ATOM_STEREO_LABELS)
_OGB_HYBRIDIZATION_INDEX = index_of(_OGB_HYBRIDIZATIONS)


def _range_index(value: int, low: int, high: int) -> int:
    """``value - low`` for ``low <= value <= high``, else the misc index ``high - low + 1``."""
    return value - low if low <= value <= high else high - low + 1


def _range_indices(values: list[int], low: int, high: int) -> np.ndarray:
    """:func:`_range_index` of every value: ``int64 [len(values)]``."""
    array = np.fromiter(values, dtype=np.int64, count=len(values))
    return np.where((array >= low) & (array <= high), array - low, high - low + 1)


@dataclass(frozen=True)
class OGBAtomFeaturizer:
    """OGB categorical atom features (preset ``"ogb"``): int64, 9 columns.

    ``ogb.utils.features.atom_to_feature_vector`` (OGB, Hu et al. 2020) except for the
    chirality column: column ``j`` holds the position of the atom's value in OGB's list ``j``,
    and a value missing from a list takes the list's last position (``misc``).
    ``vocabulary_sizes`` gives the embedding table size of each column, OGB's
    ``get_atom_feature_dims()``.

    ======  =========================  ===================================================  ====
    column  field (``field_names``)    categories, index = position                         size
    ======  =========================  ===================================================  ====
    0       ``atomic_num``             Z = 1 … 118 at index Z - 1; misc 118 (e.g. ``*``)    119
    1       ``chirality``              none 0, R 1, S 2, other 3; misc 4 (unused)           5
                                       (:func:`atom_stereo_labels`)
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

    Where this departs from OGB: OGB's chirality list is RDKit's chiral tag (CHI_UNSPECIFIED
    0, CHI_TETRAHEDRAL_CW 1, CHI_TETRAHEDRAL_CCW 2, CHI_OTHER 3, misc 4), which depends on the
    atom order (``C[C@H](N)C(=O)O`` and ``N[C@@H](C)C(=O)O``, both L-alanine, get 2 and 1), so
    models fed OGB's features give one molecule several predictions. Here the column keeps
    OGB's size and no-stereo index 0 but holds the CIP descriptor: R 1, S 2, and 3 for any
    other chiral tag (including the square-planar, allene and other tags OGB raises
    ``ValueError`` for). Every atom has one of these four values: misc (4) only keeps OGB's
    table size.
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
            (*ATOM_STEREO_LABELS, "misc"),
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
        """Category indices, chirality ``PENDING_STEREO`` for a tagged atom."""
        hybrid = atom.GetHybridization()
        return (
            _range_index(atom.GetAtomicNum(), 1, 118),
            PENDING_STEREO if atom.GetChiralTag() else 0,
            _range_index(atom.GetTotalDegree(), 0, 10),
            _range_index(atom.GetFormalCharge(), -5, 5),
            _range_index(atom.GetTotalNumHs(), 0, 8),
            _range_index(atom.GetNumRadicalElectrons(), 0, 4),
            _OGB_HYBRIDIZATIONS.index(hybrid) if hybrid in _OGB_HYBRIDIZATIONS else 5,
            int(atom.GetIsAromatic()),
            int(atom.IsInRing()),
        )

    def __call__(self, atom: Chem.Atom) -> np.ndarray:
        """Category indices of one atom: ``int64 [9]``. A chiral atom's molecule is
        CIP-labelled at each call: featurize whole molecules with :meth:`featurize_atoms`."""
        values = list(self._values(atom))
        values[1] = _OGB_CHIRALITY[_atom_stereo_label(atom)]
        return np.array(values, dtype=np.int64)

    def featurize_atoms(self, mol: Chem.Mol) -> np.ndarray:
        """``int64 [num_atoms, 9]``; row ``i`` is atom ``i`` of ``mol``."""
        return self.featurize_atoms_of([mol])

    # what featurize_atoms_of reads of every atom (chirality: _chiral_column)
    _GETTERS: ClassVar[tuple[Callable[[Chem.Atom], Any], ...]] = (
        Chem.Atom.GetAtomicNum,
        Chem.Atom.GetTotalDegree,
        Chem.Atom.GetFormalCharge,
        Chem.Atom.GetTotalNumHs,
        Chem.Atom.GetNumRadicalElectrons,
        Chem.Atom.GetHybridization,
        Chem.Atom.GetIsAromatic,
        Chem.Atom.IsInRing,
    )

    def featurize_atoms_of(self, mols: Sequence[Chem.Mol]) -> np.ndarray:
        """``int64 [total atoms, 9]``: the atoms of every molecule, molecule after molecule,
        read column by column (:func:`_atom_columns`); row ``i`` equals ``self(atom i)``."""
        counts = _atom_counts(mols)
        if not counts.sum():
            return np.zeros((0, 9), dtype=np.int64)
        numbers, degree, charge, hs, radicals, hybrid, aromatic, ring = _atom_columns(
            mols, self._GETTERS
        )
        table = np.stack(
            [
                _range_indices(numbers, 1, 118),
                _chiral_column(mols, counts, 0),
                _range_indices(degree, 0, 10),
                _range_indices(charge, -5, 5),
                _range_indices(hs, 0, 8),
                _range_indices(radicals, 0, 4),
                column_indices(hybrid, _OGB_HYBRIDIZATION_INDEX, len(_OGB_HYBRIDIZATIONS)),
                np.array(aromatic, dtype=np.int64),
                np.array(ring, dtype=np.int64),
            ],
            axis=1,
        )
        fill_stereo(
            table[:, 1], mols, Chem.Mol.GetNumAtoms, _tagged_atom_labels, _OGB_CHIRALITY.__getitem__
        )
        return table
