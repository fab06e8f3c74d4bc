"""Reaction batches for GRAT's graph-to-graph translation (Yoo et al. 2020, sections 3.2 and 4.2).

A reaction becomes two token sequences:

* encoder: for each reactant, then each reagent molecule, a delimiter token (``<REACTANT>`` or
  ``<REAGENT>``) followed by the molecule's atoms in canonical order; the delimiter is joined to
  its atoms by the ``DELIMITER`` edge type (Yoo et al. 2020, Appendix B: "connected to all other
  atom nodes by an additional virtual edge type"); atoms of a molecule carry their bond classes and
  topological distances, every other pair is ``NO_BOND`` at the "far" distance bucket.
* decoder (Figure 1), for a product graph of ``n`` atoms ``x_0 … x_{n-1}``, interleaved in
  generation order::

      index:   0          1    2    3    4   …  2n-1      2n       2n+1
      token:   <PRODUCT>  G_0  x_0  G_1  x_1 …  G_{n-1}   x_{n-1}  G_n

  ``G_t`` (the ``<G>`` token, generation path) predicts the label of ``x_t`` (``<EOG>`` for
  ``t = n``) and its bonds to ``x_0 … x_{t-1}``; ``x_t`` (encoding path) is the generated atom,
  encoded from step ``t + 1`` on. Edge types: bond classes between atoms (``NO_BOND`` when not
  bonded), ``VIRTUAL`` (v) from ``G_t`` to the earlier atoms, ``SELF`` (s) on the diagonal,
  ``DELIMITER`` between ``<PRODUCT>`` and the rest.

The masking matrix (:func:`generation_mask`) lets every step run in parallel under teacher
forcing: a token sees only earlier tokens and itself, and never an earlier ``<G>``. The decoder
does not attend across "no bond" (Yoo et al. 2020, Appendix B), so
:attr:`ReactionBatch.decoder_mask` is the masking matrix AND "not ``NO_BOND``" AND not padding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from chemgraph.batches.base import TensorBatch
from chemgraph.chem.graph_codec import (
    BOND_CLASSES,
    NO_BOND,
    LabelledGraph,
    graph_to_smiles,
    smiles_to_graph_labels,
)
from chemgraph.chem.reactions import Reaction

__all__ = [
    "BOND_ORDER_HALVES",
    "DELIMITER",
    "IGNORE_INDEX",
    "MAX_VALENCE_TABLE",
    "NUM_EDGE_TYPES",
    "SELF",
    "SPECIAL_TOKENS",
    "VIRTUAL",
    "ReactionBatch",
    "ReactionGraphs",
    "TokenVocabulary",
    "generation_mask",
    "observed_valences",
    "reaction_batch",
    "reaction_graphs",
]

NUM_BOND_CLASSES = len(BOND_CLASSES)
DELIMITER, VIRTUAL, SELF = NUM_BOND_CLASSES, NUM_BOND_CLASSES + 1, NUM_BOND_CLASSES + 2
NUM_EDGE_TYPES = NUM_BOND_CLASSES + 3
"""Edge types: 0 no bond, 1-6 the bond classes of :data:`chemgraph.chem.graph_codec.BOND_CLASSES`,
7 ``DELIMITER`` (delimiter token <-> its atoms), 8 ``VIRTUAL`` (``<G>`` -> earlier atoms), 9
``SELF``."""

BOND_ORDER_HALVES = (0, 2, 4, 6, 3, 4, 4)
"""Bond order of each bond class (:data:`chemgraph.chem.graph_codec.BOND_CLASSES`) in half
bonds: none 0, single 2, double 4, triple 6, aromatic 3, double cis/trans 4."""

IGNORE_INDEX = -100
"""Target value of padded or undefined label/edge targets (``cross_entropy``'s default)."""

SPECIAL_TOKENS = ("<PAD>", "<UNK>", "<CLS>", "<REACTANT>", "<REAGENT>", "<PRODUCT>", "<G>", "<EOG>")
"""The first entries of every :class:`TokenVocabulary`, in this order (``<PAD>`` = 0)."""


class TokenVocabulary:
    """Node tokens: the special tokens, then atom labels (:attr:`AtomLabel.token`, ``"[cH]"``).

    Args:
        atom_tokens: atom-label tokens, e.g. from :meth:`from_graphs`; duplicates and special
            tokens are dropped, order kept.

    Attributes:
        tokens: all tokens, index = token id; saved in checkpoints (a list of str).
    """

    def __init__(self, atom_tokens: Iterable[str]) -> None:
        tokens = list(SPECIAL_TOKENS)
        seen = set(tokens)
        for token in atom_tokens:
            if token not in seen:
                seen.add(token)
                tokens.append(token)
        self.tokens = tokens
        self.index = {token: i for i, token in enumerate(tokens)}

    @classmethod
    def from_graphs(cls, graphs: Iterable[LabelledGraph], min_count: int = 1) -> TokenVocabulary:
        """Atom labels seen at least ``min_count`` times, most frequent first (ties by token)."""
        counts: dict[str, int] = {}
        for graph in graphs:
            for atom in graph.atoms:
                counts[atom.token] = counts.get(atom.token, 0) + 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return cls(token for token, count in ranked if count >= min_count)

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, token: str) -> int:
        """Id of ``token``; ``<UNK>`` for an atom label outside the vocabulary."""
        return self.index.get(token, self.index["<UNK>"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenVocabulary) and self.tokens == other.tokens


@dataclass(frozen=True)
class ReactionGraphs:
    """The labelled graphs of one reaction (what the collate turns into tensors).

    Attributes:
        reactants, reagents: one :class:`LabelledGraph` per molecule.
        product: all product molecules as one graph (one component each), atoms in the
            canonical order of the joined product SMILES; ``None`` at prediction time.
        product_smiles: canonical SMILES of the joined products (``""`` when unknown).
    """

    reactants: tuple[LabelledGraph, ...]
    reagents: tuple[LabelledGraph, ...]
    product: LabelledGraph | None
    product_smiles: str = ""

    @property
    def num_input_atoms(self) -> int:
        return sum(g.num_atoms for g in self.reactants + self.reagents)


def reaction_graphs(reaction: Reaction, with_product: bool = True) -> ReactionGraphs:
    """The labelled graphs of a parsed reaction.

    Args:
        reaction: from :func:`chemgraph.chem.parse_reaction_smiles` (canonical SMILES fields).
        with_product: also encode the products (training, evaluation); False for prediction.

    Raises:
        chemgraph.chem.graph_codec.GraphEncodingError: a molecule the graph cannot represent.
    """
    product, product_smiles = None, ""
    if with_product:
        product = smiles_to_graph_labels(".".join(reaction.products))
        product_smiles = graph_to_smiles(product)
    return ReactionGraphs(
        reactants=tuple(smiles_to_graph_labels(s) for s in reaction.reactants),
        reagents=tuple(smiles_to_graph_labels(s) for s in reaction.reagents),
        product=product,
        product_smiles=product_smiles,
    )


MAX_VALENCE_TABLE = 32
"""Columns of :func:`observed_valences`: bond-order sums 0 … 31 half bonds."""


def observed_valences(
    graphs: Iterable[LabelledGraph], vocabulary: TokenVocabulary
) -> list[list[int]]:
    """Per token id, the bond-order sums (half bonds, :data:`BOND_ORDER_HALVES`) its atoms have
    in ``graphs``: the valences a decoded atom with that label may end with.

    An atom label fixes element, charge, hydrogens and aromaticity, so the bonds an atom of
    that label has in complete molecules (reactants, reagents and products of the training
    reactions) are what beam search allows it (:func:`chemgraph.models.grat.beam_search.
    beam_search_graphs`). Special tokens and labels not seen get ``[]``.

    Returns:
        ``list[list[int]]`` of ``len(vocabulary)`` sorted lists, values in
        ``[0, MAX_VALENCE_TABLE)`` (larger sums are left out).
    """
    seen: list[set[int]] = [set() for _ in range(len(vocabulary))]
    for graph in graphs:
        totals = [0] * graph.num_atoms
        for i, j, bond_class in graph.bonds:
            totals[i] += BOND_ORDER_HALVES[bond_class]
            totals[j] += BOND_ORDER_HALVES[bond_class]
        for atom, total in zip(graph.atoms, totals):
            if total < MAX_VALENCE_TABLE:
                seen[vocabulary[atom.token]].add(total)
    seen[vocabulary["<UNK>"]] = set()
    return [sorted(values) for values in seen]


def generation_mask(num_nodes: int) -> torch.Tensor:
    """GRAT's masking matrix (Yoo et al. 2020, Figure 1, bottom right) for ``num_nodes`` atoms.

    Over the ``2·num_nodes + 2`` decoder tokens ``<PRODUCT>, G_0, x_0, …, x_{n-1}, G_n`` (see the
    module docstring): ``mask[q, k]`` is True when token ``q`` may attend to token ``k``, i.e.
    ``k <= q`` (no future context) and ``k`` is not a ``<G>`` token other than ``q`` itself.

    Returns:
        ``bool [2n+2, 2n+2]``.
    """
    length = 2 * num_nodes + 2
    index = torch.arange(length)
    is_generation = (index % 2 == 1).unsqueeze(0)  # G_t sits at odd indices
    causal = index.unsqueeze(1) >= index.unsqueeze(0)
    return causal & (~is_generation | torch.eye(length, dtype=torch.bool))


@dataclass
class ReactionBatch(TensorBatch):
    """Padded encoder and decoder inputs and targets of ``B`` reactions.

    ``L_e``: longest encoder sequence; ``M``: most product atoms + 1; ``L_d = 2M``.

    Attributes:
        encoder_tokens: ``int64 [B, L_e]`` token ids (:class:`TokenVocabulary`); 0 at padding.
        encoder_positions: ``int64 [B, L_e]`` 0 for a delimiter, ``k + 1`` for a molecule's
            ``k``-th atom (canonical order), 0 at padding.
        encoder_edge_type: ``int64 [B, L_e, L_e]`` edge types (:data:`NUM_EDGE_TYPES`).
        encoder_distance: ``int64 [B, L_e, L_e]`` topological distance in bonds between atoms
            of one molecule, clipped at ``D`` = ``max_distance``; ``D`` for every other pair.
        pad_mask: ``bool [B, L_e]`` real encoder tokens.
        decoder_tokens: ``int64 [B, L_d]`` (teacher forcing: the true atoms); 0 at padding.
        decoder_positions: ``int64 [B, L_d]`` ``<PRODUCT>`` 0; ``G_t`` and ``x_t`` ``t + 1``.
        decoder_edge_type: ``int64 [B, L_d, L_d]``.
        decoder_mask: ``bool [B, L_d, L_d]`` which decoder tokens each token attends to.
        decoder_pad_mask: ``bool [B, L_d]`` real decoder tokens.
        label_targets: ``int64 [B, M]`` token id of ``x_t`` (``<EOG>`` at ``t = n``) predicted by
            ``G_t``; :data:`IGNORE_INDEX` after ``n``.
        edge_targets: ``int64 [B, M, M - 1]`` ``[t, j]``: bond class (0-6) between ``x_t`` and
            ``x_j`` for ``j < t < n``; :data:`IGNORE_INDEX` elsewhere.
        num_input_atoms: ``int64 [B]`` atoms in the encoder (a bound for decoding).
    """

    encoder_tokens: torch.Tensor
    encoder_positions: torch.Tensor
    encoder_edge_type: torch.Tensor
    encoder_distance: torch.Tensor
    pad_mask: torch.Tensor
    decoder_tokens: torch.Tensor
    decoder_positions: torch.Tensor
    decoder_edge_type: torch.Tensor
    decoder_mask: torch.Tensor
    decoder_pad_mask: torch.Tensor
    label_targets: torch.Tensor
    edge_targets: torch.Tensor
    num_input_atoms: torch.Tensor


def _distances(graph: LabelledGraph, max_distance: int) -> np.ndarray:
    """Topological distances ``int64 [n, n]`` clipped at ``max_distance`` (also unreachable)."""
    n = graph.num_atoms
    if not graph.bonds:
        out = np.full((n, n), max_distance, dtype=np.int64)
        np.fill_diagonal(out, 0)
        return out
    i, j, _ = np.array(graph.bonds).T
    adjacency = csr_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
    hops = shortest_path(adjacency, directed=False, unweighted=True)
    return np.where(np.isfinite(hops), np.minimum(hops, max_distance), max_distance).astype(
        np.int64
    )


def _encoder_arrays(item: ReactionGraphs, vocabulary: TokenVocabulary, max_distance: int):
    molecules = [("<REACTANT>", g) for g in item.reactants]
    molecules += [("<REAGENT>", g) for g in item.reagents]
    length = sum(1 + g.num_atoms for _, g in molecules)
    tokens = np.zeros(length, dtype=np.int64)
    positions = np.zeros(length, dtype=np.int64)
    edge_type = np.full((length, length), NO_BOND, dtype=np.int64)
    distance = np.full((length, length), max_distance, dtype=np.int64)
    start = 0
    for delimiter, graph in molecules:
        n = graph.num_atoms
        atoms = slice(start + 1, start + 1 + n)
        tokens[start] = vocabulary[delimiter]
        tokens[atoms] = [vocabulary[a.token] for a in graph.atoms]
        positions[atoms] = np.arange(1, n + 1)
        edge_type[start, atoms] = edge_type[atoms, start] = DELIMITER
        edge_type[atoms, atoms] = np.array(graph.bond_matrix(), dtype=np.int64).reshape(n, n)
        distance[atoms, atoms] = _distances(graph, max_distance)
        start += 1 + n
    np.fill_diagonal(edge_type, SELF)
    return tokens, positions, edge_type, distance


def _decoder_arrays(graph: LabelledGraph, vocabulary: TokenVocabulary):
    n = graph.num_atoms
    length = 2 * n + 2
    tokens = np.zeros(length, dtype=np.int64)
    positions = np.zeros(length, dtype=np.int64)
    tokens[0] = vocabulary["<PRODUCT>"]
    tokens[1::2] = vocabulary["<G>"]
    tokens[2::2] = [vocabulary[a.token] for a in graph.atoms]
    positions[1::2] = np.arange(1, n + 2)
    positions[2::2] = np.arange(1, n + 1)
    bonds = np.array(graph.bond_matrix(), dtype=np.int64).reshape(n, n)
    edge_type = np.full((length, length), NO_BOND, dtype=np.int64)
    atom_index = np.arange(2, length, 2)
    edge_type[np.ix_(atom_index, atom_index)] = bonds
    generation_index = np.arange(1, length, 2)  # G_t at 1 + 2t sees x_j (j < t) via VIRTUAL
    earlier = generation_index[:, None] > atom_index[None, :]
    edge_type[np.ix_(generation_index, atom_index)] = np.where(earlier, VIRTUAL, NO_BOND)
    edge_type[0, 1:] = edge_type[1:, 0] = DELIMITER
    np.fill_diagonal(edge_type, SELF)
    labels = np.array([vocabulary[a.token] for a in graph.atoms] + [vocabulary["<EOG>"]])
    edges = np.where(np.tril(np.ones((n, n), dtype=bool), -1), bonds, IGNORE_INDEX)
    return tokens, positions, edge_type, labels, edges


def _pad(arrays: Sequence[np.ndarray], shape: tuple[int, ...], fill: int) -> torch.Tensor:
    out = np.full((len(arrays), *shape), fill, dtype=np.int64)
    for k, array in enumerate(arrays):
        out[(k, *(slice(0, size) for size in array.shape))] = array
    return torch.from_numpy(out)


def reaction_batch(
    items: Sequence[ReactionGraphs], vocabulary: TokenVocabulary, max_distance: int = 8
) -> ReactionBatch:
    """Collate reactions into a :class:`ReactionBatch`.

    Args:
        items: reactions; items without a product graph (prediction) get a decoder of zero
            atoms (``<PRODUCT>``, ``G_0``) and ignored targets.
        vocabulary: token ids.
        max_distance: ``D``, the distance bucket of far and unrelated pairs.

    Returns:
        The padded batch; every pair table is per reaction (reactions never see each other).
    """
    encoders = [_encoder_arrays(item, vocabulary, max_distance) for item in items]
    empty = LabelledGraph(atoms=(), bonds=())
    decoders = [_decoder_arrays(item.product or empty, vocabulary) for item in items]
    length_e = max(len(e[0]) for e in encoders)
    length_d = max(len(d[0]) for d in decoders)
    m = length_d // 2
    decoder_pad = _pad([np.ones(len(d[0]), dtype=np.int64) for d in decoders], (length_d,), 0)
    decoder_edge_type = _pad([d[2] for d in decoders], (length_d, length_d), NO_BOND)
    structure = generation_mask(m - 1)
    decoder_mask = (
        structure & (decoder_edge_type != NO_BOND) & decoder_pad.bool().unsqueeze(1)
    ) & decoder_pad.bool().unsqueeze(2)
    edge_targets = _pad([d[4] for d in decoders], (m, m - 1), IGNORE_INDEX)
    return ReactionBatch(
        encoder_tokens=_pad([e[0] for e in encoders], (length_e,), 0),
        encoder_positions=_pad([e[1] for e in encoders], (length_e,), 0),
        encoder_edge_type=_pad([e[2] for e in encoders], (length_e, length_e), NO_BOND),
        encoder_distance=_pad([e[3] for e in encoders], (length_e, length_e), max_distance),
        pad_mask=_pad(
            [np.ones(len(e[0]), dtype=np.int64) for e in encoders], (length_e,), 0
        ).bool(),
        decoder_tokens=_pad([d[0] for d in decoders], (length_d,), 0),
        decoder_positions=_pad([d[1] for d in decoders], (length_d,), 0),
        decoder_edge_type=decoder_edge_type,
        decoder_mask=decoder_mask,
        decoder_pad_mask=decoder_pad.bool(),
        label_targets=_pad(
            [
                d[3] if item.product is not None else np.array([], dtype=np.int64)
                for d, item in zip(decoders, items)
            ],
            (m,),
            IGNORE_INDEX,
        ),  # fmt: skip
        edge_targets=edge_targets,
        num_input_atoms=torch.tensor([item.num_input_atoms for item in items], dtype=torch.int64),
    )
