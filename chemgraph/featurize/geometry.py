"""Featurization of 3D structures for radius graphs: atom types only, distances in Gaussians.

The setup of Buterez et al. 2024 Table 5 (transfer learning on QM9 HOMO/LUMO, section 4.1): "all the
models use the 3D atomic coordinates and atom types as inputs and no other node or edge
features". A node is the one-hot of its element; an edge of the radius graph carries its
distance expanded in :class:`~chemgraph.featurize.GaussianBasis` (Buterez et al. 2024 SI 9). With
:func:`chemgraph.graphs.atoms_to_radius_graph` an ESA edge token is then
``onehot(z_src) ‖ onehot(z_dst) ‖ phi(d_src,dst)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from ase.data import chemical_symbols

from chemgraph.featurize.distance import GaussianBasis

__all__ = ["ElementOneHot", "RadiusGraphFeaturizer"]


@dataclass(frozen=True)
class ElementOneHot:
    """One-hot of the chemical element, with a trailing slot for any other element.

    Attributes:
        atomic_numbers: the elements with their own column, in column order (default H, C, N,
            O, F: the elements of QM9).

    Shapes:
        ``__call__(atomic_numbers: int64 [N]) -> float32 [N, len(self)]``;
        ``len(self) == len(atomic_numbers) + 1``.
    """

    atomic_numbers: tuple[int, ...] = (1, 6, 7, 8, 9)

    def __post_init__(self) -> None:
        numbers = tuple(int(z) for z in self.atomic_numbers)
        if not numbers or len(set(numbers)) != len(numbers) or min(numbers) < 1:
            raise ValueError(f"atomic_numbers must be distinct and >= 1, got {numbers}")
        object.__setattr__(self, "atomic_numbers", numbers)

    def __len__(self) -> int:
        return len(self.atomic_numbers) + 1

    @property
    def field_names(self) -> tuple[str, ...]:
        """``("element=H", ..., "element=other")``."""
        return tuple(f"element={chemical_symbols[z]}" for z in self.atomic_numbers) + (
            "element=other",
        )

    def __call__(self, atomic_numbers: np.ndarray | torch.Tensor) -> torch.Tensor:
        z = torch.as_tensor(np.asarray(atomic_numbers), dtype=torch.int64).reshape(-1, 1)
        known = z == torch.tensor(self.atomic_numbers)  # [N, K]
        column = torch.where(known.any(1), known.float().argmax(1), len(self.atomic_numbers))
        return torch.nn.functional.one_hot(column, len(self)).to(torch.float32)


@dataclass(frozen=True)
class RadiusGraphFeaturizer:
    """How a 3D structure becomes an ESA input: radius cutoff, atom types, Gaussian distances.

    A named, frozen configuration saved into checkpoints (``to_dict``/``from_dict``), the 3D
    counterpart of :class:`chemgraph.featurize.FeaturizerPreset`.

    Attributes:
        cutoff: radius graph cutoff in Å (edges for distances strictly below it).
        max_neighbors: keep at most this many incoming edges per atom, the nearest (None = no
            cap); equidistant candidates are chosen by atomic number (heavier first), then
            position, never by the atom order (:func:`chemgraph.graphs.radius_graph`). A cap
            bounds the ESA tokens of a molecule at ``max_neighbors × atoms`` instead of
            ``atoms × (atoms − 1)``.
        num_basis: ``K`` Gaussians of :class:`~chemgraph.featurize.GaussianBasis` (centres
            evenly spaced on [0, cutoff], cosine envelope).
        atomic_numbers: elements of the :class:`ElementOneHot` node features.
        atom_distance_basis: ``K_a`` > 0 appends to every atom's features the sum, over every
            other atom of the molecule (not only the radius-graph neighbours), of its distance
            in ``K_a`` Gaussians (:meth:`atom_distance_features`), so that distances beyond
            the cutoff reach the model; 0 (default) = element one-hot only. The authors' code
            for Buterez et al. 2024 Table 5 (github.com/davidbuterez/edge-set-attention,
            ``transfer_learning/esa_3d/models.py``) adds such a sum, of learned per-atom-pair
            Gaussians over all atoms, to its atom embeddings.
        atom_distance_range: Å, the last centre of those Gaussians (centres evenly spaced on
            ``[0, atom_distance_range]``, width the spacing, no envelope).

    Attributes derived: ``atom`` (the :class:`ElementOneHot`), ``node_features`` (the atom
    feature width ``d_n``: one-hot plus ``K_a``), ``edge_features`` (``K``),
    ``edge_token_features`` (``2·d_n + K``, the ESA token width).
    """

    cutoff: float = 5.0
    num_basis: int = 32
    atomic_numbers: tuple[int, ...] = (1, 6, 7, 8, 9)
    name: str = "radius_atom_types"
    max_neighbors: int | None = None
    atom_distance_basis: int = 0
    atom_distance_range: float = 6.0

    def __post_init__(self) -> None:
        if not (self.cutoff > 0 and np.isfinite(self.cutoff)):
            raise ValueError(f"cutoff must be a finite number > 0 Å, got {self.cutoff}")
        if self.max_neighbors is not None:
            if (
                isinstance(self.max_neighbors, bool)
                or int(self.max_neighbors) != self.max_neighbors
            ):
                raise ValueError(
                    f"max_neighbors must be an integer or None, got {self.max_neighbors!r}"
                )
            if self.max_neighbors < 1:
                raise ValueError(f"max_neighbors must be >= 1 or None, got {self.max_neighbors}")
            object.__setattr__(self, "max_neighbors", int(self.max_neighbors))
        if int(self.num_basis) < 1:
            raise ValueError(f"num_basis must be >= 1, got {self.num_basis}")
        if isinstance(self.atom_distance_basis, bool) or int(self.atom_distance_basis) < 0:
            raise ValueError(f"atom_distance_basis must be >= 0, got {self.atom_distance_basis}")
        if not (self.atom_distance_range > 0 and np.isfinite(self.atom_distance_range)):
            raise ValueError(
                f"atom_distance_range must be a finite number > 0 Å, got {self.atom_distance_range}"
            )
        object.__setattr__(
            self, "atomic_numbers", ElementOneHot(self.atomic_numbers).atomic_numbers
        )

    @property
    def atom(self) -> ElementOneHot:
        return ElementOneHot(self.atomic_numbers)

    @property
    def node_features(self) -> int:
        return len(self.atom) + int(self.atom_distance_basis)

    def atom_distance_features(self, positions: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``float32 [N, K_a]``: row ``i`` is ``Σ_{j≠i} phi(|pos_i − pos_j|)`` over every
        other atom, ``phi`` the :class:`~chemgraph.featurize.GaussianBasis` of
        ``atom_distance_basis`` centres on ``[0, atom_distance_range]`` without envelope.
        ``positions``: ``[N, 3]`` in Å. Invariant to rotation, translation and atom order
        (rows follow the atoms)."""
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.float64).reshape(-1, 3)
        basis = GaussianBasis(
            int(self.atom_distance_basis), float(self.atom_distance_range), envelope=False
        ).double()
        distances = torch.cdist(pos, pos, compute_mode="donot_use_mm_for_euclid_dist")
        with torch.no_grad():
            values = basis(distances)  # [N, N, K_a]
        values = values * (1 - torch.eye(len(pos), dtype=values.dtype)).unsqueeze(-1)
        return values.sum(dim=1).to(torch.float32)

    @property
    def edge_features(self) -> int:
        return int(self.num_basis)

    @property
    def edge_token_features(self) -> int:
        return 2 * self.node_features + self.edge_features

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["atomic_numbers"] = list(self.atomic_numbers)
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RadiusGraphFeaturizer:
        return cls(**{**values, "atomic_numbers": tuple(values["atomic_numbers"])})
