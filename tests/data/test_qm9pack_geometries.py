"""QM9 geometries from the qm9pack package (optional extra offline-data)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from chemgraph.data.qm9pack import load_qm9pack_geometries

# qm9pack's own __init__ needs pkg_resources; only its data files are read, so test for them
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("qm9pack") is None, reason="qm9pack (offline-data extra) missing"
)


def test_water_and_acetylene():
    table = load_qm9pack_geometries([4, 3])
    assert table["qm9_index"].tolist() == [3, 4]  # QM9 index order
    water, acetylene = table.itertuples(index=False)
    assert water.elements == ("O", "H", "H") and water.num_atoms == 3
    oh = np.linalg.norm(water.positions[1] - water.positions[0])
    assert oh == pytest.approx(0.962, abs=0.005)  # B3LYP O-H bond, Å
    # acetylene's coordinates are written "0." and "1." in the CSV; they must parse
    assert acetylene.elements == ("C", "C", "H", "H")
    np.testing.assert_allclose(acetylene.positions[0], [0.5995394918, 0.0, 1.0])
    cc = np.linalg.norm(acetylene.positions[1] - acetylene.positions[0])
    assert cc == pytest.approx(1.199, abs=0.001)


def test_unknown_index_is_named():
    with pytest.raises(KeyError, match="not in qm9pack"):
        load_qm9pack_geometries([0])
