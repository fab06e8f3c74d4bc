"""tblite GFN2-xTB wrapper on H2O, against values measured with tblite 0.8.0."""

from __future__ import annotations

import numpy as np
import pytest

from chemgraph.qc import QCMolecule, SCFNotConvergedError, xtb_frontier_orbitals

pytest.importorskip("tblite")


def test_xtb_water(water):
    result = xtb_frontier_orbitals(water)
    assert result.homo_ev == pytest.approx(-12.177, abs=0.01)
    assert result.lumo_ev == pytest.approx(2.476, abs=0.01)
    assert result.method == "GFN2-xTB" and result.program.startswith("tblite ")


def test_xtb_is_translation_and_rotation_invariant(water):
    angle = 0.7
    rotation = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0],
                         [0, 0, 1]])  # fmt: skip
    moved = QCMolecule("moved", water.elements, water.positions @ rotation.T + [1.0, -2.0, 3.0])
    first, second = xtb_frontier_orbitals(water), xtb_frontier_orbitals(moved)
    assert second.homo_ev == pytest.approx(first.homo_ev, abs=1e-6)
    assert second.lumo_ev == pytest.approx(first.lumo_ev, abs=1e-6)


def test_xtb_not_converged_raises(water):
    with pytest.raises(SCFNotConvergedError):
        xtb_frontier_orbitals(water, max_cycle=1)
