"""Reaction-centre prediction on the GRAT encoder: a bond-change scorer and a candidate ranker.

The two-stage design of WLN/WLDN (Jin et al. 2017, "Predicting Organic Reaction Outcomes with
Weisfeiler-Lehman Network", NeurIPS, arXiv:1709.04555) and of Coley et al. 2019 ("A
graph-convolutional neural network model for the prediction of chemical reactivity", Chem.
Sci. 10, 370, doi:10.1039/C8SC04228D), with GRAT's edge-conditioned attention (Yoo et al. 2020,
"Graph-Aware Transformer: Is Attention All Graphs Need?", arXiv:2006.05213, eq. 2-3) as the
atom encoder in place of the Weisfeiler-Lehman network:

1. :class:`ReactionCentreScorer` reads every reactant and reagent atom (one graph; atoms of
   different molecules are joined by the "other fragment" distance bucket, so attention spans
   all of them, as WLN's global attention does) and scores, for every atom pair and every bond
   class (:data:`chemgraph.chem.reaction_edits.BOND_CLASSES`), the logit that the pair's bond
   becomes that class; it also scores, per atom, the logit that the atom ends in the main
   product (which fragments of an edited molecule are the product, and which are by-products).
2. Candidate products are built by applying combinations of the best-scored changes with RDKit
   (:mod:`chemgraph.data.reaction_centre`).
3. :class:`CandidateRanker` scores each candidate from the difference between its atoms'
   encodings in the candidate product and in the reactants (WLDN's difference encoding, Jin et
   al. 2017 section 3.2), plus the scorer's summed logit of the candidate's edits.

Plain PyTorch: runs on the CPU and on CUDA.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.batches.reaction_centre import ATOM_FEATURE_SIZES, ReactionCentreBatch
from chemgraph.chem.reaction_edits import BOND_CLASSES
from chemgraph.models.config import ModelConfig
from chemgraph.models.grat.layers import GRATStack, check_grat_config
from chemgraph.nn.encoders import CategoricalEmbedding

__all__ = [
    "CandidateRanker",
    "ReactionCentreConfig",
    "ReactionCentreScorer",
    "GRATAtomEncoder",
]


@dataclass
class ReactionCentreConfig(ModelConfig):
    """Sizes of the reaction-centre scorer and the candidate ranker.

    Attributes:
        hidden_dim, num_heads, num_layers: the scorer's GRAT encoder.
        mlp_hidden_multiplier: encoder MLP width = multiplier × ``hidden_dim``.
        edge_hidden: ``f_a`` hidden width (Yoo et al. 2020: 32).
        max_distance: distance buckets ``1 … max_distance``, then "other fragment".
        pair_hidden: width of the pair scorer.
        ranker_hidden, ranker_heads, ranker_layers: the ranker's (smaller) GRAT encoder.
        dropout: in attention, after attention and in MLPs.
        edge_conditioning: ``"per_pair"`` or ``"per_head"`` (:class:`EdgeConditioning`).
    """

    hidden_dim: int = 128
    num_heads: int = 8
    num_layers: int = 4
    mlp_hidden_multiplier: int = 2
    edge_hidden: int = 32
    max_distance: int = 8
    pair_hidden: int = 128
    ranker_hidden: int = 64
    ranker_heads: int = 4
    ranker_layers: int = 2
    dropout: float = 0.0
    edge_conditioning: str = "per_pair"

    def __post_init__(self) -> None:
        check_grat_config(
            self,
            ("hidden_dim", "num_heads", "num_layers", "mlp_hidden_multiplier", "edge_hidden",
             "max_distance", "pair_hidden", "ranker_hidden", "ranker_heads", "ranker_layers"),
        )  # fmt: skip
        if self.ranker_hidden % self.ranker_heads:
            raise ValueError(
                f"ranker_hidden {self.ranker_hidden} must be divisible by ranker_heads "
                f"{self.ranker_heads}"
            )


class GRATAtomEncoder(nn.Module):
    """Atom states of a padded molecule batch from GRAT's edge-conditioned attention.

    Tokens: the atoms (sum of categorical embeddings of :data:`ATOM_FEATURE_SIZES`); edge
    types: bond classes (0 = no bond), then "self" on the diagonal; distances: the batch's
    buckets (``max_distance + 1`` = other fragment). Every pair attends (Yoo et al. 2020,
    section 3.1: "no bond" is an edge type). Permutation equivariant.

    Shapes:
        - input: :class:`ReactionCentreBatch` (``atoms``, ``bonds``, ``distance``,
          ``pad_mask``).
        - output: ``float32 [B, N, dim]`` (zero in padding).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_layers: int,
        mlp_hidden: int,
        edge_hidden: int,
        max_distance: int,
        dropout: float,
        per_head: bool,
    ) -> None:
        super().__init__()
        self.self_type = len(BOND_CLASSES)
        self.embedding = CategoricalEmbedding(ATOM_FEATURE_SIZES, dim)
        self.stack = GRATStack(
            dim, num_heads, num_layers, mlp_hidden, len(BOND_CLASSES) + 1, max_distance + 2,
            edge_hidden, dropout, cross_attention=False, per_head=per_head,
        )  # fmt: skip

    def forward(self, batch: ReactionCentreBatch) -> torch.Tensor:
        keep = batch.pad_mask
        n = keep.shape[1]
        eye = torch.eye(n, dtype=torch.bool, device=keep.device)
        edge_type = torch.where(eye, self.self_type, batch.bonds)
        mask = keep.unsqueeze(1) & keep.unsqueeze(2)
        mask = mask | eye  # a padded row attends to itself only (no empty softmax)
        x = self.embedding(torch.where(keep.unsqueeze(-1), batch.atoms, 0))
        return self.stack(x, mask=mask, edge_type=edge_type, distance=batch.distance, keep=keep)


class ReactionCentreScorer(nn.Module):
    """Bond-change logits of every atom pair and product logits of every atom.

    Pair ``(i, j)``: ``s_ijc = w_c · GELU(A(h_i + h_j) + (P h_i) ⊙ (P h_j) + E[b_ij])`` with
    ``E[b_ij]`` the embedding of the pair's current bond class; symmetric in ``i, j`` by
    construction (WLN's pair scorer, Jin et al. 2017 eq. 5, over GRAT atom states).

    Shapes:
        - input: :class:`ReactionCentreBatch`.
        - output: ``pair_logits: float32 [B, N, N, C]`` (``C = len(BOND_CLASSES)``; the
          pair's current class and the diagonal are not edits and are set to ``-inf``,
          as are pairs with a padded atom) and ``atom_logits: float32 [B, N]``.
    """

    def __init__(self, config: ReactionCentreConfig) -> None:
        super().__init__()
        self.config = config
        d, p = config.hidden_dim, config.pair_hidden
        self.encoder = GRATAtomEncoder(
            d, config.num_heads, config.num_layers, config.mlp_hidden_multiplier * d,
            config.edge_hidden, config.max_distance, config.dropout,
            config.edge_conditioning == "per_head",
        )  # fmt: skip
        self.pair_sum = nn.Linear(d, p)
        self.pair_product = nn.Linear(d, p, bias=False)
        self.bond_embedding = nn.Embedding(len(BOND_CLASSES), p)
        self.pair_out = nn.Linear(p, len(BOND_CLASSES))
        self.atom_out = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))

    def forward(self, batch: ReactionCentreBatch) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(batch)
        a, q = self.pair_sum(h), self.pair_product(h)
        pair = a.unsqueeze(2) + a.unsqueeze(1) + q.unsqueeze(2) * q.unsqueeze(1)
        logits = self.pair_out(F.gelu(pair + self.bond_embedding(batch.bonds)))
        keep = batch.pad_mask
        n = keep.shape[1]
        valid = keep.unsqueeze(1) & keep.unsqueeze(2)
        valid = valid & ~torch.eye(n, dtype=torch.bool, device=keep.device)
        current = F.one_hot(batch.bonds, len(BOND_CLASSES)).bool()
        allowed = valid.unsqueeze(-1) & ~current
        logits = logits.masked_fill(~allowed, float("-inf"))
        atom_logits = self.atom_out(h).squeeze(-1).masked_fill(~keep, float("-inf"))
        return logits, atom_logits


class CandidateRanker(nn.Module):
    """Score of each candidate product from its difference encoding (WLDN, Jin et al. 2017).

    ``score = MLP(Σ_{a ∈ product} (h_a^cand - h_a^react)) + w · edit_score`` where ``h`` are
    the states of one shared small GRAT encoder over the reactants and over each candidate
    (the whole edited molecule, so leaving groups are seen), summed over the atoms of the
    candidate's product fragments, and ``edit_score`` is the scorer's summed logit of the
    candidate's edits.

    Shapes:
        - input: ``reactants`` (:class:`ReactionCentreBatch`, ``[R, N]``), ``candidates``
          (``[K, N]``, the edited molecules, atom ``a`` = reactant atom ``a``), ``owner:
          int64 [K]`` (each candidate's reaction), ``product_mask: bool [K, N]`` (its product
          atoms), ``edit_score: float32 [K]``.
        - output: ``float32 [K]`` scores (softmax within a reaction gives probabilities).
    """

    def __init__(self, config: ReactionCentreConfig) -> None:
        super().__init__()
        d = config.ranker_hidden
        self.encoder = GRATAtomEncoder(
            d, config.ranker_heads, config.ranker_layers, 2 * d, config.edge_hidden,
            config.max_distance, config.dropout, config.edge_conditioning == "per_head",
        )  # fmt: skip
        self.head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
        self.edit_weight = nn.Parameter(torch.tensor(1.0))

    def forward(
        self,
        reactants: ReactionCentreBatch,
        candidates: ReactionCentreBatch,
        owner: torch.Tensor,
        product_mask: torch.Tensor,
        edit_score: torch.Tensor,
    ) -> torch.Tensor:
        before = self.encoder(reactants)[owner]
        after = self.encoder(candidates)
        n = min(before.shape[1], after.shape[1])
        difference = (after[:, :n] - before[:, :n]) * product_mask[:, :n].unsqueeze(-1)
        return self.head(difference.sum(1)).squeeze(-1) + self.edit_weight * edit_score
