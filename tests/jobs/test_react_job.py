"""The react job (chemgraph.jobs.react: ReactOptions, react, react_file): one options object
that checks itself, used by ``chemgraph react`` and the Python API alike."""

import pytest

from chemgraph.errors import ConfigError
from chemgraph.jobs.react import ReactOptions, react, react_file


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(decoder="beam"), "--decoder must be one of centre, generate, got 'beam'"),
        (dict(decoder="generate"), "--decoder generate needs --checkpoint"),
        (dict(top_k=0), "--top-k must be at least 1, got 0"),
        (dict(batch_size=0), "--batch-size must be at least 1, got 0"),
        (
            dict(decoder="generate", checkpoint="x.ckpt", top_k=9),
            "--top-k 9 exceeds --beam-width 8",
        ),
    ],
)
def test_bad_options_are_refused_with_the_option_named(options, message):
    with pytest.raises(ConfigError, match=message):
        ReactOptions(**options)


def test_a_translator_checkpoint_is_refused_by_the_centre_decoder_with_the_hint(tmp_path):
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
    (translator,) = fixture.glob("reaction_grat_test_fixture.ckpt")
    with pytest.raises(ConfigError, match="needs --decoder generate"):
        react("CCO.CC(=O)O>>", ReactOptions(checkpoint=translator))


def test_the_shipped_model_answers_an_esterification_and_files_are_checked(tmp_path):
    prediction = react("CCO.CC(=O)O>>", ReactOptions(top_k=3))
    assert prediction.smiles[0] == "CCOC(C)=O"
    assert len(prediction.smiles) == len(prediction.scores) == len(prediction.edits) == 3
    reactions = tmp_path / "reactions.txt"
    reactions.write_text("CCO.CC(=O)O>>CCOC(C)=O\n")
    with pytest.raises(ConfigError, match="react writes CSV"):
        react_file(reactions, tmp_path / "out.parquet")
    table, metrics = react_file(reactions, tmp_path / "out.csv", ReactOptions(top_k=3))
    assert table["prediction_1"].tolist() == ["CCOC(C)=O"] and metrics["top_1"] == 100.0
    with pytest.raises(ConfigError, match="exists; pass --overwrite"):
        react_file(reactions, tmp_path / "out.csv")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="holds no reactions"):
        react_file(empty, tmp_path / "e.csv")


def test_a_file_whose_reactions_all_fail_still_gets_its_table(tmp_path):
    molecules = tmp_path / "molecules.txt"
    molecules.write_text("CCO\nc1ccccc1\n")
    table, metrics = react_file(molecules, tmp_path / "out.csv")
    assert metrics is None and table["row"].tolist() == [0, 1]
    assert table["error"].str.contains("2 '>' separators").all()
    assert (tmp_path / "out.csv").exists()


def test_a_property_checkpoint_is_named_as_such_by_the_centre_decoder():
    from pathlib import Path

    esa = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
    with pytest.raises(ConfigError, match="property-prediction checkpoint of chemgraph train"):
        react("CCO.CC(=O)O>>", ReactOptions(checkpoint=esa))


def test_elements_the_model_has_no_feature_for_are_named_in_a_warning_and_a_column(
    tmp_path, caplog
):
    from rdkit import Chem

    from chemgraph.batches.reaction_centre import unknown_elements

    assert unknown_elements(Chem.MolFromSmiles("[U]Cl.[Ga]C.C[Ga]C.CCO")) == ["Ga", "U"]
    assert unknown_elements(Chem.MolFromSmiles("[Pd]Cl.BrCCO")) == []
    with caplog.at_level("WARNING", logger="chemgraph.jobs.react"):
        react("CC(=O)Cl.OC[U]>>", ReactOptions(top_k=1))
    assert "U: no atom feature of the model's own" in caplog.text
    caplog.clear()
    reactions = tmp_path / "reactions.txt"
    reactions.write_text("CCO.CC(=O)O>>\nCC(=O)Cl.OC[U]>>\nCC(=O)Cl.OC[U].[Ga]>>\n")
    with caplog.at_level("WARNING", logger="chemgraph.reactions.reaction_centre"):
        table, _ = react_file(reactions, tmp_path / "out.csv", ReactOptions(top_k=1))
    assert table["unknown_elements"].tolist() == ["", "U", "Ga U"]
    assert "2 reactions (rows 1, 2) hold elements without an atom feature" in caplog.text


def test_the_id_column_of_a_table_is_carried_and_a_missing_one_refused(tmp_path):
    reactions = tmp_path / "reactions.csv"
    reactions.write_text(
        "compound,reaction,id\nR-17,CCO.CC(=O)O>>,x1\nR-18,CC(=O)Cl.OCC>>,x2\n,nope,\n"
    )
    table, _ = react_file(reactions, tmp_path / "default.csv", ReactOptions(top_k=1))
    # the column named id; an empty cell stays empty (row 2's number is not an id of its own)
    assert table["id"].tolist() == ["x1", "x2", ""]
    table, _ = react_file(
        reactions, tmp_path / "named.csv", ReactOptions(top_k=1), id_column="compound"
    )
    assert table["id"].tolist() == ["R-17", "R-18", ""]
    assert table["prediction_1"].tolist() == ["CCOC(C)=O", "CCOC(C)=O", ""]
    with pytest.raises(ConfigError, match=r"no id column 'name'; available columns: \["):
        react_file(reactions, tmp_path / "bad.csv", id_column="name")
    text = tmp_path / "reactions.txt"
    text.write_text("CCO.CC(=O)O>>\n")
    with pytest.raises(ConfigError, match="an id column .'name'. needs a .csv or .tsv table"):
        react_file(text, tmp_path / "bad.csv", id_column="name")
    assert not (tmp_path / "bad.csv").exists()


def test_a_byte_order_mark_and_an_unquoted_delimiter_do_not_shift_the_columns(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark, which must not hide the first
    column's name; a row with more fields than the header is reported, not read shifted."""
    reactions = tmp_path / "excel.csv"
    text = "id,reaction\nE1,CCO.CC(=O)O>>\nE,2,CCO.CC(=O)O>>\n"
    reactions.write_bytes(b"\xef\xbb\xbf" + text.encode())
    table, _ = react_file(reactions, tmp_path / "out.csv", ReactOptions(top_k=1))
    assert table["id"].tolist() == ["E1", "E"]
    assert table["prediction_1"].tolist() == ["CCOC(C)=O", ""]
    assert table["error"].tolist() == [
        "",
        "malformed row: 3 fields where the header has 2 (an unquoted ',' in a field?)",
    ]


def test_a_header_only_table_is_refused_and_its_missing_id_column_named(tmp_path):
    header_only = tmp_path / "header.csv"
    header_only.write_text("id,reaction\n")
    with pytest.raises(ConfigError, match="holds no reactions; .* at least one data row"):
        react_file(header_only, tmp_path / "out.csv")
    with pytest.raises(ConfigError, match=r"no id column 'nope'; available columns: \['id'"):
        react_file(header_only, tmp_path / "out.csv", id_column="nope")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("kind", ["truncated", "foreign", "empty"])
def test_a_damaged_or_foreign_model_file_is_a_one_line_error_of_the_centre_decoder(
    tmp_path, capsys, kind
):
    """As the property loader does: no traceback, and never torch's advice to load with
    weights_only=False (issue 45)."""
    import argparse

    import torch

    from chemgraph._resources import model_path
    from chemgraph.cli import main

    bad = tmp_path / "model.pt"
    if kind == "truncated":
        bad.write_bytes(model_path().read_bytes()[:5000])
    elif kind == "foreign":  # a pickled Python object, which the weights-only reader refuses
        torch.save(argparse.Namespace(a=1), bad)
    else:
        bad.write_bytes(b"")
    with pytest.raises(ConfigError, match=f"{bad} is not a readable PyTorch checkpoint: "):
        react("CCO.CC(=O)O>>", ReactOptions(checkpoint=bad))
    assert main(["react", "CCO.CC(=O)O>>", "--checkpoint", str(bad)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"chemgraph react: error: {bad} is not a readable PyTorch")
    assert len(error.strip().splitlines()) == 1 and "weights_only" not in error


def test_react_file_checks_its_output_before_predicting_and_writes_as_it_goes(
    tmp_path, monkeypatch, caplog
):
    """An output that cannot be written failed only after every reaction was predicted, and a
    run that stopped lost every prediction (issue 45)."""
    import gzip

    import pandas as pd

    from chemgraph.reactions import predictions as tables
    from chemgraph.reactions.reaction_centre import ReactionCentreModel

    reactions = tmp_path / "reactions.txt"
    reactions.write_text("CCO.CC(=O)O>>\nCC(=O)Cl.OCC>>\nCCN.CC(=O)Cl>>\n")
    calls = []
    predict = ReactionCentreModel.predict

    def counted(self, examples, *args, **kwargs):
        calls.append(len(examples))
        if len(calls) == 2 and stop:
            raise KeyboardInterrupt  # Ctrl-C (or a crash) in the second block
        return predict(self, examples, *args, **kwargs)

    monkeypatch.setattr(ReactionCentreModel, "predict", counted)
    monkeypatch.setattr(tables, "REACTIONS_PER_BLOCK", 2, raising=False)
    stop = True
    with pytest.raises(OSError, match="cannot write .*out.csv.partial: No such file"):
        react_file(reactions, tmp_path / "no-such-folder" / "out.csv", ReactOptions(top_k=1))
    assert calls == []  # refused before any prediction

    output = tmp_path / "out.csv.gz"
    with caplog.at_level("WARNING"), pytest.raises(KeyboardInterrupt):
        react_file(reactions, output, ReactOptions(top_k=1))
    assert calls == [2, 1] and not output.exists()
    partial = tmp_path / "out.csv.gz.partial"
    with gzip.open(partial, "rt") as handle:  # the first block, readable as it is
        kept = pd.read_csv(handle, keep_default_na=False)
    assert kept["row"].tolist() == [0, 1] and kept["prediction_1"].tolist()[0] == "CCOC(C)=O"
    assert f"stopped: the 2 reactions written so far are in {partial}" in caplog.text
    with pytest.raises(ValueError, match="out.csv.gz.partial exists: another chemgraph react"):
        react_file(reactions, output, ReactOptions(top_k=1))  # never written over unasked

    stop = False
    table, metrics = react_file(reactions, output, ReactOptions(top_k=1), overwrite=True)
    assert not partial.exists() and metrics is None
    written = pd.read_csv(output, keep_default_na=False)
    assert written["row"].tolist() == table["row"].tolist() == [0, 1, 2]
    assert written["prediction_1"].tolist() == table["prediction_1"].tolist()
    assert written.columns.tolist() == table.columns.tolist()
