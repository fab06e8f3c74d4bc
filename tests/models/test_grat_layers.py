"""chemgraph.models.grat layers: one attention implementation (Yoo et al. 2020, eq. 2-3)."""

from __future__ import annotations

import torch

from chemgraph.models.grat import (
    GRAT,
    EdgeConditioning,
    GRATConfig,
    GRATLayer,
    GRATStack,
    GRATTranslator,
    GRATTranslatorConfig,
)


def test_property_encoder_and_translator_share_the_layer_implementation():
    """Section 3.1's attention is GRAT's encoder (4.1) and both translator stacks (3.2)."""
    encoder = GRAT(GRATConfig(atom_vocabulary_sizes=[5], num_bond_types=4, hidden_dim=16,
                              num_heads=2, num_layers=2)).encoder  # fmt: skip
    translator = GRATTranslator(
        GRATTranslatorConfig(vocab_size=12, hidden_dim=16, num_heads=2, encoder_layers=2,
                             decoder_layers=3)
    )  # fmt: skip
    stacks = {"property": encoder, "encoder": translator.encoder, "decoder": translator.decoder}
    for name, stack in stacks.items():
        assert type(stack) is GRATStack, name
        assert type(stack.edge_conditioning) is EdgeConditioning, name
        assert all(type(layer) is GRATLayer for layer in stack.layers), name
        # only the decoder's blocks attend to the encoder output
        cross = {layer.cross_attention is not None for layer in stack.layers}
        assert cross == {name == "decoder"}, name


def test_stack_computes_edge_conditioned_attention_of_eq_3():
    """``softmax((Γ ⊙ QKᵀ + B) / √d_k) V`` with ``(γ_ij, β_ij) = f_a(e_ij, d_ij)``, one layer."""
    torch.manual_seed(0)
    b, n, d, heads, types, distances = 2, 5, 8, 2, 3, 4
    stack = GRATStack(d, heads, 1, 16, types, distances, 8, 0.0, cross_attention=False).eval()
    torch.nn.init.normal_(stack.edge_conditioning.mlp[2].weight, std=0.5)
    torch.nn.init.normal_(stack.edge_conditioning.mlp[2].bias, std=0.5)
    x = torch.randn(b, n, d)
    edge_type = torch.randint(types, (b, n, n))
    distance = torch.randint(distances, (b, n, n))
    mask = torch.rand(b, n, n) < 0.7
    mask |= torch.eye(n, dtype=torch.bool)
    keep = torch.ones(b, n, dtype=torch.bool)
    with torch.no_grad():
        out = stack(x, mask=mask, edge_type=edge_type, distance=distance, keep=keep)
        film = stack.edge_conditioning.table()[edge_type * distances + distance, 0]
        gamma = film[..., 0].permute(0, 3, 1, 2)  # [B, H, L, L]
        beta = film[..., 1].permute(0, 3, 1, 2)
        layer = stack.layers[0]
        attention = layer.self_attention
        h = layer.norm_self(x)

        def split(t):
            return t.view(b, n, heads, d // heads).transpose(1, 2)

        q, k, v = split(attention.query(h)), split(attention.key(h)), split(attention.value(h))
        logits = (gamma * (q @ k.transpose(-1, -2)) + beta) / (d // heads) ** 0.5
        weights = logits.masked_fill(~mask.unsqueeze(1), float("-inf")).softmax(-1)
        heads_out = (weights @ v).transpose(1, 2).reshape(b, n, d)
        y = x + attention.out(heads_out)
        expected = stack.norm(y + layer.mlp(layer.norm_mlp(y)))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
