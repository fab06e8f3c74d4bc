"""The output-folder rule of the commands that write one (`train`, `recipe run`, `featurize`,
`qc`): a new or empty folder, or `--overwrite`, which removes only what the command writes; and
one run per folder (`predict`, `fingerprint` and `transfer` too)."""

import json
import os
from pathlib import Path

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


# -- one run per output folder (issue 45) --------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture()
def other_run():
    """A process standing for another run that holds a folder: ``hold(folder)`` writes its
    lock as :func:`chemgraph._output.claim_folder` does."""
    import socket
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    def hold(folder: Path) -> Path:
        from chemgraph._output import LOCK_NAME

        folder.mkdir(parents=True, exist_ok=True)
        record = {"pid": process.pid, "host": socket.gethostname(), "started": "10:00",
                  "command": "chemgraph train -o runs/x"}  # fmt: skip
        (folder / LOCK_NAME).write_text(json.dumps(record))
        return folder / LOCK_NAME

    hold.pid = process.pid
    yield hold
    process.kill()
    process.wait()


def test_a_claimed_folder_refuses_a_second_run_and_is_released_at_the_end(tmp_path, other_run):
    """Two runs on one folder both passed the "empty folder" check; the claim is taken at
    once, with O_EXCL, so the second is refused with who holds the folder."""
    from chemgraph._output import LOCK_NAME, check_output_folder, claim_folder, claimed_folder

    folder = tmp_path / "run"
    with claimed_folder(folder, "--output"):
        lock = json.loads((folder / LOCK_NAME).read_text())
        assert lock["pid"] == os.getpid()
        check_output_folder(folder, "--output")  # the lock is not a file of the run's
        with claimed_folder(folder, "--output"):  # a job run by a recipe in its folder
            (folder / "best.ckpt").write_text("x")
        assert (folder / LOCK_NAME).exists()  # the recipe still holds it
    assert sorted(p.name for p in folder.iterdir()) == ["best.ckpt"]  # released, files kept
    with claimed_folder(tmp_path / "failed", "--output"):
        pass  # a run refused before it wrote anything leaves no folder it created
    assert not (tmp_path / "failed").exists()

    other_lock = other_run(tmp_path / "busy")
    with pytest.raises(ValueError) as refused:
        claim_folder(tmp_path / "busy", "--output")
    assert str(refused.value).startswith(
        f"{tmp_path / 'busy'} is in use by another run (process {other_run.pid} on "
    )
    assert "'chemgraph train -o runs/x'" in str(refused.value)
    assert other_lock.exists()  # never taken from a live run


def test_a_lock_left_by_a_killed_run_is_taken_over_with_a_warning(tmp_path, caplog):
    """A run killed with SIGKILL (the out-of-memory killer, a scheduler's limit) cannot remove
    its lock: its process is gone, so the next run (--resume) takes the folder over, saying
    whose lock it was; a lock of another host cannot be checked and is never taken."""
    import socket
    import subprocess
    import sys

    from chemgraph._output import LOCK_NAME, claimed_folder

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    folder = tmp_path / "run"
    folder.mkdir()
    record = {"pid": int(gone.stdout), "host": socket.gethostname(), "started": "10:00",
              "command": "chemgraph featurize"}  # fmt: skip
    (folder / LOCK_NAME).write_text(json.dumps(record))
    with caplog.at_level("WARNING", logger="chemgraph"), claimed_folder(folder, "--output"):
        assert json.loads((folder / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert (
        f"{folder}: took over the lock of a run that is no longer running (process "
        f"{record['pid']} on {record['host']}, started 10:00: 'chemgraph featurize')"
    ) in caplog.text
    assert list(folder.iterdir()) == []
    elsewhere = {**record, "host": "another-node"}
    (folder / LOCK_NAME).write_text(json.dumps(elsewhere))
    with pytest.raises(ValueError, match=f"on another-node.*delete {folder / LOCK_NAME}"):
        claimed_folder(folder, "--output").__enter__()
    (folder / LOCK_NAME).write_text("")  # a lock that records no run
    with pytest.raises(ValueError, match=f"delete {folder / LOCK_NAME} and run again"):
        claimed_folder(folder, "--output").__enter__()


def _library(tmp_path: Path) -> Path:
    path = tmp_path / "library.smi"
    path.write_text("CCO ethanol\nc1ccccc1 benzene\n")
    return path


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "measured.csv"
    smiles = ["C", "CC", "CCC", "CCO", "CCN", "c1ccccc1", "CC(=O)O", "CCCl", "CCCC", "OCCO"]
    path.write_text("smiles,y\n" + "".join(f"{s},{i}\n" for i, s in enumerate(smiles)))
    return path


COMMANDS = {
    "train": lambda t, out: ["train", "-i", str(_table(t)), "--target-columns", "y", "-o", out],
    "train --ensemble": lambda t, out: [
        "train", "-i", str(_table(t)), "--target-columns", "y", "--ensemble", "2", "-o", out
    ],
    "featurize": lambda t, out: ["featurize", "-i", str(_library(t)), "-o", out],
    "qc": lambda t, out: ["qc", "-i", str(_library(t)), "-o", out],
    "predict": lambda t, out: [
        "predict", "--checkpoint", str(FIXTURES / "checkpoints" / "esa.ckpt"),
        "-i", str(_library(t)), "-o", out + ".csv",
    ],
    "fingerprint": lambda t, out: [
        "fingerprint", "--checkpoint", str(FIXTURES / "checkpoints" / "esa.ckpt"),
        "-i", str(_library(t)), "-o", out + ".parquet",
    ],
    "transfer": lambda t, out: [
        "transfer", "--data", str(FIXTURES / "transfer" / "labels.csv"),
        "--low-fidelity-columns", "cheap_logp", "--high-fidelity-columns", "fine_logp", "-o", out,
    ],
    "recipe run": lambda t, out: ["recipe", "run", "dft_to_gw", "-o", out],
}  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_that_writes_a_folder_refuses_one_another_run_holds(
    tmp_path, capsys, other_run, command
):
    out = str(tmp_path / "out")
    arguments = COMMANDS[command](tmp_path, out)
    output = Path(arguments[-1])
    # predict and fingerprint keep their run in OUTPUT.partial, where the claim is
    held = output.with_name(output.name + ".partial") if output.suffix else output
    lock = other_run(held)
    assert main(arguments) == 2
    error = capsys.readouterr().err
    assert f"{held} is in use by another run (process {other_run.pid} on " in error
    assert [p.name for p in held.iterdir()] == [lock.name]  # nothing written by the refused run
    assert not output.suffix or not output.exists()


def test_an_ensemble_never_writes_through_a_link_planted_in_its_folder(tmp_path, caplog):
    """``train --ensemble K --overwrite`` trained member k into whatever OUT/model-<k> pointed
    at; a link there is removed (never followed), and one beyond K is not rmtree'd."""
    from chemgraph.jobs.train import train_ensemble
    from chemgraph.train.config import TrainingConfig

    out, elsewhere = tmp_path / "ensemble", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("not chemgraph's")
    (out / "model-0").symlink_to(elsewhere, target_is_directory=True)
    (out / "model-5").symlink_to(elsewhere, target_is_directory=True)
    config = TrainingConfig.from_dict(
        {"data": str(_table(tmp_path)), "target_columns": ["y"], "out": str(out),
         "max_epochs": 1, "batch_size": 4, "progress": False,
         "model_options": {"hidden_dim": 8, "num_heads": 2, "num_seeds": 2}}
    )  # fmt: skip
    with caplog.at_level("WARNING", logger="chemgraph"):
        train_ensemble(config, 2, overwrite=True)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]  # untouched
    assert (out / "model-0").is_dir() and not (out / "model-0").is_symlink()
    assert (out / "model-0" / "best.ckpt").is_file() and not (out / "model-5").exists()
    assert f"removed {out / 'model-0'}, a symbolic link to {elsewhere}" in caplog.text
