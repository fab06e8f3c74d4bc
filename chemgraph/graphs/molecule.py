"""Molecules -> :class:`dgl.DGLGraph` (or its arrays, :class:`~chemgraph.graphs.GraphArrays`).

A molecule becomes a graph with both directions of every bond as edges: bond ``k`` of
``mol.GetBonds()`` between atoms ``u`` and ``v`` gives edge ``2k`` (u -> v) and edge
``2k + 1`` (v -> u), both carrying the bond's features.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from rdkit import Chem

from chemgraph.chem import positions
from chemgraph.featurize import FeaturizerPreset
from chemgraph.featurize.bond import bond_ends_and_features
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES, POSITIONS
from chemgraph.graphs.arrays import GraphArrays

if TYPE_CHECKING:
    import dgl

__all__ = ["mol_to_graph", "mols_to_graph_arrays", "mols_to_graphs"]


def mols_to_graphs(
    mols: Sequence[Chem.Mol], preset: FeaturizerPreset, *, with_positions: bool = False
) -> dgl.DGLGraph:
    """Build the graphs of many molecules at once, as one batched graph.

    The fast path for libraries: one pass over atoms and bonds, one vectorised encoding, one
    graph construction. ``dgl.unbatch`` gives the per-molecule graphs (each equal to
    :func:`mol_to_graph` of that molecule).

    Args:
        mols: RDKit molecules (hydrogens as in each molecule).
        preset: the atom and bond featurizers.
        with_positions: also store each molecule's first-conformer coordinates.

    Returns:
        A batched graph (``batch_size == len(mols)``) with ``N = Σ atoms`` nodes and
        ``E = 2 Σ bonds`` edges: ``ndata["x"]``: ``preset.atom.dtype [N, len(preset.atom)]``;
        ``edata["e"]``: ``preset.bond.dtype [E, len(preset.bond)]``; ``ndata["pos"]``:
        ``float32 [N, 3]`` in Å when ``with_positions``.

    Raises:
        ValueError: ``with_positions`` is set but a molecule has no conformer.
    """
    return mols_to_graph_arrays(mols, preset, with_positions=with_positions).to_graph()


def mols_to_graph_arrays(
    mols: Sequence[Chem.Mol], preset: FeaturizerPreset, *, with_positions: bool = False
) -> GraphArrays:
    """The arrays of :func:`mols_to_graphs` ``(mols, preset, with_positions=...)``, without
    building the graph (nor importing DGL): what :func:`chemgraph.graphs.shards.save_shard_arrays`
    writes. Same arguments and errors; ids are ``int64``."""
    atom_counts = np.fromiter(map(Chem.Mol.GetNumAtoms, mols), dtype=np.int64, count=len(mols))
    bond_counts = np.fromiter(map(Chem.Mol.GetNumBonds, mols), dtype=np.int64, count=len(mols))
    pairs, bond_features = bond_ends_and_features(preset.bond, mols)  # one pass over the bonds
    pairs += np.repeat(np.cumsum(atom_counts) - atom_counts, bond_counts)[:, None]
    src = pairs.reshape(-1)  # u0, v0, u1, v1, ...
    dst = pairs[:, ::-1].reshape(-1)  # v0, u0, v1, u1, ...
    atom_features = preset.atom.featurize_atoms_of(mols)
    ndata = {NODE_FEATURES: torch.as_tensor(atom_features, dtype=preset.atom.dtype)}
    if with_positions:
        ndata[POSITIONS] = torch.from_numpy(
            np.concatenate([_positions(m) for m in mols])
            if len(mols)
            else np.zeros((0, 3), dtype=np.float32)  # no molecule (a shard without survivors)
        )
    bond_features = np.repeat(bond_features, 2, axis=0)
    edata = {
        EDGE_FEATURES: torch.as_tensor(bond_features, dtype=preset.bond.dtype).reshape(
            -1, len(preset.bond)
        )
    }
    return GraphArrays(
        num_nodes=torch.from_numpy(atom_counts),
        num_edges=torch.from_numpy(2 * bond_counts),
        src=torch.from_numpy(src),
        dst=torch.from_numpy(np.ascontiguousarray(dst)),
        ndata=ndata,
        edata=edata,
    )


def mol_to_graph(
    mol: Chem.Mol, preset: FeaturizerPreset, *, with_positions: bool = False
) -> dgl.DGLGraph:
    """Build the DGL graph of one molecule (see :func:`mols_to_graphs` for many).

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
    return mols_to_graphs([mol], preset, with_positions=with_positions)


def _positions(mol: Chem.Mol) -> np.ndarray:
    coordinates = positions(mol)
    if coordinates is None:
        raise ValueError(
            f"molecule {Chem.MolToSmiles(mol)} has no conformer; generate one "
            "(chemgraph.chem.embed_conformers) or build the graph without positions"
        )
    return coordinates
