"""`chemgraph featurize --label-columns` then `chemgraph train --data FOLDER`: training from the
folder's graph shards gives a checkpoint whose predictions `predict` repeats on the library."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import yaml

from chemgraph.cli import main
from chemgraph.data.readers import iter_record_chunks
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.jobs.train import train
from chemgraph.train.config import TrainingConfig

SMILES = [
    "CCO", "CCCO", "CCCCO", "CC(C)O", "c1ccccc1", "Cc1ccccc1", "Oc1ccccc1", "CC(=O)O", "CCN",
    "CCCN", "c1ccncc1", "C1CCCCC1", "C1CCOC1", "CC(=O)C", "CCOCC", "ClCCl", "CC(=O)[O-].[Na+]",
    "CCN.Cl", "C", "O", "N", "CCCl", "BrCCBr", "c1ccc2ccccc2c1", "CC#N", "C=CC=C", "OCCO", "NCCN",
    "CS(C)=O", "CCS",
]  # fmt: skip
INVALID = {5: "C1CC", 17: "N(C)(C)(C)(C)C"}  # unclosed ring; pentavalent nitrogen


@pytest.fixture()
def library(tmp_path):
    """A CSV of 32 rows: y for every row but one (row 9 empty), z text in row 3 (rejected
    by featurize, as train rejects it), two rows RDKit rejects."""
    smiles = list(SMILES)
    for row, bad in sorted(INVALID.items()):
        smiles.insert(row, bad)
    y = [f"{0.1 * i:.1f}" for i in range(len(smiles))]
    y[9] = ""
    z = [str(i % 3) for i in range(len(smiles))]
    z[3] = "high"
    path = tmp_path / "molecules.csv"
    pd.DataFrame({"smiles": smiles, "y": y, "z": z}).to_csv(path, index=False)
    return path


SETTINGS = {"batch_size": 8, "model_options": {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}}


def test_train_on_a_featurize_folder_then_predict_gives_the_held_out_predictions(library, tmp_path):
    folder = tmp_path / "featurized"
    assert main(["featurize", str(library), "--output", str(folder), "--label-columns", "y,z",
                 "--standardize", "basic", "--fragments", "largest", "--shard-size", "7",
                 "--quiet"]) == 0  # fmt: skip
    features = pq.read_table(folder / "features").to_pandas()  # every shard
    assert features["y"].dtype == np.float64 and features["z"].dtype == np.float64
    by_row = features.set_index("row")
    assert np.isnan(by_row.loc[9, "y"]) and by_row.loc[10, "y"] == pytest.approx(1.0)
    assert by_row.loc[4, "z"] == 1.0
    rejected = pd.read_csv(folder / "rejected.csv")
    assert rejected["row"].tolist() == [3, 5, 17]
    assert rejected["reason"].iloc[0] == "column 'z': 'high' is not a number"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["options"]["label_columns"] == ["y", "z"]
    assert manifest["counts"]["rejected_by_reason"]["label"] == 1

    settings = tmp_path / "small.yaml"
    settings.write_text(yaml.safe_dump(SETTINGS))
    out = tmp_path / "run"
    assert main(["train", "--data", str(folder), "--target-columns", "y", "--max-epochs", "2",
                 "--seed", "3", "--out", str(out), "--config", str(settings),
                 "--quiet"]) == 0  # fmt: skip
    hyper = torch.load(out / "best.ckpt", weights_only=True)["hyper_parameters"]
    assert (hyper["standardize"], hyper["fragments"]) == ("basic", "largest")
    assert hyper["featurizer"] == manifest["graph_featurizer"]
    trained_rejects = pd.read_csv(out / "rejected.csv")
    assert trained_rejects["row"].tolist() == [3, 5, 9, 17]  # the folder's, and y missing
    assert trained_rejects["reason"].iloc[2] == "all targets missing: y"
    held_out = pd.read_csv(out / "predictions.csv")
    assert set(held_out["split"]) == {"val", "test"}
    assert set(held_out["row"]).isdisjoint({3, 5, 9, 17})

    output = tmp_path / "predicted.csv"
    assert main(["predict", "--checkpoint", str(out), "--input", str(library),
                 "--output", str(output), "--quiet"]) == 0  # fmt: skip
    predicted = pd.read_csv(output)
    for _, row in held_out.iterrows():
        assert predicted["y_pred"][int(row["row"])] == pytest.approx(row["y_pred"], abs=1e-5)
    # row 19, "CCN.Cl", is its largest fragment in the folder and in predict alike
    assert by_row.loc[19, "smiles"] == predicted["smiles"][19] == "CCN"


def _config(folder, out, **values):
    return TrainingConfig.from_dict(
        {"data": str(folder), "target_columns": ["y"], "out": str(out), "max_epochs": 1,
         "progress": False, **SETTINGS, **values}
    )  # fmt: skip


def _featurized(library, folder, **options):
    options = {"label_columns": ("y",), **options}
    featurize_library(library, folder, FeaturizeOptions(**options), progress=False)
    return folder


@pytest.mark.parametrize(
    "options,values,message",
    [
        ({"conformers": 1}, {}, "holds 3D graphs with explicit hydrogens"),
        ({"graphs": "ogb"}, {}, "holds graphs of the 'ogb' preset but esa is trained here"),
        ({"graphs": None, "fingerprints": ("maccs",)}, {}, r"holds no graphs"),
        ({"label_columns": ("z",)}, {}, r"target columns \['y'\] are not label columns"),
        ({"standardize": "basic"}, {"standardize": "chembl"}, "--standardize chembl"),
    ],
)
def test_a_folder_the_model_cannot_use_is_refused(library, tmp_path, options, values, message):
    folder = _featurized(library, tmp_path / "folder", **options)
    with pytest.raises(ValueError, match=message):
        train(_config(folder, tmp_path / "run", **values))
    assert not (tmp_path / "run" / "best.ckpt").exists()


def test_an_incomplete_folder_is_refused(library, tmp_path):
    folder = _featurized(library, tmp_path / "folder")
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    with pytest.raises(ValueError, match="not a complete featurization .* --resume"):
        train(_config(folder, tmp_path / "run"))
    shutil.rmtree(folder / "parts")
    (folder / "manifest.json").unlink()
    with pytest.raises(ValueError, match="not a chemgraph featurize output"):
        train(_config(folder, tmp_path / "run"))


def test_label_cells_of_sdf_properties_and_parquet_columns(tmp_path):
    sdf = tmp_path / "m.sdf"
    sdf.write_text(
        "a\n  RDKit\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\n"
        "    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
        "M  END\n>  <y>\n1.5\n\n$$$$\n"
        "b\n  RDKit\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\n"
        "    0.0000    0.0000    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0\n"
        "M  END\n$$$$\n"
    )
    (records,) = iter_record_chunks(sdf, 10, label_columns=["y"])
    assert [r.labels for r in records] == [("1.5",), (None,)]
    table = tmp_path / "m.parquet"
    pd.DataFrame({"smiles": ["C", "O"], "y": [2.5, None]}).to_parquet(table)
    (records,) = iter_record_chunks(table, 10, label_columns=["y"])
    assert [r.labels for r in records] == [(2.5,), (None,)]
    with pytest.raises(ValueError, match=r"no label column \['w'\]"):
        next(iter_record_chunks(table, 10, label_columns=["w"]))
    out = tmp_path / "out"
    featurize_library(sdf, out, FeaturizeOptions(label_columns=("y",)), progress=False)
    values = pq.read_table(out / "features").column("y").to_pylist()
    assert values[0] == 1.5 and np.isnan(values[1])


def test_max_rows_keeps_the_first_source_rows_of_a_folder(library, tmp_path):
    from chemgraph.library.training_set import read_featurized

    folder = _featurized(library, tmp_path / "folder", label_columns=("y", "z"))
    source, dataset, unlabelled = read_featurized(_config(folder, tmp_path / "run", max_rows=10))
    assert dataset.rows.tolist() == [0, 1, 2, 4, 6, 7, 8]  # 3 z text, 5 unparsable, 9 no y
    assert source.rejected["row"].tolist() == [3, 5]
    assert unlabelled["row"].tolist() == [9]
    assert dataset.labels[:, 0].tolist() == pytest.approx([0.0, 0.1, 0.2, 0.4, 0.6, 0.7, 0.8])
    assert dataset.smiles[2] == "CCCCO" and len(dataset.graphs) == 7
