"""``chemgraph datasets list | info | download | featurize``: the registered benchmark datasets."""

from __future__ import annotations

import argparse
import textwrap

from chemgraph.cli.base import Command, add_action

__all__ = ["DatasetsCommand"]


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
        add_action(actions, "list", "registered datasets")
        add_action(actions, "info", "a dataset's card").add_argument("name")
        verbs = {
            "download": "download and verify the source files",
            "featurize": "parse and featurize into cached graph shards",
        }
        for verb, text in verbs.items():
            sub = add_action(actions, verb, text)
            sub.add_argument("name")
            sub.add_argument("--root", help="folder with (or for) the source files")
            sub.add_argument(
                "--allow-unverified",
                action="store_true",
                help="accept downloads whose card has no checksum (the hash is logged)",
            )
            if verb == "featurize":
                sub.add_argument("--preset", default="canonical", help="canonical or ogb")

    def run(self, args: argparse.Namespace) -> int:
        from chemgraph.data.datasets import chemgraph_home, dataset_card, get_dataset, list_datasets

        if args.action == "list":
            print(f"{'name':<14} {'family':<12} {'rows':>8}  description")
            for name in list_datasets():
                card = dataset_card(name)
                rows = f"{card.rows:,}" if card.rows else "-"
                summary = textwrap.shorten(card.description, 60, placeholder=" …")
                print(f"{name:<14} {card.family:<12} {rows:>8}  {summary}")
            return 0
        if args.action == "info":
            print(dataset_card(args.name).path.read_text(encoding="utf-8"), end="")
            return 0
        dataset = get_dataset(args.name, args.root)
        paths = dataset.download(allow_unverified=args.allow_unverified)
        if args.action == "download":
            for path in paths:
                print(path)
            return 0
        graphs, rejected = dataset.featurize(args.preset)
        print(f"{args.name}: {len(graphs)} graphs, {len(rejected)} rejected records; "
              f"cached under {chemgraph_home() / 'featurized' / args.name}")  # fmt: skip
        reasons = rejected["reason"].astype(str).str[:80].value_counts().head(5)
        for reason, count in reasons.items():
            print(f"  {count} x {reason}")
        return 0
