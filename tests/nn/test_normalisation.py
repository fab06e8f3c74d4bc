"""The layers' normalisation option (``norm``, :func:`chemgraph.nn.message_passing.normalisation`):
OGB's BatchNorm or LayerNorm, which GMoE's ``chemgraph train`` defaults use (issue 14)."""

import pytest
import torch

from chemgraph.batches import gcn_normalisation
from chemgraph.nn import GCNConv, Neighbourhood, SubsetBatchNorm, message_passing_layer
from chemgraph.nn.message_passing import normalisation

# a triangle 0-1-2 with a tail 2-3 and a pair 4-5, both directions of every bond
EDGES = torch.tensor([[0, 1, 1, 2, 2, 0, 2, 3, 4, 5], [1, 0, 2, 1, 0, 2, 3, 2, 5, 4]])
BONDS = [5, 6, 2]


def hood():
    features = torch.tensor([[0, 0, 0], [0, 0, 0], [1, 2, 1], [1, 2, 1], [3, 0, 0],
                             [3, 0, 0], [0, 1, 1], [0, 1, 1], [2, 0, 0], [2, 0, 0]])  # fmt: skip
    edge_weight, self_weight = gcn_normalisation(EDGES, 6)
    return Neighbourhood(EDGES, features, edge_weight, self_weight, BONDS)


def test_the_names():
    assert isinstance(normalisation("batch", 4), SubsetBatchNorm)
    layer = normalisation("layer", 4)
    assert isinstance(layer, torch.nn.LayerNorm) and layer.normalized_shape == (4,)
    with pytest.raises(ValueError, match="norm must be one of"):
        normalisation("group", 4)
    with pytest.raises(ValueError, match="norm must be one of"):
        message_passing_layer("gin", 4, BONDS, norm="instance")


def test_layer_norm_hand_values():
    # row [1, 2, 3, 6]: mean 3, population variance (4 + 1 + 0 + 9) / 4 = 3.5
    out = normalisation("layer", 4)(torch.tensor([[1.0, 2.0, 3.0, 6.0]]))
    expected = torch.tensor([[-2.0, -1.0, 0.0, 3.0]]) / (3.5 + 1e-5) ** 0.5
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("kind", ["gcn", "linear-gcn", "gin"])
def test_with_layer_norm_an_atom_s_output_does_not_depend_on_the_others_nor_the_mode(kind):
    torch.manual_seed(0)
    layer = message_passing_layer(kind, 8, BONDS, norm="layer")
    x = torch.randn(6, 8)
    neighbourhood = hood()
    with torch.no_grad():
        everything = layer.train()(x, neighbourhood)
        torch.testing.assert_close(layer.eval()(x, neighbourhood), everything)
        if isinstance(layer, GCNConv):  # an expert's call on its routed atoms only
            some = torch.tensor([4, 1])
            torch.testing.assert_close(layer.train()(x, neighbourhood, some), everything[some])
            # BatchNorm: the two atoms' own batch statistics, not the six atoms'
            batch = GCNConv(8, BONDS, norm="batch")
            batch.load_state_dict(layer.state_dict(), strict=False)
            full, part = batch(x, neighbourhood), batch(x, neighbourhood, some)
            assert (full[some] - part).abs().max().item() > 1e-2
