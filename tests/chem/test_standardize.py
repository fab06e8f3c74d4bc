"""chemgraph.chem.standardize: RDKit MolStandardize ("basic") and the ChEMBL pipeline."""

from __future__ import annotations

import sys

import pytest
from rdkit import Chem

from chemgraph.chem import STANDARDIZE_METHODS, MoleculeParseError, standardize


def smiles_after(smiles: str, method: str, sanitize: bool = True) -> str:
    return Chem.MolToSmiles(standardize(Chem.MolFromSmiles(smiles, sanitize=sanitize), method))


def test_methods():
    assert STANDARDIZE_METHODS == ("none", "basic", "chembl")
    with pytest.raises(ValueError, match="none, basic, chembl"):
        standardize(Chem.MolFromSmiles("C"), "full")


def test_none_returns_the_molecule_unchanged():
    mol = Chem.MolFromSmiles("CC(=O)[O-].[Na+]")
    assert standardize(mol, "none") is mol


@pytest.mark.parametrize(
    ("smiles", "expected"),
    [
        ("CC(=O)[O-].[Na+]", "CC(=O)O"),  # salt stripped, acid neutralised
        ("C[N+](C)(C)C.[Cl-]", "C[N+](C)(C)C"),  # quaternary ammonium cannot be neutralised
        ("[O-]c1ccccc1.[Na+]", "Oc1ccccc1"),  # phenolate
        ("OC(=O)c1ccccc1.O.O", "O=C(O)c1ccccc1"),  # hydrate
        ("C[N+](=O)[O-]", "C[N+](=O)[O-]"),  # a nitro group's charges stay
        ("C1=CC=CC=C1", "c1ccccc1"),
        ("O=C([O-])c1ccccc1.[Na+]", "O=C(O)c1ccccc1"),  # sodium benzoate -> benzoic acid
        # imipramine hydrochloride, written with HCl or as the ammonium chloride: the amine
        ("CN(C)CCCN1c2ccccc2CCc2ccccc21.Cl", "CN(C)CCCN1c2ccccc2CCc2ccccc21"),
        ("C[NH+](C)CCCN1c2ccccc2CCc2ccccc21.[Cl-]", "CN(C)CCCN1c2ccccc2CCc2ccccc21"),
        ("[NH3+]CC(=O)[O-]", "NCC(=O)O"),  # glycine zwitterion -> neutral form
        # the organic parent wins over a larger inorganic fragment (4 vs 5 heavy atoms)
        ("C[NH3+].C[NH3+].[O-]S(=O)(=O)[O-]", "CN"),
        ("[2H]C([2H])([2H])O", "[2H]C([2H])([2H])O"),  # isotopes are kept
    ],
)
def test_basic(smiles, expected):
    assert smiles_after(smiles, "basic") == expected


@pytest.mark.parametrize(
    ("smiles", "expected"),
    [
        ("[NH4+].[Cl-]", "[Cl-].[NH4+]"),  # not HCl (the heavier fragment, uncharged)
        ("[Cu+2].[O-]S(=O)(=O)[O-]", "O=S(=O)([O-])[O-].[Cu+2]"),  # not H2SO4
        ("[Na+].[Cl-]", "[Cl-].[Na+]"),
        ("O", "O"),
    ],
)
def test_basic_keeps_inorganic_records_whole(smiles, expected):
    assert smiles_after(smiles, "basic") == expected


def test_basic_normalises_nitro_and_sulfone():
    # A pentavalent nitro N(=O)=O, read without sanitisation (RDKit's sanitisation would fix
    # it itself), becomes [N+](=O)[O-]; the input molecule is not modified.
    mol = Chem.MolFromSmiles("c1ccccc1N(=O)=O", sanitize=False)
    out = standardize(mol, "basic")
    assert Chem.MolToSmiles(out) == "O=[N+]([O-])c1ccccc1"
    assert sorted(a.GetFormalCharge() for a in out.GetAtoms() if a.GetSymbol() != "C") == [-1, 0, 1]
    assert Chem.MolToSmiles(mol) == "O=N(=O)c1ccccc1"
    # Cleanup's normaliser (not sanitisation) turns a charge-separated sulfone into S(=O)=O.
    assert smiles_after("C[S+2]([O-])([O-])C", "basic") == "CS(C)(=O)=O"
    assert Chem.MolToSmiles(Chem.MolFromSmiles("C[S+2]([O-])([O-])C")) == "C[S+2](C)([O-])[O-]"


def test_basic_keeps_input_unmodified():
    mol = Chem.MolFromSmiles("CC(=O)[O-].[Na+]")
    standardize(mol, "basic")
    assert Chem.MolToSmiles(mol) == "CC(=O)[O-].[Na+]"


def test_failures_raise_molecule_parse_error():
    with pytest.raises(MoleculeParseError) as info:
        standardize(Chem.MolFromSmiles("c1cccc1", sanitize=False), "basic")
    assert "standardize (basic) failed" in info.value.reason
    assert "kekulize" in info.value.reason
    assert info.value.record == "c1cccc1"
    with pytest.raises(MoleculeParseError, match="None"):
        standardize(None, "basic")


def test_chembl_missing_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "chembl_structure_pipeline", None)
    with pytest.raises(ImportError, match=r'pip install "chemgraph\[chembl\]"'):
        standardize(Chem.MolFromSmiles("CCO"), "chembl")


@pytest.mark.parametrize(
    ("smiles", "sanitize", "expected"),
    [
        ("[O-]c1ccccc1.[Na+]", True, "Oc1ccccc1"),  # sodium stripped, phenol neutralised
        ("[2H]C([2H])([2H])O", True, "CO"),  # ChEMBL parent: isotopes removed
        ("[2H]C([2H])([2H])N1CCC[C@H]1c1cccnc1", True, "CN1CCC[C@H]1c1cccnc1"),  # nicotine-d3
        ("[13CH3]OC(=O)c1ccccc1", True, "COC(=O)c1ccccc1"),
        ("CN(=O)=O", False, "C[N+](=O)[O-]"),  # nitro normalised
        ("C[N+](C)(C)C.[Cl-]", True, "C[N+](C)(C)C"),
        # ChEMBL keeps every fragment when all are on its salt list (acetate and sodium).
        ("CC(=O)[O-].[Na+]", True, "CC(=O)[O-].[Na+]"),
    ],
)
def test_chembl(smiles, sanitize, expected):
    pytest.importorskip("chembl_structure_pipeline")
    out = standardize(Chem.MolFromSmiles(smiles, sanitize=sanitize), "chembl")
    assert Chem.MolToSmiles(out) == expected
    assert out.GetBoolProp("chembl_excluded") is False


def test_chembl_excluded_metal_is_flagged():
    pytest.importorskip("chembl_structure_pipeline")
    out = standardize(Chem.MolFromSmiles("CC[Fe]"), "chembl")
    assert out.GetBoolProp("chembl_excluded") is True
    assert Chem.MolToSmiles(out) == "C[CH2][Fe]"
    with pytest.raises(MoleculeParseError, match="standardize \\(chembl\\) failed"):
        standardize(Chem.MolFromSmiles("c1cccc1", sanitize=False), "chembl")
