import pytest
import torch
from rdkit import Chem
from rdkit.Chem import AllChem

from chemgraph.chem import mol_from_smiles
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES, POSITIONS
from chemgraph.graphs import mol_to_graph


def test_both_directions_of_every_bond(canonical):
    graph = mol_to_graph(mol_from_smiles("CCO"), canonical)
    src, dst = graph.edges()
    assert list(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert graph.ndata[NODE_FEATURES].shape == (3, len(canonical.atom))
    assert graph.edata[EDGE_FEATURES].shape == (4, len(canonical.bond))
    assert torch.equal(graph.edata[EDGE_FEATURES][0], graph.edata[EDGE_FEATURES][1])
    assert graph.ndata[NODE_FEATURES].dtype == torch.float32


def test_zero_bond_molecule(canonical):
    graph = mol_to_graph(mol_from_smiles("[Na+]"), canonical)
    assert graph.num_nodes() == 1 and graph.num_edges() == 0
    assert graph.edata[EDGE_FEATURES].shape == (0, len(canonical.bond))


def test_ogb_preset_gives_integer_features():
    from chemgraph.featurize import get_preset

    graph = mol_to_graph(mol_from_smiles("C=O"), get_preset("ogb"))
    assert graph.ndata[NODE_FEATURES].dtype == torch.int64
    assert graph.ndata[NODE_FEATURES][:, 0].tolist() == [5, 7]  # atomic number - 1
    assert graph.edata[EDGE_FEATURES][:, 0].tolist() == [1, 1]  # DOUBLE


def test_positions_in_angstrom(canonical):
    mol = Chem.AddHs(Chem.MolFromSmiles("O"))
    AllChem.EmbedMolecule(mol, randomSeed=0)
    graph = mol_to_graph(mol, canonical, with_positions=True)
    expected = torch.tensor(mol.GetConformer().GetPositions(), dtype=torch.float32)
    assert torch.equal(graph.ndata[POSITIONS], expected)
    bond_length = (graph.ndata[POSITIONS][0] - graph.ndata[POSITIONS][1]).norm()
    assert 0.9 < bond_length < 1.05  # O-H ≈ 0.96 Å


def test_positions_required_but_absent(canonical):
    with pytest.raises(ValueError, match="no conformer"):
        mol_to_graph(mol_from_smiles("CCO"), canonical, with_positions=True)


def test_many_molecules_at_once_equal_one_by_one(canonical):
    from chemgraph._dgl import dgl
    from chemgraph.featurize import get_preset
    from chemgraph.graphs import mols_to_graphs

    smiles = ["CCO", "[Na+]", "CC(=O)[O-].[Na+]", "c1ccccc1", "[NH3]->[Cu+2]", "C[C@H](N)O"]
    mols = [mol_from_smiles(s) for s in smiles]
    for preset in (canonical, get_preset("ogb")):
        batched = mols_to_graphs(mols, preset)
        assert batched.batch_size == len(mols)
        for mol, graph in zip(mols, dgl.unbatch(batched)):
            alone = mol_to_graph(mol, preset)
            assert [t.tolist() for t in graph.edges()] == [t.tolist() for t in alone.edges()]
            assert torch.equal(graph.ndata[NODE_FEATURES], alone.ndata[NODE_FEATURES])
            assert torch.equal(graph.edata[EDGE_FEATURES], alone.edata[EDGE_FEATURES])
