"""Gaussian radial basis and cosine cutoff: values by hand, shapes, gradients."""

from __future__ import annotations

import math

import pytest
import torch

from chemgraph.featurize import GaussianBasis, cosine_cutoff


def test_cosine_cutoff_values():
    d = torch.tensor([0.0, 1.0, 2.0, 4.0, 4.0 + 1e-6, 7.0])
    got = cosine_cutoff(d, 4.0)
    expected = torch.tensor(
        [1.0, 0.5 * (math.cos(math.pi / 4) + 1), 0.5, 0.0, 0.0, 0.0], dtype=torch.float32
    )
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-7)
    assert got[3] == 0 and got[4] == 0 and got[5] == 0  # exactly zero at and beyond r_c


def test_cosine_cutoff_rejects_bad_cutoff():
    with pytest.raises(ValueError):
        cosine_cutoff(torch.zeros(1), 0.0)


def test_basis_layout_and_default_width():
    basis = GaussianBasis(num_basis=6, cutoff=5.0)
    torch.testing.assert_close(basis.centers, torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
    torch.testing.assert_close(basis.widths, torch.full((6,), 1.0))  # spacing cutoff / (K - 1)
    assert len(basis) == 6
    assert list(basis.parameters()) == []  # nothing trainable by default


def test_basis_values_by_hand():
    # K = 6 centres 0, 1, ..., 5 Å; sigma = 1 Å; r_c = 5 Å.
    basis = GaussianBasis(num_basis=6, cutoff=5.0)
    out = basis(torch.tensor([0.0, 2.0, 2.5, 5.0, 6.0]))
    assert out.shape == (5, 6) and out.dtype == torch.float32
    k = torch.arange(6, dtype=torch.float64)
    # d = 0: envelope 1, phi_k = exp(-k^2 / 2)
    at_zero = torch.exp(-(k**2) / 2)
    # d = 2 (a centre): phi_2 = 1 * f_c(2), f_c(2) = 0.5 (cos(2 pi / 5) + 1)
    fc2 = 0.5 * (math.cos(2 * math.pi / 5) + 1)
    at_centre = torch.exp(-((2 - k) ** 2) / 2) * fc2
    # d = 2.5, half-way between centres 2 and 3: phi_2 = phi_3 = exp(-1/8) * f_c(2.5), f_c = 1/2
    at_half = torch.exp(-((2.5 - k) ** 2) / 2) * 0.5
    torch.testing.assert_close(out[0].double(), at_zero, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(out[1].double(), at_centre, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(out[2].double(), at_half, rtol=1e-6, atol=1e-7)
    assert out[0, 0] == 1.0
    assert out[1, 2] == pytest.approx(fc2, abs=1e-7)
    assert out[2, 2] == out[2, 3] == pytest.approx(math.exp(-0.125) / 2, abs=1e-7)
    assert torch.all(out[3] == 0) and torch.all(out[4] == 0)  # at and beyond the cutoff


def test_custom_width_and_no_envelope():
    basis = GaussianBasis(num_basis=3, cutoff=4.0, width=0.5, envelope=False)
    out = basis(torch.tensor([1.0, 4.0]))
    # centres 0, 2, 4; sigma 0.5: phi = exp(-(d - mu)^2 / (2 * 0.25))
    torch.testing.assert_close(
        out, torch.exp(-((torch.tensor([[1.0], [4.0]]) - torch.tensor([0.0, 2.0, 4.0])) ** 2) * 2)
    )
    assert out[1, 2] == 1.0  # without envelope the last Gaussian fires at the cutoff


def test_shapes():
    basis = GaussianBasis(num_basis=16, cutoff=6.0)
    assert basis(torch.zeros(0)).shape == (0, 16)
    assert basis(torch.rand(7) * 8).shape == (7, 16)
    assert basis(torch.rand(2, 3) * 8).shape == (2, 3, 16)
    assert GaussianBasis(num_basis=1, cutoff=3.0)(torch.tensor([0.0, 1.0])).shape == (2, 1)


def test_gradient_finite_and_zero_beyond_cutoff():
    basis = GaussianBasis(num_basis=8, cutoff=5.0)
    d = torch.tensor([0.0, 1e-8, 0.7, 2.5, 4.999, 5.0, 9.0], requires_grad=True)
    basis(d).sum().backward()
    assert torch.isfinite(d.grad).all()
    assert d.grad[5] == 0 and d.grad[6] == 0


def test_trainable_option():
    basis = GaussianBasis(num_basis=4, cutoff=3.0, trainable=True)
    names = sorted(name for name, _ in basis.named_parameters())
    assert names == ["centers", "widths"]
    basis(torch.tensor([0.5, 1.5])).sum().backward()
    assert torch.isfinite(basis.centers.grad).all() and torch.isfinite(basis.widths.grad).all()


def test_bad_arguments():
    with pytest.raises(ValueError):
        GaussianBasis(num_basis=0)
    with pytest.raises(ValueError):
        GaussianBasis(cutoff=-1.0)
    with pytest.raises(ValueError):
        GaussianBasis(width=0.0)
