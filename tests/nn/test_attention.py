import math

import torch

from chemgraph.nn import MultiHeadAttention, masked_attention


def naive_attention(q, k, v, mask):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def test_masked_attention_matches_naive_formula():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = torch.rand(2, 5, 5) > 0.4
    mask |= torch.eye(5, dtype=torch.bool)  # every row has a key
    torch.testing.assert_close(masked_attention(q, k, v, mask), naive_attention(q, k, v, mask))


def test_fully_masked_row_is_zero_with_finite_gradient():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 4, 3, requires_grad=True) for _ in range(3))
    mask = torch.ones(1, 4, 4, dtype=torch.bool)
    mask[0, 2] = False  # query 2 may attend to nothing
    out = masked_attention(q, k, v, mask)
    assert torch.equal(out[0, :, 2], torch.zeros(2, 3))
    out.sum().backward()
    for tensor in (q, k, v):
        assert torch.isfinite(tensor.grad).all()
    assert torch.equal(q.grad[0, :, 2], torch.zeros(2, 3))


def test_multi_head_attention_matches_torch_reference():
    torch.manual_seed(0)
    dim, heads = 8, 2
    ours = MultiHeadAttention(dim, heads)
    reference = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(
            torch.cat([ours.query.weight, ours.key.weight, ours.value.weight])
        )
        reference.in_proj_bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
        reference.out_proj.weight.copy_(ours.out.weight)
        reference.out_proj.bias.copy_(ours.out.bias)
    x = torch.randn(3, 6, dim)
    mask = torch.rand(3, 6, 6) > 0.5
    mask |= torch.eye(6, dtype=torch.bool)
    expected, _ = reference(x, x, x, attn_mask=~mask.repeat_interleave(heads, 0))
    torch.testing.assert_close(ours(x, x, mask), expected, atol=1e-5, rtol=1e-5)
