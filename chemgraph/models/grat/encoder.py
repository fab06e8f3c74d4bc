"""GRAT for graph-level property prediction: the encoder with a ``<CLS>`` readout.

Reference: S. Yoo, Y.-S. Kim, K. H. Lee, K. Jeong, J. Choi, H. Lee, Y. S. Choi (2020),
"Graph-Aware Transformer: Is Attention All Graphs Need?", https://arxiv.org/abs/2006.05213.

Sections 3.3 and 4.1: a ``<CLS>`` token is prepended and joined to every atom by a virtual edge;
its final state feeds an MLP head (hidden 512). "No bond" is an edge type (all pairs attend)
unless ``neighbour_only`` masks non-neighbours; no positional encoding, so the model is
permutation invariant (section 3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.batches.dense import DenseGraphBatch
from chemgraph.models.config import ModelConfig
from chemgraph.models.grat.layers import GRATStack, check_grat_config
from chemgraph.nn.encoders import CategoricalEmbedding

__all__ = ["GRAT", "GRATConfig"]


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
        edge_conditioning: ``"per_pair"`` (one ``(γ, β)`` per atom pair and layer, eq. 2) or
            ``"per_head"`` (one per head too); :class:`chemgraph.models.grat.EdgeConditioning`.
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
    edge_conditioning: str = "per_pair"

    FIXED = {"atom_vocabulary_sizes": [1], "num_bond_types": 1, "num_outputs": 1}

    def __post_init__(self) -> None:
        check_grat_config(
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

    Args:
        config: the :class:`GRATConfig`.

    Shapes:
        - input: :class:`DenseGraphBatch` with ``x: int64 [B, N, F]`` (categorical atom
          features), ``edge_type: int64 [B, N, N]``, ``spd: int64 [B, N, N]`` and
          ``pad_mask: bool [B, N]``.
        - output: ``float32 [B, num_outputs]``.
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
            per_head=config.edge_conditioning == "per_head",
        )  # fmt: skip
        self.head = nn.Sequential(
            nn.Linear(d, config.head_hidden),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(config.head_hidden, config.num_outputs),
        )

    def embed(self, batch: DenseGraphBatch) -> torch.Tensor:
        """Graph embeddings ``float32 [B, d_model]``: the virtual (CLS) token's final state."""
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
        h = self.encoder(x, mask=mask, edge_type=edge_type, distance=distance, keep=keep)
        return h[:, 0]

    def forward(self, batch: DenseGraphBatch) -> torch.Tensor:
        return self.head(self.embed(batch))
