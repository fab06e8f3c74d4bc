"""Scoring a library: files and featurize folders, row order, errors, --top, resume, domain."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from rdkit import Chem

from chemgraph._interrupts import Interrupted
from chemgraph.data.applicability import FINGERPRINT, TrainingFingerprints
from chemgraph.errors import ConfigError
from chemgraph.jobs import predict
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.jobs.predict import PredictOptions, predict_table, top_path
from chemgraph.train.ensemble import checkpoint_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
ESA, NSA = FIXTURES / "esa.ckpt", FIXTURES / "nsa.ckpt"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())

# (record, name) per .smi line; None = a blank line
LINES = [
    ("CCO", "ethanol"), ("c1ccc(O)cc1", "phenol"), (None, None), ("CC(=O)Nc1ccccc1", None),
    ("N[C@@H](C)C(=O)O", "alanine"), ("C1CC", "unclosed"), ("[Na+].[Cl-]", "salt"),
    ("CCCCCCCCO", "octanol"), ("N(C)(C)(C)(C)C", "pentavalent"), ("c1ccc2ccccc2c1", "naphth"),
    ("CC(C)Cc1ccc(cc1)C(C)C(=O)O", "ibuprofen"), ("O=C=O", "co2"), ("ClC(Cl)(Cl)Cl", "ccl4"),
]  # fmt: skip
ERRORS = {2: "blank record", 5: "SMILES parse error", 8: "Explicit valence"}
TARGETS = ["logp", "tpsa"]


@pytest.fixture()
def library(tmp_path):
    path = tmp_path / "library.smi"
    text = "".join("\n" if s is None else f"{s} {n}\n" if n else f"{s}\n" for s, n in LINES)
    path.write_text(text)
    return path


def _featurized(library, tmp_path, **options):
    folder = tmp_path / "lib"
    featurize_library(library, folder, FeaturizeOptions(**options), shard_size=4, progress=False)
    return folder


def _predict(checkpoint, source, output, **options):
    summary = predict_table(checkpoint, source, output, progress=False, **options)
    return summary, pd.read_parquet(output)


def test_shards_and_smiles_give_the_same_predictions_as_when_the_checkpoint_was_written(
    library, tmp_path
):
    _, from_shards = _predict(ESA, _featurized(library, tmp_path), tmp_path / "a.parquet")
    _, from_smiles = _predict(ESA, library, tmp_path / "b.parquet", shard_size=3)
    columns = [f"{t}_pred" for t in TARGETS]
    np.testing.assert_allclose(
        from_shards[columns].to_numpy(), from_smiles[columns].to_numpy(), atol=1e-6
    )
    pd.testing.assert_frame_equal(
        from_shards.drop(columns=columns), from_smiles.drop(columns=columns)
    )
    # the molecules of the frozen-checkpoint fixture: the predictions written with it
    rows = [0, 1, 3, 4, 6]
    assert [LINES[r][0] for r in rows] == EXPECTED["smiles"]
    np.testing.assert_allclose(
        from_smiles.loc[rows, columns].to_numpy(), EXPECTED["property"]["esa"]["predictions"],
        rtol=1e-5, atol=1e-5,
    )  # fmt: skip


def test_every_record_keeps_its_row_in_input_order(library, tmp_path):
    summary, result = _predict(ESA, library, tmp_path / "out.parquet")
    assert result.columns.tolist() == [
        "row", "id", "input", "smiles", "logp_pred", "tpsa_pred", "max_similarity_to_train",
        "in_domain", "logp_outside_training_range", "tpsa_outside_training_range", "error",
    ]  # fmt: skip
    assert result["row"].tolist() == list(range(len(LINES)))
    assert result["id"].tolist() == [n or str(r) for r, (_, n) in enumerate(LINES)]
    # the record as written, rejected ones too ("" for the blank line)
    assert result["input"].tolist() == [smiles or "" for smiles, _ in LINES]
    for row, (smiles, _) in enumerate(LINES):
        if row in ERRORS:
            assert result["error"][row].startswith(ERRORS[row])
            assert result["smiles"][row] == "" and np.isnan(result["logp_pred"][row])
        else:
            assert pd.isna(result["error"][row])  # null in parquet, not ""
            assert result["smiles"][row] == Chem.CanonSmiles(smiles)
            assert np.isfinite(result.loc[row, ["logp_pred", "tpsa_pred"]].astype(float)).all()
    assert (summary.records, summary.predicted, summary.failed, summary.blank) == (13, 10, 3, 1)
    assert summary.output == tmp_path / "out.parquet" and summary.top is None
    assert not (tmp_path / "out.parquet.partial").exists()


def test_a_folder_whose_feature_tables_lack_the_input_keeps_the_rejected_records_input(
    library, tmp_path
):
    """A featurize folder written before feature tables held ``input``: its featurized records'
    input is null (their canonical smiles is there); the rejected ones keep theirs."""
    import pyarrow.parquet as pq

    folder = _featurized(library, tmp_path, graphs="canonical")
    for path in (folder / "features").glob("*.parquet"):
        pq.write_table(pq.read_table(path).drop(["input"]), path)
    _, result = _predict(ESA, folder, tmp_path / "out.parquet")
    written = pq.read_table(tmp_path / "out.parquet")["input"].to_pylist()
    for row, (smiles, _) in enumerate(LINES):
        if row in ERRORS:
            assert written[row] == (smiles or "")
        else:
            assert written[row] is None  # null
            assert result["smiles"][row] == Chem.CanonSmiles(smiles)


def test_tables_and_sdf_files_with_their_ids(tmp_path):
    table = tmp_path / "library.tsv"
    table.write_text("name\tstructure\nethanol\tCCO\nbad\tC1CC\n\t\nbenzene\tc1ccccc1\n")
    output = tmp_path / "table.csv"
    options = PredictOptions(smiles_column="structure", id_column="name")
    predict_table(ESA, table, output, options, progress=False)
    result = pd.read_csv(output, keep_default_na=False)
    assert result["id"].tolist() == ["ethanol", "bad", "2", "benzene"]
    assert result["smiles"].tolist() == ["CCO", "", "", "c1ccccc1"]
    assert result["input"].tolist() == ["CCO", "C1CC", "", "c1ccccc1"]
    assert result["error"][1].startswith("SMILES parse error") and result["error"][2] == (
        "blank record"
    )
    sdf = tmp_path / "library.sdf"
    with Chem.SDWriter(str(sdf)) as writer:
        for smiles, title in [("CCO", "first"), ("c1ccccc1O", "second")]:
            mol = Chem.MolFromSmiles(smiles)
            mol.SetProp("_Name", title)
            writer.write(mol)
    _, result = _predict(ESA, sdf, tmp_path / "sdf.parquet")
    assert result["id"].tolist() == ["first", "second"]
    assert result["smiles"].tolist() == ["CCO", "Oc1ccccc1"]
    assert result["input"].tolist() == ["first", "second"]  # an SDF record's title line


def test_bad_options_are_refused_before_anything_is_written(library, tmp_path):
    output = tmp_path / "out.csv"
    for options, message in [
        (dict(batch_size=-5), "--batch-size must be at least 1, got -5"),
        (dict(batch_size=0), "--batch-size must be at least 1, got 0"),
        (dict(top=0), "--top must be at least 1, got 0"),
        (
            dict(similarity_threshold=5.0),
            r"--similarity-threshold is a Tanimoto similarity in \[0, 1\]",
        ),
    ]:
        with pytest.raises(ConfigError, match=message):
            PredictOptions(**options)
    for run, message in [
        (dict(workers=0), "--workers must be at least 1, got 0"),
        (dict(shard_size=0), "--shard-size must be at least 1, got 0"),
        (dict(resume=True, overwrite=True), "--resume and --overwrite exclude each other"),
    ]:
        with pytest.raises(ConfigError, match=message):
            predict_table(ESA, library, output, progress=False, **run)
    table = tmp_path / "library.csv"
    table.write_text("smiles\nCCO\n")
    with pytest.raises(ValueError, match="is the input; choose another --output"):
        predict_table(ESA, table, table, overwrite=True, progress=False)
    assert table.read_text() == "smiles\nCCO\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["library.csv", "library.smi"]


def test_top_holds_the_best_scores_best_first(library, tmp_path):
    output = tmp_path / "hits.csv"
    summary = predict_table(ESA, library, output, PredictOptions(top=3), progress=False)
    assert summary.top == tmp_path / "hits.top3.csv" == top_path(output, 3)
    full, top = pd.read_csv(output), pd.read_csv(summary.top)
    predicted = full[full["error"].isna()]
    assert top["row"].tolist() == predicted.nlargest(3, "logp_pred")["row"].tolist()
    assert top["logp_pred"].is_monotonic_decreasing and len(top) == 3

    low = PredictOptions(top=4, top_target="tpsa", ascending=True)
    predict_table(ESA, library, tmp_path / "low.parquet", low, progress=False)
    top = pd.read_parquet(tmp_path / "low.top4.parquet")
    assert top["row"].tolist() == predicted.nsmallest(4, "tpsa_pred")["row"].tolist()
    with pytest.raises(ValueError, match="top target 'mass' is not one of the targets"):
        options = PredictOptions(top=1, top_target="mass")
        predict_table(ESA, library, tmp_path / "x.csv", options, progress=False)


def test_an_interrupted_run_is_resumed_never_overwritten(library, tmp_path, monkeypatch):
    _, expected = _predict(ESA, library, tmp_path / "expected.parquet", shard_size=4)
    output = tmp_path / "out.parquet"
    scored = []
    score = predict._score_shard

    def interrupted(folder, shard, *args):
        if shard == 2:
            raise KeyboardInterrupt
        scored.append(shard)
        return score(folder, shard, *args)

    monkeypatch.setattr(predict, "_score_shard", interrupted)
    with pytest.raises(KeyboardInterrupt):
        predict_table(ESA, library, output, shard_size=4, progress=False)
    assert scored == [0, 1] and not output.exists()
    with pytest.raises(ValueError, match="holds an earlier run; pass --resume"):
        predict_table(ESA, library, output, shard_size=4, progress=False)
    with pytest.raises(ValueError, match=r"differs from it in shard_size \(4 → 5\)"):
        predict_table(ESA, library, output, shard_size=5, resume=True, progress=False)
    # a run of a version whose parts had no input column is not resumed into this one
    run = tmp_path / "out.parquet.partial" / "run.json"
    earlier = json.loads(run.read_text())
    run.write_text(json.dumps({k: v for k, v in earlier.items() if k != "columns"}))
    with pytest.raises(ValueError, match=r"columns \(not recorded by the earlier run\)"):
        predict_table(ESA, library, output, shard_size=4, resume=True, progress=False)
    run.write_text(json.dumps(earlier))
    monkeypatch.setattr(predict, "_score_shard", lambda *a: scored.append(a[1]) or score(*a))
    predict_table(ESA, library, output, shard_size=4, resume=True, progress=False)
    assert scored == [0, 1, 2, 3]  # shards 0 and 1 were kept
    pd.testing.assert_frame_equal(pd.read_parquet(output), expected)
    with pytest.raises(ValueError, match="exists; choose a new --output, or pass --overwrite"):
        predict_table(ESA, library, output, progress=False)
    # the same shards as ``expected``: other shards batch other molecules together, which moves
    # float32 predictions in their last digits
    predict_table(ESA, library, output, shard_size=4, overwrite=True, progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(output), expected)


def test_scoring_workers_write_what_one_process_writes_and_keep_finished_shards(library, tmp_path):
    folder = _featurized(library, tmp_path)  # 4 shards of 4 records
    _, expected = _predict([ESA, NSA], folder, tmp_path / "one.parquet")
    _, in_workers = _predict([ESA, NSA], folder, tmp_path / "two.parquet", workers=2)
    pd.testing.assert_frame_equal(in_workers, expected)

    graphs = folder / "graphs" / "shard-00002.bin"
    intact = graphs.read_bytes()
    graphs.write_bytes(intact[: len(intact) // 2])  # the worker scoring shard 2 raises
    output = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match="shard-00002.bin is truncated or damaged"):
        predict_table([ESA, NSA], folder, output, workers=2, progress=False)
    parts = sorted(p.name for p in (tmp_path / "out.parquet.partial" / "predictions").iterdir())
    assert "shard-00002.parquet" not in parts and "shard-00000.parquet" in parts
    graphs.write_bytes(intact)
    predict_table([ESA, NSA], folder, output, workers=2, resume=True, progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(output), expected)


def test_sigterm_while_workers_score_stops_them_and_keeps_finished_shards(tmp_path):
    library = tmp_path / "library.smi"
    records = [f"{smiles}\n" for smiles, _ in LINES if smiles] * 4
    library.write_text("".join(records))  # one shard each
    folder = tmp_path / "lib"
    featurize_library(library, folder, FeaturizeOptions(), shard_size=1, progress=False)
    _, expected = _predict(ESA, folder, tmp_path / "expected.parquet")
    output = tmp_path / "out.parquet"
    parts = tmp_path / "out.parquet.partial" / "predictions"

    running = threading.Event()

    def terminate_after_the_first_part() -> None:  # `kill` from another terminal
        while running.is_set():
            if parts.is_dir() and any(parts.glob("shard-*.parquet")):
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.01)

    running.set()
    threading.Thread(target=terminate_after_the_first_part, daemon=True).start()
    started = time.perf_counter()
    try:
        with pytest.raises(Interrupted) as stop:
            predict_table(ESA, folder, output, workers=2, progress=False)
    finally:
        running.clear()
    assert stop.value.signum == signal.SIGTERM and time.perf_counter() - started < 60
    assert multiprocessing.active_children() == []  # no worker left behind
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers restored
    assert 0 < len(list(parts.glob("shard-*.parquet"))) < len(records)
    predict_table(ESA, folder, output, workers=2, resume=True, progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(output), expected)


def test_a_folder_featurized_otherwise_is_refused_with_both_presets(library, tmp_path):
    folder = _featurized(library, tmp_path, graphs="ogb")
    with pytest.raises(ValueError) as error:
        predict_table(ESA, folder, tmp_path / "out.csv", progress=False)
    message = str(error.value)
    assert "'ogb' preset" in message and "'canonical' preset" in message
    assert "chemgraph featurize LIBRARY --graphs canonical" in message
    assert not (tmp_path / "out.csv.partial").exists()
    without = tmp_path / "fingerprints"
    featurize_library(library, without, FeaturizeOptions(graphs=None, fingerprints=("maccs",)),
                      progress=False)  # fmt: skip
    with pytest.raises(ValueError, match="holds no graphs"):
        predict_table(ESA, without, tmp_path / "out.csv", progress=False)


def _with_fingerprints(source: Path, smiles: list[str], path: Path, calibrated=True) -> Path:
    checkpoint = torch.load(source, weights_only=True)
    fingerprints = TrainingFingerprints.from_mols([Chem.MolFromSmiles(s) for s in smiles])
    stored = fingerprints.to_dict()
    if not calibrated:  # as chemgraph stored them before it calibrated the threshold
        del stored["similarity_threshold"], stored["threshold_percentile"]
    checkpoint["hyper_parameters"]["train_fingerprints"] = stored
    torch.save(checkpoint, path)
    return path


# their leave-one-out similarities are 5/9, 5/9 and 0: the 5th percentile is 1/18
# (tests/train/test_applicability.py)
TRAINING = ["CCO", "CCCO", "c1ccccc1"]


def test_applicability_domain_columns(library, tmp_path, caplog):
    checkpoint = _with_fingerprints(ESA, TRAINING, tmp_path / "ad.ckpt")
    summary, result = _predict(checkpoint, library, tmp_path / "out.parquet")
    similarity = result["max_similarity_to_train"]
    assert similarity.dtype == np.float32
    assert similarity[0] == 1.0 and result["in_domain"][0]  # ethanol was a training molecule
    assert similarity[11] < 0.3 and not result["in_domain"][11]  # CO2
    assert similarity[list(ERRORS)].isna().all() and result["in_domain"][list(ERRORS)].isna().all()
    assert summary.out_of_domain == int((result["in_domain"] == False).sum()) > 0  # noqa: E712
    # by default, the threshold calibrated on the training set and stored with its fingerprints
    assert summary.similarity_threshold == pytest.approx(1 / 18)
    predicted = result["error"].isna()
    expected = (similarity[predicted] >= 1 / 18).tolist()
    assert result["in_domain"][predicted].tolist() == expected
    # phenol (3 of 11 bits shared with benzene: 0.27) is in, the salt, CO2 and CCl4 (0) are out
    assert result["in_domain"][[1, 6, 11, 12]].tolist() == [True, False, False, False]
    assert summary.out_of_domain == 3
    # shards without a fingerprint column: computed from the canonical SMILES, equally
    _, from_shards = _predict(checkpoint, _featurized(library, tmp_path), tmp_path / "f.parquet")
    pd.testing.assert_series_equal(from_shards["max_similarity_to_train"], similarity)
    loose_options = PredictOptions(similarity_threshold=0.0)
    _, loose = _predict(checkpoint, library, tmp_path / "loose.parquet", options=loose_options)
    assert loose["in_domain"].notna().sum() == 10 and loose["in_domain"].dropna().all()
    # a threshold given overrides the calibrated one
    strict = PredictOptions(similarity_threshold=0.3)
    summary, strict = _predict(checkpoint, library, tmp_path / "strict.parquet", options=strict)
    assert summary.similarity_threshold == 0.3
    assert strict["in_domain"][predicted].tolist() == (similarity[predicted] >= 0.3).tolist()
    assert strict["in_domain"][1] == False  # noqa: E712 (phenol, 0.27)
    # fingerprints stored before the calibration: 0.3, said once
    old = _with_fingerprints(ESA, TRAINING, tmp_path / "old.ckpt", calibrated=False)
    with caplog.at_level(logging.WARNING, logger="chemgraph"):
        summary, fallback = _predict(old, library, tmp_path / "old.parquet")
    assert summary.similarity_threshold == 0.3
    pd.testing.assert_series_equal(fallback["in_domain"], strict["in_domain"])
    warnings = [r.getMessage() for r in caplog.records if "similarity threshold" in r.getMessage()]
    assert warnings == [
        f"no calibrated similarity threshold in {old} (written before chemgraph calibrated it "
        "on the training set): in_domain is max_similarity_to_train >= 0.3, the former default "
        "(--similarity-threshold sets another)"
    ]


@pytest.mark.parametrize("stored", [True, False], ids=["fingerprint column", "from smiles"])
def test_the_domain_is_computed_a_batch_of_records_at_a_time(
    library, tmp_path, monkeypatch, stored
):
    """Issue 46: a shard's fingerprints are read and compared with the training set's
    SIMILARITY_BATCH records at a time (decoding a shard's whole column at once held about 27
    KiB per record in the scoring worker), from the stored column or the canonical SMILES; the
    similarities are the Tanimoto similarities of the bits, brute force."""
    training = ["CCO", "CCCO", "c1ccccc1"]
    checkpoint = _with_fingerprints(ESA, training, tmp_path / "ad.ckpt")
    compared = []
    whole = TrainingFingerprints.max_similarity

    def batch(self, bits):
        compared.append(len(bits))
        return whole(self, bits)

    monkeypatch.setattr(TrainingFingerprints, "max_similarity", batch)
    monkeypatch.setattr(predict, "SIMILARITY_BATCH", 3, raising=False)  # (absent before #46)
    source = library
    if not stored:  # a featurize folder without fingerprints: from the canonical SMILES
        source = tmp_path / "lib"
        featurize_library(library, source, FeaturizeOptions(), shard_size=13, progress=False)
    _, result = _predict(checkpoint, source, tmp_path / "out.parquet", shard_size=13)
    assert compared == [3, 3, 3, 1]  # one shard of 13 records, 10 featurized

    def bits(smiles):
        return set(np.flatnonzero(FINGERPRINT(Chem.MolFromSmiles(smiles))).tolist())

    train = [bits(s) for s in training]
    predicted = result[result["error"].isna()]
    expected = [
        max(len(bits(s) & t) / len(bits(s) | t) for t in train) for s in predicted["smiles"]
    ]
    np.testing.assert_allclose(predicted["max_similarity_to_train"], expected, rtol=1e-6)


def test_a_checkpoint_without_fingerprints_leaves_the_columns_empty_and_says_why(
    library, tmp_path, caplog
):
    with caplog.at_level(logging.WARNING, logger="chemgraph"):
        summary, result = _predict(ESA, library, tmp_path / "out.parquet")
    assert summary.out_of_domain is None  # unknown, not "none outside the domain"
    assert summary.similarity_threshold is None and summary.outside_training_range is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"no training fingerprints in {ESA} (written before chemgraph stored them): "
        "max_similarity_to_train and in_domain are left empty",
        f"no training label range in {ESA} (written before chemgraph stored it): the "
        "_outside_training_range columns are left empty",
    ]
    assert result["max_similarity_to_train"].isna().all() and result["in_domain"].isna().all()
    for target in TARGETS:
        assert result[f"{target}_outside_training_range"].isna().all()


def test_predictions_outside_the_training_labels_range_are_flagged(library, tmp_path):
    """The ESA fixture with training labels logP in [-3, 0] and TPSA in [0, 30], and the bias of
    its logP output lowered by 1 (standardised: -1 x the scaler's std 2.770679 in logP)."""
    checkpoint = torch.load(ESA, weights_only=True)
    checkpoint["hyper_parameters"]["train_label_range"] = {"min": [-3.0, 0.0], "max": [0.0, 30.0]}
    checkpoint["state_dict"]["model.head.3.bias"][0] -= 1.0
    torch.save(checkpoint, tmp_path / "shifted.ckpt")
    summary, result = _predict(tmp_path / "shifted.ckpt", library, tmp_path / "out.parquet")
    rows = [0, 1, 3, 4, 6]  # the fixture's molecules, whose predictions expected.json holds
    written = np.array(EXPECTED["property"]["esa"]["predictions"])
    logp = written[:, 0] - 2.770679  # -1.81, -1.68, -1.59, -3.27, -8.61
    np.testing.assert_allclose(result.loc[rows, "logp_pred"], logp, rtol=1e-5, atol=1e-5)
    tpsa = written[:, 1]  # 22.98, 22.65, 27.68, 62.47, 0.97
    np.testing.assert_allclose(result.loc[rows, "tpsa_pred"], tpsa, rtol=1e-5, atol=1e-5)
    assert result.loc[rows, "logp_outside_training_range"].tolist() == [
        False, False, False, True, True
    ]  # fmt: skip
    assert result.loc[rows, "tpsa_outside_training_range"].tolist() == [
        False, False, False, True, False
    ]  # fmt: skip
    predicted = result[result["error"].isna()]
    for target, low, high in (("logp", -3.0, 0.0), ("tpsa", 0.0, 30.0)):
        values = predicted[f"{target}_pred"]
        outside = ((values < low) | (values > high)).tolist()
        assert predicted[f"{target}_outside_training_range"].tolist() == outside
        assert summary.outside_training_range[target] == sum(outside)
        assert result[f"{target}_outside_training_range"][list(ERRORS)].isna().all()
    assert list(summary.outside_training_range) == TARGETS
    assert summary.outside_training_range["logp"] >= 2


def test_an_ensemble_reports_the_mean_and_standard_deviation(library, tmp_path):
    _, esa = _predict(ESA, library, tmp_path / "esa.parquet")
    _, nsa = _predict(NSA, library, tmp_path / "nsa.parquet")
    _, ensemble = _predict([ESA, NSA], library, tmp_path / "both.parquet")
    assert ensemble.columns.tolist()[4:8] == ["logp_pred", "logp_std", "tpsa_pred", "tpsa_std"]
    for target in TARGETS:
        members = np.stack([esa[f"{target}_pred"], nsa[f"{target}_pred"]])
        np.testing.assert_allclose(ensemble[f"{target}_pred"], members.mean(0), rtol=1e-6)
        np.testing.assert_allclose(ensemble[f"{target}_std"], members.std(0, ddof=1), rtol=1e-5)
    assert (
        ensemble["logp_std"][list(ERRORS)].isna().all() and (ensemble["logp_std"] > 0).sum() == 10
    )


def test_checkpoint_files_of_runs_and_ensembles(tmp_path):
    for member in (0, 1, 10, 2):
        (tmp_path / "ens" / f"model-{member}").mkdir(parents=True)
        (tmp_path / "ens" / f"model-{member}" / "best.ckpt").write_bytes(b"%d" % member)
    assert [p.parent.name for p in checkpoint_files(tmp_path / "ens")] == [
        "model-0", "model-1", "model-2", "model-10"
    ]  # fmt: skip
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "best.ckpt").write_bytes(b"run")
    assert checkpoint_files([tmp_path / "run", ESA]) == [tmp_path / "run" / "best.ckpt", ESA]
    with pytest.raises(FileNotFoundError, match="holds no best.ckpt"):
        checkpoint_files(tmp_path)


def test_checkpoints_that_cannot_score_a_library_as_featurized_are_refused(library, tmp_path):
    checkpoint = torch.load(ESA, weights_only=True)
    checkpoint["hyper_parameters"]["fragments"] = "largest"
    torch.save(checkpoint, tmp_path / "largest.ckpt")
    with pytest.raises(ValueError, match="differ in preparation"):
        predict_table([ESA, tmp_path / "largest.ckpt"], library, tmp_path / "a.csv", progress=False)
    with pytest.raises(ValueError, match="differ in featurizer"):
        predict_table([ESA, FIXTURES / "gin.ckpt"], library, tmp_path / "b.csv", progress=False)
    assert not list(tmp_path.glob("*.partial"))


def test_a_shard_without_survivors_is_scored_as_an_empty_shard(tmp_path):
    path = tmp_path / "lib.smi"
    path.write_text("CCO a\nC1CC b\nX c\nCCN d\n")  # shard 1 (rows 1, 2) has no molecule
    _, table = _predict(ESA, path, tmp_path / "out.parquet", shard_size=2)
    assert table["row"].tolist() == [0, 1, 2, 3]
    assert table["error"].tolist()[1].startswith("SMILES parse error")
    assert table["logp_pred"].notna().tolist() == [True, False, False, True]


def test_on_dask_the_output_has_the_local_bytes_though_a_worker_dies_holding_a_shard(
    library, tmp_path
):
    distributed = pytest.importorskip("distributed")
    local, output, died = tmp_path / "local.parquet", tmp_path / "dask.parquet", tmp_path / "died"
    predict_table([ESA, NSA], library, local, shard_size=4, workers=2, progress=False)

    class DieOnTheFirstScoringTask(distributed.WorkerPlugin):  # (pickled by value: local)
        def __init__(self, marker: str) -> None:
            self.marker = marker

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and str(key).startswith("score-shard-"):
                try:
                    os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return
                os._exit(1)  # the worker process dies with the task in hand

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.register_plugin(DieOnTheFirstScoringTask(str(died)))
        summary = predict_table(
            [ESA, NSA], library, output, shard_size=4, progress=False,
            dask_scheduler=cluster.scheduler_address,
        )  # fmt: skip
    assert died.exists()  # a worker did die holding a shard; dask ran it again elsewhere
    assert output.read_bytes() == local.read_bytes()
    assert (summary.records, summary.predicted) == (13, 10)
    assert not (tmp_path / "dask.parquet.partial").exists()
