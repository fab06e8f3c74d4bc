"""``chemgraph transfer`` on a user's own table: bond graphs of SMILES (a 2D model) and radius
graphs of an SDF's 3D structures (esa-3d), the kept checkpoints scored by ``chemgraph
predict``, the spread over one seed undefined."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from rdkit import Chem

from chemgraph.chem import embed_conformers, mol_from_smiles
from chemgraph.cli.main import main
from chemgraph.data.applicability import TrainingFingerprints
from chemgraph.errors import ConfigError
from chemgraph.jobs.predict import predict_table
from chemgraph.jobs.transfer import TransferOptions, read_structures, transfer_table
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.transfer.report import format_table

LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"
TINY = {
    "seeds": 2, "pretrain_epochs": 2, "finetune_max_epochs": 3, "batch_size": 16,
    "early_stopping_patience": 3, "progress": False, "workers": 1,
}  # fmt: skip
TINY_ESA = {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2}


def _options(tmp_path: Path, **training) -> TransferOptions:
    return TransferOptions(
        data=LABELS, low_fidelity_columns="cheap_logp,cheap_mr",
        high_fidelity_columns="fine_logp,fine_mr", out=tmp_path / "run", id_column="id",
        split_fractions=(0.5, 0.25, 0.25),
        training={**TINY, "model": "esa", "model_options": TINY_ESA, **training},
    )  # fmt: skip


def test_transfer_on_a_smiles_table_keeps_every_fine_tuned_model_for_predict(tmp_path):
    table = transfer_table(_options(tmp_path))
    out = tmp_path / "run"
    labels = pd.read_csv(LABELS)
    # every strategy and target has a row, with the baselines of its setting
    models = table[table["method"] == "ESA"]
    assert set(models["strategy"]) == {"high fidelity", "Ind.", "Trans."}
    assert set(table["target"]) == {"fine_logp", "fine_mr"}
    assert (table["method"] == "baseline").any()
    assert models["seeds"].eq(2).all() and np.isfinite(models["rmse_std"]).all()
    # 24 molecules with high-fidelity labels: 12 / 6 / 6; the test molecules' predictions
    test = pd.read_csv(out / "predictions.csv")
    assert len(test[(test.strategy == "transductive") & (test.seed == 0)]) == 6
    # the 16 without: mean and spread over the 2 seeds, per strategy
    unlabelled = pd.read_csv(out / "predictions_unlabelled.csv")
    assert sorted(set(unlabelled["id"])) == sorted(labels["id"][labels["fine_logp"].isna()])
    assert len(unlabelled) == 16 * 3
    assert (unlabelled["fine_logp_std"] > 0).all()
    # every fine-tuned model is kept: predict scores new molecules with it, and the two seeds'
    # checkpoints give the mean of predictions_unlabelled.csv
    folders = sorted(p.parent.name for p in (out / "checkpoints").glob("*/best.ckpt"))
    assert len(folders) == 3 * 2 * 2  # strategies x seeds x targets (one chain per target)
    new = tmp_path / "new.csv"
    rows = unlabelled[unlabelled.strategy == "transductive"].reset_index(drop=True)
    # the table's rows of those molecules: a transductive Δ-learning model reads their cheap
    # labels (the default protocol's Δ-learning)
    pd.read_csv(LABELS).set_index("id").loc[rows["id"]].to_csv(new)
    predicted = [
        pd.read_csv(
            predict_table(
                out / "checkpoints" / f"transductive_seed{seed}_fine_logp" / "best.ckpt",
                new, tmp_path / f"new_{seed}.csv", progress=False,
            ).output
        )["fine_logp_pred"].to_numpy()
        for seed in (0, 1)
    ]  # fmt: skip
    np.testing.assert_allclose(np.mean(predicted, axis=0), rows["fine_logp_pred"], atol=1e-5)
    assert (out / "rejected.csv").read_text().startswith("row,id,input,reason")
    assert "training" in (out / "transfer.yaml").read_text()


def test_one_seed_gives_an_undefined_spread_never_zero(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = _options(tmp_path, seeds=1, strategies=["transductive"])
    options.out = "run"  # relative: transfer.yaml records it absolute, to repeat from anywhere
    table = transfer_table(options)
    models = table[table["method"] == "ESA"]
    assert models["rmse_std"].isna().all()
    assert models["test RMSE"].str.endswith("± undefined").all()
    recorded = yaml.safe_load((tmp_path / "run" / "transfer.yaml").read_text())
    assert recorded["out"] == str((tmp_path / "run").resolve())
    assert recorded["data"] == str(LABELS.resolve())
    unlabelled = pd.read_csv(tmp_path / "run" / "predictions_unlabelled.csv")
    assert unlabelled["fine_logp_std"].isna().all() and unlabelled["fine_mr_std"].isna().all()
    runs = pd.read_csv(tmp_path / "run" / "runs.csv")
    assert set(runs["model"]) == {"esa"} and runs["targets"].tolist() == ["fine_logp", "fine_mr"]
    # the test molecules carry the user's ids and SMILES, the model's and the baselines' rows
    test = pd.read_csv(tmp_path / "run" / "predictions.csv")
    labels = pd.read_csv(LABELS).set_index("id")
    assert test["id"].str.fullmatch(r"mol\d\d").all() and test["id"].nunique() == 6
    assert test["smiles"].tolist() == labels.loc[test["id"], "smiles"].tolist()
    np.testing.assert_allclose(test["fine_logp"], labels.loc[test["id"], "fine_logp"], atol=1e-5)
    # the checkpoint holds its 12 training molecules' fingerprints: predict gives the domain
    checkpoint = tmp_path / "run" / "checkpoints" / "transductive_seed0_fine_logp" / "best.ckpt"
    stored = load_checkpoint(checkpoint).hparams["train_fingerprints"]
    assert len(TrainingFingerprints.from_dict(stored)) == 12
    new = tmp_path / "new.csv"
    labels.reset_index()[["smiles", "cheap_logp"]].to_csv(new, index=False)
    scored = pd.read_csv(
        predict_table(checkpoint, new, tmp_path / "new_out.csv", progress=False).output
    )
    similarity = scored["max_similarity_to_train"]
    assert similarity.notna().all() and (similarity == 1).sum() >= 12
    assert scored["in_domain"].notna().all()


def test_rejected_rows_are_reported_and_the_rest_is_used(tmp_path):
    table = pd.read_csv(LABELS)
    table.loc[30, "smiles"] = "C1CC"  # unclosed ring
    table.loc[31, "cheap_logp"] = np.nan
    table.loc[31, "cheap_mr"] = np.nan  # no label at all
    # labels that are numbers to pandas but not finite ones (1e39 overflows float32)
    table = table.astype({"fine_logp": object, "fine_mr": object})
    table.loc[2, "fine_logp"], table.loc[3, "fine_logp"] = "inf", "-inf"
    table.loc[4, "fine_mr"] = "1e39"
    table.loc[8, "fine_logp"], table.loc[9, "fine_mr"] = "NA", "n/a"  # missing, as in train
    table.loc[10, "cheap_mr"] = np.nan  # high-fidelity labels, one low-fidelity one missing
    table.loc[6, "smiles"], table.loc[7, "smiles"] = "NCC", "C(N)C"  # rows 5-7: one molecule
    bad = tmp_path / "bad.csv"
    table.to_csv(bad, index=False)
    options = _options(tmp_path, seeds=1, strategies=["high_fidelity_only"])
    options.data = bad
    # an earlier run in --out: --overwrite removes what transfer wrote, and nothing else
    out = tmp_path / "run"
    stale = out / "checkpoints" / "inductive_seed4_fine_logp" / "best.ckpt"
    stale.parent.mkdir(parents=True)
    stale.write_text("an earlier run's model")
    (out / "curves").mkdir()
    (out / "curves" / "inductive_seed4_fine_logp_finetune.png").write_text("old curve")
    (out / "predictions_unlabelled.csv").write_text("strategy,id\ninductive,mol39\n")
    (out / "notes.txt").write_text("the user's own file")
    options.overwrite = True
    transfer_table(options)
    assert not stale.parent.exists() and (out / "notes.txt").read_text() == "the user's own file"
    assert sorted(p.name for p in (out / "curves").iterdir()) == [
        "high_fidelity_only_seed0_fine_logp_finetune.png",
        "high_fidelity_only_seed0_fine_mr_finetune.png",
    ]
    unlabelled = pd.read_csv(out / "predictions_unlabelled.csv")
    assert set(unlabelled["strategy"]) == {"high_fidelity_only"}
    rejected = pd.read_csv(tmp_path / "run" / "rejected.csv")
    assert rejected["row"].tolist() == [2, 3, 4, 10, 30, 31]
    assert rejected["id"].tolist() == ["mol02", "mol03", "mol04", "mol10", "mol30", "mol31"]
    limit = "is not a finite float32 number (|value| must be at most 3.403e+38)"
    assert rejected["reason"][:3].tolist() == [
        f"column 'fine_logp': inf {limit}",
        f"column 'fine_logp': -inf {limit}",
        f"column 'fine_mr': 1e+39 {limit}",
    ]
    assert rejected["reason"][3].startswith(
        "high fidelity label without its low fidelity label (cheap_mr): every strategy"
    )
    assert rejected["input"][4] == "C1CC" and "ring" in rejected["reason"][4].lower()
    assert rejected["reason"][5] == "no low- or high-fidelity label"
    # the rows of one molecule are counted, reported and kept in one split
    duplicates = json.loads((tmp_path / "run" / "duplicates.json").read_text())
    assert (duplicates["molecules"], duplicates["rows"]) == (1, 3)
    assert duplicates["examples"] == [[5, 6, 7]] and duplicates["differing_labels"] == 1
    test = set(pd.read_csv(tmp_path / "run" / "predictions.csv")["id"])
    assert len(test & {"mol05", "mol06", "mol07"}) in (0, 3)


def test_a_3d_model_reads_the_geometries_of_an_sdf(tmp_path):
    labels = pd.read_csv(LABELS)
    sdf = tmp_path / "structures.sdf"
    with Chem.SDWriter(str(sdf)) as writer:
        for smiles in labels["smiles"]:
            writer.write(embed_conformers(mol_from_smiles(smiles), seed=0).mol)
    structures = read_structures(sdf)
    assert len(structures) == 40
    numbers, positions = structures[2]  # ethanol with its hydrogens
    assert sorted(numbers.tolist()) == [1] * 6 + [6, 6, 8] and positions.shape == (9, 3)
    options = TransferOptions(
        data=LABELS, geometry=sdf, low_fidelity_columns="cheap_logp",
        high_fidelity_columns="fine_logp", out=tmp_path / "run", split_fractions=(0.5, 0.25, 0.25),
        training={**TINY, "model": "esa-3d", "model_options": TINY_ESA,
                  "featurizer": {"cutoff": 3.0, "num_basis": 8}, "strategies": ["inductive"]},
    )  # fmt: skip
    table = transfer_table(options)
    assert table[table["method"] == "ESA"]["seeds"].eq(2).all()
    module = load_checkpoint(
        tmp_path / "run" / "checkpoints" / "inductive_seed0_fine_logp" / "best.ckpt"
    )
    assert module.hparams.model == "esa-3d" and module.hparams.featurizer["cutoff"] == 3.0
    # no atomic_numbers given: the element columns are the structures' own (F, S, Cl too)
    assert module.hparams.featurizer["atomic_numbers"] == [1, 6, 7, 8, 9, 16, 17]
    assert yaml.safe_load((tmp_path / "run" / "transfer.yaml").read_text())["training"][
        "featurizer"
    ]["atomic_numbers"] == [1, 6, 7, 8, 9, 16, 17]
    unlabelled = pd.read_csv(tmp_path / "run" / "predictions_unlabelled.csv")
    assert len(unlabelled) == 16 and np.isfinite(unlabelled["fine_logp_pred"]).all()


def test_geometry_rows_are_checked_against_their_smiles_before_training(tmp_path):
    labels = pd.read_csv(LABELS)
    mols = [embed_conformers(mol_from_smiles(s), seed=0).mol for s in labels["smiles"]]
    mols[31], mols[32] = mols[32], mols[31]  # out of row order: C4H10 for CCCCO and back
    sdf = tmp_path / "structures.sdf"
    with Chem.SDWriter(str(sdf)) as writer:
        for mol in mols:
            writer.write(mol)
    labels.loc[30, "smiles"] = "C1CC"  # unclosed ring: the fingerprint baselines would fail
    labels.loc[33, "smiles"] = None  # no SMILES: its structure is taken as it is
    table = tmp_path / "labels.csv"
    labels.to_csv(table, index=False)
    options = TransferOptions(
        data=table, geometry=sdf, low_fidelity_columns="cheap_logp",
        high_fidelity_columns="fine_logp", out=tmp_path / "run", id_column="id",
        split_fractions=(0.5, 0.25, 0.25),
        training={**TINY, "seeds": 1, "model": "esa-3d", "model_options": TINY_ESA,
                  "featurizer": {"cutoff": 3.0, "num_basis": 8},
                  "strategies": ["high_fidelity_only"]},
    )  # fmt: skip
    transfer_table(options)
    rejected = pd.read_csv(tmp_path / "run" / "rejected.csv")
    assert rejected["id"].tolist() == ["mol30", "mol31", "mol32"]
    assert "ring" in rejected["reason"][0].lower()
    assert rejected["reason"][1] == (
        "structure 32 of structures.sdf is C4H10, its SMILES C4H10O (hydrogens included): "
        "is the file in row order?"
    )
    assert rejected["reason"][2].startswith("structure 33 of structures.sdf is C4H10O, its")
    unlabelled = pd.read_csv(tmp_path / "run" / "predictions_unlabelled.csv")
    assert "mol33" in set(unlabelled["id"]) and len(unlabelled) == 16 - 3


def test_options_are_checked_before_any_work(tmp_path):
    with pytest.raises(ConfigError, match="1 low-fidelity columns but 2 high-fidelity"):
        TransferOptions(LABELS, "cheap_logp", "fine_logp,fine_mr", tmp_path)
    with pytest.raises(ConfigError, match="reads 3D structures: give geometry"):
        TransferOptions(LABELS, "cheap_logp", "fine_logp", tmp_path, training={"model": "esa-3d"})
    options = TransferOptions(  # its checkpoints hold the correction (test_transfer_delta.py)
        LABELS, "cheap_logp", "fine_logp", tmp_path,
        training={"model": "gin", "delta_learning": True},
    )  # fmt: skip
    assert options.training.delta_learning


def test_cli_refuses_a_non_empty_out_folder(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("results")
    status = main([
        "transfer", "--data", str(LABELS), "--low-fidelity-columns", "cheap_logp",
        "--high-fidelity-columns", "fine_logp", "--model", "gin", "--out", str(tmp_path),
    ])  # fmt: skip
    assert status == 2
    assert "--overwrite" in capsys.readouterr().err


def _refused(out: Path, capsys, *arguments: str) -> str:
    """The error line of a ``chemgraph transfer`` run that must be refused."""
    status = main([
        "transfer", "--data", str(LABELS), "--low-fidelity-columns", "cheap_logp",
        "--high-fidelity-columns", "fine_logp", "--model", "gin", *arguments, "--out", str(out),
    ])  # fmt: skip
    assert status == 2
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--no-delta-learning", "--stack-kernel-ridge"],
         "--stack-kernel-ridge blends two Δ-learning models: it needs --delta-learning"),
        (["--delta-learning", "--stack-kernel-ridge", "--strategies", "high_fidelity_only"],
         "--delta-learning and --stack-kernel-ridge apply to the transfer strategies (inductive, "
         "transductive) only, and --strategies has none (high_fidelity_only): add one, or leave "
         "out --delta-learning and --stack-kernel-ridge"),
        (["--stack-kernel-ridge", "--strategies", "high_fidelity_only"],
         "--stack-kernel-ridge applies to the transfer strategies (inductive, transductive) "
         "only, and --strategies has none (high_fidelity_only): add one, or leave out "
         "--stack-kernel-ridge"),
        (["--seeds", "0"], "--seeds must be at least 1, got 0"),
        (["--split-fractions", "0.8,x,0.1"],
         "--split-fractions takes train,val,test fractions (e.g. 0.8,0.1,0.1), got '0.8,x,0.1'"),
        (["--split-fractions", "0.8,0.3,0.1"],
         "--split-fractions must be 3 numbers > 0 summing to 1, got [0.8, 0.3, 0.1]"),
        (["--geometry", "structures.sdf"],
         "model 'gin' reads bond graphs of the SMILES; with --geometry choose a radius-graph "
         "--model (esa-3d)"),
        (["--strategies", ""],
         "--strategies names no strategy: give a comma-separated subset of "
         "high_fidelity_only,inductive,transductive,label_augmentation, or leave it out to run "
         "the protocol's"),
        (["--strategies", " , "],
         "--strategies names no strategy: give a comma-separated subset of "
         "high_fidelity_only,inductive,transductive,label_augmentation, or leave it out to run "
         "the protocol's"),
        (["--low-fidelity-columns", "smiles"],
         "--low-fidelity-columns smiles: no numeric value in column 'smiles'"),
        (["--high-fidelity-columns", "id"], "--high-fidelity-columns id: no numeric value in "
         "column 'id'"),
        (["--model", "esa-3d"],
         "model 'esa-3d' reads 3D structures: give --geometry (SDF, XYZ or extended XYZ, one "
         "structure per row), or choose a 2D model for a SMILES table (--model esa, nsa, "
         "graphormer, grat, gmoe-gcn, gmoe-gin, gcn, gin)"),
        (["--high-fidelity-columns", "gw_lumo", "--smiles-column", "smi", "--id-column", "iid"],
         f"{LABELS}: no column ['gw_lumo'] (--high-fidelity-columns), ['smi'] "
         "(--smiles-column), ['iid'] (--id-column); it has ['id', 'smiles', 'cheap_logp', "
         "'cheap_mr', 'fine_logp', 'fine_mr']"),
    ],
)  # fmt: skip
def test_cli_refusals_name_the_flags_and_leave_no_out_folder(tmp_path, capsys, arguments, message):
    out = tmp_path / "run"
    assert _refused(out, capsys, *arguments) == f"chemgraph transfer: error: {message}"
    assert not out.exists()


def test_cli_refusals_name_the_config_keys_the_user_wrote(tmp_path, capsys):
    """A setting of the --config file is named by its key, a flag by the flag."""
    config = tmp_path / "settings.yaml"
    training = {"delta_learning": True, "strategies": ["high_fidelity_only"]}
    config.write_text(yaml.safe_dump({"training": training}))
    out = tmp_path / "run"
    assert _refused(out, capsys, "--config", str(config)) == (
        "chemgraph transfer: error: delta_learning applies to the transfer strategies "
        "(inductive, transductive) only, and strategies has none (high_fidelity_only): add "
        "one, or set delta_learning: false"
    )
    assert _refused(out, capsys, "--config", str(config), "--stack-kernel-ridge") == (
        "chemgraph transfer: error: delta_learning and --stack-kernel-ridge apply to the "
        "transfer strategies (inductive, transductive) only, and strategies has none "
        "(high_fidelity_only): add one, or leave out --stack-kernel-ridge and set "
        "delta_learning: false"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"pretrain_epochs": 1}, "unknown keys ['pretrain_epochs']; valid keys: {valid}; "
         "pretrain_epochs belongs under training:"),
        ({"foo": 1}, "unknown keys ['foo']; valid keys: {valid}"),
        ({"seeds": 1, "workers": 1, "foo": 1}, "unknown keys ['foo', 'seeds', 'workers']; "
         "valid keys: {valid}; seeds, workers belong under training:"),
    ],
)  # fmt: skip
def test_cli_refuses_unknown_config_keys_in_one_line(tmp_path, capsys, settings, message):
    """Unknown top-level keys of --config: one line naming them, the valid ones and where a
    training setting belongs (no traceback), before anything is written."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(settings))
    out = tmp_path / "run"
    valid = [
        "data", "geometry", "high_fidelity_columns", "high_name", "id_column",
        "low_fidelity_columns", "low_name", "out", "smiles_column", "split_fractions",
        "split_seed", "training",
    ]  # fmt: skip
    assert _refused(out, capsys, "--config", str(config)) == (
        f"chemgraph transfer: error: {config}: " + message.format(valid=valid)
    )
    assert not out.exists()


def test_stacking_without_smiles_is_refused_before_featurizing(tmp_path, capsys):
    """A table without SMILES (3D structures only): the kernel ridge has no fingerprints.
    Refused before the structures are read (the file here holds none) and before --out is
    touched: --overwrite removes nothing of the earlier run there."""
    table = tmp_path / "labels.csv"
    pd.read_csv(LABELS).drop(columns="smiles").to_csv(table, index=False)
    structures = tmp_path / "structures.sdf"
    structures.write_text("")
    out = tmp_path / "run"
    out.mkdir()
    (out / "table.md").write_text("an earlier run's table")

    def refused(*arguments: str) -> str:
        status = main([
            "transfer", "--data", str(table), "--geometry", str(structures), "--model", "esa-3d",
            "--low-fidelity-columns", "cheap_logp", "--high-fidelity-columns", "fine_logp",
            *arguments, "--out", str(out), "--overwrite",
        ])  # fmt: skip
        assert status == 2
        return capsys.readouterr().err.strip()

    assert refused("--delta-learning", "--stack-kernel-ridge") == (
        "chemgraph transfer: error: --stack-kernel-ridge needs every molecule's SMILES (its "
        f"kernel ridge reads their Morgan fingerprints), and {table} has no SMILES column "
        "'smiles' (--smiles-column): give them, or leave out --stack-kernel-ridge"
    )
    assert [p.name for p in out.iterdir()] == ["table.md"]
    # a SMILES column named with --geometry must exist (not silently run without SMILES)
    assert refused("--smiles-column", "SMILES").startswith(
        f"chemgraph transfer: error: {table}: no column ['SMILES'] (--smiles-column); it has "
    )
    assert [p.name for p in out.iterdir()] == ["table.md"]
    # a column that is not there: refused, and the earlier run's files stay too
    assert _refused(out, capsys, "--low-fidelity-columns", "nosuch", "--overwrite").startswith(
        f"chemgraph transfer: error: {LABELS}: no column ['nosuch'] (--low-fidelity-columns)"
    )
    assert [p.name for p in out.iterdir()] == ["table.md"]


def test_cli_prints_the_table_once_and_warns_of_a_small_test_set(tmp_path, capsys, caplog):
    config = tmp_path / "transfer.yaml"
    training = {**TINY, "seeds": 1, "strategies": ["high_fidelity_only"], "model": "esa",
                "model_options": TINY_ESA}  # fmt: skip
    config.write_text(yaml.safe_dump({"split_fractions": [0.5, 0.25, 0.25], "training": training}))
    with caplog.at_level(logging.INFO, logger="chemgraph.jobs.transfer"):
        status = main([
            "transfer", "--config", str(config), "--data", str(LABELS), "--id-column", "id",
            "--low-fidelity-columns", "cheap_logp", "--high-fidelity-columns", "fine_logp",
            "--out", str(tmp_path / "run"),
        ])  # fmt: skip
    assert status == 0
    captured = capsys.readouterr()
    header = format_table(pd.read_csv(tmp_path / "run" / "table.csv")).splitlines()[0]
    assert (captured.out + captured.err + caplog.text).count(header) == 1
    assert "only 6 test molecules: their test RMSE is a rough estimate" in caplog.text


def test_cli_quiet_prints_no_table_and_strategies_may_have_spaces(tmp_path, capsys):
    """--quiet: warnings and errors only, no table nor "outputs written to"; --strategies
    strips the spaces around each name."""
    config = tmp_path / "transfer.yaml"
    training = {**TINY, "seeds": 1, "model": "esa", "model_options": TINY_ESA}
    config.write_text(yaml.safe_dump({"split_fractions": [0.5, 0.25, 0.25], "training": training}))
    status = main([
        "transfer", "--config", str(config), "--data", str(LABELS), "--id-column", "id",
        "--low-fidelity-columns", "cheap_logp", "--high-fidelity-columns", "fine_logp",
        "--strategies", "high_fidelity_only, inductive", "--out", str(tmp_path / "run"),
        "--quiet",
    ])  # fmt: skip
    assert status == 0
    assert capsys.readouterr().out == ""
    runs = pd.read_csv(tmp_path / "run" / "runs.csv")
    assert set(runs["strategy"]) >= {"high_fidelity_only", "inductive"}
    assert "transductive" not in set(runs["strategy"])


def test_transfer_help_gives_the_defaults_the_run_uses(capsys):
    """--help states each protocol's values, as TRANSFER_PROTOCOLS holds them."""
    from chemgraph.cli import main
    from chemgraph.transfer.config import TransferConfig

    with pytest.raises(SystemExit):
        main(["transfer", "--help"])
    # argparse may wrap a line after a hyphen
    text = " ".join(capsys.readouterr().out.split()).replace("Delta- learning", "Delta-learning")
    default, paper = TransferConfig(), TransferConfig(protocol="paper")

    def rate(value: float) -> str:  # 5e-4, as the help writes it
        return f"{value:.0e}".replace("e-0", "e-")

    assert (
        f"early stopping in both phases within {default.pretrain_epochs} epochs, "
        f"{default.seeds} seeds, batch {default.batch_size}, lr {rate(default.learning_rate)}, "
        "Delta-learning"
    ) in text
    assert default.pretrain_epochs == default.finetune_max_epochs and default.delta_learning
    assert default.pretrain_early_stopping and not paper.pretrain_early_stopping
    assert (
        f"{paper.pretrain_epochs} fixed pretraining epochs, up to {paper.finetune_max_epochs} "
        f"fine-tuning epochs, {paper.seeds} seeds, batch {paper.batch_size}, lr "
        f"{rate(paper.learning_rate)}, no Delta-learning"
    ) in text
    assert not paper.delta_learning
    assert "(default: esa for a SMILES table, esa-3d with --geometry)" in text


def test_a_smiles_table_runs_naming_only_its_columns(tmp_path):
    """No --model: a SMILES table gets the 2D ESA, a geometry file the 3D one (the default was
    esa-3d, which refused a SMILES table)."""
    options = TransferOptions(
        data=LABELS, low_fidelity_columns="cheap_logp", high_fidelity_columns="fine_logp",
        out=tmp_path / "run", training={},
    )  # fmt: skip
    assert options.training.model == "esa" and options.training.protocol == "default"
    with_structures = TransferOptions(
        data=LABELS, low_fidelity_columns="cheap_logp", high_fidelity_columns="fine_logp",
        out=tmp_path / "run", geometry=tmp_path / "structures.sdf", training={},
    )  # fmt: skip
    assert with_structures.training.model == "esa-3d"


def test_too_few_labelled_molecules_refused_before_out_is_touched(tmp_path, capsys):
    """Three usable molecules with the high-fidelity label (and two rejected rows) cannot be
    split: refused with the counts, the flags and the rejected rows' reasons; an earlier
    run's files in --out stay, even with --overwrite, and a new --out is not made."""
    table = pd.read_csv(LABELS)
    table.loc[5:, "fine_logp"] = np.nan
    table.loc[0, "smiles"] = "C1CC"  # unclosed ring: rejected
    table.loc[1, "cheap_logp"] = np.nan  # a high-fidelity label without the low-fidelity one
    data = tmp_path / "few.csv"
    table.to_csv(data, index=False)
    out = tmp_path / "run"
    out.mkdir()
    (out / "table.md").write_text("an earlier run's table")
    arguments = ["--data", str(data), "--id-column", "id", "--overwrite"]
    message = _refused(out, capsys, *arguments)
    assert message.startswith(
        f"chemgraph transfer: error: {data}: 3 of 40 rows are usable molecules with every "
        "high fidelity label (--high-fidelity-columns fine_logp), too few to split into train, "
        "validation and test with --split-fractions 0.8,0.1,0.1 (every split needs at least "
        "one molecule, got sizes ["
    )
    assert "; 2 rows rejected, e.g. row 0 (mol00): cannot parse 'C1CC'" in message
    assert "; row 1 (mol01): high fidelity label without its low fidelity label (cheap_logp)" in (
        message
    )
    assert [p.name for p in out.iterdir()] == ["table.md"]
    assert _refused(tmp_path / "new", capsys, *arguments[:4]).startswith(
        f"chemgraph transfer: error: {data}: 3 of 40 rows"
    )
    assert not (tmp_path / "new").exists()


def test_molecules_with_some_high_fidelity_labels_are_warned_about(tmp_path, caplog):
    table = pd.read_csv(LABELS)
    table.loc[[3, 7], "fine_mr"] = np.nan
    data = tmp_path / "partial.csv"
    table.to_csv(data, index=False)
    options = TransferOptions(
        data=data, id_column="id", low_fidelity_columns="cheap_logp,cheap_mr",
        high_fidelity_columns="fine_logp,fine_mr", out=tmp_path / "run",
        split_fractions=(0.5, 0.25, 0.25),
        training={**TINY, "seeds": 1, "strategies": ["high_fidelity_only"], "model": "esa",
                  "model_options": TINY_ESA, "baselines": False},
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="chemgraph.jobs.transfer"):
        transfer_table(options)
    assert (
        "2 molecules with some but not every high fidelity label (mol03, mol07): not in the "
        "train/validation/test split" in caplog.text
    )
    unlabelled = pd.read_csv(tmp_path / "run" / "predictions_unlabelled.csv")
    assert {"mol03", "mol07"} <= set(unlabelled["id"])


def test_standardize_and_fragments_prepare_the_table_as_featurize_does(tmp_path):
    """The table's SMILES go through the record -> molecule step of featurize and predict,
    with the run's molecule preparation, which every fine-tuned checkpoint stores."""
    from chemgraph.jobs.transfer import _table_graphs
    from chemgraph.transfer.chains import build_module

    smiles = ["CC(=O)[O-].[Na+]", "CCO", "", "C1CC"]
    table = pd.DataFrame({"smiles": smiles})
    atoms = {}
    for fragments in ("keep", "largest"):
        options = _options(tmp_path, fragments=fragments)
        graphs, reasons = _table_graphs(options, table, [s or None for s in smiles])
        atoms[fragments] = [None if g is None else g.num_nodes() for g in graphs]
        assert set(reasons) == {2, 3}  # the empty cell and the unclosed ring
        assert reasons[2] == "blank record"
    assert atoms == {"keep": [5, 3, None, None], "largest": [4, 3, None, None]}
    config = _options(tmp_path, standardize="basic", fragments="largest").training
    module = build_module(config, ["y"], torch.zeros(4, 1), 1e-3)
    assert (module.hparams["standardize"], module.hparams["fragments"]) == ("basic", "largest")


def test_a_molecule_preparation_with_geometry_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="standardize prepare the molecules of SMILES"):
        TransferOptions(
            data=LABELS, low_fidelity_columns="cheap_logp", high_fidelity_columns="fine_logp",
            out=tmp_path / "run", geometry=tmp_path / "structures.sdf",
            training={"model": "esa-3d", "standardize": "basic"},
        )  # fmt: skip
    with pytest.raises(ConfigError, match="standardize must be one of"):
        _options(tmp_path, standardize="everything")


def test_a_table_without_unlabelled_molecules_runs_delta_learning_and_stacking(tmp_path):
    """Every molecule has its high-fidelity label: the Δ-learning chains correct no unlabelled
    molecule and the stacked rows predict none (it failed with 'cannot reshape array of size
    0' after all the training, as a user error)."""
    labelled = tmp_path / "labelled.csv"
    pd.read_csv(LABELS).dropna(subset=["fine_logp", "fine_mr"]).to_csv(labelled, index=False)
    options = _options(tmp_path, seeds=1, delta_learning=True, stack_kernel_ridge=True)
    options.data = labelled
    table = transfer_table(options)
    assert {"Trans. + kernel ridge (stacked Δ)", "Ind."} <= set(table["strategy"])
    out = tmp_path / "run"
    assert pd.read_csv(out / "predictions_unlabelled.csv").empty  # its header only
    assert pd.read_csv(out / "selection.csv")["recommended"].sum() == 2  # one per target


def test_the_recommended_network_is_a_folder_predict_loads(tmp_path):
    """Without baselines the candidates are the trained strategies: the one with the lowest
    validation RMSE of its seed ensemble is copied to recommended/<target>/ (an ensemble
    folder), and chemgraph predict with it gives predictions_recommended.csv's values."""
    table = transfer_table(_options(tmp_path, baselines=False, joint_targets=True))
    out = tmp_path / "run"
    selection = pd.read_csv(out / "selection.csv")
    assert set(selection["kind"]) == {"network"}
    recommendation = json.loads((out / "recommendation.json").read_text(encoding="utf-8"))
    assert sorted(recommendation) == ["fine_logp", "fine_mr"]
    for target, chosen in recommendation.items():
        rows = selection[selection["target"] == target]
        (best,) = rows[rows["recommended"]].itertuples()
        assert (chosen["key"], chosen["validation_rmse"]) == (best.key, best.val_rmse)
        members = sorted((out / "recommended" / target).glob("model-*/best.ckpt"))
        assert len(members) == 2  # both seeds
        assert chosen["predict"].startswith(
            f"chemgraph predict --checkpoint {members[0].parents[1]}"
        )
    assert "Recommended for fine_logp" in (out / "table.md").read_text(encoding="utf-8")
    assert set(table["target"]) == {"fine_logp", "fine_mr"}
    recommended = pd.read_csv(out / "predictions_recommended.csv")
    # the table's own rows of those molecules: a transductive model reads their cheap labels
    new = pd.read_csv(LABELS).set_index("id").loc[recommended["id"]].reset_index()
    new.to_csv(tmp_path / "new.csv", index=False)
    scored = pd.read_csv(
        predict_table(out / "recommended" / "fine_logp", tmp_path / "new.csv",
                      tmp_path / "scored.csv", progress=False).output
    )  # fmt: skip
    np.testing.assert_allclose(scored["fine_logp_pred"], recommended["fine_logp_pred"], atol=1e-4)


def test_a_recommended_baseline_is_a_checkpoint_predict_loads(tmp_path):
    """High-fidelity labels that are an exact line of the cheap ones: the linear correction
    has validation RMSE 0, so it (or a baseline within one standard error of it and simpler)
    is recommended, written to recommended/<target>/best.ckpt, and chemgraph predict with it
    gives predictions_recommended.csv's values; without the cheap column the input is
    refused, naming it."""
    labels = pd.read_csv(LABELS)
    line = 2 * labels["cheap_logp"] + 1
    labels["fine_logp"] = np.where(labels["fine_logp"].isna(), np.nan, line)
    table_path = tmp_path / "line.csv"
    labels.to_csv(table_path, index=False)
    options = _options(tmp_path, seeds=1, delta_learning=False)  # no network reads the line
    options.data = table_path
    transfer_table(options)
    out = tmp_path / "run"
    recommendation = json.loads((out / "recommendation.json").read_text(encoding="utf-8"))
    chosen = recommendation["fine_logp"]
    assert chosen["kind"] == "baseline" and chosen["validation_rmse"] < 1e-5  # float32 labels
    assert chosen["key"] in ("linear", "linear_all")
    assert chosen["predict"].endswith("(NEW_MOLECULES with the column(s) cheap_logp)") or (
        chosen["key"] == "linear_all"
    )
    model = load_checkpoint(out / "recommended" / "fine_logp" / "best.ckpt")
    assert model.hparams.target_columns == ["fine_logp"]
    assert model.low_fidelity_columns == (
        ["cheap_logp"] if chosen["key"] == "linear" else ["cheap_logp", "cheap_mr"]
    )
    recommended = pd.read_csv(out / "predictions_recommended.csv")
    new = labels.set_index("id").loc[recommended["id"]].reset_index()
    new.to_csv(tmp_path / "new.csv", index=False)
    scored = pd.read_csv(
        predict_table(out / "recommended" / "fine_logp", tmp_path / "new.csv",
                      tmp_path / "scored.csv", progress=False).output
    )  # fmt: skip
    np.testing.assert_allclose(scored["fine_logp_pred"], recommended["fine_logp_pred"], atol=1e-5)
    np.testing.assert_allclose(scored["fine_logp_pred"], 2 * new["cheap_logp"] + 1, atol=1e-5)
    assert scored["max_similarity_to_train"].notna().all()  # the networks' training molecules
    # the range spans the training molecules' labels (as float32, the labels' training dtype)
    training = labels["fine_logp"].dropna().to_numpy(np.float32)
    assert training.min() <= np.float32(model.hparams.train_label_range["min"][0])
    assert np.float32(model.hparams.train_label_range["max"][0]) <= training.max()
    assert scored["fine_logp_outside_training_range"].notna().all()
    new.drop(columns=["cheap_logp"]).to_csv(tmp_path / "no_cheap.csv", index=False)
    with pytest.raises(ValueError, match="cheap_logp"):
        predict_table(
            out / "recommended" / "fine_logp", tmp_path / "no_cheap.csv",
            tmp_path / "refused.csv", progress=False,
        )  # fmt: skip
