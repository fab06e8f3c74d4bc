"""``chemgraph react``: reaction products from the shipped reaction-centre model (default), a
reaction-centre checkpoint, or a GRAT translator checkpoint of the reaction_outcome recipe
(``--decoder generate``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chemgraph.cli.base import Command, ExamplesHelpFormatter

__all__ = ["INPUT_FORMAT", "ReactCommand", "reaction_lines"]


class ReactCommand(Command):
    """Product prediction: reaction centres (:mod:`chemgraph.jobs.reaction_centre`) or GRAT
    beam search (:mod:`chemgraph.jobs.react`)."""

    name = "react"
    help = "predict reaction products (shipped reaction-centre model, or a GRAT checkpoint)"
    description = (
        "Predict the products of reactions given as reaction SMILES 'reactants>reagents>'.\n"
        "--decoder centre (default): a GRAT encoder scores which bonds change, candidate\n"
        "products are built from the best-scored changes with RDKit (valid by construction)\n"
        "and ranked; the products are printed best first with their probabilities. Without\n"
        "--checkpoint the model shipped with chemgraph is used (trained on 30,000 USPTO-MIT\n"
        "reactions; its card: chemgraph/_data/models/README.md).\n"
        "--decoder generate: a GRAT translator checkpoint of the reaction_outcome recipe\n"
        "decodes product graphs atom by atom by beam search (log-probabilities).\n"
        "A product is valid only when it has no radical or bare atom the reactants lack and\n"
        "its atoms come from the reactants (chemgraph.chem.validity).\n\n"
        "--input reads one reaction SMILES a line (text after the first whitespace ignored),\n"
        "or a .csv/.tsv with a reaction, reactions or rxn_smiles column (USPTO-50K files too),\n"
        "plain or gzipped; --output gets one row per reaction, in input order. Reactions that\n"
        "hold products are scored (top-1/2/3/5 accuracy over those reactions)."
    )
    epilog = (
        "examples:\n"
        '  chemgraph react "CC(=O)Cl.OCC>c1ccncc1>"\n'
        "  chemgraph react --input reactions.txt --output predictions.csv\n"
        '  chemgraph react "CC(=O)Cl.OCC>c1ccncc1>" --decoder generate --checkpoint best.ckpt\n'
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
            "--decoder",
            choices=("centre", "generate"),
            default="centre",
            help="centre: reaction-centre prediction (default; the shipped model unless "
            "--checkpoint); generate: GRAT's autoregressive decoder (needs --checkpoint)",
        )
        parser.add_argument(
            "--checkpoint",
            help="with --decoder centre, a model.pt of chemgraph.jobs.reaction_centre "
            "(default: the shipped model); with --decoder generate, best.ckpt of the "
            "reaction_outcome recipe, or the run folder holding it",
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
        parser.add_argument("--beam-width", type=int, default=8, help="beam width (generate)")
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
        if args.decoder == "generate" and args.checkpoint is None:
            raise ConfigError("--decoder generate needs --checkpoint (best.ckpt of the "
                              "reaction_outcome recipe)")  # fmt: skip
        checkpoint = None if args.checkpoint is None else Path(args.checkpoint)
        if checkpoint is not None and checkpoint.is_dir():  # a reaction_outcome run folder
            checkpoint = checkpoint / "best.ckpt"
        for option in ("top_k", "beam_width", "batch_size"):
            if getattr(args, option) < 1:
                name = "--" + option.replace("_", "-")
                raise ConfigError(f"{name} must be at least 1, got {getattr(args, option)}")
        if args.show < 0:
            raise ConfigError(f"--show must be at least 0, got {args.show}")
        if args.decoder == "generate" and args.top_k > args.beam_width:
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
            if args.decoder == "centre":
                from chemgraph.jobs.reaction_centre import predict_reaction_file

                model = _centre_model(checkpoint)
                table, metrics = predict_reaction_file(model, args.input, args.output, args.top_k)
            else:
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
            invalid_top1 = int(table["top1_invalid"].fillna(False).sum())
            print(f"{len(table)} reactions read, {decoded} decoded, {valid} with a valid "
                  f"product, {invalid_top1} whose best-scoring product was not valid (a radical "
                  "or bare atom the reactants lack, or atoms they do not hold) or missing "
                  f"(written to {args.output}; its error column says why a reaction has no "
                  "prediction)")  # fmt: skip
            if metrics is not None:
                print(
                    f"top-k accuracy over {metrics['reactions']} of {len(table)} reactions "
                    "(the decoded ones with a known product):"
                )
                print(format_top_k_metrics(metrics))
            return 0
        if args.decoder == "centre":
            return _predict_one_centre(_centre_model(checkpoint), args.reaction, args.top_k)
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


def _centre_model(checkpoint: Path | None):
    """The reaction-centre model of ``checkpoint``, or the shipped one."""
    from chemgraph._resources import model_path
    from chemgraph.errors import ConfigError
    from chemgraph.jobs.reaction_centre import load_reaction_centre_model

    path = model_path() if checkpoint is None else checkpoint
    if not path.is_file():
        raise ConfigError(f"checkpoint {path} does not exist")
    try:
        return load_reaction_centre_model(path)
    except ValueError as error:
        raise ConfigError(
            f"{error}; a GRAT translator checkpoint needs --decoder generate"
        ) from error


def _predict_one_centre(model, text: str, top_k: int) -> int:
    """Print the ranked products of one reaction: rank, SMILES, probability, and the
    reaction centre (bonds changed, 0-based atom indices of the input as written)."""
    from chemgraph.chem.reaction_edits import BOND_CLASSES
    from chemgraph.data.reaction_centre import reaction_centre_example
    from chemgraph.jobs.react import NO_PRODUCT

    example = reaction_centre_example(text, model.config.max_distance, with_edits=False)
    (prediction,) = model.predict([example], top_k=top_k)
    if not prediction.smiles:
        print(NO_PRODUCT)
    for rank, (smiles, p, edits) in enumerate(
        zip(prediction.smiles, prediction.scores, prediction.edits), 1
    ):
        centre = ";".join(f"{i}-{j}:{BOND_CLASSES[c]}" for i, j, c in edits)
        print(f"{rank}\t{smiles}\t{p:.4f}\t{centre}")
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
