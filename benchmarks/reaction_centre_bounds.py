"""Where the reaction-centre model loses its reactions: the bounds of its top-k accuracy.

A product can be ranked only if it is among the candidates, and it is among them only if (1)
every recorded edit is among the scorer's ``top_changes`` best-scored bond changes, (2) their
combination is among the first ``max_tries`` combinations
(:func:`chemgraph.data.reaction_centre.ranked_combinations`, by summed logit) and (3) applying
it gives the recorded product (hydrogens, charges and the choice of the main fragment derived
by :func:`chemgraph.data.reaction_centre.enumerate_candidates`). This script measures each
stage for a model (default: the shipped one) on a set of reactions, and the recall of the
recorded edits among the best K changes for larger K (what a larger ``top_changes`` could
reach with the same scorer):

* ``--split calibration``: the last 2,000 reactions of the USPTO-MIT valid split, the shipped
  model's held-out calibration reactions (neither its scorer nor its ranker trained on them;
  the models shipped before 2026-12-04 trained their scorer on them);
* ``--split test``: the first 2,000 USPTO-MIT test reactions (reporting only: no setting is
  chosen on them).

    OMP_NUM_THREADS=1 python benchmarks/reaction_centre_bounds.py --split calibration
    OMP_NUM_THREADS=1 python benchmarks/reaction_centre_bounds.py --split test
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from chemgraph._resources import model_path
from chemgraph.chem.graph_codec import same_molecules
from chemgraph.data.reaction_centre import load_reaction_centre_examples, ranked_combinations
from chemgraph.reactions.reaction_centre import load_reaction_centre_model

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "uspto"
RECALL_AT = (6, 8, 10, 12, 16, 20, 30, 40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["calibration", "test"], default="calibration")
    parser.add_argument("--checkpoint", default=None, help="model.pt (default: the shipped one)")
    parser.add_argument("--reactions", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2, help="candidate enumeration")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = load_reaction_centre_model(args.checkpoint or model_path())
    settings = model.settings
    if args.split == "calibration":
        examples, _, _ = load_reaction_centre_examples(
            args.data / "uspto_mit_valid.txt.gz", model.config.max_distance, progress=False
        )
        examples = examples[-args.reactions :]
    else:
        examples, _, _ = load_reaction_centre_examples(
            args.data / "uspto_mit_test.txt.gz",
            model.config.max_distance,
            args.reactions,
            progress=False,
        )
    examples = [e for e in examples if e.edits]
    count = len(examples)

    settings["top_changes"], top = max(RECALL_AT), settings["top_changes"]
    scored = model.changes(examples)
    settings["top_changes"] = top
    needed = []  # changes needed to hold every recorded edit (inf: not among the best 40)
    in_tries = []  # recorded combination among the first max_tries (edits in the top ones)
    for example, (found, _) in zip(examples, scored):
        position = {edit: k for k, (edit, _) in enumerate(found)}
        ranks = [position.get(tuple(edit), np.inf) for edit in example.edits]
        needed.append(max(ranks) + 1)
        if max(ranks) < top and len(ranks) <= settings["max_edits"]:
            combos = [combo for _, combo in ranked_combinations(found[:top], settings["max_edits"])]
            in_tries.append(tuple(sorted(ranks)) in combos[: settings["max_tries"]])
        else:
            in_tries.append(False)
    needed = np.array(needed)
    candidates = model.candidates(examples, workers=args.workers)
    covered = np.array(
        [
            any(same_molecules(c.smiles, e.product_smiles) for c in found)
            for e, (found, _) in zip(examples, candidates)
        ]
    )
    predictions = model.predict(examples, top_k=5, workers=args.workers)
    rank = np.array(
        [
            next((k for k, s in enumerate(p.smiles) if same_molecules(s, e.product_smiles)), 99)
            for e, p in zip(examples, predictions)
        ]
    )
    print(f"{args.split}: {count:,} reactions with recorded edits; settings top_changes {top}, "
          f"max_edits {settings['max_edits']}, max_tries {settings['max_tries']}, "
          f"max_candidates {settings['max_candidates']}\n")  # fmt: skip
    print("| stage | reactions | share |\n|---|---:|---:|")
    rows = [
        (f"every recorded edit among the best {top} changes", needed <= top),
        (f"... and their combination among the first {settings['max_tries']} tried",
         np.array(in_tries)),
        ("recorded product among the candidates", covered),
        ("recorded product in the top 5", rank < 5),
        ("recorded product first", rank < 1),
    ]  # fmt: skip
    for name, hit in rows:
        print(f"| {name} | {int(hit.sum()):,} | {100 * hit.mean():.1f}% |")
    print("\n| best K changes | every recorded edit among them |\n|---:|---:|")
    for k in RECALL_AT:
        print(f"| {k} | {100 * np.mean(needed <= k):.1f}% |")


if __name__ == "__main__":
    main()
