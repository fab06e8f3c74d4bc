"""chemgraph.train.reaction_module and chemgraph.reactions.translator_prediction: translation
loss; beam search on a tiny trained GRAT."""

from __future__ import annotations

import torch

from chemgraph.batches.reaction import TokenVocabulary, reaction_batch, reaction_graphs
from chemgraph.chem import parse_reaction_smiles
from chemgraph.reactions.predictions import top_k_metrics
from chemgraph.reactions.translator_prediction import predict_reactions
from chemgraph.train.reaction_module import ReactionModule, translation_loss

REACTIONS = (
    "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O",
    "CO.[Na+]>>C[O-].[Na+]",
    "CCBr.[C-]#N.[K+]>>CCC#N",
)


def test_translation_loss_of_perfect_logits_is_small_and_accuracies_are_one():
    items = [reaction_graphs(parse_reaction_smiles(r)) for r in REACTIONS]
    vocabulary = TokenVocabulary.from_graphs(
        g for i in items for g in (*i.reactants, *i.reagents, i.product)
    )
    batch = reaction_batch(items, vocabulary)
    labels = torch.nn.functional.one_hot(batch.label_targets.clamp(min=0), len(vocabulary)) * 50.0
    edges = torch.nn.functional.one_hot(batch.edge_targets.clamp(min=0), 7) * 50.0
    loss, parts = translation_loss(labels.float(), edges.float(), batch)
    assert loss.item() < 1e-6
    assert parts["label_accuracy"] == parts["graph_accuracy"] == 1.0
    assert parts["bond_precision"] == parts["bond_recall"] == 1.0
    uniform = translation_loss(torch.zeros_like(labels).float(), torch.zeros_like(edges).float(),
                               batch)[0]  # fmt: skip
    assert abs(uniform.item() - (torch.log(torch.tensor(len(vocabulary))) + torch.log(
        torch.tensor(7.0))).item()) < 1e-4  # fmt: skip


def test_beam_search_on_a_tiny_trained_model_finds_the_products():
    torch.manual_seed(0)
    items = [reaction_graphs(parse_reaction_smiles(r)) for r in REACTIONS]
    vocabulary = TokenVocabulary.from_graphs(
        g for i in items for g in (*i.reactants, *i.reagents, i.product)
    )
    module = ReactionModule(
        model_config=dict(vocab_size=len(vocabulary), hidden_dim=32, num_heads=4,
                          encoder_layers=1, decoder_layers=2, dropout=0.0),
        vocabulary=vocabulary.tokens,
    )  # fmt: skip
    batch = reaction_batch(items, vocabulary)
    optimizer = torch.optim.Adam(module.parameters(), lr=5e-3)
    streak = 0
    for _ in range(400):  # until every label and bond has been the argmax 20 steps in a row
        loss, parts = translation_loss(*module(batch), batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        streak = streak + 1 if parts["graph_accuracy"] == 1.0 else 0
        if streak == 20:
            break
    assert streak == 20
    module.eval()
    predictions = predict_reactions(module, items, beam_width=4, top_k=3)
    targets = [item.product_smiles for item in items]
    assert targets == ["CCOC(C)=O", "C[O-].[Na+]", "CCC#N"]
    assert [p.smiles[0] for p in predictions] == targets
    assert all(len(set(p.smiles)) == len(p.smiles) for p in predictions)  # deduplicated
    assert all(s == sorted(s, reverse=True) for s in (p.scores for p in predictions))
    metrics = top_k_metrics(predictions, targets)
    assert metrics["top_1"] == 100.0 and metrics["invalid_top1"] == 0.0
