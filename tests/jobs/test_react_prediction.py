"""chemgraph.reactions.translator_prediction: top-k metrics, decoding beams, predicting a file
of reactions (also through ``chemgraph react``)."""

from __future__ import annotations

import pandas as pd
import pytest

from chemgraph.chem.validity import ReactionInputs
from chemgraph.cli import main
from chemgraph.reactions import translator_prediction
from chemgraph.reactions.predictions import NO_PRODUCT, ReactionPrediction, top_k_metrics
from chemgraph.reactions.translator_prediction import decode_hypotheses, predict_file


def test_top_k_metrics_hand_computed():
    predictions = [
        ReactionPrediction(["CCO", "CC"], [-0.1, -0.2], False, 0),  # hit at rank 1
        ReactionPrediction(["C", "[Na+].C[O-]"], [-0.1, -0.3], False, 1),  # rank 2, any order
        ReactionPrediction([], [], True, 8),  # nothing valid
        ReactionPrediction(["N", "O", "S", "CCO"], [-1, -2, -3, -4], False, 0),  # rank 4
    ]
    targets = ["CCO", "C[O-].[Na+]", "CCO", "CCO"]
    metrics = top_k_metrics(predictions, targets)
    assert metrics["top_1"] == 25.0 and metrics["top_2"] == 50.0 and metrics["top_3"] == 50.0
    assert metrics["top_5"] == 75.0
    assert metrics["invalid_top1"] == 25.0
    assert metrics["invalid_beam"] == pytest.approx(100 * 9 / 17)


class _Hypothesis:
    def __init__(self, labels, bonds, score):
        self.labels, self.bonds, self.score = labels, bonds, score


def test_predictions_are_deduplicated_and_invalid_graphs_counted():
    tokens = ["<PAD>", "<UNK>", "<CLS>", "<REACTANT>", "<REAGENT>", "<PRODUCT>", "<G>", "<EOG>",
              "[CH3]", "[OH]", "[CH2]", "[C]"]  # fmt: skip

    class Vocabulary:
        pass

    vocabulary = Vocabulary()
    vocabulary.tokens = tokens
    hypotheses = [
        _Hypothesis([11], [], -0.1),  # bare carbon without hydrogens: valid SMILES "[C]"
        _Hypothesis([8, 10, 9], [(0, 1, 1), (1, 2, 1)], -0.2),  # CCO
        _Hypothesis([9, 10, 8], [(0, 1, 1), (1, 2, 1)], -0.3),  # OCC = CCO again: dropped
        _Hypothesis([8, 8], [(0, 1, 2)], -0.4),  # CH3=CH3: invalid valence
        _Hypothesis([1], [], -0.5),  # <UNK>: not an atom label
    ]
    prediction = decode_hypotheses(hypotheses, vocabulary, top_k=5)
    assert prediction.smiles == ["[C]", "CCO"]
    assert prediction.scores == [-0.1, -0.2]
    assert prediction.num_invalid == 2 and not prediction.top1_invalid


def test_radical_top1_counts_as_invalid_top1():
    """Issue 27: every top-1 was [CH3] or [Cl] and invalid_top1 said 0.0."""
    tokens = ["<PAD>", "<UNK>", "<CLS>", "<REACTANT>", "<REAGENT>", "<PRODUCT>", "<G>", "<EOG>",
              "[CH3]", "[OH]", "[CH2]", "[Cl]"]  # fmt: skip

    class Vocabulary:
        pass

    vocabulary = Vocabulary()
    vocabulary.tokens = tokens
    hypotheses = [
        _Hypothesis([8], [], -0.1),  # [CH3]: a methyl radical
        _Hypothesis([11], [], -0.15),  # [Cl]: a chlorine atom
        _Hypothesis([8, 10, 9], [(0, 1, 1), (1, 2, 1)], -0.2),  # CCO
    ]
    inputs = ReactionInputs.from_smiles(["CCCl", "[OH-].[Na+]"])
    prediction = decode_hypotheses(hypotheses, vocabulary, top_k=5, inputs=inputs)
    assert prediction.smiles == ["CCO"] and prediction.scores == [-0.2]
    assert prediction.top1_invalid and prediction.num_invalid == 2
    metrics = top_k_metrics([prediction], ["CCO"])
    assert metrics["invalid_top1"] == 100.0 and metrics["top_1"] == 100.0
    # without the reactants only RDKit's check applies: the radicals pass it
    assert decode_hypotheses(hypotheses, vocabulary, top_k=5).smiles == ["[CH3]", "[Cl]", "CCO"]


def test_strained_graphs_are_invalid_for_the_generative_decoder():
    """Issue 46: toluene with HNO3 gave benzocyclopropene; the beam search's check
    (decode_hypotheses, and predict_reactions' accept) is product_problem, strain included."""
    tokens = ["<PAD>", "<UNK>", "<CLS>", "<REACTANT>", "<REAGENT>", "<PRODUCT>", "<G>", "<EOG>",
              "[c]", "[cH]", "[CH2]", "[CH3]"]  # fmt: skip

    class Vocabulary:
        pass

    vocabulary = Vocabulary()
    vocabulary.tokens = tokens
    ring = [(0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 4, 4), (4, 5, 4), (0, 5, 4)]
    hypotheses = [
        # benzocyclopropene c1ccc2c(c1)C2: CH2 bonded to two neighbouring ring carbons
        _Hypothesis([8, 9, 9, 9, 9, 8, 10], [*ring, (0, 6, 1), (5, 6, 1)], -0.1),
        _Hypothesis([8, 9, 9, 9, 9, 9, 11], [*ring, (0, 6, 1)], -0.2),  # toluene
    ]
    inputs = ReactionInputs.from_smiles(["Cc1ccccc1", "O=[N+]([O-])O.OS(=O)(=O)O"])
    prediction = decode_hypotheses(hypotheses, vocabulary, top_k=5, inputs=inputs)
    assert prediction.smiles == ["Cc1ccccc1"]
    assert prediction.top1_invalid and prediction.num_invalid == 1


def test_react_user_errors_are_one_line(tmp_path, capsys):
    not_a_checkpoint = tmp_path / "table.csv"
    not_a_checkpoint.write_text("smiles\nCCO\n")
    reaction = "CC(=O)Cl.OCC>c1ccncc1>"
    assert (
        main(["react", reaction, "--decoder", "generate", "--checkpoint", str(not_a_checkpoint)])
        == 2
    )
    assert "not a readable PyTorch checkpoint" in capsys.readouterr().err
    assert (
        main(
            [
                "react",
                reaction,
                "--decoder",
                "generate",
                "--checkpoint",
                str(tmp_path / "missing.ckpt"),
            ]
        )
        == 2
    )
    assert "does not exist" in capsys.readouterr().err
    for option in ("--top-k", "--beam-width", "--batch-size"):
        assert (
            main(
                ["react", reaction, "--decoder", "generate", "--checkpoint", "x.ckpt", option, "0"]
            )
            == 2
        )
        assert f"{option} must be at least 1, got 0" in capsys.readouterr().err


def _react_file(inputs, checkpoint, output) -> int:
    return main(["react", "--input", str(inputs), "--decoder", "generate", "--checkpoint",
                 checkpoint, "--output", str(output), "--beam-width", "3", "--top-k", "2",
                 "--overwrite"])  # fmt: skip


def test_react_input_counts_no_valid_product_and_writes_integer_rows(
    tmp_path, capsys, untrained_checkpoint
):
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("CC(=O)Cl.OCC>c1ccncc1>\nCO.[Na+]>>\nCCO>>CC=O\n")  # every line parses
    output = tmp_path / "predictions.csv"
    assert _react_file(inputs, untrained_checkpoint, output) == 2  # none got a prediction
    out = capsys.readouterr().out
    assert (
        "3 lines read: 0 decoded (a valid product predicted), 3 without a valid product, 0 "
        "not read or encoded;"
    ) in out
    text = output.read_text().splitlines()
    assert text[0] == (
        "row,id,reaction,target,target_rank,top1_invalid,prediction_1,score_1,prediction_2,"
        "score_2,error"
    )
    assert [line.split(",")[0] for line in text[1:]] == ["0", "1", "2"]  # not 0.0, 1.0, 2.0
    assert text[1] == f"0,0,CC(=O)Cl.OCC>c1ccncc1>,,,,,,,,{NO_PRODUCT}"


def test_react_input_one_row_per_reaction_in_input_order(tmp_path, capsys, untrained_checkpoint):
    inputs = tmp_path / "inputs.txt"
    inputs.write_text(
        "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O\n"
        "CO.[Na+]>>C[O-].[Na+]\n"
        "CCO>>CC(=O\n"
        "\n"
        "O->[Mg+2]<-O.CCBr>>CCO 1-2\n"
    )
    output = tmp_path / "predictions.csv"
    table, metrics = predict_file(untrained_checkpoint, inputs, output, top_k=2, beam_width=3)
    assert table["row"].tolist() == [0, 1, 2, 4]
    assert table["reaction"].tolist() == [
        "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O",
        "CO.[Na+]>>C[O-].[Na+]",
        "CCO>>CC(=O",
        "O->[Mg+2]<-O.CCBr>>CCO",
    ]
    assert table["target"].tolist() == ["CCOC(C)=O", "C[O-].[Na+]", "", ""]
    assert table["top1_invalid"].tolist() == [pd.NA] * 4  # no row has a prediction
    assert table["target_rank"].isna().all()
    assert table["prediction_1"].tolist() == table["prediction_2"].tolist() == [""] * 4
    assert table["score_1"].isna().all()
    errors = table["error"].tolist()
    assert errors[:2] == [NO_PRODUCT, NO_PRODUCT]  # decoded, but no valid product
    assert errors[2].startswith("products molecule 1 of 1 ('CC(=O'): SMILES parse error")
    # read (the dative bonds are not arrows), but the graphs have no dative bond type
    assert errors[3] == (
        "graph: bond 0 has type DATIVE; representable: single, double, triple, aromatic"
    )
    assert {str(table[c].dtype) for c in ("row", "target_rank", "top1_invalid", "score_1")} == {
        "int64",
        "Int64",
        "boolean",
        "float64",
    }
    assert metrics["reactions"] == 2 and metrics["top_1"] == 0.0
    assert metrics["invalid_top1"] == 100.0
    written = pd.read_csv(output, keep_default_na=False)
    assert written["row"].tolist() == [0, 1, 2, 4]
    assert written["top1_invalid"].tolist() == ["", "", "", ""]

    assert _react_file(inputs, untrained_checkpoint, output) == 2  # none got a prediction
    out = capsys.readouterr().out
    assert (
        "4 lines read: 0 decoded (a valid product predicted), 2 without a valid product, 2 "
        "not read or encoded;"
    ) in out
    assert "invalid-top1" in out and "100.00%" in out


def test_react_input_target_rank_written_as_integer(
    tmp_path, capsys, monkeypatch, untrained_checkpoint
):
    def hand_made(module, items, beam_width, top_k, batch_size):
        assert [item.product_smiles for item in items] == ["CCOC(C)=O", "C[O-].[Na+]", "CC=O"]
        return [
            ReactionPrediction(["CCOC(C)=O", "CCO"], [-0.1, -0.9], False, 1),  # rank 1
            ReactionPrediction(["CO", "[Na+].C[O-]"], [-0.2, -0.3], False, 0),  # rank 2
            ReactionPrediction(["CC"], [-0.5], True, 2),  # missed, top-1 graph invalid
        ]

    monkeypatch.setattr(translator_prediction, "predict_reactions", hand_made)
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O\nCO.[Na+]>>C[O-].[Na+]\nCCO>>CC=O\n")
    output = tmp_path / "predictions.csv"
    assert _react_file(inputs, untrained_checkpoint, output) == 0
    assert (
        "3 lines read: 3 decoded (a valid product predicted), 0 without a valid product, 0 "
        "not read or encoded;"
    ) in capsys.readouterr().out
    text = output.read_text().splitlines()
    assert text[1:] == [
        "0,0,CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O,CCOC(C)=O,1,False,CCOC(C)=O,-0.1,CCO,-0.9,",
        "1,1,CO.[Na+]>>C[O-].[Na+],C[O-].[Na+],2,False,CO,-0.2,[Na+].C[O-],-0.3,",
        "2,2,CCO>>CC=O,CC=O,,True,CC,-0.5,,,",
    ]
