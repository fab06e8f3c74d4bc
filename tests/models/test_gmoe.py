import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.batches import sparse_graph_batch
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import mol_to_graph
from chemgraph.models import GMoE, GMoEConfig
from chemgraph.models.gmoe import GMoELayer, MessagePassingConfig, expert_usage_table
from chemgraph.nn import GCNConv, Neighbourhood, message_passing_layer

OGB = get_preset("ogb")
VOCABULARIES = dict(
    atom_vocabulary_sizes=list(OGB.atom.vocabulary_sizes),
    bond_vocabulary_sizes=list(OGB.bond.vocabulary_sizes),
)
SMILES = ["CC(=O)Nc1ccc(O)cc1", "C1CCC2(C1)CCC2", "CC(=O)[O-].[Na+]", "c1ccc2ccccc2c1"]


def batch_of(molecules, two_hop=True):
    """Batch of SMILES strings or RDKit molecules."""
    mols = [mol_from_smiles(m) if isinstance(m, str) else m for m in molecules]
    graphs = [mol_to_graph(mol, OGB) for mol in mols]
    return sparse_graph_batch(dgl.batch(graphs), two_hop=two_hop)


# model kind and GCN messages of each message-passing kind of chemgraph.nn
KINDS = {"gcn": ("gcn", "ogb"), "linear-gcn": ("gcn", "linear"), "gin": ("gin", "ogb")}


def neighbourhoods(batch):
    bonds = VOCABULARIES["bond_vocabulary_sizes"]
    return {
        hop: Neighbourhood(*batch.neighbourhood(hop), sizes)
        for hop, sizes in ((1, bonds), (2, 2 * bonds))
        if hop == 1 or batch.hop2_edge_index is not None
    }


def make_model(kind="gcn", **options):
    torch.manual_seed(0)
    model_kind, messages = KINDS[kind]
    settings = dict(num_layers=3, hidden_dim=16, num_experts=4, num_hop1_experts=2, k=2)
    config = GMoEConfig(
        **VOCABULARIES, num_outputs=2, kind=model_kind, gcn_messages=messages,
        **{**settings, **options},
    )  # fmt: skip
    model = GMoE(config)
    with torch.no_grad():  # non-trivial gates, so that different nodes pick different experts
        for layer in model.layers:
            if isinstance(layer, GMoELayer):
                layer.gate.w_gate.normal_()
    return model.eval()


@pytest.mark.parametrize("kind", list(KINDS))
def test_one_expert_equals_the_plain_layer(kind):
    torch.manual_seed(1)
    dim = 8
    bonds = VOCABULARIES["bond_vocabulary_sizes"]
    plain = message_passing_layer(kind, dim, bonds)
    mixture = GMoELayer(kind, dim, bonds, 1, 1, 1)
    if isinstance(plain, GCNConv):
        mixture.experts[0].load_state_dict(plain.state_dict())
    else:
        mixture.hop1.load_state_dict(plain.aggregate.state_dict())
        mixture.experts[0].load_state_dict(plain.transform.state_dict())
    batch = batch_of(SMILES, two_hop=False)
    hoods = neighbourhoods(batch)
    x = torch.randn(batch.x.shape[0], dim)
    for training in (True, False):  # batch statistics, then running statistics
        plain.train(training)
        mixture.train(training)
        expected = plain(x, hoods[1])
        torch.testing.assert_close(mixture(x, hoods), expected)
    assert mixture.last_gate.gates.eq(1).all()


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("kind", list(KINDS))
def test_sparse_dispatch_equals_evaluating_every_expert(kind, k):
    """Only the k chosen experts run for a node, and the result is the dense mixture."""
    model = make_model(kind, k=k)
    layer = model.layers[0]
    batch = batch_of(SMILES)
    hoods = neighbourhoods(batch)
    x = model.atom_encoder(batch.x)
    seen = {}
    hooks = [
        expert.register_forward_hook(
            lambda module, inputs, output, index=index: seen.__setitem__(index, output.shape[0])
        )
        for index, expert in enumerate(layer.experts)
    ]
    with torch.no_grad():
        out = layer(x, hoods)
    for hook in hooks:
        hook.remove()
    gate = layer.last_gate
    routed = torch.bincount(gate.experts.flatten(), minlength=4)
    assert seen == {i: int(c) for i, c in enumerate(routed) if c > 0}
    assert routed.sum() == k * x.shape[0]
    # dense reference: every expert on every node, weighted by the dense gate matrix
    with torch.no_grad():
        if kind == "gcn":
            outputs = [expert(x, hoods[layer.hop(i)]) for i, expert in enumerate(layer.experts)]
        else:
            sums = {1: layer.hop1(x, hoods[1]), 2: layer.hop2(x, hoods[2])}
            outputs = [expert(sums[layer.hop(i)]) for i, expert in enumerate(layer.experts)]
    dense_gates = torch.zeros(x.shape[0], 4).scatter(1, gate.experts, gate.gates)
    expected = (dense_gates.unsqueeze(2) * torch.stack(outputs, dim=1)).sum(1)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_width_is_scaled_for_equal_flops():
    assert GMoEConfig(**VOCABULARIES, hidden_dim=300, k=4).width == 150
    assert GMoEConfig(**VOCABULARIES, hidden_dim=300, k=2).width == 212
    assert GMoEConfig(**VOCABULARIES, hidden_dim=300, k=1).width == 300


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("experts", [1, 4])
@pytest.mark.parametrize("smiles", SMILES[:3])
def test_permutation_invariance(kind, experts, smiles):
    options = {} if experts == 4 else dict(num_experts=1, num_hop1_experts=1, k=1)
    model = make_model(kind, **options)
    mol = mol_from_smiles(smiles)
    order = np.random.default_rng(1).permutation(mol.GetNumAtoms()).tolist()
    with torch.no_grad():
        original = model(batch_of([mol]))
        permuted = model(batch_of([Chem.RenumberAtoms(mol, order)]))
    torch.testing.assert_close(original, permuted, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_alone_equals_inside_batch(kind):
    model = make_model(kind)
    with torch.no_grad():
        alone = model(batch_of(["CCO"]))
        in_batch = model(batch_of(["CC(C)Cc1ccc(cc1)C(C)C(=O)O", "CCO", "c1ccc2ccccc2c1"]))
    torch.testing.assert_close(alone[0], in_batch[1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("experts", [1, 4])
def test_tiny_and_bond_less_molecules_are_finite(kind, experts):
    options = {} if experts == 4 else dict(num_experts=1, num_hop1_experts=1, k=1)
    model = make_model(kind, **options).train()
    out = model(batch_of(["[Na+]", "[He]", "C", "[H][H]"]))
    loss = out.sum() + (model.auxiliary_loss if experts > 1 else 0)
    assert torch.isfinite(out).all() and torch.isfinite(torch.as_tensor(loss))
    loss.backward()
    for parameter in model.parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all()


def test_auxiliary_loss_and_expert_statistics():
    model = make_model(balance_weight=0.5).train()
    batch = batch_of(SMILES)
    model(batch)
    first = torch.stack([layer.last_balance for layer in model.layers])  # [layers, 2]
    losses = torch.stack([layer.last_gate.auxiliary_loss() for layer in model.layers])
    torch.testing.assert_close(model.auxiliary_loss, 0.5 * losses.mean())
    torch.testing.assert_close(first.sum(1), losses)
    model(batch)
    second = torch.stack([layer.last_balance for layer in model.layers])
    statistics = model.pop_expert_statistics()
    assert statistics.usage.shape == (3, 4) and statistics.batches == 2
    torch.testing.assert_close(statistics.usage.sum(1), torch.ones(3))
    mean = (first + second).detach() / 2  # per layer, not only the mean over layers
    torch.testing.assert_close(statistics.importance_cv2, mean[:, 0])
    torch.testing.assert_close(statistics.load_cv2, mean[:, 1])
    assert model.expert_history == [statistics]
    assert set(statistics.to_dict()) == {"batches", "usage", "importance_cv2", "load_cv2"}
    lines = expert_usage_table(statistics).splitlines()
    assert len(lines) == 4 and lines[1].startswith("  layer 0: ")
    assert lines[1].split("|")[1].split() == [f"{v:.3f}" for v in mean[0].tolist()]
    assert model.pop_expert_statistics().usage.sum() == 0  # reset after reading
    model.eval()
    model(batch)  # evaluation does not count
    assert model.pop_expert_statistics().batches == 0
    assert make_model(num_experts=1, num_hop1_experts=1, k=1).pop_expert_statistics() is None


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="num_hop1_experts"):
        GMoEConfig(**VOCABULARIES, num_experts=4, num_hop1_experts=5)
    with pytest.raises(ValueError, match="k=5 exceeds"):
        GMoEConfig(**VOCABULARIES, num_experts=4, k=5)
    with pytest.raises(ValueError, match="unknown model_options"):
        GMoEConfig.check_options({"experts": 4})
    with pytest.raises(ValueError, match="gcn_messages must be one of"):
        GMoEConfig(**VOCABULARIES, gcn_messages="kipf")
    with pytest.raises(ValueError, match="GIN has OGB's messages only"):
        GMoEConfig(**VOCABULARIES, kind="gin", gcn_messages="linear")


def test_plain_baselines_refuse_expert_options():
    MessagePassingConfig.check_options({"hidden_dim": 32, "num_layers": 2})
    with pytest.raises(ValueError, match="GCN and GIN have one expert"):
        MessagePassingConfig.check_options({"num_experts": 4})
    config = MessagePassingConfig(**VOCABULARIES)
    assert (config.num_experts, config.k, config.width) == (1, 1, 300)
    assert not GMoE(config).mixture


def test_training_epochs_log_routing_per_layer():
    """PropertyPredictionModule.on_train_epoch_end: per-layer metrics and one entry of the
    model's expert history per epoch."""
    import lightning as L

    from chemgraph.train.module import PropertyPredictionModule

    module = PropertyPredictionModule(
        model_config={**VOCABULARIES, "kind": "gcn", "num_layers": 2, "hidden_dim": 8},
        task="regression",
        target_columns=["y"],
        featurizer=OGB.to_dict(),
        model="gmoe-gcn",
    )
    batch = batch_of(SMILES)
    pairs = [(batch, torch.arange(4.0).unsqueeze(1))] * 3
    batches = torch.utils.data.DataLoader(pairs, batch_size=None, collate_fn=lambda pair: pair)
    trainer = L.Trainer(
        max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, accelerator="cpu",
    )  # fmt: skip
    trainer.fit(module, train_dataloaders=batches, val_dataloaders=batches)
    history = module.model.expert_history
    assert [entry.batches for entry in history] == [3, 3]
    metrics = trainer.callback_metrics
    for layer in range(2):
        for name in ("expert_usage_max", "expert_importance_cv2", "expert_load_cv2"):
            assert f"{name}/layer{layer}" in metrics
        value = float(metrics[f"expert_load_cv2/layer{layer}"])
        assert value == pytest.approx(float(history[-1].load_cv2[layer]))
