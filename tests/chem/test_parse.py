"""chemgraph.chem: SMILES/SDF parsing, error reasons, fragments, coordinates."""

from __future__ import annotations

import gzip
import io
import pickle

import numpy as np
import pytest
from rdkit import Chem

from chemgraph.chem import (
    MoleculeParseError,
    iter_sdf,
    mol_from_smiles,
    mols_from_smiles,
    positions,
)
from chemgraph.chem.parse import iter_sdf_blocks, mol_from_sdf_block

# --- SMILES ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("smiles", "expected_in_reason"),
    [
        ("C1CC", "unclosed ring"),
        ("c1ccccc", "unclosed ring"),
        ("N(C)(C)(C)(C)C", "Explicit valence for atom # 0 N, 5"),
        ("c1cccc1", "kekulize"),
        ("", "empty SMILES"),
        ("   \n", "empty SMILES"),
        ("foo", "SMILES parse error"),
    ],
)
def test_invalid_smiles_raise_with_reason(smiles, expected_in_reason, capfd):
    with pytest.raises(MoleculeParseError) as info:
        mol_from_smiles(smiles)
    assert expected_in_reason in info.value.reason
    assert info.value.reason in str(info.value)
    # RDKit's C++ log must not reach stderr (fd-level capture sees it).
    assert capfd.readouterr().err == ""


def test_pentavalent_nitrogen_reason_is_rdkit_valence_message():
    with pytest.raises(MoleculeParseError) as info:
        mol_from_smiles("N(C)(C)(C)(C)C")
    assert info.value.reason == "Explicit valence for atom # 0 N, 5, is greater than permitted"
    assert info.value.record == "N(C)(C)(C)(C)C"
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.reason, copy.record, str(copy)) == (
        info.value.reason,
        info.value.record,
        str(info.value),
    )


@pytest.mark.parametrize("value", [None, float("nan")])
def test_missing_values_are_empty_smiles(value):
    with pytest.raises(MoleculeParseError, match="empty SMILES"):
        mol_from_smiles(value)


def test_non_string_raises_parse_error_which_is_a_value_error():
    with pytest.raises(ValueError) as info:
        mol_from_smiles(5)  # type: ignore[arg-type]
    assert isinstance(info.value, MoleculeParseError)
    assert info.value.reason == "SMILES must be a str, got int"


@pytest.mark.parametrize("text", ["CC O", "c1ccccc1 CCCCCCCC", "CC\tN", "CC\nN"])
def test_inner_whitespace_is_an_error_not_a_silently_dropped_tail(text):
    # RDKit alone reads "CC O" as ethane: the text after the blank would vanish
    assert Chem.MolToSmiles(Chem.MolFromSmiles(text)) in ("CC", "c1ccccc1")
    with pytest.raises(MoleculeParseError) as info:
        mol_from_smiles(text)
    assert info.value.reason.startswith("SMILES holds whitespace")
    (error,) = mols_from_smiles([text])
    assert isinstance(error, MoleculeParseError) and error.reason == info.value.reason


def test_valid_smiles_is_stripped_and_sanitised():
    mol = mol_from_smiles("  c1ccccc1O\n")
    assert mol.GetNumAtoms() == 7
    assert Chem.MolToSmiles(mol) == "Oc1ccccc1"
    assert mol.GetAtomWithIdx(0).GetIsAromatic()  # sanitised: aromaticity perceived
    assert positions(mol) is None  # no conformer from SMILES


def test_salt_fragments_keep_and_largest(capfd):
    kept = mol_from_smiles("CC(=O)[O-].[Na+]", fragments="keep")
    assert kept.GetNumHeavyAtoms() == 5
    largest = mol_from_smiles("CC(=O)[O-].[Na+]", fragments="largest")
    assert largest.GetNumHeavyAtoms() == 4
    assert Chem.MolToSmiles(largest) == "CC(=O)[O-]"
    assert capfd.readouterr().err == ""


def test_largest_counts_heavy_atoms_not_hydrogens():
    # Butane (4 heavy, 10 H) vs ethylene glycol (4 heavy, 6 H) tie on heavy atoms; RDKit then
    # prefers the larger molecular weight: OCCO (62.07) over CCCC (58.12).
    assert Chem.MolToSmiles(mol_from_smiles("CCCC.OCCO", fragments="largest")) == "OCCO"
    # Benzene (6 heavy atoms) beats chloride (1) outright.
    assert Chem.MolToSmiles(mol_from_smiles("[Cl-].c1ccccc1", fragments="largest")) == "c1ccccc1"


def test_unknown_fragment_policy_is_rejected():
    with pytest.raises(ValueError, match="fragments"):
        mol_from_smiles("CCO", fragments="smallest")  # type: ignore[arg-type]


# --- SDF ------------------------------------------------------------------------------------

# Water with explicit hydrogens, 3D, one SD data field.
WATER = """water
     RDKit          3D

  3  2  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.1173 O   0  0  0  0  0  0  0  0  0  0  0  0
    0.0000    0.7572   -0.4692 H   0  0  0  0  0  0  0  0  0  0  0  0
    0.0000   -0.7572   -0.4692 H   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  1  0
  1  3  1  0
M  END
> <energy>
-76.4

$$$$
"""
# Counts line announces 2 atoms and 1 bond, but the atom block has only one line.
CORRUPT = """broken
     RDKit          3D

  2  1  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
M  END
$$$$
"""
# Methylamine heavy atoms only (implicit H), C-N 1.47 Å along x.
METHYLAMINE = """methylamine
     RDKit          3D

  2  1  0  0  0  0  0  0  0  0999 V2000
    0.1000    0.2000    0.3000 C   0  0  0  0  0  0  0  0  0  0  0  0
    1.5700    0.2000    0.3000 N   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  1  0
M  END
$$$$
"""
# Readable, but N with five carbon neighbours fails sanitisation.
PENTAVALENT = """pentavalent
     RDKit          3D

  6  5  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 N   0  0  0  0  0  0  0  0  0  0  0  0
    1.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
   -1.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    0.0000    1.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    0.0000   -1.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    0.0000    0.0000    1.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  1  0
  1  3  1  0
  1  4  1  0
  1  5  1  0
  1  6  1  0
M  END
$$$$
"""
SDF_TEXT = WATER + CORRUPT + METHYLAMINE + PENTAVALENT + "\n\n"  # trailing blank lines


@pytest.fixture(params=["plain", "gzip"])
def sdf_path(request, tmp_path):
    if request.param == "plain":
        path = tmp_path / "records.sdf"
        path.write_text(SDF_TEXT)
    else:
        path = tmp_path / "records.sdf.gz"
        with gzip.open(path, "wt") as fh:
            fh.write(SDF_TEXT)
    return path


def test_iter_sdf_yields_every_record_with_reasons(sdf_path, capfd):
    records = list(iter_sdf(sdf_path))
    assert [index for index, _, _ in records] == [0, 1, 2, 3]  # blank tail is not a record

    _, water, reason = records[0]
    assert reason is None
    assert water.GetNumAtoms() == 1  # explicit H removed by default
    assert water.GetPropsAsDict()["energy"] == pytest.approx(-76.4)
    assert water.GetProp("_Name") == "water"
    np.testing.assert_array_equal(positions(water), np.array([[0.0, 0.0, 0.1173]], np.float32))

    _, mol, reason = records[1]
    assert mol is None
    assert "Atom line too short" in reason

    _, methylamine, reason = records[2]
    assert reason is None
    assert Chem.MolToSmiles(methylamine) == "CN"
    xyz = positions(methylamine)
    assert xyz.dtype == np.float32 and xyz.shape == (2, 3)
    np.testing.assert_array_equal(xyz, np.array([[0.1, 0.2, 0.3], [1.57, 0.2, 0.3]], np.float32))
    assert np.linalg.norm(xyz[1] - xyz[0]) == pytest.approx(1.47, abs=1e-5)  # Å

    _, mol, reason = records[3]
    assert mol is None
    assert reason == "Explicit valence for atom # 0 N, 5, is greater than permitted"

    assert capfd.readouterr().err == ""


def test_iter_sdf_can_keep_hydrogens(sdf_path):
    _, water, _ = next(iter_sdf(sdf_path, remove_hs=False))
    assert [a.GetSymbol() for a in water.GetAtoms()] == ["O", "H", "H"]
    np.testing.assert_array_equal(
        positions(water),
        np.array([[0.0, 0.0, 0.1173], [0.0, 0.7572, -0.4692], [0.0, -0.7572, -0.4692]], np.float32),
    )


def test_iter_sdf_last_record_without_terminator(tmp_path):
    path = tmp_path / "no_terminator.sdf"
    path.write_text(WATER + METHYLAMINE.replace("$$$$\n", ""))
    assert [(i, reason) for i, _, reason in iter_sdf(path)] == [(0, None), (1, None)]


@pytest.mark.parametrize("gzipped", [False, True])
def test_terminators_with_trailing_blank_tab_or_cr_end_records_as_in_rdkit(tmp_path, gzipped):
    text = (
        WATER.replace("$$$$\n", "$$$$ \n")
        + METHYLAMINE.replace("$$$$\n", "$$$$\t\n")
        + WATER.replace("$$$$\n", "$$$$\r\n")
    ).encode()
    path = tmp_path / ("records.sdf.gz" if gzipped else "records.sdf")
    path.write_bytes(gzip.compress(text) if gzipped else text)
    blocks = list(iter_sdf_blocks(path))
    assert len(blocks) == 3 and b"".join(blocks) == text
    assert [b[-7:] for b in blocks] == [b"\n$$$$ \n", b"\n$$$$\t\n", b"\n$$$$\r\n"]
    read = [(i, Chem.MolToSmiles(mol), reason) for i, mol, reason in iter_sdf(path)]
    assert read == [(0, "O", None), (1, "CN", None), (2, "O", None)]
    rdkit = [Chem.MolToSmiles(m) for m in Chem.ForwardSDMolSupplier(io.BytesIO(text))]
    assert rdkit == ["O", "CN", "O"]


def test_mol_from_sdf_block_reasons_are_rdkits():
    assert Chem.MolToSmiles(mol_from_sdf_block(METHYLAMINE)) == "CN"
    assert mol_from_sdf_block(WATER.encode(), remove_hs=False).GetNumAtoms() == 3
    with pytest.raises(MoleculeParseError) as info:
        mol_from_sdf_block(CORRUPT)
    assert info.value.reason == "SDF parse error: Atom line too short: 'M  END' on line 6"
    with pytest.raises(MoleculeParseError, match="Explicit valence for atom # 0 N, 5"):
        mol_from_sdf_block(PENTAVALENT)
    no_atoms = "none\n\n\n  0  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n"
    with pytest.raises(MoleculeParseError, match=r"^empty record \(no atoms\)$"):
        mol_from_sdf_block(no_atoms)
    with pytest.raises(MoleculeParseError, match="SDF parse error: Counts line too short"):
        mol_from_sdf_block("\n\n\n$$$$\n")


def test_iter_sdf_assigns_stereo_from_3d_coordinates(tmp_path):
    from rdkit.Chem import AllChem

    alanine = Chem.AddHs(Chem.MolFromSmiles("N[C@@H](C)C(=O)O"))
    assert AllChem.EmbedMolecule(alanine, randomSeed=7) == 0
    block = Chem.MolToMolBlock(alanine)
    path = tmp_path / "alanine.sdf"
    path.write_text(block + "$$$$\n")
    ((index, mol, reason),) = list(iter_sdf(path))
    assert (index, reason) == (0, None)
    assert Chem.MolToSmiles(mol) == Chem.MolToSmiles(Chem.MolFromSmiles("N[C@@H](C)C(=O)O"))
    assert positions(mol).shape == (6, 3)


def test_explicit_hydrogens_and_double_bond_stereo_follow_rdkit_defaults():
    assert mol_from_smiles("[H]OC([H])([H])C").GetNumAtoms() == 3
    bond = mol_from_smiles("C/C=C/C").GetBondWithIdx(1)
    assert bond.GetStereo() == Chem.BondStereo.STEREOE


def test_positions_is_none_without_conformer():
    assert positions(Chem.MolFromSmiles("CCO")) is None


def test_older_rdkit_without_capture_still_gives_reasons(monkeypatch, capfd):
    from rdkit import rdBase

    monkeypatch.delattr(rdBase, "CaptureErrorLog")
    with pytest.raises(MoleculeParseError, match="SMILES parse error"):
        mol_from_smiles("C1CC")
    with pytest.raises(MoleculeParseError, match="Explicit valence"):
        mol_from_smiles("N(C)(C)(C)(C)C")
    assert capfd.readouterr().err == ""
