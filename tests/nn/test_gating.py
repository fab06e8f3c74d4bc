import pytest
import torch

from chemgraph.nn import NoisyTopKGate, cv_squared, probability_in_top_k


def gate_with(weights, k, noisy=True):
    gate = NoisyTopKGate(weights.shape[0], weights.shape[1], k, noisy)
    with torch.no_grad():
        gate.w_gate.copy_(weights)
    return gate


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("training", [True, False])
def test_exactly_k_experts_with_gates_summing_to_one(k, training):
    torch.manual_seed(0)
    gate = gate_with(torch.randn(8, 4), k)
    with torch.no_grad():
        gate.w_noise.normal_()
    gate.train(training)
    out = gate(torch.randn(50, 8))
    assert out.experts.shape == (50, k) and out.gates.shape == (50, k)
    assert all(len(set(row)) == k for row in out.experts.tolist())  # k distinct experts
    torch.testing.assert_close(out.gates.sum(1), torch.ones(50))
    assert (out.gates > 0).all()
    # importance = column sums of the dense gate matrix
    dense = torch.zeros(50, 4).scatter(1, out.experts, out.gates)
    torch.testing.assert_close(out.importance, dense.sum(0))


def test_clean_scores_pick_the_top_k_and_softmax_them():
    x = torch.tensor([[1.0, 0.0]])
    weights = torch.tensor([[0.5, 2.0, 1.0], [0.0, 0.0, 0.0]])  # scores 0.5, 2.0, 1.0
    out = gate_with(weights, k=2).eval()(x)
    assert out.experts.tolist() == [[1, 2]]
    expected = torch.softmax(torch.tensor([2.0, 1.0]), 0)
    torch.testing.assert_close(out.gates[0], expected)
    torch.testing.assert_close(out.load, torch.tensor([0.0, 1.0, 1.0]))  # counts in eval


def test_noise_only_in_training():
    torch.manual_seed(1)
    gate = gate_with(torch.zeros(4, 6), k=1)
    x = torch.randn(200, 4)
    gate.eval()
    assert torch.equal(gate(x).experts, gate(x).experts)  # deterministic, ties -> expert 0
    gate.train()
    first, second = gate(x).experts, gate(x).experts
    assert not torch.equal(first, second)
    assert len(first.unique()) == 6  # the noise spreads the tied nodes over all experts


def test_cv_squared_hand_values():
    # mean 2, population variance ((1-2)² + (3-2)²) / 2 = 1 -> 1/4
    assert cv_squared(torch.tensor([1.0, 3.0])).item() == pytest.approx(0.25)
    assert cv_squared(torch.tensor([5.0, 5.0, 5.0])).item() == pytest.approx(0.0)
    assert cv_squared(torch.tensor([7.0])).item() == 0.0


def test_auxiliary_losses_on_a_fixed_example():
    # 3 nodes, 2 experts, k = 1, evaluation (load = counts). Scores: node 0 -> expert 0,
    # nodes 1 and 2 -> expert 1; with k = 1 every gate is 1.
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    gate = gate_with(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), k=1).eval()
    out = gate(x)
    torch.testing.assert_close(out.importance, torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(out.load, torch.tensor([1.0, 2.0]))
    # CV² of [1, 2]: mean 1.5, variance 0.25 -> 1/9, for each of the two losses
    assert out.auxiliary_loss().item() == pytest.approx(2 / 9)
    torch.testing.assert_close(out.balance(), torch.tensor([1 / 9, 1 / 9]))


def test_collapse_of_64_identical_nodes_gives_large_losses():
    x = torch.ones(64, 8)
    gate = gate_with(torch.zeros(8, 4), k=1)
    with torch.no_grad():
        gate.w_gate[:, 2] = 1.0  # every node strongly prefers expert 2
    out = gate.eval()(x)
    assert (out.experts == 2).all()
    torch.testing.assert_close(out.importance, torch.tensor([0.0, 0.0, 64.0, 0.0]))
    # CV²([0, 0, 64, 0]) = n - 1 = 3 for each loss
    assert out.auxiliary_loss().item() == pytest.approx(6.0)
    # in training, the load is the (differentiable) probability of staying in the top k
    gate.train()
    torch.manual_seed(0)
    trained = gate(x)
    assert trained.auxiliary_loss().item() > 5.5
    assert trained.load.requires_grad
    # balanced routing of distinct nodes has a small loss
    balanced = gate_with(torch.eye(4).repeat(2, 1), k=1).eval()(torch.eye(8).repeat(8, 1))
    assert balanced.auxiliary_loss().item() == pytest.approx(0.0, abs=1e-6)


def test_load_probability_matches_resampling_the_noise():
    """P(h, o) (eq. 7) is the chance that expert o is in the top k when only its own noise is
    drawn again, the other experts' noisy scores staying fixed."""
    torch.manual_seed(3)
    gate = NoisyTopKGate(5, 4, k=2)
    with torch.no_grad():
        gate.w_gate.normal_()
        gate.w_noise.normal_()
    x = torch.randn(1, 5)
    clean = x @ gate.w_gate
    scale = torch.nn.functional.softplus(x @ gate.w_noise) + 1e-2
    noisy = clean + torch.randn_like(clean) * scale
    top = noisy.topk(3, dim=1).values
    probability = probability_in_top_k(clean, noisy, scale, top, k=2)[0]
    draws = 200_000
    for expert in range(4):
        redrawn = noisy.repeat(draws, 1)
        redrawn[:, expert] = clean[0, expert] + torch.randn(draws) * scale[0, expert]
        in_top = (redrawn.topk(2, dim=1).indices == expert).any(1).float().mean()
        assert probability[expert].item() == pytest.approx(in_top.item(), abs=0.01)
