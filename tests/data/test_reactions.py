"""chemgraph.data.reactions: reaction files -> graphs (rejections reported), size-bucketed
batches."""

from __future__ import annotations

import numpy as np
import torch

from chemgraph.batches.reaction import TokenVocabulary
from chemgraph.data.reactions import (
    LengthBucketSampler,
    encode_reactions,
    load_reaction_graphs,
    parse_input_reaction,
    reaction_loader,
    read_reaction_file,
)

LINES = (
    "[CH3:1][C:2](=[O:3])[Cl:4].[OH:5][CH2:6][CH3:7].c1ccncc1>>[CH3:1][C:2](=[O:3])[O:5][CH2:6]"
    "[CH3:7] 2-4;2-5",
    "[CH3:1][OH:2].[Na+:3]>>[CH3:1][O-:2].[Na+:3] 2-3",
    "not a reaction",
    "O->[Mg+2]<-O.CCBr>>CCO",
)


def test_every_line_is_a_graph_or_a_rejection(tmp_path):
    path = tmp_path / "reactions.txt"
    path.write_text("\n".join(LINES) + "\n")
    reactions, rows, unreadable = read_reaction_file(path)
    assert rows == [0, 1, 3] and unreadable["row"].tolist() == [2]
    assert [r.products for r in reactions[:2]] == [("CCOC(C)=O",), ("C[O-]", "[Na+]")]
    graphs, kept, rejected = load_reaction_graphs(path)
    assert kept == [0, 1] and [g.product_smiles for g in graphs] == ["CCOC(C)=O", "C[O-].[Na+]"]
    assert rejected["row"].tolist() == [2, 3]  # unparsable first, then not encodable
    assert list(rejected.columns) == ["row", "input", "reason", "file"]
    assert set(rejected["file"]) == {"reactions.txt"}
    assert rejected["reason"].iloc[1].startswith("graph: bond 0 has type DATIVE")
    assert len(load_reaction_graphs(path, limit=1)[0]) == 1


def test_reactions_to_predict_need_no_products():
    reaction = parse_input_reaction("CC(=O)Cl.OCC>c1ccncc1>")
    assert reaction.products == ()
    graphs, kept, rejected = encode_reactions([reaction], [7], with_product=False)
    assert kept == [7] and not rejected and graphs[0].product_smiles == ""


def test_length_buckets_cover_every_reaction_once_in_batches_of_similar_size():
    sizes = np.random.default_rng(0).integers(5, 100, size=230).tolist()
    sampler = LengthBucketSampler(sizes, batch_size=4, seed=0)
    first, second = list(sampler), list(sampler)
    assert len(first) == len(sampler) == 58
    for epoch in (first, second):
        assert sorted(i for batch in epoch for i in batch) == list(range(230))
    assert first != second  # a fresh order every epoch
    assert list(LengthBucketSampler(sizes, batch_size=4, seed=0)) == first  # seeded
    spread = np.mean([max(sizes[i] for i in b) - min(sizes[i] for i in b) for b in first])
    assert spread < 5  # random batches of 4 spread over about 50


def test_loader_batches_in_input_order_without_shuffle(tmp_path):
    path = tmp_path / "reactions.txt"
    path.write_text("\n".join(LINES[:2] * 3) + "\n")
    graphs, _, _ = load_reaction_graphs(path)
    vocabulary = TokenVocabulary.from_graphs(
        g for item in graphs for g in (*item.reactants, *item.reagents, item.product)
    )
    batches = list(reaction_loader(graphs, vocabulary, max_distance=8, batch_size=4))
    assert [b.batch_size for b in batches] == [4, 2]
    shuffled = list(reaction_loader(graphs, vocabulary, 8, batch_size=4, shuffle=True, seed=1))
    assert sum(b.batch_size for b in shuffled) == 6
    assert all(isinstance(b.label_targets, torch.Tensor) for b in shuffled)
