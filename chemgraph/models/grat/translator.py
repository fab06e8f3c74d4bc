"""GRAT graph-to-graph translation: an encoder and an auto-regressive two-path graph decoder.

Reference: S. Yoo, Y.-S. Kim, K. H. Lee, K. Jeong, J. Choi, H. Lee, Y. S. Choi (2020),
"Graph-Aware Transformer: Is Attention All Graphs Need?", https://arxiv.org/abs/2006.05213.

Section 3.2, Figure 1 and Appendix B. The decoder runs the two paths of every step at once over
the interleaved sequence of :mod:`chemgraph.batches.reaction` with its masking matrix (teacher
forcing); the generation path ``G_t`` gives the node label ``f_l(h'_t)`` (eq. 4) and the bonds
``f_e(f_p(h'_t), f_p(h_j))`` to every earlier atom (eq. 5); decoder attention skips "no bond"
pairs (Appendix B). Atoms carry sinusoidal positions (the reaction model orders atoms
canonically, Appendix B). :meth:`GRATTranslator.step` decodes step by step with cached keys and
values: the encoding path of a step computes only the newest atom (the paper's reuse of
``h_0 … h_{t-1}``); :meth:`GRATTranslator.beam_search` searches with it
(:mod:`chemgraph.models.grat.beam_search`).

Two additions to the paper's bond head, both options of :class:`GRATTranslatorConfig` and on by
default (:data:`LEGACY_OPTIONS` turns them off; the measured effect is in
``recipes/reaction_outcome/README.md``):

* ``bond_scoring = "additive+bilinear"``: besides ``f_e``'s ``GELU(left + right)``, each bond
  class scores an atom pair by a query-key product of the two projected states, so the head
  can tell one earlier atom from a similar one (an additive score cannot rank ``j`` by how
  well it matches ``t``).
* ``atom_valence_state``: an earlier atom ``x_j`` is encoded once, at step ``j + 1``, and never
  sees the bonds made to it afterwards. The bond head therefore also gets, for every pair
  ``(t, j)``, ``x_j``'s degree and bond-order sum over the bonds to ``x_0 … x_{t-1}``
  (:func:`bonds_made_so_far`): what it needs to know how much valence ``x_j`` has left when a
  ring is closed or a branch returns. The same counts are kept step by step in the
  :class:`DecoderCache`, so teacher forcing and step decoding agree.

The token embedding starts at standard deviation ``d^-½`` before its ``√d`` scaling, so tokens
and positions start at the same scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.batches.reaction import (
    BOND_ORDER_HALVES,
    DELIMITER,
    NUM_BOND_CLASSES,
    NUM_EDGE_TYPES,
    SELF,
    SPECIAL_TOKENS,
    VIRTUAL,
    ReactionBatch,
)
from chemgraph.chem.graph_codec import NO_BOND
from chemgraph.models.config import ModelConfig
from chemgraph.models.grat.beam_search import GraphHypothesis, ValenceRules, beam_search_graphs
from chemgraph.models.grat.layers import GRATStack, check_grat_config

__all__ = [
    "LEGACY_OPTIONS",
    "DecoderCache",
    "GRATTranslator",
    "GRATTranslatorConfig",
    "bonds_made_so_far",
    "sinusoidal_encoding",
]

MAX_DEGREE = 8
"""Degrees above this share the last degree embedding."""
MAX_VALENCE_HALVES = 16
"""Bond-order sums (in half bonds) above this share the last valence embedding."""
BOND_SCORING = ("additive", "additive+bilinear")

LEGACY_OPTIONS = {"bond_scoring": "additive", "atom_valence_state": False}
"""The bond head of checkpoints written before these options existed (the paper's ``f_e``)."""


def bonds_made_so_far(bonds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Degree and bond-order sum of each earlier atom at each generation step.

    Args:
        bonds: ``int64 [R, n, n]`` bond classes among the atoms ``x_0 … x_{n-1}`` (symmetric
            or lower-triangular; values ``>= NUM_BOND_CLASSES``, e.g. ``SELF`` on a diagonal,
            count as no bond).

    Returns:
        ``degree, valence: int64 [R, n + 1, n]``: at ``[r, t, j]`` the number of bonds and the
        bond-order sum in half bonds (:data:`chemgraph.batches.reaction.BOND_ORDER_HALVES`:
        single 2, aromatic 3, double 4, triple 6) of ``x_j`` to ``x_0 … x_{t-1}``.
    """
    lower = torch.tril(torch.where(bonds < NUM_BOND_CLASSES, bonds, NO_BOND), diagonal=-1)
    symmetric = lower + lower.transpose(1, 2)
    halves = torch.tensor(BOND_ORDER_HALVES, device=bonds.device)[symmetric]
    counts = torch.stack([(symmetric != NO_BOND).long(), halves], dim=0).cumsum(dim=2)
    counts = F.pad(counts, (0, 0, 1, 0))  # step t counts the bonds to atoms before t
    return counts[0], counts[1]


def sinusoidal_encoding(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Transformer positional encoding (Vaswani et al. 2017, section 3.5).

    Shapes: ``positions: int64 [...]`` -> ``float32 [..., dim]`` (``dim`` even).
    """
    half = torch.arange(dim // 2, device=positions.device, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * 2 * half / dim)
    angle = positions.float().unsqueeze(-1) * frequency
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


@dataclass
class GRATTranslatorConfig(ModelConfig):
    """GRAT encoder-decoder for reaction outcome prediction (Yoo et al. 2020, section 4.2).

    Paper (Appendix B): 24 + 24 layers, 8 heads, width 128, MLP 256, ``f_a`` hidden 32, beam 8.

    Attributes:
        vocab_size: tokens of the :class:`chemgraph.batches.reaction.TokenVocabulary`.
        max_distance: ``D`` of the encoder's distance buckets (``0 … D``).
        hidden_dim, num_heads: width and heads of encoder and decoder.
        encoder_layers, decoder_layers: blocks.
        mlp_hidden_multiplier: MLP width = multiplier × ``hidden_dim`` (paper: 2).
        edge_hidden: ``f_a`` hidden width.
        projection_dim: width of ``f_p`` (the edge head's node projection) and of the hidden
            layer of ``f_e``.
        neighbour_only: encoder atoms attend only to bonded atoms, themselves and their
            delimiter (the paper's encoder attends to all pairs).
        dropout: dropout in attention weights, after attention and in MLPs.
        bond_scoring: ``"additive"`` (the paper's ``f_e`` on ``f_p(h'_t)`` and ``f_p(h_j)``)
            or ``"additive+bilinear"`` (plus a query-key product per bond class; module
            docstring).
        atom_valence_state: the bond head also sees each earlier atom's degree and bond-order
            sum so far (module docstring; not in the paper).
        edge_conditioning: ``"per_pair"`` (one ``(γ, β)`` per atom pair and layer, eq. 2) or
            ``"per_head"``; :class:`chemgraph.models.grat.EdgeConditioning`.
    """

    vocab_size: int
    max_distance: int = 8
    hidden_dim: int = 128
    num_heads: int = 8
    encoder_layers: int = 6
    decoder_layers: int = 6
    mlp_hidden_multiplier: int = 2
    edge_hidden: int = 32
    projection_dim: int = 64
    neighbour_only: bool = False
    dropout: float = 0.1
    bond_scoring: str = "additive+bilinear"
    atom_valence_state: bool = True
    edge_conditioning: str = "per_pair"

    def __post_init__(self) -> None:
        check_grat_config(
            self,
            ("vocab_size", "max_distance", "hidden_dim", "num_heads", "encoder_layers",
             "decoder_layers", "mlp_hidden_multiplier", "edge_hidden", "projection_dim"),
        )  # fmt: skip
        if self.bond_scoring not in BOND_SCORING:
            raise ValueError(f"bond_scoring {self.bond_scoring!r} is not one of {BOND_SCORING}")


@dataclass
class DecoderCache:
    """What step decoding keeps per row (a reaction, or a beam-search hypothesis).

    Attributes:
        memory: per decoder layer, the cross-attention keys and values of the encoder output,
            ``float32 [R, H, L_e, d/H]`` each.
        memory_mask: ``bool [R, 1, L_e]`` real encoder tokens.
        keys, values: per decoder layer, the self-attention keys and values of ``<PRODUCT>``
            and the decoded atoms, ``float32 [R, H, T, d/H]``; None before ``<PRODUCT>``.
        node_states: final decoder states of ``x_0 … x_{t-1}``, ``float32 [R, t, d]``; None
            before step 1.
        degree, valence: ``int64 [R, t]`` bonds and bond-order sum (half bonds) of
            ``x_0 … x_{t-1}`` among themselves (:func:`bonds_made_so_far`); None before step 1.
    """

    memory: list[tuple[torch.Tensor, torch.Tensor]]
    memory_mask: torch.Tensor
    keys: list[torch.Tensor | None] = field(init=False)
    values: list[torch.Tensor | None] = field(init=False)
    node_states: torch.Tensor | None = None
    degree: torch.Tensor | None = None
    valence: torch.Tensor | None = None

    def __post_init__(self) -> None:
        self.keys = [None] * len(self.memory)
        self.values = [None] * len(self.memory)

    def select(self, rows: torch.Tensor) -> None:
        """Keep (and reorder, repeat) rows: beam-search reordering."""
        self.memory = [(k[rows], v[rows]) for k, v in self.memory]
        self.memory_mask = self.memory_mask[rows]
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        if self.node_states is not None:
            self.node_states = self.node_states[rows]
            self.degree, self.valence = self.degree[rows], self.valence[rows]

    def add_atom(self, state: torch.Tensor, bonds: torch.Tensor) -> None:
        """Append ``x_{t-1}``: its final state ``float32 [R, 1, d]`` and its bond classes
        ``int64 [R, t - 1]`` to ``x_0 … x_{t-2}`` (which gain them in their counts)."""
        bonded = (bonds != NO_BOND).long()
        halves = torch.tensor(BOND_ORDER_HALVES, device=bonds.device)[bonds]
        degree, valence = bonded.sum(1, keepdim=True), halves.sum(1, keepdim=True)
        if self.node_states is None:
            self.node_states, self.degree, self.valence = state, degree, valence
            return
        self.node_states = torch.cat([self.node_states, state], 1)
        self.degree = torch.cat([self.degree + bonded, degree], 1)
        self.valence = torch.cat([self.valence + halves, valence], 1)


class GRATTranslator(nn.Module):
    """GRAT graph-to-graph translation: reactants and reagents -> product graph.

    Args:
        config: the :class:`GRATTranslatorConfig`.

    Shapes (:meth:`forward`: teacher forcing, all steps in parallel):
        - input: :class:`ReactionBatch` (encoder and decoder fields; ``L_e`` encoder tokens,
          ``M`` = most product atoms + 1, ``L_d = 2M`` decoder tokens).
        - output: ``label_logits: float32 [B, M, V]`` (the label of ``x_t`` or ``<EOG>``, from
          ``G_t``) and ``edge_logits: float32 [B, M, M - 1, C]`` (bond class of
          ``x_t``–``x_j``, ``C`` = :data:`NUM_BOND_CLASSES`, meaningful for ``j < t``).
    """

    def __init__(self, config: GRATTranslatorConfig) -> None:
        super().__init__()
        self.config = config
        d = config.hidden_dim
        mlp_hidden = config.mlp_hidden_multiplier * d
        self.token_embedding = nn.Embedding(config.vocab_size, d, padding_idx=0)
        # × √d in _embed: token vectors then have unit-scale entries, as the positions do
        # (std 1 before scaling would swamp the positions and make all <G> states alike)
        nn.init.normal_(self.token_embedding.weight, std=d**-0.5)
        with torch.no_grad():
            self.token_embedding.weight[0].zero_()
        self.encoder = GRATStack(
            d, config.num_heads, config.encoder_layers, mlp_hidden, NUM_EDGE_TYPES,
            config.max_distance + 1, config.edge_hidden, config.dropout, cross_attention=False,
            per_head=config.edge_conditioning == "per_head",
        )  # fmt: skip
        self.decoder = GRATStack(
            d, config.num_heads, config.decoder_layers, mlp_hidden, NUM_EDGE_TYPES, 0,
            config.edge_hidden, config.dropout, cross_attention=True,
            per_head=config.edge_conditioning == "per_head",
        )  # fmt: skip
        self.label_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, config.vocab_size))
        self.projection = nn.Linear(d, config.projection_dim)  # f_p
        # f_e(f_p(h'_t), f_p(h_j)): its first layer on the concatenation, split in two halves
        p = config.projection_dim
        self.edge_generation = nn.Linear(p, p)
        self.edge_node = nn.Linear(p, p, bias=False)
        self.edge_out = nn.Linear(p, NUM_BOND_CLASSES)
        self.edge_query = self.edge_key = self.degree_embedding = self.valence_embedding = None
        if config.bond_scoring == "additive+bilinear":
            self.edge_query = nn.Linear(p, NUM_BOND_CLASSES * p)
            self.edge_key = nn.Linear(p, NUM_BOND_CLASSES * p, bias=False)
        if config.atom_valence_state:
            self.degree_embedding = nn.Embedding(MAX_DEGREE + 1, p)
            self.valence_embedding = nn.Embedding(MAX_VALENCE_HALVES + 1, p)

    def _embed(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = self.token_embedding(tokens) * math.sqrt(self.config.hidden_dim)
        return x + sinusoidal_encoding(positions, self.config.hidden_dim).to(x.dtype)

    def encode(self, batch: ReactionBatch) -> torch.Tensor:
        """Encoder states ``float32 [B, L_e, d]`` (zero at padding)."""
        keep = batch.pad_mask
        mask = keep.unsqueeze(1) & keep.unsqueeze(2)
        if self.config.neighbour_only:
            mask = mask & (batch.encoder_edge_type != NO_BOND)
        x = self._embed(batch.encoder_tokens, batch.encoder_positions)
        x = torch.where(keep.unsqueeze(-1), x, 0.0)
        return self.encoder(
            x, mask=mask, edge_type=batch.encoder_edge_type, distance=batch.encoder_distance,
            keep=keep,
        )  # fmt: skip

    def edge_logits(
        self,
        generation: torch.Tensor,
        nodes: torch.Tensor,
        degree: torch.Tensor | None = None,
        valence: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Bond-class logits of every (generation step, earlier atom) pair.

        Args:
            generation: ``h'_t``, ``float32 [R, M, d]``.
            nodes: ``h_j``, ``float32 [R, N, d]``.
            degree, valence: ``int64 [R, M, N]`` bonds and bond-order sum (half bonds) of
                ``x_j`` before step ``t`` (:func:`bonds_made_so_far`); needed when
                ``atom_valence_state``.

        Returns:
            ``float32 [R, M, N, C]``: ``f_e(f_p(h'_t), f_p(h_j))`` (eq. 5), plus the module
            docstring's additions when configured.
        """
        query, key = self.projection(generation), self.projection(nodes)
        left = self.edge_generation(query).unsqueeze(2)
        right = self.edge_node(key).unsqueeze(1)
        if self.degree_embedding is not None:
            degree, valence = degree.clamp(max=MAX_DEGREE), valence.clamp(max=MAX_VALENCE_HALVES)
            right = right + self.degree_embedding(degree) + self.valence_embedding(valence)
        logits = self.edge_out(F.gelu(left + right))
        if self.edge_query is None:
            return logits
        r, m, p = query.shape
        n = key.shape[1]
        per_class_query = self.edge_query(query).view(r, m, NUM_BOND_CLASSES, p)
        per_class_key = self.edge_key(key).view(r, n, NUM_BOND_CLASSES, p)
        return logits + torch.einsum("rmcp,rncp->rmnc", per_class_query, per_class_key) * p**-0.5

    def forward(self, batch: ReactionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        memory = self.encode(batch)
        x = self._embed(batch.decoder_tokens, batch.decoder_positions)
        keep = batch.decoder_pad_mask
        x = torch.where(keep.unsqueeze(-1), x, 0.0)
        h = self.decoder(
            x, mask=batch.decoder_mask, edge_type=batch.decoder_edge_type, keep=keep,
            memory=memory, memory_mask=batch.pad_mask.unsqueeze(1),
        )  # fmt: skip
        generation, nodes = h[:, 1::2], h[:, 2::2]
        degree, valence = bonds_made_so_far(batch.decoder_edge_type[:, 2::2, 2::2])
        return self.label_head(generation), self.edge_logits(generation, nodes, degree, valence)

    # ------------------------------------------------------------------ step decoding

    def start(self, batch: ReactionBatch) -> DecoderCache:
        """Encode and process ``<PRODUCT>``: the cache before step 0 (one row per reaction)."""
        memory = self.encode(batch)
        layers = self.decoder.layers
        cache = DecoderCache([layer.memory(memory) for layer in layers], batch.pad_mask[:, None])
        rows = memory.shape[0]
        device = memory.device
        product = torch.full((rows, 1), SPECIAL_TOKENS.index("<PRODUCT>"), device=device)
        x = self._embed(product, torch.zeros_like(product))
        edge_type = torch.full((rows, 1, 1), SELF, device=device)
        self._advance(cache, x, edge_type, num_cached=1)
        return cache

    def _advance(
        self, cache: DecoderCache, x: torch.Tensor, edge_type: torch.Tensor, num_cached: int
    ) -> torch.Tensor:
        """Run ``k`` new tokens ``x: [R, k, d]`` whose rows of the edge matrix over the cached
        tokens and themselves are ``edge_type: [R, k, T + k]``; cache the first ``num_cached``
        new tokens. Returns their final states ``[R, k, d]``."""
        mask = edge_type != NO_BOND
        for number, layer, gamma, beta in self.decoder.conditioned_layers(edge_type):
            past = None
            if cache.keys[number] is not None:
                past = (cache.keys[number], cache.values[number])
            x, (key, value) = layer(
                x, mask=mask, gamma=gamma, beta=beta, past=past,
                memory_kv=cache.memory[number], memory_mask=cache.memory_mask,
            )  # fmt: skip
            key, value = key[:, :, :num_cached], value[:, :, :num_cached]
            if past is not None:
                key, value = torch.cat([past[0], key], 2), torch.cat([past[1], value], 2)
            cache.keys[number], cache.values[number] = key, value
        return self.decoder.norm(x)

    def step(
        self,
        cache: DecoderCache,
        step: int,
        previous_label: torch.Tensor | None = None,
        previous_bonds: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Decoding step ``t``: encode ``x_{t-1}`` (encoding path) and run ``G_t`` (generation).

        Args:
            cache: from :meth:`start`, advanced by the earlier steps.
            step: ``t`` (0 first).
            previous_label: ``int64 [R]`` token of ``x_{t-1}`` (None at ``t = 0``).
            previous_bonds: ``int64 [R, t - 1]`` bond classes ``x_{t-1}``–``x_j``, ``j < t-1``.

        Returns:
            ``label_logits [R, V]`` and ``edge_logits [R, t, C]`` (to ``x_0 … x_{t-1}``).
        """
        rows = cache.memory_mask.shape[0]
        device = cache.memory_mask.device
        generation = torch.full((rows, 1), SPECIAL_TOKENS.index("<G>"), device=device)
        g = self._embed(generation, torch.full_like(generation, step + 1))
        delimiter = torch.full((rows, 1), DELIMITER, device=device)
        if step == 0:
            x = g
            edge_type = torch.cat([delimiter, torch.full_like(delimiter, SELF)], 1).unsqueeze(1)
        else:
            node = previous_label.view(rows, 1)
            x = torch.cat([self._embed(node, torch.full_like(node, step)), g], dim=1)
            node_row = torch.cat(
                [delimiter, previous_bonds.view(rows, step - 1),
                 torch.full_like(delimiter, SELF), torch.full_like(delimiter, NO_BOND)], dim=1,
            )  # fmt: skip
            g_row = torch.cat(
                [delimiter, torch.full((rows, step), VIRTUAL, device=device),
                 torch.full_like(delimiter, SELF)], dim=1,
            )  # fmt: skip
            edge_type = torch.stack([node_row, g_row], dim=1)
        h = self._advance(cache, x, edge_type, num_cached=x.shape[1] - 1)
        if step > 0:
            cache.add_atom(h[:, :1], previous_bonds.view(rows, step - 1))
        h_generation = h[:, -1:]
        label_logits = self.label_head(h_generation)[:, 0]
        if step == 0:
            return label_logits, label_logits.new_zeros(rows, 0, NUM_BOND_CLASSES)
        edge_logits = self.edge_logits(
            h_generation, cache.node_states, cache.degree[:, None], cache.valence[:, None]
        )
        return label_logits, edge_logits[:, 0]

    @torch.no_grad()
    def beam_search(
        self,
        batch: ReactionBatch,
        beam_width: int = 8,
        length_penalty: float = 0.0,
        edge_alternatives: int | None = None,
        max_nodes: int | None = None,
        rules: ValenceRules | None = None,
        accept: Callable[[GraphHypothesis, int], bool] | None = None,
    ) -> list[list[GraphHypothesis]]:
        """Beam search over product graphs (Yoo et al. 2020, section 4.2: beam 8), in eval mode.

        Each step extends a hypothesis by one atom label and its bonds to all earlier atoms, or
        ends it with ``<EOG>``. Labels and bonds are conditionally independent given ``h'_t``
        (eq. 4-5), so a step's candidates are the ``beam_width`` best atom labels times the
        bond options: the most likely bond class for every earlier atom, plus the
        ``edge_alternatives`` best single changes of one bond to its second most likely class.
        Special tokens other than ``<EOG>`` (and ``<UNK>``) are never generated. Ranking uses the
        summed log-probability divided by ``steps ** length_penalty`` (steps = atoms + 1); the
        default ``length_penalty = 0`` ranks by the exact log-probability of the graph. Every
        graph on a kept hypothesis's path that may end is a candidate finished graph; a
        reaction stops when it has ``beam_width`` finished graphs that no live hypothesis can
        still beat (:func:`select_per_reaction`), or none is left; a graph has at most
        ``max_nodes`` atoms (default: the reaction's input atom count, since every product atom
        of a mapped reaction comes from the inputs). The steps are those of
        :func:`beam_search_graphs`.

        Args:
            batch: :class:`ReactionBatch` (its decoder fields are ignored).
            beam_width: hypotheses kept per reaction.
            length_penalty: exponent ``α`` of the length normalisation (0 = none).
            edge_alternatives: bond options beyond the most likely set (default ``beam_width - 1``).
            max_nodes: atom limit for every reaction (default per reaction, see above).
            rules: valence limits on labels, bonds and endings (None = none; see
                :mod:`chemgraph.models.grat.beam_search`).
            accept: ``accept(graph, b)`` vets each finished graph of the batch's reaction ``b``
                (None = all count).

        Returns:
            Per reaction, its finished :class:`GraphHypothesis` objects, best score first.
        """
        was_training = self.training
        self.eval()
        try:
            return beam_search_graphs(
                self, batch, beam_width, length_penalty, edge_alternatives, max_nodes, rules,
                accept,
            )  # fmt: skip
        finally:
            self.train(was_training)
