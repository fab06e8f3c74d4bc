"""Distance encoders for 3D graphs: Gaussian radial basis with a cosine cutoff envelope.

Raw interatomic distances make poor network inputs; they are expanded in ``K`` Gaussian basis
functions instead, as in SchNet (Schütt et al., NeurIPS 2017, "SchNet: a continuous-filter
convolutional neural network for modeling quantum interactions": radial basis expansion
``exp(-gamma * (d - mu_k)**2)``, i.e. ``gamma = 1 / (2 sigma**2)`` here) and Graphormer-3D
(Shi et al., 2022, "Benchmarking Graphormer on large-scale molecular modeling datasets":
Gaussian basis kernel of the spatial encoding). ESA/NSA use the
same preprocessing for 3D data (Buterez et al. 2024, SI 9). The expansion is multiplied by
Behler's cosine cutoff (Behler & Parrinello, PRL 98, 146401, 2007; Behler, J. Chem. Phys. 134,
074106, 2011) so every feature goes smoothly to exactly zero at the cutoff radius and an
atom entering or leaving the radius graph does not change the model's input discontinuously.

Public API
----------
- :func:`cosine_cutoff` — the envelope ``f_c(d)``.
- :class:`GaussianBasis` — ``float32 [E]`` distances (Å) -> ``float32 [E, K]`` features.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["GaussianBasis", "cosine_cutoff"]


def cosine_cutoff(distance: torch.Tensor, cutoff: float) -> torch.Tensor:
    """Behler's cosine cutoff envelope.

    ``f_c(d) = 0.5 * (cos(pi * d / r_c) + 1)`` for ``d < r_c``, else ``0`` (Behler & Parrinello,
    PRL 98, 146401, 2007). So ``f_c(0) = 1``, ``f_c(r_c / 2) = 0.5``, and ``f_c(d) = 0`` exactly
    for ``d >= r_c``, with a zero first derivative at ``r_c`` on both sides.

    Args:
        distance: ``float [...]`` interatomic distances in Å (any shape, any float dtype;
            distances are non-negative, negative values are not meaningful).
        cutoff: ``r_c`` in Å, > 0.

    Returns:
        ``[...]`` envelope values in [0, 1], same shape, dtype and device as ``distance``.
        The gradient is finite everywhere and zero at and beyond the cutoff.

    Raises:
        ValueError: ``cutoff <= 0``.
    """
    if not cutoff > 0:
        raise ValueError(f"cutoff must be > 0 Å, got {cutoff}")
    inside = distance < cutoff
    # Clamp before the cosine so the unused branch stays finite for any input.
    clamped = torch.clamp(distance, max=cutoff)
    value = 0.5 * (torch.cos(clamped * (math.pi / cutoff)) + 1.0)
    return torch.where(inside, value, torch.zeros_like(value))


class GaussianBasis(nn.Module):
    """Gaussian radial basis expansion of distances, times a cosine cutoff envelope.

    For a distance ``d`` (Å) the ``k``-th feature, ``k = 0 .. K-1``, is::

        phi_k(d) = exp(-(d - mu_k)**2 / (2 * sigma_k**2)) * f_c(d)

    with centres ``mu_k = k * cutoff / (K - 1)`` (``K`` evenly spaced centres on
    ``[0, cutoff]``, both ends included, i.e. ``torch.linspace(0, cutoff, K)``), widths
    ``sigma_k = width`` for every ``k``, and ``f_c`` the cosine cutoff (:func:`cosine_cutoff`).
    The default ``width`` is the spacing between neighbouring centres, ``cutoff / (K - 1)``,
    which is the convention of SchNet's reference implementations (``coeff = -0.5 /
    (mu_1 - mu_0)**2`` in SchNetPack's ``GaussianRBF`` and PyTorch Geometric's
    ``GaussianSmearing``; the paper's ``gamma`` is ``1 / (2 sigma**2)``); with ``K = 1`` the
    single centre sits at 0 and the default width is ``cutoff``. The Gaussians are not
    normalised (peak value 1 before the envelope); Graphormer-3D's version divides by
    ``sqrt(2 pi) sigma_k`` and learns ``mu_k`` and ``sigma_k`` (``trainable=True`` here makes
    centres and widths parameters too).

    Because of the envelope, every feature is exactly 0 for ``d >= cutoff``; the features of
    the centres near ``cutoff`` are damped by it (the last one peaks below the cutoff at a
    small value). The centres still follow the usual ``linspace`` convention.

    Sources: Schütt et al., NeurIPS 2017 (SchNet); Shi et al., 2022 (Graphormer-3D);
    Buterez et al. 2024, SI 9 (ESA/NSA on 3D data); Behler & Parrinello, PRL 2007
    (cutoff).

    Args:
        num_basis: ``K`` >= 1, the number of Gaussians (the output width, ``len(basis)``).
        cutoff: ``r_c`` in Å, > 0: last centre and envelope radius. Use the radius graph's
            cutoff.
        width: ``sigma`` in Å, > 0; default ``cutoff / (K - 1)`` (``cutoff`` when ``K = 1``).
        trainable: register centres and widths as ``nn.Parameter`` (``[K]`` each) instead of
            buffers. Default ``False``: the module has no parameters.
        envelope: multiply by the cosine cutoff (default ``True``). ``False`` gives plain SchNet
            Gaussians, which are not zero at the cutoff.

    Shapes:
        ``forward(distance: float32 [E]) -> float32 [E, K]``; more generally ``[...]`` ->
        ``[..., K]``. Output dtype and device follow the module's buffers (float32 unless the
        module was converted), inputs are cast to them.
    """

    centers: torch.Tensor
    widths: torch.Tensor

    def __init__(
        self,
        num_basis: int = 50,
        cutoff: float = 5.0,
        width: float | None = None,
        trainable: bool = False,
        envelope: bool = True,
    ) -> None:
        super().__init__()
        if num_basis < 1:
            raise ValueError(f"num_basis must be >= 1, got {num_basis}")
        if not cutoff > 0:
            raise ValueError(f"cutoff must be > 0 Å, got {cutoff}")
        if width is None:
            width = cutoff / (num_basis - 1) if num_basis > 1 else cutoff
        if not width > 0:
            raise ValueError(f"width must be > 0 Å, got {width}")
        self.num_basis = int(num_basis)
        self.cutoff = float(cutoff)
        self.width = float(width)
        self.trainable = bool(trainable)
        self.envelope = bool(envelope)
        centers = torch.linspace(0.0, self.cutoff, self.num_basis, dtype=torch.float32)
        widths = torch.full((self.num_basis,), self.width, dtype=torch.float32)
        if self.trainable:
            self.centers = nn.Parameter(centers)
            self.widths = nn.Parameter(widths)
        else:
            self.register_buffer("centers", centers)
            self.register_buffer("widths", widths)

    def __len__(self) -> int:
        """``K``, the number of output features."""
        return self.num_basis

    def forward(self, distance: torch.Tensor) -> torch.Tensor:
        """Expand distances.

        Args:
            distance: ``float32 [E]`` (or any shape ``[...]``) distances in Å.

        Returns:
            ``float32 [E, K]`` (``[..., K]``) features ``phi_k(d)`` in [0, 1].
        """
        d = distance.to(dtype=self.centers.dtype).unsqueeze(-1)
        z = (d - self.centers) / self.widths
        out = torch.exp(-0.5 * z * z)
        if self.envelope:
            out = out * cosine_cutoff(d, self.cutoff)
        return out

    def extra_repr(self) -> str:
        return (
            f"num_basis={self.num_basis}, cutoff={self.cutoff}, width={self.width}, "
            f"trainable={self.trainable}, envelope={self.envelope}"
        )
