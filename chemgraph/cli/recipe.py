"""``chemgraph recipe list | run``: the packaged recipes (complete experiments)."""

from __future__ import annotations

import argparse

from chemgraph.cli.base import Command, add_action, add_overwrite_option, output_width, table_lines

__all__ = ["RecipeCommand"]


class RecipeCommand(Command):
    """List and run the recipes of :mod:`chemgraph.recipes.registry`."""

    name = "recipe"
    help = "list and run packaged recipes (e.g. dft_to_gw transfer learning)"
    description = "Recipes are complete experiments defined by a YAML file in recipes/NAME/."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add_action(actions, "list", "registered recipes, each with its description")
        run = add_action(actions, "run", "run a recipe and print its results")
        run.add_argument("name")
        run.add_argument("--config", help="YAML overriding the recipe's config.yaml")
        run.add_argument("--seeds", type=int, help="number of seeds (overrides the config)")
        run.add_argument(
            "--out",
            help="output folder, new or empty (default: the config's out, else runs/NAME)",
        )
        add_overwrite_option(run)

    def run(self, args: argparse.Namespace) -> int:
        from chemgraph._output import check_output_folder
        from chemgraph.recipes.registry import RECIPES, get_recipe, recipe_settings

        if args.action == "list":
            rows = [(name, get_recipe(name).DESCRIPTION) for name in RECIPES]
            print("\n".join(table_lines(rows, output_width(), wrap=True)))
            return 0
        from chemgraph.train.trainer import quiet_third_party_warnings

        quiet_third_party_warnings()
        module = get_recipe(args.name)
        out = args.out or recipe_settings(args.name, args.config).get("out") or f"runs/{args.name}"
        check_output_folder(out, "--out", args.overwrite, "--overwrite")
        module.run(config=args.config, seeds=args.seeds, out=out)
        return 0
