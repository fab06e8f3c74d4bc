"""Target standardisation for regression."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["TargetScaler"]


@dataclass
class TargetScaler:
    """Per-task standardisation ``z = (y - mean) / std`` fitted on training labels.

    Attributes:
        mean: per-task means, length T, in the targets' units.
        std: per-task standard deviations (population), length T; 1.0 where a task's labels
            are constant or absent, so that the transform is always defined.
    """

    mean: list[float]
    std: list[float]

    @classmethod
    def fit(cls, labels: torch.Tensor) -> TargetScaler:
        """Fit on ``float32 [N, T]`` labels, ignoring NaN (missing) entries.

        Computed in float64, so that labels up to float32's largest value (about 3.4e38)
        give a finite mean and standard deviation (their squares overflow float32 above
        about 1.8e19)."""
        labels = labels.to(torch.float64)
        present = ~torch.isnan(labels)
        count = present.sum(0).clamp(min=1)
        filled = torch.where(present, labels, 0.0)
        mean = filled.sum(0) / count
        var = (torch.where(present, labels - mean, 0.0) ** 2).sum(0) / count
        std = var.sqrt()
        std = torch.where(std > 0, std, torch.ones_like(std))
        return cls(mean=mean.tolist(), std=std.tolist())

    def _tensors(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean = torch.tensor(self.mean, dtype=like.dtype, device=like.device)
        return mean, torch.tensor(self.std, dtype=like.dtype, device=like.device)

    def transform(self, labels: torch.Tensor) -> torch.Tensor:
        mean, std = self._tensors(labels)
        return (labels - mean) / std

    def inverse_transform(self, values: torch.Tensor) -> torch.Tensor:
        mean, std = self._tensors(values)
        return values * std + mean
