"""chemgraph.nn.masked_attention with per-pair score factors (GRAT, Yoo et al. 2020 eq. 3)."""

from __future__ import annotations

import torch

from chemgraph.nn import masked_attention


def _brute_force(q, k, v, mask, bias, scale):
    b, h, lq, d = q.shape
    out = torch.zeros(b, h, lq, v.shape[-1], dtype=q.dtype)
    for bi in range(b):
        for hi in range(h):
            for i in range(lq):
                keys = [j for j in range(k.shape[2]) if mask[bi, i, j]]
                if not keys:
                    continue
                s = torch.stack([scale[bi, hi, i, j] * (q[bi, hi, i] @ k[bi, hi, j]) / d**0.5
                                 + bias[bi, hi, i, j] for j in keys])  # fmt: skip
                w = torch.softmax(s, 0)
                out[bi, hi, i] = sum(wj * v[bi, hi, j] for wj, j in zip(w, keys))
    return out


def test_score_scale_matches_brute_force_and_masked_rows_are_zero():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 5, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(2, 4, 4) > 0.4
    mask[0, 2] = False  # a query with no key
    bias, scale = torch.randn(2, 3, 4, 4, dtype=torch.float64), torch.rand(2, 3, 4, 4) + 0.5
    scale = scale.double()
    out = masked_attention(q, k, v, mask, bias=bias, score_scale=scale)
    assert torch.allclose(out, _brute_force(q, k, v, mask, bias, scale))
    assert out[0, :, 2].eq(0).all()
    q.requires_grad_(True)
    masked_attention(q, k, v, mask, bias=bias, score_scale=scale).sum().backward()
    assert torch.isfinite(q.grad).all()


def test_unit_scale_equals_the_sdpa_path():
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 2, 6, 4) for _ in range(3))
    mask = torch.rand(2, 6, 6) > 0.3
    bias = torch.randn(2, 2, 6, 6)
    with_scale = masked_attention(q, k, v, mask, bias=bias, score_scale=torch.ones(1))
    assert torch.allclose(with_scale, masked_attention(q, k, v, mask, bias=bias), atol=1e-6)
    assert torch.allclose(
        masked_attention(q, k, v, None, score_scale=torch.ones(1)),
        masked_attention(q, k, v, None),
        atol=1e-6,
    )
