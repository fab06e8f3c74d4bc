"""Graph mixture of experts (GMoE-GCN, GMoE-GIN) and the plain GCN/GIN baselines.

Reference: H. Wang et al. (2023), "Graph Mixture of Experts: Learning on Large-Scale Graphs
with Explicit Diversity Modeling", NeurIPS 2023, https://arxiv.org/abs/2304.02806 (reference
code: VITA-Group/Graph-Mixture-of-Experts).

Every GCN/GIN layer of the OGB baseline (Hu et al. 2020: categorical atom/bond embeddings, 5 layers,
width 300, BatchNorm, ReLU, dropout 0.5, mean readout) becomes a layer of ``n`` experts,
``m`` of which aggregate over bonds (hop 1) and ``n − m`` over 2-walks (hop 2); a noisy top-k
gate (eq. 3-4) picks ``k`` experts per node, and the importance and load losses (eq. 5-8,
weighted by λ, eq. 9) keep the experts in use. ``n = k = 1`` is the plain GCN/GIN.

Sparse dispatch: each expert's transform runs only on the nodes routed to it (the reference
evaluates every expert on every node and multiplies most outputs by zero). The neighbourhood
sum is computed once per hop for all nodes, which is cheap (``O(E·s)`` against ``O(N·s²)``
for the transforms) and is why the experts of one hop share their bond embedding (the reference
gives each expert its own).

FLOPs (section 3.2): with ``k`` experts per node at width ``s``, a layer's transforms cost
``k·s²`` (GCN) per node, so the model width is ``s = round(s₀ / √k)`` for the dense
baseline's width ``s₀`` (``hidden_dim``); the paper's ``s = √(s₀/k)`` is read as this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.batches import SparseGraphBatch
from chemgraph.models.config import ModelConfig
from chemgraph.nn import (
    CategoricalEmbedding,
    GateOutput,
    MessagePassingLayer,
    NeighbourhoodAggregation,
    NoisyTopKGate,
    node_transform,
)

__all__ = ["GMoE", "GMoEConfig", "GMoELayer", "MessagePassingConfig", "expert_usage_table"]


@dataclass
class GMoEConfig(ModelConfig):
    """Configuration of a GMoE-GCN/GIN or plain GCN/GIN model (YAML and checkpoint round trip).

    Attributes:
        atom_vocabulary_sizes: categories per atom-feature column (``ogb`` preset, fixed by it).
        bond_vocabulary_sizes: categories per bond-feature column (``ogb`` preset).
        num_outputs: predicted values per graph.
        kind: ``"gcn"`` or ``"gin"`` message passing (fixed by the model name).
        num_layers: message-passing layers (OGB: 5).
        hidden_dim: width ``s₀`` of the dense baseline (OGB: 300); the model's width is
            :attr:`width` = ``round(s₀ / √k)`` so that FLOPs match the baseline.
        num_experts: ``n`` experts per layer (``gcn``/``gin``: 1).
        num_hop1_experts: ``m`` hop-1 experts; the other ``n − m`` aggregate over 2-walks.
        k: experts per node.
        balance_weight: λ of eq. 9 on ``L_importance + L_load`` (averaged over layers).
        noisy_gating: Gaussian noise on the gate scores in training (eq. 4).
        dropout: dropout after every layer (OGB: 0.5).
    """

    atom_vocabulary_sizes: list[int]
    bond_vocabulary_sizes: list[int]
    num_outputs: int = 1
    kind: Literal["gcn", "gin"] = "gcn"
    num_layers: int = 5
    hidden_dim: int = 300
    num_experts: int = 4
    num_hop1_experts: int = 2
    k: int = 1
    balance_weight: float = 0.1
    noisy_gating: bool = True
    dropout: float = 0.5

    FIXED = {
        "atom_vocabulary_sizes": [1], "bond_vocabulary_sizes": [1], "num_outputs": 1,
        "kind": "gcn",
    }  # fmt: skip

    def __post_init__(self) -> None:
        if self.kind not in ("gcn", "gin"):
            raise ValueError(f"kind must be 'gcn' or 'gin', got {self.kind!r}")
        self.check_positive_integers(
            ("num_outputs", "num_layers", "hidden_dim", "num_experts", "k")
        )
        if not 0 <= self.num_hop1_experts <= self.num_experts:
            raise ValueError(
                f"num_hop1_experts must be in [0, num_experts={self.num_experts}], got "
                f"{self.num_hop1_experts!r}"
            )
        if self.k > self.num_experts:
            raise ValueError(f"k={self.k} exceeds num_experts={self.num_experts}")
        if self.num_experts == 1 and self.num_hop1_experts != 1:
            raise ValueError("a single expert is the plain GCN/GIN: num_hop1_experts must be 1")
        self.check_fractions(("dropout",))
        if not self.balance_weight >= 0:
            raise ValueError(f"balance_weight must be at least 0, got {self.balance_weight!r}")
        self.atom_vocabulary_sizes = [int(v) for v in self.atom_vocabulary_sizes]
        self.bond_vocabulary_sizes = [int(v) for v in self.bond_vocabulary_sizes]

    @property
    def width(self) -> int:
        """Model width ``round(hidden_dim / √k)`` (FLOPs equal to the dense baseline's)."""
        return max(1, round(self.hidden_dim / math.sqrt(self.k)))

    @property
    def two_hop(self) -> bool:
        """Whether some experts aggregate over 2-walks (the batch must hold hop-2 edges)."""
        return self.num_hop1_experts < self.num_experts


@dataclass
class MessagePassingConfig(GMoEConfig):
    """Configuration of the plain GCN/GIN baselines: :class:`GMoEConfig` with one expert.

    The expert options (``num_experts``, ``num_hop1_experts``, ``k``, ``balance_weight``,
    ``noisy_gating``) are fixed; :meth:`check_options` refuses them.
    """

    num_experts: int = 1
    num_hop1_experts: int = 1
    k: int = 1

    @classmethod
    def check_options(cls, options: dict) -> None:
        """As :meth:`GMoEConfig.check_options`, and refuses the expert options.

        Raises:
            ValueError: an expert option (GCN/GIN have one expert), or any error of
                :meth:`GMoEConfig.check_options`.
        """
        expert = {"num_experts", "num_hop1_experts", "k", "balance_weight", "noisy_gating"}
        given = sorted(expert & set(options))
        if given:
            raise ValueError(
                f"{given} are GMoE options; GCN and GIN have one expert (use the model "
                "gmoe-gcn or gmoe-gin for a mixture)"
            )
        super().check_options(options)


class GMoELayer(nn.Module):
    """A GMoE layer (Wang et al. 2023, eq. 2):
    ``h'_i = Σ_{o ∈ TopK(i)} G(h_i)_o · E_o(a^{hop(o)}_i)``.

    ``a¹``/``a²`` are the hop-1/hop-2 neighbourhood sums (:class:`NeighbourhoodAggregation`)
    and ``E_o`` the expert's transform with BatchNorm (:func:`node_transform`); experts
    ``0 … m−1`` are hop 1, ``m … n−1`` hop 2. Only the ``k`` selected experts run for a node.
    With ``n = k = 1`` this is :class:`MessagePassingLayer` (the gate is 1).

    Attributes:
        last_gate: the :class:`GateOutput` of the latest forward (for the auxiliary loss).
        usage: ``float32 [n]`` node selections per expert since the last
            :meth:`GMoE.pop_expert_usage`, counted in training mode.

    Shapes: ``x: float32 [N, s]``, batch: :class:`SparseGraphBatch` -> ``float32 [N, s]``.
    """

    def __init__(
        self,
        kind: Literal["gcn", "gin"],
        dim: int,
        bond_vocabulary_sizes: list[int],
        num_experts: int,
        num_hop1_experts: int,
        k: int,
        noisy_gating: bool = True,
    ) -> None:
        super().__init__()
        self.num_hop1_experts = num_hop1_experts
        self.hop1 = (
            NeighbourhoodAggregation(kind, dim, bond_vocabulary_sizes) if num_hop1_experts else None
        )
        self.hop2 = (
            NeighbourhoodAggregation(kind, dim, 2 * list(bond_vocabulary_sizes))
            if num_hop1_experts < num_experts
            else None
        )
        self.experts = nn.ModuleList(node_transform(kind, dim) for _ in range(num_experts))
        self.gate = NoisyTopKGate(dim, num_experts, k, noisy_gating)
        self.register_buffer("usage", torch.zeros(num_experts), persistent=False)
        self.last_gate: GateOutput | None = None

    def forward(self, x: torch.Tensor, batch: SparseGraphBatch) -> torch.Tensor:
        gate = self.gate(x)
        self.last_gate = gate
        aggregated = {}
        if self.hop1 is not None:
            aggregated[1] = self.hop1(x, *batch.neighbourhood(1))
        if self.hop2 is not None:
            aggregated[2] = self.hop2(x, *batch.neighbourhood(2))
        k = gate.experts.shape[1]
        expert = gate.experts.flatten()
        order = torch.argsort(expert, stable=True)
        node = torch.arange(x.shape[0], device=x.device).repeat_interleave(k)[order]
        weight = gate.gates.flatten()[order]
        counts = torch.bincount(expert, minlength=len(self.experts))
        if self.training:
            self.usage += counts.to(self.usage.dtype)
        out = torch.zeros(x.shape[0], x.shape[1], device=x.device, dtype=torch.float32)
        for index, (nodes, gates) in enumerate(
            zip(node.split(counts.tolist()), weight.split(counts.tolist()))
        ):
            if nodes.numel() == 0:
                continue
            hop = 1 if index < self.num_hop1_experts else 2
            routed = self.experts[index](aggregated[hop][nodes])
            out.index_add_(0, nodes, (routed.float() * gates.unsqueeze(1)))
        return out


class GMoE(nn.Module):
    """GMoE-GCN/GIN (``num_experts > 1``) or GCN/GIN (``num_experts = 1``) graph predictor.

    Composition: atom embedding (sum of per-column embeddings, OGB ``AtomEncoder``) ->
    ``num_layers`` × (layer -> ReLU except after the last -> dropout) -> mean over each
    graph's atoms -> Linear head. Layers: :class:`MessagePassingLayer` for one expert, else
    :class:`GMoELayer`.

    Attributes:
        auxiliary_loss: ``λ · mean over layers of (L_importance + L_load)`` of the latest
            forward (eq. 9); None for a single expert. The training step adds it to the loss.

    Args:
        config: the :class:`GMoEConfig` (or :class:`MessagePassingConfig`, one expert).

    Shapes:
        - input: :class:`SparseGraphBatch` with ``x: int64 [N_tot, F_n]`` (categorical atom
          features), ``edge_index: int64 [2, E]``, ``edge_features: int64 [E, F_e]``,
          ``edge_weight: float32 [E]``, ``self_weight: float32 [N_tot]``, ``graph_index:
          int64 [N_tot]``, ``num_nodes: int64 [B]``, and the ``hop2_*`` tensors when
          ``num_hop1_experts < num_experts``.
        - output: ``float32 [B, num_outputs]`` raw outputs, finite for graphs without bonds;
          :meth:`embed` gives ``float32 [B, width]``.
    """

    def __init__(self, config: GMoEConfig) -> None:
        super().__init__()
        self.config = config
        width = config.width
        self.atom_encoder = CategoricalEmbedding(config.atom_vocabulary_sizes, width)
        if config.num_experts == 1:
            layers = (
                MessagePassingLayer(config.kind, width, config.bond_vocabulary_sizes)
                for _ in range(config.num_layers)
            )
        else:
            layers = (
                GMoELayer(
                    config.kind,
                    width,
                    config.bond_vocabulary_sizes,
                    config.num_experts,
                    config.num_hop1_experts,
                    config.k,
                    config.noisy_gating,
                )
                for _ in range(config.num_layers)
            )
        self.layers = nn.ModuleList(layers)
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(width, config.num_outputs)
        self.auxiliary_loss: torch.Tensor | None = None

    @property
    def mixture(self) -> bool:
        return self.config.num_experts > 1

    def embed(self, batch: SparseGraphBatch) -> torch.Tensor:
        """Graph embeddings ``float32 [B, width]`` (mean of the last layer's atom states)."""
        if not isinstance(batch, SparseGraphBatch):
            raise TypeError(f"GMoE/GCN/GIN take a SparseGraphBatch, got {type(batch)}")
        h = self.atom_encoder(batch.x)
        for index, layer in enumerate(self.layers):
            if self.mixture:
                h = layer(h, batch)
            else:
                h = layer(h, *batch.neighbourhood(1))
            if index < len(self.layers) - 1:
                h = F.relu(h)
            h = self.dropout(h)
        if self.mixture:
            losses = [layer.last_gate.auxiliary_loss() for layer in self.layers]
            self.auxiliary_loss = self.config.balance_weight * torch.stack(losses).mean()
        num_graphs = batch.num_nodes.shape[0]
        pooled = h.new_zeros(num_graphs, h.shape[1]).index_add(0, batch.graph_index, h)
        return pooled / batch.num_nodes.clamp(min=1).unsqueeze(1).to(pooled.dtype)

    def forward(self, batch: SparseGraphBatch) -> torch.Tensor:
        return self.head(self.embed(batch))

    def pop_expert_usage(self) -> torch.Tensor | None:
        """Fraction of node selections per expert since the last call, ``float32 [layers, n]``
        (rows sum to 1; a row of zeros if the layer routed nothing), then reset; None for a
        single expert."""
        if not self.mixture:
            return None
        usage = torch.stack([layer.usage.clone() for layer in self.layers]).cpu()
        for layer in self.layers:
            layer.usage.zero_()
        return usage / usage.sum(dim=1, keepdim=True).clamp(min=1)


def expert_usage_table(usage: torch.Tensor) -> str:
    """One line per layer of :meth:`GMoE.pop_expert_usage` fractions, e.g.
    ``"expert usage (share of node selections)\\n  layer 0: 0.25 0.31 0.19 0.25"``."""
    lines = ["expert usage (share of node selections)"]
    for index, row in enumerate(usage.tolist()):
        lines.append(f"  layer {index}: " + " ".join(f"{share:.2f}" for share in row))
    return "\n".join(lines)
