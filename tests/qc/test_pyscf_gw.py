"""pyscf DFT and G0W0 wrappers on H2O, against values measured with pyscf 2.14.0."""

from __future__ import annotations

import numpy as np
import pytest

from chemgraph.qc import (
    QCMolecule,
    QPNotConvergedError,
    SCFNotConvergedError,
    dft_frontier_orbitals,
    gw_frontier_orbitals,
)

pytest.importorskip("pyscf")


def test_gw_water_matches_measured_values(water):
    result = gw_frontier_orbitals(water)
    # measured once with pyscf 2.14.0 (G0W0@PBE/def2-SVP, 100 frequency points, grid level 3)
    assert result.homo_ev == pytest.approx(-11.235, abs=0.01)
    assert result.lumo_ev == pytest.approx(4.511, abs=0.01)
    assert result.reference_homo_ev == pytest.approx(-6.218, abs=0.01)
    assert result.reference_lumo_ev == pytest.approx(0.817, abs=0.01)
    assert (result.method, result.basis) == ("G0W0@PBE", "def2-SVP")
    assert result.program.startswith("pyscf 2.")
    # GW opens the PBE gap: the quasiparticle HOMO is deeper, the LUMO higher
    assert result.homo_ev < result.reference_homo_ev and result.lumo_ev > result.reference_lumo_ev


def test_cheaper_settings_change_water_by_meV(water):
    full = gw_frontier_orbitals(water)
    cheap = gw_frontier_orbitals(
        water, frozen_core=True, frequency_points=50, grid_level=1, conv_tol=1e-8
    )
    assert cheap.method == "G0W0@PBE/fc"
    assert abs(cheap.homo_ev - full.homo_ev) < 0.005
    assert abs(cheap.lumo_ev - full.lumo_ev) < 0.005


def test_shared_integral_exchange_equals_pyscf(water):
    """The exchange self-energy from the SCF's integrals equals pyscf's own GWAC result."""
    from pyscf import dft
    from pyscf.gw.gw_ac import GWAC

    from chemgraph.qc.pyscf_gw import run_kohn_sham, shared_integral_gw_class

    mf = run_kohn_sham(water)
    assert isinstance(mf, dft.rks.RKS)
    nocc = int(np.count_nonzero(mf.mo_occ > 0))
    energies = []
    for cls in (GWAC, shared_integral_gw_class()):
        solver = cls(mf)
        solver.orbs = [nocc - 1, nocc]
        solver.kernel()
        energies.append(solver.mo_energy[[nocc - 1, nocc]])
    np.testing.assert_allclose(energies[0], energies[1], rtol=0, atol=1e-10)


def test_dft_water(water):
    result = dft_frontier_orbitals(water)
    assert result.homo_ev == pytest.approx(-6.218, abs=0.01)
    assert result.lumo_ev == pytest.approx(0.817, abs=0.01)
    assert result.method == "PBE"


def test_scf_not_converged_raises(water):
    with pytest.raises(SCFNotConvergedError, match="did not converge in 1 cycles") as caught:
        gw_frontier_orbitals(water, max_cycle=1)
    assert caught.value.molecule_id == "water"


@pytest.mark.parametrize(
    "unsolved,residuals", [(("LUMO",), [0.171]), (("HOMO", "LUMO"), [0.457, 0.171])]
)
def test_failed_quasiparticle_solve_raises(water, failing_quasiparticle_solve, unsolved, residuals):
    """pyscf leaves 0 eV where scipy's Newton solve fails and only logs a warning; the residual
    of the quasiparticle equation at 0 (the Kohn-Sham-to-QP shift, Hartree) gives it away."""
    failing_quasiparticle_solve(unsolved)
    with pytest.raises(QPNotConvergedError, match="quasiparticle equation not solved") as caught:
        gw_frontier_orbitals(water)
    assert caught.value.molecule_id == "water"
    assert caught.value.orbitals == list(unsolved)
    assert caught.value.residuals == pytest.approx(residuals, abs=0.002)
    assert "no label is stored" in str(caught.value)


def test_solved_quasiparticle_equation_has_a_tiny_residual(water):
    from chemgraph.qc.pyscf_gw import (
        QP_RESIDUAL_TOLERANCE,
        quasiparticle_residuals,
        run_kohn_sham,
        shared_integral_gw_class,
    )

    mf = run_kohn_sham(water)
    solver = shared_integral_gw_class()(mf, frozen=1)  # frozen core: orbs_frz != orbs
    solver.orbs = [4, 5]
    solver.kernel()
    assert max(quasiparticle_residuals(solver)) < 1e-9 < QP_RESIDUAL_TOLERANCE


def test_open_shell_rejected():
    hydroxyl = QCMolecule("OH", ("O", "H"), [[0, 0, 0], [0, 0, 0.97]])
    with pytest.raises(ValueError, match="only closed shells"):
        gw_frontier_orbitals(hydroxyl)
