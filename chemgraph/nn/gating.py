"""Noisy top-k expert gating and its load-balancing losses.

Shazeer et al. 2017, as used per node by GMoE (Wang et al. 2023, section 3.1):

* gate (eq. 3-4): ``G(h) = Softmax(TopK(Q(h), k))`` over the ``k`` largest scores, 0 for the
  other experts, with ``Q(h) = h W_g + ε · (Softplus(h W_n) + 0.01)``, ``ε ~ N(0, 1)`` in
  training only (evaluation uses the clean scores ``h W_g``; the 0.01 floor on the noise scale
  is the reference implementation's);
* importance loss (eq. 5): ``CV(Σ_nodes G(h))²``;
* load loss (eq. 6-8): ``CV(Σ_nodes P(h, o))²`` with ``P(h, o) = Φ((h W_g − kth_ex(Q(h), k, o)) /
  noise scale)`` the probability that expert ``o`` stays in the top ``k`` under a new draw of
  its noise (``kth_ex``: the ``k``-th largest noisy score among the other experts). Without
  noise (evaluation) or with ``k = n`` the load is the number of nodes routed to each expert.

Gate initialisation (``init``): ``"zeros"`` (default) is the reference implementation's (both
weight matrices zero). Every expert then has the same clean score for every node: in training
only the noise chooses (routing at random), and without noise ``topk`` breaks the tie the same
way for every node (for 4 experts: ``0 … k−1``), so every node goes to the same ``k`` experts and
the other experts' scores get no gradient.
``"normal"`` (a departure, ``chemgraph train``'s choice for GMoE: see
:mod:`chemgraph.models.gmoe`) draws ``W_g ~ N(0, 1/s)``, so that the clean scores of an input
of unit scale have unit scale and routing depends on the node from the first step; ``W_n``
stays zero.

With ``k = 1`` the gate value is a softmax over one score, always 1: the task loss gives the
gate no gradient, which reaches it only through the balancing losses. With ``k ≥ 2`` the
softmax over the ``k`` chosen scores weights the experts' outputs, and the task loss trains it.

``CV(x)² = Var(x) / mean(x)²`` with the population variance; it is 0 for perfectly balanced
experts and ``n − 1`` when every node picks the same expert (``k = 1``). The variance is a
choice: the paper names only the coefficient of variation; Shazeer et al.'s TensorFlow code
(tensor2tensor ``expert_utils.cv_squared``) divides by ``n`` as here, while GMoE's reference
code, a PyTorch port, uses ``torch.var`` (divides by ``n − 1``), which scales both losses by
``n / (n − 1)``, i.e. acts as a larger λ.

References:
    N. Shazeer et al. (2017), "Outrageously Large Neural Networks: The Sparsely-Gated
    Mixture-of-Experts Layer", ICLR 2017, https://arxiv.org/abs/1701.06538.
    H. Wang et al. (2023), "Graph Mixture of Experts: Learning on Large-Scale Graphs with
    Explicit Diversity Modeling", NeurIPS 2023, https://arxiv.org/abs/2304.02806.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "GATE_INITS",
    "GateOutput",
    "NoisyTopKGate",
    "cv_squared",
    "probability_in_top_k",
]

_NOISE_FLOOR = 1e-2

GATE_INITS = ("zeros", "normal")
"""Initialisations of :class:`NoisyTopKGate` (module docstring)."""


def cv_squared(x: torch.Tensor) -> torch.Tensor:
    """Squared coefficient of variation ``Var(x) / (mean(x)² + 1e-10)`` of a 1-D tensor.

    Population variance (``unbiased=False``); 0 for fewer than two entries.

    Shapes: ``x: float [n]`` -> scalar.
    """
    if x.numel() < 2:
        return x.new_zeros(())
    x = x.float()
    return x.var(unbiased=False) / (x.mean() ** 2 + 1e-10)


@dataclass
class GateOutput:
    """What :class:`NoisyTopKGate` returns for ``N`` nodes, ``n`` experts, top ``k``.

    Attributes:
        experts: ``int64 [N, k]`` chosen experts of each node, highest score first.
        gates: ``float32 [N, k]`` their gate values (softmax over the ``k`` scores; rows sum
            to 1).
        importance: ``float32 [n]`` ``Σ_nodes G(h)_o`` (eq. 5).
        load: ``float32 [n]`` ``Σ_nodes P(h, o)`` (eq. 8), differentiable in training with
            noise and ``k < n``; else the number of nodes routed to each expert.
    """

    experts: torch.Tensor
    gates: torch.Tensor
    importance: torch.Tensor
    load: torch.Tensor

    def balance(self) -> torch.Tensor:
        """``float32 [2]``: ``L_importance = CV(importance)²`` and ``L_load = CV(load)²``
        (eq. 5 and 8)."""
        return torch.stack([cv_squared(self.importance), cv_squared(self.load)])

    def auxiliary_loss(self) -> torch.Tensor:
        """``L_importance + L_load`` (the bracket of eq. 9), a scalar."""
        return self.balance().sum()


class NoisyTopKGate(nn.Module):
    """Noisy top-k gating network (Wang et al. 2023, eq. 3-4).

    With ``init="zeros"`` both weight matrices start at zero, as in the reference
    implementation: every expert has the same score and only the training noise breaks the tie.
    ``init="normal"`` draws ``W_g ~ N(0, 1/s)`` (module docstring). Without noise
    (``noisy=False``, or evaluation) the routing is a deterministic function of the input, the
    same in training and evaluation.

    Args:
        dim: input width ``s``.
        num_experts: ``n``.
        k: experts per node, ``1 ≤ k ≤ n``.
        noisy: add the learnable Gaussian noise in training (eq. 4); False = plain top-k (the
            load of eq. 8 is then the count of nodes per expert, without gradient).
        init: ``"zeros"`` (reference) or ``"normal"`` (:data:`GATE_INITS`).

    Shapes:
        - input: ``x: float [N, s]``.
        - output: :class:`GateOutput` (``experts: int64 [N, k]``, ``gates: float32 [N, k]``,
          ``importance``/``load: float32 [num_experts]``).
    """

    def __init__(
        self, dim: int, num_experts: int, k: int, noisy: bool = True, init: str = "zeros"
    ) -> None:
        super().__init__()
        if not 1 <= k <= num_experts:
            raise ValueError(f"k must be in [1, num_experts={num_experts}], got {k}")
        if init not in GATE_INITS:
            raise ValueError(f"init must be one of {GATE_INITS}, got {init!r}")
        self.num_experts, self.k, self.noisy = num_experts, k, noisy
        self.w_gate = nn.Parameter(torch.zeros(dim, num_experts))
        self.w_noise = nn.Parameter(torch.zeros(dim, num_experts))
        if init == "normal":
            nn.init.normal_(self.w_gate, std=dim**-0.5)

    def forward(self, x: torch.Tensor) -> GateOutput:
        # the weights as [n, s] rows: faster on the CPU than x @ w_gate for a few experts
        clean = F.linear(x, self.w_gate.t().contiguous()).float()
        noisy = self.noisy and self.training
        if noisy:
            noise = F.linear(x, self.w_noise.t().contiguous()).float()
            noise_scale = F.softplus(noise) + _NOISE_FLOOR
            scores = clean + torch.randn_like(clean) * noise_scale
        else:
            scores = clean
        top_count = min(self.k + 1, self.num_experts)
        top_scores, top_experts = scores.topk(top_count, dim=1)
        experts = top_experts[:, : self.k]
        gates = torch.softmax(top_scores[:, : self.k], dim=1)
        dense = torch.zeros_like(scores).scatter(1, experts, gates)
        importance = dense.sum(0)
        if noisy and self.k < self.num_experts:
            load = probability_in_top_k(clean, scores, noise_scale, top_scores, self.k).sum(0)
        else:
            load = (dense > 0).float().sum(0)
        return GateOutput(experts, gates, importance, load)


def probability_in_top_k(
    clean: torch.Tensor,
    noisy: torch.Tensor,
    noise_scale: torch.Tensor,
    top_scores: torch.Tensor,
    k: int,
) -> torch.Tensor:
    """``P(h, o)`` of eq. 7: the probability that expert ``o`` is among the top ``k`` when its
    own noise is drawn again and the other experts' noisy scores stay fixed.

    An expert in the top ``k`` stays there while its score beats the ``(k+1)``-th largest
    (the ``k``-th of the others); one outside must beat the ``k``-th largest.

    Args:
        clean: ``float [N, n]`` scores without noise, ``h W_g``.
        noisy: ``float [N, n]`` the noisy scores ``Q(h)`` that chose the experts.
        noise_scale: ``float [N, n]`` the noise standard deviations.
        top_scores: ``float [N, k + 1]`` the ``k + 1`` largest noisy scores, descending.
        k: experts per node, ``1 ≤ k < n``.

    Returns:
        ``float [N, n]`` probabilities in ``[0, 1]``.
    """
    threshold_in = top_scores[:, k : k + 1]
    threshold_out = top_scores[:, k - 1 : k]
    is_in = noisy > threshold_in
    normal = torch.distributions.Normal(0.0, 1.0)
    probability_in = normal.cdf((clean - threshold_in) / noise_scale)
    probability_out = normal.cdf((clean - threshold_out) / noise_scale)
    return torch.where(is_in, probability_in, probability_out)
