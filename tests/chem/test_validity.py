"""chemgraph.chem.validity: a product is valid only as a chemist means it."""

from __future__ import annotations

import pytest

from chemgraph.chem.validity import ReactionInputs, product_problem

# the failures of issue 27: an undertrained GRAT answered these for textbook reactions
ESTERIFICATION = ReactionInputs.from_smiles(["CC(=O)O", "OCC"])
CHLORIDE_SN2 = ReactionInputs.from_smiles(["CCCl", "[Na+].[OH-]"])


@pytest.mark.parametrize(
    ("product", "reason"),
    [
        ("[CH3]", "radical on C (1 unpaired electron) the reactants do not have"),
        ("[OH]", "radical on O (1 unpaired electron) the reactants do not have"),
        ("[Cl]", "radical on Cl (1 unpaired electron) the reactants do not have"),
        ("[F]", "radical on F (1 unpaired electron) the reactants do not have"),
        ("CCOC(C)=O.[CH3]", "radical on C (1 unpaired electron) the reactants do not have"),
    ],
)
def test_radicals_are_invalid(product, reason):
    assert product_problem(product, ESTERIFICATION) == reason


def test_real_products_are_valid():
    assert product_problem("CCOC(C)=O", ESTERIFICATION) is None
    assert product_problem("CCO", CHLORIDE_SN2) is None
    # a counter-ion the reactants hold is fine, a bare atom they do not hold is not
    assert product_problem("CC[O-].[Na+]", CHLORIDE_SN2) is None
    assert product_problem("C", ESTERIFICATION) == "bare atom C the reactants do not have"
    assert product_problem("[Cl-]", ESTERIFICATION) == "bare atom [Cl-] the reactants do not have"


def test_atoms_must_come_from_the_reactants():
    assert product_problem("CCCl", ESTERIFICATION) == "1 Cl atom but the reactants hold 0"
    assert product_problem("CCOC(=O)CC(=O)OCC", ESTERIFICATION) == (
        "7 C atoms but the reactants hold 4"
    )
    # hydrogens are not counted (H2 is often not written)
    assert product_problem("CC(=O)OCC", ReactionInputs.from_smiles(["CC(=O)O", "C=C"])) is None


def test_radicals_the_reactants_have_are_allowed():
    tempo = ReactionInputs.from_smiles(["CC1(C)CCCC(C)(C)N1[O]", "CCO"])
    assert product_problem("CC1(C)CCCC(C)(C)N1[O]", tempo) is None
    assert product_problem("[CH2]C", tempo).startswith("radical on C")


def test_unparsable_and_empty_products():
    assert product_problem("C(", ESTERIFICATION) == "not a molecule RDKit can sanitise"
    assert product_problem("", ESTERIFICATION) == "empty product"
    with pytest.raises(ValueError, match="cannot parse reactant SMILES"):
        ReactionInputs.from_smiles(["C("])
