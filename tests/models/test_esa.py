import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.batches import edge_set_batch, node_set_batch
from chemgraph.chem import mol_from_smiles
from chemgraph.graphs import mol_to_graph
from chemgraph.models import ESA, ESAConfig

BUILDERS = {"edge": edge_set_batch, "node": node_set_batch}


def make_model(canonical, set_type, **options):
    torch.manual_seed(0)
    width = len(canonical.atom)
    in_features = 2 * width + len(canonical.bond) if set_type == "edge" else width
    config = ESAConfig(
        in_features=in_features,
        num_outputs=2,
        set_type=set_type,
        hidden_dim=32,
        num_heads=4,
        layer_pattern="SMMSPS",
        num_seeds=4,
        **options,
    )
    return ESA(config).eval()


def predict(model, graphs):
    return model(BUILDERS[model.config.set_type](dgl.batch(graphs)))


@pytest.mark.parametrize("set_type", ["edge", "node"])
@pytest.mark.parametrize("smiles", ["CC(=O)Nc1ccc(O)cc1", "C1CCC2(C1)CCC2", "CC(=O)[O-].[Na+]"])
def test_permutation_invariance(canonical, set_type, smiles):
    model = make_model(canonical, set_type)
    mol = mol_from_smiles(smiles)
    order = np.random.default_rng(1).permutation(mol.GetNumAtoms()).tolist()
    renumbered = Chem.RenumberAtoms(mol, order)
    with torch.no_grad():
        original = predict(model, [mol_to_graph(mol, canonical)])
        permuted = predict(model, [mol_to_graph(renumbered, canonical)])
    torch.testing.assert_close(original, permuted, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("set_type", ["edge", "node"])
def test_alone_equals_inside_padded_batch(canonical, graph_of, set_type):
    model = make_model(canonical, set_type)
    small = graph_of("CCO")
    larger = [graph_of("CC(C)Cc1ccc(cc1)C(C)C(=O)O"), graph_of("c1ccc2ccccc2c1")]
    with torch.no_grad():
        alone = predict(model, [small])
        in_batch = predict(model, [larger[0], small, larger[1]])
    torch.testing.assert_close(alone[0], in_batch[1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("set_type", ["edge", "node"])
@pytest.mark.parametrize("attend_to_self", [True, False])
def test_tiny_and_bond_less_molecules_are_finite(canonical, graph_of, set_type, attend_to_self):
    model = make_model(canonical, set_type, attend_to_self=attend_to_self).train()
    graphs = [graph_of(s) for s in ["[Na+]", "[He]", "C", "[H][H]"]]
    out = predict(model, graphs)
    assert torch.isfinite(out).all()
    out.sum().backward()
    for parameter in model.parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all()
    # different ions get different embeddings (the atom features reach the readout)
    model.eval()
    with torch.no_grad():
        out = predict(model, graphs)
    assert not torch.allclose(out[0], out[1])


@pytest.mark.parametrize("set_type", ["edge", "node"])
def test_nan_in_padding_changes_nothing(canonical, graph_of, set_type):
    model = make_model(canonical, set_type)
    batch = BUILDERS[set_type](dgl.batch([graph_of("CO"), graph_of("CCCCCCO")]))
    with torch.no_grad():
        clean = model(batch)
        assert not batch.pad_mask[0].all()
        batch.x[0, ~batch.pad_mask[0]] = float("nan")
        batch.x[0, -1, 0] = float("inf")
        poisoned = model(batch)
    assert torch.equal(clean, poisoned)


def test_mask_built_on_the_fly_equals_dense_mask(canonical, graph_of):
    model = make_model(canonical, "edge")
    graph = dgl.batch([graph_of("CCO"), graph_of("c1ccccc1")])
    with torch.no_grad():
        dense = model(edge_set_batch(graph))
        on_the_fly = model(edge_set_batch(graph, dense_mask=False))
    torch.testing.assert_close(dense, on_the_fly)


def test_attend_to_self_changes_masked_blocks(canonical, graph_of):
    graphs = [graph_of("CCO")]
    with_self = make_model(canonical, "edge", attend_to_self=True)
    without = make_model(canonical, "edge", attend_to_self=False)
    without.load_state_dict(with_self.state_dict())
    with torch.no_grad():
        assert not torch.allclose(predict(with_self, graphs), predict(without, graphs))


@pytest.mark.parametrize("norm,mlp", [("post", "standard"), ("pre", "swiglu"), ("post", "swiglu")])
def test_variants_run(canonical, graph_of, norm, mlp):
    model = make_model(canonical, "edge", norm=norm, mlp=mlp, dropout=0.1)
    with torch.no_grad():
        out = predict(model, [graph_of("CCO"), graph_of("[Na+]")])
    assert out.shape == (2, 2) and torch.isfinite(out).all()


def test_layer_pattern_sets_block_counts():
    model = ESA(ESAConfig(in_features=10, hidden_dim=16, num_heads=2, layer_pattern="ssmmmmpss"))
    assert model.encoder_pattern == "SSMMMM"
    assert len(model.encoder) == 6 and len(model.seed_blocks) == 2


@pytest.mark.parametrize("pattern", ["SMMS", "SMPMP", "SMPM", "SXPS"])
def test_invalid_layer_pattern_is_rejected(pattern):
    with pytest.raises(ValueError, match="layer_pattern"):
        ESAConfig(in_features=10, layer_pattern=pattern)


def test_wrong_batch_type_is_rejected(canonical, graph_of):
    model = make_model(canonical, "edge")
    with pytest.raises(TypeError, match="EdgeSetBatch"):
        model(node_set_batch(dgl.batch([graph_of("CCO")])))
