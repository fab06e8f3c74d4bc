"""Graph mixture of experts (GMoE-GCN, GMoE-GIN) and the plain GCN/GIN baselines.

Reference: H. Wang et al. (2023), "Graph Mixture of Experts: Learning on Large-Scale Graphs
with Explicit Diversity Modeling", NeurIPS 2023, https://arxiv.org/abs/2304.02806 (reference
code: VITA-Group/Graph-Mixture-of-Experts).

Every GCN/GIN layer of the OGB baseline (Hu et al. 2020: categorical atom/bond embeddings, 5 layers,
width 300, BatchNorm, ReLU, dropout 0.5, mean readout; :mod:`chemgraph.nn.message_passing`)
becomes a layer of ``n`` experts, ``m`` of which aggregate over bonds (hop 1) and ``n − m`` over
2-walks (hop 2); a noisy top-k gate (eq. 3-4) picks ``k`` experts per node, and the importance
and load losses (eq. 5-8, weighted by λ, eq. 9) keep the experts in use. ``n = k = 1`` is the
plain GCN/GIN.

GCN messages (``gcn_messages``): ``"ogb"`` (default) is OGB's ``GCNConv``, which the paper's
experiments and reference code use: a ReLU on every message, each expert with its own linear
map, bond and root embeddings and BatchNorm (:class:`chemgraph.nn.GCNConv`). ``"linear"`` is
Kipf & Welling's linear messages (the paper's eq. 1) with OGB's bond and root embeddings; the
experts of one hop then share the aggregation and its bond embedding (the reference gives each
expert its own).

Sparse dispatch: each expert runs only for the nodes routed to it (the reference evaluates every
expert on every node and multiplies most outputs by zero). The rows of ``Â`` (self loops
included) and the distinct bond-feature rows are built once per forward and hop
(:class:`chemgraph.nn.Neighbourhood`); every layer and expert gathers its atoms' rows from them.
With linear messages a hop's sum is computed once for the hop's routed nodes (a CSR product,
``O(E·s)``) and only the transforms (``O(N·s²)``) are split between the experts, so a layer's
arithmetic is a GCN layer's. With OGB messages an expert also needs the linear map of its nodes'
neighbours (the ReLU comes after the map, so no sharing removes it), so the experts map more
rows than one GCN layer. Both costs are measured in ``benchmarks/README.md`` (``gmoe_vs_gcn.py``).

Training defaults (``chemgraph train --model gmoe-gcn``/``gmoe-gin``; a departure from the
paper, ``ModelSpec.training_options`` of :mod:`chemgraph.models.registry`): ``k = 2``, no gate
noise, ``gate_init="normal"``, ``norm="layer"`` and dropout 0.1. :class:`GMoEConfig`'s own
defaults stay the paper's and the reference's (``k = 1``, noisy gate, zero gate weights,
BatchNorm, dropout 0.5), so stored configurations load as they were trained. With those GMoE
does not learn ESOL (``benchmarks/README.md``, "GMoE on ESOL", has the experiments): the
weights fit the training set in training mode and predict nonsense in evaluation mode, for
three reasons, each enough alone:

* with ``k = 1`` the gate gets no gradient from the task (a softmax over one score is 1); its
  clean scores, starting at zero, stay about 1e-3 against noise of standard deviation 0.7, so
  training sends every atom to a random expert at every step;
* BatchNorm normalises an atom with statistics of its training batch and with running
  statistics in evaluation; one BatchNorm per expert (the reference's form) makes the model
  much more sensitive to the difference than GCN;
* the difference grows with dropout 0.5 before every layer, and with ``chemgraph train``'s
  size-bucketed training batches (molecules of about one size per batch), whose statistics
  differ from the whole set's.

``k = 2`` lets the task train the gate; without noise the routing is the same in training and
evaluation (the load loss, eq. 8, is then the count of atoms per expert, without gradient, and
the importance loss alone balances the experts); ``gate_init="normal"`` sends the atoms to all
experts from the first step (with zeros and no noise every atom starts on the same ``k``
experts, those where ``topk`` breaks the tie); LayerNorm computes the same function in
training and evaluation, whatever the batch; dropout 0.1 did better than 0.5 with LayerNorm.

FLOPs (section 3.2): with ``k`` experts per node at width ``s``, a layer's transforms cost
``k·s²`` (GCN) per node, so the model width is ``s = round(s₀ / √k)`` for the dense
baseline's width ``s₀`` (``hidden_dim``); the paper's ``s = √(s₀/k)`` is read as this.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
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
    GCNConv,
    Neighbourhood,
    NeighbourhoodAggregation,
    NoisyTopKGate,
    message_passing_layer,
    node_transform,
)
from chemgraph.nn.gating import GATE_INITS
from chemgraph.nn.message_passing import NORMS, SHARED_AGGREGATION_KINDS, Kind

__all__ = [
    "ExpertStatistics",
    "GMoE",
    "GMoEConfig",
    "GMoELayer",
    "MessagePassingConfig",
    "expert_usage_table",
]

GCN_MESSAGES = ("ogb", "linear")


@dataclass
class GMoEConfig(ModelConfig):
    """Configuration of a GMoE-GCN/GIN or plain GCN/GIN model (YAML and checkpoint round trip).

    Attributes:
        atom_vocabulary_sizes: categories per atom-feature column (``ogb`` preset, fixed by it).
        bond_vocabulary_sizes: categories per bond-feature column (``ogb`` preset).
        num_outputs: predicted values per graph.
        kind: ``"gcn"`` or ``"gin"`` message passing (fixed by the model name).
        gcn_messages: ``"ogb"`` (OGB's ``GCNConv``: ReLU on every message) or ``"linear"``
            (linear messages, aggregated before the transform); GCN only (module docstring).
        num_layers: message-passing layers (OGB: 5).
        hidden_dim: width ``s₀`` of the dense baseline (OGB: 300); the model's width is
            :attr:`width` = ``round(s₀ / √k)`` so that FLOPs match the baseline.
        num_experts: ``n`` experts per layer (``gcn``/``gin``: 1).
        num_hop1_experts: ``m`` hop-1 experts; the other ``n − m`` aggregate over 2-walks.
        k: experts per node.
        balance_weight: λ of eq. 9 on ``L_importance + L_load`` (averaged over layers).
        noisy_gating: Gaussian noise on the gate scores in training (eq. 4).
        gate_init: ``"zeros"`` (reference: every expert ties until trained) or ``"normal"``
            (``W_g ~ N(0, 1/s)``: routing depends on the atom from the start;
            :class:`chemgraph.nn.NoisyTopKGate`).
        norm: ``"batch"`` (OGB's BatchNorm, one per expert) or ``"layer"`` (LayerNorm, the same
            in training and evaluation; :func:`chemgraph.nn.message_passing.normalisation`);
            GCN/GIN too.
        dropout: dropout after every layer (OGB: 0.5).

    The defaults are the paper's; ``chemgraph train`` uses ``k = 2``, ``noisy_gating=False``,
    ``gate_init="normal"``, ``norm="layer"`` and ``dropout=0.1`` for GMoE unless told otherwise
    (module docstring).
    """

    atom_vocabulary_sizes: list[int]
    bond_vocabulary_sizes: list[int]
    num_outputs: int = 1
    kind: Literal["gcn", "gin"] = "gcn"
    gcn_messages: Literal["ogb", "linear"] = "ogb"
    num_layers: int = 5
    hidden_dim: int = 300
    num_experts: int = 4
    num_hop1_experts: int = 2
    k: int = 1
    balance_weight: float = 0.1
    noisy_gating: bool = True
    gate_init: Literal["zeros", "normal"] = "zeros"
    norm: Literal["batch", "layer"] = "batch"
    dropout: float = 0.5

    FIXED = {
        "atom_vocabulary_sizes": [1], "bond_vocabulary_sizes": [1], "num_outputs": 1,
        "kind": "gcn",
    }  # fmt: skip

    def __post_init__(self) -> None:
        if self.kind not in ("gcn", "gin"):
            raise ValueError(f"kind must be 'gcn' or 'gin', got {self.kind!r}")
        if self.gcn_messages not in GCN_MESSAGES:
            raise ValueError(
                f"gcn_messages must be one of {GCN_MESSAGES}, got {self.gcn_messages!r}"
            )
        if self.gate_init not in GATE_INITS:
            raise ValueError(f"gate_init must be one of {GATE_INITS}, got {self.gate_init!r}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if self.kind == "gin" and self.gcn_messages != "ogb":
            raise ValueError("gcn_messages is a GCN option; GIN has OGB's messages only")
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

    @property
    def message_kind(self) -> Kind:
        """The layers' kind in :mod:`chemgraph.nn.message_passing`: ``"gcn"`` (OGB),
        ``"linear-gcn"`` or ``"gin"``."""
        if self.kind == "gin":
            return "gin"
        return "gcn" if self.gcn_messages == "ogb" else "linear-gcn"


@dataclass
class MessagePassingConfig(GMoEConfig):
    """Configuration of the plain GCN/GIN baselines: :class:`GMoEConfig` with one expert.

    The expert options (``num_experts``, ``num_hop1_experts``, ``k``, ``balance_weight``,
    ``noisy_gating``, ``gate_init``) are fixed; :meth:`check_options` refuses them.
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
        expert = {
            "num_experts", "num_hop1_experts", "k", "balance_weight", "noisy_gating", "gate_init"
        }  # fmt: skip
        given = sorted(expert & set(options))
        if given:
            raise ValueError(
                f"{given} are GMoE options; GCN and GIN have one expert (use the model "
                "gmoe-gcn or gmoe-gin for a mixture)"
            )
        super().check_options(options)


class GMoELayer(nn.Module):
    """A GMoE layer (Wang et al. 2023, eq. 2):
    ``h'_i = Σ_{o ∈ TopK(i)} G(h_i)_o · E_o(h, i)`` over hop 1 (experts ``0 … m−1``) or
    hop 2 (``m … n−1``); only the ``k`` selected experts run for a node.

    ``E_o`` is a :class:`GCNConv` of its own (kind ``"gcn"``), or, for ``"linear-gcn"`` and
    ``"gin"``, the expert's transform with BatchNorm or LayerNorm (``norm``,
    :func:`node_transform`) of the hop's
    neighbourhood sum (:class:`NeighbourhoodAggregation`, ``hop1``/``hop2``, computed once for
    the hop's experts). With ``n = k = 1`` this is the plain layer (the gate is 1).

    Attributes:
        last_gate: the :class:`GateOutput` of the latest forward.
        last_balance: ``float32 [2]`` ``L_importance`` and ``L_load`` of the latest forward
            (eq. 5 and 8), differentiable.
        usage: ``float32 [n]`` node selections per expert since the last
            :meth:`GMoE.pop_expert_statistics`, counted in training mode.
        balance_sum: ``float32 [2]`` the sum of :attr:`last_balance` over those forwards.
        batches: ``int64 []`` the number of those forwards.

    Shapes: ``x: float32 [N, s]``, ``neighbourhoods``: a :class:`Neighbourhood` per hop used
    -> ``float32 [N, s]``.
    """

    def __init__(
        self,
        kind: Kind,
        dim: int,
        bond_vocabulary_sizes: list[int],
        num_experts: int,
        num_hop1_experts: int,
        k: int,
        noisy_gating: bool = True,
        gate_init: str = "zeros",
        norm: str = "batch",
    ) -> None:
        super().__init__()
        self.num_hop1_experts = num_hop1_experts
        vocabulary = {1: list(bond_vocabulary_sizes), 2: 2 * list(bond_vocabulary_sizes)}
        self.hop1 = self.hop2 = None
        if kind in SHARED_AGGREGATION_KINDS:
            if num_hop1_experts:
                self.hop1 = NeighbourhoodAggregation(kind, dim, vocabulary[1])
            if num_hop1_experts < num_experts:
                self.hop2 = NeighbourhoodAggregation(kind, dim, vocabulary[2])
            experts = (node_transform(kind, dim, norm) for _ in range(num_experts))
        else:
            experts = (GCNConv(dim, vocabulary[self.hop(o)], norm) for o in range(num_experts))
        self.experts = nn.ModuleList(experts)
        self.gate = NoisyTopKGate(dim, num_experts, k, noisy_gating, gate_init)
        self.register_buffer("usage", torch.zeros(num_experts), persistent=False)
        self.register_buffer("balance_sum", torch.zeros(2), persistent=False)
        self.register_buffer("batches", torch.zeros((), dtype=torch.long), persistent=False)
        self.last_gate: GateOutput | None = None
        self.last_balance: torch.Tensor | None = None

    def hop(self, expert: int) -> int:
        """1 or 2: the neighbourhood expert ``expert`` aggregates over."""
        return 1 if expert < self.num_hop1_experts else 2

    def forward(self, x: torch.Tensor, neighbourhoods: Mapping[int, Neighbourhood]) -> torch.Tensor:
        gate = self.gate(x)
        self.last_gate = gate
        self.last_balance = gate.balance()
        k = gate.experts.shape[1]
        expert = gate.experts.flatten()
        order = torch.argsort(expert, stable=True)
        node = torch.arange(x.shape[0], device=x.device).repeat_interleave(k)[order]
        weight = gate.gates.flatten()[order]
        counts = torch.bincount(expert, minlength=len(self.experts))
        if self.training:
            self.usage += counts.to(self.usage.dtype)
            self.balance_sum += self.last_balance.detach()
            self.batches += 1
        sizes = counts.tolist()
        nodes_of, gates_of = node.split(sizes), weight.split(sizes)
        bounds = [0, *itertools.accumulate(sizes)]
        inputs = [None] * len(self.experts)  # an expert's rows of its hop's sum (shared kinds)
        m, n = self.num_hop1_experts, len(self.experts)
        for hop, aggregate, first, last in ((1, self.hop1, 0, m), (2, self.hop2, m, n)):
            routed = node[bounds[first] : bounds[last]]  # the hop's experts' nodes, in order
            if aggregate is not None and routed.numel():  # the hop's sum at those nodes only
                inputs[first:last] = aggregate(x, neighbourhoods[hop], routed).split(
                    sizes[first:last]
                )
        # with k = 1 every node has one expert and its gate is exactly 1: copy, do not add
        out = torch.empty if k == 1 else torch.zeros
        out = out(x.shape[0], x.shape[1], device=x.device, dtype=torch.float32)
        for index, (nodes, gates) in enumerate(zip(nodes_of, gates_of)):
            if nodes.numel() == 0:
                continue
            if inputs[index] is None:  # an expert with its own message passing (OGB GCN)
                routed = self.experts[index](x, neighbourhoods[self.hop(index)], nodes)
            else:
                routed = self.experts[index](inputs[index])
            if k == 1:
                out.index_copy_(0, nodes, routed.float())
            else:
                out.index_add_(0, nodes, routed.float() * gates.unsqueeze(1))
        return out


@dataclass
class ExpertStatistics:
    """Routing of a GMoE model over the training batches since the previous
    :meth:`GMoE.pop_expert_statistics`, per layer, so that a collapse in one layer shows.

    ``CV(x)² = Var(x) / mean(x)²`` with the population variance (:func:`chemgraph.nn.cv_squared`):
    0 when balanced, ``n − 1`` when every node picks one expert (``k = 1``).

    Attributes:
        usage: ``float32 [L, n]`` share of the node selections per expert (rows sum to 1; a
            row of zeros if the layer routed nothing).
        importance_cv2: ``float32 [L]`` mean over the batches of ``L_importance`` (eq. 5).
        load_cv2: ``float32 [L]`` mean over the batches of ``L_load`` (eq. 8).
        batches: training forwards counted.
    """

    usage: torch.Tensor
    importance_cv2: torch.Tensor
    load_cv2: torch.Tensor
    batches: int

    def to_dict(self) -> dict:
        """Plain lists and numbers (JSON): ``{"batches", "usage", "importance_cv2",
        "load_cv2"}``."""
        return {
            "batches": self.batches,
            "usage": self.usage.tolist(),
            "importance_cv2": self.importance_cv2.tolist(),
            "load_cv2": self.load_cv2.tolist(),
        }


class GMoE(nn.Module):
    """GMoE-GCN/GIN (``num_experts > 1``) or GCN/GIN (``num_experts = 1``) graph predictor.

    Composition: atom embedding (sum of per-column embeddings, OGB ``AtomEncoder``) ->
    ``num_layers`` × (layer -> ReLU except after the last -> dropout) -> mean over each
    graph's atoms -> Linear head. Layers: :func:`chemgraph.nn.message_passing_layer` for one
    expert, else :class:`GMoELayer`. The batch's edges are prepared once per forward
    (:class:`chemgraph.nn.Neighbourhood`, one per hop) for every layer.

    Attributes:
        auxiliary_loss: ``λ · mean over layers of (L_importance + L_load)`` of the latest
            forward (eq. 9); None for a single expert. The training step adds it to the loss.
        expert_history: every :class:`ExpertStatistics` returned by
            :meth:`pop_expert_statistics` since the model was built (one per training epoch
            in ``chemgraph train``).

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

    Raises:
        TypeError: (forward) another batch type.
        ValueError: (forward) a bond feature outside the vocabulary sizes.
    """

    def __init__(self, config: GMoEConfig) -> None:
        super().__init__()
        self.config = config
        width = config.width
        kind = config.message_kind
        self.atom_encoder = CategoricalEmbedding(config.atom_vocabulary_sizes, width)
        if config.num_experts == 1:
            layers = (
                message_passing_layer(kind, width, config.bond_vocabulary_sizes, config.norm)
                for _ in range(config.num_layers)
            )
        else:
            layers = (
                GMoELayer(
                    kind,
                    width,
                    config.bond_vocabulary_sizes,
                    config.num_experts,
                    config.num_hop1_experts,
                    config.k,
                    config.noisy_gating,
                    config.gate_init,
                    config.norm,
                )
                for _ in range(config.num_layers)
            )
        self.layers = nn.ModuleList(layers)
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(width, config.num_outputs)
        self.auxiliary_loss: torch.Tensor | None = None
        self.expert_history: list[ExpertStatistics] = []
        bonds = list(config.bond_vocabulary_sizes)
        self._hop_vocabularies = {
            hop: sizes
            for hop, sizes, used in (
                (1, bonds, config.num_hop1_experts > 0),
                (2, 2 * bonds, config.two_hop),
            )
            if used
        }

    @property
    def mixture(self) -> bool:
        return self.config.num_experts > 1

    def embed(self, batch: SparseGraphBatch) -> torch.Tensor:
        """Graph embeddings ``float32 [B, width]`` (mean of the last layer's atom states)."""
        if not isinstance(batch, SparseGraphBatch):
            raise TypeError(f"GMoE/GCN/GIN take a SparseGraphBatch, got {type(batch)}")
        neighbourhoods = {
            hop: Neighbourhood(*batch.neighbourhood(hop), sizes)
            for hop, sizes in self._hop_vocabularies.items()
        }
        h = self.atom_encoder(batch.x)
        for index, layer in enumerate(self.layers):
            h = layer(h, neighbourhoods) if self.mixture else layer(h, neighbourhoods[1])
            if index < len(self.layers) - 1:
                h = F.relu(h)
            h = self.dropout(h)
        if self.mixture:
            losses = torch.stack([layer.last_balance.sum() for layer in self.layers])
            self.auxiliary_loss = self.config.balance_weight * losses.mean()
        num_graphs = batch.num_nodes.shape[0]
        pooled = h.new_zeros(num_graphs, h.shape[1]).index_add(0, batch.graph_index, h)
        return pooled / batch.num_nodes.clamp(min=1).unsqueeze(1).to(pooled.dtype)

    def forward(self, batch: SparseGraphBatch) -> torch.Tensor:
        return self.head(self.embed(batch))

    def pop_expert_statistics(self) -> ExpertStatistics | None:
        """The :class:`ExpertStatistics` of the training forwards since the last call (also
        appended to :attr:`expert_history`), then reset; None for a single expert."""
        if not self.mixture:
            return None
        usage = torch.stack([layer.usage.clone() for layer in self.layers]).cpu()
        balance = torch.stack([layer.balance_sum.clone() for layer in self.layers]).cpu()
        batches = int(self.layers[0].batches)
        for layer in self.layers:
            layer.usage.zero_()
            layer.balance_sum.zero_()
            layer.batches.zero_()
        balance = balance / max(batches, 1)
        statistics = ExpertStatistics(
            usage=usage / usage.sum(dim=1, keepdim=True).clamp(min=1),
            importance_cv2=balance[:, 0],
            load_cv2=balance[:, 1],
            batches=batches,
        )
        self.expert_history.append(statistics)
        return statistics


def expert_usage_table(statistics: ExpertStatistics) -> str:
    """One line per layer of :class:`ExpertStatistics`: the experts' shares of the node
    selections and the mean CV² of importance and load, e.g. ``"expert usage (share of node
    selections) | CV² importance, load\\n  layer 0: 0.25 0.31 0.19 0.25 | 0.010 0.012"``."""
    lines = ["expert usage (share of node selections) | CV² importance, load (eq. 5, 8)"]
    rows = zip(
        statistics.usage.tolist(), statistics.importance_cv2.tolist(), statistics.load_cv2.tolist()
    )
    for index, (shares, importance, load) in enumerate(rows):
        usage = " ".join(f"{share:.2f}" for share in shares)
        lines.append(f"  layer {index}: {usage} | {importance:.3f} {load:.3f}")
    return "\n".join(lines)
