"""The output-folder rule of the commands that write one (`train`, `recipe run`): a new or empty
folder, or `--overwrite`."""

import pytest

from chemgraph.cli import main


def test_recipe_run_refuses_a_non_empty_out(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "runs.csv").write_text("earlier results")
    assert main(["recipe", "run", "dft_to_gw", "--out", str(out)]) == 2
    assert f"{out} exists and is not empty; choose a new --out, or pass --overwrite" in (
        capsys.readouterr().err
    )
    assert (out / "runs.csv").read_text() == "earlier results"


def test_output_folder_rule(tmp_path):
    from chemgraph._output import check_output_folder

    check_output_folder(tmp_path / "new", "--out")  # absent: fine
    check_output_folder(tmp_path, "--out")  # empty: fine
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ValueError, match=r"not empty; choose a new --output$"):
        check_output_folder(tmp_path, "--output")  # a command without --overwrite
    check_output_folder(tmp_path, "--out", overwrite=True)
    with pytest.raises(ValueError, match="a.txt is a file, not a folder; choose a new --out"):
        check_output_folder(tmp_path / "a.txt", "--out", overwrite=True)
