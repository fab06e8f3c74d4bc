"""What every model configuration dataclass shares: value checks, user-option check, dict form."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, fields
from typing import Any, ClassVar

__all__ = ["ModelConfig"]


class ModelConfig:
    """Base of the model configuration dataclasses (:class:`chemgraph.models.ESAConfig`, ...).

    Subclasses are dataclasses that list in :attr:`FIXED` the fields set by the featurizer and
    the task rather than by the user (feature widths, vocabularies, number of outputs), each with
    a placeholder value that :meth:`check_options` uses to build a trial configuration.
    """

    FIXED: ClassVar[dict[str, Any]] = {}

    @classmethod
    def check_options(cls, options: dict) -> None:
        """Validate user options (every field but those in :attr:`FIXED`).

        Raises:
            ValueError: an unknown option (the valid ones are listed) or a bad value.
        """
        allowed = {f.name for f in fields(cls)} - set(cls.FIXED)
        unknown = set(options) - allowed
        if unknown:
            raise ValueError(f"unknown model_options {sorted(unknown)}; valid: {sorted(allowed)}")
        cls(**cls.FIXED, **options)

    def to_dict(self) -> dict:
        return asdict(self)

    def check_positive_integers(self, names: Iterable[str]) -> None:
        """Raises ValueError naming the first field of ``names`` that is not an integer >= 1."""
        for name in names:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def check_fractions(self, names: Iterable[str]) -> None:
        """Raises ValueError naming the first field of ``names`` outside [0, 1) (dropouts)."""
        for name in names:
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")

    def check_heads(self) -> None:
        """Raises ValueError when ``hidden_dim`` is not divisible by ``num_heads``."""
        if self.hidden_dim % self.num_heads:
            raise ValueError(
                f"hidden_dim {self.hidden_dim} is not divisible by num_heads {self.num_heads}"
            )
