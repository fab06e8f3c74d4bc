"""chemgraph.reactions.predictions.prediction_frame (the recipe's predictions.csv) and predict_file
(``chemgraph react --input``) on files of every accepted format: integer rows in input order,
fixed columns and dtypes, the error column."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from chemgraph.data.reactions import encode_reactions, parse_input_reaction
from chemgraph.reactions import translator_prediction
from chemgraph.reactions.predictions import NO_PRODUCT, ReactionPrediction, prediction_frame
from chemgraph.reactions.translator_prediction import predict_file

CHECKPOINT = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "checkpoints"
    / "reaction_grat_test_fixture.ckpt"
)

COLUMNS = [
    "row", "id", "reaction", "target", "target_rank", "top1_invalid",
    "prediction_1", "score_1", "prediction_2", "score_2", "error",
]  # fmt: skip
TEXT = str(pd.Series(["CCO"]).dtype)  # pandas' text dtype: "str" (pandas 3), "object" (2)
DTYPES = {
    "row": "int64", "id": TEXT, "reaction": TEXT, "target": TEXT, "target_rank": "Int64",
    "top1_invalid": "boolean", "prediction_1": TEXT, "score_1": "float64",
    "prediction_2": TEXT, "score_2": "float64", "error": TEXT,
}  # fmt: skip


def _items(texts):
    reactions = [parse_input_reaction(text) for text in texts]
    items, _, bad = encode_reactions(reactions, range(len(texts)), with_product=True)
    assert not bad
    return items


def test_prediction_frame_integer_rows_and_ranks():
    items = _items(["CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O", "CO.[Na+]>>C[O-].[Na+]", "CCO>>CC=O"])
    predictions = [
        ReactionPrediction(["CCOC(C)=O", "CCO"], [-0.1, -0.9], False, 1),
        ReactionPrediction(["CO", "[Na+].C[O-]"], [-0.2, -0.3], False, 0),
        ReactionPrediction([], [], True, 3),
    ]
    frame = prediction_frame([0, 3, 7], items, predictions, top_k=2)
    assert list(frame.columns) == COLUMNS[:1] + COLUMNS[3:-1]
    assert {c: str(t) for c, t in frame.dtypes.items()} == {
        c: t for c, t in DTYPES.items() if c not in ("id", "reaction", "error")
    }
    assert frame["row"].tolist() == [0, 3, 7]
    assert frame["target_rank"].tolist() == [1, 2, pd.NA]
    assert frame["top1_invalid"].tolist() == [False, False, True]
    assert frame["prediction_2"].tolist() == ["CCO", "[Na+].C[O-]", ""]
    lines = frame.to_csv(index=False).splitlines()
    assert lines[1:] == [
        "0,CCOC(C)=O,1,False,CCOC(C)=O,-0.1,CCO,-0.9",
        "3,C[O-].[Na+],2,False,CO,-0.2,[Na+].C[O-],-0.3",
        "7,CC=O,,True,,,,",
    ]  # ranks written as integers, not 1.0
    empty = prediction_frame([], [], [], top_k=2)
    assert list(empty.columns) == list(frame.columns) and empty.dtypes.equals(frame.dtypes)


def _predicted(monkeypatch):
    """predict_reactions replaced: each reaction gets CCOC(C)=O and CCO, or nothing for the
    reactions whose input holds sodium (no valid product decoded)."""
    seen = []

    def fake(module, items, beam_width, top_k, batch_size):
        seen.extend(item.product_smiles for item in items)
        return [
            ReactionPrediction([], [], True, 4)
            if any("Na" in smiles for smiles in _input_smiles(item))
            else ReactionPrediction(["CCOC(C)=O", "CCO"][:top_k], [-0.25, -1.5][:top_k], False, 0)
            for item in items
        ]

    monkeypatch.setattr(translator_prediction, "predict_reactions", fake)
    return seen


def _input_smiles(item):
    from chemgraph.chem.graph_codec import graph_to_smiles

    return [graph_to_smiles(g) for g in (*item.reactants, *item.reagents)]


FORMATS = {
    "reactions.txt": "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O 2-4;2-5\nnot a reaction\n\nCO.[Na+]>>\n",
    "reactions.smi": "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O ester\nnot\n\nCO.[Na+]>>\n",
    "reactions.csv": "id,reaction\na,CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O\nb,not\n,\nc,CO.[Na+]>>\n",
    "reactions.tsv.gz": "rxn_smiles\tid\nCC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O\ta\nnot\tb\n\t\n"
    "CO.[Na+]>>\tc\n",
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_predict_file_one_row_per_record_in_input_order(tmp_path, monkeypatch, name):
    seen = _predicted(monkeypatch)
    path = tmp_path / name
    data = FORMATS[name].encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    output = tmp_path / "predictions.csv"
    table, metrics = predict_file(CHECKPOINT, path, output, top_k=2, beam_width=2)
    assert seen == ["CCOC(C)=O", ""]  # the products given are the target, per reaction
    assert list(table.columns) == COLUMNS
    assert {c: str(t) for c, t in table.dtypes.items()} == DTYPES
    assert table["row"].tolist() == [0, 1, 3]  # line / data row; the blank one skipped
    ids = ["a", "b", "c"] if ".csv" in name or ".tsv" in name else ["0", "1", "3"]
    assert table["id"].tolist() == ids  # the table's id column, else the row
    assert table["reaction"].tolist() == ["CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O", "not", "CO.[Na+]>>"]
    assert table["target"].tolist() == ["CCOC(C)=O", "", ""]
    assert table["target_rank"].tolist() == [1, pd.NA, pd.NA]
    assert table["prediction_1"].tolist() == ["CCOC(C)=O", "", ""]
    assert table["score_2"].tolist()[0] == -1.5 and table["score_2"].isna().tolist()[1:] == [
        True,
        True,
    ]
    assert table["error"].tolist() == [
        "",
        "expected 'reactants>reagents>products' (2 '>' separators), found 0",
        NO_PRODUCT,
    ]
    assert metrics["reactions"] == 1 and metrics["top_1"] == 100.0  # the one with products
    assert output.read_text().splitlines() == [
        ",".join(COLUMNS),
        f"0,{ids[0]},CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O,CCOC(C)=O,1,False,CCOC(C)=O,-0.25,CCO,-1.5,",
        f"1,{ids[1]},not,,,,,,,,\"expected 'reactants>reagents>products' (2 '>' separators), "
        'found 0"',
        f"3,{ids[2]},CO.[Na+]>>,,,,,,,,{NO_PRODUCT}",  # no prediction: top1_invalid empty
    ]


def test_predict_file_scores_a_file_whose_reactions_all_have_products(tmp_path, monkeypatch):
    _predicted(monkeypatch)
    path = tmp_path / "scored.csv"
    path.write_text("reaction\nCC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O\nCCO.CC(=O)O>>CCO\n")
    table, metrics = predict_file(CHECKPOINT, path, tmp_path / "out.csv", top_k=2, beam_width=2)
    assert table["target_rank"].tolist() == [1, 2]
    assert metrics == {  # top-k for k <= top_k only: no top_3, top_5 (the top_2 again)
        "top_1": 50.0, "top_2": 100.0, "invalid_top1": 0.0, "invalid_beam": 0.0, "reactions": 2
    }  # fmt: skip


def test_predict_file_refuses_a_table_without_a_reaction_column(tmp_path):
    path = tmp_path / "molecules.csv"
    path.write_text("smiles\nCCO\n")
    with pytest.raises(ValueError, match="no reaction column"):
        predict_file(CHECKPOINT, path, tmp_path / "out.csv")
