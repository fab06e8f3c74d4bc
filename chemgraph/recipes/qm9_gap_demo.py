"""The ``qm9_gap`` recipe (``make demo-gap``): ESA on the HOMO-LUMO gap (eV) of real QM9
molecules, offline.

Draws ``molecules`` molecules (seed 0) from the ``qm9pack`` package, writes them as a CSV,
trains with ``recipes/qm9_gap/config.yaml`` (:func:`chemgraph.jobs.train.train`) and logs the
test metrics. Run it with ``chemgraph recipe run qm9_gap``, or ``python -m
chemgraph.recipes.qm9_gap_demo``, which also takes ``--molecules`` and ``--max-epochs``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from pathlib import Path
from typing import Any

from chemgraph._output import check_output_folder, claimed_folder
from chemgraph.data.qm9pack import load_qm9pack
from chemgraph.errors import ConfigError
from chemgraph.jobs.train import train
from chemgraph.recipes.registry import RECIPES, recipe_settings
from chemgraph.train.config import TrainingConfig
from chemgraph.train.metrics import format_metrics

__all__ = ["DESCRIPTION", "NAME", "default_config", "run"]

# not __name__: run as ``python -m`` this module is ``__main__``, outside the chemgraph loggers
log = logging.getLogger("chemgraph.recipes.qm9_gap_demo")

NAME = "qm9_gap"
"""The recipe's name in :data:`chemgraph.recipes.registry.RECIPES`."""

DESCRIPTION = RECIPES[NAME].description


def default_config() -> dict[str, Any]:
    """The recipe's ``recipes/qm9_gap/config.yaml`` as a dict."""
    return recipe_settings(NAME, None)


def run(
    config: str | Path | dict[str, Any] | None = None,
    seeds: int | None = None,
    out: str | Path = "runs/demo_gap",
    molecules: int = 10_000,
    max_epochs: int | None = None,
) -> dict[str, dict[str, float]]:
    """Write ``molecules`` QM9 molecules to ``out/qm9_gap.csv``, train on their gap, log the
    test metrics.

    Args:
        config: a YAML file or dict of :class:`chemgraph.train.config.TrainingConfig` settings,
            merged over ``recipes/qm9_gap/config.yaml``
            (:func:`chemgraph.recipes.registry.recipe_settings`); None = that file.
        seeds: None or 1: the recipe trains one model, with the config's ``seed``.
        out: output folder (files of an earlier run are replaced).
        molecules: QM9 molecules drawn (seed 0).
        max_epochs: overrides the config's.

    Returns:
        The metrics of :func:`chemgraph.jobs.train.train` (gap RMSE/MAE in eV, R²).

    Raises:
        ImportError: ``qm9pack`` is not installed. ConfigError, ValueError: bad settings.
    """
    if seeds not in (None, 1):
        raise ConfigError(f"{NAME} trains one model (the config's seed); got {seeds} seeds")
    start = time.perf_counter()
    settings = recipe_settings(NAME, config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = load_qm9pack(molecules, seed=0)
    data = out / "qm9_gap.csv"
    table.to_csv(data, index=False)
    log.info(
        "QM9 (qm9pack): %d molecules, HOMO-LUMO gap %.3f ± %.3f eV -> %s",
        len(table), table.gap_ev.mean(), table.gap_ev.std(), data,
    )  # fmt: skip
    settings.update(data=str(data), out=str(out))
    if max_epochs is not None:
        settings["max_epochs"] = max_epochs
    # the recipe command has applied the --out rule; this run owns the folder
    metrics = train(TrainingConfig.from_dict(settings, source=NAME), overwrite=True)
    log.info(
        "\nESA on QM9 HOMO-LUMO gap (eV), random 80/10/10 split, best validation checkpoint:\n"
        "%s\nepochs: %d; wall time %.0f s; parity plot: %s",
        format_metrics(metrics), metrics["epochs_trained"], time.perf_counter() - start,
        out / "parity.png",
    )  # fmt: skip
    return metrics


def main(argv: list[str] | None = None) -> int:
    """The ``python -m chemgraph.recipes.qm9_gap_demo`` command; INFO messages go to stdout."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/demo_gap", help="output folder, new or empty")
    parser.add_argument(
        "--overwrite", action="store_true", help="allow a non-empty --out (an earlier run's)"
    )
    parser.add_argument("--molecules", type=int, default=10_000, help="QM9 molecules to use")
    parser.add_argument("--max-epochs", type=int, default=None, help="override the recipe")
    parser.add_argument("--config", help="YAML overriding the recipe's config.yaml")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as claim:
        try:
            claim.enter_context(claimed_folder(args.out, "--out"))
            check_output_folder(args.out, "--out", args.overwrite, "--overwrite")
        except ValueError as error:
            parser.error(str(error))
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger("chemgraph").addHandler(handler)
        logging.getLogger("chemgraph").setLevel(logging.INFO)
        run(args.config, out=args.out, molecules=args.molecules, max_epochs=args.max_epochs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
