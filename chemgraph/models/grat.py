"""Graph-Aware Transformer (GRAT): edge-conditioned attention encoder and graph decoder.

Yoo et al., "Graph-Aware Transformer: Is Attention All Graphs Need?" (Yoo et al. 2020).

* Attention (section 3.1, eq. 2-3): ``softmax((Γ ⊙ QKᵀ + B) / √d_k) V`` with
  ``(γ_ij, β_ij) = f_a(e_ij)``: ``f_a`` is one MLP (hidden width 32, tanh; Appendix A/B) of the
  one-hot edge type, concatenated with the one-hot distance bucket when distances are given,
  that outputs ``γ`` and ``β`` for every layer and head. Its last layer starts at zero and
  ``γ = 1 + output``, so training starts from plain attention. The edge types and distances
  are discrete, so ``f_a`` is evaluated once per (type, distance) combination and gathered.
* Encoder: "no bond" is an edge type (all pairs attend) unless ``neighbour_only`` masks
  non-neighbours; optional sinusoidal positional encoding (the reaction model orders atoms
  canonically, Appendix B; property prediction omits it for permutation invariance).
* :class:`GRAT` (section 3.3/4.1): ``<CLS>`` token prepended and joined to every atom by a
  virtual edge; its final state feeds an MLP head (hidden 512).
* :class:`GRATTranslator` (section 3.2, Figure 1): encoder + decoder. The decoder runs the
  two paths of every step at once over the interleaved sequence of
  :mod:`chemgraph.batches.reaction` with its masking matrix (teacher forcing); the
  generation path ``G_t`` gives the node label ``f_l(h'_t)`` (eq. 4) and the bonds
  ``f_e(f_p(h'_t), f_p(h_j))`` to every earlier atom (eq. 5); decoder attention skips "no bond"
  pairs (Appendix B). :meth:`GRATTranslator.beam_search` decodes step by step with cached keys
  and values: the encoding path of a step computes only the newest atom (the paper's reuse of
  ``h_0 … h_{t-1}``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.batches.dense import DenseGraphBatch
from chemgraph.batches.reaction import (
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
from chemgraph.nn import MLP, MultiHeadAttention, masked_attention
from chemgraph.nn.encoders import CategoricalEmbedding

__all__ = [
    "GRAT",
    "EdgeConditioning",
    "GRATConfig",
    "GRATLayer",
    "GRATTranslator",
    "GRATTranslatorConfig",
    "GraphHypothesis",
    "sinusoidal_encoding",
]


def sinusoidal_encoding(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Transformer positional encoding (Vaswani et al. 2017, section 3.5).

    Shapes: ``positions: int64 [...]`` -> ``float32 [..., dim]`` (``dim`` even).
    """
    half = torch.arange(dim // 2, device=positions.device, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * 2 * half / dim)
    angle = positions.float().unsqueeze(-1) * frequency
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


class EdgeConditioning(nn.Module):
    """``f_a``: the per-pair ``(γ, β)`` of every layer and head (Yoo et al. 2020, eq. 2).

    Args:
        num_edge_types: edge-type vocabulary ``T`` (one-hot input).
        num_distances: distance buckets ``D`` (one-hot input), 0 = no distance input.
        hidden: hidden width (paper: 32, tanh).
        num_layers, num_heads: outputs ``γ, β`` for each.

    Forward: ``edge_type: int64 [B, L_q, L_k]``, ``distance: int64 [B, L_q, L_k]`` or None ->
    the pair index ``int64 [B, L_q, L_k]`` into :meth:`table`.
    """

    def __init__(
        self, num_edge_types: int, num_distances: int, hidden: int, num_layers: int, num_heads: int
    ) -> None:
        super().__init__()
        self.num_edge_types = num_edge_types
        self.num_distances = num_distances
        self.num_layers, self.num_heads = num_layers, num_heads
        types = torch.eye(num_edge_types).repeat_interleave(max(1, num_distances), dim=0)
        inputs = [types]
        if num_distances:
            inputs.append(torch.eye(num_distances).repeat(num_edge_types, 1))
        self.register_buffer("inputs", torch.cat(inputs, dim=1), persistent=False)
        self.mlp = nn.Sequential(
            nn.Linear(self.inputs.shape[1], hidden),
            nn.Tanh(),
            nn.Linear(hidden, num_layers * num_heads * 2),
        )
        nn.init.zeros_(self.mlp[2].weight)
        nn.init.zeros_(self.mlp[2].bias)

    def table(self) -> torch.Tensor:
        """``float32 [T·D, layers, heads, 2]``: ``(γ, β)`` of every (type, distance) pair."""
        out = self.mlp(self.inputs).view(-1, self.num_layers, self.num_heads, 2)
        return out + torch.tensor([1.0, 0.0], device=out.device)

    def forward(self, edge_type: torch.Tensor, distance: torch.Tensor | None) -> torch.Tensor:
        if self.num_distances:
            return edge_type * self.num_distances + distance
        return edge_type

    @staticmethod
    def layer_terms(table: torch.Tensor, index: torch.Tensor, layer: int, head_dim: int):
        """``Γ`` and ``B / √d_k`` of one layer, ``float [B, H, L_q, L_k]`` each."""
        film = table[:, layer][index]  # [B, L_q, L_k, H, 2]
        gamma = film[..., 0].permute(0, 3, 1, 2)
        beta = film[..., 1].permute(0, 3, 1, 2) * head_dim**-0.5
        return gamma, beta


class GRATLayer(nn.Module):
    """One pre-LN GRAT block: edge-conditioned self-attention, optional cross-attention to the
    encoder (decoder blocks), MLP.

    ``h = x + SelfAttn(LN(x); Γ, B, mask)``; ``h = h + CrossAttn(LN(h), memory)`` (decoder);
    ``out = h + MLP(LN(h))``.

    Forward shapes: ``x: [R, k, d]`` new tokens; ``mask: bool [R, k, T + k]`` over the ``T``
    cached tokens (``past``, keys/values ``[R, H, T, d/H]``) and the ``k`` new ones;
    ``gamma, beta: [R, H, k, T + k]``; ``memory: (keys, values) [R, H, L_e, d/H]`` with
    ``memory_mask: bool [R, 1, L_e]``. Returns the new tokens' states ``[R, k, d]`` and their
    keys and values (to cache).
    """

    def __init__(
        self, dim: int, num_heads: int, mlp_hidden: int, dropout: float, cross_attention: bool
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.norm_self = nn.LayerNorm(dim)
        self.self_attention = MultiHeadAttention(dim, num_heads, dropout)
        self.cross_attention = self.norm_cross = None
        if cross_attention:
            self.cross_attention = MultiHeadAttention(dim, num_heads, dropout)
            self.norm_cross = nn.LayerNorm(dim)
        self.norm_mlp = nn.LayerNorm(dim)
        self.mlp = MLP(dim, mlp_hidden, "standard", dropout)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        r, length, d = x.shape
        return x.view(r, length, self.num_heads, d // self.num_heads).transpose(1, 2)

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        r, h, length, dh = x.shape
        return x.transpose(1, 2).reshape(r, length, h * dh)

    def memory(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention keys and values of the encoder output ``[R, L_e, d]``."""
        attention = self.cross_attention
        return self._split(attention.key(memory)), self._split(attention.value(memory))

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        gamma: torch.Tensor,
        beta: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
        memory: tuple[torch.Tensor, torch.Tensor] | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        attention = self.self_attention
        dropout = attention.dropout if self.training else 0.0
        h = self.norm_self(x)
        query = self._split(attention.query(h))
        key, value = self._split(attention.key(h)), self._split(attention.value(h))
        keys, values = key, value
        if past is not None:
            keys, values = torch.cat([past[0], key], dim=2), torch.cat([past[1], value], dim=2)
        heads = masked_attention(query, keys, values, mask, dropout, beta, gamma)
        x = x + self.dropout(attention.out(self._merge(heads)))
        if self.cross_attention is not None:
            cross = self.cross_attention
            query = self._split(cross.query(self.norm_cross(x)))
            heads = masked_attention(query, *memory, memory_mask, dropout)
            x = x + self.dropout(cross.out(self._merge(heads)))
        x = x + self.dropout(self.mlp(self.norm_mlp(x)))
        return x, (key, value)


class GRATStack(nn.Module):
    """Layers sharing one ``f_a`` and a final LayerNorm (the encoder or the decoder body)."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_layers: int,
        mlp_hidden: int,
        num_edge_types: int,
        num_distances: int,
        edge_hidden: int,
        dropout: float,
        cross_attention: bool,
    ) -> None:
        super().__init__()
        self.head_dim = dim // num_heads
        self.edge_conditioning = EdgeConditioning(
            num_edge_types, num_distances, edge_hidden, num_layers, num_heads
        )
        self.layers = nn.ModuleList(
            GRATLayer(dim, num_heads, mlp_hidden, dropout, cross_attention)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        edge_type: torch.Tensor,
        distance: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """All tokens at once: ``x: [B, L, d]``, ``mask: bool [B, L, L]``, ``edge_type`` and
        ``distance: int64 [B, L, L]``, ``keep: bool [B, L]`` (real tokens; padding is zeroed
        after every layer), ``memory: [B, L_e, d]`` -> ``[B, L, d]``."""
        table = self.edge_conditioning.table()
        index = self.edge_conditioning(edge_type, distance)
        for number, layer in enumerate(self.layers):
            gamma, beta = EdgeConditioning.layer_terms(table, index, number, self.head_dim)
            memory_kv = layer.memory(memory) if memory is not None else None
            x, _ = layer(x, mask, gamma, beta, None, memory_kv, memory_mask)
            if keep is not None:
                x = torch.where(keep.unsqueeze(-1), x, 0.0)
        return self.norm(x)


def _check_grat(config: ModelConfig, names: tuple[str, ...]) -> None:
    config.check_positive_integers(names)
    if config.hidden_dim % config.num_heads or config.hidden_dim % 2:
        raise ValueError(
            f"hidden_dim {config.hidden_dim} must be even and divisible by num_heads "
            f"{config.num_heads}"
        )
    config.check_fractions(("dropout",))


@dataclass
class GRATConfig(ModelConfig):
    """GRAT encoder for graph-level property prediction (Yoo et al. 2020, section 4.1).

    Attributes:
        atom_vocabulary_sizes: categories per atom-feature column (integer-categorical preset,
            e.g. ``ogb``); the atom token is the sum of one embedding per column.
        num_bond_types: values of :attr:`DenseGraphBatch.edge_type` (0 = no bond).
        num_outputs: predicted values per graph.
        max_distance: ``D`` of the batch's shortest-path buckets (``0 … D + 1``).
        hidden_dim, num_heads, num_layers: width, heads, blocks.
        mlp_hidden_multiplier: MLP width = multiplier × ``hidden_dim`` (paper: 4).
        edge_hidden: ``f_a`` hidden width (paper: 32).
        head_hidden: readout MLP hidden width (paper: 512).
        neighbour_only: atoms attend only to bonded atoms, themselves and ``<CLS>``.
        dropout: dropout in attention weights, after attention and in MLPs.
    """

    atom_vocabulary_sizes: list[int]
    num_bond_types: int
    num_outputs: int = 1
    max_distance: int = 20
    hidden_dim: int = 128
    num_heads: int = 8
    num_layers: int = 6
    mlp_hidden_multiplier: int = 4
    edge_hidden: int = 32
    head_hidden: int = 512
    neighbour_only: bool = False
    dropout: float = 0.0

    FIXED = {"atom_vocabulary_sizes": [1], "num_bond_types": 1, "num_outputs": 1}

    def __post_init__(self) -> None:
        _check_grat(
            self,
            ("num_bond_types", "num_outputs", "max_distance", "hidden_dim", "num_heads",
             "num_layers", "mlp_hidden_multiplier", "edge_hidden", "head_hidden"),
        )  # fmt: skip
        self.atom_vocabulary_sizes = [int(v) for v in self.atom_vocabulary_sizes]


class GRAT(nn.Module):
    """GRAT encoder with a ``<CLS>`` readout (Yoo et al. 2020, sections 3.1, 3.3, 4.1).

    Tokens: ``<CLS>`` then the atoms (sum of categorical embeddings); edge types: the bond
    types of :class:`DenseGraphBatch` (0 = no bond), then "virtual" (``<CLS>`` <-> atoms) and
    "self" (diagonal); distance: the batch's shortest-path bucket (``<CLS>`` pairs: the
    unreachable bucket ``D + 1``). No positional encoding (permutation invariant).

    Forward: :class:`DenseGraphBatch` with integer ``x: [B, N, F]`` -> ``float32 [B, num_outputs]``.
    """

    def __init__(self, config: GRATConfig) -> None:
        super().__init__()
        self.config = config
        d = config.hidden_dim
        self.virtual, self.self_type = config.num_bond_types, config.num_bond_types + 1
        self.atom_embedding = CategoricalEmbedding(config.atom_vocabulary_sizes, d)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        nn.init.normal_(self.cls, std=0.02)
        self.encoder = GRATStack(
            d, config.num_heads, config.num_layers, config.mlp_hidden_multiplier * d,
            config.num_bond_types + 2, config.max_distance + 2, config.edge_hidden,
            config.dropout, cross_attention=False,
        )  # fmt: skip
        self.head = nn.Sequential(
            nn.Linear(d, config.head_hidden),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(config.head_hidden, config.num_outputs),
        )

    def forward(self, batch: DenseGraphBatch) -> torch.Tensor:
        if not isinstance(batch, DenseGraphBatch):
            raise TypeError(f"GRAT takes a DenseGraphBatch, got {type(batch)}")
        pad_mask = batch.pad_mask
        b, n = pad_mask.shape
        atoms = torch.where(pad_mask.unsqueeze(-1), batch.x, 0)
        x = torch.cat([self.cls.expand(b, 1, -1), self.atom_embedding(atoms)], dim=1)
        keep = F.pad(pad_mask, (1, 0), value=True)
        edge_type = F.pad(batch.edge_type, (1, 0, 1, 0), value=self.virtual)
        edge_type[:, 0, 0] = self.virtual
        eye = torch.eye(n + 1, dtype=torch.bool, device=x.device)
        edge_type = torch.where(eye, self.self_type, edge_type)
        unreachable = self.config.max_distance + 1
        distance = F.pad(batch.spd.clamp(max=unreachable), (1, 0, 1, 0), value=unreachable)
        mask = keep.unsqueeze(1) & keep.unsqueeze(2)
        if self.config.neighbour_only:
            mask = mask & (edge_type != 0)
        h = self.encoder(x, mask, edge_type, distance, keep)
        return self.head(h[:, 0])


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

    def __post_init__(self) -> None:
        _check_grat(
            self,
            ("vocab_size", "max_distance", "hidden_dim", "num_heads", "encoder_layers",
             "decoder_layers", "mlp_hidden_multiplier", "edge_hidden", "projection_dim"),
        )  # fmt: skip


@dataclass
class GraphHypothesis:
    """One decoded graph: token ids of its atoms, ``(i, j, bond_class)`` bonds with ``i < j``,
    summed log-probability and the length-normalised score used for ranking."""

    labels: list[int]
    bonds: list[tuple[int, int, int]]
    log_probability: float
    score: float


class _DecoderCache:
    """Keys/values of the decoded atoms (and ``<PRODUCT>``) per layer, for step decoding."""

    def __init__(self, memory: list[tuple[torch.Tensor, torch.Tensor]], memory_mask):
        self.memory, self.memory_mask = memory, memory_mask
        self.keys: list[torch.Tensor | None] = [None] * len(memory)
        self.values: list[torch.Tensor | None] = [None] * len(memory)
        self.node_states: torch.Tensor | None = None  # final states of x_0 … x_{t-1}

    def select(self, rows: torch.Tensor) -> None:
        """Keep (and reorder, repeat) rows: beam-search reordering."""
        self.memory = [(k[rows], v[rows]) for k, v in self.memory]
        self.memory_mask = self.memory_mask[rows]
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        if self.node_states is not None:
            self.node_states = self.node_states[rows]


class GRATTranslator(nn.Module):
    """GRAT graph-to-graph translation: reactants and reagents -> product graph.

    Forward (teacher forcing, all steps in parallel): :class:`ReactionBatch` ->
    ``label_logits: float32 [B, M, V]`` (the label of ``x_t`` or ``<EOG>``, from ``G_t``) and
    ``edge_logits: float32 [B, M, M - 1, C]`` (bond class of ``x_t``–``x_j``, ``C`` =
    :data:`NUM_BOND_CLASSES`, meaningful for ``j < t``).
    """

    def __init__(self, config: GRATTranslatorConfig) -> None:
        super().__init__()
        self.config = config
        d = config.hidden_dim
        mlp_hidden = config.mlp_hidden_multiplier * d
        self.token_embedding = nn.Embedding(config.vocab_size, d, padding_idx=0)
        self.encoder = GRATStack(
            d, config.num_heads, config.encoder_layers, mlp_hidden, NUM_EDGE_TYPES,
            config.max_distance + 1, config.edge_hidden, config.dropout, cross_attention=False,
        )  # fmt: skip
        self.decoder = GRATStack(
            d, config.num_heads, config.decoder_layers, mlp_hidden, NUM_EDGE_TYPES, 0,
            config.edge_hidden, config.dropout, cross_attention=True,
        )  # fmt: skip
        self.label_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, config.vocab_size))
        self.projection = nn.Linear(d, config.projection_dim)  # f_p
        # f_e(f_p(h'_t), f_p(h_j)): its first layer on the concatenation, split in two halves
        p = config.projection_dim
        self.edge_generation = nn.Linear(p, p)
        self.edge_node = nn.Linear(p, p, bias=False)
        self.edge_out = nn.Linear(p, NUM_BOND_CLASSES)

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
        return self.encoder(x, mask, batch.encoder_edge_type, batch.encoder_distance, keep)

    def edge_logits(self, generation: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
        """``f_e(f_p(h'_t), f_p(h_j))``: ``[R, M, d]``, ``[R, N, d]`` -> ``[R, M, N, C]``."""
        left = self.edge_generation(self.projection(generation)).unsqueeze(2)
        right = self.edge_node(self.projection(nodes)).unsqueeze(1)
        return self.edge_out(F.gelu(left + right))

    def forward(self, batch: ReactionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        memory = self.encode(batch)
        x = self._embed(batch.decoder_tokens, batch.decoder_positions)
        keep = batch.decoder_pad_mask
        x = torch.where(keep.unsqueeze(-1), x, 0.0)
        h = self.decoder(
            x, batch.decoder_mask, batch.decoder_edge_type, None, keep, memory,
            batch.pad_mask.unsqueeze(1),
        )  # fmt: skip
        generation, nodes = h[:, 1::2], h[:, 2::2]
        return self.label_head(generation), self.edge_logits(generation, nodes)

    # ------------------------------------------------------------------ step decoding

    def start(self, batch: ReactionBatch) -> _DecoderCache:
        """Encode and process ``<PRODUCT>``: the cache before step 0 (one row per reaction)."""
        memory = self.encode(batch)
        layers = self.decoder.layers
        cache = _DecoderCache([layer.memory(memory) for layer in layers], batch.pad_mask[:, None])
        rows = memory.shape[0]
        device = memory.device
        product = torch.full((rows, 1), SPECIAL_TOKENS.index("<PRODUCT>"), device=device)
        x = self._embed(product, torch.zeros_like(product))
        edge_type = torch.full((rows, 1, 1), SELF, device=device)
        self._advance(cache, x, edge_type, num_cached=1)
        return cache

    def _advance(
        self, cache: _DecoderCache, x: torch.Tensor, edge_type: torch.Tensor, num_cached: int
    ) -> torch.Tensor:
        """Run ``k`` new tokens ``x: [R, k, d]`` whose rows of the edge matrix over the cached
        tokens and themselves are ``edge_type: [R, k, T + k]``; cache the first ``num_cached``
        new tokens. Returns their final states ``[R, k, d]``."""
        stack = self.decoder
        table = stack.edge_conditioning.table()
        index = stack.edge_conditioning(edge_type, None)
        mask = edge_type != NO_BOND
        for number, layer in enumerate(stack.layers):
            gamma, beta = EdgeConditioning.layer_terms(table, index, number, stack.head_dim)
            past = None
            if cache.keys[number] is not None:
                past = (cache.keys[number], cache.values[number])
            x, (key, value) = layer(
                x, mask, gamma, beta, past, cache.memory[number], cache.memory_mask
            )
            key, value = key[:, :, :num_cached], value[:, :, :num_cached]
            if past is not None:
                key, value = torch.cat([past[0], key], 2), torch.cat([past[1], value], 2)
            cache.keys[number], cache.values[number] = key, value
        return stack.norm(x)

    def step(
        self,
        cache: _DecoderCache,
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
            new = h[:, :1]
            cache.node_states = (
                new if cache.node_states is None else torch.cat([cache.node_states, new], 1)
            )
        h_generation = h[:, -1:]
        label_logits = self.label_head(h_generation)[:, 0]
        if step == 0:
            return label_logits, label_logits.new_zeros(rows, 0, NUM_BOND_CLASSES)
        return label_logits, self.edge_logits(h_generation, cache.node_states)[:, 0]

    @torch.no_grad()
    def beam_search(
        self,
        batch: ReactionBatch,
        beam_width: int = 8,
        length_penalty: float = 1.0,
        edge_alternatives: int | None = None,
        max_nodes: int | None = None,
    ) -> list[list[GraphHypothesis]]:
        """Beam search over product graphs (Yoo et al. 2020, section 4.2: beam 8).

        Each step extends a hypothesis by one atom label and its bonds to all earlier atoms, or
        ends it with ``<EOG>``. Labels and bonds are conditionally independent given ``h'_t``
        (eq. 4-5), so a step's candidates are the ``beam_width`` best atom labels times the
        bond options: the most likely bond class for every earlier atom, plus the
        ``edge_alternatives`` best single changes of one bond to its second most likely class.
        Special tokens other than ``<EOG>`` (and ``<UNK>``) are never generated. Ranking uses the
        summed log-probability divided by ``steps ** length_penalty`` (steps = atoms + 1;
        ``length_penalty = 1``: mean log-probability per step). A reaction stops when it has
        ``beam_width`` finished graphs; a graph has at most ``max_nodes`` atoms (default: the
        reaction's input atom count, since every product atom of a mapped reaction comes from
        the inputs).

        Args:
            batch: :class:`ReactionBatch` (its decoder fields are ignored).
            beam_width: hypotheses kept per reaction.
            length_penalty: exponent ``α`` of the length normalisation.
            edge_alternatives: bond options beyond the most likely set (default ``beam_width - 1``).
            max_nodes: atom limit for every reaction (default per reaction, see above).

        Returns:
            Per reaction, its finished :class:`GraphHypothesis` objects, best score first.
        """
        was_training = self.training
        self.eval()
        try:
            return self._beam_search(
                batch, beam_width, length_penalty, edge_alternatives, max_nodes
            )
        finally:
            self.train(was_training)

    def _beam_search(self, batch, beam_width, length_penalty, edge_alternatives, max_nodes):
        k = beam_width
        alternatives = k - 1 if edge_alternatives is None else edge_alternatives
        num_reactions = batch.pad_mask.shape[0]
        device = batch.pad_mask.device
        limits = batch.num_input_atoms.clamp(min=1).tolist()
        if max_nodes is not None:
            limits = [max_nodes] * num_reactions
        longest = max(limits)
        cache = self.start(batch)
        cache.select(torch.arange(num_reactions, device=device).repeat_interleave(k))
        rows = num_reactions * k
        log_prob = torch.full((num_reactions, k), float("-inf"), device=device)
        log_prob[:, 0] = 0.0
        labels = torch.zeros(rows, longest + 1, dtype=torch.long, device=device)
        bonds = torch.zeros(rows, longest + 1, longest + 1, dtype=torch.long, device=device)
        eog = SPECIAL_TOKENS.index("<EOG>")
        banned = [i for i, token in enumerate(SPECIAL_TOKENS) if token != "<EOG>"]
        finished: list[list[GraphHypothesis]] = [[] for _ in range(num_reactions)]
        done = [False] * num_reactions
        reaction_of_row = torch.arange(num_reactions, device=device).repeat_interleave(k)
        for t in range(longest + 1):
            label_logits, edge_logits = self.step(
                cache, t, labels[:, t - 1] if t else None, bonds[:, t - 1, : t - 1] if t else None
            )
            label_logits = label_logits.float()
            label_logits[:, banned] = float("-inf")
            at_limit = torch.tensor([t >= limit for limit in limits], device=device)
            atom_allowed = ~at_limit[reaction_of_row]
            label_logp = F.log_softmax(label_logits, dim=-1)
            atom_logp = torch.where(atom_allowed[:, None], label_logp, float("-inf"))
            atom_logp[:, eog] = float("-inf")
            edge_logp = F.log_softmax(edge_logits.float(), dim=-1)  # [R, t, C]
            best_logp, best_class = edge_logp.max(-1)
            options = best_logp.sum(-1, keepdim=True)  # [R, 1]
            flip_at = flip_class = None
            if t and alternatives:
                top2 = edge_logp.topk(2, dim=-1)
                delta = top2.values[..., 1] - top2.values[..., 0]
                delta, flip_at = delta.topk(min(alternatives, t), dim=-1)
                flip_class = top2.indices[..., 1].gather(1, flip_at)
                options = torch.cat([options, options + delta], dim=1)
            num_options = options.shape[1]
            top_label_logp, top_label = atom_logp.topk(min(k, atom_logp.shape[1]), dim=-1)
            num_labels = top_label.shape[1]
            grow = log_prob.view(rows, 1, 1) + top_label_logp[:, :, None] + options[:, None, :]
            grow = grow.view(num_reactions, k * num_labels * num_options)
            end = (log_prob.view(rows) + label_logp[:, eog]).view(num_reactions, k)
            candidates = torch.cat([grow, end], dim=1)
            top_score, top_index = candidates.topk(min(2 * k, candidates.shape[1]), dim=-1)
            source = torch.arange(rows, device=device)  # dead slots keep their row
            new_label = torch.zeros(rows, dtype=torch.long, device=device)
            new_option = torch.zeros(rows, dtype=torch.long, device=device)
            new_log_prob = torch.full((rows,), float("-inf"), device=device)
            grow_size = grow.shape[1]
            for b, (scores, indices) in enumerate(zip(top_score.tolist(), top_index.tolist())):
                if done[b]:
                    continue
                chosen = 0
                for rank, (score, index) in enumerate(zip(scores, indices)):
                    if score == float("-inf") or chosen == k:
                        break
                    if index >= grow_size:
                        if rank < k and len(finished[b]) < k:
                            row = b * k + index - grow_size
                            finished[b].append(
                                self._hypothesis(labels[row], bonds[row], t, score, length_penalty)
                            )
                        continue
                    beam, rest = divmod(index, num_labels * num_options)
                    label_rank, option = divmod(rest, num_options)
                    slot, row = b * k + chosen, b * k + beam
                    source[slot] = row
                    new_label[slot] = top_label[row, label_rank]
                    new_option[slot] = option
                    new_log_prob[slot] = score
                    chosen += 1
                if len(finished[b]) >= k or chosen == 0:
                    done[b] = True
                    new_log_prob[b * k : (b + 1) * k] = float("-inf")
            if all(done):
                break
            cache.select(source)
            labels, bonds = labels[source], bonds[source]
            labels[:, t] = new_label
            if t:
                edges = best_class[source]
                if flip_at is not None:
                    pick = (new_option - 1).clamp(min=0).unsqueeze(1)
                    at = flip_at[source].gather(1, pick)
                    changed = flip_class[source].gather(1, pick)
                    flipped = edges.scatter(1, at, changed)
                    edges = torch.where((new_option > 0).unsqueeze(1), flipped, edges)
                bonds[:, t, :t] = edges
            log_prob = new_log_prob.view(num_reactions, k)
        return [sorted(found, key=lambda h: -h.score) for found in finished]

    @staticmethod
    def _hypothesis(labels, bonds, num_nodes, log_probability, length_penalty) -> GraphHypothesis:
        lower = bonds[:num_nodes, :num_nodes].tolist()
        found = [(j, i, lower[i][j]) for i in range(num_nodes) for j in range(i) if lower[i][j]]
        return GraphHypothesis(
            labels=labels[:num_nodes].tolist(),
            bonds=found,
            log_probability=log_probability,
            score=log_probability / (num_nodes + 1) ** length_penalty,
        )
