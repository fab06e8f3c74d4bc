"""``chemgraph datasets list | info | download | featurize``: the registered benchmark datasets."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from chemgraph.cli.base import Command, add_action, output_width, table_lines
from chemgraph.cli.common import add_output_option, add_root_option

if TYPE_CHECKING:
    from chemgraph.data.datasets import DatasetCard, SourceFile

__all__ = ["DatasetsCommand", "card_text"]


class DatasetsCommand(Command):
    """List, describe, download and featurize datasets (:mod:`chemgraph.data.datasets`)."""

    name = "datasets"
    help = "list, describe, download and featurize the registered benchmark datasets"
    description = (
        "Datasets are described by cards (datasets/*.yaml). Downloads are checked "
        "against the card's checksum; featurized graphs are cached in $CHEMGRAPH_HOME "
        "(default ~/.cache/chemgraph). --root points at a local copy of the source files."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add_action(actions, "list", "registered datasets, one a line")
        info = add_action(
            actions, "info", "a dataset's card: source, licence, citation, size, columns, split"
        )
        info.add_argument("name")
        info.add_argument("--yaml", action="store_true", help="print the card file as it is")
        download = add_action(actions, "download", "download and verify the source files")
        download.add_argument("name")
        add_output_option(
            download,
            "folder to download the source files into; files already there are verified, not "
            "downloaded again (default: $CHEMGRAPH_HOME/raw/NAME)",
            dest="root",
            aliases=("--root",),
        )
        featurize = add_action(actions, "featurize", "parse and featurize into cached graph shards")
        featurize.add_argument("name")
        add_root_option(
            featurize,
            "folder with the source files, the missing ones downloaded into it (default: "
            "$CHEMGRAPH_HOME/raw/NAME); the graphs go to the cache, "
            "$CHEMGRAPH_HOME/featurized/NAME",
        )
        featurize.add_argument("--preset", default="canonical", help="canonical or ogb")
        for sub in (download, featurize):
            sub.add_argument(
                "--allow-unverified",
                action="store_true",
                help="accept downloads whose card has no checksum (the hash is logged)",
            )

    def run(self, args: argparse.Namespace) -> int:
        """List the datasets, print a card, or download or featurize a dataset.

        Raises:
            chemgraph.errors.DatasetError: ``NAME`` is not a registered dataset (the message
                lists the registered ones).
        """
        from chemgraph.data.datasets import chemgraph_home, dataset_card, get_dataset, list_datasets
        from chemgraph.errors import DatasetError

        names = list_datasets()
        if args.action == "list":
            rows = [("name", "family", "rows", "description")]
            for name in names:
                card = dataset_card(name)
                count = "-" if card.rows is None else f"{card.rows:,}"
                rows.append((name, card.family, count, card.description))
            print("\n".join(table_lines(rows, output_width(), align="<<>")))
            return 0
        key = args.name.lower().replace("-", "_")  # QM9-GW = qm9_gw, as the README writes it
        name = {n.lower(): n for n in names}.get(key)
        if name is None:
            raise DatasetError(
                f"no dataset card {args.name!r} among the registered datasets: {', '.join(names)}"
            )
        if args.action == "info":
            card = dataset_card(name)
            if args.yaml:
                print(card.path.read_text(encoding="utf-8"), end="")
            else:
                print(card_text(card, output_width()))
            return 0
        dataset = get_dataset(name, args.root)
        paths = dataset.download(allow_unverified=args.allow_unverified)
        if args.action == "download":
            for path in paths:
                print(path)
            return 0
        graphs, rejected = dataset.featurize(args.preset)
        print(f"{name}: {len(graphs)} graphs, {len(rejected)} rejected records; "
              f"cached under {chemgraph_home() / 'featurized' / name}")  # fmt: skip
        reasons = rejected["reason"].astype(str).str[:80].value_counts().head(5)
        for reason, count in reasons.items():
            print(f"  {count} x {reason}")
        return 0


def card_text(card: DatasetCard, width: int) -> str:
    """A dataset card as ``chemgraph datasets info`` prints it, fitted into ``width`` columns:
    a title line, the description, then task, targets, split, licence, citation and source,
    the source files (URL, size, checksum) and the columns with their units."""
    raw = card.raw
    metric = f", metric {raw['metric']}" if raw.get("metric") else ""
    fields = [
        ("task", f"{raw['task']}{metric}" if raw.get("task") else ""),
        ("targets", ", ".join(card.targets)),
        ("split", _split_text(card.split)),
        ("licence", card.license),
        ("citation", card.citation),
        ("source", ", ".join(str(raw[k]) for k in ("canonical_url", "package") if raw.get(k))),
    ]
    files = [(spec.name, _file_text(spec)) for spec in card.files]
    columns = [
        (column, unit or "-", str((raw["columns"][column] or {}).get("description") or ""))
        for column, unit in card.units.items()
    ]
    blocks = [
        [f"{card.name}: {card.family} family, {_rows(card.rows)}"],
        table_lines([("", card.description)], width, wrap=True),
        table_lines([(k, v) for k, v in fields if v], width, wrap=True),
        ["files", *table_lines([("", *row) for row in files], width, wrap=True)],
    ]
    if columns:
        rows = [("", "column", "unit", "description"), *(("", *row) for row in columns)]
        blocks.append(table_lines(rows, width, wrap=True))
    blocks.append(["card file (--yaml prints it):", f"  {card.path}"])  # a path of any length
    return "\n\n".join("\n".join(block) for block in blocks)


def _rows(number: int | None) -> str:
    """``1,128 rows``, or ``rows unknown`` where the card gives no number."""
    return "rows unknown" if number is None else f"{number:,} rows"


def _split_text(split: dict[str, Any]) -> str:
    """A card's split protocol in words: ``random: 80/10/10, seed 0``, ``counts: train 25,000 /
    valid 5,000 / test 10,000, seed 0``, ``official: validation size 20,000, seed 0``."""
    parts = []
    for key, value in split.items():
        if key == "fractions":
            parts.append("/".join(f"{100 * fraction:g}" for fraction in value))
        elif key == "counts":
            parts.append(" / ".join(f"{part} {count:,}" for part, count in value.items()))
        elif key != "method":
            shown = f"{value:,}" if isinstance(value, int) else value
            parts.append(f"{key.replace('_', ' ')} {shown}")
    method = str(split.get("method", "not given"))
    return f"{method}: {', '.join(parts)}" if parts else method


def _file_text(spec: SourceFile) -> str:
    """What a source file is: split, rows, size, checksum, optional, then its URL."""
    parts = [f"split {spec.split}"] if spec.split else []
    if spec.rows is not None:
        parts.append(_rows(spec.rows))
    if spec.bytes is not None:
        parts.append(f"{spec.bytes / 1e6:.1f} MB" if spec.bytes >= 1e6 else f"{spec.bytes:,} bytes")
    if spec.sha256 or spec.md5:
        parts.append(f"{'sha256' if spec.sha256 else 'md5'} checked")
    else:
        parts.append("no published checksum")
    if spec.optional:
        parts.append("optional")
    return f"{', '.join(parts)}; {spec.url or 'no download URL (see the card)'}"
