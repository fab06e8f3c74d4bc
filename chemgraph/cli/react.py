"""``chemgraph react``: reaction products from the shipped reaction-centre model (default), a
reaction-centre checkpoint, or a GRAT translator checkpoint of the reaction_outcome recipe
(``--decoder generate``)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from chemgraph.cli.base import Command, ExamplesHelpFormatter
from chemgraph.cli.common import (
    add_batch_size_option,
    add_checkpoint_option,
    add_id_column_option,
    add_input_option,
    add_output_option,
    add_overwrite_option,
    add_workers_option,
)

__all__ = ["ReactCommand", "given_product", "no_confident_product_line", "reaction_lines"]

log = logging.getLogger(__name__)


class ReactCommand(Command):
    """Product prediction: reaction centres (:mod:`chemgraph.reactions.reaction_centre`) or GRAT
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
        "A product is valid only when it has no radical or bare atom the reactants lack, its\n"
        "atoms come from the reactants and it is not too strained to exist (anti-Bredt, small\n"
        "cycloalkynes, fused cyclopropenes); the centre decoder also offers only balanced\n"
        "products: a reduction needs a reducing agent among the reactants and reagents, an\n"
        "oxidation an oxidising one (chemgraph.chem.validity lists them). Below the top-1\n"
        "probability chosen on held-out reactions (the model card) the outcome is 'no\n"
        "confident product', printed after the candidates.\n\n"
        "--input reads one reaction SMILES a line (text after the first whitespace ignored),\n"
        "or a .csv/.tsv with a reaction, reactions or rxn_smiles column (USPTO-50K files too),\n"
        "plain or gzipped; --output gets one row per reaction, in input order, written as the\n"
        "reactions are predicted to OUTPUT.partial (opened before the first prediction;\n"
        "renamed to OUTPUT when complete, kept with the rows so far when a run stops).\n"
        "Reactions that hold products are scored (top-1/2/3/5 accuracy over those reactions).\n\n"
        "A reaction given on the command line with its product ('reactants>reagents>product')\n"
        "gets '= target' after the matching rank, as with --input (a warning when the\n"
        "product is not among the predictions). Molecules written above the arrow\n"
        "('>reagents>') give atoms like reactants (HNO3 its nitro group), as in USPTO-MIT,\n"
        "which the shipped model was trained on; --output still lists them as reagents.\n"
        "After one reaction's predictions come the best products the rules refused ('not\n"
        "offered: SMILES (reason)') and how many stereocentres the first product has whose\n"
        "configuration is not predicted (made or changed by the reaction).\n"
        "One reaction's predictions are printed a line each, tab-separated: rank, product\n"
        "SMILES, score (centre: the calibrated probability that it is the product, each\n"
        "product's own, so they need not sum to 1; generate: the log-probability) and, for\n"
        "the centre decoder, the bonds it changes as i-j:class (i, j: 0-based atom positions\n"
        "in the input as written, reactants then reagents, not atom-map numbers; class: none,\n"
        "single, double, triple or aromatic).\n"
        "An element outside those the centre model has its own atom feature for\n"
        "(chemgraph.batches.reaction_centre.ELEMENTS, USPTO's commonest) gets a warning: the\n"
        "prediction lies outside its training domain (--output: column unknown_elements).\n"
        "--quiet: with --input, nothing but warnings and errors is printed (the predictions\n"
        "are in --output); one reaction's predictions are the output and are printed anyway.\n\n"
        "Exit status: 0 when a product is predicted; 2 (a user error, one line on stderr) when\n"
        "the reaction given on the command line gets no valid product or cannot be read. With\n"
        '--input, a reaction without a prediction is reported in its row ("not predicted:\n'
        '<reason>" or "no valid product graph was decoded"), in --output\'s error column\n'
        "and in the summary's counts, and the status stays 0 unless no reaction of the file\n"
        "gets a prediction (then 2)."
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
        add_input_option(
            parser,
            "file of reactions: one reaction SMILES a line, or a .csv/.tsv with a reaction "
            "column (plain or .gz)",
        )
        parser.add_argument(
            "--decoder",
            choices=("centre", "generate"),
            default="centre",
            help="centre: reaction-centre prediction (default; the shipped model unless "
            "--checkpoint); generate: GRAT's autoregressive decoder (needs --checkpoint)",
        )
        add_checkpoint_option(
            parser,
            "with --decoder centre, a model.pt of chemgraph.reactions.reaction_centre "
            "(default: the shipped model); with --decoder generate, best.ckpt of the "
            "reaction_outcome recipe, or the run folder holding it",
        )
        add_output_option(
            parser,
            "CSV file to write (with --input): one row per non-blank input line, in input order "
            "(row = 0-based line number, or data row of a .csv/.tsv), id (see --id-column), "
            "reaction, target (the "
            "recorded product, when the input has one) and target_rank (its rank among the "
            "predictions, empty if absent), top1_invalid, prediction_k and score_k for k up to "
            "--top-k; with the centre decoder outcome (product, or no confident product when "
            "the top-1 probability is below the model's threshold), edits_1 (the bonds the top "
            "prediction changes, i-j:class with 0-based input atoms), undetermined_stereo_1 "
            "(stereocentres and double bonds the top prediction makes or changes, whose "
            "configuration is not predicted), refused (the best products the rules refused, "
            "with the reason), reagents (the reagent field as written), unknown_elements "
            "(elements the model has no atom feature for); and an error column saying why a "
            "reaction was not decoded",
        )
        add_id_column_option(
            parser,
            "with a .csv/.tsv --input, the identifier column copied into --output's id "
            "column, stripped of surrounding blanks, empty where the cell is (default: a "
            "column named id, ID or Id; without one, id is the row number)",
        )
        parser.add_argument(
            "--show",
            type=int,
            default=20,
            metavar="N",
            help="with --input, print the predictions of the first N reactions (0 = only the "
            "summary; all are in --output)",
        )
        add_overwrite_option(parser, "replace an existing --output file")
        parser.add_argument("--top-k", type=int, default=5, help="predictions per reaction")
        parser.add_argument("--beam-width", type=int, default=8, help="beam width (generate)")
        add_batch_size_option(parser, "reactions per beam search", 32)
        add_workers_option(
            parser,
            "with --input and --decoder centre, processes that enumerate candidate products "
            "while the model ranks the last ones (same predictions); each starts once per run, "
            "so they pay for files of many reactions, not for a few (benchmarks/README.md)",
        )

    def run(self, args: argparse.Namespace) -> int:
        """Predict and print the products.

        Raises:
            chemgraph.errors.ChemgraphError: the reaction given gets no valid product, or no
                reaction of ``--input`` gets one (each one's reason is in ``--output``): exit
                status 2, as for other user errors.
        """
        from chemgraph.chem.reaction_edits import BOND_CLASSES
        from chemgraph.errors import ChemgraphError, ConfigError
        from chemgraph.jobs.react import INPUT_FORMAT, ReactOptions, react, react_file
        from chemgraph.reactions.predictions import NO_PRODUCT, format_top_k_metrics, target_rank
        from chemgraph.reactions.reaction_centre import NO_CONFIDENT_PRODUCT

        if (args.reaction is None) == (args.input is None):
            raise ConfigError("give either one reaction SMILES or --input FILE (with --output)")
        if args.output is not None and args.input is None:
            raise ConfigError(
                "--output goes with --input FILE; the predictions of one reaction are printed"
            )
        if args.input is None and args.workers != 1:
            raise ConfigError("--workers goes with --input FILE; one reaction is predicted here")
        if args.input is None and args.id_column is not None:
            raise ConfigError("--id-column goes with --input FILE (a .csv or .tsv)")
        if args.input is not None and args.output is None:
            raise ConfigError("--input needs --output FILE.csv")
        if args.show < 0:
            raise ConfigError(f"--show must be at least 0, got {args.show}")
        options = ReactOptions(
            decoder=args.decoder, checkpoint=args.checkpoint, top_k=args.top_k,
            beam_width=args.beam_width, batch_size=args.batch_size, workers=args.workers,
        )  # fmt: skip
        if args.input is None:
            prediction = react(args.reaction, options)
            if not prediction.smiles:
                refused = "".join(
                    f"; not offered: {smiles} ({why})"
                    for smiles, why in getattr(prediction, "refused", [])
                )
                raise ChemgraphError(
                    f"no product predicted for {args.reaction!r}: {NO_PRODUCT}{refused}; check "
                    "that the reaction SMILES holds every reactant ('reactants>reagents>') and "
                    "that they can react as written"
                )
            target = given_product(args.reaction)
            hit = target_rank(prediction.smiles, target)
            edits = getattr(prediction, "edits", None)  # the reaction-centre model's
            for rank, (smiles, score) in enumerate(zip(prediction.smiles, prediction.scores), 1):
                centre = ""
                if edits is not None:  # bonds changed, 0-based atom indices as written
                    centre = "\t" + ";".join(
                        f"{i}-{j}:{BOND_CLASSES[c]}" for i, j, c in edits[rank - 1]
                    )
                mark = "\t= target" if rank == hit else ""
                print(f"{rank}\t{smiles}\t{score:.4f}{centre}{mark}")
            if not getattr(prediction, "confident", True):
                print(no_confident_product_line(prediction))
            for smiles, why in getattr(prediction, "refused", []):
                log.info("not offered: %s (%s)", smiles, why)
            if getattr(prediction, "undetermined_stereo", 0):
                log.info(
                    "the first product has %d stereocentre(s) or double bond(s) that the "
                    "reaction makes or changes: their configuration is not predicted",
                    prediction.undetermined_stereo,
                )  # fmt: skip
            if target and hit is None:
                log.warning(
                    "the given product %s is not among the %d predictions",
                    target, len(prediction.smiles),
                )  # fmt: skip
            return 0
        table, metrics = react_file(
            args.input, args.output, options, overwrite=args.overwrite, id_column=args.id_column
        )
        quiet = args.quiet  # warnings and errors only: the predictions are in --output
        for line in [] if quiet else reaction_lines(table.head(args.show), args.top_k):
            print(line)
        if len(table) > args.show > 0 and not quiet:
            print(f"... {len(table) - args.show} more reactions in {args.output}")
        # read and encoded: a prediction, or none valid (NO_PRODUCT); else the reason it was not
        searched = int(table["error"].isin(["", NO_PRODUCT]).sum())
        if searched == 0:
            raise ConfigError(
                f"none of the {len(table)} lines of {args.input} could be read and "
                f"encoded ({args.output} gives each one's reason in its error column); "
                f"fix them, or {INPUT_FORMAT}"
            )
        # decoded: a valid product predicted; a reaction whose beams (or candidates) hold
        # none is read and searched, but not decoded
        predicted = int((table["prediction_1"] != "").sum())
        # only rows with a prediction have top1_invalid (the best-scoring graph was invalid,
        # a lower-ranked one valid: the generate decoder)
        invalid_top1 = int(table["top1_invalid"].fillna(False).sum())
        unconfident = 0
        if "outcome" in table:  # the centre decoder's
            unconfident = int((table["outcome"] == NO_CONFIDENT_PRODUCT).sum())
        if not quiet:
            print(f"{len(table)} lines read: {predicted} decoded (a valid product predicted), "
                  f"{searched - predicted} without a valid product, {len(table) - searched} "
                  f"not read or encoded; of the {predicted} decoded, {invalid_top1} with a "
                  "best-scoring graph that was not a valid product (a radical or bare atom the "
                  f"reactants lack, or atoms they do not hold) and {unconfident} with no "
                  "confident product (the best product's probability below the model's "
                  f"threshold) (written to {args.output}; its error column says why a line has "
                  "no prediction)")  # fmt: skip
        if metrics is not None and not quiet:
            print(
                f"top-k accuracy over {metrics['reactions']} of {len(table)} lines "
                "(the reactions read with a known product):"
            )
            print(format_top_k_metrics(metrics))
        if predicted == 0:
            raise ChemgraphError(
                f"none of the {len(table)} lines of {args.input} got a prediction "
                f"({searched} without a valid product, {len(table) - searched} not read or "
                f"encoded; {args.output} gives each one's reason in its error column)"
            )
        return 0


def reaction_lines(table: Any, top_k: int) -> list[str]:
    """The printed predictions of the rows of a :func:`chemgraph.jobs.react.predict_file`
    table: per reaction a line ``row N: <reaction>`` (``row N (id X): ...`` when the input
    names it), then one line ``  rank<TAB>SMILES<TAB>
    score`` per valid prediction (``<TAB>= target`` ending the one that matches the products
    given), or ``  no valid product graph was decoded``, or ``  not predicted: <error>``;
    ``  no confident product (...)`` after the predictions of a reaction whose ``outcome``
    column says so."""
    import pandas as pd

    from chemgraph.reactions.predictions import NO_PRODUCT
    from chemgraph.reactions.reaction_centre import NO_CONFIDENT_PRODUCT

    lines = []
    for record in table.to_dict("records"):
        own_id = record["id"] not in ("", str(record["row"]))
        named = f" (id {record['id']})" if own_id else ""
        lines.append(f"row {record['row']}{named}: {record['reaction']}")
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
        if record.get("outcome") == NO_CONFIDENT_PRODUCT:
            lines.append(f"  {NO_CONFIDENT_PRODUCT} (the best product's probability is below "
                         "the model's threshold)")  # fmt: skip
    return lines


def no_confident_product_line(prediction: Any) -> str:
    """The line printed after the candidates of a reaction-centre prediction whose top-1
    probability is below its model's threshold."""
    return (
        f"no confident product: the best product's probability {prediction.scores[0]:.4f} is "
        f"below {prediction.threshold:.4f}, the threshold chosen on held-out reactions"
    )


def given_product(reaction: str) -> str:
    """Canonical SMILES of the product field of a reaction SMILES (atom maps removed; ``""``
    when the field is empty or cannot be read)."""
    from rdkit import rdBase

    from chemgraph.chem.reaction_edits import mapped_reaction
    from chemgraph.chem.reactions import ReactionParseError

    try:
        with rdBase.BlockLogs():  # RDKit's log lines (a bare [H]): the prediction has run
            return mapped_reaction(reaction).product_smiles
    except ReactionParseError:
        return ""
