"""Chemistry layer: RDKit parsing (SMILES, SDF), standardisation and conformers.

Every failure to turn a record into a molecule is a :class:`MoleculeParseError` whose
``reason`` is RDKit's own message.
"""

from chemgraph.chem.parse import (
    FragmentPolicy,
    MoleculeParseError,
    iter_sdf,
    mol_from_smiles,
    positions,
)

__all__ = ["FragmentPolicy", "MoleculeParseError", "iter_sdf", "mol_from_smiles", "positions"]
