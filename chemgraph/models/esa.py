"""Edge-set attention (ESA) and node-set attention (NSA).

Reference: D. Buterez, J. P. Janet, D. Oglic, P. Liò (2024), "An end-to-end attention-based
approach for learning on graphs", Nat. Commun. 16 (2025), doi:10.1038/s41467-025-60252-z,
https://arxiv.org/abs/2402.10793.

Section 3 of the paper: an encoder of interleaved masked (MAB, ``M``) and unmasked (SAB, ``S``)
self-attention blocks over the set of edges (ESA) or nodes (NSA), then pooling by multi-head
attention (PMA, ``P``) followed by SABs on the ``k`` seeds::

    Z_out = PMA_{k,p}(Encoder(X, M) + X)

The layer pattern string spells the blocks in order, e.g. ``"SSMMMMPS"``: the letters before
``P`` are the encoder, the ``S`` letters after ``P`` are the ``p`` SABs of the PMA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from chemgraph.batches import (
    EdgeSetBatch,
    NodeSetBatch,
    edge_adjacency,
    edge_mask_mod,
    edge_pairs,
    node_adjacency,
    node_pairs,
)
from chemgraph.models.config import ModelConfig
from chemgraph.nn import PMA, AttentionBlock, AttentionMask, DenseMask, flex_block_mask

__all__ = ["AUTO_SPARSE_MIN_TOKENS", "ESAConfig", "ESA", "SUM_READOUT_SCALE"]

SUM_READOUT_SCALE = 20.0
"""``readout="seeds+sum"`` divides the sum of a graph's token states by this constant (about
the token count of a drug-like molecule's edge set halved), so the sum starts at the scale of
the pooled seeds; Chemprop v2's ``norm`` aggregation divides its atom sum by 100 likewise."""

AUTO_SPARSE_MIN_TOKENS = 1024
"""``attention="auto"`` takes the sparse path when a batch's padded set length ``L`` is at
least this (sparse memory grows with the adjacent pairs ``P``, dense memory with ``L²``); the
time and memory of both paths against ``L`` that set it are in ``benchmarks/README.md``
(``esa_scaling.py``)."""


@dataclass
class ESAConfig(ModelConfig):
    """Configuration of an ESA/NSA model (round-trips through YAML and checkpoints).

    The defaults (width 64, 4 heads, ``SMMSPS``, 8 seeds; ~220k parameters with the canonical
    features) are sized so that an epoch on a CPU costs about what a Chemprop v2 epoch costs
    (``benchmarks/esa_vs_chemprop.py``); the paper's models are wider and deeper (hidden
    256-512, 6-10 blocks, Buterez et al. 2024 SI 7) and fit GPU runs, e.g.
    ``hidden_dim=256, num_heads=16, layer_pattern="SSMMMMPS", num_seeds=32``.

    Attributes:
        in_features: token width: ``2·d_n + d_e`` (ESA) or ``d_n`` (NSA).
        num_outputs: number of predicted values per graph (tasks).
        set_type: ``"edge"`` (ESA, takes :class:`EdgeSetBatch`) or ``"node"`` (NSA, takes
            :class:`NodeSetBatch`).
        hidden_dim: model width ``d``.
        num_heads: attention heads (``hidden_dim`` must be divisible by it).
        layer_pattern: blocks in order, letters ``M``/``S``, one ``P``, then ``S`` only.
        norm: ``"pre"`` (the paper's form) or ``"post"`` layer normalisation.
        mlp: ``"standard"`` (GELU) or ``"swiglu"``.
        mlp_hidden_multiplier: MLP hidden width = multiplier × ``hidden_dim``.
        num_seeds: ``k`` learnable PMA seeds; the ``k`` outputs are averaged.
        dropout: dropout after attention and inside MLPs.
        attention_dropout: dropout on attention weights.
        attend_to_self: whether a token may attend to itself in a MAB. Default True: the
            adjacency of Buterez et al. 2024 Algorithm 1 (``src == src``) contains the diagonal,
            so an isolated token still has one key. False reproduces the official ESA code, which
            clears the diagonal; a token with no other neighbour then gets a zero attention
            output and keeps only its residual.
        attention: how the masked blocks (``M``) attend, all computing the same function:
            ``"dense"``: a ``[B, L, L]`` boolean mask and SDPA (memory ``B·L²``);
            ``"sparse"``: only the adjacent pairs, gathered, with a segment softmax (memory
            ``P·H`` for ``P`` adjacent pairs, :func:`chemgraph.nn.sparse_attention`);
            ``"flex"``: FlexAttention with the adjacency looked up from ``src``/``dst``, no
            ``L²`` tensor (ESA on CUDA only, no attention dropout);
            ``"auto"``: ``"sparse"`` when the padded set length is at least
            :data:`AUTO_SPARSE_MIN_TOKENS`, else ``"dense"``.
            SAB blocks always use SDPA with at most a key-padding mask.
        readout: ``"seeds"`` (default): the graph embedding is the mean of the ``k`` pooled
            seeds (the paper's readout); ``"seeds+sum"`` (``chemgraph train``'s default, a
            departure from the paper, ``ModelSpec.training_options``) adds
            ``Linear(Σ_t z_t / SUM_READOUT_SCALE)`` over the graph's token states ``z = X +
            Encoder(X)``. Attention pooling is a weighted mean and cannot count; properties
            that grow with molecule size (solubility, logP: Crippen logP, a sum over atoms,
            alone explains most of ESOL's variance) need the sum (ESOL test RMSE, 50 epochs:
            ``benchmarks/README.md``).
    """

    in_features: int
    num_outputs: int = 1
    set_type: Literal["edge", "node"] = "edge"
    hidden_dim: int = 64
    num_heads: int = 4
    layer_pattern: str = "SMMSPS"
    norm: Literal["pre", "post"] = "pre"
    mlp: Literal["standard", "swiglu"] = "standard"
    mlp_hidden_multiplier: int = 2
    num_seeds: int = 8
    dropout: float = 0.0
    attention_dropout: float = 0.0
    attend_to_self: bool = True
    attention: Literal["dense", "sparse", "flex", "auto"] = "auto"
    readout: Literal["seeds", "seeds+sum"] = "seeds"

    FIXED = {"in_features": 1, "num_outputs": 1, "set_type": "edge"}

    def __post_init__(self) -> None:
        if not isinstance(self.layer_pattern, str):
            raise ValueError(
                f"layer_pattern must be a string such as 'SSMMMMPS', got {self.layer_pattern!r}"
            )
        pattern = self.layer_pattern.upper()
        encoder, _, after = pattern.partition("P")
        if pattern.count("P") != 1 or set(encoder) - {"M", "S"} or set(after) - {"S"}:
            raise ValueError(
                f"layer_pattern {self.layer_pattern!r} is invalid: use M/S letters, exactly one "
                "P (pooling), and only S after P, e.g. 'SSMMMMPS'"
            )
        choices = {"set_type": ("edge", "node"), "norm": ("pre", "post"),
                   "mlp": ("standard", "swiglu"),
                   "attention": ("dense", "sparse", "flex", "auto"),
                   "readout": ("seeds", "seeds+sum")}  # fmt: skip
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        self.check_positive_integers(
            ("in_features", "num_outputs", "hidden_dim", "num_heads", "num_seeds",
             "mlp_hidden_multiplier")
        )  # fmt: skip
        self.check_heads()
        self.check_fractions(("dropout", "attention_dropout"))
        if self.attention == "flex" and (self.set_type != "edge" or self.attention_dropout):
            raise ValueError(
                "attention='flex' is for set_type='edge' without attention_dropout; "
                "use 'sparse' for NSA or with attention dropout"
            )
        self.layer_pattern = pattern


class ESA(nn.Module):
    """ESA (``set_type="edge"``) or NSA (``set_type="node"``) graph-level predictor.

    Composition: token encoder (Linear ``in_features -> d``) -> interleaved MAB/SAB encoder ->
    residual ``+ X`` -> PMA with ``k`` seeds -> ``p`` SABs -> mean over seeds -> MLP head
    (Linear -> GELU -> Dropout -> Linear).

    Args:
        config: the :class:`ESAConfig`.

    Shapes:
        - input (ESA): :class:`EdgeSetBatch` with ``x: float32 [B, L, in_features]`` edge
          tokens, ``pad_mask: bool [B, L]``, ``src``/``dst: int64 [B, L]`` and
          ``edge_mask: bool [B, L, L]`` (or None: built from ``src``/``dst`` on the device).
        - input (NSA): :class:`NodeSetBatch` with ``x: float32 [B, N, in_features]`` atom
          features, ``pad_mask: bool [B, N]``, ``edge_index: int64 [2, E]`` and
          ``adjacency: bool [B, N, N]`` (or None).
        - output: ``float32 [B, num_outputs]`` raw outputs (standardised regression values or
          classification logits); :meth:`embed` gives ``float32 [B, hidden_dim]``.
    """

    def __init__(self, config: ESAConfig) -> None:
        super().__init__()
        self.config = config
        d = config.hidden_dim
        mlp_hidden = config.mlp_hidden_multiplier * d
        block_args = dict(
            dim=d,
            num_heads=config.num_heads,
            mlp_hidden=mlp_hidden,
            mlp=config.mlp,
            dropout=config.dropout,
            attention_dropout=config.attention_dropout,
        )
        encoder_pattern, _, seed_pattern = config.layer_pattern.partition("P")
        self.encoder_pattern = encoder_pattern
        self.token_encoder = nn.Linear(config.in_features, d)
        self.encoder = nn.ModuleList(
            AttentionBlock(norm=config.norm, **block_args) for _ in encoder_pattern
        )
        self.pool = PMA(num_seeds=config.num_seeds, **block_args)
        self.seed_blocks = nn.ModuleList(
            AttentionBlock(norm=config.norm, **block_args) for _ in seed_pattern
        )
        self.sum_readout = nn.Linear(d, d) if config.readout == "seeds+sum" else None
        self.head = nn.Sequential(
            nn.Linear(d, mlp_hidden),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(mlp_hidden, config.num_outputs),
        )

    def attention_path(self, length: int) -> Literal["dense", "sparse", "flex"]:
        """The attention of the masked blocks for a padded set length ``L`` (resolves auto)."""
        if self.config.attention != "auto":
            return self.config.attention
        return "sparse" if length >= AUTO_SPARSE_MIN_TOKENS else "dense"

    def _masked_block_mask(self, batch: EdgeSetBatch | NodeSetBatch) -> AttentionMask:
        """The adjacency of the ``M`` blocks in the form of :meth:`attention_path`."""
        edge = self.config.set_type == "edge"
        expected = EdgeSetBatch if edge else NodeSetBatch
        if not isinstance(batch, expected):
            raise TypeError(
                f"{'ESA' if edge else 'NSA'} (set_type={self.config.set_type!r}) takes an "
                f"{expected.__name__}, got {type(batch)}"
            )
        pad_mask, with_self = batch.pad_mask, self.config.attend_to_self
        path = self.attention_path(pad_mask.shape[1])
        if path == "sparse":
            if edge:
                return edge_pairs(batch.src, batch.dst, pad_mask, with_self)
            return node_pairs(batch.edge_index, pad_mask, with_self)
        if path == "flex":
            if pad_mask.device.type != "cuda":
                raise RuntimeError(
                    "attention='flex' runs on CUDA only (no FlexAttention backward on the CPU); "
                    "use 'sparse'"
                )
            mask_mod = edge_mask_mod(batch.src, batch.dst, pad_mask, with_self)
            return flex_block_mask(mask_mod, *pad_mask.shape, pad_mask.device)
        if edge:
            mask = batch.edge_mask
            if mask is None:
                mask = edge_adjacency(batch.src, batch.dst, pad_mask)
        else:
            mask = batch.adjacency
            if mask is None:
                mask = node_adjacency(batch.edge_index, pad_mask)
        if not with_self:
            eye = torch.eye(mask.shape[-1], dtype=torch.bool, device=mask.device)
            mask = mask & ~eye
        return mask

    def embed(self, batch: EdgeSetBatch | NodeSetBatch) -> torch.Tensor:
        """Graph embeddings ``float32 [B, hidden_dim]`` (mean of the ``k`` pooled seeds)."""
        # Padded slots start at zero (h0) and every block maps finite values to finite values,
        # so they stay finite: the masks say so (DenseMask.masked_finite), and attention uses
        # them as they are, with a zero weight, instead of zeroing them in every block.
        mask = self._masked_block_mask(batch)
        if torch.is_tensor(mask) and mask.dtype == torch.bool:
            mask = DenseMask.of(mask, masked_finite=True)  # derived once for the masked blocks
        x, pad_mask = batch.x, batch.pad_mask
        keep = pad_mask.unsqueeze(-1)
        # where(), not multiplication: a NaN or Inf in a padded slot must not leak.
        h0 = torch.where(keep, self.token_encoder(torch.where(keep, x, 0.0)), 0.0)
        key_mask = DenseMask.of(pad_mask.unsqueeze(1), masked_finite=True)
        # SAB: the whole graph; no mask without padding, so SDPA may pick a flash kernel
        set_mask = None if bool(pad_mask.all()) else key_mask
        h = h0
        for letter, block in zip(self.encoder_pattern, self.encoder):
            h = block(h, mask if letter == "M" else set_mask)
        tokens = h + h0
        pooled = self.pool(tokens, key_mask)
        for block in self.seed_blocks:
            pooled = block(pooled)
        graph = pooled.mean(dim=1)
        if self.sum_readout is not None:
            total = torch.where(keep, tokens, 0.0).sum(dim=1) / SUM_READOUT_SCALE
            graph = graph + self.sum_readout(total)
        return graph

    def forward(self, batch: EdgeSetBatch | NodeSetBatch) -> torch.Tensor:
        return self.head(self.embed(batch))
