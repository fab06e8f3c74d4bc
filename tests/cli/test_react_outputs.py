"""What ``chemgraph react`` prints and writes: the top-k products with scores of each reaction,
a per-reaction message when no valid product was decoded or the reaction was not read, and the
--output table (one row per record, in input order, integer rows, an error column). The frozen
checkpoint was trained on a few reactions: these tests pin formats, not accuracy."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from chemgraph.cli import main
from chemgraph.cli.react import reaction_lines
from chemgraph.jobs.react import INPUT_FORMAT
from chemgraph.reactions.predictions import NO_PRODUCT
from chemgraph.reactions.translator_prediction import predict_file

FROZEN = str(
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "checkpoints"
    / "reaction_grat_test_fixture.ckpt"
)
ESTER_INPUT = "CC(=O)Cl.OCC>c1ccncc1>"
SCORE = r"-?\d+\.\d{4}"
SEPARATORS = "expected 'reactants>reagents>products' (2 '>' separators), found 0"


def _react(*argv: str) -> int:
    return main(["react", *argv, "--decoder", "generate", "--beam-width", "4", "--top-k", "2"])


def test_one_reaction_prints_ranked_products_with_scores(capsys):
    assert _react(ESTER_INPUT, "--checkpoint", FROZEN) == 0
    lines = capsys.readouterr().out.splitlines()
    assert 1 <= len(lines) <= 2
    for rank, line in enumerate(lines, 1):
        assert re.fullmatch(rf"{rank}\t\S+\t{SCORE}", line), line
    assert lines[0].split("\t")[1] == "CCOC(C)=O"  # what the fixture learned


def test_one_reaction_without_a_valid_product_says_so_and_exits_2(capsys, untrained_checkpoint):
    assert _react(ESTER_INPUT, "--checkpoint", untrained_checkpoint) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"chemgraph react: error: no product predicted for '{ESTER_INPUT}': no valid product "
        "graph was decoded; check that the reaction SMILES holds every reactant "
        "('reactants>reagents>') and that they can react as written\n"
    )
    assert NO_PRODUCT == "no valid product graph was decoded"


def test_a_salt_without_a_reaction_is_not_predicted_by_the_shipped_model(capsys):
    """A newcomer's case: the default decoder finds no valid product for [Na+].[Cl-]>>; the
    command says so and exits 2, where it printed the message and exited 0."""
    assert main(["react", "[Na+].[Cl-]>>"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"chemgraph react: error: no product predicted for '[Na+].[Cl-]>>': {NO_PRODUCT};"
    )


def test_input_file_prints_each_reaction_then_the_summary(tmp_path, capsys):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text(
        f"{ESTER_INPUT}\nnot a reaction\n\nCCN.O=C(Cl)c1ccccc1>>CCNC(=O)c1ccccc1 amide\n"
        "O->[Mg+2]<-O.CCBr>>CCO\n"
    )
    output = tmp_path / "predictions.csv"
    assert _react("--input", str(inputs), "--checkpoint", FROZEN, "--output", str(output)) == 0
    lines = capsys.readouterr().out.splitlines()
    table = pd.read_csv(output, keep_default_na=False)
    assert table["row"].tolist() == [0, 1, 3, 4]
    assert table["error"].tolist()[:3] == ["", SEPARATORS, ""]
    assert lines[0] == f"row 0: {ESTER_INPUT}"
    assert re.fullmatch(rf"  1\tCCOC\(C\)=O\t{SCORE}", lines[1])
    assert lines[lines.index("row 1: not") + 1] == f"  not predicted: {SEPARATORS}"
    amide = lines.index("row 3: CCN.O=C(Cl)c1ccccc1>>CCNC(=O)c1ccccc1")
    assert re.fullmatch(rf"  1\tCCNC\(=O\)c1ccccc1\t{SCORE}\t= target", lines[amide + 1])
    assert lines[-5] == (
        "  not predicted: graph: bond 0 has type DATIVE; representable: single, double, "
        "triple, aromatic"
    )
    valid = int((table["prediction_1"] != "").sum())
    assert valid == 2
    assert lines[-4] == (
        "4 lines read: 2 decoded (a valid product predicted), 0 without a valid product, 2 "
        "not read or encoded; of the 2 decoded, 0 with a best-scoring graph that was not a "
        "valid product (a radical or bare atom the reactants lack, or atoms they do not hold) "
        "and 0 with no confident product (the best product's probability below the model's "
        f"threshold) (written to {output}; its error column says why a line has no prediction)"
    )
    # the amide alone of the decoded reactions has a product: the accuracy is over it
    assert lines[-3] == (
        "top-k accuracy over 1 of 4 lines (the reactions read with a known product):"
    )
    assert lines[-2].split() == ["top-1", "top-2", "invalid-top1"]  # --top-k 2: no top-3
    assert lines[-1].split() == ["100.00%", "100.00%", "0.00%"]


def test_input_file_without_valid_products_says_so_per_reaction(
    tmp_path, capsys, untrained_checkpoint
):
    inputs = tmp_path / "reactions.csv"
    inputs.write_text("id,reaction\na,CC(=O)Cl.OCC>c1ccncc1>\nb,CO.[Na+]>>\nc,CCO>>CC=O\n")
    output = tmp_path / "predictions.csv"
    assert (
        _react(
            "--input", str(inputs), "--checkpoint", untrained_checkpoint, "--output", str(output)
        )
        == 2
    )
    captured = capsys.readouterr()
    # none of the file's reactions got a prediction: reported per row, then a user error
    assert captured.err == (
        f"chemgraph react: error: none of the 3 lines of {inputs} got a prediction (3 "
        f"without a valid product, 0 not read or encoded; {output} gives each one's reason in "
        "its error column)\n"
    )
    assert captured.out.splitlines() == [
        "row 0 (id a): CC(=O)Cl.OCC>c1ccncc1>",
        f"  {NO_PRODUCT}",
        "row 1 (id b): CO.[Na+]>>",
        f"  {NO_PRODUCT}",
        "row 2 (id c): CCO>>CC=O",
        f"  {NO_PRODUCT}",
        "3 lines read: 0 decoded (a valid product predicted), 3 without a valid product, 0 "
        "not read or encoded; of the 0 decoded, 0 with a best-scoring graph that was not a "
        "valid product (a radical or bare atom the reactants lack, or atoms they do not hold) "
        "and 0 with no confident product (the best product's probability below the model's "
        f"threshold) (written to {output}; its error column says why a line has no prediction)",
        "top-k accuracy over 1 of 3 lines (the reactions read with a known product):",
        "         top-1         top-2  invalid-top1",
        "         0.00%         0.00%       100.00%",
    ]
    assert output.read_text().splitlines() == [
        "row,id,reaction,target,target_rank,top1_invalid,prediction_1,score_1,prediction_2,"
        "score_2,error",
        f"0,a,CC(=O)Cl.OCC>c1ccncc1>,,,,,,,,{NO_PRODUCT}",  # no prediction: top1_invalid empty
        f"1,b,CO.[Na+]>>,,,,,,,,{NO_PRODUCT}",
        f"2,c,CCO>>CC=O,CC=O,,,,,,,{NO_PRODUCT}",
    ]


def test_show_limits_the_printed_reactions(tmp_path, capsys, untrained_checkpoint):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text("CCO>>CC=O\n" * 5)
    output = tmp_path / "predictions.csv"
    argv = ["--input", str(inputs), "--checkpoint", untrained_checkpoint, "--output", str(output)]
    assert _react(*argv, "--show", "2") == 2  # no reaction got a prediction
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        "row 0: CCO>>CC=O",
        f"  {NO_PRODUCT}",
        "row 1: CCO>>CC=O",
        f"  {NO_PRODUCT}",
        f"... 3 more reactions in {output}",
    ]
    assert lines[5].startswith("5 lines read: 0 decoded (a valid product predicted), 5 without")
    # every reaction has products: top-k accuracy follows
    assert lines[6] == (
        "top-k accuracy over 5 of 5 lines (the reactions read with a known product):"
    )
    assert "top-1" in lines[7]
    assert _react(*argv, "--show", "0", "--overwrite") == 2
    assert capsys.readouterr().out.splitlines()[0].startswith("5 lines read:")
    assert _react(*argv, "--show", "-1") == 2
    assert "--show must be at least 0, got -1" in capsys.readouterr().err


def test_reaction_lines_mark_the_target():
    table = pd.DataFrame(
        {
            "row": [2], "id": ["2"], "reaction": ["CCO.CC(=O)O>>CCOC(C)=O"],
            "target": ["CCOC(C)=O"],
            "target_rank": pd.array([2], dtype="Int64"), "top1_invalid": [False],
            "prediction_1": ["CCO"], "score_1": [-0.5], "prediction_2": ["CCOC(C)=O"],
            "score_2": [-1.25], "error": [""],
        }
    )  # fmt: skip
    assert reaction_lines(table, 2) == [
        "row 2: CCO.CC(=O)O>>CCOC(C)=O",
        "  1\tCCO\t-0.5000",
        "  2\tCCOC(C)=O\t-1.2500\t= target",
    ]
    named = reaction_lines(table.assign(id=["R-7"]), 2)[0]
    assert named == "row 2 (id R-7): CCO.CC(=O)O>>CCOC(C)=O"
    assert reaction_lines(table.assign(id=[""]), 2)[0] == "row 2: CCO.CC(=O)O>>CCOC(C)=O"


def test_input_table_without_a_reaction_column_is_one_error_line(tmp_path, capsys):
    inputs = tmp_path / "molecules.csv"
    inputs.write_text("smiles\nCCO\n")
    argv = ["--input", str(inputs), "--checkpoint", FROZEN, "--output", str(tmp_path / "o.csv")]
    assert _react(*argv) == 2
    assert "no reaction column; the header must name one of reaction, reactions" in (
        capsys.readouterr().err
    )


def test_react_input_refuses_an_existing_output_and_a_missing_input(tmp_path, capsys):
    reactions = tmp_path / "reactions.txt"
    reactions.write_text("CCN.O=C(Cl)c1ccccc1>>CCNC(=O)c1ccccc1\n")
    output = tmp_path / "out.csv"
    output.write_text("my earlier results\n")
    assert _react("--input", str(reactions), "--checkpoint", FROZEN, "--output", str(output)) == 2
    assert f"{output} exists; pass --overwrite" in capsys.readouterr().err
    assert output.read_text() == "my earlier results\n"  # untouched
    assert _react("--input", str(reactions), "--checkpoint", FROZEN, "--output", str(output),
                  "--overwrite") == 0  # fmt: skip
    assert pd.read_csv(output)["row"].tolist() == [0]
    missing = tmp_path / "missing.txt"
    assert _react("--input", str(missing), "--checkpoint", FROZEN, "--output", "x.csv") == 2
    assert f"input {missing} does not exist" in capsys.readouterr().err


def test_an_empty_input_file_is_a_user_error(tmp_path, capsys, untrained_checkpoint):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text("\n  \n")
    output = tmp_path / "predictions.csv"
    argv = ["--input", str(inputs), "--checkpoint", untrained_checkpoint, "--output", str(output)]
    assert _react(*argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"chemgraph react: error: {inputs} holds no reactions; {INPUT_FORMAT}\n"
    )
    assert "lines read" not in captured.out
    assert not output.exists()


def test_an_input_file_whose_every_reaction_is_rejected_is_a_user_error(
    tmp_path, capsys, untrained_checkpoint
):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text("not a reaction\nO->[Mg+2]<-O.CCBr>>CCO\n")
    output = tmp_path / "predictions.csv"
    argv = ["--input", str(inputs), "--checkpoint", untrained_checkpoint, "--output", str(output)]
    assert _react(*argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"chemgraph react: error: none of the 2 lines of {inputs} could be read and "
        f"encoded ({output} gives each one's reason in its error column); fix them, or "
        f"{INPUT_FORMAT}\n"
    )
    assert "lines read" not in captured.out
    table = pd.read_csv(output, keep_default_na=False)  # the rejected rows, with their reasons
    assert table["row"].tolist() == [0, 1]
    assert table["error"][0] == SEPARATORS
    assert table["error"][1].startswith("graph: bond 0 has type DATIVE")


def test_top_k_accuracy_over_the_reactions_with_a_known_product(tmp_path, capsys):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text(
        f"CCN.O=C(Cl)c1ccccc1>>CCNC(=O)c1ccccc1\n{ESTER_INPUT}\nnot a reaction\n"
        "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O\n"
    )
    output = tmp_path / "predictions.csv"
    argv = ["--input", str(inputs), "--checkpoint", FROZEN, "--output", str(output), "--show", "0"]
    assert _react(*argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("4 lines read: 3 decoded")
    assert lines[1] == (
        "top-k accuracy over 2 of 4 lines (the reactions read with a known product):"
    )
    assert lines[2].split() == ["top-1", "top-2", "invalid-top1"]  # only k <= --top-k 2
    assert lines[3].split() == ["100.00%", "100.00%", "0.00%"]


@pytest.mark.parametrize(("top_k", "columns"), [(1, ["top-1"]), (3, ["top-1", "top-2", "top-3"])])
def test_top_k_accuracy_of_the_centre_decoder_stops_at_top_k(tmp_path, capsys, top_k, columns):
    """The reaction-centre decoder (the shipped model) reports top-k accuracy for k <= --top-k
    only: a reaction has no prediction past --top-k."""
    inputs = tmp_path / "reactions.txt"
    inputs.write_text("CC(=O)Cl.OCC>>CCOC(C)=O\nCCN.O=C(Cl)c1ccccc1>>CCNC(=O)c1ccccc1\n")
    output = tmp_path / "predictions.csv"
    argv = ["react", "--input", str(inputs), "--output", str(output), "--show", "0"]
    assert main([*argv, "--top-k", str(top_k)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].split() == [*columns, "invalid-top1"]
    table = pd.read_csv(output, keep_default_na=False)
    for k, value in zip(range(1, top_k + 1), lines[-1].split()):  # agrees with target_rank
        hits = (pd.to_numeric(table["target_rank"]).fillna(99) <= k).mean()
        assert value == f"{100 * hits:.2f}%"


def test_predict_file_scores_the_reactions_that_hold_products(tmp_path):
    """Two of four reactions hold products: the metrics are over those two, and agree with
    their ``target_rank`` in the table."""
    inputs = tmp_path / "reactions.txt"
    inputs.write_text(
        "CCN.O=C(Cl)c1ccccc1>>CCNC(=O)c1ccccc1\nCC(=O)Cl.OCC>c1ccncc1>\n"
        "CCO>>CC(=O)OCC\nCC(=O)Cl.OCC>c1ccncc1>\n"
    )
    table, metrics = predict_file(FROZEN, inputs, tmp_path / "o.csv", 2, 4)
    assert metrics["reactions"] == 2
    with_products = table[table["target"] != ""]
    assert len(with_products) == 2
    for k in (1, 2):
        hits = (with_products["target_rank"].fillna(99) <= k).mean()
        assert metrics[f"top_{k}"] == pytest.approx(100 * hits)
    inputs.write_text("CC(=O)Cl.OCC>c1ccncc1>\n")
    assert predict_file(FROZEN, inputs, tmp_path / "p.csv", 2, 4)[1] is None


def test_output_needs_input_and_a_csv_name(tmp_path, capsys):
    output = tmp_path / "single.csv"
    assert _react(ESTER_INPUT, "--checkpoint", FROZEN, "--output", str(output)) == 2
    assert "--output goes with --input FILE" in capsys.readouterr().err
    assert not output.exists()
    assert _react(ESTER_INPUT, "--workers", "2") == 2
    assert "--workers goes with --input FILE" in capsys.readouterr().err
    assert _react(ESTER_INPUT, "--id-column", "id") == 2
    assert "--id-column goes with --input FILE" in capsys.readouterr().err
    inputs = tmp_path / "reactions.txt"
    inputs.write_text(ESTER_INPUT + "\n")
    parquet = tmp_path / "predictions.parquet"
    argv = ["--input", str(inputs), "--checkpoint", FROZEN, "--output", str(parquet)]
    assert _react(*argv) == 2
    assert "react writes CSV; give a .csv or .csv.gz" in capsys.readouterr().err
    assert not parquet.exists()


def test_a_run_folder_stands_for_its_best_checkpoint(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(FROZEN, folder / "best.ckpt")
    assert _react(ESTER_INPUT, "--checkpoint", str(folder)) == 0
    assert capsys.readouterr().out.splitlines()[0].split("\t")[1] == "CCOC(C)=O"


def test_react_keeps_rdkit_off_the_terminal_and_counts_only_predictions_as_decoded(tmp_path, capfd):
    """The centre decoder on reactions RDKit logs about (an unclosed ring, a bare proton) and
    one whose candidates hold no valid product ([Xe]>>): nothing of RDKit's reaches stderr (the
    reasons are in the error column), and [Xe]>> is not counted as decoded."""
    inputs = tmp_path / "reactions.txt"
    inputs.write_text("C1CC>> ring\nCC(=O)OCC.O>[H+]> hydrolysis\n[Xe]>> xenon\n")
    output = tmp_path / "predictions.csv"
    assert main(["react", "--input", str(inputs), "--output", str(output), "--show", "0"]) == 0
    captured = capfd.readouterr()
    # no "[hh:mm:ss] SMILES Parse Error: ...", no "WARNING: ...": only chemgraph's own warning
    assert captured.err == (
        "warning: 1 reaction (row 2) holds elements without an atom feature of the model's "
        "own (column unknown_elements): predicted outside its training domain\n"
    )
    table = pd.read_csv(output, keep_default_na=False)
    assert table["error"].tolist() == [
        "reactants molecule 1 of 1 ('C1CC'): SMILES parse error: unclosed ring for input: "
        "'C1CC'", "", NO_PRODUCT
    ]  # fmt: skip
    assert captured.out.startswith(
        "3 lines read: 1 decoded (a valid product predicted), 1 without a valid product, 1 "
        "not read or encoded;"
    )


def test_an_empty_reaction_field_shows_the_field_not_the_row(tmp_path, capsys):
    inputs = tmp_path / "reactions.csv"
    inputs.write_text("id,reaction\n1,CC(=O)Cl.OCC>>\n2,\n3, \n")
    output = tmp_path / "predictions.csv"
    assert main(["react", "--input", str(inputs), "--output", str(output), "--top-k", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("  no confident product")  # the ester at 0.44
    assert lines[3:7] == [
        "row 1 (id 2): ", "  not predicted: empty 'reaction' field",
        "row 2 (id 3):  ", "  not predicted: empty 'reaction' field",
    ]  # fmt: skip
    table = pd.read_csv(output, keep_default_na=False)
    assert table["reaction"].tolist() == ["CC(=O)Cl.OCC>>", "", " "]  # not "2," or "3, "


# ``chemgraph react`` with the shipped reaction-centre model: a newcomer's findings


def test_a_row_without_a_prediction_has_no_top1_invalid_and_the_summary_counts_lines(
    tmp_path, capsys
):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text(f"{ESTER_INPUT}CCOC(C)=O\n[Na+].[Cl-]>>\nnot a reaction\n")
    output = tmp_path / "predictions.csv"
    argv = ["react", "--input", str(inputs), "--output", str(output), "--top-k", "2"]
    assert main([*argv, "--show", "0"]) == 0
    table = pd.read_csv(output, keep_default_na=False)
    assert table["top1_invalid"].tolist() == ["False", "", ""]  # [Na+].[Cl-]>>: no prediction
    assert table["error"].tolist() == ["", NO_PRODUCT, SEPARATORS]
    assert capsys.readouterr().out.splitlines()[0] == (
        "3 lines read: 1 decoded (a valid product predicted), 1 without a valid product, 1 not "
        "read or encoded; of the 1 decoded, 0 with a best-scoring graph that was not a valid "
        "product (a radical or bare atom the reactants lack, or atoms they do not hold) and 1 "
        "with no confident product (the best product's probability below the model's "
        f"threshold) (written to {output}; its error column says why a line has no prediction)"
    )  # the ester's probability, 0.44, is below the shipped model's threshold


def test_quiet_input_prints_nothing_but_one_reaction_still_prints(tmp_path, capsys):
    inputs = tmp_path / "reactions.txt"
    inputs.write_text(f"{ESTER_INPUT}\n")
    output = tmp_path / "predictions.csv"
    assert main(["react", "--quiet", "--input", str(inputs), "--output", str(output)]) == 0
    assert capsys.readouterr().out == ""
    assert pd.read_csv(output)["prediction_1"].tolist() == ["CCOC(C)=O"]
    assert main(["react", "--quiet", ESTER_INPUT, "--top-k", "1"]) == 0
    assert capsys.readouterr().out.split("\t")[:2] == ["1", "CCOC(C)=O"]


def test_one_reaction_with_its_product_marks_the_matching_rank(capsys):
    assert main(["react", f"{ESTER_INPUT}CCOC(C)=O", "--top-k", "2"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].split("\t")[1] == "CCOC(C)=O" and lines[0].endswith("\t= target")
    assert not lines[1].endswith("= target")
    assert captured.err == ""
    assert main(["react", "CCO>>CCCC", "--top-k", "2"]) == 0
    captured = capsys.readouterr()
    assert "= target" not in captured.out
    assert captured.err == "warning: the given product CCCC is not among the 2 predictions\n"


def test_an_unparsable_reaction_names_the_molecule_and_rdkits_reason(capsys):
    assert main(["react", "C1CC(>>"]) == 2
    assert capsys.readouterr().err == (
        "chemgraph react: error: cannot parse reaction 'C1CC(>>': reactants molecule 1 of 1 "
        "('C1CC('): SMILES parse error: syntax error while parsing: C1CC( | check for mistakes "
        "around position 5: | C1CC( | ~~~~^ | Failed parsing SMILES 'C1CC(' for input: "
        "'C1CC('\n"
    )
    assert main(["react", "CCO>c1ccncc1.[Na+].C1CC>"]) == 2
    assert "reagents molecule 3 of 3 ('C1CC'): SMILES parse error: unclosed ring" in (
        capsys.readouterr().err
    )


def test_reagent_field_atoms_give_atoms_and_stay_reagents(tmp_path, capsys):
    """Issue 46: molecules above the arrow are atom sources, as USPTO-MIT's reagents among its
    reactants are: toluene with HNO3 above the arrow is nitrated with HNO3's nitrogen (atom 8:
    toluene's atoms are 0-6, HNO3's =O is 7), and --output still lists HNO3 and H2SO4 as
    reagents."""
    from chemgraph.chem.reaction_edits import mapped_reaction

    nitration = "Cc1ccccc1>O=[N+]([O-])O.OS(=O)(=O)O>"
    assert mapped_reaction(nitration).reagent_atoms == frozenset(range(7, 16))
    assert mapped_reaction("CC(=O)Cl.OCC.c1ccncc1>>").reagent_atoms == frozenset()
    assert main(["react", nitration, "--top-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = lines[0].split("\t")
    assert first[1] == "Cc1ccccc1[N+](=O)[O-]"
    atoms = {int(a) for edit in first[3].split(";") for a in edit.split(":")[0].split("-")}
    assert 8 in atoms
    path = tmp_path / "reactions.txt"
    path.write_text(nitration + "\n")
    out = tmp_path / "out.csv"
    assert main(["react", "--input", str(path), "--output", str(out), "--quiet"]) == 0
    table = pd.read_csv(out, keep_default_na=False)
    assert table["reagents"].tolist() == ["O=[N+]([O-])O.OS(=O)(=O)O"]
    # 2-nitrotoluene at 0.07: first, but below the shipped model's threshold of 0.542
    assert table["prediction_1"].tolist() == ["Cc1ccccc1[N+](=O)[O-]"]
    assert table["outcome"].tolist() == ["no confident product"]
    assert table["undetermined_stereo_1"].tolist() == [0]


def test_a_bare_hydrogen_in_one_reaction_keeps_rdkit_off_the_terminal(capfd):
    assert main(["react", "CC(=O)Cl.OCC.[H]>>", "--top-k", "1", "--quiet"]) == 0
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out.startswith("1\tCCOC(C)=O\t")
