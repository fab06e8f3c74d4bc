"""GRATTranslator.beam_search against brute-force enumeration on a tiny vocabulary, without and
with valence rules."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from chemgraph.batches.reaction import (
    BOND_ORDER_HALVES,
    NUM_BOND_CLASSES,
    SPECIAL_TOKENS,
    TokenVocabulary,
    reaction_batch,
    reaction_graphs,
)
from chemgraph.chem import parse_reaction_smiles
from chemgraph.models.grat import GRATTranslator, GRATTranslatorConfig, ValenceRules
from chemgraph.models.grat.beam_search import beam_search_graphs

ATOMS = ("[CH3]", "[OH]")
EOG = SPECIAL_TOKENS.index("<EOG>")
NEVER = [i for i, token in enumerate(SPECIAL_TOKENS) if token != "<EOG>"]


def _model_and_items():
    items = [reaction_graphs(parse_reaction_smiles(r)) for r in ("CO>>C=O", "C.O>>CO")]
    vocabulary = TokenVocabulary(ATOMS)
    torch.manual_seed(3)
    config = GRATTranslatorConfig(
        vocab_size=len(vocabulary), hidden_dim=16, num_heads=2, encoder_layers=1,
        decoder_layers=2, projection_dim=8, dropout=0.0,
    )  # fmt: skip
    model = GRATTranslator(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():  # varied, peaked distributions
            parameter.mul_(3.0)
    return model, items, vocabulary


def _log_probabilities(model, one, labels, bond):
    """Summed log-probability of atoms ``labels`` (<= 2) joined by ``bond``, then <EOG>; and
    that of the bond alone."""
    cache = model.start(one)
    total = bond_log_probability = 0.0
    for t in range(len(labels) + 1):
        previous = (None, None)  # x_{t-1} and its bonds to x_0 … x_{t-2}
        if t:
            previous = (torch.tensor([labels[t - 1]]), torch.tensor([[bond]])[:, : t - 1])
        label_logits, edge_logits = model.step(cache, t, *previous)
        label_logits[:, NEVER] = float("-inf")
        label_logp = label_logits.log_softmax(-1)[0]
        total += label_logp[labels[t] if t < len(labels) else EOG].item()
        if t == 1 and len(labels) == 2:  # x_1's bond to x_0
            bond_log_probability = edge_logits.log_softmax(-1)[0, 0, bond].item()
            total += bond_log_probability
    return total, bond_log_probability


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_wide_beam_finds_exactly_the_brute_force_hypotheses(length_penalty):
    """With ``max_nodes = 2`` and a beam wider than the search space, the beam returns every
    graph it may build, ranked as by brute force: the empty graph, each single atom, and each
    atom pair with the two most likely classes of its bond when it is generated (the most
    likely bond set and the single change to the second most likely class)."""
    model, items, vocabulary = _model_and_items()
    atoms = [vocabulary[token] for token in ATOMS]
    width = 1 + len(atoms) + 2 * len(atoms) ** 2  # every hypothesis, and every extension kept
    with torch.no_grad():
        found = model.beam_search(
            reaction_batch(items, vocabulary), beam_width=width, length_penalty=length_penalty,
            max_nodes=2,
        )  # fmt: skip
        for item, hypotheses in zip(items, found):
            one = reaction_batch([item], vocabulary)
            expected = [((), 0, _log_probabilities(model, one, (), 0)[0])]
            expected += [((a,), 0, _log_probabilities(model, one, (a,), 0)[0]) for a in atoms]
            for pair in itertools.product(atoms, repeat=2):
                by_bond = [(*_log_probabilities(model, one, pair, c), c) for c in
                           range(NUM_BOND_CLASSES)]  # fmt: skip
                by_bond.sort(key=lambda e: -e[1])
                expected += [(pair, c, total) for total, _, c in by_bond[:2]]
            expected.sort(key=lambda e: -e[2] / (len(e[0]) + 1) ** length_penalty)
            assert [(h.labels, h.bonds) for h in hypotheses] == [
                (list(labels), [(0, 1, bond)] if bond else []) for labels, bond, _ in expected
            ]
            torch.testing.assert_close(
                torch.tensor([h.log_probability for h in hypotheses]),
                torch.tensor([lp for _, _, lp in expected]),
                rtol=1e-5, atol=1e-5,
            )  # fmt: skip
            assert [h.score for h in hypotheses] == sorted(
                (h.score for h in hypotheses), reverse=True
            )


def test_valence_rules_keep_exactly_the_brute_force_graphs_that_obey_them():
    """With :class:`ValenceRules` (``[CH3]`` ends with 2 or 4 half bonds: one single or one
    double bond; ``[OH]`` with 0 or 2) a beam wider than the search space returns exactly the
    brute-force graphs that obey them: bond classes past an earlier atom's largest valence are
    never proposed (the two bond options are the two most likely *allowed* classes), an option
    past the new atom's largest valence is dropped, and only graphs whose every atom has an
    allowed valence end (so no empty graph and no lone ``[CH3]``)."""
    model, items, vocabulary = _model_and_items()
    atoms = [vocabulary[token] for token in ATOMS]
    allowed = {atoms[0]: (2, 4), atoms[1]: (0, 2)}
    rules = ValenceRules.from_lists([list(allowed.get(v, ())) for v in range(len(vocabulary))])
    assert rules.maximum[atoms].tolist() == [4, 2]
    width = 1 + len(atoms) + 2 * len(atoms) ** 2
    with torch.no_grad():
        found = model.beam_search(
            reaction_batch(items, vocabulary), beam_width=width, max_nodes=2, rules=rules
        )
        for item, hypotheses in zip(items, found):
            one = reaction_batch([item], vocabulary)
            expected = [((a,), 0, _log_probabilities(model, one, (a,), 0)[0]) for a in atoms
                        if 0 in allowed[a]]  # fmt: skip
            for first, second in itertools.product(atoms, repeat=2):
                room = [c for c in range(NUM_BOND_CLASSES)
                        if BOND_ORDER_HALVES[c] <= max(allowed[first])]  # fmt: skip
                by_bond = [(*_log_probabilities(model, one, (first, second), c), c) for c in room]
                by_bond.sort(key=lambda e: -e[1])
                for total, _, c in by_bond[:2]:
                    valence = BOND_ORDER_HALVES[c]
                    if valence <= max(allowed[second]) and all(
                        valence in allowed[a] for a in (first, second)
                    ):
                        expected.append(((first, second), c, total))
            expected.sort(key=lambda e: -e[2])
            assert [(h.labels, h.bonds) for h in hypotheses] == [
                (list(labels), [(0, 1, bond)] if bond else []) for labels, bond, _ in expected
            ]


class _FixedDistributions:
    """The real model's decoder cache, with fixed label probabilities per step and every bond
    single."""

    def __init__(self, model, probabilities):
        self.model, self.probabilities = model, probabilities

    def start(self, batch):
        return self.model.start(batch)

    def step(self, cache, t, *previous):
        label_logits, edge_logits = self.model.step(cache, t, *previous)
        labels = torch.full_like(label_logits, float("-inf"))
        for token, probability in self.probabilities[t].items():
            labels[:, token] = math.log(probability)
        edges = torch.full_like(edge_logits, float("-inf"))
        edges[..., 1] = 0.0  # bond class 1: single
        return labels, edges


def test_an_ending_outranked_by_an_extension_still_finishes_a_graph():
    """Width 1: after ``[CH3]`` (p 0.6) the ending (p 0.3) ranks below the extension to
    ``[CH3]-[CH3]`` (0.7), whose own ending is unlikely (0.2). The search must return
    ``[CH3]`` (0.6 · 0.3 = 0.18), not the pair (0.6 · 0.7 · 0.2 = 0.084): every ending on the
    path is a finished graph when it is among the best found."""
    model, items, vocabulary = _model_and_items()
    methyl, hydroxyl = vocabulary["[CH3]"], vocabulary["[OH]"]
    fixed = _FixedDistributions(model, [
        {methyl: 0.6, hydroxyl: 0.4},
        {EOG: 0.3, methyl: 0.7},
        {EOG: 0.2, methyl: 0.8},
    ])  # fmt: skip
    with torch.no_grad():
        found = beam_search_graphs(
            fixed, reaction_batch(items, vocabulary), beam_width=1, length_penalty=0.0,
            edge_alternatives=None, max_nodes=2,
        )  # fmt: skip
    for hypotheses in found:
        assert [(h.labels, h.bonds) for h in hypotheses] == [([methyl], [])]
        assert hypotheses[0].log_probability == pytest.approx(math.log(0.18))
