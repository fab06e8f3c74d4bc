"""Lightning module: GRAT graph-to-graph translation (reaction outcome prediction).

:class:`ReactionModule` trains; its network, vocabulary and valence rules are those of
:class:`chemgraph.train.predictors.ReactionPredictorBase`, which the checkpoint's predictor
(:class:`~chemgraph.train.predictors.ReactionPredictor`, no Lightning) shares.
"""

from __future__ import annotations

import lightning as L
import torch
import torch.nn.functional as F

from chemgraph.batches.reaction import IGNORE_INDEX, ReactionBatch
from chemgraph.chem.graph_codec import NO_BOND
from chemgraph.train.predictors import ReactionPredictorBase

__all__ = ["ReactionModule", "translation_loss"]


def translation_loss(
    label_logits: torch.Tensor,
    edge_logits: torch.Tensor,
    batch: ReactionBatch,
    label_smoothing: float = 0.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Cross-entropy of the node labels plus cross-entropy of the bonds (teacher forcing).

    Args:
        label_logits: ``float [B, M, V]`` from :class:`GRATTranslator`.
        edge_logits: ``float [B, M, M - 1, C]``.
        batch: holds ``label_targets [B, M]`` and ``edge_targets [B, M, M - 1]``
            (:data:`IGNORE_INDEX` = no target).
        label_smoothing: of both cross-entropies.

    Returns:
        ``loss`` = mean label loss + mean bond loss, and the parts plus teacher-forced scores:
        ``label_accuracy``; ``bond_precision`` and ``bond_recall``, over the true bonds (a
        predicted bond counts when its class is right; most atom pairs have no bond, so an
        accuracy over all pairs would say little); ``graph_accuracy`` (fraction of reactions
        whose every label and bond is the argmax).
    """
    labels, edges = batch.label_targets, batch.edge_targets
    label_loss = F.cross_entropy(
        label_logits.float().flatten(0, 1), labels.flatten(), label_smoothing=label_smoothing
    )
    has_edges = bool((edges != IGNORE_INDEX).any())
    edge_loss = (
        F.cross_entropy(
            edge_logits.float().flatten(0, 2), edges.flatten(), label_smoothing=label_smoothing
        )
        if has_edges
        else edge_logits.sum() * 0.0
    )
    with torch.no_grad():
        label_ok = (label_logits.argmax(-1) == labels) | (labels == IGNORE_INDEX)
        edge_ok = (edge_logits.argmax(-1) == edges) | (edges == IGNORE_INDEX)
        present_labels = labels != IGNORE_INDEX
        predicted_bonds = (edge_logits.argmax(-1) != NO_BOND) & (edges != IGNORE_INDEX)
        true_bonds = (edges != NO_BOND) & (edges != IGNORE_INDEX)
        right_bonds = (edge_logits.argmax(-1) == edges) & true_bonds
        parts = {
            "label_loss": label_loss.detach(),
            "bond_loss": edge_loss.detach(),
            "label_accuracy": (label_ok & present_labels).sum() / present_labels.sum().clamp(min=1),
            "bond_precision": right_bonds.sum() / predicted_bonds.sum().clamp(min=1),
            "bond_recall": right_bonds.sum() / true_bonds.sum().clamp(min=1),
            "graph_accuracy": (label_ok.all(1) & edge_ok.flatten(1).all(1)).float().mean(),
        }
    return label_loss + edge_loss, parts


class ReactionModule(ReactionPredictorBase, L.LightningModule):
    """GRAT encoder-decoder trained by teacher forcing on (reactants, reagents) -> products.

    Args:
        model_config: :class:`GRATTranslatorConfig` as a dict (``vocab_size`` included).
        vocabulary: the token list of :class:`TokenVocabulary` (saved in the checkpoint).
        learning_rate: peak AdamW learning rate.
        weight_decay: AdamW weight decay.
        warmup_steps: linear warm-up, then inverse square-root decay (Vaswani et al. 2017,
            section 5.3; the learning-rate schedule of the Molecular Transformer).
        label_smoothing: of the label and bond cross-entropies.
        allowed_valences: per token, the bond-order sums (half bonds) its atoms have in the
            training reactions (:func:`chemgraph.batches.reaction.observed_valences`); beam
            search keeps decoded atoms to them (:attr:`valence_rules`). None: no limits.

    The checkpoint's ``hyper_parameters`` hold only plain Python values, so it loads with
    ``torch.load(..., weights_only=True)``.
    """

    def __init__(
        self,
        model_config: dict,
        vocabulary: list[str],
        learning_rate: float = 5e-4,
        weight_decay: float = 0.0,
        warmup_steps: int = 1000,
        label_smoothing: float = 0.0,
        allowed_valences: list[list[int]] | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self._build(model_config, vocabulary, allowed_valences)

    def _shared_step(self, batch: ReactionBatch, stage: str) -> torch.Tensor:
        loss, parts = translation_loss(*self(batch), batch, self.hparams.label_smoothing)
        size = batch.batch_size
        self.log(f"{stage}_loss", loss, on_step=False, on_epoch=True, batch_size=size,
                 prog_bar=stage == "val")  # fmt: skip
        for name, value in parts.items():
            self.log(f"{stage}_{name}", value, on_step=False, on_epoch=True, batch_size=size)
        return loss

    def training_step(self, batch: ReactionBatch, batch_idx: int) -> torch.Tensor:
        return self._shared_step(batch, "train")

    def validation_step(self, batch: ReactionBatch, batch_idx: int) -> None:
        self._shared_step(batch, "val")

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(
            self.parameters(),
            lr=self.hparams.learning_rate,
            weight_decay=self.hparams.weight_decay,
            betas=(0.9, 0.98),
        )
        warmup = max(1, self.hparams.warmup_steps)

        def schedule(step: int) -> float:
            step += 1
            return min(step / warmup, (warmup / step) ** 0.5)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        schedule_config = {"scheduler": scheduler, "interval": "step"}
        return {"optimizer": optimizer, "lr_scheduler": schedule_config}
