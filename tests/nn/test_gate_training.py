"""The gate options behind GMoE's training defaults (issue 14): the gate's initialisation, its
gradient from the task loss for ``k = 1`` and ``k = 2``, and routing without noise."""

import math

import pytest
import torch

from chemgraph.nn import NoisyTopKGate


def test_hand_computed_gate_with_two_of_three_experts_without_noise():
    # scores x W_g = [1·1 + 2·0.5, 1·0 + 2·1.5, 1·(−1) + 2·0] = [2, 3, −1]
    x = torch.tensor([[1.0, 2.0]])
    gate = NoisyTopKGate(2, 3, k=2, noisy=False)
    with torch.no_grad():
        gate.w_gate.copy_(torch.tensor([[1.0, 0.0, -1.0], [0.5, 1.5, 0.0]]))
    for training in (True, False):  # no noise: the same in training and evaluation
        out = gate.train(training)(x)
        assert out.experts.tolist() == [[1, 0]]
        # softmax over the two chosen scores 3 and 2: 1 / (1 + e^-1) and e^-1 / (1 + e^-1)
        top = 1 / (1 + math.exp(-1))
        torch.testing.assert_close(out.gates, torch.tensor([[top, 1 - top]]))
        torch.testing.assert_close(out.importance, torch.tensor([1 - top, top, 0.0]))
        torch.testing.assert_close(out.load, torch.tensor([1.0, 1.0, 0.0]))  # counts
        # CV²: importance [0.26894, 0.73106, 0] (mean 1/3, population variance 0.091148)
        # -> 0.82033; load [1, 1, 0] (mean 2/3, variance 2/9) -> 0.5
        torch.testing.assert_close(
            out.balance(), torch.tensor([0.82033, 0.5]), atol=1e-5, rtol=1e-5
        )


def task_gradient(k: int, init: str) -> torch.Tensor:
    """Gradient on ``W_g`` of a task loss on the gate-weighted sum of fixed expert outputs."""
    torch.manual_seed(0)
    gate = NoisyTopKGate(6, 4, k=k, noisy=False, init=init)
    if init == "zeros":
        with torch.no_grad():
            gate.w_gate.normal_()  # a gate trained a while: distinct scores
    x = torch.randn(20, 6)
    expert_outputs = torch.randn(20, 4)  # expert o's scalar output for each node
    out = gate.train()(x)
    prediction = (out.gates * expert_outputs.gather(1, out.experts)).sum(1)
    loss = ((prediction - 1.0) ** 2).mean()  # the task loss only, no balancing loss
    (gradient,) = torch.autograd.grad(loss, gate.w_gate, allow_unused=True)
    return torch.zeros_like(gate.w_gate) if gradient is None else gradient


@pytest.mark.parametrize("init", ["zeros", "normal"])
def test_the_task_loss_trains_the_gate_with_k_2_and_not_with_k_1(init):
    # k = 1: the gate value is a softmax over one score, 1 whatever the score
    assert task_gradient(1, init).abs().max().item() == 0.0
    gradient = task_gradient(2, init)
    assert gradient.abs().max().item() > 1e-3
    # and only the scores of chosen experts move (here every expert is chosen by some node)
    assert (gradient.abs().sum(0) > 0).sum().item() >= 2


def test_normal_initialisation_routes_by_node_zeros_tie():
    torch.manual_seed(0)
    dim, experts = 400, 8
    x = torch.randn(2000, dim)  # unit-scale inputs
    normal = NoisyTopKGate(dim, experts, k=2, noisy=False, init="normal")
    assert normal.w_gate.std().item() == pytest.approx(dim**-0.5, rel=0.05)
    assert normal.w_noise.abs().max().item() == 0.0
    scores = x @ normal.w_gate  # clean scores of unit scale
    assert scores.std().item() == pytest.approx(1.0, rel=0.05)
    usage = torch.bincount(normal.eval()(x).experts.flatten(), minlength=experts)
    assert (usage > 0).all() and usage.max().item() < 0.2 * usage.sum().item()
    # zeros, no noise: every score ties and topk picks the same two experts for every node
    zeros = NoisyTopKGate(dim, experts, k=2, noisy=False, init="zeros").eval()(x)
    assert (zeros.experts == zeros.experts[0]).all()
    torch.testing.assert_close(zeros.gates, torch.full((2000, 2), 0.5))


def test_noise_makes_training_routing_differ_from_evaluation():
    torch.manual_seed(2)
    x = torch.randn(500, 16)
    noisy = NoisyTopKGate(16, 4, k=2, noisy=True, init="normal")
    quiet = NoisyTopKGate(16, 4, k=2, noisy=False, init="normal")
    with torch.no_grad():
        quiet.w_gate.copy_(noisy.w_gate)
    evaluation = noisy.eval()(x).experts
    torch.testing.assert_close(quiet.eval()(x).experts, evaluation)
    torch.testing.assert_close(quiet.train()(x).experts, evaluation)  # no noise: same routing
    # with noise (std softplus(0) + 0.01 = 0.70 against clean scores of std 1) many nodes
    # change experts in training
    changed = (noisy.train()(x).experts.sort(1).values != evaluation.sort(1).values).any(1)
    assert changed.float().mean().item() > 0.3


def test_unknown_initialisation_is_refused():
    with pytest.raises(ValueError, match="init must be one of"):
        NoisyTopKGate(4, 2, k=1, init="xavier")
