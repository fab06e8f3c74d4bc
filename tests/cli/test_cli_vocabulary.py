"""One vocabulary across the commands: every command that reads a file takes ``-i/--input``,
every command that writes takes ``-o/--output``, one spelling per meaning, the earlier
spellings still accepted, each shared option defined once (``chemgraph/cli/common.py``), and
``main`` the one place that catches an interrupt."""

from __future__ import annotations

import argparse
import ast
import signal
from pathlib import Path

import pytest

from chemgraph.cli import build_parser, main

CLI = Path(__file__).resolve().parents[2] / "chemgraph" / "cli"

#: argv of each command with -i/-o, and the namespace fields they set.
SHORT_FORMS = [
    (["train", "-i", "t.csv", "-o", "runs/a"], {"data": "t.csv", "out": "runs/a"}),
    (["transfer", "-i", "t.csv", "-o", "runs/a"], {"data": "t.csv", "out": "runs/a"}),
    (["featurize", "-i", "l.smi", "-o", "lib"], {"input": "l.smi", "output": "lib"}),
    (["qc", "-i", "l.smi", "-o", "xtb"], {"input": "l.smi", "output": "xtb"}),
    (["predict", "--checkpoint", "c", "-i", "l.smi", "-o", "p.csv"],
     {"input": "l.smi", "output": "p.csv"}),
    (["fingerprint", "--checkpoint", "c", "-i", "l.smi", "-o", "e.parquet"],
     {"input": "l.smi", "output": "e.parquet"}),
    (["react", "-i", "r.txt", "-o", "p.csv"], {"input": "r.txt", "output": "p.csv"}),
    (["recipe", "run", "dft_to_gw", "-o", "runs/d"], {"out": "runs/d"}),
    (["datasets", "download", "esol", "-o", "raw"], {"root": "raw"}),
]  # fmt: skip

#: An earlier spelling and the new one: both parse to the same namespace.
ALIASES = [
    (["train", "--data", "t.csv", "--out", "r"], ["train", "--input", "t.csv", "--output", "r"]),
    (["transfer", "--data", "t.csv", "--out", "r"],
     ["transfer", "--input", "t.csv", "--output", "r"]),
    (["recipe", "run", "qm9_gap", "--out", "r"], ["recipe", "run", "qm9_gap", "--output", "r"]),
    (["datasets", "download", "esol", "--root", "r"],
     ["datasets", "download", "esol", "--output", "r"]),
    (["featurize", "l.smi", "--output", "o"], ["featurize", "--input", "l.smi", "--output", "o"]),
    (["qc", "l.smi", "--output", "o"], ["qc", "--input", "l.smi", "--output", "o"]),
    (["featurize", "l.smi", "-o", "o", "--label-columns", "y,z"],
     ["featurize", "-i", "l.smi", "-o", "o", "--target-columns", "y,z"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "expected"), SHORT_FORMS, ids=[" ".join(a[:2]) for a, _ in SHORT_FORMS]
)
def test_every_command_takes_i_and_o(argv, expected):
    args = vars(build_parser().parse_args(argv))
    assert {key: args[key] for key in expected} == expected


@pytest.mark.parametrize(("old", "new"), ALIASES, ids=[" ".join(old[:3]) for old, _ in ALIASES])
def test_earlier_spellings_still_work(old, new):
    assert build_parser().parse_args(old) == build_parser().parse_args(new)


@pytest.mark.parametrize("command", ["featurize", "qc"])
def test_the_input_is_given_once_as_the_first_argument_or_as_i(command, capsys):
    for argv, said in [
        ([command, "a.smi", "-i", "b.smi", "-o", "x"], "argument -i/--input: not allowed"),
        ([command, "-o", "x"], "one of the arguments INPUT -i/--input is required"),
        ([command, "a.smi", "-o", "x", "--resume", "--overwrite"],
         "argument --overwrite: not allowed with argument --resume"),
    ]:  # fmt: skip
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args(argv)
        assert stop.value.code == 2
        assert said in capsys.readouterr().err


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) of every command and sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    yield (*path, name), sub
                yield from _parsers(sub, (*path, name))


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


#: Commands that write nothing: they take no -o/--output.
WRITE_NOTHING = {("datasets", "list"), ("datasets", "info"), ("recipe", "list")}
#: Commands whose input is not a file (a recipe's configuration, a dataset's name).
READ_NO_FILE = WRITE_NOTHING | {("recipe", "run"), ("datasets", "download"),
                                ("datasets", "featurize")}  # fmt: skip


def test_every_writing_command_has_output_and_every_reading_one_input():
    commands = dict(_parsers(build_parser()))
    assert len(commands) == 13
    for path, parser in commands.items():
        flags = _flags(parser)
        if path in WRITE_NOTHING or path == ("datasets", "featurize"):  # it writes the cache
            assert "-o" not in flags, path
        else:
            assert flags["-o"] is flags["--output"], path
            assert "file" in flags["-o"].help or "folder" in flags["-o"].help, path
        if path not in READ_NO_FILE:
            assert flags["-i"] is flags["--input"], path


def test_one_spelling_per_meaning():
    commands = dict(_parsers(build_parser()))
    for path, parser in commands.items():
        flags = _flags(parser)
        # label columns: --target-columns, --label-columns only as its alias
        if "--label-columns" in flags:
            assert flags["--label-columns"] is flags["--target-columns"], path
        # a seed value is --seed, a number of seeds --seeds: both integers
        for flag in ("--seed", "--seeds", "--workers", "--shard-size"):
            if flag in flags:
                assert flags[flag].type is int and flags[flag].metavar == "N", (path, flag)
        assert not {"--num-seeds", "--random-seed", "--n-workers", "--jobs"} & set(flags), path
    assert "--seed" in _flags(commands[("train",)]) and "--seeds" in _flags(commands[("transfer",)])
    for command in ("train", "featurize", "transfer"):
        flags = _flags(commands[(command,)])
        assert flags["--standardize"].choices == ("none", "basic", "chembl"), command
        assert flags["--fragments"].choices == ("keep", "largest"), command
    for command in ("train", "featurize"):
        assert "--target-columns" in _flags(commands[(command,)])


def _literal_flags(tree: ast.AST) -> set[str]:
    """The ``--flag`` strings given to add_argument calls in a module."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            found |= {
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and arg.value.startswith("-")
            }
    return found


def test_each_shared_option_is_defined_once_in_common():
    shared = _literal_flags(ast.parse((CLI / "common.py").read_text()))
    assert {"-i", "-o", "--overwrite", "--seed", "--seeds", "--workers", "--standardize",
            "--target-columns", "--smiles-column", "--id-column"} <= shared  # fmt: skip
    seen: dict[str, str] = {}
    for module in sorted(CLI.glob("*.py")):
        if module.name == "common.py":
            continue
        flags = _literal_flags(ast.parse(module.read_text()))
        assert not flags & shared, (module.name, flags & shared)
        for flag in flags:
            assert seen.setdefault(flag, module.name) == module.name, (flag, seen[flag], module)


def test_no_command_catches_an_interrupt_itself():
    for module in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                caught = ast.unparse(node.type)
                assert "Interrupt" not in caught or module.name == "main.py", (module, caught)


def test_main_prints_the_jobs_resume_hint_and_exits_128_plus_the_signal(
    tmp_path, monkeypatch, capsys
):
    from chemgraph.jobs import featurize

    out = tmp_path / "lib"

    def stopped(*args, **kwargs):
        raise featurize.FeaturizeInterrupted(signal.SIGTERM, out, 3)

    monkeypatch.setattr(featurize, "featurize_library", stopped)
    assert main(["featurize", "-i", "l.smi", "-o", str(out)]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == (
        f"chemgraph featurize: stopped by SIGTERM; 3 complete shard(s) kept in {out}; run the "
        "same command with --resume to continue\n"
    )


def test_a_bare_interrupt_is_named_by_its_signal():
    from chemgraph._interrupts import Interrupted
    from chemgraph.cli.main import interrupted_line

    assert interrupted_line(KeyboardInterrupt()) == "interrupted (Ctrl-C)"
    assert interrupted_line(Interrupted(signal.SIGTERM)) == "interrupted (SIGTERM)"
    assert interrupted_line(Interrupted(signal.SIGINT, "stopped; --resume")) == "stopped; --resume"


def test_errors_name_the_new_flags(tmp_path, capsys):
    assert main(["transfer", "--low-fidelity-columns", "a", "--high-fidelity-columns", "b"]) == 2
    assert capsys.readouterr().err == "chemgraph transfer: error: chemgraph transfer needs " \
        "--input, --output\n"  # fmt: skip
    assert main(["train", "--target-columns", "y"]) == 2
    assert capsys.readouterr().err == (
        "chemgraph train: error: chemgraph train needs -i/--input and -o/--output\n"
    )
    table = tmp_path / "t.csv"
    table.write_text("smiles,y\nCCO,1\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = ["train", "-i", str(table), "--target-columns", "y", "-o", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"chemgraph train: error: {out} exists and is not empty; choose a new --output, or "
        "pass --overwrite to write over it\n"
    )


def test_transfer_takes_the_molecule_preparation_of_train(tmp_path, monkeypatch):
    from chemgraph.jobs import transfer

    monkeypatch.chdir(tmp_path)
    received = []
    monkeypatch.setattr(transfer, "transfer_table", received.append)
    argv = ["transfer", "-i", "t.csv", "--low-fidelity-columns", "a", "--high-fidelity-columns",
            "b", "--model", "esa", "-o", "runs/t", "--standardize", "basic", "--fragments",
            "largest", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    (options,) = received
    assert (options.training.standardize, options.training.fragments) == ("basic", "largest")
    assert (str(options.data), str(options.out)) == ("t.csv", "runs/t")


def test_the_preparation_choices_are_the_chemistry_layers():
    """The parser keeps its own copy of the choices (it imports no RDKit); they must be the
    ones chemgraph.chem accepts."""
    from chemgraph.chem import STANDARDIZE_METHODS
    from chemgraph.chem.parse import FRAGMENT_POLICIES
    from chemgraph.cli import common

    assert common.STANDARDIZE_METHODS == STANDARDIZE_METHODS
    assert common.FRAGMENT_POLICIES == FRAGMENT_POLICIES
