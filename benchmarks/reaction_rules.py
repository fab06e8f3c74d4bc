"""The reaction-centre model against textbook reactions and traps, and on USPTO-MIT (issue 46).

Part 1, ``reaction_traps.csv`` (this folder): 31 reactions with the answer a chemist gives,
written before the model was run on them: textbook reactions (Diels-Alder, esterification,
reductions and oxidations with their agents), reactions whose reagents above the arrow give
atoms (nitration, azide, cyanide, iodomethane, SOCl2) and traps that do not react (benzene and
ethanol, two alkanes, a nitro compound without a reducing agent). A reaction is **right** when

* its answer is a product (``|`` separates accepted ones) and the top-1 is that product with
  the outcome "product" (the calibrated probability at or above the model's threshold); the
  answer's stereochemistry is compared only where it has some;
* its answer is ``no reaction`` and the model offers no valid product or "no confident
  product".

Also counted: the top-1 is the answer whatever its probability (a product answer's top-1 below
the threshold counts), top-1s that are **unbalanced** (a reduction or oxidation no reactant or
reagent accounts for, :func:`chemgraph.chem.validity.redox_problem`, recomputed from the top-1's
edits) and the simplest baseline (always "no reaction").

Part 2 (``--uspto N``): the first N USPTO-MIT test reactions as the model card measures them
(:func:`chemgraph.reactions.reaction_centre.evaluate_reaction_centre`), split by whether the
recorded product is itself balanced by the rule (8% of USPTO-MIT records are reductions or
oxidations that name no agent: patent extractions leave reagents out), and how many predictions
are "no confident product". Reporting only: no setting is chosen on test reactions.

    OMP_NUM_THREADS=1 python benchmarks/reaction_rules.py
    OMP_NUM_THREADS=1 python benchmarks/reaction_rules.py --uspto 2000 --workers 2
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import torch
from rdkit import Chem, rdBase

from chemgraph._resources import model_path
from chemgraph.chem.reaction_edits import apply_edits, prepare_inputs
from chemgraph.chem.validity import ReactionInputs, redox_problem
from chemgraph.data.reaction_centre import load_reaction_centre_examples, reaction_centre_example
from chemgraph.reactions.predictions import target_rank
from chemgraph.reactions.reaction_centre import (
    evaluate_reaction_centre,
    load_reaction_centre_model,
    prediction_outcome,
)

HERE = Path(__file__).resolve().parent
TRAPS = HERE / "reaction_traps.csv"
DATA = HERE.parents[1] / "shared" / "data" / "uspto"
NO_REACTION = "no reaction"


def same_product(predicted: str, answer: str) -> bool:
    """``predicted`` is ``answer`` (canonical SMILES; stereo compared only when ``answer``
    has some)."""
    stereo = any(c in answer for c in "@/\\")
    forms = [Chem.MolFromSmiles(s) for s in (predicted, answer)]
    if any(m is None for m in forms):
        return False
    texts = [Chem.MolToSmiles(m, isomericSmiles=stereo) for m in forms]
    return texts[0] == texts[1]


def unbalanced(example, edits, product_atoms) -> str | None:
    """Why the product of ``edits`` is unbalanced, or None (the rule, recomputed)."""
    prepared = prepare_inputs(example.reaction.inputs)
    edited = apply_edits(prepared, edits)
    facts = ReactionInputs.from_mols([example.reaction.inputs])
    return redox_problem(prepared, edited, product_atoms, facts)


def traps(model) -> None:
    rows = list(csv.DictReader(TRAPS.open()))
    examples = [reaction_centre_example(r["reaction"], model.config.max_distance, False)
                for r in rows]  # fmt: skip
    predictions = model.predict(examples, top_k=5)
    right = loose = bad = 0
    print("| reaction | answer | top-1 (probability) | outcome | right | balanced |")
    print("|---|---|---|---|---|---|")
    for row, example, prediction in zip(rows, examples, predictions):
        outcome = prediction_outcome(prediction) or "no valid product"
        top = f"`{prediction.smiles[0]}` ({prediction.scores[0]:.2f})" if prediction.smiles else "-"
        if row["answer"] == NO_REACTION:
            first = hit = outcome != "product"
        else:
            first = bool(prediction.smiles) and any(
                same_product(prediction.smiles[0], a) for a in row["answer"].split("|")
            )
            hit = first and outcome == "product"
        loose += first
        problem = None
        if prediction.smiles:
            problem = unbalanced(example, prediction.edits[0], prediction.product_atoms[0])
        right += hit
        bad += problem is not None
        print(f"| `{row['reaction']}` | `{row['answer']}` | {top} | {outcome} | "
              f"{'yes' if hit else 'no'} | {'no: ' + problem if problem else 'yes'} |")  # fmt: skip
    traps_right = sum(r["answer"] == NO_REACTION for r in rows)
    print(f"\nright: {right} of {len(rows)} ({100 * right / len(rows):.1f}%); the top-1 is the "
          f"answer whatever its probability: {loose} ({100 * loose / len(rows):.1f}%); "
          f"unbalanced top-1: {bad}; baseline 'always no reaction': {traps_right} of {len(rows)} "
          f"({100 * traps_right / len(rows):.1f}%)")  # fmt: skip


def uspto(model, reactions: int, workers: int) -> None:
    examples, _, _ = load_reaction_centre_examples(
        DATA / "uspto_mit_test.txt.gz", model.config.max_distance, reactions, progress=False
    )
    start = time.perf_counter()
    metrics, predictions = evaluate_reaction_centre(model, examples, workers=workers)
    seconds = time.perf_counter() - start
    recorded_ok = []
    for example in examples:
        edited = apply_edits(prepare_inputs(example.reaction.inputs), example.edits)
        recorded_ok.append(
            edited is not None
            and unbalanced(example, example.edits, sorted(
                k for f in Chem.GetMolFrags(edited) if set(f) & example.reaction.product_atoms
                for k in f)) is None
        )  # fmt: skip
    recorded_ok = np.array(recorded_ok)
    hit = np.array([target_rank(p.smiles, e.product_smiles) == 1
                    for p, e in zip(predictions, examples)])  # fmt: skip
    unconfident = np.array([not p.confident for p in predictions])
    print(f"USPTO-MIT test, first {reactions} ({len(examples)} readable): top-1 "
          f"{metrics['top_1']:.2f}%, top-2 {metrics['top_2']:.2f}%, top-3 {metrics['top_3']:.2f}%, "
          f"top-5 {metrics['top_5']:.2f}%, invalid outputs {metrics['invalid_outputs']}, "
          f"top-1 AUROC {metrics['top1_auroc']:.4f}, ECE {metrics['top1_ece']:.3f}, "
          f"{len(examples) / seconds:.1f} reactions/s (evaluation, {workers} workers)")  # fmt: skip
    print(f"recorded product balanced by the rule: {recorded_ok.sum()} "
          f"({100 * recorded_ok.mean():.1f}%); top-1 on those {100 * hit[recorded_ok].mean():.2f}%,"
          f" on the others {100 * hit[~recorded_ok].mean():.2f}%")  # fmt: skip
    print(f"no confident product: {unconfident.sum()} ({100 * unconfident.mean():.1f}%), top-1 "
          f"right among them {100 * hit[unconfident].mean():.1f}%, among the others "
          f"{100 * hit[~unconfident].mean():.1f}%")  # fmt: skip
    print("\n| mean probability | right | reactions |\n|---|---|---|")
    for mean, share, count in metrics["calibration"]:
        if count:
            print(f"| {mean:.2f} | {100 * share:.1f}% | {count} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default=None, help="model.pt (default: the shipped one)")
    parser.add_argument("--uspto", type=int, default=0, help="also the first N test reactions")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rdBase.DisableLog("rdApp.*")
    model = load_reaction_centre_model(args.checkpoint or model_path())
    traps(model)
    if args.uspto:
        uspto(model, args.uspto, args.workers)


if __name__ == "__main__":
    main()
