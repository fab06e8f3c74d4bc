"""The CLI reference of the documentation (``docs/cli/``, one page per command) is generated from
the parser: ``docs/cli_reference.py`` hands sphinx-argparse :func:`chemgraph.cli.main.build_parser`
with its texts made into reStructuredText. Every text must parse without a warning (``make docs``
treats warnings as errors) and read, word for word, as ``--help`` prints it; every option is a
section of its command's page (an entry of "on this page"), and the search index names commands
by their names, without HTML entities."""

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
from cli_reference import commands, to_rst  # noqa: E402
from cli_reference import parser as reference_parser  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs"


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


def test_the_reference_has_one_page_per_command_of_the_parser():
    found = _commands(build_parser())
    assert {"chemgraph train", "chemgraph predict", "chemgraph datasets list"} <= set(found)
    assert _commands(reference_parser()) == found
    names = commands(build_parser())
    assert names == [command.split()[1] for command in found if command.count(" ") == 1]
    index = (DOCS / "cli" / "index.rst").read_text()
    toctree = index.split(".. toctree::")[1].split("\n\n")[1]
    assert toctree.split() == names  # one page per command, in the parser's order
    assert ":nosubcommands:" in index  # the options every command shares
    for name in names:
        page = (DOCS / "cli" / f"{name}.rst").read_text()
        assert page.startswith(f"chemgraph {name}\n")
        assert ":module: cli_reference" in page and ":func: parser" in page
        assert re.search(rf"^   :path: {name}$", page, re.MULTILINE), name


def _options(parser: argparse.ArgumentParser) -> list[list[str]]:
    """The names of every documented option and positional argument of ``parser``."""
    return [
        action.option_strings or [action.metavar or action.dest]
        for action in parser._actions
        if action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction)
        and not isinstance(action, argparse._SubParsersAction)
    ]  # fmt: skip


def _subparser(path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path.split():
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def test_every_option_is_a_section_in_on_this_page_and_search_shows_command_names(tmp_path):
    """A small Sphinx build of two command pages (about a second): the page's table of
    contents (furo's "on this page") holds every option of the command and of its
    sub-commands, ``:option:`` links reach them, and the search index has no HTML entity."""
    sphinx_cmd = pytest.importorskip("sphinx.cmd.build")
    source = tmp_path / "source"
    source.mkdir()
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(DOCS)!r})\nextensions = ['cli_reference']\n"
        "html_theme = 'furo'\n"
    )
    (source / "index.rst").write_text(
        "Index\n=====\n\n.. toctree::\n\n   train\n   datasets\n\n"
        ":option:`chemgraph train --seed`,\n"
        ":option:`chemgraph datasets download --allow-unverified`\n"
    )
    for name in ("train", "datasets"):  # the pages' directives, without their guide links
        page = (DOCS / "cli" / f"{name}.rst").read_text()
        (source / f"{name}.rst").write_text(
            f"{name}\n========\n\n" + page[page.index(".. argparse::") :]
        )
    out = tmp_path / "html"
    assert sphinx_cmd.build_main(["-b", "html", "-E", "-W", "-q", str(source), str(out)]) == 0

    for page, programs in {
        "train": ["train"],
        "datasets": ["datasets", "datasets list", "datasets info", "datasets download"],
    }.items():
        html = (out / f"{page}.html").read_text()
        toc = html[html.index('class="toc-tree"') :]
        toc = toc[: toc.index("</div>")]
        entries = [
            (anchor, re.sub(r"<[^>]+>", "", label))
            for anchor, label in re.findall(r'href="#([^"]*)">(.*?)</a>', toc)
        ]
        for program in programs:
            prefix = "chemgraph-" + program.replace(" ", "-") + "-"
            for names in _options(_subparser(program)):
                label = ", ".join(names)
                found = [a for a, text in entries if text == label and a.startswith(prefix)]
                assert found, (program, label)
                assert f'id="{found[0]}"' in html
        assert len(entries) == len(set(anchor for anchor, _ in entries))  # unique anchors
    index = (out / "index.html").read_text()
    assert 'href="train.html#chemgraph-train-seed"' in index
    assert 'href="datasets.html#chemgraph-datasets-download-allow-unverified"' in index

    search = (out / "searchindex.js").read_text()
    assert not re.search(r"&(#x?[0-9a-fA-F]+|lt|gt|amp|quot);", search)
    assert '"chemgraph train"' in search and '"chemgraph datasets download"' in search
