"""QC: quantum-chemistry labels from electronic-structure codes (optional extra ``chemgraph[qc]``).
Beside the model stack: may import :mod:`chemgraph.data` (unit constants) and below.

* :func:`gw_frontier_orbitals` — pyscf Kohn-Sham DFT and one-shot G0W0 on top of it
  (G0W0@PBE/def2-SVP by default), HOMO/LUMO quasiparticle energies in eV.
* :func:`xtb_frontier_orbitals` — tblite GFN2-xTB HOMO/LUMO orbital energies in eV.
* :func:`compute_frontier_orbitals` — either of them over many molecules: parallel worker
  processes, an append-only results file (resumable), failures written as rows, never dropped
  (a G0W0 quasiparticle solve that fails is one: :class:`QPNotConvergedError`).

pyscf and tblite are imported only when a calculation runs, so this package imports without them.
"""

from chemgraph.qc.labels import (
    METHODS,
    RESULT_COLUMNS,
    compute_frontier_orbitals,
    read_results,
)
from chemgraph.qc.molecule import QCMolecule
from chemgraph.qc.pyscf_gw import (
    QPNotConvergedError,
    SCFNotConvergedError,
    dft_frontier_orbitals,
    gw_frontier_orbitals,
)
from chemgraph.qc.result import FrontierOrbitals
from chemgraph.qc.xtb import xtb_frontier_orbitals

__all__ = [
    "METHODS",
    "RESULT_COLUMNS",
    "FrontierOrbitals",
    "QCMolecule",
    "QPNotConvergedError",
    "SCFNotConvergedError",
    "compute_frontier_orbitals",
    "dft_frontier_orbitals",
    "gw_frontier_orbitals",
    "read_results",
    "xtb_frontier_orbitals",
]
