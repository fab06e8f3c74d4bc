"""``chemgraph transfer``: transfer learning from low- to high-fidelity labels on the user's
own table (:func:`chemgraph.jobs.transfer.transfer_table`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from chemgraph.cli.base import Command, ExamplesHelpFormatter
from chemgraph.cli.common import (
    add_batch_size_option,
    add_config_option,
    add_id_column_option,
    add_input_option,
    add_model_option,
    add_output_option,
    add_preparation_options,
    add_protocol_option,
    add_resume_options,
    add_seeds_option,
    add_smiles_column_option,
    add_workers_option,
)

__all__ = ["TransferCommand"]

#: The flag of each setting whose key is not its flag's name (``--input`` for ``data``).
FLAG_NAMES = {"data": "--input", "out": "--output"}

TRANSFER_EPILOG = """\
examples:
  chemgraph transfer -i labels.csv \\
      --low-fidelity-columns xtb_homo,xtb_lumo --high-fidelity-columns gw_homo,gw_lumo \\
      -o runs/xtb_to_gw
  chemgraph predict --checkpoint runs/xtb_to_gw/recommended/gw_homo \\
      -i new.csv -o new_predictions.csv
  chemgraph transfer -i labels.csv --geometry structures.sdf \\
      --low-fidelity-columns dft_gap --high-fidelity-columns gw_gap -o runs/gap_3d
  chemgraph transfer -i labels.csv --protocol paper --model gin ... (Buterez et al.'s settings)

outputs in --output: table.md / table.csv (test RMSE of every strategy, mean ± std over seeds,
with the baselines of each setting on the same split, the mean predictor among them; table.md
also the seed ensembles and the model selection), selection.csv (every trained model's seed
ensemble and every baseline ranked by validation RMSE, the best recommended),
recommendation.json, recommended/<target>/ (the recommended model for predict --checkpoint:
a network's seed checkpoints, or a baseline's best.ckpt), predictions_recommended.csv (the
molecules without high-fidelity labels, by the recommended model),
ensembles.csv (test RMSE of each strategy's mean prediction over its seeds; empty with one
seed), baselines.csv, runs.csv (one row per model), predictions.csv (test molecules: id,
smiles, labels, predictions), predictions_unlabelled.csv (the molecules without every
high-fidelity label: mean over seeds and its std, an empty cell with one seed),
checkpoints/<strategy>_seed<k>[_<target>]/best.ckpt (every fine-tuned model, with its training
molecules' fingerprints for predict's applicability domain; with --delta-learning also its
linear correction, and the inductive one's pretrained model: predict on a transductive one
reads the molecules' low-fidelity columns from its input), rejected.csv (row,id,input,reason),
duplicates.json (molecules given in more than one row: kept in one split), curves/,
learning_curves.csv, config.yaml (the training settings), transfer.yaml (--config transfer.yaml
repeats the run), chains/ (each chain's state and result, which --resume continues from).
--overwrite removes these from an earlier run first, once nothing refuses the run, and leaves
any other file.
"""


class TransferCommand(Command):
    """Transfer learning on a user's table: one
    :class:`~chemgraph.jobs.transfer.TransferOptions`, one
    :func:`~chemgraph.jobs.transfer.transfer_table`."""

    name = "transfer"
    help = "pretrain on cheap (low-fidelity) labels, fine-tune on expensive ones, on your table"
    description = (
        "Transfer learning from cheap (low-fidelity) to accurate (high-fidelity) labels on your "
        "table (Buterez et al. 2024). Three strategies, each for every seed: "
        "high_fidelity_only trains on the accurate labels alone; inductive pretrains on the "
        "cheap labels of every molecule except the accurate test molecules, then fine-tunes; "
        "transductive pretrains on the cheap labels of every molecule, then fine-tunes. "
        "Missing labels are empty cells. Bond graphs of the SMILES (esa by default), or radius "
        "graphs of 3D structures with --geometry (esa-3d). The strategies and the baselines are "
        "ranked on the validation molecules and one is recommended per target."
    )
    epilog = TRANSFER_EPILOG
    formatter_class = ExamplesHelpFormatter

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_config_option(parser, "YAML of these options (transfer.yaml of a run)")
        add_input_option(
            parser, "table of molecules (.csv, .tsv, .parquet)", dest="data", aliases=("--data",)
        )
        add_smiles_column_option(
            parser,
            "column holding SMILES (default: smiles; with --geometry used when present, "
            "for the fingerprint baselines; a column named here must exist)",
        )
        add_id_column_option(parser, "molecule identifiers (default: row number)")
        parser.add_argument(
            "--low-fidelity-columns", help="comma-separated low-fidelity (cheap) label columns"
        )
        parser.add_argument(
            "--high-fidelity-columns",
            help="comma-separated high-fidelity label columns, one per low-fidelity column, in "
            "the same order",
        )
        parser.add_argument(
            "--geometry",
            help="SDF, XYZ or extended XYZ file, one 3D structure per table row in row order "
            "(Å), for a radius-graph model (esa-3d)",
        )
        add_model_option(
            parser,
            "model family (default: esa for a SMILES table, esa-3d with --geometry)",
        )
        parser.add_argument(
            "--featurizer",
            help="featurizer preset of a bond-graph model (default: the model's)",
        )
        parser.add_argument(
            "--strategies",
            help="comma-separated subset of high_fidelity_only,inductive,transductive,"
            "label_augmentation (default: the protocol's, the first three; label_augmentation: "
            "transductive pretraining, then each molecule's low-fidelity labels are an input of "
            "the readout)",
        )
        add_protocol_option(
            parser,
            "where the settings not given come from: default (a CPU and your table: early "
            "stopping in both phases within 100 epochs, 2 seeds, batch 64, lr 5e-4, "
            "Delta-learning) or paper (Buterez et al. 2024: 150 fixed pretraining epochs, up to "
            "300 fine-tuning epochs, 5 seeds, batch 128, lr 1e-4, no Delta-learning; sized for "
            "a GPU) (default: default)",
        )
        parser.add_argument(
            "--delta-learning",
            action=argparse.BooleanOptionalAction,
            help="fine-tune on the residual of a linear correction of each molecule's "
            "low-fidelity values (its labels, transductive; the pretrained model's prediction, "
            "inductive) and add the correction back; the checkpoints hold it for predict, which "
            "then reads a transductive model's low-fidelity columns from its input (default: "
            "the protocol's: on with --protocol default)",
        )
        parser.add_argument(
            "--stack-kernel-ridge",
            action="store_true",
            help="with --delta-learning: add a stacked row per transfer strategy, w x the "
            "model's prediction + (1 - w) x the Delta-learning fingerprint kernel ridge's, w "
            "per target from 0, 0.1, ..., 1 by validation RMSE (runs.csv: stack_weight); the "
            "checkpoints hold the unstacked model",
        )
        add_preparation_options(
            parser,
            "of the SMILES (not used with --geometry); stored in the checkpoints, so predict "
            "prepares new molecules the same way",
            defaults=False,
        )
        # defaults: chemgraph.transfer.config.TRANSFER_PROTOCOLS
        add_seeds_option(parser, "seeds 0 to N-1 of every strategy (default: the protocol's)")
        parser.add_argument(
            "--pretrain-epochs", type=int, metavar="N",
            help="pretraining epochs: a bound that early stopping ends first with --protocol "
            "default, a fixed count with paper (default: the protocol's)",
        )  # fmt: skip
        parser.add_argument(
            "--finetune-max-epochs", type=int, metavar="N",
            help="fine-tuning epoch bound; early stopping ends it (default: the protocol's)",
        )  # fmt: skip
        add_batch_size_option(parser, "batch size (default: the protocol's)")
        parser.add_argument(
            "--learning-rate", type=float,
            help="peak AdamW learning rate (default: the protocol's)",
        )  # fmt: skip
        add_workers_option(
            parser,
            "processes training the strategy/seed/target chains side by side, one torch "
            "thread each, at most the CPUs (default: 2; 1 = one after another; same results)",
            default=None,
        )
        parser.add_argument(
            "--split-seed",
            type=int,
            metavar="N",
            help="seed of the split alone (the weights take --seeds' 0 to N-1; default: 0)",
        )
        parser.add_argument(
            "--split-fractions",
            help="train,val,test fractions of the molecules with every high-fidelity label "
            "(default: 0.8,0.1,0.1)",
        )
        add_output_option(
            parser, "output folder, new or empty (see --overwrite)", dest="out", aliases=("--out",)
        )
        add_resume_options(
            parser,
            "continue the interrupted run in --output (stopped by Ctrl-C, SIGTERM or a "
            "scheduler), with the same settings: its finished chains are kept, the interrupted "
            "one continues from its last.ckpt, and the outputs are the uninterrupted run's",
            "write into a non-empty --output: the outputs of an earlier run (the list above) are "
            "removed first, once nothing refuses the run; any other file is left",
        )

    def run(self, args: argparse.Namespace) -> int:
        """Run :func:`~chemgraph.jobs.transfer.transfer_table`; a refusal names each setting by
        its flag, unless the ``--config`` file set it and no flag did (then by its key)."""
        from chemgraph._output import check_output_folder
        from chemgraph.errors import ConfigError, settings_as_flags
        from chemgraph.jobs.transfer import TransferOptions, transfer_table
        from chemgraph.train.config import read_settings
        from chemgraph.train.trainer import quiet_third_party_warnings

        quiet_third_party_warnings()
        values = read_settings(args.config) if args.config else {}
        TransferOptions.check_keys(values, source=args.config)
        training = dict(values.pop("training", {}) or {})
        from_file = {*values, *training}
        training_flags = {
            "model": args.model,
            "featurizer": args.featurizer,
            "strategies": _strategies(args.strategies),
            "seeds": args.seeds,
            "pretrain_epochs": args.pretrain_epochs,
            "finetune_max_epochs": args.finetune_max_epochs,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate,
            "workers": args.workers,
            "standardize": args.standardize,
            "fragments": args.fragments,
            "protocol": args.protocol,
            "delta_learning": args.delta_learning,
            "stack_kernel_ridge": True if args.stack_kernel_ridge else None,
        }
        option_flags = {
            "data": args.data,
            "smiles_column": args.smiles_column,
            "id_column": args.id_column,
            "low_fidelity_columns": args.low_fidelity_columns,
            "high_fidelity_columns": args.high_fidelity_columns,
            "geometry": args.geometry,
            "split_seed": args.split_seed,
            "split_fractions": _fractions(args.split_fractions),
            "out": args.out,
        }
        training.update({k: v for k, v in training_flags.items() if v is not None})
        values.update({k: v for k, v in option_flags.items() if v is not None})
        if args.quiet:
            training["progress"] = False
        flags = {
            key: FLAG_NAMES.get(key, f"--{key.replace('_', '-')}")
            for key, value in {**training_flags, **option_flags}.items()
            if value is not None or key not in from_file
        }
        required = ["data", "low_fidelity_columns", "high_fidelity_columns", "out"]
        missing = [flags.get(key, key) for key in required if key not in values]
        if missing:
            raise ConfigError(f"chemgraph transfer needs {', '.join(missing)}")
        with settings_as_flags(flags):
            options = TransferOptions(
                **values, overwrite=args.overwrite, resume=args.resume, training=training
            )
            if not args.resume:  # the job names the folder --out, the flag is now -o/--output
                check_output_folder(options.out, "--output", args.overwrite, "--overwrite")
            transfer_table(options)
        if not args.quiet:  # warnings and errors only
            print((Path(options.out) / "table.md").read_text(), end="")
            print(f"outputs written to {Path(options.out).resolve()}")
        return 0


def _strategies(text: str | None) -> list[str] | None:
    """``--strategies`` as names, spaces around them stripped (None when not given).

    Raises:
        ConfigError: text that names no strategy (``--strategies ""``).
    """
    from chemgraph.errors import ConfigError
    from chemgraph.transfer.config import STRATEGIES

    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ConfigError(
            f"--strategies names no strategy: give a comma-separated subset of "
            f"{','.join(STRATEGIES)}, or leave it out to run the protocol's"
        )
    return names


def _fractions(text: str | None) -> list[float] | None:
    """``--split-fractions`` as numbers (None when not given).

    Raises:
        ConfigError: text that is not comma-separated numbers.
    """
    from chemgraph.errors import ConfigError

    if text is None:
        return None
    try:
        return [float(f) for f in text.split(",")]
    except ValueError:
        raise ConfigError(
            f"--split-fractions takes train,val,test fractions (e.g. 0.8,0.1,0.1), got {text!r}"
        ) from None
