"""A molecule as the electronic-structure codes take it: elements and 3D coordinates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ase.data import atomic_numbers

__all__ = ["QCMolecule"]


@dataclass(frozen=True)
class QCMolecule:
    """One molecule for a quantum-chemistry calculation.

    Attributes:
        molecule_id: identifier written into every result row (e.g. the QM9 index).
        elements: element symbols, length N (``("O", "H", "H")``).
        positions: float64 [N, 3], Cartesian coordinates in Å.
        charge: total charge (elementary charges).
        spin: number of unpaired electrons (2S); only closed shells (0) are supported by the
            frontier-orbital functions of this package.

    Raises:
        ValueError: positions not [N, 3] for N elements, unknown element symbol, or no atoms.
    """

    molecule_id: str
    elements: tuple[str, ...]
    positions: np.ndarray
    charge: int = 0
    spin: int = 0

    def __post_init__(self) -> None:
        positions = np.asarray(self.positions, dtype=np.float64)
        object.__setattr__(self, "elements", tuple(self.elements))
        object.__setattr__(self, "positions", positions)
        if not self.elements:
            raise ValueError(f"molecule {self.molecule_id}: no atoms")
        if positions.shape != (len(self.elements), 3):
            raise ValueError(
                f"molecule {self.molecule_id}: positions must be [{len(self.elements)}, 3] "
                f"(one row per element, Å), got {list(positions.shape)}"
            )
        unknown = sorted({e for e in self.elements if e not in atomic_numbers})
        if unknown:
            raise ValueError(f"molecule {self.molecule_id}: unknown element symbols {unknown}")

    @property
    def atomic_numbers(self) -> np.ndarray:
        """int64 [N] atomic numbers."""
        return np.array([atomic_numbers[e] for e in self.elements], dtype=np.int64)

    @property
    def num_electrons(self) -> int:
        """Number of electrons (sum of atomic numbers minus the charge)."""
        return int(self.atomic_numbers.sum()) - self.charge
