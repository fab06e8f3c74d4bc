"""chemgraph.batches.reaction: decoder layout, Figure 1 masking matrix, padding."""

from __future__ import annotations

import torch

from chemgraph.batches.reaction import (
    DELIMITER,
    IGNORE_INDEX,
    SELF,
    VIRTUAL,
    TokenVocabulary,
    generation_mask,
    reaction_batch,
    reaction_graphs,
)
from chemgraph.chem import parse_reaction_smiles


def _items(*texts):
    return [reaction_graphs(parse_reaction_smiles(t)) for t in texts]


def _vocabulary(items):
    return TokenVocabulary.from_graphs(
        g for i in items for g in (*i.reactants, *i.reagents, i.product)
    )


def test_generation_mask_equals_figure_1_for_four_nodes():
    # tokens: <PRODUCT>, G0, a, G1, b, G2, c, G3, d, G4 (G4 predicts <EOG>)
    # lower triangle (no future) minus the columns of earlier <G> tokens
    P, G, N = "P", "G", "N"
    kinds = [P, G, N, G, N, G, N, G, N, G]
    expected = [[k <= q and (kinds[k] != G or k == q) for k in range(10)] for q in range(10)]
    assert generation_mask(4).tolist() == expected
    rows = ["1000000000", "1100000000", "1010000000", "1011000000", "1010100000",
            "1010110000", "1010101000", "1010101100", "1010101010", "1010101011"]  # fmt: skip
    assert ["".join(str(int(v)) for v in row) for row in generation_mask(4).tolist()] == rows


def test_decoder_edges_targets_and_mask_of_one_product():
    (item,) = _items("CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O")
    vocabulary = _vocabulary([item])
    batch = reaction_batch([item], vocabulary)
    product = item.product  # CCOC(C)=O: 6 atoms, canonical order C C O C C O
    assert [a.token for a in product.atoms] == ["[CH3]", "[CH2]", "[O]", "[C]", "[CH3]", "[O]"]
    n = product.num_atoms
    edge = batch.decoder_edge_type[0]
    assert edge.shape == (2 * n + 2, 2 * n + 2)
    x = lambda i: 2 + 2 * i  # noqa: E731
    g = lambda t: 1 + 2 * t  # noqa: E731
    assert edge[x(1), x(0)] == 1 and edge[x(3), x(5)] == 2 and edge[x(0), x(2)] == 0
    assert edge[g(3), x(0)] == VIRTUAL and edge[g(3), x(2)] == VIRTUAL
    assert edge[0, x(4)] == DELIMITER and edge[g(2), g(2)] == SELF
    mask = batch.decoder_mask[0]
    assert mask[g(3)].nonzero().flatten().tolist() == [0, x(0), x(1), x(2), g(3)]
    # an atom sees <PRODUCT>, itself and earlier *bonded* atoms only
    assert mask[x(3)].nonzero().flatten().tolist() == [0, x(2), x(3)]
    ids = [vocabulary[a.token] for a in product.atoms] + [vocabulary["<EOG>"]]
    assert batch.label_targets[0].tolist() == ids
    edges = batch.edge_targets[0]
    assert edges[3, :3].tolist() == [0, 0, 1] and edges[5, :5].tolist() == [0, 0, 0, 2, 0]
    assert edges[0].eq(IGNORE_INDEX).all() and edges[n].eq(IGNORE_INDEX).all()
    assert edges[3, 3:].eq(IGNORE_INDEX).all()


def test_encoder_delimiters_distances_and_roles():
    (item,) = _items("CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O")
    vocabulary = _vocabulary([item])
    batch = reaction_batch([item], vocabulary, max_distance=3)
    tokens = batch.encoder_tokens[0].tolist()
    starts = [i for i, t in enumerate(tokens) if t in (vocabulary["<REACTANT>"],
                                                      vocabulary["<REAGENT>"])]  # fmt: skip
    assert [vocabulary.tokens[tokens[i]] for i in starts] == ["<REACTANT>"] * 2 + ["<REAGENT>"]
    assert starts == [0, 5, 9]  # CC(=O)Cl (4 atoms), CCO (3), pyridine (6)
    edge, distance = batch.encoder_edge_type[0], batch.encoder_distance[0]
    assert (edge[0, 1:5] == DELIMITER).all() and edge[0, 6] == 0
    assert distance[1, 4].item() == 2 and distance[10, 13].item() == 3  # para: 3, clipped at 3
    assert distance[1, 6].item() == 3  # other molecule: far bucket
    assert batch.encoder_positions[0, :6].tolist() == [0, 1, 2, 3, 4, 0]


def test_padded_batch_holds_each_reaction_unchanged():
    items = _items("CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O", "CO.[Na+]>>C[O-].[Na+]")
    vocabulary = _vocabulary(items)
    both = reaction_batch(items, vocabulary)
    alone = reaction_batch(items[1:], vocabulary)
    length_e, length_d = alone.pad_mask.shape[1], alone.decoder_pad_mask.shape[1]
    for name in ("encoder_tokens", "encoder_edge_type", "encoder_distance", "decoder_tokens",
                 "decoder_edge_type", "decoder_mask"):  # fmt: skip
        small, big = getattr(alone, name)[0], getattr(both, name)[1]
        length = length_e if name.startswith("encoder") else length_d
        index = (slice(0, length),) * small.dim()
        assert torch.equal(big[index], small), name
    assert (
        not both.decoder_mask[1, length_d:].any() and not both.decoder_mask[1, :, length_d:].any()
    )
    assert both.num_input_atoms.tolist() == [13, 3]  # CO + [Na+]


def test_vocabulary_unknown_and_special_tokens():
    vocabulary = TokenVocabulary(["[CH3]", "<G>", "[CH3]", "[OH]"])
    assert vocabulary.tokens[:8][0] == "<PAD>" and vocabulary.tokens[8:] == ["[CH3]", "[OH]"]
    assert vocabulary["[Xe]"] == vocabulary["<UNK>"] == 1
