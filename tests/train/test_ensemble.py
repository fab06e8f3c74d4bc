"""The one definition of an ensemble's prediction and spread (chemgraph.train.ensemble)."""

import numpy as np
import pytest

from chemgraph.train.ensemble import ensemble_statistics


def test_mean_and_sample_standard_deviation_by_hand():
    # three members, two molecules, one target: member values 1, 2, 6 and 0, 0, 3
    stacked = np.array([[[1.0], [0.0]], [[2.0], [0.0]], [[6.0], [3.0]]])
    mean, spread = ensemble_statistics(stacked)
    np.testing.assert_allclose(mean, [[3.0], [1.0]])
    # sum of squared deviations / (K - 1): (4 + 1 + 9) / 2 = 7 and (1 + 1 + 4) / 2 = 3
    np.testing.assert_allclose(spread, np.sqrt([[7.0], [3.0]]))


def test_one_member_has_no_spread():
    mean, spread = ensemble_statistics(np.array([[0.5, 1.5]]))
    assert spread is None
    assert mean.tolist() == pytest.approx([0.5, 1.5])
