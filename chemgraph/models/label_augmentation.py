"""Label augmentation: any property model whose readout also reads each molecule's
low-fidelity labels.

Buterez, Janet, Kiddle, Oglic and Liò 2024, "Transfer learning with graph neural networks for
improved molecular property prediction in the multi-fidelity setting", Nat. Commun. 15, 1517,
doi:10.1038/s41467-024-45566-8: in the transductive setting, where every molecule's
low-fidelity label is known (measured or computed for the whole library), the label is an
input of the high-fidelity model, concatenated to the graph embedding before the final
prediction layers. :class:`LabelAugmentation` does this for any registered family
(:class:`chemgraph.models.PropertyModel`): the family's own readout ``embed(batch)`` is the
graph embedding, and a small MLP predicts the targets from ``[embedding, standardised
low-fidelity values]``. Its batch is :class:`LabelAugmentedBatch`, the family's batch and the
molecules' values, built by :func:`augmented_batch_builder`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chemgraph._dgl import dgl

__all__ = [
    "LabelAugmentation",
    "LabelAugmentedBatch",
    "augmented_batch_builder",
    "readout_width",
]


def readout_width(model: nn.Module) -> int:
    """``D``, the width of a property model's readout ``model.embed(batch)``: the input width
    of the first linear layer of its ``head``, which every registered family's head begins
    with (checked for each family against ``model.embed`` by ``tests/train/test_inference.py``).

    Raises:
        ValueError: a head without a linear layer.
    """
    for layer in model.head.modules():
        if isinstance(layer, nn.Linear):
            return layer.in_features
    raise ValueError(f"the head of {type(model).__name__} has no linear layer")


@dataclass
class LabelAugmentedBatch:
    """The input of :class:`LabelAugmentation`.

    Attributes:
        graphs: the ``B`` molecules as the inner model's family batches them (e.g. an
            :class:`chemgraph.batches.EdgeSetBatch`; anything with ``.to(device)``).
        low_fidelity: ``float32 [B, S]``, each molecule's ``S`` low-fidelity labels in their
            own units (e.g. eV), in the order the model was trained with; NaN = not known.
    """

    graphs: Any
    low_fidelity: torch.Tensor

    def to(self, device: torch.device | str) -> LabelAugmentedBatch:
        """Both parts on ``device``."""
        return LabelAugmentedBatch(self.graphs.to(device), self.low_fidelity.to(device))


def augmented_batch_builder(
    build: Callable[[dgl.DGLGraph], Any],
) -> Callable[[dgl.DGLGraph, torch.Tensor], LabelAugmentedBatch]:
    """The batch builder of a :class:`LabelAugmentation` model from its inner family's
    (``build``, :meth:`chemgraph.models.ModelSpec.collate`): ``(batched DGLGraph of B
    molecules, float [B, S] low-fidelity values) -> LabelAugmentedBatch``. Picklable when
    ``build`` is (DataLoader workers)."""
    return functools.partial(_augmented_batch, build)


def _augmented_batch(
    build: Callable[[dgl.DGLGraph], Any], graphs: dgl.DGLGraph, low_fidelity: Any
) -> LabelAugmentedBatch:
    values = torch.as_tensor(low_fidelity, dtype=torch.float32)
    if values.ndim != 2 or values.shape[0] != graphs.batch_size:
        raise ValueError(
            f"low-fidelity values must be [{graphs.batch_size}, S] for {graphs.batch_size} "
            f"molecules, got {list(values.shape)}"
        )
    return LabelAugmentedBatch(build(graphs), values)


class LabelAugmentation(nn.Module):
    """A property model whose prediction reads each molecule's low-fidelity labels too
    (module docstring; Buterez et al. 2024, doi:10.1038/s41467-024-45566-8).

    ``forward(batch) = head(embed(batch))`` (the :class:`chemgraph.models.PropertyModel`
    contract) with ``embed(batch) = [model.embed(batch.graphs), (low − mean) / std]``,
    ``float32 [B, D + S]``, and ``head`` = Linear(D + S, H) → GELU → Linear(H, T). The inner
    model's own head is dropped (replaced by ``nn.Identity``): its encoder weights are under
    ``encoder.``, the new head's under ``head.`` (fine-tuning copies a pretrained model of the
    same family into ``encoder``, :func:`chemgraph.train.finetune.transfer_weights`).

    Every molecule's prediction depends on its own graph and values only (the head is applied
    row by row), so a molecule gives the same output alone or in a padded batch. A molecule
    with a NaN among its values gets NaN outputs (never a guess): its values enter the head as
    0 (their mean), and its row is then set to NaN by ``torch.where``, which passes no gradient
    to it.

    Args:
        model: a built property model of any registered family (``embed``, ``head``,
            ``config``); its ``head`` is replaced.
        num_outputs: ``T``, the targets predicted.
        low_fidelity_mean, low_fidelity_std: per low-fidelity label, ``S`` values in its units
            (the training molecules'; a std of 0 is read as 1), so that the head reads
            standardised values; non-persistent buffers (the checkpoint's hyper-parameters
            hold them, not its state dict).
        hidden_dim: ``H``; None = ``D``, the inner model's readout width.

    Raises:
        ValueError: no low-fidelity label, means and stds of different lengths, a negative
            or non-finite std, or a model whose head has no linear layer.
    """

    def __init__(
        self,
        model: nn.Module,
        num_outputs: int,
        low_fidelity_mean: Sequence[float],
        low_fidelity_std: Sequence[float],
        hidden_dim: int | None = None,
    ) -> None:
        super().__init__()
        mean = torch.as_tensor(list(low_fidelity_mean), dtype=torch.float32)
        std = torch.as_tensor(list(low_fidelity_std), dtype=torch.float32)
        if mean.ndim != 1 or not len(mean) or mean.shape != std.shape:
            raise ValueError(
                f"low_fidelity_mean and low_fidelity_std must be S >= 1 values each, got "
                f"{list(low_fidelity_mean)} and {list(low_fidelity_std)}"
            )
        if not (torch.isfinite(mean).all() and torch.isfinite(std).all() and (std >= 0).all()):
            raise ValueError(f"bad low-fidelity standardisation: mean {mean}, std {std}")
        width = readout_width(model)
        model.head = nn.Identity()
        self.encoder = model
        hidden = hidden_dim or width
        self.head = nn.Sequential(
            nn.Linear(width + len(mean), hidden), nn.GELU(), nn.Linear(hidden, num_outputs)
        )
        self.register_buffer("low_fidelity_mean", mean, persistent=False)
        self.register_buffer("low_fidelity_std", torch.where(std > 0, std, 1.0), persistent=False)

    @property
    def config(self) -> Any:
        """The inner model's configuration (its family's batches are this model's
        ``graphs``)."""
        return self.encoder.config

    @property
    def auxiliary_loss(self) -> torch.Tensor | None:
        """The inner model's auxiliary loss of its last forward (mixture of experts), or
        None."""
        return getattr(self.encoder, "auxiliary_loss", None)

    def pop_expert_statistics(self) -> Any:
        """The inner mixture-of-experts model's routing statistics, or None for another
        family (:meth:`chemgraph.models.gmoe.GMoE.pop_expert_statistics`)."""
        pop = getattr(self.encoder, "pop_expert_statistics", None)
        return None if pop is None else pop()

    def embed(self, batch: LabelAugmentedBatch) -> torch.Tensor:
        """``[B, D + S]``: the graph embedding and the standardised low-fidelity values (a NaN
        as 0), in the embedding's dtype."""
        graph = self.encoder.embed(batch.graphs)
        low = (batch.low_fidelity.float() - self.low_fidelity_mean) / self.low_fidelity_std
        low = torch.nan_to_num(low, nan=0.0)
        return torch.cat([graph, low.to(graph.dtype)], dim=1)

    def forward(self, batch: LabelAugmentedBatch) -> torch.Tensor:
        """``[B, T]`` predictions; NaN rows for molecules with a NaN low-fidelity value."""
        outputs = self.head(self.embed(batch))
        missing = torch.isnan(batch.low_fidelity).any(dim=1, keepdim=True)
        return torch.where(missing, torch.nan, outputs)
