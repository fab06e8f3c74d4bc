"""What every plain-tensor batch shares: device moves, pinning, per-graph positions."""

from __future__ import annotations

from dataclasses import fields

import torch

__all__ = ["TensorBatch", "positions_in_graph"]


class TensorBatch:
    """``.to(device)`` and ``.pin_memory()`` over every tensor field of a dataclass."""

    def to(self, device: torch.device | str, non_blocking: bool = False):
        values = {f.name: _move(getattr(self, f.name), device, non_blocking) for f in fields(self)}
        return type(self)(**values)

    def pin_memory(self):
        values = {f.name: _pin(getattr(self, f.name)) for f in fields(self)}
        return type(self)(**values)

    @property
    def batch_size(self) -> int:
        return self.pad_mask.shape[0]


def _move(value, device, non_blocking):
    return value.to(device, non_blocking=non_blocking) if torch.is_tensor(value) else value


def _pin(value):
    return value.pin_memory() if torch.is_tensor(value) else value


def positions_in_graph(graph_of_item: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Index of each item within its graph, for items sorted by graph."""
    offsets = torch.cumsum(counts, 0) - counts
    return torch.arange(graph_of_item.numel(), device=counts.device) - offsets[graph_of_item]
