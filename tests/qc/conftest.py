import numpy as np
import pytest

from chemgraph.qc import QCMolecule


@pytest.fixture(scope="module")
def water() -> QCMolecule:
    """H2O at the experimental geometry: r(OH) = 0.9572 Å, angle HOH = 104.52°."""
    half = np.deg2rad(104.52) / 2
    r = 0.9572
    positions = [[0, 0, 0], [r * np.sin(half), 0, r * np.cos(half)],
                 [-r * np.sin(half), 0, r * np.cos(half)]]  # fmt: skip
    return QCMolecule("water", ("O", "H", "H"), positions)


@pytest.fixture()
def failing_quasiparticle_solve(monkeypatch):
    """Make pyscf's quasiparticle solve fail as it does in production, for the orbitals whose
    Kohn-Sham energy (Newton's start) is in ``unsolved`` (``"HOMO"``: < 0, ``"LUMO"``: > 0 Ha
    for water): scipy's ``newton`` gets one iteration, raises, pyscf warns and leaves 0."""
    from pyscf.gw import gw_ac
    from scipy.optimize import newton

    def fail(unsolved=("HOMO", "LUMO")):
        def limited_newton(func, x0, tol, maxiter):
            side = "HOMO" if x0 < 0 else "LUMO"
            return newton(func, x0, tol=tol, maxiter=1 if side in unsolved else maxiter)

        monkeypatch.setattr(gw_ac, "newton", limited_newton)

    return fail
