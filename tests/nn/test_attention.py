import math

import pytest
import torch

from chemgraph.nn import (
    DenseMask,
    MultiHeadAttention,
    masked_attention,
    segment_softmax,
    sparse_attention,
)


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


def test_dense_mask_is_derived_once_and_gives_the_same_attention():
    """A :class:`DenseMask` built once (the layers of a model share it) gives exactly what the
    boolean mask gives; its fields are those of the mask, checked entry by entry; its additive
    form is 0 where allowed and -inf elsewhere, cached per dtype."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    bias = torch.randn(2, 3, 5, 5)
    mask = torch.rand(2, 5, 5) > 0.4
    mask[0, 3] = False  # a query with no key
    mask[1, :, 4] = False  # a key no query uses
    dense = DenseMask.of(mask)
    assert DenseMask.of(dense) is dense
    for b in range(2):
        for i in range(5):
            assert dense.has_key[b, 0, i, 0] == any(mask[b, i].tolist())
            assert dense.attended[b, 0, i, 0] == any(mask[b, :, i].tolist())
            for j in range(5):
                expected = bool(mask[b, i, j]) or not any(mask[b, i].tolist())
                assert dense.allowed[b, 0, i, j] == expected
                assert dense.additive(torch.float32)[b, 0, i, j] == (0.0 if expected else -math.inf)
    assert dense.additive(torch.float32) is dense.additive(torch.float32)
    assert dense.additive(torch.bfloat16).dtype == torch.bfloat16
    for extra in ({}, {"bias": bias}):
        assert torch.equal(
            masked_attention(q, k, v, dense, **extra), masked_attention(q, k, v, mask, **extra)
        )


def test_masked_finite_skips_the_zeroing_and_gives_the_same_output():
    """``DenseMask.of(mask, masked_finite=True)`` (the caller keeps the masked queries, keys
    and values finite, as ESA keeps its padding) gives the same output, bit for bit, as the
    zeroing path, for an adjacency with an empty query row and a key no query uses, and for a
    key-padding mask."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = torch.rand(2, 5, 5) > 0.4
    mask[0, 3] = False  # a query with no key
    mask[1, :, 4] = False  # a key no query uses
    keys = torch.tensor([[True, True, True, False, False], [True] * 5]).unsqueeze(1)
    for m in (mask, keys):
        trusted = DenseMask.of(m, masked_finite=True)
        assert trusted.masked_finite and not DenseMask.of(m).masked_finite
        assert torch.equal(masked_attention(q, k, v, trusted), masked_attention(q, k, v, m))
    out = masked_attention(q, k, v, DenseMask.of(mask, masked_finite=True))
    assert torch.equal(out[0, :, 3], torch.zeros(3, 4))  # the query with no key


def test_fused_projections_equal_the_separate_linear_layers():
    """Self-attention projects query, key and value in one matrix product, cross-attention key
    and value in one: the same values as the three ``nn.Linear`` layers, bit for bit (CPU)."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 4)
    x, seeds = torch.randn(3, 7, 16), torch.randn(3, 2, 16)
    for query, key_value in ((x, x), (seeds, x)):
        separate = (attention.query(query), attention.key(key_value), attention.value(key_value))
        for fused, expected in zip(attention._project(query, key_value), separate):
            assert torch.equal(fused, expected)


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


def test_key_padding_mask_equals_the_full_mask():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    keys = torch.tensor([[True, True, True, False, False], [True] * 5])
    full = keys.unsqueeze(1).expand(-1, 5, -1)
    torch.testing.assert_close(
        masked_attention(q, k, v, keys.unsqueeze(1)), naive_attention(q, k, v, full)
    )


def random_mask_and_pairs(batch, length, seed=0):
    """A random mask with an empty row (query 1 of graph 0) and padding (graph 1), its pairs."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(batch, length, length, generator=generator) > 0.5
    mask[0, 1] = False
    mask[1, -2:] = mask[1, :, -2:] = False
    query, key = torch.nonzero(mask.flatten(0, 1)).t()
    return mask, torch.stack([query, query - query % length + key])


def as_tokens(x):
    """[B, H, L, D] -> [B·L, H, D] (the layout of sparse_attention)."""
    return x.transpose(1, 2).flatten(0, 1)


def test_sparse_attention_equals_masked_attention_with_gradients():
    torch.manual_seed(0)
    mask, pairs = random_mask_and_pairs(2, 7)
    inputs = [torch.randn(2, 3, 7, 4, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    dense = masked_attention(*inputs, mask)
    dense_grads = torch.autograd.grad((dense * dense.detach()).sum(), inputs)
    sparse = sparse_attention(*map(as_tokens, inputs), pairs)
    torch.testing.assert_close(sparse, as_tokens(dense), atol=1e-12, rtol=1e-12)
    sparse_grads = torch.autograd.grad((sparse * sparse.detach()).sum(), inputs)
    for ours, expected in zip(sparse_grads, dense_grads):
        torch.testing.assert_close(ours, expected, atol=1e-12, rtol=1e-12)
    assert torch.equal(sparse[1], torch.zeros(3, 4, dtype=torch.float64))  # no keys: zero
    assert torch.equal(sparse_grads[0][0, :, 1], torch.zeros(3, 4, dtype=torch.float64))


@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_sparse_attention_gradcheck(dropout):
    _, pairs = random_mask_and_pairs(2, 5, seed=1)
    inputs = [torch.randn(10, 2, 3, dtype=torch.float64, requires_grad=True) for _ in range(3)]

    def attend(q, k, v):
        torch.manual_seed(0)  # the same dropout mask in every call
        return sparse_attention(q, k, v, pairs, dropout)

    assert torch.autograd.gradcheck(attend, inputs)


def test_sparse_attention_dropout_is_inverted_dropout_of_the_weights():
    torch.manual_seed(0)
    pairs = torch.tensor([[0] * 50, list(range(50))])
    q, k = torch.zeros(50, 1, 2), torch.zeros(50, 1, 2)  # uniform weights 1/50
    v = torch.ones(50, 1, 1)
    out = sparse_attention(q, k, v, pairs, dropout=0.5)
    kept = out[0, 0, 0] * 50 * 0.5  # each kept weight is (1/50) / (1 - 0.5)
    assert 0 < kept < 50
    torch.testing.assert_close(kept, kept.round())


def test_sparse_attention_promotes_bfloat16():
    torch.manual_seed(0)
    _, pairs = random_mask_and_pairs(2, 3)
    q, k, v = (torch.randn(6, 2, 4) for _ in range(3))
    low = sparse_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), pairs)
    assert low.dtype == torch.bfloat16
    expected = sparse_attention(
        q.bfloat16().float(), k.bfloat16().float(), v.bfloat16().float(), pairs
    )
    torch.testing.assert_close(low, expected.bfloat16())


def test_nan_outside_the_pairs_cannot_leak():
    torch.manual_seed(0)
    mask, pairs = random_mask_and_pairs(2, 7)
    q, k, v = (torch.randn(14, 2, 3) for _ in range(3))
    clean = sparse_attention(q, k, v, pairs)
    for tensor in (q, k, v):
        tensor[12:] = float("nan")  # the two padded tokens of graph 1
    torch.testing.assert_close(sparse_attention(q, k, v, pairs)[:12], clean[:12])


@pytest.mark.parametrize("poison", [float("nan"), float("inf")])
def test_masked_entries_cannot_leak_into_masked_attention(poison):
    """NaN/Inf in the padded tokens (no pair, so masked-out keys, values and queries) of a
    [B, L, L] mask, and in the bias and score factors where the mask is False: the output
    and the gradients equal those with zeros there, and equal sparse_attention's."""
    torch.manual_seed(0)
    mask, pairs = random_mask_and_pairs(2, 7)
    clean = [torch.randn(2, 3, 7, 4, dtype=torch.float64) for _ in range(3)]
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, -2:] = True  # the two padded tokens of graph 1: in no pair
    poisoned = [torch.where(padding[:, None, :, None], poison, x) for x in clean]
    zeroed = [torch.where(padding[:, None, :, None], 0.0, x) for x in clean]
    scale = torch.rand(2, 3, 7, 7, dtype=torch.float64) + 0.5
    bias = torch.randn(2, 3, 7, 7, dtype=torch.float64)
    outside = ~mask.unsqueeze(1)
    bad_scale, bad_bias = scale.masked_fill(outside, poison), bias.masked_fill(outside, poison)
    for extra, bad_extra in (({}, {}), ({"bias": bias}, {"bias": bad_bias}),
                             ({"bias": bias, "score_scale": scale},
                              {"bias": bad_bias, "score_scale": bad_scale})):  # fmt: skip
        inputs = [x.clone().requires_grad_() for x in poisoned]
        out = masked_attention(*inputs, mask, **bad_extra)
        grads = torch.autograd.grad((out * torch.randn_like(out)).sum(), inputs)
        assert torch.isfinite(out).all()
        for grad, is_padding in zip(grads, (padding,) * 3):
            assert torch.isfinite(grad).all()
            assert torch.equal(grad.transpose(1, 2)[is_padding], torch.zeros(2, 3, 4).double())
        torch.testing.assert_close(out, masked_attention(*zeroed, mask, **extra), rtol=0, atol=0)
    sparse = sparse_attention(*map(as_tokens, poisoned), pairs)
    dense = masked_attention(*poisoned, mask)
    torch.testing.assert_close(as_tokens(dense), sparse, atol=1e-12, rtol=1e-12)
    assert torch.equal(dense[1, :, -2:], torch.zeros(3, 2, 4, dtype=torch.float64))


def test_masked_padding_keys_cannot_leak_with_a_key_padding_mask():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    keys = torch.tensor([[True, True, True, False, False], [True] * 5])
    expected = masked_attention(q, k, v, keys.unsqueeze(1))
    k[0, :, 3:], v[0, :, 3:] = float("nan"), float("inf")
    torch.testing.assert_close(masked_attention(q, k, v, keys.unsqueeze(1)), expected)


def test_segment_softmax_equals_torch_softmax_and_is_stable():
    torch.manual_seed(0)
    scores = torch.randn(9, 2, dtype=torch.float64)
    segment = torch.tensor([2, 0, 2, 2, 0, 3, 2, 3, 0])  # segment 1 is empty
    weights = segment_softmax(scores, segment, 4)
    for s in (0, 2, 3):
        rows = segment == s
        torch.testing.assert_close(weights[rows], torch.softmax(scores[rows], dim=0))
    huge = segment_softmax(scores * 1e4, segment, 4)  # exp(1e4) overflows without the max
    assert torch.isfinite(huge).all()
    for s in (0, 2, 3):
        rows = segment == s
        torch.testing.assert_close(huge[rows], torch.softmax(scores[rows] * 1e4, dim=0))
    float32 = segment_softmax(torch.full((3, 1), 1e4), torch.zeros(3, dtype=torch.int64), 1)
    torch.testing.assert_close(float32, torch.full((3, 1), 1 / 3))


def test_segment_softmax_gradient_equals_torch_softmax():
    scores = torch.randn(5, 1, dtype=torch.float64, requires_grad=True)
    weights = segment_softmax(scores, torch.zeros(5, dtype=torch.int64), 1)
    (grad,) = torch.autograd.grad((weights * torch.arange(5.0)[:, None]).sum(), scores)
    reference = torch.softmax(scores, dim=0)
    (expected,) = torch.autograd.grad((reference * torch.arange(5.0)[:, None]).sum(), scores)
    torch.testing.assert_close(grad, expected)


def test_multi_head_attention_with_pairs_equals_dense_mask():
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2)
    mask, pairs = random_mask_and_pairs(2, 6)
    x = torch.randn(2, 6, 8)
    torch.testing.assert_close(attention(x, x, pairs), attention(x, x, mask), atol=1e-6, rtol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="FlexAttention path needs CUDA")
def test_flex_attention_equals_masked_attention_on_cuda():
    from chemgraph.nn import flex_block_mask, flex_masked_attention

    torch.manual_seed(0)
    mask, _ = random_mask_and_pairs(2, 200)
    mask = mask.cuda()
    q, k, v = (torch.randn(2, 2, 200, 16, device="cuda") for _ in range(3))

    def mask_mod(b, h, query, key):
        return mask[b, query, key]

    block_mask = flex_block_mask(mask_mod, 2, 200, "cuda")
    torch.testing.assert_close(
        flex_masked_attention(q, k, v, block_mask),
        masked_attention(q, k, v, mask),
        atol=1e-4,
        rtol=1e-4,
    )
