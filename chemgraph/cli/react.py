"""``chemgraph react``: reaction products from a GRAT checkpoint of the reaction_outcome recipe."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chemgraph.cli.base import Command, ExamplesHelpFormatter

__all__ = ["INPUT_FORMAT", "ReactCommand", "reaction_lines"]


class ReactCommand(Command):
    """Beam-search product prediction (:mod:`chemgraph.jobs.react`)."""

    name = "react"
    help = "predict reaction products with a trained GRAT checkpoint (beam search)"
    description = (
        "Predict the products of reactions given as reaction SMILES 'reactants>reagents>'\n"
        "with a checkpoint of the reaction_outcome recipe: GRAT decodes product graphs by beam\n"
        "search; each reaction's products are printed as canonical SMILES, deduplicated, best\n"
        "first, with their log-probabilities, or 'no valid product graph was decoded'.\n\n"
        "--input reads one reaction SMILES a line (text after the first whitespace ignored),\n"
        "or a .csv/.tsv with a reaction, reactions or rxn_smiles column (USPTO-50K files too),\n"
        "plain or gzipped; --output gets one row per reaction, in input order. Reactions that\n"
        "hold products are scored (top-1/2/3/5 accuracy over those reactions)."
    )
    epilog = (
        "examples:\n"
        '  chemgraph react "CC(=O)Cl.OCC>c1ccncc1>" --checkpoint best.ckpt --top-k 5\n'
        "  chemgraph react --input reactions.txt --checkpoint best.ckpt --output predictions.csv\n"
        "  chemgraph react --input uspto50k_test_raw.csv.gz --checkpoint best.ckpt \\\n"
        "      --output predictions.csv --show 5"
    )
    formatter_class = ExamplesHelpFormatter

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("reaction", nargs="?", help="one reaction SMILES 'reactants>reagents>'")
        parser.add_argument(
            "--input",
            help="file of reactions: one reaction SMILES a line, or a .csv/.tsv with a reaction "
            "column (plain or .gz)",
        )
        parser.add_argument(
            "--checkpoint",
            required=True,
            help="best.ckpt of the reaction_outcome recipe, or the run folder holding it",
        )
        parser.add_argument(
            "--output",
            help="CSV to write (with --input): one row per non-blank input line, in input order "
            "(row = 0-based line number, or data row of a .csv/.tsv), prediction_k and score_k "
            "for k up to --top-k, and an error column saying why a reaction was not decoded",
        )
        parser.add_argument(
            "--show",
            type=int,
            default=20,
            metavar="N",
            help="with --input, print the predictions of the first N reactions (0 = only the "
            "summary; all are in --output)",
        )
        parser.add_argument(
            "--overwrite", action="store_true", help="replace an existing --output file"
        )
        parser.add_argument("--top-k", type=int, default=5, help="predictions per reaction")
        parser.add_argument("--beam-width", type=int, default=8, help="beam width")
        parser.add_argument("--batch-size", type=int, default=32, help="reactions per beam search")

    def run(self, args: argparse.Namespace) -> int:
        from chemgraph.chem.graph_codec import GraphEncodingError
        from chemgraph.data.reactions import (
            encode_reactions,
            parse_input_reaction,
            reaction_records,
        )
        from chemgraph.errors import ConfigError
        from chemgraph.jobs.react import (
            NO_PRODUCT,
            format_top_k_metrics,
            predict_file,
            predict_reactions,
        )
        from chemgraph.train.checkpoint import load_checkpoint

        if (args.reaction is None) == (args.input is None):
            raise ConfigError("give either one reaction SMILES or --input FILE (with --output)")
        if args.output is not None and args.input is None:
            raise ConfigError(
                "--output goes with --input FILE; the predictions of one reaction are printed"
            )
        if args.output is not None and not args.output.endswith((".csv", ".csv.gz")):
            raise ConfigError(f"--output {args.output}: react writes CSV; give a .csv or .csv.gz")
        checkpoint = Path(args.checkpoint)
        if checkpoint.is_dir():  # a reaction_outcome run folder
            checkpoint = checkpoint / "best.ckpt"
        for option in ("top_k", "beam_width", "batch_size"):
            if getattr(args, option) < 1:
                name = "--" + option.replace("_", "-")
                raise ConfigError(f"{name} must be at least 1, got {getattr(args, option)}")
        if args.show < 0:
            raise ConfigError(f"--show must be at least 0, got {args.show}")
        if args.top_k > args.beam_width:
            raise ConfigError(f"--top-k {args.top_k} exceeds --beam-width {args.beam_width}")
        if args.input is not None:
            if not Path(args.input).is_file():
                raise ConfigError(f"input {args.input} does not exist")
            if args.output is None:
                raise ConfigError("--input needs --output FILE.csv")
            if Path(args.output).exists() and not args.overwrite:
                raise ConfigError(
                    f"{args.output} exists; pass --overwrite to replace it or choose another "
                    "--output"
                )
            if next(reaction_records(args.input), None) is None:
                raise ConfigError(f"{args.input} holds no reactions; {INPUT_FORMAT}")
            table, metrics = predict_file(
                checkpoint, args.input, args.output, args.top_k, args.beam_width,
                args.batch_size,
            )  # fmt: skip
            for line in reaction_lines(table.head(args.show), args.top_k):
                print(line)
            if len(table) > args.show > 0:
                print(f"... {len(table) - args.show} more reactions in {args.output}")
            decoded = int(table["top1_invalid"].notna().sum())
            if decoded == 0:
                raise ConfigError(
                    f"none of the {len(table)} reactions of {args.input} could be read and "
                    f"encoded ({args.output} gives each one's reason in its error column); "
                    f"fix them, or {INPUT_FORMAT}"
                )
            valid = int((table["prediction_1"] != "").sum())
            print(f"{len(table)} reactions read, {decoded} decoded, {valid} with a valid "
                  f"product (written to {args.output}; its error column says why a reaction "
                  "has no prediction)")  # fmt: skip
            if metrics is not None:
                print(
                    f"top-k accuracy over {metrics['reactions']} of {len(table)} reactions "
                    "(the decoded ones with a known product):"
                )
                print(format_top_k_metrics(metrics))
            return 0
        module = load_checkpoint(checkpoint, kind="reaction")
        reaction = parse_input_reaction(args.reaction)
        items, _, bad = encode_reactions([reaction], [0], with_product=False)
        if bad:
            raise GraphEncodingError(bad[0][2])
        (prediction,) = predict_reactions(module, items, args.beam_width, args.top_k, 1)
        if not prediction.smiles:
            print(NO_PRODUCT)
        for rank, (smiles, score) in enumerate(zip(prediction.smiles, prediction.scores), 1):
            print(f"{rank}\t{smiles}\t{score:.4f}")
        return 0


INPUT_FORMAT = (
    "give one reaction SMILES 'reactants>reagents>[products]' a line, or a .csv/.tsv with a "
    "reaction column"
)
"""What ``chemgraph react --input`` reads, told to a user whose file gave no reaction."""


def reaction_lines(table: Any, top_k: int) -> list[str]:
    """The printed predictions of the rows of a :func:`chemgraph.jobs.react.predict_file`
    table: per reaction a line ``row N: <reaction>``, then one line ``  rank<TAB>SMILES<TAB>
    score`` per valid prediction (``<TAB>= target`` ending the one that matches the products
    given), or ``  no valid product graph was decoded``, or ``  not predicted: <error>``."""
    import pandas as pd

    from chemgraph.jobs.react import NO_PRODUCT

    lines = []
    for record in table.to_dict("records"):
        lines.append(f"row {record['row']}: {record['reaction']}")
        if record["error"]:
            reason = record["error"]
            lines.append(f"  {reason}" if reason == NO_PRODUCT else f"  not predicted: {reason}")
            continue
        hit = record["target_rank"]
        for rank in range(1, top_k + 1):
            smiles = record[f"prediction_{rank}"]
            if not smiles:
                break
            mark = "\t= target" if not pd.isna(hit) and int(hit) == rank else ""
            lines.append(f"  {rank}\t{smiles}\t{record[f'score_{rank}']:.4f}{mark}")
    return lines
