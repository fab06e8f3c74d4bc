"""The parser that the command-line reference (``docs/cli/``, one page per command) documents:
:func:`chemgraph.cli.main.build_parser` with its texts made into reStructuredText, which
sphinx-argparse parses them as; and, as a Sphinx extension (``conf.py``), sphinx-argparse's
``argparse`` directive with two changes to its output.

Only the form of the texts changes, never the words: an indented block after a line ending in
``:`` (the ``examples:`` of an epilog) becomes a literal block, and characters that mean
something in reStructuredText (``*``, ``_``, backquotes, ``|``) are escaped elsewhere, so
``datasets/*.yaml`` stays as written.

The directive's output:

* every option (and positional argument) is a section of its own, titled with its names, so it
  is an entry of the page's table of contents ("on this page") and a link target
  (``#chemgraph-train-input``); it is also a program option of Sphinx's standard domain, so
  ``:option:`chemgraph train --input``` links to it and the search finds it;
* a command's entry in the search index is its name (``chemgraph train``): sphinx-argparse
  registers the whole description, which Sphinx's search index HTML-escapes (``&#x27;``,
  ``&lt;``) and cuts at its last full stop, and the search page showed that text as it was.
"""

from __future__ import annotations

import argparse
import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinxarg.ext import ArgParseDirective, ArgParseDomain

from chemgraph.cli.main import build_parser

_SPECIAL = re.compile(r"([\\*_`|])")


def _escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def _paragraph(paragraph: str) -> str:
    """One paragraph of a help text: a literal block under its heading line when its other
    lines are indented, else escaped text."""
    head, _, body = paragraph.partition("\n")
    if head.endswith(":") and body and all(line.startswith(" ") for line in body.splitlines()):
        return f"{_escape(head)}:\n\n{body}"
    return _escape(paragraph)


def to_rst(text: str | None) -> str | None:
    """``text`` (a description, epilog or help of the parser) as reStructuredText."""
    if not text:
        return text
    return "\n\n".join(_paragraph(p) for p in re.split(r"\n\s*\n", text.strip("\n")))


def _convert(parser: argparse.ArgumentParser) -> None:
    parser.description = to_rst(parser.description)
    parser.epilog = to_rst(parser.epilog)
    for action in parser._actions:
        if action.help not in (None, argparse.SUPPRESS):
            action.help = to_rst(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:  # the sub-commands' one-line help
                choice.help = to_rst(choice.help)
            for subparser in set(action.choices.values()):
                _convert(subparser)


def parser() -> argparse.ArgumentParser:
    """``chemgraph``'s parser, its texts in reStructuredText (module docstring)."""
    result = build_parser()
    _convert(result)
    return result


def commands(parser: argparse.ArgumentParser) -> list[str]:
    """The names of ``parser``'s sub-commands (``train``, ``predict``, ...), in its order: one
    page of ``docs/cli/`` each."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


# --- the Sphinx extension ---------------------------------------------------------------------


def _title(section: nodes.section) -> str:
    return section[0].astext() if section.children and isinstance(section[0], nodes.title) else ""


def _text_first(children: list[nodes.Node]) -> list[nodes.Node]:
    """``children`` with the text that follows their first section (sphinx-argparse appends a
    command's epilog after its option groups) moved in front of it, where it is read as part of
    the command's introduction instead of the last group's."""
    first = next((i for i, n in enumerate(children) if isinstance(n, nodes.section)), None)
    if first is None:
        return children
    after = children[first:]
    text = [n for n in after if not isinstance(n, nodes.section)]
    return children[:first] + text + [n for n in after if isinstance(n, nodes.section)]


def option_sections(
    items: list[nodes.Node], program: str, used: set[str]
) -> list[tuple[str, list[str], str]]:
    """Replace every option list in ``items`` (sphinx-argparse's output for ``program``, e.g.
    ``chemgraph train``) by one section per option, titled with its names; sub-commands'
    sections (``datasets list``) name theirs. Returns (program, names, section id) per option;
    ids are unique within ``used``, which collects them."""
    found: list[tuple[str, list[str], str]] = []

    def walk(node: nodes.Element, program: str) -> None:
        for child in list(node.children):
            # the sections of "Sub-commands" are the sub-commands, titled with their names
            if isinstance(child, nodes.section) and _title(child) == "Sub-commands":
                for sub in [c for c in child.children if isinstance(c, nodes.section)]:
                    walk(sub, f"{program} {_title(sub)}")
            elif isinstance(child, nodes.option_list):
                child.replace_self([_option_section(i, program, used, found) for i in child])
            elif isinstance(child, nodes.Element):
                walk(child, program)
        if isinstance(node, nodes.section):
            node.children = _text_first(node.children)
            for child in node.children:
                child.parent = node

    root = nodes.container()
    root.extend(items)
    walk(root, program)
    items[:] = _text_first(list(root.children))
    for item in items:
        item.parent = None
    return found


def _option_section(
    item: nodes.option_list_item,
    program: str,
    used: set[str],
    found: list[tuple[str, list[str], str]],
) -> nodes.section:
    label = item.next_node(nodes.option_group).astext()  # "-i, --input" or "input"
    names = [name.strip() for name in label.split(",") if name.strip()]
    positional = not any(name.startswith("-") for name in names)
    main = next((name for name in names if name.startswith("--")), names[0])  # --input
    base = nodes.make_id(f"{program} {main}" + (" argument" if positional else ""))
    section_id, k = base, 2
    while section_id in used:
        section_id, k = f"{base}-{k}", k + 1
    used.add(section_id)
    section = nodes.section(ids=[section_id], names=[])
    section += nodes.title("", "", nodes.literal(text=label))
    description = item.next_node(nodes.description)
    if description is not None:
        section.extend(description.children)
    found.append((program, names, section_id))
    return section


class CommandReference(ArgParseDirective):
    """sphinx-argparse's ``argparse`` directive, each option a section and each command named
    by its name in the search index (module docstring)."""

    def run(self) -> list[nodes.Node]:
        items = super().run()
        program = " ".join(
            filter(None, [self.options.get("prog", "chemgraph"), self.options["path"]])
        )
        used = set(self.state.document.ids)
        std = self.env.domains.standard_domain
        for command, names, section_id in option_sections(items, program, used):
            for name in names:
                std.add_program_option(
                    command.replace(" ", "-"), name, self.env.docname, section_id
                )
        domain = self.env.domains[ArgParseDomain.name]
        domain.data["commands"] = [
            (name, name if docname == self.env.docname else shown, kind, docname, anchor, prio)
            for name, shown, kind, docname, anchor, prio in domain.data["commands"]
        ]
        return items


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("sphinxarg.ext")
    app.add_directive("argparse", CommandReference, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
