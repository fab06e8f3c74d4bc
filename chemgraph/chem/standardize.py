"""Structure standardisation before featurisation: ``none``, ``basic`` (RDKit) or ``chembl``.

- ``"none"``: the molecule is returned unchanged (the same object).
- ``"basic"``: RDKit's MolStandardize, three steps in this order:

  1. ``rdMolStandardize.Cleanup`` (RDKit defaults): remove explicit H, disconnect metals,
     normalise functional groups (e.g. a pentavalent nitro ``N(=O)=O`` becomes
     ``[N+](=O)[O-]``; sulfoxides, azides, …), reionise;
  2. keep the organic parent: the largest fragment that contains carbon (most heavy atoms,
     ties to the larger molecular weight, then the alphabetically first SMILES;
     ``rdMolStandardize.LargestFragmentChooser`` with ``preferOrganic``). Counter-ions, metals,
     inorganic acids and water are removed, whatever their size: the hydrochloride
     ``CN(C)CCCN1c2ccccc2CCc2ccccc21.Cl`` gives the amine, ``O=C([O-])c1ccccc1.[Na+]`` the
     benzoate. Carbon-containing ions count as organic (carbonate, cyanide,
     trifluoroacetate): of ``OC(=O)C(F)(F)F.CCN`` the trifluoroacetic acid (7 heavy atoms) is
     kept, not the ethylamine (3);
  3. ``rdMolStandardize.Uncharger``: neutralise acids and bases by adding/removing H where
     possible (``CC(=O)[O-]`` -> ``CC(=O)O``, zwitterions ``[NH3+]CC(=O)[O-]`` ->
     ``NCC(=O)O``); charges that cannot be neutralised (quaternary ammonium
     ``C[N+](C)(C)C``, a nitro group's ``[N+]``/``[O-]`` pair) stay.

  A record without any carbon (an inorganic salt) has no organic parent: steps 2 and 3 are
  skipped, so ammonium chloride stays ``[Cl-].[NH4+]`` and copper sulfate
  ``O=S(=O)([O-])[O-].[Cu+2]`` (not HCl and sulfuric acid). Isotopes and stereochemistry are
  kept. Example: ``CC(=O)[O-].[Na+]`` -> ``CC(=O)O``.
- ``"chembl"``: the ChEMBL Structure Pipeline (Bento et al., J. Cheminform. 2020, 12, 51),
  package ``chembl_structure_pipeline`` (optional extra: ``pip install "chemgraph[chembl]"``):
  ``standardize_mol`` then ``get_parent_mol`` — the ChEMBL "parent": standardised, isotopes
  removed, salts and solvents stripped by ChEMBL's own lists (all fragments are kept when all
  of them are on the salt list, e.g. sodium acetate stays as it is), neutralised. Molecules
  that the pipeline *excludes* (containing a metal of its list, or more than 7 boron atoms)
  are returned as the pipeline returns them, not standardised, with the molecule property
  ``chembl_excluded`` set to ``True`` (``mol.GetBoolProp("chembl_excluded")``; ``False`` for
  all others).

The result is always a new, sanitised molecule (except for ``"none"``); the input is never
modified. The input may be unsanitised (e.g. ``Chem.MolFromSmiles("CN(=O)=O", sanitize=False)``,
which RDKit would refuse to sanitise), so that normalisation can repair it.
"""

from __future__ import annotations

from typing import Literal

from rdkit import Chem
from rdkit.Chem.MolStandardize import rdMolStandardize

from chemgraph.chem.parse import MoleculeParseError, rdkit_log_capture
from chemgraph.errors import MissingDependencyError

__all__ = ["STANDARDIZE_METHODS", "StandardizeMethod", "standardize"]

StandardizeMethod = Literal["none", "basic", "chembl"]
"""``"none"`` (unchanged), ``"basic"`` (RDKit MolStandardize cleanup, largest organic
fragment, uncharge; inorganic records only cleaned up) or ``"chembl"`` (ChEMBL Structure
Pipeline standardise + parent); see the module docstring."""

#: The valid values of :data:`StandardizeMethod`.
STANDARDIZE_METHODS: tuple[str, ...] = ("none", "basic", "chembl")

_CHEMBL_INSTALL = 'pip install "chemgraph[chembl]"'


def _smiles_or_none(mol: Chem.Mol) -> str | None:
    try:
        with rdkit_log_capture():
            return Chem.MolToSmiles(mol)
    except Exception:
        return None


def _failure(
    method: str, mol: Chem.Mol, exc: BaseException, lines: list[str]
) -> MoleculeParseError:
    message = str(exc).strip() or "; ".join(lines) or type(exc).__name__
    return MoleculeParseError(f"standardize ({method}) failed: {message}", _smiles_or_none(mol))


def _organic_parent_chooser() -> rdMolStandardize.LargestFragmentChooser:
    """Largest carbon-containing fragment by heavy atoms, then molecular weight."""
    params = rdMolStandardize.CleanupParameters()
    params.largestFragmentChooserCountHeavyAtomsOnly = True
    params.preferOrganic = True
    return rdMolStandardize.LargestFragmentChooser(params)


def _basic(mol: Chem.Mol) -> Chem.Mol:
    out = rdMolStandardize.Cleanup(mol)
    if any(atom.GetAtomicNum() == 6 for atom in out.GetAtoms()):  # else inorganic: keep all
        out = _organic_parent_chooser().choose(out)
        out = rdMolStandardize.Uncharger().uncharge(out)
    Chem.SanitizeMol(out)
    return out


def _chembl(mol: Chem.Mol) -> Chem.Mol:
    try:
        from chembl_structure_pipeline import get_parent_mol, standardize_mol
    except ImportError as exc:
        raise MissingDependencyError(
            'standardize method "chembl" needs the chembl_structure_pipeline package: '
            f"{_CHEMBL_INSTALL}"
        ) from exc
    standardized = standardize_mol(Chem.Mol(mol))
    parent, excluded = get_parent_mol(standardized)
    parent = Chem.Mol(parent)
    Chem.SanitizeMol(parent)
    parent.SetBoolProp("chembl_excluded", bool(excluded))
    return parent


def standardize(mol: Chem.Mol, method: StandardizeMethod) -> Chem.Mol:
    """Standardise one molecule.

    Args:
        mol: an RDKit molecule, sanitised or not.
        method: ``"none"``, ``"basic"`` or ``"chembl"`` (see the module docstring).

    Returns:
        ``mol`` itself for ``"none"``; otherwise a new sanitised molecule (``mol`` is not
        modified).

    Raises:
        ValueError: unknown ``method`` (the message lists the valid ones).
        ImportError: ``"chembl"`` without the ``chembl_structure_pipeline`` package; the
            message gives the pip command.
        MoleculeParseError: ``mol`` is ``None``, standardisation fails (``reason`` is
            ``"standardize (<method>) failed: <RDKit's message>"``, e.g. ``"Can't kekulize
            mol. ..."`` for ``c1cccc1``), or no atom is left.
    """
    if method not in STANDARDIZE_METHODS:
        raise ValueError(
            f"unknown standardize method {method!r}; valid: {', '.join(STANDARDIZE_METHODS)}"
        )
    if mol is None:
        raise MoleculeParseError("standardize: no molecule (None)")
    if method == "none":
        return mol
    step = _basic if method == "basic" else _chembl
    with rdkit_log_capture() as log:
        try:
            out = step(mol)
        except ImportError:
            raise
        except Exception as exc:  # RDKit's sanitisation/kekulisation errors and the like
            raise _failure(method, mol, exc, log.lines) from exc
    if out is None or out.GetNumAtoms() == 0:
        raise MoleculeParseError(f"standardize ({method}) left no atoms", _smiles_or_none(mol))
    return out
