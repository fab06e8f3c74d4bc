"""``make demo-gap``: ESA on the HOMO-LUMO gap (eV) of real QM9 molecules, offline.

Draws ``--molecules`` molecules (seed 0) from the ``qm9pack`` package, writes them as a CSV,
trains with ``recipes/property_prediction/qm9_gap.yaml`` and prints the test metrics.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from chemgraph._output import check_output_folder
from chemgraph._resources import recipe_path
from chemgraph.cli import format_metrics
from chemgraph.data.qm9pack import load_qm9pack
from chemgraph.train.runner import TrainingConfig, train

RECIPE = recipe_path("property_prediction", "qm9_gap.yaml")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/demo", help="output folder, new or empty")
    parser.add_argument(
        "--overwrite", action="store_true", help="allow a non-empty --out (an earlier run's)"
    )
    parser.add_argument("--molecules", type=int, default=10_000, help="QM9 molecules to use")
    parser.add_argument("--max-epochs", type=int, default=None, help="override the recipe")
    parser.add_argument("--config", default=str(RECIPE), help="recipe YAML")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    out = Path(args.out)
    try:
        check_output_folder(out, "--out", args.overwrite, "--overwrite")
    except ValueError as error:
        parser.error(str(error))
    out.mkdir(parents=True, exist_ok=True)
    table = load_qm9pack(args.molecules, seed=0)
    data = out / "qm9_gap.csv"
    table.to_csv(data, index=False)
    print(
        f"QM9 (qm9pack): {len(table)} molecules, HOMO-LUMO gap "
        f"{table.gap_ev.mean():.3f} ± {table.gap_ev.std():.3f} eV -> {data}"
    )
    config = TrainingConfig.from_yaml(
        args.config, data=str(data), out=str(out), max_epochs=args.max_epochs
    )
    metrics = train(config)
    print()
    print("ESA on QM9 HOMO-LUMO gap (eV), random 80/10/10 split, best validation checkpoint:")
    print(format_metrics(metrics))
    print(
        f"epochs: {metrics['epochs_trained']}; wall time {time.perf_counter() - start:.0f} s; "
        f"parity plot: {out / 'parity.png'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
