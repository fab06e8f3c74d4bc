"""Result of a frontier-orbital calculation."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FrontierOrbitals"]


@dataclass(frozen=True)
class FrontierOrbitals:
    """HOMO and LUMO energies of one molecule at one level of theory.

    Attributes:
        homo_ev, lumo_ev: HOMO and LUMO energies in eV (quasiparticle energies for G0W0,
            Kohn-Sham or tight-binding orbital energies otherwise).
        reference_homo_ev, reference_lumo_ev: orbital energies of the mean-field reference the
            method starts from (the PBE orbitals for G0W0@PBE), in eV; equal to ``homo_ev`` /
            ``lumo_ev`` for methods without a separate reference.
        method: level of theory, e.g. ``"G0W0@PBE"``, ``"PBE"``, ``"GFN2-xTB"``.
        basis: Gaussian basis set (``"def2-SVP"``), or the built-in basis of the method.
        program: ``"pyscf 2.14.0"`` or ``"tblite 0.8.0"`` (name and version).
        seconds: wall time of the calculation, s.
    """

    homo_ev: float
    lumo_ev: float
    reference_homo_ev: float
    reference_lumo_ev: float
    method: str
    basis: str
    program: str
    seconds: float
