import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.batches import dense_graph_batch
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import add_shortest_paths, mol_to_graph
from chemgraph.models import Graphormer, GraphormerConfig
from chemgraph.models.graphormer import degree_bucket

OGB = get_preset("ogb")


def make_model(**options):
    torch.manual_seed(0)
    config = GraphormerConfig(
        atom_vocabulary_sizes=list(OGB.atom.vocabulary_sizes),
        bond_vocabulary_sizes=list(OGB.bond.vocabulary_sizes),
        num_outputs=2,
        hidden_dim=32,
        num_layers=2,
        num_heads=4,
        max_distance=6,
        multi_hop_max_distance=3,
        **options,
    )
    model = Graphormer(config).eval()
    with torch.no_grad():  # non-zero structural biases, so that the tests see them
        model.virtual_distance.normal_()
        model.graph_token.normal_()
    return model


def batch_of(model, mols):
    graphs = [
        add_shortest_paths(mol_to_graph(mol, OGB), model.config.multi_hop_max_distance)
        for mol in mols
    ]
    return dense_graph_batch(
        dgl.batch(graphs), model.config.max_distance, model.config.multi_hop_max_distance
    )


def predict(model, smiles):
    return model(batch_of(model, [mol_from_smiles(s) for s in smiles]))


def test_degree_bucketing_clips_at_the_maximum():
    degrees = torch.tensor([0, 1, 3, 4, 7, 40])
    assert degree_bucket(degrees, 4).tolist() == [0, 1, 3, 4, 4, 4]


@pytest.mark.parametrize("smiles", ["CC(=O)Nc1ccc(O)cc1", "C1CCC2(C1)CCC2", "CC(=O)[O-].[Na+]"])
def test_permutation_invariance(smiles):
    model = make_model()
    mol = mol_from_smiles(smiles)
    order = np.random.default_rng(1).permutation(mol.GetNumAtoms()).tolist()
    with torch.no_grad():
        original = model(batch_of(model, [mol]))
        permuted = model(batch_of(model, [Chem.RenumberAtoms(mol, order)]))
    torch.testing.assert_close(original, permuted, atol=1e-5, rtol=1e-5)


def test_alone_equals_inside_padded_batch():
    model = make_model()
    with torch.no_grad():
        alone = predict(model, ["CCO"])
        in_batch = predict(model, ["CC(C)Cc1ccc(cc1)C(C)C(=O)O", "CCO", "c1ccc2ccccc2c1"])
    torch.testing.assert_close(alone[0], in_batch[1], atol=1e-5, rtol=1e-5)


def test_padded_positions_receive_no_bias_and_no_attention():
    model = make_model()
    batch = batch_of(model, [mol_from_smiles(s) for s in ["CCO", "CCCCCC"]])
    mask, bias = model.attention_bias(batch)
    # graph 0 has 3 atoms + [VNode] = 4 real tokens of 7
    assert mask[0, :4, :4].all() and not mask[0, 4:].any() and not mask[0, :, 4:].any()
    assert (bias[0, :, 4:] == 0).all() and (bias[0, :, :, 4:] == 0).all()
    # the real biases: spatial + edge encodings between atoms, the [VNode] distance to it
    torch.testing.assert_close(bias[0, :, 0, 1], model.virtual_distance)
    spatial = model.spatial_encoder.weight  # [buckets, heads]
    torch.testing.assert_close(
        bias[0, :, 1, 3], spatial[2] + model.edge_encoding(batch)[0, :, 0, 2]
    )
    # garbage in padded atom features never reaches the output
    with torch.no_grad():
        clean = model(batch)
        batch.x[0, 3:] = 1
        batch.spd[0, 3:] = 0
        torch.testing.assert_close(model(batch), clean)


def test_unreachable_pairs_use_their_own_bucket():
    model = make_model()
    batch = batch_of(model, [mol_from_smiles("C.[Na+]")])
    _, bias = model.attention_bias(batch)
    spatial = model.spatial_encoder.weight
    torch.testing.assert_close(bias[0, :, 1, 2], spatial[model.config.max_distance + 1])
    assert not torch.allclose(bias[0, :, 1, 2], spatial[0])


def test_edge_encoding_averages_the_bonds_along_the_path():
    model = make_model()
    with torch.no_grad():
        model.hop_weights.normal_()
    batch = batch_of(model, [mol_from_smiles("C=CC#N")])
    encoding = model.edge_encoding(batch)[0]  # [heads, N, N]
    table = model.edge_encoder(batch.edge_features[0])  # [N, N, heads]
    w = model.hop_weights
    # 0 -> 3 is three bonds: double (0,1), single (1,2), triple (2,3)
    expected = (table[0, 1] @ w[0] + table[1, 2] @ w[1] + table[2, 3] @ w[2]) / 3
    torch.testing.assert_close(encoding[:, 0, 3], expected)
    torch.testing.assert_close(encoding[:, 1, 0], table[1, 0] @ w[0])
    assert (encoding[:, 2, 2] == 0).all()  # no path to itself


def test_tiny_and_bond_less_molecules_are_finite():
    model = make_model()
    model.train()
    out = predict(model, ["[Na+]", "[He]", "C", "[H][H]"])
    assert torch.isfinite(out).all()
    out.sum().backward()
    for parameter in model.parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all()
    model.eval()
    with torch.no_grad():
        out = predict(model, ["[Na+]", "[He]"])
    assert not torch.allclose(out[0], out[1])


def test_batch_built_for_another_configuration_is_refused():
    model = make_model()
    graphs = [add_shortest_paths(mol_to_graph(mol_from_smiles("CCO"), OGB), 5)]
    batch = dense_graph_batch(dgl.batch(graphs), 6, 5)
    with pytest.raises(ValueError, match="multi_hop_max_distance=3"):
        model(batch)
