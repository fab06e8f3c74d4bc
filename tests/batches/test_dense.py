import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.batches import DenseGraphBatch, dense_graph_batch, num_edge_types
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import add_shortest_paths, mol_to_graph

OGB = get_preset("ogb")


def cached(smiles, preset=OGB, hops=5):
    return add_shortest_paths(mol_to_graph(mol_from_smiles(smiles), preset), hops)


def test_salt_single_atom_and_padding_in_one_batch():
    batch = dense_graph_batch(
        dgl.batch([cached("CC(=O)[O-].[Na+]"), cached("[He]"), cached("CCO")]), max_distance=20
    )
    assert isinstance(batch, DenseGraphBatch)
    unreachable = 21
    # acetate + sodium: 5 atoms, the ion in its own fragment
    assert batch.spd[0].tolist() == [
        [0, 1, 2, 2, unreachable],
        [1, 0, 1, 1, unreachable],
        [2, 1, 0, 2, unreachable],
        [2, 1, 2, 0, unreachable],
        [unreachable] * 4 + [0],
    ]
    # a single atom: distance 0 to itself, all padding pairs unreachable
    assert batch.spd[1, 0, 0] == 0 and (batch.spd[1].flatten()[1:] == unreachable).all()
    assert batch.pad_mask.tolist() == [[True] * 5, [True] + [False] * 4, [True] * 3 + [False] * 2]
    assert batch.num_nodes.tolist() == [5, 1, 3]
    # padding: zero features, no bond, no path, zero degree
    assert (batch.x[2, 3:] == 0).all() and (batch.edge_type[2, 3:] == 0).all()
    assert (batch.edge_type[2, :, 3:] == 0).all() and (batch.path_edges[2, 3:] == -1).all()
    assert (batch.in_degree[1] == 0).all()


def test_distances_are_clipped_but_unreachable_keeps_its_bucket():
    batch = dense_graph_batch(dgl.batch([cached("CCCCCCC.[Na+]")]), max_distance=3)
    assert batch.spd[0, 0, :7].tolist() == [0, 1, 2, 3, 3, 3, 3]
    assert batch.spd[0, 0, 7] == 4  # max_distance + 1


def test_bond_types_degrees_and_features():
    mol = mol_from_smiles("C=Cc1ccccc1C#N")
    batch = dense_graph_batch(dgl.batch([cached("C=Cc1ccccc1C#N")]))
    # ogb bond type + 1: SINGLE 1, DOUBLE 2, TRIPLE 3, AROMATIC 4; 0 = no bond
    expected = torch.zeros(mol.GetNumAtoms(), mol.GetNumAtoms(), dtype=torch.int64)
    code = {Chem.BondType.SINGLE: 1, Chem.BondType.DOUBLE: 2, Chem.BondType.TRIPLE: 3,
            Chem.BondType.AROMATIC: 4}  # fmt: skip
    for bond in mol.GetBonds():
        i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        expected[i, j] = expected[j, i] = code[bond.GetBondType()]
    torch.testing.assert_close(batch.edge_type[0], expected)
    degree = torch.tensor([atom.GetDegree() for atom in mol.GetAtoms()])
    torch.testing.assert_close(batch.in_degree[0], degree)
    torch.testing.assert_close(batch.out_degree[0], degree)
    assert batch.x.dtype == torch.int64 and batch.edge_features.shape[-1] == 3
    assert (batch.edge_features[0][expected == 0] == 0).all()
    # the canonical one-hot preset gives the same bond types
    canonical = get_preset("canonical")
    float_batch = dense_graph_batch(dgl.batch([cached("C=Cc1ccccc1C#N", canonical)]))
    torch.testing.assert_close(float_batch.edge_type, batch.edge_type)
    assert num_edge_types(OGB) == 6 and num_edge_types(canonical) == 7


def test_path_edges_point_at_the_bonds_along_a_shortest_path():
    graphs = [cached("CCO"), cached("CC(C)CC(=O)O")]
    batch = dense_graph_batch(dgl.batch(graphs), max_path_edges=3)
    b, n = batch.pad_mask.shape
    for g in range(b):
        size = int(batch.num_nodes[g])
        for i in range(size):
            for j in range(size):
                at, hops = i, min(int(batch.spd[g, i, j]), 3)
                path = batch.path_edges[g, i, j].tolist()
                assert all(p == -1 for p in path[hops:])
                for pair in path[:hops]:
                    graph, u, v = pair // (n * n), pair % (n * n) // n, pair % n
                    assert graph == g and u == at and batch.edge_type[g, u, v] > 0
                    at = v
                    assert batch.spd[g, at, j] < batch.spd[g, u, j]
                if batch.spd[g, i, j] <= 3:
                    assert at == j


def test_refuses_graphs_without_the_cache_or_with_too_short_paths():
    with pytest.raises(ValueError, match="add_shortest_paths"):
        dense_graph_batch(dgl.batch([mol_to_graph(mol_from_smiles("CCO"), OGB)]))
    with pytest.raises(ValueError, match="max_path_edges=5"):
        dense_graph_batch(dgl.batch([cached("CCO", hops=2)]), max_path_edges=5)


def test_moves_and_pins_like_the_other_batches():
    batch = dense_graph_batch(dgl.batch([cached("CCO")]))
    moved = batch.to("cpu")
    assert isinstance(moved, DenseGraphBatch) and moved.batch_size == 1
