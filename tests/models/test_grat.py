"""chemgraph.models.grat: edge-conditioned attention, <CLS> readout, two-path decoder."""

from __future__ import annotations

import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.batches import dense_graph_batch
from chemgraph.batches.reaction import (
    SELF,
    TokenVocabulary,
    observed_valences,
    reaction_batch,
    reaction_graphs,
)
from chemgraph.chem import mol_from_smiles, parse_reaction_smiles
from chemgraph.chem.graph_codec import smiles_to_graph_labels
from chemgraph.featurize import get_preset
from chemgraph.graphs import add_shortest_paths, mol_to_graph
from chemgraph.models.grat import (
    GRAT,
    EdgeConditioning,
    GRATConfig,
    GRATStack,
    GRATTranslator,
    GRATTranslatorConfig,
)
from chemgraph.models.grat.translator import bonds_made_so_far

REACTIONS = (
    "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O",
    "CO.[Na+]>>C[O-].[Na+]",
    "Brc1ccccc1.OB(O)c1ccccc1>[Pd]>c1ccc(-c2ccccc2)cc1",
)


def _translator_and_batch(seed: int = 0):
    items = [reaction_graphs(parse_reaction_smiles(r)) for r in REACTIONS]
    vocabulary = TokenVocabulary.from_graphs(
        g for i in items for g in (*i.reactants, *i.reagents, i.product)
    )
    torch.manual_seed(seed)
    config = GRATTranslatorConfig(
        vocab_size=len(vocabulary), hidden_dim=32, num_heads=4, encoder_layers=2,
        decoder_layers=2, dropout=0.0,
    )  # fmt: skip
    model = GRATTranslator(config)
    for stack in (model.encoder, model.decoder):  # non-trivial Γ and B
        torch.nn.init.normal_(stack.edge_conditioning.mlp[2].weight, std=0.5)
    return model.eval(), items, vocabulary


@pytest.mark.parametrize("per_head, heads_out", [(False, 1), (True, 4)])
def test_edge_conditioning_starts_as_plain_attention(per_head, heads_out):
    """One (γ, β) per atom pair and layer (eq. 2) by default, one per head as an option."""
    f_a = EdgeConditioning(
        num_edge_types=5, num_distances=3, hidden=8, num_layers=2, num_heads=4, per_head=per_head
    )
    table = f_a.table()
    assert table.shape == (15, 2, heads_out, 2)
    assert f_a.mlp[2].out_features == 2 * heads_out * 2
    assert torch.equal(table[..., 0], torch.ones(15, 2, heads_out))  # γ = 1
    assert torch.equal(table[..., 1], torch.zeros(15, 2, heads_out))  # β = 0
    index = f_a(torch.tensor([[[4, 0]]]), torch.tensor([[[2, 1]]]))
    assert index.tolist() == [[[14, 1]]]


def test_per_pair_edge_conditioning_gives_every_head_the_same_gamma_and_beta():
    stack = GRATStack(8, 4, 2, 16, 5, 3, 8, 0.0, cross_attention=False)
    torch.nn.init.normal_(stack.edge_conditioning.mlp[2].weight)
    edge_type, distance = torch.tensor([[[0, 4], [2, 1]]]), torch.tensor([[[0, 2], [1, 0]]])
    for _, _, gamma, beta in stack.conditioned_layers(edge_type, distance):
        assert gamma.shape == beta.shape == (1, 1, 2, 2)  # broadcast over the 4 heads
        assert not torch.equal(gamma, torch.ones_like(gamma))


def test_teacher_forced_parallel_logits_equal_step_by_step_decoding():
    model, items, vocabulary = _translator_and_batch()
    batch = reaction_batch(items, vocabulary)
    with torch.no_grad():
        label_logits, edge_logits = model(batch)
        for index, item in enumerate(items):
            one = reaction_batch([item], vocabulary)
            cache = model.start(one)
            tokens = one.decoder_tokens[0, 2::2]
            bonds = torch.tensor(item.product.bond_matrix())
            for t in range(item.product.num_atoms + 1):
                labels, edges = model.step(
                    cache, t, tokens[t - 1 : t] if t else None,
                    bonds[t - 1, : t - 1].unsqueeze(0) if t else None,
                )  # fmt: skip
                assert torch.allclose(labels[0], label_logits[index, t], atol=1e-5)
                assert torch.allclose(edges[0], edge_logits[index, t, :t], atol=1e-5)


def test_translator_alone_equals_padded_batch():
    model, items, vocabulary = _translator_and_batch(1)
    with torch.no_grad():
        labels_all, edges_all = model(reaction_batch(items, vocabulary))
        labels_one, edges_one = model(reaction_batch(items[1:2], vocabulary))
    m = labels_one.shape[1]
    assert torch.allclose(labels_all[1, :m], labels_one[0], atol=1e-5)
    assert torch.allclose(edges_all[1, :m, : m - 1], edges_one[0], atol=1e-5)


def _dense(smiles_list):
    preset = get_preset("ogb")
    graphs = [add_shortest_paths(mol_to_graph(mol_from_smiles(s), preset)) for s in smiles_list]
    return dense_graph_batch(dgl.batch(graphs), max_distance=5), preset


def test_grat_property_model_zero_bond_molecules_and_padding():
    batch, preset = _dense(["[Na+]", "[He]", "C", "c1ccccc1O"])
    torch.manual_seed(0)
    config = GRATConfig(
        atom_vocabulary_sizes=list(preset.atom.vocabulary_sizes), num_bond_types=6,
        num_outputs=2, max_distance=5, hidden_dim=32, num_heads=4, num_layers=2,
    )  # fmt: skip
    model = GRAT(config).eval()
    torch.nn.init.normal_(model.encoder.edge_conditioning.mlp[2].weight, std=0.5)
    with torch.no_grad():
        out = model(batch)
        alone = model(_dense(["C"])[0])
    assert out.shape == (4, 2) and torch.isfinite(out).all()
    assert torch.allclose(out[2], alone[0], atol=1e-5)


def test_grat_property_model_is_permutation_invariant_and_neighbour_mask_changes_it():
    batch, preset = _dense(["OCC(=O)N", "NC(=O)CO"])
    torch.manual_seed(0)
    options = dict(
        atom_vocabulary_sizes=list(preset.atom.vocabulary_sizes), num_bond_types=6,
        max_distance=5, hidden_dim=32, num_heads=4, num_layers=2,
    )  # fmt: skip
    model = GRAT(GRATConfig(**options)).eval()
    with torch.no_grad():
        out = model(batch)
        model.config.neighbour_only = True
        masked = model(batch)
    assert torch.allclose(out[0], out[1], atol=1e-5)
    assert not torch.allclose(out, masked)


def test_bonds_made_so_far_hand_computed():
    """Bonds 0-1 single, 1-2 double, 0-3 aromatic, 2-3 single (SELF on the diagonal is no
    bond): degree and half-bond valence of each atom j over the bonds to atoms before t."""
    bonds = torch.full((4, 4), SELF)
    for i, j, bond_class in ((1, 0, 1), (2, 1, 2), (3, 0, 4), (3, 2, 1)):
        bonds[i, j] = bonds[j, i] = bond_class
    bonds[0, 2] = bonds[2, 0] = bonds[1, 3] = bonds[3, 1] = 0
    degree, valence = bonds_made_so_far(bonds.unsqueeze(0))
    assert degree[0].tolist() == [[0, 0, 0, 0], [0, 1, 0, 1], [1, 1, 1, 1], [1, 2, 1, 2],
                                  [2, 2, 2, 2]]  # fmt: skip
    assert valence[0].tolist() == [[0, 0, 0, 0], [0, 2, 0, 3], [2, 2, 4, 3], [2, 6, 4, 5],
                                   [5, 6, 6, 5]]  # fmt: skip
    lower = torch.tril(bonds, diagonal=-1)  # the lower triangle alone gives the same counts
    assert torch.equal(bonds_made_so_far(lower.unsqueeze(0))[1], valence)


def test_observed_valences_hand_computed():
    graphs = [smiles_to_graph_labels(s) for s in ("CC=O", "c1ccccc1", "CO")]
    vocabulary = TokenVocabulary.from_graphs(graphs)
    valences = observed_valences(graphs, vocabulary)
    seen = {vocabulary.tokens[v]: valences[v] for v in range(len(vocabulary)) if valences[v]}
    assert seen == {"[CH3]": [2], "[CH]": [6], "[O]": [4], "[cH]": [6], "[OH]": [2]}
    assert valences[vocabulary["<EOG>"]] == []
