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


def test_recipe_run_writes_to_the_configs_out_unless_out_is_given(tmp_path, monkeypatch):
    from chemgraph.recipes.registry import get_recipe

    received = []
    recipe = get_recipe("reaction_outcome")
    monkeypatch.setattr(recipe, "run", lambda config, seeds, out: received.append(out))
    partial = tmp_path / "mine.yaml"
    partial.write_text(f"profile: cpu\nout: {tmp_path / 'from_config'}\n")
    assert main(["recipe", "run", "reaction_outcome", "--config", str(partial)]) == 0
    cpu_only = tmp_path / "cpu_only.yaml"
    cpu_only.write_text("profile: cpu\n")
    assert main(["recipe", "run", "reaction_outcome", "--config", str(cpu_only)]) == 0
    given = tmp_path / "given"
    assert (
        main(["recipe", "run", "reaction_outcome", "--config", str(partial), "--out", str(given)])
        == 0
    )
    assert received == [str(tmp_path / "from_config"), "runs/reaction_outcome_cpu", str(given)]
