"""The output-folder rule of the commands that write one (`train`, `recipe run`, `featurize`,
`qc`): a new or empty folder, or `--overwrite`, which removes only what the command writes."""

import json

import pytest

from chemgraph.cli import main


@pytest.mark.parametrize("flag", ["-o", "--output", "--out"])
def test_recipe_run_refuses_a_non_empty_out(tmp_path, capsys, flag):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "runs.csv").write_text("earlier results")
    assert main(["recipe", "run", "dft_to_gw", flag, str(out)]) == 2
    assert f"{out} exists and is not empty; choose a new --output, or pass --overwrite" in (
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


def test_a_resumable_folder_is_new_or_the_same_run(tmp_path):
    from chemgraph._output import resumable_folder

    folder, identity = tmp_path / "state", {"input_sha256": "ab", "shard_size": 4}
    assert resumable_folder(folder, "run.json", identity, resume=False, option="--output") is False
    (folder / "run.json").write_text(json.dumps(identity))
    (folder / ".shard-1.parquet.tmp-99").write_text("half a file")
    with pytest.raises(
        ValueError,
        match="holds an earlier run; pass --resume to continue it, or choose a new --output",
    ):
        resumable_folder(folder, "run.json", identity, resume=False, option="--output")
    changed = {**identity, "shard_size": 5}
    with pytest.raises(ValueError, match=r"differs from it in shard_size \(4 → 5\), or pass --ov"):
        resumable_folder(folder, "run.json", changed, resume=True, option="--output",
                         restart_option="--overwrite")  # fmt: skip
    changed = {"input_sha256": "cd", "shard_size": 4, "columns": ["row"]}
    with pytest.raises(ValueError) as raised:
        resumable_folder(folder, "run.json", changed, resume=True, option="--output")
    assert str(raised.value) == (
        f"cannot resume the run in {folder}: this run differs from it in the input's content "
        "(sha256); columns (not recorded by the earlier run), or choose a new --output"
    )
    assert (folder / ".shard-1.parquet.tmp-99").exists()  # nothing touched by a refusal
    options = {**identity, "options": {"standardize": "none", "fragments": "keep"}}
    (folder / "run.json").write_text(json.dumps(options))
    other = {**identity, "options": {"standardize": "basic", "fragments": "keep", "new": 1}}
    with pytest.raises(ValueError) as refused:
        resumable_folder(folder, "run.json", other, resume=True, option="--output")
    assert (
        "differs from it in options.new (None → 1); options.standardize ('none' → 'basic')"
        in str(refused.value)
    )
    (folder / "run.json").write_text(json.dumps(identity))
    assert resumable_folder(folder, "run.json", identity, resume=True, option="--output")
    assert sorted(p.name for p in folder.iterdir()) == ["run.json"]  # the temporary is gone
    restarted = resumable_folder(folder, "run.json", changed, resume=False, option="--output",
                                 restart=True)  # fmt: skip
    assert restarted is False and list(folder.iterdir()) == []
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("a user's file")
    with pytest.raises(ValueError, match="exists and is not empty"):
        resumable_folder(tmp_path / "other", "run.json", identity, resume=True, option="--output")


def test_overwrite_removes_only_the_commands_own_outputs(tmp_path):
    from chemgraph._output import remove_outputs, resumable_folder

    folder, identity = tmp_path / "out", {"input_sha256": "ab"}
    (folder / "parts").mkdir(parents=True)
    (folder / "parts" / "shard-00000.json").write_text("{}")
    (folder / "manifest.json").write_text(json.dumps({"input_sha256": "cd"}))
    (folder / ".rejected.csv.tmp-12").write_text("half a file")
    (folder / "notes.txt").write_text("a user's file")
    (folder / "parts.txt").write_text("another")
    with pytest.raises(ValueError, match="holds an earlier run; pass --resume to continue it"):
        resumable_folder(folder, "manifest.json", identity, resume=False, option="--output")
    owned = ("manifest.json", "parts", "rejected.csv")
    with pytest.raises(ValueError, match="exclude each other"):
        resumable_folder(folder, "manifest.json", identity, resume=True, option="--output",
                         restart_option="--overwrite", overwrite=owned)  # fmt: skip
    assert (folder / "manifest.json").exists()  # a refusal touches nothing
    resumed = resumable_folder(folder, "manifest.json", identity, resume=False,
                               option="--output", overwrite=owned)  # fmt: skip
    assert resumed is False
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "parts.txt"]
    (folder / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "kept.txt").write_text("x")
    assert remove_outputs(folder, ["link", "absent"]) == ["link"]
    assert (tmp_path / "elsewhere" / "kept.txt").exists()  # a link is removed, not followed


def test_the_train_job_applies_the_rule_itself(tmp_path):
    """The Python API behaves as the command: train() refuses a folder with a user's files."""
    from chemgraph.jobs.train import train, train_ensemble
    from chemgraph.train.config import TrainingConfig

    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("a user's file")
    table = tmp_path / "t.csv"
    table.write_text("smiles,y\n" + "".join(f"{'C' * (i + 1)},{i}\n" for i in range(12)))
    config = TrainingConfig.from_dict(
        {"data": str(table), "target_columns": ["y"], "out": str(out)}
    )
    for run in (lambda: train(config), lambda: train_ensemble(config, 2)):
        with pytest.raises(
            ValueError, match="exists and is not empty; choose a new --output, or pass --overwrite"
        ):
            run()
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_target_named_twice_is_refused():
    from chemgraph.errors import ConfigError
    from chemgraph.train.config import TrainingConfig

    with pytest.raises(ConfigError, match="target_columns names logS more than once"):
        TrainingConfig.from_dict({"data": "t.csv", "target_columns": "logS,logS", "out": "o"})
