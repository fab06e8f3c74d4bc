"""Molecule -> :class:`dgl.DGLGraph`.

A molecule becomes a graph with both directions of every bond as edges: bond ``k`` of
``mol.GetBonds()`` between atoms ``u`` and ``v`` gives edge ``2k`` (u -> v) and edge
``2k + 1`` (v -> u), both carrying the bond's features.
"""

from __future__ import annotations

import numpy as np
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.chem import positions
from chemgraph.featurize import FeaturizerPreset

__all__ = ["mol_to_graph"]


def mol_to_graph(
    mol: Chem.Mol, preset: FeaturizerPreset, *, with_positions: bool = False
) -> dgl.DGLGraph:
    """Build the DGL graph of one molecule.

    Args:
        mol: an RDKit molecule (hydrogens as in ``mol``; implicit hydrogens are atom features).
        preset: the atom and bond featurizers.
        with_positions: also store the first conformer's coordinates.

    Returns:
        A graph with ``N = mol.GetNumAtoms()`` nodes and ``E = 2 * mol.GetNumBonds()`` edges:
        ``ndata["x"]``: ``preset.atom.dtype [N, len(preset.atom)]`` atom features;
        ``edata["e"]``: ``preset.bond.dtype [E, len(preset.bond)]`` bond features
        (shape ``(0, len(preset.bond))`` for a molecule without bonds);
        ``ndata["pos"]``: ``float32 [N, 3]`` coordinates in Å when ``with_positions``.

    Raises:
        ValueError: ``with_positions`` is set but the molecule has no conformer.
    """
    num_atoms = mol.GetNumAtoms()
    bonds = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mol.GetBonds()]
    pairs = np.asarray(bonds, dtype=np.int64).reshape(-1, 2)
    src = np.stack([pairs[:, 0], pairs[:, 1]], axis=1).reshape(-1)
    dst = np.stack([pairs[:, 1], pairs[:, 0]], axis=1).reshape(-1)
    graph = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=num_atoms)
    atom_features = preset.atom.featurize_atoms(mol)
    bond_features = np.repeat(preset.bond.featurize_bonds(mol), 2, axis=0)
    graph.ndata["x"] = torch.as_tensor(atom_features, dtype=preset.atom.dtype)
    graph.edata["e"] = torch.as_tensor(bond_features, dtype=preset.bond.dtype).reshape(
        -1, len(preset.bond)
    )
    if with_positions:
        coordinates = positions(mol)
        if coordinates is None:
            raise ValueError(
                f"molecule {Chem.MolToSmiles(mol)} has no conformer; generate one "
                "(RDKit AllChem.EmbedMolecule) or call mol_to_graph(..., with_positions=False)"
            )
        graph.ndata["pos"] = torch.as_tensor(coordinates, dtype=torch.float32)
    return graph
