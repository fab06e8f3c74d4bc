"""Batches of the reaction-centre model: input molecules as padded atom and pair tables.

A molecule (all reactants and reagents of a reaction as one RDKit molecule, or a candidate
product of it) becomes :class:`MoleculeArrays`: categorical atom features, the bond class of
every atom pair (:data:`chemgraph.chem.reaction_edits.BOND_CLASSES`) and the topological
distance of every pair (``max_distance + 1`` = other fragment). :func:`reaction_centre_batch`
pads a list of them into a :class:`ReactionCentreBatch`, with the edit and product-atom
targets when given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from rdkit import Chem

from chemgraph.batches.base import TensorBatch
from chemgraph.chem.iteration import bond_list
from chemgraph.chem.reaction_edits import BOND_CLASSES, Edit, bond_class

__all__ = [
    "ATOM_FEATURE_SIZES",
    "ELEMENTS",
    "MoleculeArrays",
    "ReactionCentreBatch",
    "molecule_arrays",
    "reaction_centre_batch",
    "unknown_elements",
]

ELEMENTS = (
    "C", "N", "O", "S", "F", "Cl", "Br", "I", "P", "B", "Si", "Se", "Na", "K", "Li", "Mg",
    "Zn", "Cu", "Pd", "Sn", "Fe", "Al", "Ca", "Cs", "H", "Pt", "Ni", "Mn", "Cr", "Ti", "Ag",
    "Rh", "Ru", "Co", "Ba", "Os", "Ir", "Hg", "Bi", "Ce", "Zr", "Sb", "As", "Te", "Ge", "W",
)  # fmt: skip
"""Elements with their own atom-feature value (USPTO's commonest); others share one."""

ATOM_FEATURE_SIZES = (len(ELEMENTS) + 1, 7, 5, 7, 2, 2, 5)
"""Categories per atom-feature column: element, degree (0-6), total hydrogens (0-4), formal
charge (-3..+3), aromatic, in a ring, radical electrons (0-4)."""


@dataclass
class MoleculeArrays:
    """One molecule as arrays (NumPy, small integer types).

    Attributes:
        atoms: ``int8 [N, 7]`` atom features (:data:`ATOM_FEATURE_SIZES`).
        bonds: ``int8 [N, N]`` bond class of every pair (0 = none).
        distance: ``int8 [N, N]`` shortest-path length in bonds, clamped to ``max_distance``;
            ``max_distance + 1`` for atoms of different fragments.
    """

    atoms: np.ndarray
    bonds: np.ndarray
    distance: np.ndarray

    @property
    def num_atoms(self) -> int:
        return len(self.atoms)


_ELEMENT_INDEX = {symbol: index for index, symbol in enumerate(ELEMENTS)}


def unknown_elements(mol: Chem.Mol) -> list[str]:
    """The element symbols of ``mol`` outside :data:`ELEMENTS`, sorted, each once: they share
    one atom-feature value, so a model cannot tell them apart, and a reaction that holds one
    lies outside what a model trained on USPTO reactions has seen much of."""
    return sorted({atom.GetSymbol() for atom in mol.GetAtoms()} - _ELEMENT_INDEX.keys())


def molecule_arrays(
    mol: Chem.Mol, max_distance: int, atoms: np.ndarray | None = None
) -> MoleculeArrays:
    """The :class:`MoleculeArrays` of a sanitised RDKit molecule (atoms in RDKit order), or of
    the atoms ``atoms`` of it (``int64 [M]``, in that order; their distances are those in the
    whole molecule, so take whole fragments).

    Raises:
        ValueError: a bond type outside :data:`BOND_CLASSES` (dative, ...), or ``max_distance``
            above 125.
    """
    if not 0 < max_distance <= 125:
        raise ValueError(f"max_distance must be in 1..125, got {max_distance}")
    n = mol.GetNumAtoms()
    kept = np.arange(n) if atoms is None else np.asarray(atoms, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)
    position[kept] = np.arange(len(kept))
    features = np.zeros((len(kept), len(ATOM_FEATURE_SIZES)), dtype=np.int8)
    for row, atom in enumerate(map(mol.GetAtomWithIdx, kept.tolist())):
        features[row] = (
            _ELEMENT_INDEX.get(atom.GetSymbol(), len(ELEMENTS)),
            min(atom.GetDegree(), 6),
            min(atom.GetTotalNumHs(), 4),
            min(max(atom.GetFormalCharge(), -3), 3) + 3,
            atom.GetIsAromatic(),
            atom.IsInRing(),
            min(atom.GetNumRadicalElectrons(), 4),
        )
    bonds = np.zeros((len(kept), len(kept)), dtype=np.int8)
    for bond in bond_list(mol):
        i, j = position[bond.GetBeginAtomIdx()], position[bond.GetEndAtomIdx()]
        if i >= 0 and j >= 0:
            bonds[i, j] = bonds[j, i] = bond_class(bond)
    distance = Chem.GetDistanceMatrix(mol)[np.ix_(kept, kept)] if n else np.zeros((0, 0))
    distance = np.where(distance > n, max_distance + 1, np.minimum(distance, max_distance))
    return MoleculeArrays(features, bonds, distance.astype(np.int8))


@dataclass
class ReactionCentreBatch(TensorBatch):
    """Padded molecules, with the reaction-centre targets when known.

    Attributes:
        atoms: ``int64 [B, N, 7]`` atom features (0 in padding).
        bonds: ``int64 [B, N, N]`` bond classes.
        distance: ``int64 [B, N, N]`` distance buckets.
        pad_mask: ``bool [B, N]`` real atoms.
        edit_target: ``float32 [B, N, N, C]`` 1 where pair ``(i, j)`` gets bond class ``c``
            (both triangles), else 0; None without targets. ``C = len(BOND_CLASSES)``.
        product_target: ``float32 [B, N]`` 1 for atoms that end in the recorded product; None
            without targets.
    """

    atoms: torch.Tensor
    bonds: torch.Tensor
    distance: torch.Tensor
    pad_mask: torch.Tensor
    edit_target: torch.Tensor | None = None
    product_target: torch.Tensor | None = None


def reaction_centre_batch(
    molecules: Sequence[MoleculeArrays],
    edits: Sequence[Sequence[Edit]] | None = None,
    product_atoms: Sequence[Sequence[int]] | None = None,
) -> ReactionCentreBatch:
    """Pad molecules (and their targets) into one batch.

    Args:
        molecules: one :class:`MoleculeArrays` per item.
        edits: per item, its ``(i, j, c)`` edits (atom indices of the molecule).
        product_atoms: per item, the indices of its atoms that end in the product.
    """
    b = len(molecules)
    n = max((m.num_atoms for m in molecules), default=0)
    atoms = torch.zeros(b, n, len(ATOM_FEATURE_SIZES), dtype=torch.int64)
    bonds = torch.zeros(b, n, n, dtype=torch.int64)
    distance = torch.zeros(b, n, n, dtype=torch.int64)
    pad_mask = torch.zeros(b, n, dtype=torch.bool)
    for k, m in enumerate(molecules):
        size = m.num_atoms
        atoms[k, :size] = torch.from_numpy(m.atoms.astype(np.int64))
        bonds[k, :size, :size] = torch.from_numpy(m.bonds.astype(np.int64))
        distance[k, :size, :size] = torch.from_numpy(m.distance.astype(np.int64))
        pad_mask[k, :size] = True
    edit_target = product_target = None
    if edits is not None:
        edit_target = torch.zeros(b, n, n, len(BOND_CLASSES))
        for k, item in enumerate(edits):
            for i, j, c in item:
                edit_target[k, i, j, c] = edit_target[k, j, i, c] = 1.0
    if product_atoms is not None:
        product_target = torch.zeros(b, n)
        for k, item in enumerate(product_atoms):
            product_target[k, list(item)] = 1.0
    return ReactionCentreBatch(atoms, bonds, distance, pad_mask, edit_target, product_target)
