"""Learned fingerprints: the readout of a molecule alone equals its row of a padded batch, from
files and featurize folders; head(embedding) is the prediction; rows, errors, resume, dask."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.errors import ConfigError
from chemgraph.graphs import mol_to_graph
from chemgraph.jobs import fingerprint
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.jobs.fingerprint import FingerprintOptions, fingerprint_table
from chemgraph.jobs.predict import predict_table
from chemgraph.models import get_model_spec
from chemgraph.train.ensemble import Ensemble

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
ESA, NSA = FIXTURES / "esa.ckpt", FIXTURES / "nsa.ckpt"

# (SMILES, name); None: a blank line. Ethanol shares its shard with larger molecules, so its
# batch is padded to their length.
LINES = [
    ("CCO", "ethanol"), ("CC(C)Cc1ccc(cc1)C(C)C(=O)O", "ibuprofen"), (None, None),
    ("c1ccc2ccccc2c1", "naphthalene"), ("C1CC", "unclosed"), ("N[C@@H](C)C(=O)O", "alanine"),
    ("CCCCCCCCO", "octanol"), ("[Na+].[Cl-]", "salt"), ("O=C=O", "co2"),
]  # fmt: skip
ERRORS = {2: "blank record", 4: "SMILES parse error"}


@pytest.fixture()
def library(tmp_path):
    path = tmp_path / "library.smi"
    path.write_text("".join("\n" if s is None else f"{s} {n}\n" for s, n in LINES))
    return path


@pytest.fixture()
def one_thread():
    """torch on one thread, as in scoring workers and dask tasks (byte-for-byte comparisons)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _alone(module, preset, smiles: str) -> np.ndarray:
    """The readout of one molecule in a batch of its own: no padding at all."""
    spec = get_model_spec(module.hparams.model)
    batch = spec.batch_builder(module.model.config)(
        dgl.batch([mol_to_graph(mol_from_smiles(smiles), preset)])
    )
    module.eval()
    with torch.inference_mode():
        return module.model.embed(batch).float().numpy()[0]


def test_a_molecule_alone_equals_its_row_of_a_padded_batch_and_head_gives_the_prediction(
    library, tmp_path
):
    model = Ensemble([ESA], "cpu")
    module = model.modules[0]
    from_file = fingerprint_table(
        ESA, library, tmp_path / "file.parquet", shard_size=4, progress=False
    )
    folder = tmp_path / "lib"
    featurize_library(
        library, folder, FeaturizeOptions(graphs="canonical"), shard_size=3, progress=False
    )
    fingerprint_table(ESA, folder, tmp_path / "folder.parquet", progress=False)
    assert (from_file.records, from_file.embedded, from_file.failed) == (9, 7, 2)
    assert from_file.width == 8 == module.model.config.hidden_dim  # the ESA readout: hidden_dim
    tables = [pd.read_parquet(tmp_path / f"{n}.parquet") for n in ("file", "folder")]
    for table in tables:
        # the record as written, every one (a blank line: "")
        assert table["input"].tolist() == [smiles or "" for smiles, _ in LINES]
        for row, (smiles, _) in enumerate(LINES):
            if row in ERRORS:
                assert (
                    table["error"][row].startswith(ERRORS[row]) and table["embedding"][row] is None
                )
                continue
            assert pd.isna(table["error"][row]) and table["smiles"][row] == Chem.CanonSmiles(smiles)
            np.testing.assert_allclose(
                table["embedding"][row],
                _alone(module, model.featurizer, smiles),
                rtol=1e-5,
                atol=1e-6,
            )
    predict_table(ESA, library, tmp_path / "predicted.parquet", shard_size=4, progress=False)
    predicted = pd.read_parquet(tmp_path / "predicted.parquet")
    embedded = tables[0]["error"].isna()
    embeddings = torch.from_numpy(np.stack(tables[0]["embedding"][embedded]))
    with torch.inference_mode():
        heads = module.scaler.inverse_transform(module.model.head(embeddings)).numpy()
    np.testing.assert_allclose(
        heads, predicted.loc[embedded, ["logp_pred", "tpsa_pred"]].to_numpy(), rtol=1e-5, atol=1e-5
    )


def test_the_parquet_schema_and_what_is_refused(library, tmp_path):
    output = tmp_path / "emb.parquet"
    fingerprint_table(ESA, library, output, progress=False)
    schema = pq.read_schema(output)
    assert schema.names == ["row", "id", "input", "smiles", "embedding", "error"]
    assert str(schema.field("embedding").type) == "fixed_size_list<element: float>[8]"
    table = pq.read_table(output)
    assert table["row"].to_pylist() == list(range(len(LINES)))
    assert table["id"].to_pylist() == [n or str(r) for r, (_, n) in enumerate(LINES)]
    assert table["embedding"].null_count == len(ERRORS)
    # the module docstring's two ways to the matrix of the embedded records
    matrix = table["embedding"].combine_chunks().flatten().to_numpy().reshape(-1, 8)
    frame = pd.read_parquet(output)
    assert matrix.dtype == np.float32 and matrix.shape == (len(LINES) - len(ERRORS), 8)
    np.testing.assert_array_equal(matrix, np.stack(frame.embedding[frame.error.isna()]))
    with pytest.raises(ConfigError, match="fingerprint takes one model.*one member's best.ckpt"):
        fingerprint_table([ESA, NSA], library, tmp_path / "ens.parquet", progress=False)
    with pytest.raises(ConfigError, match="--output must be a .parquet file"):
        fingerprint_table(ESA, library, tmp_path / "emb.csv", progress=False)
    with pytest.raises(ConfigError, match="--batch-size must be at least 1, got 0"):
        FingerprintOptions(batch_size=0)
    with pytest.raises(ValueError, match="exists; choose a new --output, or pass --overwrite"):
        fingerprint_table(ESA, library, output, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb.parquet", "library.smi"]


def test_an_interrupted_run_resumed_on_a_dask_cluster_writes_the_same_bytes(
    library, tmp_path, monkeypatch, one_thread
):
    distributed = pytest.importorskip("distributed")
    reference, output = tmp_path / "reference.parquet", tmp_path / "out.parquet"
    fingerprint_table(ESA, library, reference, shard_size=2, progress=False)
    embedded, table = [], fingerprint.shard_table

    def interrupted(folder, shard, *args):
        if shard == 2:
            raise KeyboardInterrupt
        embedded.append(shard)
        return table(folder, shard, *args)

    monkeypatch.setattr(fingerprint, "shard_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fingerprint_table(ESA, library, output, shard_size=2, progress=False)
    monkeypatch.setattr(fingerprint, "shard_table", table)
    kept = sorted(p.name for p in (tmp_path / "out.parquet.partial" / "embeddings").iterdir())
    assert embedded == [0, 1] and kept == ["shard-00000.parquet", "shard-00001.parquet"]
    not_predict = r"differs from it in similarity_threshold \(not recorded by the earlier run\)"
    with pytest.raises(ValueError, match=not_predict):
        predict_table(ESA, library, output, shard_size=2, resume=True, progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        fingerprint_table(
            ESA, library, output, shard_size=2, resume=True, progress=False,
            dask_scheduler=cluster.scheduler_address,
        )  # fmt: skip
    assert output.read_bytes() == reference.read_bytes()
    assert not (tmp_path / "out.parquet.partial").exists()


def test_the_command_prints_what_it_wrote_and_refuses_an_ensemble_in_one_line(
    library, tmp_path, capsys
):
    from chemgraph.cli.main import main

    output = tmp_path / "emb.parquet"
    command = ["fingerprint", "--checkpoint", str(ESA), "--input", str(library)]
    assert main([*command, "--output", str(output)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "embedded 7 of 9 records (8 float32 each); 2 could not be featurized (see the error "
        "column)",
        f"embeddings written to {output}",
    ]
    # --quiet: warnings and errors only
    assert main([*command, "--output", str(output), "--overwrite", "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    ensemble = tmp_path / "ens"
    for member, checkpoint in enumerate([ESA, NSA]):
        (ensemble / f"model-{member}").mkdir(parents=True)
        (ensemble / f"model-{member}" / "best.ckpt").write_bytes(checkpoint.read_bytes())
    command[2] = str(ensemble)
    assert main([*command, "--output", str(tmp_path / "ens.parquet")]) == 2
    error = capsys.readouterr().err
    assert (
        error.startswith("chemgraph fingerprint: error: 2 checkpoints") and error.count("\n") == 1
    )
