import torch

from chemgraph.nn import masked_attention


def test_bias_is_added_to_the_scaled_scores_of_allowed_keys_only():
    torch.manual_seed(0)
    b, h, length, d = 2, 3, 4, 5
    q, k, v = (torch.randn(b, h, length, d) for _ in range(3))
    bias = torch.randn(b, h, length, length)
    mask = torch.ones(b, length, length, dtype=torch.bool)
    mask[1, :, 3] = False  # graph 1: token 3 is padding
    mask[1, 3, :] = False
    bias[1, :, :, 3] = float("nan")  # whatever sits at padding must not leak
    bias[1, :, 3, :] = float("inf")
    out = masked_attention(q, k, v, mask, bias=bias)
    scores = q @ k.transpose(-1, -2) / d**0.5 + torch.nan_to_num(bias)
    scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
    expected = torch.softmax(scores, -1).nan_to_num() @ v
    torch.testing.assert_close(out, expected)
    assert (out[1, :, 3] == 0).all()  # the padding query attends to nothing


def test_bias_without_mask_and_gradient_through_bias():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 3, 4) for _ in range(3))
    bias = torch.randn(1, 2, 3, 3, requires_grad=True)
    out = masked_attention(q, k, v, None, bias=bias)
    expected = torch.softmax(q @ k.transpose(-1, -2) / 2 + bias, -1) @ v
    torch.testing.assert_close(out, expected)
    out.sum().backward()
    assert torch.isfinite(bias.grad).all() and bias.grad.abs().sum() > 0
