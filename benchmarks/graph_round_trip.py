"""Lossless-graph check: does every molecule survive graph -> molecule -> canonical SMILES?

For each molecule: RDKit canonical SMILES of the molecule as read (atom maps removed) against
:func:`chemgraph.chem.graph_codec.graph_to_smiles` of its labelled graph. Default input: every
product of the USPTO-MIT test split (``../shared/data/uspto/uspto_mit_test.txt.gz``, 40,000
reactions). ``--smiles-csv FILE:COLUMN`` checks a column of SMILES instead (e.g. BBBP, which has
stereocentres and E/Z double bonds; USPTO-MIT has none).

    python benchmarks/graph_round_trip.py
    python benchmarks/graph_round_trip.py --smiles-csv ../shared/data/moleculenet/BBBP.csv:smiles

Prints one row per failure (row, reason), a table of counts, and a summary line.
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from chemgraph.chem import MoleculeParseError, mols_from_smiles
from chemgraph.chem.graph_codec import round_trip_problem
from chemgraph.chem.reactions import split_reaction_smiles

USPTO_TEST = Path(__file__).resolve().parents[2] / "shared/data/uspto/uspto_mit_test.txt.gz"


def uspto_products(path: Path) -> Iterator[str]:
    """The product field of each reaction line (atom-mapped SMILES, fragments joined by '.')."""
    with gzip.open(path, "rt") as lines:
        for line in lines:
            yield split_reaction_smiles(line)[2]


def check(smiles: list[str]) -> tuple[Counter, list[tuple[int, str, str]]]:
    """Counts (checked, survived, unreadable, failed) and every failure (row, input, reason)."""
    counts: Counter = Counter()
    failures = []
    for row, (text, mol) in enumerate(zip(smiles, mols_from_smiles(smiles))):
        if isinstance(mol, MoleculeParseError):
            counts["unreadable by RDKit (not checked)"] += 1
            continue
        counts["checked"] += 1
        problem = round_trip_problem(mol)
        if problem is None:
            counts["survived"] += 1
        else:
            counts["failed"] += 1
            failures.append((row, text, problem))
    return counts, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uspto", type=Path, default=USPTO_TEST, help="USPTO-MIT .txt(.gz)")
    parser.add_argument("--smiles-csv", help="FILE:COLUMN of a table of SMILES instead")
    args = parser.parse_args()
    if args.smiles_csv:
        path, column = args.smiles_csv.rsplit(":", 1)
        smiles = pd.read_csv(path)[column].astype(str).tolist()
        source = args.smiles_csv
    else:
        smiles = list(uspto_products(args.uspto))
        source = f"{args.uspto.name} products"
    start = time.perf_counter()
    counts, failures = check(smiles)
    seconds = time.perf_counter() - start
    for row, text, reason in failures:
        print(f"FAIL row {row}: {text}  {reason}")
    print(f"{'molecules':<36}{len(smiles):>8}")
    for name in ("checked", "survived", "failed", "unreadable by RDKit (not checked)"):
        print(f"{name:<36}{counts[name]:>8}")
    rate = 100 * counts["survived"] / max(1, counts["checked"])
    print(
        f"graph round trip: {counts['survived']}/{counts['checked']} = {rate:.3f}% of {source} "
        f"unchanged, {counts['failed']} failures ({seconds:.0f} s)"
    )


if __name__ == "__main__":
    main()
