"""The CLI reference of the documentation (``docs/cli.rst``) is generated from the parser:
``docs/cli_reference.py`` hands sphinx-argparse :func:`chemgraph.cli.main.build_parser` with its
texts made into reStructuredText. Every text must parse without a warning (``make docs`` treats
warnings as errors) and read, word for word, as ``--help`` prints it."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

from chemgraph.cli.main import build_parser

docutils_core = pytest.importorskip("docutils.core")  # the `docs` extra
from docutils import nodes  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
from cli_reference import parser as reference_parser  # noqa: E402
from cli_reference import to_rst  # noqa: E402


def _texts(parser: argparse.ArgumentParser, path: str = "chemgraph"):
    """(where, text) for every description, epilog and help of ``parser`` and its commands."""
    for kind in ("description", "epilog"):
        yield f"{path} {kind}", getattr(parser, kind)
    for action in parser._actions:
        if action.help not in (None, argparse.SUPPRESS):
            yield f"{path} {'/'.join(action.option_strings) or action.dest}", action.help
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from _texts(subparser, f"{path} {name}")


def _commands(parser: argparse.ArgumentParser, path: str = "chemgraph") -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                found += [f"{path} {name}", *_commands(subparser, f"{path} {name}")]
    return found


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_help_text_reads_as_rst_without_warnings_and_keeps_its_words():
    texts = [(where, text) for where, text in _texts(build_parser()) if text]
    assert len(texts) > 50  # the commands' options, not just the top level
    for where, text in texts:
        doctree = docutils_core.publish_doctree(
            to_rst(text), settings_overrides={"report_level": 5, "halt_level": 5}
        )
        problems = [m.astext() for m in doctree.findall(nodes.system_message)]
        assert not problems, (where, problems)
        # "examples::" introduces a literal block and reads "examples:" again
        assert _words(doctree.astext()) == _words(text), where


def test_examples_of_an_epilog_become_a_literal_block():
    epilog = "examples:\n  chemgraph train --data a.csv \\\n      --out runs/a\n\nafter *that*"
    doctree = docutils_core.publish_doctree(to_rst(epilog))
    blocks = [block.astext() for block in doctree.findall(nodes.literal_block)]
    assert blocks == ["chemgraph train --data a.csv \\\n    --out runs/a"]  # common indent gone
    assert re.search(r"after \*that\*$", doctree.astext())


def test_the_reference_documents_every_command_of_the_parser():
    commands = _commands(build_parser())
    assert {"chemgraph train", "chemgraph predict", "chemgraph datasets list"} <= set(commands)
    assert _commands(reference_parser()) == commands
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.rst").read_text()
    assert ":module: cli_reference" in page and ":func: parser" in page
