"""GFN2-xTB frontier orbitals with tblite.

GFN2-xTB: Bannwarth, Ehlert, Grimme, J. Chem. Theory Comput. 15, 1652 (2019),
https://doi.org/10.1021/acs.jctc.8b01176; tblite: https://github.com/tblite/tblite.
H2O (r(OH) 0.9572 Å, 104.52°) gives HOMO -12.177 eV and LUMO 2.476 eV with tblite 0.8.0
(``tests/qc/test_xtb.py``).
"""

from __future__ import annotations

import importlib.metadata
import time

import numpy as np
from ase.units import Bohr

from chemgraph.qc.molecule import QCMolecule
from chemgraph.qc.pyscf_gw import SCFNotConvergedError
from chemgraph.qc.result import FrontierOrbitals
from chemgraph.units import HARTREE_TO_EV

__all__ = ["xtb_frontier_orbitals"]


def xtb_frontier_orbitals(
    molecule: QCMolecule, method: str = "GFN2-xTB", max_cycle: int = 250
) -> FrontierOrbitals:
    """Tight-binding HOMO and LUMO orbital energies (eV) of a closed-shell molecule.

    The HOMO is orbital ``N_electrons / 2`` (1-based) counted from the lowest; tblite's default
    electronic temperature (300 K Fermi smearing) is kept.

    Args:
        molecule: elements and coordinates (Å; converted to Bohr for tblite).
        method: ``"GFN2-xTB"`` or ``"GFN1-xTB"``.
        max_cycle: self-consistent-charge iteration limit.

    Raises:
        SCFNotConvergedError: the self-consistent-charge iterations did not converge.
        ValueError: open-shell molecule.
    """
    from tblite.interface import Calculator, TBLiteRuntimeError

    if molecule.spin != 0 or molecule.num_electrons % 2:
        raise ValueError(
            f"molecule {molecule.molecule_id}: only closed shells are supported "
            f"(spin {molecule.spin}, {molecule.num_electrons} electrons)"
        )
    start = time.perf_counter()
    calculator = Calculator(
        method, molecule.atomic_numbers, molecule.positions / Bohr, charge=float(molecule.charge)
    )
    calculator.set("verbosity", 0)
    calculator.set("max-iter", max_cycle)
    try:
        result = calculator.singlepoint()
    except TBLiteRuntimeError as error:
        if "converge" in str(error).lower():
            raise SCFNotConvergedError(molecule.molecule_id, max_cycle) from error
        raise
    energies = np.asarray(result.get("orbital-energies")) * HARTREE_TO_EV
    occupations = np.asarray(result.get("orbital-occupations"))
    nocc = int(round(occupations.sum() / 2))
    homo, lumo = float(energies[nocc - 1]), float(energies[nocc])
    program = f"tblite {importlib.metadata.version('tblite')}"
    return FrontierOrbitals(
        homo, lumo, homo, lumo, method, "none", program, time.perf_counter() - start
    )
