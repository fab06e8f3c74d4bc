"""Atom-type one-hot and the 3D featurizer configuration."""

from __future__ import annotations

import pytest
import torch

from chemgraph.featurize import ElementOneHot, RadiusGraphFeaturizer


def test_element_one_hot_hand_computed():
    one_hot = ElementOneHot((1, 6, 8))
    assert len(one_hot) == 4
    assert one_hot.field_names == ("element=H", "element=C", "element=O", "element=other")
    expected = torch.tensor(
        [[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]], dtype=torch.float32
    )
    torch.testing.assert_close(one_hot([8, 1, 6, 17, 7]), expected)
    assert one_hot([]).shape == (0, 4)


def test_element_one_hot_rejects_duplicates():
    with pytest.raises(ValueError, match="distinct"):
        ElementOneHot((1, 1))


def test_radius_featurizer_widths_and_round_trip():
    featurizer = RadiusGraphFeaturizer(cutoff=4.0, num_basis=16, atomic_numbers=(1, 6, 7, 8, 9))
    assert featurizer.node_features == 6
    assert featurizer.edge_token_features == 2 * 6 + 16
    assert RadiusGraphFeaturizer.from_dict(featurizer.to_dict()) == featurizer
    with pytest.raises(ValueError, match="cutoff"):
        RadiusGraphFeaturizer(cutoff=0.0)


def test_radius_featurizer_max_neighbors_setting():
    assert RadiusGraphFeaturizer().max_neighbors is None  # no cap unless asked
    capped = RadiusGraphFeaturizer(cutoff=3.5, max_neighbors=8)
    assert capped.to_dict()["max_neighbors"] == 8
    assert RadiusGraphFeaturizer.from_dict(capped.to_dict()) == capped
    # a featurizer saved before the cap existed (no max_neighbors key) still loads, uncapped
    old = {k: v for k, v in capped.to_dict().items() if k != "max_neighbors"}
    assert RadiusGraphFeaturizer.from_dict(old).max_neighbors is None
    assert RadiusGraphFeaturizer(max_neighbors=8.0).max_neighbors == 8
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_neighbors"):
            RadiusGraphFeaturizer(max_neighbors=bad)


def test_atom_distance_features_sum_over_every_other_atom():
    featurizer = RadiusGraphFeaturizer(
        cutoff=2.0, num_basis=4, atom_distance_basis=3, atom_distance_range=4.0
    )
    assert featurizer.node_features == 6 + 3
    assert featurizer.edge_token_features == 2 * 9 + 4
    # three atoms on a line: distances 1 (0-1), 3 (1-2), 4 (0-2); centres 0, 2, 4 Å, width 2
    positions = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [4.0, 0.0, 0.0]])

    def phi(d):
        return torch.exp(-0.5 * ((d - torch.tensor([0.0, 2.0, 4.0])) / 2.0) ** 2)

    expected = torch.stack(
        [phi(torch.tensor(1.0)) + phi(torch.tensor(4.0)),
         phi(torch.tensor(1.0)) + phi(torch.tensor(3.0)),
         phi(torch.tensor(4.0)) + phi(torch.tensor(3.0))]
    )  # fmt: skip
    torch.testing.assert_close(featurizer.atom_distance_features(positions), expected)
    # rows follow the atoms; a rotation changes nothing
    order = [2, 0, 1]
    torch.testing.assert_close(featurizer.atom_distance_features(positions[order]), expected[order])
    rotation = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    torch.testing.assert_close(featurizer.atom_distance_features(positions @ rotation.T), expected)
    assert RadiusGraphFeaturizer.from_dict(featurizer.to_dict()) == featurizer
    with pytest.raises(ValueError, match="atom_distance_basis"):
        RadiusGraphFeaturizer(atom_distance_basis=-1)
