import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.batches import edge_set_batch, node_set_batch
from chemgraph.chem import mol_from_smiles
from chemgraph.graphs import mol_to_graph
from chemgraph.models import ESA, ESAConfig
from chemgraph.models.esa import AUTO_SPARSE_MIN_TOKENS

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
@pytest.mark.parametrize("attention", ["dense", "sparse"])
def test_tiny_and_bond_less_molecules_are_finite(
    canonical, graph_of, set_type, attend_to_self, attention
):
    model = make_model(canonical, set_type, attend_to_self=attend_to_self, attention=attention)
    model.train()
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
@pytest.mark.parametrize("attention", ["dense", "sparse"])
def test_nan_in_padding_changes_nothing(canonical, graph_of, set_type, attention):
    model = make_model(canonical, set_type, attention=attention)
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


# zero-bond ions, a single bond, salts, rings, a spiro system; padded in one batch
EQUALITY_BATCHES = {
    "padded": ["[Na+]", "[H][H]", "CC(=O)[O-].[Na+]", "[Cl-].[Na+]", "c1ccccc1O", "C1CCC2(C1)CCC2"],
    "ion alone": ["[Na+]"],
    "H2 alone": ["[H][H]"],
}


@pytest.mark.parametrize("set_type", ["edge", "node"])
@pytest.mark.parametrize("attend_to_self", [True, False])
@pytest.mark.parametrize("molecules", EQUALITY_BATCHES.values(), ids=EQUALITY_BATCHES.keys())
def test_sparse_equals_dense_outputs_and_gradients(
    canonical, graph_of, set_type, attend_to_self, molecules
):
    batch = BUILDERS[set_type](dgl.batch([graph_of(s) for s in molecules]))
    results = {}
    for attention in ("dense", "sparse"):
        model = make_model(canonical, set_type, attend_to_self=attend_to_self, attention=attention)
        out = model.train()(batch)
        (out * torch.linspace(-1, 2, out.numel()).view_as(out)).sum().backward()
        grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
        results[attention] = out, grads
    (dense, dense_grads), (sparse, sparse_grads) = results["dense"], results["sparse"]
    assert torch.isfinite(sparse).all()
    torch.testing.assert_close(sparse, dense, atol=1e-5, rtol=1e-5)
    assert sparse_grads.keys() == dense_grads.keys()
    for name, grad in sparse_grads.items():
        assert torch.isfinite(grad).all(), name
        torch.testing.assert_close(grad, dense_grads[name], atol=1e-5, rtol=1e-5, msg=name)


@pytest.mark.parametrize("set_type", ["edge", "node"])
def test_sparse_path_needs_no_dense_mask(canonical, graph_of, set_type):
    graph = dgl.batch([graph_of("CCO"), graph_of("c1ccccc1")])
    with torch.no_grad():
        dense = make_model(canonical, set_type, attention="dense")(BUILDERS[set_type](graph))
        batch = BUILDERS[set_type](graph, dense_mask=False)
        sparse = make_model(canonical, set_type, attention="sparse")(batch)
        on_the_fly = make_model(canonical, set_type, attention="dense")(batch)
    torch.testing.assert_close(sparse, dense, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(on_the_fly, dense)


def test_auto_attention_switches_to_sparse_at_the_threshold(canonical):
    auto = make_model(canonical, "edge")
    assert auto.config.attention == "auto"
    assert auto.attention_path(AUTO_SPARSE_MIN_TOKENS - 1) == "dense"
    assert auto.attention_path(AUTO_SPARSE_MIN_TOKENS) == "sparse"
    for fixed in ("dense", "sparse"):
        model = make_model(canonical, "edge", attention=fixed)
        assert model.attention_path(1) == model.attention_path(10**6) == fixed


def test_attention_option_round_trips_and_old_configs_load(canonical):
    model = make_model(canonical, "edge", attention="sparse")
    saved = model.config.to_dict()
    assert saved["attention"] == "sparse" and ESAConfig(**saved) == model.config
    old = {key: value for key, value in saved.items() if key != "attention"}
    restored = ESA(ESAConfig(**old))  # a checkpoint from before the option
    assert restored.config.attention == "auto"
    restored.load_state_dict(model.state_dict())  # the option adds no parameters


def test_attention_option_is_validated():
    with pytest.raises(ValueError, match="attention"):
        ESAConfig(in_features=10, attention="sparse_csr")
    with pytest.raises(ValueError, match="flex"):
        ESAConfig(in_features=10, set_type="node", attention="flex")
    with pytest.raises(ValueError, match="flex"):
        ESAConfig(in_features=10, attention="flex", attention_dropout=0.1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal")
def test_flex_attention_refuses_the_cpu(canonical, graph_of):
    model = make_model(canonical, "edge", attention="flex")
    with pytest.raises(RuntimeError, match="CUDA"):
        predict(model, [graph_of("CCO")])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="FlexAttention path needs CUDA")
@pytest.mark.parametrize("attend_to_self", [True, False])
def test_flex_equals_dense_on_cuda(canonical, graph_of, attend_to_self):
    batch = edge_set_batch(dgl.batch([graph_of(s) for s in EQUALITY_BATCHES["padded"]])).to("cuda")
    results = {}
    for attention in ("dense", "flex"):
        model = make_model(canonical, "edge", attend_to_self=attend_to_self, attention=attention)
        out = model.cuda().train()(batch)
        out.sum().backward()
        results[attention] = out, [p.grad for p in model.parameters()]
    torch.testing.assert_close(results["flex"][0], results["dense"][0], atol=1e-4, rtol=1e-4)
    for flex, dense in zip(results["flex"][1], results["dense"][1]):
        if dense is not None:
            torch.testing.assert_close(flex, dense, atol=1e-4, rtol=1e-4)


def test_sum_readout_adds_the_scaled_token_sum(canonical, graph_of):
    """``seeds+sum`` = ``seeds`` + Linear(Σ_t z_t / SUM_READOUT_SCALE), z = X + Encoder(X),
    summed over the real tokens only (padding left out)."""
    from chemgraph.models.esa import SUM_READOUT_SCALE

    with_sum = make_model(canonical, "edge", readout="seeds+sum")
    seeds_only = make_model(canonical, "edge", readout="seeds")
    seeds_only.load_state_dict(
        {k: v for k, v in with_sum.state_dict().items() if not k.startswith("sum_readout")}
    )
    graphs = [graph_of("CCO"), graph_of("c1ccccc1O")]
    batch = edge_set_batch(dgl.batch(graphs))
    captured = {}
    hook = with_sum.pool.register_forward_pre_hook(lambda _, args: captured.update(z=args[0]))
    with torch.no_grad():
        embedded = with_sum.embed(batch)
        expected_sum = torch.where(batch.pad_mask[..., None], captured["z"], 0.0).sum(1)
        expected = seeds_only.embed(batch) + with_sum.sum_readout(expected_sum / SUM_READOUT_SCALE)
    hook.remove()
    torch.testing.assert_close(embedded, expected)
    assert batch.pad_mask[0].sum() < batch.pad_mask.shape[1]  # CCO is padded: pads left out
