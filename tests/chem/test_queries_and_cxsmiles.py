"""Query structures, and records with a dummy atom, are rejected on every input route; CXSMILES
are read as RDKit reads them, enhanced stereo is not featurized as absolute, and the .smi and
table routes agree."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from rdkit import Chem

from chemgraph.chem import MoleculeParseError, mol_from_smiles, mols_from_smiles
from chemgraph.chem.parse import check_complete_molecule, dummy_atom_reason, mol_from_sdf_block
from chemgraph.chem.reactions import ReactionParseError, parse_reaction_smiles
from chemgraph.data import featurize_table
from chemgraph.featurize import get_preset
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.jobs.transfer import TransferOptions, _table_graphs
from chemgraph.train.ensemble import checkpoint_files

MOLBLOCK = """
  query

  3  2  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    1.5000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    3.0000    0.0000    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  {bond}  0
  2  3  1  0
M  END
$$$$
"""


@pytest.mark.parametrize("bond", [5, 6, 7, 8])
def test_molfile_query_bonds_are_rejected_with_the_reason(bond):
    with pytest.raises(MoleculeParseError, match="query structure, not a molecule: bond 0"):
        mol_from_sdf_block(MOLBLOCK.format(bond=bond))
    assert mol_from_sdf_block(MOLBLOCK.format(bond=1)).GetNumAtoms() == 3


def test_a_tilde_bond_in_smiles_is_rejected_on_every_route(tmp_path):
    reason = "query structure, not a molecule"
    with pytest.raises(MoleculeParseError, match=reason):
        mol_from_smiles("CC~O")
    (result,) = mols_from_smiles(["CC~O"])
    assert isinstance(result, MoleculeParseError) and reason in result.reason
    # train (featurize_table)
    table = pd.DataFrame({"smiles": ["CCO", "CC~O"], "y": [1.0, 2.0]})
    dataset, rejected = featurize_table(table, "smiles", ["y"], get_preset("canonical"),
                                        progress=False)  # fmt: skip
    assert dataset.smiles == ["CCO"] and reason in rejected["reason"].iloc[0]
    # featurize and predict (a library file, .smi and .sdf)
    (tmp_path / "lib.smi").write_text("CCO a\nCC~O b\n")
    (tmp_path / "lib.sdf").write_text(MOLBLOCK.format(bond=1) + MOLBLOCK.format(bond=8))
    for name in ("lib.smi", "lib.sdf"):
        out = tmp_path / f"out-{name}"
        featurize_library(tmp_path / name, out, FeaturizeOptions(fingerprints=("maccs",)),
                          progress=False)  # fmt: skip
        rejected = pd.read_csv(out / "rejected.csv")
        assert rejected["row"].tolist() == [1] and reason in rejected["reason"].iloc[0], name
        counts = json.loads((out / "manifest.json").read_text())["counts"]
        assert counts["rejected_by_reason"] == {"query structure": 1}, name
    # reaction input
    with pytest.raises(ReactionParseError, match=reason):
        parse_reaction_smiles("CC~O.CC>>CCOC", split_reagents=False)


DUMMY = (
    "dummy atom '*' (attachment point) at atom {}; not a complete molecule: replace it with the "
    "atom or group it stands for"
)


@pytest.mark.parametrize(
    "smiles,atom",
    [("*C", 0), ("[*:1]CC", 0), ("[1*]C", 0), ("c1ccccc1*", 6), ("CCO.[*]", 3), ("[#0]CC", 0)],
)
def test_a_dummy_atom_is_not_a_complete_molecule(smiles, atom):
    mol = mol_from_smiles(smiles)  # RDKit sanitises it
    assert dummy_atom_reason(mol) == DUMMY.format(atom)
    with pytest.raises(MoleculeParseError) as raised:
        check_complete_molecule(mol, smiles)
    assert raised.value.reason == DUMMY.format(atom) and raised.value.record == smiles
    ethanol = mol_from_smiles("CCO")
    assert dummy_atom_reason(ethanol) is None
    assert check_complete_molecule(ethanol, "CCO") is ethanol
    assert check_complete_molecule(ethanol) is ethanol  # no text: scanned, none found


def test_a_dummy_atom_is_rejected_on_every_record_route(tmp_path):
    """featurize and predict (.smi, .csv, .sdf), train (a table) and transfer give the same
    reason; reactions, whose parser does not make the check, are left as they were."""
    reason = DUMMY.format(0)
    table = pd.DataFrame({"smiles": ["CCO", "*C"], "y": [1.0, 2.0]})
    dataset, rejected = featurize_table(table, "smiles", ["y"], get_preset("canonical"),
                                        progress=False)  # fmt: skip
    assert dataset.smiles == ["CCO"]
    assert rejected[["row", "input", "reason"]].values.tolist() == [[1, "*C", reason]]
    # transfer's bond graphs of a table
    options = TransferOptions(data="x.csv", low_fidelity_columns=["a"],
                              high_fidelity_columns=["b"], out=str(tmp_path / "t"),
                              training={"model": "esa"})  # fmt: skip
    graphs, reasons = _table_graphs(options, table, ["CCO", "*C"])
    assert graphs[0] is not None and graphs[1] is None
    assert reasons == {1: f"cannot parse '*C': {reason}"}
    # a molfile's R# atom (R and * atoms are query atoms, rejected as query structures)
    molfile = Chem.MolToMolBlock(Chem.MolFromSmiles("*CC")).replace(" R   ", " R#  ")
    (tmp_path / "lib.smi").write_text("CCO a\n*C b\n")
    (tmp_path / "lib.csv").write_text("smiles\nCCO\n*C\n")
    (tmp_path / "lib.sdf").write_text(MOLBLOCK.format(bond=1) + molfile + "$$$$\n")
    for name in ("lib.smi", "lib.csv", "lib.sdf"):
        out = tmp_path / f"out-{name}"
        featurize_library(tmp_path / name, out, FeaturizeOptions(fingerprints=("maccs",)),
                          progress=False)  # fmt: skip
        rejected = pd.read_csv(out / "rejected.csv")
        assert rejected[["row", "reason"]].values.tolist() == [[1, reason]], name
        counts = json.loads((out / "manifest.json").read_text())["counts"]
        assert counts["rejected_by_reason"] == {"dummy atom (not a complete molecule)": 1}, name
    reaction = parse_reaction_smiles("*C(=O)Cl.OCC>>*C(=O)OCC", split_reagents=False)
    assert reaction.reactants == ("*C(=O)Cl", "CCO")


def test_a_smiles_line_keeps_its_cxsmiles_block_and_its_name():
    from chemgraph.chem.parse import split_smiles_line

    assert split_smiles_line("C[C@H](O)CC |&1:1| racemic-butanol\n") == (
        "C[C@H](O)CC |&1:1|", "racemic-butanol"
    )  # fmt: skip
    assert split_smiles_line("CCO ethanol") == ("CCO", "ethanol")
    assert split_smiles_line("CCO") == ("CCO", "")


def test_enhanced_stereo_is_not_featurized_as_absolute():
    racemic = mol_from_smiles("C[C@H](O)CC |&1:1|")
    either = mol_from_smiles("C[C@H](O)CC |o1:1|")
    absolute = mol_from_smiles("C[C@H](O)CC |a:1|")
    plain = mol_from_smiles("CC(O)CC")
    assert Chem.MolToSmiles(racemic) == Chem.MolToSmiles(either) == Chem.MolToSmiles(plain)
    assert Chem.MolToSmiles(absolute) == Chem.MolToSmiles(mol_from_smiles("C[C@H](O)CC"))
    assert racemic.GetAtomWithIdx(1).GetChiralTag() == Chem.ChiralType.CHI_UNSPECIFIED


def test_the_smi_and_table_routes_agree_on_cxsmiles(tmp_path):
    line = "C[C@H](O)CC |&1:1|"
    (tmp_path / "lib.smi").write_text(f"{line} racemic-butanol\n")
    pd.DataFrame({"smiles": [line], "id": ["racemic-butanol"]}).to_csv(
        tmp_path / "lib.csv", index=False
    )
    found = {}
    for name in ("lib.smi", "lib.csv"):
        out = tmp_path / f"out-{name}"
        options = FeaturizeOptions(
            fingerprints=("maccs",), id_column="id" if "csv" in name else None
        )
        featurize_library(tmp_path / name, out, options, progress=False)
        features = pd.concat(pd.read_parquet(p) for p in sorted((out / "features").glob("*")))
        found[name] = features[["id", "smiles"]].values.tolist()
    assert found["lib.smi"] == found["lib.csv"] == [["racemic-butanol", "CCC(C)O"]]


def test_an_ensemble_of_one_model_twice_is_refused(tmp_path):
    checkpoint = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(checkpoint, run / "best.ckpt")
    with pytest.raises(ValueError, match="same model"):
        checkpoint_files([checkpoint, checkpoint])
    with pytest.raises(ValueError, match="same model"):
        checkpoint_files([run, run / "best.ckpt"])
    with pytest.raises(ValueError, match="identical bytes"):
        checkpoint_files([checkpoint, run])
    assert checkpoint_files([run]) == [run / "best.ckpt"]


def test_a_reaction_with_enhanced_stereo_groups_is_rejected_not_read_as_absolute():
    with pytest.raises(ReactionParseError, match="enhanced stereo groups"):
        parse_reaction_smiles("C[C@H](O)CC>>C[C@H](O)CC=O |&1:1,o2:7|", split_reagents=False)
    kept = parse_reaction_smiles("C[C@H](O)CC>>C[C@H](O)C |a:1|", split_reagents=False)
    assert kept.reactants == ("CC[C@H](C)O",)  # an absolute group is what the tags say
