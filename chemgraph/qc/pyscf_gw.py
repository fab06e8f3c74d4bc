"""Kohn-Sham DFT and one-shot G0W0 frontier orbitals with pyscf.

G0W0 follows pyscf's analytic-continuation implementation (``pyscf.gw.gw_ac.GWAC``:
self-energy on the imaginary axis with 100 Gauss-Legendre points, Padé analytic continuation,
quasiparticle equation solved by Newton iteration; RI for the screened interaction with the
basis's RI auxiliary set, def2-SVP-RI for def2-SVP). The starting point is a restricted
Kohn-Sham calculation, PBE by default — the starting point of QM9-GW (Fediai et al., Sci. Data
10, 581 (2023), https://doi.org/10.6084/m9.figshare.21610077: G0W0@PBE and evGW@PBE with CP2K,
extrapolated to the complete-basis-set limit, so its values differ from def2-SVP ones).

Measured with pyscf 2.14.0 on this project's 2-core machine, one thread: H2O (r(OH) 0.9572 Å,
104.52°) G0W0@PBE/def2-SVP HOMO -11.235 eV, LUMO 4.511 eV (PBE: -6.218, 0.817), under 1 s;
QM9 molecules of 10-11 atoms 5-8 s (tests/qc/test_pyscf_gw.py,
datasets/qm9_gw_embedded.yaml).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from chemgraph.qc.molecule import QCMolecule
from chemgraph.qc.result import FrontierOrbitals
from chemgraph.units import HARTREE_TO_EV

__all__ = [
    "QP_RESIDUAL_TOLERANCE",
    "QPNotConvergedError",
    "SCFNotConvergedError",
    "dft_frontier_orbitals",
    "gw_frontier_orbitals",
    "quasiparticle_residuals",
    "run_kohn_sham",
    "shared_integral_gw_class",
]

#: Largest accepted residual of the quasiparticle equation, Hartree (1e-4 Ha = 2.7 meV). A
#: solved orbital's residual is about 1e-12 Ha (H2O); the energy pyscf leaves when its solve
#: fails (0) has a residual of the order of the orbital energy (0.17 and 0.46 Ha for H2O,
#: ``tests/qc/test_pyscf_gw.py``).
QP_RESIDUAL_TOLERANCE = 1e-4


class SCFNotConvergedError(RuntimeError):
    """The self-consistent-field iterations of a molecule did not converge.

    Attributes:
        molecule_id: the molecule. max_cycle: the cycle limit that was reached.
    """

    def __init__(self, molecule_id: str, max_cycle: int) -> None:
        super().__init__(
            f"molecule {molecule_id}: SCF did not converge in {max_cycle} cycles "
            "(raise max_cycle, or check the geometry and charge)"
        )
        self.molecule_id = molecule_id
        self.max_cycle = max_cycle


class QPNotConvergedError(ArithmeticError):
    """The G0W0 quasiparticle equation of a frontier orbital was not solved.

    pyscf 2.14 (``pyscf.gw.gw_ac.kernel``) solves ``ω = ε + Re Σ(ω) + Σx − v_xc`` for each
    orbital with ``scipy.optimize.newton``; when that raises (no convergence in
    ``qpe_max_iter`` steps) it only logs "QPE for orbital=N not converged!" (not shown at
    ``verbose=0``) and leaves the orbital's energy at 0 Hartree; there is no convergence flag.
    :func:`gw_frontier_orbitals` therefore checks the equation itself at the returned energies.

    Attributes:
        molecule_id: the molecule. orbitals: the unsolved orbitals, ``"HOMO"``/``"LUMO"``.
        residuals: their residuals ``|ω − ε − Re Σ(ω) − Σx + v_xc|`` in Hartree (NaN for a
        non-finite energy).
    """

    def __init__(self, molecule_id: str, orbitals: list[str], residuals: list[float]) -> None:
        detail = ", ".join(f"{o} (residual {r:.3g} Ha)" for o, r in zip(orbitals, residuals))
        super().__init__(
            f"molecule {molecule_id}: G0W0 quasiparticle equation not solved for {detail}; "
            "pyscf leaves such an orbital at 0 eV, so no label is stored"
        )
        self.molecule_id = molecule_id
        self.orbitals = orbitals
        self.residuals = residuals


def quasiparticle_residuals(solver) -> list[float]:
    """``|ω − ε − (Re Σ(ω) + Σx − v_xc)|`` (Hartree) at each orbital of ``solver.orbs``, from
    the solver's own analytically continued self-energy (pyscf 2.14 ``GWAC`` after
    ``kernel()``, Newton solve, diagonal self-energy)."""
    residuals = []
    for index, (frozen_index, orbital) in enumerate(zip(solver.orbs_frz, solver.orbs)):
        energy = solver.mo_energy[orbital]
        sigma = solver.acobj[index].ac_eval(energy).real
        static = solver.vk[frozen_index, frozen_index] - solver.vxc[frozen_index, frozen_index]
        residuals.append(abs(energy - solver._scf.mo_energy[orbital] - (sigma + static)))
    return residuals


def _pyscf_version() -> str:
    import pyscf

    return f"pyscf {pyscf.__version__}"


def run_kohn_sham(
    molecule: QCMolecule,
    functional: str = "PBE",
    basis: str = "def2-SVP",
    max_cycle: int = 100,
    conv_tol: float = 1e-9,
    grid_level: int = 3,
):
    """Converged restricted Kohn-Sham object (pyscf ``RKS``) of a closed-shell molecule, the
    starting point of :func:`gw_frontier_orbitals` (arguments as there).

    Raises:
        SCFNotConvergedError: the SCF did not converge in ``max_cycle`` cycles.
        ValueError: open-shell molecule.
    """
    from pyscf import dft, gto

    if molecule.spin != 0 or molecule.num_electrons % 2:
        raise ValueError(
            f"molecule {molecule.molecule_id}: only closed shells are supported "
            f"(spin {molecule.spin}, {molecule.num_electrons} electrons)"
        )
    mol = gto.M(
        atom=[(e, tuple(p)) for e, p in zip(molecule.elements, molecule.positions)],
        unit="Angstrom",
        basis=basis,
        charge=molecule.charge,
        spin=molecule.spin,
        verbose=0,
    )
    mf = dft.RKS(mol, xc=functional)
    mf.max_cycle = max_cycle
    mf.conv_tol = conv_tol
    mf.grids.level = grid_level
    mf.kernel()
    if not mf.converged:
        raise SCFNotConvergedError(molecule.molecule_id, max_cycle)
    return mf


@functools.cache
def shared_integral_gw_class() -> type:
    """pyscf's ``GWAC`` (G0W0, analytic continuation) reusing the SCF's two-electron integrals.

    pyscf 2.14's ``GWAC.get_sigma_exchange`` builds a fresh ``RHF`` object for the exchange
    self-energy and so computes every four-centre integral a second time. The same matrix,
    ``-K[D]/2`` of the Kohn-Sham density matrix, comes from the SCF object's own (cached)
    integrals. Results are identical to the last digit (tests/qc/test_pyscf_gw.py); G0W0 time
    halves for QM9-sized molecules.
    """
    from pyscf.gw.gw_ac import GWAC

    class SharedIntegralGWAC(GWAC):
        def get_sigma_exchange(self, mo_coeff: np.ndarray) -> np.ndarray:
            exchange = -0.5 * self._scf.get_k(self.mol, self._scf.make_rdm1())
            return mo_coeff.T @ exchange @ mo_coeff

    return SharedIntegralGWAC


def dft_frontier_orbitals(
    molecule: QCMolecule,
    functional: str = "PBE",
    basis: str = "def2-SVP",
    max_cycle: int = 100,
    conv_tol: float = 1e-9,
    grid_level: int = 3,
) -> FrontierOrbitals:
    """Kohn-Sham HOMO and LUMO energies (eV) of a closed-shell molecule.

    Args:
        molecule: elements and coordinates (Å).
        functional: pyscf exchange-correlation name (``"PBE"``, ``"PBE0"``, ``"B3LYP"``).
        basis: Gaussian basis set name known to pyscf.
        max_cycle, conv_tol: SCF cycle limit and energy tolerance (Hartree).
        grid_level: pyscf exchange-correlation integration grid level (0-9; pyscf's default 3).

    Raises:
        SCFNotConvergedError: the SCF did not converge in ``max_cycle`` cycles.
        ValueError: open-shell molecule.
    """
    start = time.perf_counter()
    mf = run_kohn_sham(molecule, functional, basis, max_cycle, conv_tol, grid_level)
    nocc = int(np.count_nonzero(mf.mo_occ > 0))
    homo, lumo = (float(e) * HARTREE_TO_EV for e in mf.mo_energy[[nocc - 1, nocc]])
    return FrontierOrbitals(
        homo, lumo, homo, lumo, functional, basis, _pyscf_version(), time.perf_counter() - start
    )


def gw_frontier_orbitals(
    molecule: QCMolecule,
    functional: str = "PBE",
    basis: str = "def2-SVP",
    frozen_core: bool = False,
    frequency_points: int = 100,
    max_cycle: int = 100,
    conv_tol: float = 1e-9,
    grid_level: int = 3,
) -> FrontierOrbitals:
    """G0W0@functional quasiparticle HOMO and LUMO energies (eV) of a closed-shell molecule.

    Only the HOMO and LUMO self-energies are computed (``GWAC.orbs`` set before ``kernel()``,
    which pyscf 2.14 requires). Method string: ``"G0W0@PBE"`` (``"G0W0@PBE/fc"`` with frozen
    core).

    Args:
        molecule: elements and coordinates (Å).
        functional: Kohn-Sham starting point.
        basis: Gaussian basis set name known to pyscf.
        frozen_core: leave the core orbitals (1s of Li-Ne, 1s-2p of Na-Ar) out of the
            polarizability and the self-energy sum; cheaper, and changes HOMO/LUMO by a few
            meV.
        frequency_points: imaginary-frequency quadrature points (``GWAC.nw``, pyscf default 100).
        max_cycle, conv_tol: SCF cycle limit and energy tolerance (Hartree).
        grid_level: pyscf exchange-correlation integration grid level (0-9; pyscf's default 3).

    Returns:
        :class:`FrontierOrbitals` with the G0W0 energies and the Kohn-Sham reference energies.

    Raises:
        SCFNotConvergedError: the Kohn-Sham SCF did not converge.
        QPNotConvergedError: a quasiparticle energy is not finite or does not solve the
            quasiparticle equation to :data:`QP_RESIDUAL_TOLERANCE` (pyscf's Newton solve
            failed and left 0 eV).
        ValueError: open-shell molecule.
    """
    start = time.perf_counter()
    mf = run_kohn_sham(molecule, functional, basis, max_cycle, conv_tol, grid_level)
    nocc = int(np.count_nonzero(mf.mo_occ > 0))
    frozen = None
    if frozen_core:
        core = sum(1 if z > 2 else 0 for z in molecule.atomic_numbers) + sum(
            4 if z > 10 else 0 for z in molecule.atomic_numbers
        )
        frozen = core or None
    solver = shared_integral_gw_class()(mf, frozen=frozen)
    solver.orbs = [nocc - 1, nocc]
    solver.nw = frequency_points
    solver.kernel()
    residuals = quasiparticle_residuals(solver)
    unsolved = [i for i, r in enumerate(residuals) if not r <= QP_RESIDUAL_TOLERANCE]  # NaN too
    if unsolved:
        raise QPNotConvergedError(
            molecule.molecule_id, [("HOMO", "LUMO")[i] for i in unsolved],
            [residuals[i] for i in unsolved],
        )  # fmt: skip
    homo, lumo = (float(e) * HARTREE_TO_EV for e in solver.mo_energy[[nocc - 1, nocc]])
    reference_homo, reference_lumo = (
        float(e) * HARTREE_TO_EV for e in mf.mo_energy[[nocc - 1, nocc]]
    )
    return FrontierOrbitals(
        homo,
        lumo,
        reference_homo,
        reference_lumo,
        f"G0W0@{functional}" + ("/fc" if frozen_core else ""),
        basis,
        _pyscf_version(),
        time.perf_counter() - start,
    )
