"""Chemistry layer: RDKit parsing (SMILES, SDF, reaction SMILES), standardisation, conformers.
The lowest layer: imports RDKit and the bottom modules (``errors``), no chemgraph package.

Every failure to turn a record into a molecule is a :class:`MoleculeParseError` whose
``reason`` is RDKit's own message.
"""

from chemgraph.chem.conformers import MMFF94_ELEMENTS, ConformerResult, embed_conformers
from chemgraph.chem.parse import (
    FragmentPolicy,
    MoleculeParseError,
    iter_sdf,
    mol_from_smiles,
    mols_from_smiles,
    positions,
)
from chemgraph.chem.preparation import MoleculePreparation
from chemgraph.chem.reactions import (
    Reaction,
    ReactionParseError,
    canonical_smiles,
    parse_reaction_smiles,
    strip_atom_maps,
)
from chemgraph.chem.standardize import STANDARDIZE_METHODS, StandardizeMethod, standardize

__all__ = [
    "MMFF94_ELEMENTS",
    "ConformerResult",
    "FragmentPolicy",
    "MoleculeParseError",
    "MoleculePreparation",
    "Reaction",
    "ReactionParseError",
    "STANDARDIZE_METHODS",
    "StandardizeMethod",
    "canonical_smiles",
    "embed_conformers",
    "iter_sdf",
    "mol_from_smiles",
    "mols_from_smiles",
    "parse_reaction_smiles",
    "positions",
    "standardize",
    "strip_atom_maps",
]
