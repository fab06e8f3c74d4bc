"""ETKDGv3 + MMFF94 conformers: seeded, plausible geometry, failures reported."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem

from chemgraph.chem import ConformerResult, MoleculeParseError, embed_conformers, mol_from_smiles


def _coords(result: ConformerResult) -> np.ndarray:
    return np.stack([result.mol.GetConformer(c).GetPositions() for c in result.conformer_ids])


def _bond_lengths(mol: Chem.Mol, conf_id: int, a: str, b: str) -> list[float]:
    pos = mol.GetConformer(conf_id).GetPositions()
    out = []
    for bond in mol.GetBonds():
        pair = {bond.GetBeginAtom().GetSymbol(), bond.GetEndAtom().GetSymbol()}
        if pair == {a, b}:
            out.append(
                float(np.linalg.norm(pos[bond.GetBeginAtomIdx()] - pos[bond.GetEndAtomIdx()]))
            )
    return out


def test_seeded_runs_are_identical():
    mol = mol_from_smiles("CC(C)Cc1ccc(cc1)C(C)C(=O)O")  # ibuprofen
    first = embed_conformers(mol, num_conformers=3, seed=7)
    second = embed_conformers(mol, num_conformers=3, seed=7)
    assert np.array_equal(_coords(first), _coords(second))
    assert first.energies == second.energies
    other = embed_conformers(mol, num_conformers=3, seed=8)
    assert not np.array_equal(_coords(first), _coords(other))


def test_ethanol_geometry_after_mmff():
    result = embed_conformers(mol_from_smiles("CCO"))
    mol = result.mol
    assert result.problems == []
    assert result.converged == [True]
    assert np.isfinite(result.energies[0])
    # Hydrogens appended after the heavy atoms, whose order is kept.
    assert [a.GetSymbol() for a in mol.GetAtoms()][:3] == ["C", "C", "O"]
    assert mol.GetNumAtoms() == 9
    assert mol.GetConformer(result.conformer_ids[0]).Is3D()
    cid = result.conformer_ids[0]
    (cc,) = _bond_lengths(mol, cid, "C", "C")
    (co,) = _bond_lengths(mol, cid, "C", "O")
    ch = _bond_lengths(mol, cid, "C", "H")
    (oh,) = _bond_lengths(mol, cid, "O", "H")
    assert 1.50 <= cc <= 1.54  # C(sp3)-C(sp3), ~1.51-1.53 Å
    assert 1.40 <= co <= 1.45  # C-O in an alcohol, ~1.42-1.43 Å
    assert len(ch) == 5 and all(1.08 <= x <= 1.11 for x in ch)
    assert 0.95 <= oh <= 0.99


def test_number_of_conformers_and_input_untouched():
    mol = mol_from_smiles("CCCCCCCC")
    result = embed_conformers(mol, num_conformers=5, seed=1)
    assert result.num_conformers == 5 == result.mol.GetNumConformers()
    assert len(result.energies) == len(result.converged) == 5
    coords = _coords(result)
    assert coords.shape == (5, 26, 3)
    assert len({c.tobytes() for c in coords}) == 5  # five different geometries
    assert mol.GetNumAtoms() == 8 and mol.GetNumConformers() == 0  # input not modified


def test_unpacks_as_mol_and_problems():
    mol, problems = embed_conformers(mol_from_smiles("O"))
    assert mol.GetNumAtoms() == 3 and problems == []


def test_no_mmff_parameters_is_reported_not_raised():
    # Phenylboronic acid: boron has no MMFF94 atom type.
    result = embed_conformers(mol_from_smiles("OB(O)c1ccccc1"), num_conformers=2)
    assert result.num_conformers == 2
    assert result.energies == [None, None] and result.converged == [None, None]
    assert len(result.problems) == 1
    assert "MMFF94 has no parameters" in result.problems[0] and "B" in result.problems[0]
    assert np.isfinite(_coords(result)).all()  # the ETKDGv3 geometry is still there


def test_non_converged_optimisation_is_reported():
    result = embed_conformers(mol_from_smiles("CCO"), max_iterations=1)
    assert result.converged == [False]
    assert result.problems == ["conformer 0: MMFF94 optimisation did not converge in 1 iterations"]


def test_optimize_false_keeps_etkdg_geometry():
    result = embed_conformers(mol_from_smiles("CCO"), optimize=False)
    assert result.energies == [None] and result.converged == [None] and result.problems == []


@pytest.mark.parametrize(
    "smiles",
    [
        "C1#CC1",  # cyclopropyne: a triple bond cannot close a three-membered ring
        "C1C[C@@H]2CC[C@@H]1C2",  # norbornane with contradictory bridgehead configurations
    ],
)
def test_embedding_failure_raises_with_reason(smiles, capfd):
    mol = mol_from_smiles(smiles)
    with pytest.raises(MoleculeParseError) as info:
        embed_conformers(mol)
    assert info.value.reason.startswith("ETKDGv3 could not embed a conformer")
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # RDKit's log output is captured, not printed


def test_bad_arguments():
    mol = mol_from_smiles("C")
    with pytest.raises(ValueError, match="num_conformers"):
        embed_conformers(mol, num_conformers=0)
    with pytest.raises(ValueError, match="max_iterations"):
        embed_conformers(mol, max_iterations=0)


TRIGLYCERIDE = "CCCCCCCCCCCCCCCCCC(=O)OCC(COC(=O)CCCCCCCCCCCCCCCCC)OC(=O)CCCCCCCCCCCCCCCCC"


def test_a_long_flexible_molecule_is_embedded_from_random_coordinates():
    # tristearin, 57 heavy atoms: ETKDGv3's default (eigenvector) start finds no conformer
    result = embed_conformers(mol_from_smiles(TRIGLYCERIDE), optimize=False)
    assert result.attempt == "random coordinates" and result.num_conformers == 1
    assert result.mol.GetNumAtoms() == 57 + 116
    lengths = _bond_lengths(result.mol, result.conformer_ids[0], "C", "C")
    assert len(lengths) == 53 and 1.4 < min(lengths) and max(lengths) < 1.65
    assert embed_conformers(mol_from_smiles("CCO")).attempt == "eigenvector start"
