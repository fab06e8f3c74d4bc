"""``chemgraph predict`` with 3D checkpoints (esa-3d radius graphs from ``chemgraph transfer
--geometry``): structure files in, the transfer's own predictions out, invariance to rotation and
translation, bad records reported with their reason, the ensemble's spread over seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rdkit import Chem

from chemgraph.chem import embed_conformers, mol_from_smiles
from chemgraph.cli.main import main
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.jobs.predict import PredictOptions, predict_table
from chemgraph.jobs.transfer import TransferOptions, transfer_table
from chemgraph.train.checkpoint import load_checkpoint

LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"
ESA_2D = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
# the fixture's elements: H, C, N, O, F, and the S and Cl of three of its molecules
FEATURIZER = {"cutoff": 3.0, "num_basis": 8, "atomic_numbers": [1, 6, 7, 8, 9, 16, 17]}


def _structure(smiles: str, name: str) -> Chem.Mol:
    mol = embed_conformers(mol_from_smiles(smiles), seed=0).mol
    mol.SetProp("_Name", name)
    return mol


def _write_sdf(path: Path, mols: list[Chem.Mol]) -> Path:
    with Chem.SDWriter(str(path)) as writer:
        for mol in mols:
            writer.write(mol)
    return path


def _xyz_frame(mol: Chem.Mol, positions: np.ndarray, comment: str, forces: bool = False) -> str:
    lines = [str(mol.GetNumAtoms()), comment]
    for atom, (x, y, z) in zip(mol.GetAtoms(), positions):
        extra = " 0.0 0.0 0.0" if forces else ""
        lines.append(f"{atom.GetSymbol()} {x:.10f} {y:.10f} {z:.10f}{extra}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny esa-3d transfer of the fixture table on RDKit conformers of its molecules (two
    seeds of the high-fidelity-only strategy): its folder and the structure file."""
    folder = tmp_path_factory.mktemp("transfer3d")
    labels = pd.read_csv(LABELS)
    sdf = _write_sdf(
        folder / "structures.sdf",
        [_structure(s, i) for s, i in zip(labels["smiles"], labels["id"])],
    )
    transfer_table(
        TransferOptions(
            data=LABELS, geometry=sdf, low_fidelity_columns="cheap_logp",
            high_fidelity_columns="fine_logp", out=folder / "run", id_column="id",
            split_fractions=(0.5, 0.25, 0.25),
            training={
                "seeds": 2, "finetune_max_epochs": 3, "batch_size": 16, "progress": False,
                "workers": 1, "model": "esa-3d", "featurizer": FEATURIZER,
                "strategies": ["high_fidelity_only"],
                "model_options": {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP",
                                  "num_seeds": 2},
            },
        )
    )  # fmt: skip
    return folder / "run", sdf


def _checkpoint(out: Path, seed: int) -> Path:
    return out / "checkpoints" / f"high_fidelity_only_seed{seed}_fine_logp" / "best.ckpt"


def _predict(checkpoints, source, output, **options) -> tuple:
    summary = predict_table(checkpoints, source, output, progress=False, **options)
    return summary, pd.read_csv(output, keep_default_na=False, na_values=[""])


def test_predict_gives_the_transfers_own_predictions_and_the_spread_over_seeds(run, tmp_path):
    out, sdf = run
    module = load_checkpoint(_checkpoint(out, 0))
    assert module.hparams.model == "esa-3d" and module.hparams.featurizer["cutoff"] == 3.0
    labels = pd.read_csv(LABELS)
    single = []
    for seed in (0, 1):
        summary, table = _predict(_checkpoint(out, seed), sdf, tmp_path / f"seed{seed}.csv")
        assert (summary.records, summary.predicted, summary.failed) == (40, 40, 0)
        assert table["id"].tolist() == labels["id"].tolist()  # the SDF titles, in file order
        # the test molecules' predictions of the transfer's own evaluation, to float32
        test = pd.read_csv(out / "predictions.csv")
        test = test[test["seed"] == seed].set_index("id")
        scored = table.set_index("id").loc[test.index]
        np.testing.assert_allclose(scored["fine_logp_pred"], test["fine_logp_pred"], atol=1e-5)
        single.append(table["fine_logp_pred"].to_numpy())
    # the SMILES of each structure's molecule: its bonds in the SDF, without the hydrogens
    expected = [Chem.MolToSmiles(mol_from_smiles(s)) for s in labels["smiles"]]
    assert table["smiles"].tolist() == expected
    # the two seeds as an ensemble: their mean and sample standard deviation (ddof=1: for two
    # members |p0 - p1| / sqrt(2)), those of predictions_unlabelled.csv
    summary, both = _predict([_checkpoint(out, 0), _checkpoint(out, 1)], sdf, tmp_path / "ens.csv")
    np.testing.assert_allclose(both["fine_logp_pred"], np.mean(single, axis=0), atol=1e-6)
    np.testing.assert_allclose(
        both["fine_logp_std"], np.abs(single[0] - single[1]) / np.sqrt(2), atol=1e-6
    )
    unlabelled = pd.read_csv(out / "predictions_unlabelled.csv").set_index("id")
    assert len(unlabelled) == 16
    scored = both.set_index("id").loc[unlabelled.index]
    np.testing.assert_allclose(scored["fine_logp_pred"], unlabelled["fine_logp_pred"], atol=1e-5)
    np.testing.assert_allclose(scored["fine_logp_std"], unlabelled["fine_logp_std"], atol=1e-5)
    # the applicability domain: the checkpoints hold their 12 training molecules' fingerprints
    # (from the table's SMILES), compared with those of each structure's molecule
    assert both["max_similarity_to_train"].notna().all() and both["in_domain"].notna().all()
    assert (both["max_similarity_to_train"] == 1).sum() >= 12
    assert summary.out_of_domain == int((~both["in_domain"].astype(bool)).sum())


def test_a_rotated_and_translated_structure_gets_the_same_prediction(run, tmp_path):
    out, sdf = run
    checkpoint = _checkpoint(out, 0)
    names = ["mol02", "mol08", "mol06", "mol25"]  # ethanol, benzene, acetic acid, benzoic acid
    labels = pd.read_csv(LABELS).set_index("id")
    mols = [_structure(labels.loc[name, "smiles"], name) for name in names]
    _, reference = _predict(checkpoint, _write_sdf(tmp_path / "some.sdf", mols), tmp_path / "a.csv")
    rotation, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))
    rotation *= np.sign(np.linalg.det(rotation))  # a proper rotation (det +1)
    frames = []
    for mol, name in zip(mols, names):
        moved = mol.GetConformer().GetPositions() @ rotation.T + np.array([4.0, -7.5, 12.25])
        frames.append(_xyz_frame(mol, moved, f'name={name} charge=0 note="moved"', forces=True))
    extxyz = tmp_path / "moved.extxyz"
    extxyz.write_text("".join(frames))
    options = PredictOptions(id_column="name")
    _, moved = _predict(checkpoint, extxyz, tmp_path / "b.csv", options=options)
    assert moved["id"].tolist() == names
    np.testing.assert_allclose(moved["fine_logp_pred"], reference["fine_logp_pred"], atol=1e-5)
    # an XYZ frame has no bonds: RDKit determines them from the geometry, the same molecules
    assert moved["smiles"].tolist() == reference["smiles"].tolist()
    np.testing.assert_allclose(
        moved["max_similarity_to_train"], reference["max_similarity_to_train"], atol=1e-6
    )


def test_bad_records_get_an_error_row_with_their_reason(run, tmp_path):
    out, _ = run
    checkpoint = _checkpoint(out, 0)
    flat = Chem.AddHs(mol_from_smiles("CCO"))
    Chem.rdDepictor.Compute2DCoords(flat)  # a 2D record: every z is 0
    flat.SetProp("_Name", "flat")
    heavy = Chem.RemoveHs(_structure("CCCO", "heavy"))  # 3D, hydrogens left out
    good = [_structure("CCO", "ethanol"), _structure("c1ccccc1", "benzene")]
    sdf = _write_sdf(tmp_path / "bad.sdf", [good[0], flat, heavy, _structure("CCBr", "bromo")])
    broken = "broken\n  RDKit          3D\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\n$$$$\n"
    sdf.write_text(sdf.read_text() + broken + Chem.MolToMolBlock(good[1]) + "\n$$$$\n")
    summary, table = _predict(checkpoint, sdf, tmp_path / "bad.csv")
    assert table["id"].tolist() == ["ethanol", "flat", "heavy", "bromo", "broken", "benzene"]
    assert (summary.records, summary.predicted, summary.failed) == (6, 2, 4)
    errors = table["error"].tolist()
    assert pd.isna(errors[0]) and pd.isna(errors[5])
    assert errors[1].startswith("no 3D coordinates: a 2D SDF record")
    assert errors[2].startswith("3D SDF record without all its hydrogens (8 implicit)")
    assert errors[3].startswith(
        "element Br has no column of the model's element one-hot (H, C, N, O, F, S, Cl:"
    )
    assert errors[4].startswith("SDF parse error")
    failed = table[table["error"].notna()]
    assert failed["fine_logp_pred"].isna().all() and (failed["smiles"].fillna("") == "").all()
    # XYZ: an unknown element symbol, a count line that is not a number (the reader goes on
    # at the next frame), a frame whose bonds RDKit cannot determine (a methyl radical: it is
    # predicted, without SMILES or domain), a frame the file ends inside
    ethanol = good[0]
    frame = _xyz_frame(ethanol, ethanol.GetConformer().GetPositions(), "ethanol")
    radical = "4\nmethyl\nC 0 0 0\nH 1.08 0 0\nH -0.54 0.935 0\nH -0.54 -0.935 0\n"
    xyz = tmp_path / "bad.xyz"
    xyz.write_text(
        "1\nunknown\nXx 0 0 0\n" + "three\nnot a count\n" + frame + radical + "5\ncut\nC 0 0 0\n"
    )
    summary, table = _predict(checkpoint, xyz, tmp_path / "bad_xyz.csv")
    assert table["row"].tolist() == [0, 1, 2, 3, 4]
    assert table["error"][0] == "XYZ parse error: unknown element symbol 'Xx'"
    assert table["error"][1] == (
        "XYZ parse error: line 4: 'three' is not an atom count (a frame starts with its "
        "number of atoms)"
    )
    assert table["error"][4] == (
        "XYZ parse error: the file ends inside frame 5, at 1 of its 5 atom lines"
    )
    assert table["error"][2:4].isna().all() and table["fine_logp_pred"][2:4].notna().all()
    assert table["smiles"][2] == "CCO" and pd.isna(table["smiles"][3])
    assert np.isnan(table["max_similarity_to_train"][3]) and pd.isna(table["in_domain"][3])
    assert summary.without_smiles == 1
    # the same frame predicted from the XYZ file as from the SDF
    _, sdf_table = _predict(checkpoint, sdf, tmp_path / "again.csv")
    assert table["fine_logp_pred"][2] == pytest.approx(sdf_table["fine_logp_pred"][0], abs=1e-5)


def test_smiles_for_a_3d_model_and_xyz_for_a_2d_model_are_refused(run, tmp_path, capsys):
    out, _ = run
    code = main(
        ["predict", "--checkpoint", str(_checkpoint(out, 0)), "--input", str(LABELS),
         "--output", str(tmp_path / "p.csv")]
    )  # fmt: skip
    message = capsys.readouterr().err
    assert code == 2 and "holds SMILES, not 3D structures" in message
    assert "conformers embedded from SMILES are not those structures" in message
    assert not (tmp_path / "p.csv.partial").exists()  # refused before any work
    xyz = tmp_path / "water.xyz"
    xyz.write_text("3\nwater\nO 0 0 0.1\nH 0 0.76 -0.47\nH 0 -0.76 -0.47\n")
    with pytest.raises(ValueError, match="is an XYZ file: 3D structures without bonds"):
        predict_table(ESA_2D, xyz, tmp_path / "q.csv", progress=False)
    with pytest.raises(ValueError, match="is an XYZ file"):
        featurize_library(xyz, tmp_path / "featurized", FeaturizeOptions(), progress=False)


def test_a_featurize_folder_of_other_graphs_is_refused_for_a_3d_model(run, tmp_path):
    out, sdf = run
    folder = tmp_path / "bond_graphs"
    featurize_library(sdf, folder, FeaturizeOptions(), progress=False)
    with pytest.raises(ValueError, match="holds no radius graphs, but .* is a 3D model"):
        predict_table(_checkpoint(out, 0), folder, tmp_path / "p.csv", progress=False)


def test_a_periodic_frame_is_refused_naming_its_cell_never_made_a_molecule(run, tmp_path):
    """An extended-XYZ frame with a cell and periodic boundaries (a crystal, a slab) is not a
    molecule in vacuum: its record gets the reason (in predict, and in transfer --geometry),
    where it was once made into a molecule's radius graph with the cell dropped. The same
    frame with pbc="F F F" is a molecule and predicted."""
    from chemgraph.chem import MoleculeParseError
    from chemgraph.data.readers import Record
    from chemgraph.library.records import record_structure

    out, _ = run
    ethanol = _structure("CCO", "ethanol")
    positions = ethanol.GetConformer().GetPositions()
    lattice = 'Lattice="10.0 0.0 0.0 0.0 10.0 0.0 0.0 0.0 12.5"'
    frames = [
        _xyz_frame(ethanol, positions, f'{lattice} pbc="T T T" name=bulk'),
        _xyz_frame(ethanol, positions, f'{lattice} pbc="T T F" name=slab'),
        _xyz_frame(ethanol, positions, f'{lattice} pbc="F F F" name=vacuum'),
    ]
    extxyz = tmp_path / "periodic.extxyz"
    extxyz.write_text("".join(frames))
    summary, table = _predict(_checkpoint(out, 0), extxyz, tmp_path / "periodic.csv")
    assert (summary.predicted, summary.failed) == (1, 2)
    assert table["error"][0] == (
        'a periodic structure (pbc="T T T", cell lengths 10, 10, 12.5 Å): chemgraph\'s 3D '
        "models read molecules in vacuum, and a molecule's radius graph would drop the cell; "
        'give the molecule without Lattice and pbc (or pbc="F F F")'
    )
    assert table["error"][1].startswith('a periodic structure (pbc="T T F"')
    assert pd.isna(table["error"][2]) and table["smiles"][2] == "CCO"
    with pytest.raises(MoleculeParseError, match="periodic structure"):
        record_structure(Record(0, "bulk", frames[0], "xyz"))


def test_a_3d_checkpoint_without_fingerprints_is_not_blamed_on_an_old_chemgraph(
    run, tmp_path, caplog
):
    """A transfer --geometry run without SMILES stores no training fingerprints (there are no
    molecules to take them of): the warning says so, not "written before chemgraph stored
    them" (issue 45)."""
    import logging

    import torch

    out, sdf = run
    stored = torch.load(_checkpoint(out, 0), weights_only=True)
    stored["hyper_parameters"]["train_fingerprints"] = None  # as such a run writes it
    checkpoint = tmp_path / "structures_only.ckpt"
    torch.save(stored, checkpoint)
    with caplog.at_level(logging.WARNING, logger="chemgraph"):
        _, table = _predict(checkpoint, sdf, tmp_path / "out.csv")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"no training fingerprints in {checkpoint} (trained on 3D structures without SMILES, "
        "which give no fingerprints): max_similarity_to_train and in_domain are left empty"
    ]
    assert table["in_domain"].isna().all() and table["fine_logp_pred"].notna().all()
