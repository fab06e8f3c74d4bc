"""Unit conversions, in one place (CODATA 2018).

A bottom module: imports nothing of chemgraph, and every layer may import it.
"""

__all__ = ["HARTREE_PER_KCAL_MOL", "HARTREE_TO_EV"]

HARTREE_TO_EV = 27.211386245988
"""eV per hartree (CODATA 2018)."""

HARTREE_PER_KCAL_MOL = 1.0 / 627.5094740631
"""hartree per kcal/mol (CODATA 2018: 1 hartree = 627.5094740631 kcal/mol)."""
