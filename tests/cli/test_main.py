"""The `chemgraph` command as a whole: version, shared options, help, errors, logging, start-up."""

import ast
import logging
import subprocess
import sys

import pytest

import chemgraph
from chemgraph.cli import main
from chemgraph.cli.main import COMMANDS
from chemgraph.errors import ChemgraphError, ConfigError, DatasetError

HEAVY = ("torch", "lightning", "rdkit", "dgl", "pandas", "chemgraph.models")


@pytest.fixture()
def run_does(monkeypatch):
    """Replace `chemgraph datasets`' run with ``action(args)`` (returns 0 unless it raises)."""

    def replace(action):
        def run(args):
            action(args)
            return 0

        monkeypatch.setattr(COMMANDS["datasets"], "run", run)

    return replace


def raiser(error):
    def action(args):
        raise error

    return action


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"chemgraph {chemgraph.__version__}\n"


def test_python_dash_m_version():
    result = subprocess.run(
        [sys.executable, "-m", "chemgraph", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout == f"chemgraph {chemgraph.__version__}\n"


@pytest.mark.parametrize(
    "error",
    [
        ConfigError("--beam-width must be at least 1, got 0"),
        DatasetError("--beam-width must be at least 1, got 0"),
        FileNotFoundError("--beam-width must be at least 1, got 0"),
        ValueError("--beam-width must be at least 1, got 0"),  # library errors not yet migrated
    ],
)
def test_a_user_error_is_one_line_and_status_2(run_does, capsys, error):
    run_does(raiser(error))
    assert main(["datasets", "list"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "chemgraph datasets: error: --beam-width must be at least 1, got 0\n"
    assert captured.out == ""


@pytest.mark.parametrize("error", [RuntimeError("a bug"), KeyError("a bug"), TypeError("a bug")])
def test_an_unexpected_error_propagates_with_its_traceback(run_does, error):
    run_does(raiser(error))
    with pytest.raises(type(error), match="a bug"):
        main(["datasets", "list"])


@pytest.mark.parametrize("argv", [["--debug", "datasets", "list"], ["datasets", "list", "--debug"]])
def test_debug_raises_user_errors(run_does, argv):
    run_does(raiser(ConfigError("bad setting")))
    with pytest.raises(ChemgraphError, match="bad setting"):
        main(argv)


def test_an_unhandled_ctrl_c_is_one_line_and_status_130(run_does, capsys):
    run_does(raiser(KeyboardInterrupt()))
    assert main(["datasets", "list"]) == 130
    assert capsys.readouterr().err == "chemgraph datasets: interrupted (Ctrl-C)\n"
    with pytest.raises(KeyboardInterrupt):
        main(["datasets", "list", "--debug"])


def test_a_sigterm_turned_into_an_exception_is_one_line_and_status_143(run_does, capsys):
    import signal

    from chemgraph._interrupts import Interrupted

    run_does(raiser(Interrupted(signal.SIGTERM)))
    assert main(["datasets", "list"]) == 143
    assert capsys.readouterr().err == "chemgraph datasets: interrupted (SIGTERM)\n"


def test_a_real_user_error(capsys):
    assert main(["react", "--checkpoint", "best.ckpt"]) == 2
    assert capsys.readouterr().err == (
        "chemgraph react: error: give either one reaction SMILES or --input FILE (with --output)\n"
    )


def test_error_classes_keep_their_builtin_bases():
    from chemgraph.chem.graph_codec import GraphDecodingError, GraphEncodingError
    from chemgraph.chem.parse import MoleculeParseError
    from chemgraph.chem.reactions import ReactionParseError
    from chemgraph.data.datasets.download import ChecksumError
    from chemgraph.data.datasets.qm9_gw import QM9GWLayoutError

    for error in (MoleculeParseError, ReactionParseError, GraphEncodingError,
                  GraphDecodingError, ConfigError):  # fmt: skip
        assert issubclass(error, ChemgraphError) and issubclass(error, ValueError)
    assert issubclass(QM9GWLayoutError, DatasetError) and issubclass(QM9GWLayoutError, ValueError)
    assert issubclass(ChecksumError, DatasetError) and issubclass(ChecksumError, OSError)


@pytest.mark.parametrize(
    "argv,option",
    [
        (["train"], "--max-epochs"),
        (["predict"], "--batch-size"),
        (["featurize"], "--shard-size"),
        (["datasets", "featurize"], "--preset"),
        (["react"], "--beam-width"),
        (["recipe", "run"], "--out"),
    ],
)
def test_help_shows_defaults(capsys, argv, option):
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = capsys.readouterr().out
    assert all(flag in text for flag in (option, "--quiet", "--verbose", "--debug"))
    assert "(default: " in text  # the shared options have none: this is a command's own


@pytest.mark.parametrize(
    "flags,shown,hidden",
    [
        ([], ["info line"], ["debug line"]),
        (["--quiet"], [], ["info line", "debug line"]),
        (["-v"], ["info line", "debug line"], []),
    ],
)
def test_log_messages_follow_the_verbosity(run_does, capsys, flags, shown, hidden):
    def log(args):
        logger = logging.getLogger("chemgraph.data")
        logger.debug("debug line")
        logger.info("info line")
        logger.warning("warning line")

    run_does(log)
    assert main(["datasets", "list", *flags]) == 0
    captured = capsys.readouterr()
    for line in shown:
        assert f"{line}\n" in captured.out.splitlines(keepends=True)  # no prefix
    for line in hidden:
        assert line not in captured.out
    assert captured.err == "warning: warning line\n"
    assert logging.getLogger("chemgraph").handlers == []  # nothing left behind


def _stdout_and_heavy_modules(body: str) -> tuple[str, list[str]]:
    """Run ``body`` (after ``import sys`` and ``from chemgraph.cli import build_parser, main``)
    in a fresh interpreter: its standard output and the :data:`HEAVY` modules it imported."""
    code = (
        "import sys\n"
        "from chemgraph.cli import build_parser, main\n"
        f"{body}"
        f"print([name for name in {HEAVY!r} if name in sys.modules], file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout, ast.literal_eval(result.stderr.strip())


def test_parser_and_help_import_no_heavy_library():
    stdout, heavy = _stdout_and_heavy_modules(
        "build_parser()\n"
        "for argv in (['--help'], ['train', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    assert heavy == []
    assert "--target-columns" in stdout and "{train,predict,featurize" in stdout


def test_datasets_list_and_info_read_cards_without_heavy_libraries():
    """Listing the cards imported torch, DGL and pandas through the loaders: 5 s for a table."""
    stdout, heavy = _stdout_and_heavy_modules(
        "assert main(['datasets', 'list']) == 0\nassert main(['datasets', 'info', 'esol']) == 0\n"
    )
    assert heavy == []
    assert "qm9_gw" in stdout and "delaney-processed.csv" in stdout


def test_train_model_choices_are_the_registered_models():
    from chemgraph.model_names import MODEL_DESCRIPTIONS
    from chemgraph.models import MODELS

    assert list(MODEL_DESCRIPTIONS) == list(MODELS)
    assert all(MODELS[name].description == text for name, text in MODEL_DESCRIPTIONS.items())


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly():
    """``chemgraph datasets list | head -1``: the reader is gone before the listing is
    written; the command exits with 141 (128 + SIGPIPE) and prints no error."""
    command = [sys.executable, "-m", "chemgraph", "datasets", "list"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # closed before the command has started writing
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=120) == 141
    assert stderr == ""
