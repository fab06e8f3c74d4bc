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

from chemgraph.data.qm9pack import HARTREE_TO_EV
from chemgraph.qc.molecule import QCMolecule
from chemgraph.qc.result import FrontierOrbitals

__all__ = ["SCFNotConvergedError", "dft_frontier_orbitals", "gw_frontier_orbitals"]


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


def _pyscf_version() -> str:
    import pyscf

    return f"pyscf {pyscf.__version__}"


def _run_kohn_sham(
    molecule: QCMolecule,
    functional: str,
    basis: str,
    max_cycle: int,
    conv_tol: float,
    grid_level: int,
):
    """Converged restricted Kohn-Sham object (pyscf ``RKS``) of a closed-shell molecule."""
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
def _shared_integral_gw_class() -> type:
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
    mf = _run_kohn_sham(molecule, functional, basis, max_cycle, conv_tol, grid_level)
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
            polarizability and the self-energy sum; cheaper (about 20% for QM9 molecules),
            changes HOMO/LUMO by a few meV.
        frequency_points: imaginary-frequency quadrature points (``GWAC.nw``, pyscf default 100).
        max_cycle, conv_tol: SCF cycle limit and energy tolerance (Hartree).
        grid_level: pyscf exchange-correlation integration grid level (0-9; pyscf's default 3).

    Returns:
        :class:`FrontierOrbitals` with the G0W0 energies and the Kohn-Sham reference energies.

    Raises:
        SCFNotConvergedError: the Kohn-Sham SCF did not converge.
        ArithmeticError: the quasiparticle energies are not finite.
        ValueError: open-shell molecule.
    """
    start = time.perf_counter()
    mf = _run_kohn_sham(molecule, functional, basis, max_cycle, conv_tol, grid_level)
    nocc = int(np.count_nonzero(mf.mo_occ > 0))
    frozen = None
    if frozen_core:
        core = sum(1 if z > 2 else 0 for z in molecule.atomic_numbers) + sum(
            4 if z > 10 else 0 for z in molecule.atomic_numbers
        )
        frozen = core or None
    solver = _shared_integral_gw_class()(mf, frozen=frozen)
    solver.orbs = [nocc - 1, nocc]
    solver.nw = frequency_points
    solver.kernel()
    homo, lumo = (float(e) * HARTREE_TO_EV for e in solver.mo_energy[[nocc - 1, nocc]])
    if not (np.isfinite(homo) and np.isfinite(lumo)):
        raise ArithmeticError(
            f"molecule {molecule.molecule_id}: G0W0 quasiparticle energies not finite"
        )
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
