"""``chemgraph recipe list | run``: the packaged recipes (complete experiments)."""

from __future__ import annotations

import argparse

from chemgraph.cli.base import Command, add_action, output_width, table_lines
from chemgraph.cli.common import (
    add_config_option,
    add_max_time_option,
    add_output_option,
    add_resume_options,
    add_seeds_option,
)

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
        add_config_option(
            run,
            "YAML with the settings to change, merged over the recipe's config.yaml (or "
            "over the profile its 'profile' key names, e.g. 'profile: cpu' for cpu.yaml)",
        )
        run.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="change one setting, over --config (repeatable); KEY may be dotted for a "
            "nested block (model_options.hidden_dim=64, training.seeds=1); VALUE is read as "
            "YAML (5, 1.0e-3, true, null, [a, b], text); an unknown key is refused with the "
            "valid ones",
        )
        add_max_time_option(
            run,
            "wall-clock budget of the training, for the recipes with a max_time_minutes "
            "setting (= --set max_time_minutes=N)",
        )
        add_seeds_option(run, "number of seeds, 0 to N-1 (overrides the config)")
        add_output_option(
            run,
            "output folder, new or empty (default: the config's out, else runs/NAME)",
            dest="out",
            aliases=("--out",),
        )
        add_resume_options(
            run,
            "continue the interrupted run in --output (stopped by Ctrl-C, SIGTERM or a "
            "scheduler) with the same settings, for the recipes that can (dft_to_gw: its "
            "finished chains are kept, the interrupted one continues from its last.ckpt)",
        )

    def run(self, args: argparse.Namespace) -> int:
        if args.action == "list":  # from the registry alone: no recipe (nor torch) is imported
            from chemgraph.recipes.registry import RECIPES

            rows = [(name, recipe.description) for name, recipe in RECIPES.items()]
            print("\n".join(table_lines(rows, output_width(), wrap=True)))
            return 0
        from chemgraph._output import check_output_folder, claimed_folder
        from chemgraph.errors import ConfigError
        from chemgraph.recipes.registry import (
            RECIPES,
            get_recipe,
            recipe_settings,
            valid_setting_keys,
            with_overrides,
        )
        from chemgraph.train.config import merge_settings, parse_assignments
        from chemgraph.train.trainer import quiet_third_party_warnings

        quiet_third_party_warnings()
        module = get_recipe(args.name)
        if args.resume and not RECIPES[args.name].resumable:
            resumable = [name for name, recipe in RECIPES.items() if recipe.resumable]
            raise ConfigError(
                f"--resume: recipe {args.name} cannot continue an interrupted run (only "
                f"{', '.join(resumable)} can); start it again with --overwrite"
            )
        overrides = parse_assignments(args.set)
        if args.max_time_minutes is not None:
            if "max_time_minutes" not in valid_setting_keys(args.name):
                raise ConfigError(
                    f"--max-time-minutes: recipe {args.name} has no max_time_minutes setting; "
                    + _BUDGET_HINTS.get(args.name, "see its config.yaml")
                )
            overrides = merge_settings({"max_time_minutes": args.max_time_minutes}, overrides)
        if args.quiet and "progress" in valid_setting_keys(args.name):  # no progress bars
            overrides = merge_settings(overrides, {"progress": False})
        config = with_overrides(args.name, args.config, overrides)
        out = args.out or recipe_settings(args.name, config).get("out") or f"runs/{args.name}"
        with claimed_folder(out, "--output"):
            if args.resume:
                module.run(config=config, seeds=args.seeds, out=out, resume=True)
            else:
                check_output_folder(out, "--output", args.overwrite, "--overwrite")
                module.run(config=config, seeds=args.seeds, out=out)
        return 0


#: What to use instead of --max-time-minutes for a recipe without a max_time_minutes setting.
_BUDGET_HINTS = {
    "dft_to_gw": "its wall-clock caps are per training phase: --set "
    "training.pretrain_max_minutes=N --set training.finetune_max_minutes=N",
}
