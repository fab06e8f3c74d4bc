"""Reaction data for reaction outcome prediction: files of reactions -> labelled graphs ->
batches of similar size.

Reactions (USPTO-MIT ``.txt`` lines, or any reaction SMILES ``reactants>reagents>products``)
become :class:`chemgraph.batches.reaction.ReactionGraphs`; reactions that cannot be read or
turned into graphs are reported in ``row, input, reason, file`` tables, never dropped silently.
:class:`LengthBucketSampler` and :func:`reaction_loader` batch them for training and
evaluation.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd
import torch
from torch.utils.data import DataLoader, Sampler

from chemgraph.batches.reaction import (
    ReactionGraphs,
    TokenVocabulary,
    reaction_batch,
    reaction_graphs,
)
from chemgraph.chem.graph_codec import GraphEncodingError
from chemgraph.chem.reactions import Reaction, parse_reaction_smiles
from chemgraph.data.datasets.base import rejected_frame
from chemgraph.data.datasets.uspto import read_uspto_mit

__all__ = [
    "LengthBucketSampler",
    "encode_reactions",
    "load_reaction_graphs",
    "parse_input_reaction",
    "reaction_loader",
    "read_reaction_file",
]


def read_reaction_file(
    path: str | Path, limit: int | None = None
) -> tuple[list[Reaction], list[int], pd.DataFrame]:
    """Reactions of a USPTO-MIT ``.txt`` (or one reaction SMILES a line; plain or gzip), of
    the first ``limit`` lines (None = all).

    Returns:
        ``(reactions, rows, rejected)``: parsed reactions, their 0-based line numbers, and the
        ``row, input, reason, file`` table of lines that could not be parsed.

    Raises:
        OSError: the file cannot be read.
    """
    table, rejected = read_uspto_mit(path, max_lines=limit)
    reactions = [
        Reaction(
            reactants=tuple(r.split(".")),
            reagents=tuple(g.split(".")) if g else (),
            products=tuple(p.split(".")),
            mapped=m,
        )
        for r, g, p, m in zip(table.reactants, table.reagents, table.products, table.reaction)
    ]
    return reactions, table["row"].tolist(), rejected


def parse_input_reaction(text: str) -> Reaction:
    """A reaction whose products may be missing (``"CC(=O)Cl.OCC>c1ccncc1>"``); text after
    the first whitespace is ignored.

    Raises:
        ReactionParseError: see :func:`chemgraph.chem.parse_reaction_smiles`.
    """
    return parse_reaction_smiles(text, allow_empty_products=True)


def encode_reactions(
    reactions: Sequence[Reaction], rows: Sequence[int], with_product: bool = True
) -> tuple[list[ReactionGraphs], list[int], list[tuple[int, str, str]]]:
    """Labelled graphs of each reaction; molecules the graphs cannot hold are reported.

    Args:
        reactions: parsed reactions.
        rows: their row numbers (reported with rejected reactions).
        with_product: encode the products too (False for reactions to predict).

    Returns:
        ``(graphs, kept_rows, rejected)`` with rejected ``(row, reaction SMILES, reason)``.
    """
    graphs, kept, rejected = [], [], []
    for row, reaction in zip(rows, reactions):
        try:
            graphs.append(reaction_graphs(reaction, with_product=with_product))
            kept.append(row)
        except (GraphEncodingError, ValueError) as error:
            rejected.append((row, reaction.to_smiles(), f"graph: {error}"))
    return graphs, kept, rejected


def load_reaction_graphs(
    path: str | Path, limit: int | None = None
) -> tuple[list[ReactionGraphs], list[int], pd.DataFrame]:
    """:func:`read_reaction_file`, then :func:`encode_reactions` with products.

    Returns:
        ``(graphs, rows, rejected)``: the graphs, their 0-based line numbers, and the
        ``row, input, reason, file`` table of every line that was not encoded (unparsable
        lines first, then reactions the graphs cannot hold).

    Raises:
        OSError: the file cannot be read.
    """
    reactions, rows, unreadable = read_reaction_file(path, limit)
    graphs, kept, bad = encode_reactions(reactions, rows)
    unencodable = rejected_frame(bad).assign(file=Path(path).name)
    return graphs, kept, pd.concat([unreadable, unencodable], ignore_index=True)


class LengthBucketSampler(Sampler):
    """Batches of reactions of similar size (less padding), in a fresh order every epoch.

    Each epoch, a permutation (seeded by ``seed`` + epoch) is cut into pools of 50 batches,
    each pool is sorted by size and cut into batches, and the batches are shuffled.

    Args:
        sizes: one size per reaction (e.g. input atoms + 2 × product atoms).
        batch_size: reactions per batch (the last batch of a pool may hold fewer).
        seed: seed of the first epoch's order.
    """

    def __init__(self, sizes: Sequence[int], batch_size: int, seed: int) -> None:
        self.sizes, self.batch_size, self.seed, self.epoch = list(sizes), batch_size, seed, 0

    def __len__(self) -> int:
        return -(-len(self.sizes) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.sizes), generator=generator).tolist()
        pool = 50 * self.batch_size
        batches = []
        for start in range(0, len(order), pool):
            part = sorted(order[start : start + pool], key=self.sizes.__getitem__)
            batches += [part[i : i + self.batch_size] for i in range(0, len(part), self.batch_size)]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index]


def reaction_loader(
    items: Sequence[ReactionGraphs],
    vocabulary: TokenVocabulary,
    max_distance: int,
    batch_size: int,
    shuffle: bool = False,
    num_workers: int = 0,
    seed: int = 0,
) -> DataLoader:
    """A DataLoader of :class:`chemgraph.batches.reaction.ReactionBatch` (collated in the
    workers).

    Args:
        items: reactions as graphs (with products, for training and validation).
        vocabulary: the token vocabulary of the model.
        max_distance: the encoder's distance buckets (``GRATTranslatorConfig.max_distance``).
        batch_size: reactions per batch.
        shuffle: batches of similar size in a fresh order each epoch
            (:class:`LengthBucketSampler`); False = input order.
        num_workers: DataLoader worker processes.
        seed: seed of the shuffled order.
    """
    collate = functools.partial(reaction_batch, vocabulary=vocabulary, max_distance=max_distance)
    if shuffle:
        sizes = [item.num_input_atoms + 2 * item.product.num_atoms for item in items]
        batching = {"batch_sampler": LengthBucketSampler(sizes, batch_size, seed)}
    else:
        batching = {"batch_size": batch_size}
    return DataLoader(
        items, collate_fn=collate, num_workers=num_workers,
        pin_memory=torch.cuda.is_available(), persistent_workers=num_workers > 0, **batching,
    )  # fmt: skip
