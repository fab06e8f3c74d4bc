"""``chemgraph transfer``: transfer learning on the user's own table of molecules with low- and
high-fidelity labels (:class:`TransferOptions`, :func:`transfer_table`).

The job reads the table and the 3D structures, rejects the rows it cannot use
(``rejected.csv``), refuses a split it cannot make, prepares the output folder, and runs the
transfer wing (:func:`chemgraph.transfer.run.transfer_job`: every strategy, seed and target
with the baselines; :mod:`chemgraph.transfer`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from chemgraph.chem import MoleculePreparation
from chemgraph.data.multi_fidelity import MultiFidelityData, high_fidelity_split
from chemgraph.errors import ConfigError, setting
from chemgraph.model_names import MODEL_DESCRIPTIONS
from chemgraph.models import get_model_spec
from chemgraph.transfer.config import TransferConfig
from chemgraph.transfer.report import transfer_claim
from chemgraph.transfer.run import (
    RECOMMENDED,
    check_resumable,
    stacking_needs_smiles,
    transfer_job,
)

__all__ = [
    "SMALL_TEST_SET",
    "TABLE_OUTPUTS",
    "TransferOptions",
    "read_structures",
    "transfer_table",
]

log = logging.getLogger(__name__)


@dataclass
class TransferOptions:
    """What ``chemgraph transfer`` runs: the user's table of molecules with low- and
    high-fidelity labels, and the transfer settings (validated on construction).

    Attributes:
        data: table of molecules (``.csv``, ``.tsv``, ``.parquet``, optionally gzipped;
            :func:`chemgraph.data.read_table`), one row per molecule.
        low_fidelity_columns: the low-fidelity label columns (e.g. ``xtb_homo,xtb_lumo``).
        high_fidelity_columns: the high-fidelity label columns, one per low-fidelity column
            and in the same order (target ``t`` is pretrained on ``low[t]``, fine-tuned on
            ``high[t]``; the targets take the high-fidelity names). An empty cell is a missing
            label: most molecules usually have only the low-fidelity ones.
        out: output folder; must be new or empty unless ``overwrite``.
        smiles_column: the SMILES column (the molecules' bond graphs, and the fingerprints of
            the kernel baselines); None = ``"smiles"``, which a run with ``geometry`` uses
            when the table has it (else it runs without the fingerprint baselines). A column
            named here must exist, with ``geometry`` too.
        id_column: molecule identifiers written into the outputs (None = the row number).
        geometry: SDF, XYZ or extended XYZ file with one 3D structure per table row, in row
            order (for a radius-graph model such as ``esa-3d``; coordinates in Å); None = bond
            graphs of the SMILES.
        split_seed: seed of the random split of the molecules with every high-fidelity label.
        split_fractions: train/validation/test fractions of that split.
        overwrite: write into a non-empty ``out`` (its files are replaced).
        resume: continue the interrupted run in ``out`` (:func:`transfer_table`); excludes
            ``overwrite``.
        low_name, high_name: short names of the two levels for the table.
        training: the transfer settings (:class:`~chemgraph.transfer.config.TransferConfig`:
            ``protocol``, ``model``, ``featurizer``, ``strategies``, ``seeds``, epochs,
            optimisation, the molecule preparation ``standardize`` and ``fragments``); given as
            a mapping without ``model``, the model is ``esa`` for a SMILES table and ``esa-3d``
            with ``geometry``.

    Raises:
        ConfigError: bad settings (columns missing, of different counts or named twice, bad
            fractions, a bond-graph model with ``geometry`` or a radius-graph model without it,
            a molecule preparation (``standardize``, ``fragments``) with ``geometry``; see
            :class:`~chemgraph.transfer.config.TransferConfig`), each named as
            :func:`chemgraph.errors.setting` names it (``chemgraph transfer``: by its flag).
    """

    data: str | Path
    low_fidelity_columns: list[str] | str
    high_fidelity_columns: list[str] | str
    out: str | Path
    smiles_column: str | None = None
    id_column: str | None = None
    geometry: str | Path | None = None
    split_seed: int = 0
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    overwrite: bool = False
    resume: bool = False
    low_name: str = "low fidelity"
    high_name: str = "high fidelity"
    training: TransferConfig = field(default_factory=TransferConfig)

    @classmethod
    def check_keys(cls, values: dict[str, Any], source: str | None = None) -> None:
        """Refuse keys of a settings mapping (a ``--config`` file's top level) that are no
        option; ``overwrite`` and ``resume`` are the command's flags only.

        Raises:
            ConfigError: ``"<source>: unknown keys [...]; valid keys: [...]"``, naming where a
                key of the ``training:`` block belongs (``"...; pretrain_epochs belongs under
                training:"``).
        """
        names = sorted(f.name for f in _SETTINGS_FIELDS)
        unknown = sorted(set(values) - set(names))
        if not unknown:
            return
        misplaced = [key for key in unknown if key in TransferConfig.field_names()]
        where = (
            f"; {', '.join(misplaced)} belong{'s' if len(misplaced) == 1 else ''} under training:"
            if misplaced
            else ""
        )
        prefix = f"{source}: " if source else ""
        raise ConfigError(f"{prefix}unknown keys {unknown}; valid keys: {names}{where}")

    def __post_init__(self) -> None:
        if self.overwrite and self.resume:
            raise ConfigError("--overwrite and --resume exclude each other: start the run again "
                              "or continue it")  # fmt: skip
        for name in ("low_fidelity_columns", "high_fidelity_columns"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = [c.strip() for c in value.split(",")]
            value = [str(c) for c in value]
            if not value or "" in value or len(set(value)) != len(value):
                raise ConfigError(f"{setting(name)} must name distinct columns, got {value!r}")
            setattr(self, name, value)
        if len(self.low_fidelity_columns) != len(self.high_fidelity_columns):
            raise ConfigError(
                f"{len(self.low_fidelity_columns)} low-fidelity columns but "
                f"{len(self.high_fidelity_columns)} high-fidelity columns: give one of each per "
                "target, in the same order"
            )
        both = set(self.low_fidelity_columns) & set(self.high_fidelity_columns)
        if both:
            raise ConfigError(f"columns {sorted(both)} are named as both fidelities")
        fractions = tuple(float(f) for f in self.split_fractions)
        if len(fractions) != 3 or min(fractions) <= 0 or abs(sum(fractions) - 1) > 1e-6:
            raise ConfigError(
                f"{setting('split_fractions')} must be 3 numbers > 0 summing to 1, got "
                f"{self.split_fractions}"
            )
        self.split_fractions = fractions
        if isinstance(self.training, dict):
            # the model family by what the table gives: bond graphs of SMILES, or 3D structures
            default = "esa" if self.geometry is None else "esa-3d"
            training = {"model": default, **self.training}
            self.training = TransferConfig.from_dict(training, source="training")
        kind = get_model_spec(self.training.model).graph_kind
        if kind == "radius" and self.geometry is None:
            bond_models = [n for n in MODEL_DESCRIPTIONS if get_model_spec(n).graph_kind == "bond"]
            raise ConfigError(
                f"model {self.training.model!r} reads 3D structures: give "
                f"{setting('geometry')} (SDF, XYZ or extended XYZ, one structure per row), or "
                f"choose a 2D model for a SMILES table ({setting('model')} "
                f"{', '.join(bond_models)})"
            )
        if kind == "bond" and self.geometry is not None:
            raise ConfigError(
                f"model {self.training.model!r} reads bond graphs of the SMILES; with "
                f"{setting('geometry')} choose a radius-graph {setting('model')} (esa-3d)"
            )
        prepared = [
            name
            for name, default in (("standardize", "none"), ("fragments", "keep"))
            if getattr(self.training, name) != default
        ]
        if kind == "radius" and prepared:
            raise ConfigError(
                f"{' and '.join(setting(name) for name in prepared)} prepare the molecules of "
                f"SMILES for their bond graphs; the radius graphs of {setting('geometry')} use "
                "each structure as given: leave them out, or prepare the structures yourself"
            )


def transfer_table(options: TransferOptions) -> pd.DataFrame:
    """``chemgraph transfer``: transfer learning on the user's own table.

    Reads the table (and the geometries), rejects rows that cannot be used (written to
    ``rejected.csv``, columns ``row,id,input,reason``), splits the molecules with every
    high-fidelity label (seeded random split), then runs
    :func:`~chemgraph.transfer.run.transfer_job`: every strategy for every seed (with the
    baselines of each setting), and every molecule without a high-fidelity label scored with
    each strategy's fine-tuned models.

    Writes to ``options.out``: what :func:`~chemgraph.transfer.run.run_transfer` writes
    (``table.md``/``table.csv`` test RMSE with the baselines, ``runs.csv``,
    ``predictions.csv`` of the test molecules, learning curves),
    ``checkpoints/<strategy>_seed<k>[_<target>]/best.ckpt`` (every fine-tuned model, with its
    training molecules' fingerprints; ``chemgraph predict`` loads it),
    ``predictions_unlabelled.csv`` (per strategy, the mean prediction over seeds and its sample
    standard deviation, an empty cell with one seed: the spread is undefined),
    ``duplicates.json`` (the molecules given in more than one row, by canonical isomeric
    SMILES: each kept in one split; :class:`chemgraph.data.Duplicates`) and ``transfer.yaml``
    (these options, so that ``chemgraph transfer --config transfer.yaml`` repeats the run).
    ``predictions.csv`` carries the ``id_column`` ids (else the row numbers) and the SMILES.
    ``chains/`` keeps each chain's state while the run trains, and each chain's result
    (:func:`~chemgraph.transfer.chains.train_chain`).

    ``options.resume`` continues a run stopped by a signal (Ctrl-C, SIGTERM, a scheduler) in
    ``options.out``, with the same options (``transfer.yaml``; the number of workers may
    differ): the table is read and split again, the finished chains are kept and not trained
    again, the interrupted one continues from its ``last.ckpt``, and at a fixed thread count
    every output but the wall-clock seconds is the uninterrupted run's.
    Nothing is written (and with ``overwrite`` nothing of an earlier run removed) before the
    options, the table's columns, the geometries, the rows and the split are checked; then
    what an earlier run wrote (:data:`TABLE_OUTPUTS`) is removed first. Fewer than
    :data:`SMALL_TEST_SET` test molecules are warned about, and so are molecules with some but
    not every high-fidelity label (they are not in the split, which takes the molecules with
    every one, and are predicted in ``predictions_unlabelled.csv``).

    Returns:
        The results table (:func:`~chemgraph.transfer.report.results_table`).

    Raises:
        ConfigError: a label column without a number (``"--low-fidelity-columns smiles: no
            numeric value in column 'smiles'"``); ``stack_kernel_ridge`` without a SMILES
            column, or with rows (of a geometry file) without a SMILES; decided before
            featurizing, where the column is missing; too few usable molecules with every
            high-fidelity label to split (the message counts them and gives the first
            rejected rows' reasons). Nothing is written to ``out`` then.
        ValueError: a non-empty output folder without ``overwrite``; ``resume`` where no
            interrupted run is (no ``transfer.yaml``), a finished one (``table.md``), or one of
            other settings (naming them); a folder another run is
            writing to (:func:`chemgraph._output.claim_folder`); missing columns (each
            named with the setting that asked for it, ``"no column ['gw_lumo']
            (--high-fidelity-columns)"``); a geometry file whose structure count differs
            from the rows.
    """
    from chemgraph._output import claimed_folder

    with claimed_folder(options.out, "--output"):
        return _transfer_table(options)


def _transfer_table(options: TransferOptions) -> pd.DataFrame:
    """:func:`transfer_table` in its claimed output folder."""
    from chemgraph._output import check_output_folder
    from chemgraph.data import (
        Duplicates,
        duplicate_groups,
        find_duplicates,
        parse_labels,
        read_table,
        write_rejected,
    )

    out = Path(options.out)
    if options.resume:
        if (out / "table.md").is_file():
            raise ValueError(
                f"--resume: the run in {out} finished (table.md); nothing to resume "
                "(--overwrite trains again)"
            )
    else:
        check_output_folder(out, "--output", options.overwrite, "--overwrite")
    table = read_table(options.data)
    columns = [*options.low_fidelity_columns, *options.high_fidelity_columns]
    smiles_column = options.smiles_column or "smiles"
    # a geometry file gives the graphs: then only a SMILES column the user named is required
    smiles_required = options.geometry is None or options.smiles_column is not None
    need = columns + ([smiles_column] if smiles_required else [])
    need += [options.id_column] if options.id_column else []
    missing = [c for c in need if c not in table.columns]
    if missing:
        named = {
            "low_fidelity_columns": options.low_fidelity_columns,
            "high_fidelity_columns": options.high_fidelity_columns,
            "smiles_column": [smiles_column] if smiles_required else [],
            "id_column": [options.id_column] if options.id_column else [],
        }
        absent = [
            f"{[c for c in columns if c in missing]} ({setting(key)})"
            for key, columns in named.items()
            if any(c in missing for c in columns)
        ]
        raise ValueError(
            f"{options.data}: no column {', '.join(absent)}; it has {list(table.columns)}"
        )
    # the labels as `train` reads them: "", "NA", "n/a", "nan", ... are missing; a column
    # without a number (e.g. the SMILES named as labels) is refused before --out is touched
    values, errors = parse_labels(table, columns)
    numeric = np.isfinite(values).any(axis=0)
    for j, column in enumerate(columns):
        if not numeric[j]:
            low_column = j < len(options.low_fidelity_columns)
            key = "low_fidelity_columns" if low_column else "high_fidelity_columns"
            given = ",".join(getattr(options, key))
            raise ConfigError(f"{setting(key)} {given}: no numeric value in column {column!r}")
    stacking = options.training.stack_kernel_ridge
    if stacking and smiles_column not in table.columns:  # (with --geometry)
        raise ConfigError(
            stacking_needs_smiles(
                f"{options.data} has no SMILES column {smiles_column!r} "
                f"({setting('smiles_column')})"
            )
        )
    ids = (
        table[options.id_column].astype(str).tolist()
        if options.id_column
        else [str(i) for i in range(len(table))]
    )
    smiles = (
        [
            None if pd.isna(cell) or not str(cell).strip() else str(cell)
            for cell in table[smiles_column]
        ]
        if smiles_column in table.columns
        else None
    )
    graphs, reasons = _table_graphs(options, table, smiles)
    for row, error in enumerate(errors):
        if error is not None:
            reasons.setdefault(row, error)
    with np.errstate(over="ignore"):
        values = values.astype(np.float32)  # float32 as trained (a rejected 1e39 becomes inf)
    values[~np.isfinite(values)] = np.nan
    low, high = (
        values[:, : len(options.low_fidelity_columns)],
        values[:, len(options.low_fidelity_columns) :],
    )
    for row in np.flatnonzero(np.isnan(low).all(axis=1) & np.isnan(high).all(axis=1)):
        reasons.setdefault(int(row), "no low- or high-fidelity label")
    # a high-fidelity molecule without its low-fidelity labels has no transductive prediction
    # nor baseline, and the table must compare every method on the same molecules
    for row in np.flatnonzero(~np.isnan(high).all(axis=1) & np.isnan(low).any(axis=1)):
        absent = [c for c, v in zip(options.low_fidelity_columns, low[row]) if np.isnan(v)]
        reasons.setdefault(
            int(row),
            f"{options.high_name} label without its {options.low_name} label ({', '.join(absent)}):"
            " every strategy and baseline is scored on molecules with both levels; give the "
            f"{options.low_name} value or leave the {options.high_name} cell empty",
        )
    keep = [row for row in range(len(table)) if row not in reasons]
    if stacking and smiles is not None:
        empty = [row for row in keep if smiles[row] is None]
        if empty:
            rows = ", ".join(ids[row] for row in empty[:5]) + (", ..." if len(empty) > 5 else "")
            raise ConfigError(
                stacking_needs_smiles(f"{len(empty)} rows of {options.data} have none (ids {rows})")
            )
    kept_smiles = [smiles[row] for row in keep] if smiles else [None]
    # with --geometry and no SMILES every row is its own molecule
    groups = None if None in kept_smiles else duplicate_groups(kept_smiles)
    data = MultiFidelityData(
        graphs=[graphs[row] for row in keep],
        ids=np.asarray([ids[row] for row in keep], dtype=object),
        low=low[keep],
        high=high[keep],
        targets=list(options.high_fidelity_columns),
        low_name=options.low_name,
        high_name=options.high_name,
        smiles=kept_smiles if None not in kept_smiles else None,
        groups=groups,
        low_columns=list(options.low_fidelity_columns),
    )
    try:
        split = high_fidelity_split(
            data, options.split_seed, fractions=options.split_fractions, groups=groups
        )
    except ValueError as error:  # before --out is touched: a refused run writes nothing
        raise ConfigError(_split_refusal(options, data, len(table), reasons, ids, error)) from None
    if options.resume:  # before a file of the interrupted run is replaced
        check_resumable(out, _options_dict(options))
    if options.overwrite:  # only once nothing refuses the run
        _remove_earlier_outputs(out)
    out.mkdir(parents=True, exist_ok=True)
    write_rejected(
        pd.DataFrame(
            [
                dict(row=row, id=ids[row], input=smiles[row] or "" if smiles else "", reason=reason)
                for row, reason in sorted(reasons.items())
            ]
        ),
        out / "rejected.csv",
    )
    if reasons:
        log.warning("%d of %d rows rejected (%s)", len(reasons), len(table), out / "rejected.csv")
    if smiles and None in kept_smiles:
        log.warning("rows without SMILES: no fingerprint baselines (they read every SMILES)")
    partial = np.flatnonzero(np.isnan(high[keep]).any(axis=1) & ~np.isnan(high[keep]).all(axis=1))
    if len(partial):
        names = ", ".join(str(data.ids[i]) for i in partial[:5]) + (", ..." * (len(partial) > 5))
        log.warning(
            "%s with some but not every %s label (%s): not in the train/validation/test split, "
            "which takes the molecules with every %s label; their given %s labels are not used "
            "and they are predicted in predictions_unlabelled.csv",
            _count(len(partial), "molecule"), data.high_name, names, data.high_name,
            data.high_name,
        )  # fmt: skip
    duplicates = Duplicates()
    if groups is not None:
        duplicates = find_duplicates(groups, np.asarray(keep), data.high.numpy())
        if duplicates.molecules:
            log.warning("duplicates: %s", duplicates)
    (out / "duplicates.json").write_text(json.dumps(duplicates.to_dict(), indent=2) + "\n")
    if len(split["test"]) < SMALL_TEST_SET:
        log.warning(
            "only %s: their test RMSE is a rough estimate (a few molecules can change it a "
            "lot); give more molecules with %s labels",
            _count(len(split["test"]), "test molecule"), data.high_name,
        )  # fmt: skip
    results, _, _ = transfer_job(
        data, split, options.training, out, _options_dict(options), resume=options.resume
    )
    _, claim = transfer_claim(results, data.high_name)
    log.info("%s", claim)
    return results


def _count(number: int, noun: str) -> str:
    """``"1 test molecule"``, ``"3 test molecules"``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _split_refusal(
    options: TransferOptions,
    data: MultiFidelityData,
    rows: int,
    reasons: dict[int, str],
    ids: list[str],
    error: ValueError,
) -> str:
    """Why the molecules of ``options.data`` cannot be split (``error`` of
    :func:`~chemgraph.data.multi_fidelity.high_fidelity_split`): how many rows are usable and
    labelled, the rejected rows' first reasons, and the settings that decide it."""
    labelled = int((~torch.isnan(data.high).any(dim=1)).sum())
    columns = ",".join(options.high_fidelity_columns)
    text = (
        f"{options.data}: {labelled} of {rows} rows are usable molecules with every "
        f"{options.high_name} label ({setting('high_fidelity_columns')} {columns}), too few "
        f"to split into train, validation and test with {setting('split_fractions')} "
        f"{','.join(f'{f:g}' for f in options.split_fractions)} ({error})"
    )
    if reasons:
        shown = sorted(reasons.items())[:3]
        examples = "; ".join(f"row {row} ({ids[row]}): {reason}" for row, reason in shown)
        more = ", ..." if len(reasons) > 3 else ""
        text += f"; {_count(len(reasons), 'row')} rejected, e.g. {examples}{more}"
    return text


SMALL_TEST_SET = 20
"""Below this many test molecules :func:`transfer_table` warns that the test RMSE is rough."""

TABLE_OUTPUTS = (
    "checkpoints", "chains", "curves", "table.md", "table.csv", "runs.csv", "baselines.csv",
    "ensembles.csv", "predictions.csv", "predictions_unlabelled.csv", "learning_curves.csv",
    "rejected.csv", "duplicates.json", "config.yaml", "transfer.yaml", "selection.csv",
    "recommendation.json", "predictions_recommended.csv", RECOMMENDED,
)  # fmt: skip
"""What :func:`transfer_table` writes in its output folder (files and folders)."""


def _remove_earlier_outputs(out: Path) -> None:
    """Remove what an earlier :func:`transfer_table` wrote in ``out`` (:data:`TABLE_OUTPUTS`,
    :func:`chemgraph._output.remove_outputs`), so that no stale model or table of it stays
    beside the new ones (e.g. the checkpoints of a seed or strategy the new run does not
    train); every other file is left as it is."""
    from chemgraph._output import remove_outputs

    removed = remove_outputs(out, TABLE_OUTPUTS)
    if removed:
        log.warning("--overwrite: removed the earlier run's %s from %s", ", ".join(removed), out)


_SETTINGS_FIELDS = [
    f for f in dataclasses.fields(TransferOptions) if f.name not in ("overwrite", "resume")
]
"""The fields of :class:`TransferOptions` that ``transfer.yaml`` records (the flags that say
what to do with the output folder are not)."""


def _options_dict(options: TransferOptions) -> dict[str, Any]:
    values = {f.name: getattr(options, f.name) for f in _SETTINGS_FIELDS if f.name != "training"}
    values = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
    for name in ("data", "geometry", "out"):  # absolute: the run repeats from any folder
        if values.get(name) is not None:
            values[name] = str(Path(values[name]).resolve())
    values["split_fractions"] = list(options.split_fractions)
    return {**values, "training": options.training.to_dict()}


def _table_graphs(
    options: TransferOptions, table: pd.DataFrame, smiles: list[str] | None
) -> tuple[list, dict[int, str]]:
    """One graph per row (None where rejected) and the rejected rows' reasons: bond graphs of
    the SMILES, or radius graphs of the ``geometry`` file's structures (row ``i`` = structure
    ``i``). A row whose SMILES RDKit rejects or holds a dummy atom ``*`` (not a complete
    molecule) is rejected, with a geometry file too (the fingerprint baselines read it), and so
    is a row whose structure's elements (hydrogens included) differ from its SMILES's: a file
    out of row order is caught here; a row without SMILES (``None``) skips both checks. Without
    ``featurizer.atomic_numbers`` in ``options.training``, it sets them to the structures'
    elements (so the checkpoints and ``transfer.yaml`` record them)."""
    from rdkit import Chem

    from chemgraph.graphs import atoms_to_radius_graph, mol_to_graph

    featurizer = options.training.graph_featurizer
    reasons: dict[int, str] = {}
    if options.geometry is None:
        mols = _table_mols(smiles, range(len(smiles)), reasons, options.training.preparation)
        graphs = [None if mol is None else mol_to_graph(mol, featurizer) for mol in mols.values()]
        return graphs, reasons
    given = [row for row, text in enumerate(smiles or []) if text is not None]
    # the structures are used as given: the SMILES only check that each row is its molecule
    parsed = _table_mols(smiles, given, reasons, MoleculePreparation())
    mols = {row: mol for row, mol in parsed.items() if mol is not None}
    structures = read_structures(options.geometry)
    if len(structures) != len(table):
        raise ValueError(
            f"{options.geometry} holds {len(structures)} structures for the {len(table)} rows "
            f"of {options.data}: give one structure per row, in row order"
        )
    given_elements = {int(z) for s in structures if not isinstance(s, str) for z in s[0]}
    training = options.training
    if given_elements and "atomic_numbers" not in training.featurizer:
        # the element one-hot of the user's own structures, so that predict scores them all
        training.featurizer = {**training.featurizer, "atomic_numbers": sorted(given_elements)}
        featurizer = training.graph_featurizer
        log.info("radius-graph element columns: %s (the structures' elements)",
                 list(featurizer.atomic_numbers))  # fmt: skip
    outside = sorted(given_elements - set(featurizer.atomic_numbers))
    if outside:
        table_of_elements = Chem.GetPeriodicTable()
        log.warning(
            "the structures hold %s, which no column of the featurizer's element one-hot "
            "names (atomic_numbers %s): they share its column of every other element, and "
            "chemgraph predict refuses them; add them to the featurizer's atomic_numbers to "
            "tell them apart and to score them",
            ", ".join(table_of_elements.GetElementSymbol(z) for z in outside),
            list(featurizer.atomic_numbers),
        )
    graphs = []
    for row, structure in enumerate(structures):
        if isinstance(structure, str):
            reasons.setdefault(row, structure)
        elif row not in reasons and row in mols:
            expected = _formula(a.GetAtomicNum() for a in Chem.AddHs(mols[row]).GetAtoms())
            found = _formula(structure[0])
            if found != expected:
                reasons[row] = (
                    f"structure {row + 1} of {Path(options.geometry).name} is {found}, its "
                    f"SMILES {expected} (hydrogens included): is the file in row order?"
                )
        graphs.append(
            None if row in reasons else atoms_to_radius_graph(*structure, featurizer, False)
        )
    return graphs, reasons


def _table_mols(
    smiles: list[str | None],
    rows: Sequence[int],
    reasons: dict[int, str],
    preparation: MoleculePreparation,
) -> dict:
    """``{row: molecule}`` of the SMILES of ``rows``, through the record -> molecule step of
    ``featurize`` and ``predict`` (:func:`chemgraph.library.records.record_molecule`: RDKit's
    parse, a dummy atom ``*`` refused as not a complete molecule, then ``preparation``); None
    for a row rejected, whose reason is added to ``reasons``."""
    from rdkit import rdBase

    from chemgraph.chem import MoleculeParseError
    from chemgraph.data.readers import Record
    from chemgraph.library.records import record_molecule

    mols = {}
    with rdBase.BlockLogs():  # the reasons are kept; RDKit's own lines would repeat them
        for row in rows:
            text = smiles[row] or ""
            record = Record(row, str(row), text, "smiles" if text.strip() else "blank")
            try:
                mols[row] = record_molecule(record, preparation)
            except MoleculeParseError as error:
                reasons[row] = str(error)
                mols[row] = None
    return mols


def _formula(numbers) -> str:
    """Hill formula of atomic numbers (C, H first, then alphabetical; e.g. ``C2H6O``)."""
    from collections import Counter

    from rdkit import Chem

    table = Chem.GetPeriodicTable()
    counts = Counter(table.GetElementSymbol(int(z)) for z in numbers)
    order = [e for e in ("C", "H") if e in counts and "C" in counts]
    order += sorted(e for e in counts if e not in order)
    return "".join(f"{e}{counts[e] if counts[e] > 1 else ''}" for e in order)


def read_structures(path: str | Path) -> list[tuple[np.ndarray, np.ndarray] | str]:
    """The 3D structures of an SDF (with 3D coordinates and every hydrogen), XYZ or extended
    XYZ file, in file order, read record by record as ``chemgraph predict`` reads them
    (:func:`chemgraph.library.records.record_structure`): ``(atomic_numbers int64 [N],
    positions float64 [N, 3] in Å)`` each, every atom as given, or the reason a record could
    not be used, prefixed with its number (an SDF record RDKit rejects, one without 3D
    coordinates or without all its hydrogens, an unreadable XYZ frame).

    Raises:
        ValueError: a file of another format.
    """
    from chemgraph.chem import MoleculeParseError
    from chemgraph.data.readers import iter_record_chunks, library_format
    from chemgraph.library.records import STRUCTURE_FORMATS, record_structure

    if library_format(path) not in STRUCTURE_FORMATS:
        raise ValueError(f"{path}: geometries are read from .sdf, .xyz or .extxyz files")
    structures: list[tuple[np.ndarray, np.ndarray] | str] = []
    for records in iter_record_chunks(path, 1_000):
        for record in records:
            try:
                structure = record_structure(record)
            except MoleculeParseError as error:
                structures.append(f"structure {record.row + 1}: {error.reason}")
            else:
                structures.append((structure.numbers, structure.positions))
    return structures
