"""Run configurations: one base for every YAML-backed run, and ``chemgraph train``'s settings.

:class:`RunConfig` is what :class:`TrainingConfig` (``chemgraph train``),
:class:`chemgraph.transfer.config.TransferConfig`,
:class:`chemgraph.reactions.translator_training.ReactionTrainingConfig` and the recipes'
configurations share: reading a YAML mapping, refusing unknown keys (naming them and the valid
ones), refusing missing required settings, coercing numbers (YAML reads ``1e-4`` as text) with
one error text, and the plain-dict form written back as ``config.yaml``.

A partial configuration is merged over a complete one with :func:`merge_settings` (nested
mappings key by key, everything else replaced); :func:`over_profile` merges it over the profile
it names with its ``profile`` key (a recipe's YAML files, ``chemgraph.recipes.registry``);
:func:`parse_assignments` turns command-line ``key=value`` settings (``--set``) into such a
partial configuration.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

import torch
import yaml

from chemgraph.chem import STANDARDIZE_METHODS, MoleculePreparation
from chemgraph.chem.parse import FRAGMENT_POLICIES
from chemgraph.data.datasets import dataset_card, list_datasets
from chemgraph.errors import ConfigError, setting
from chemgraph.featurize import get_preset
from chemgraph.models import MODELS, get_model_spec
from chemgraph.train.finetune import resolve_init_from

__all__ = [
    "PROFILE_KEY",
    "PROTOCOLS",
    "RunConfig",
    "TrainingConfig",
    "dataset_defaults",
    "merge_settings",
    "over_profile",
    "parse_assignments",
    "read_settings",
]

PROFILE_KEY = "profile"
"""The key of a partial configuration that names the profile it is merged over."""

Config = TypeVar("Config", bound="RunConfig")


def read_settings(config: str | Path | Mapping[str, Any] | None) -> dict[str, Any]:
    """Settings given as a YAML file, a mapping or None (no settings), as a new dict.

    Raises:
        OSError: the file cannot be read.
        ConfigError: the file is not UTF-8 text, is not YAML (the message names the file, the
            line and column and YAML's reason), holds a tag (``!!python/object``, ``!custom``:
            settings are plain values) or does not hold a mapping.
    """
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return copy.deepcopy(dict(config))
    data = Path(config).read_bytes()
    try:
        values = yaml.safe_load(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{config}: not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start})"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(_yaml_error(config, error)) from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"{config}: expected a mapping of settings, got {type(values).__name__}")
    return values


def _yaml_error(path: str | Path, error: yaml.YAMLError) -> str:
    """One line for a YAML file PyYAML refuses: the file, line and column (1-based) and why."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error).strip().splitlines()[0]
    if isinstance(error, yaml.constructor.ConstructorError):
        return f"{path}{where}: {problem}; settings are plain YAML values, without tags"
    context, start = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context and start is not None and start.line != mark.line:
        context += f" that starts on line {start.line + 1}, column {start.column + 1}"
    return f"{path}{where}: not valid YAML: {problem}" + (f" ({context})" if context else "")


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``: a mapping in both is merged key by key (recursively), any
    other value of ``override`` (lists and None included) replaces ``base``'s. Neither
    argument is changed."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_settings(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def parse_assignments(assignments: Sequence[str], option: str = "--set") -> dict[str, Any]:
    """Command-line settings ``key=value`` as a partial configuration (a nested dict).

    A dotted key sets a key of a nested block (``model_options.hidden_dim=64`` gives
    ``{"model_options": {"hidden_dim": 64}}``); the value is read as YAML (``5`` an integer,
    ``0.5``, ``1.0e-3`` and ``1e-3`` numbers, ``true``/``false``, ``null`` or nothing at all None,
    ``[a, b]`` a list, anything else text). A later assignment of the same key wins.

    Raises:
        ConfigError: ``"<option> <text>: expected key=value"``, an empty key part, or a value
            YAML cannot read.
    """
    values: dict[str, Any] = {}
    for text in assignments:
        key, equals, raw = text.partition("=")
        parts = key.strip().split(".")
        if not equals or not all(part.strip() for part in parts):
            raise ConfigError(f"{option} {text!r}: expected key=value (e.g. max_epochs=5)")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            raise ConfigError(f"{option} {text!r}: {raw!r} is not a YAML value") from None
        if isinstance(value, str) and _EXPONENT.fullmatch(value):
            value = float(value)  # YAML 1.1 reads 1e-3 (no dot) as text
        for part in reversed(parts[1:]):
            value = {part.strip(): value}
        values = merge_settings(values, {parts[0].strip(): value})
    return values


def over_profile(
    config: str | Path | Mapping[str, Any] | None, profiles: Mapping[str, Path], default: str
) -> dict[str, Any]:
    """A partial configuration merged (:func:`merge_settings`) over the profile it names.

    Args:
        config: YAML file, mapping or None; its ``profile`` key (:data:`PROFILE_KEY`, removed
            from the result) names the profile, ``default`` when absent.
        profiles: profile name -> YAML file of complete settings.
        default: the profile of a configuration without a ``profile`` key.

    Raises:
        ConfigError: an unknown profile (the available ones are listed), or a file that does
            not hold a mapping.
    """
    values = read_settings(config)
    name = values.pop(PROFILE_KEY, default)
    if name not in profiles:
        raise ConfigError(f"unknown {PROFILE_KEY} {name!r}; available: {', '.join(profiles)}")
    return merge_settings(read_settings(profiles[name]), values)


def _number(name: str, value: Any, kind: type, low: float) -> int | float:
    """``value`` as ``kind`` (int or float), at least ``low``.

    Raises:
        ConfigError: ``"<name> must be an integer|a number, got <value>"`` or
            ``"<name> must be at least <low>, got <value>"`` (the setting named by
            :func:`chemgraph.errors.setting`: its flag on a command line).
    """
    try:
        if isinstance(value, bool):
            raise ValueError
        number = kind(value)
        if kind is int and number != float(value):
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(
            f"{setting(name)} must be a{'n integer' if kind is int else ' number'}, got {value!r}"
        ) from None
    if not number >= low:
        raise ConfigError(f"{setting(name)} must be at least {low}, got {value!r}")
    return number


def _plain(value: Any) -> Any:
    """Tuples as lists, recursively (what ``yaml.safe_dump`` writes without tags)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


@dataclass
class RunConfig:
    """Base of the run configurations: dataclasses that round-trip through YAML.

    Subclasses declare their checks as class attributes, applied by ``__post_init__`` (a
    subclass that adds checks calls ``super().__post_init__()`` first):

    * :attr:`NUMBERS`: field -> ``(int or float, minimum)``; the value is coerced (``"1e-4"``
      -> ``0.0001``, ``"3"`` -> ``3``) and must be at least the minimum. A field whose default
      is None may stay None.
    * :attr:`CHOICES`: field -> the allowed values.

    Fields without a default are required settings.
    """

    NUMBERS: ClassVar[dict[str, tuple[type, float]]] = {}
    CHOICES: ClassVar[dict[str, tuple[Any, ...]]] = {}

    def __post_init__(self) -> None:
        """Check :attr:`CHOICES`, coerce and check :attr:`NUMBERS`.

        Raises:
            ConfigError: naming the setting, the bad value and what is allowed.
        """
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        defaults = {f.name: f.default for f in fields(self)}
        for name, (kind, low) in self.NUMBERS.items():
            value = getattr(self, name)
            if value is None and defaults[name] is None:
                continue
            setattr(self, name, _number(name, value, kind, low))

    @classmethod
    def field_names(cls) -> list[str]:
        """Every setting, in declaration order."""
        return [f.name for f in fields(cls)]

    @classmethod
    def required_fields(cls) -> list[str]:
        """The settings without a default."""
        return [
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
        ]

    @classmethod
    def from_dict(
        cls: type[Config], values: Mapping[str, Any], source: str | None = None
    ) -> Config:
        """Build from a mapping of settings.

        Args:
            values: setting name -> value.
            source: where ``values`` come from (a file name, a YAML block), prefixed to errors.

        Raises:
            ConfigError: ``"<source>: unknown keys [...]; valid keys: [...]"``, ``"<source>:
                missing required settings: ..."``, or a bad value (see ``__post_init__``).
        """
        prefix = f"{source}: " if source else ""
        names = cls.field_names()
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ConfigError(f"{prefix}unknown keys {unknown}; valid keys: {sorted(names)}")
        missing = [name for name in cls.required_fields() if name not in values]
        if missing:
            raise ConfigError(f"{prefix}missing required settings: {', '.join(missing)}")
        return cls(**values)

    @classmethod
    def from_yaml(cls: type[Config], path: str | Path, **overrides: Any) -> Config:
        """Read a YAML mapping of settings; ``overrides`` that are not None take precedence
        (command-line options).

        Raises:
            OSError: the file cannot be read.
            ConfigError: see :meth:`from_dict` and :func:`read_settings`.
        """
        values = read_settings(path)
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls.from_dict(values, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """Every setting as plain YAML-safe values (tuples as lists)."""
        return _plain(asdict(self))


PROTOCOLS: dict[str, dict[str, Any]] = {
    "default": {
        "max_epochs": 50, "batch_size": 128, "learning_rate": 5e-4, "lr_schedule": "cosine",
        "warmup_steps": None, "weight_decay": 1e-2, "gradient_clip": 1.0,
        "early_stopping_patience": None, "lr_patience": 15,
    },
    "paper": {
        "max_epochs": 1000, "batch_size": 128, "learning_rate": 1e-4, "lr_schedule": "plateau",
        "warmup_steps": 0, "weight_decay": 1e-2, "gradient_clip": 0.5,
        "early_stopping_patience": 30, "lr_patience": 15,
    },
}  # fmt: skip
"""Optimisation settings of ``chemgraph train`` by ``protocol``: ``"default"``, sized to learn
within minutes on a CPU (warm-up and cosine decay over ``max_epochs`` or the time budget, no
early stopping: the schedule sets the run's length and the best validation checkpoint is kept;
learning rate and batch size first chosen on test metrics of the QM9 gap and ESOL, re-chosen
on their validation metrics by ``benchmarks/esa_defaults.py``; ``benchmarks/README.md``), and
``"paper"``, the
protocol of Buterez et al. 2024 ("An end-to-end attention-based approach for learning on
graphs", arXiv:2402.10793, SI 7: AdamW lr 1e-4, batch 128, clipping 0.5, early stopping after
30 epochs without validation improvement, learning rate halved after 15) for long runs. A
setting given explicitly wins over the protocol's."""


@dataclass
class TrainingConfig(RunConfig):
    """Everything ``chemgraph train`` needs; round-trips through YAML (``--config``).

    The optimisation settings left at None take the values of the ``protocol``
    (:data:`PROTOCOLS`), so ``config.yaml`` records the values used.

    Attributes:
        data: CSV/TSV/parquet file (optionally gzipped) with a SMILES column and targets, a
            registered dataset name (``chemgraph datasets list``), or a ``chemgraph
            featurize`` output folder whose ``--target-columns`` hold the targets (its graphs and
            molecule preparation are used as they are).
        data_root: folder with a local copy of a registered dataset's source files (offline
            use); None = ``$CHEMGRAPH_HOME/raw/<name>``, downloaded when missing.
        target_columns: columns to predict (several = multi-task; empty cells = missing); a
            comma-separated string is split.
        out: output folder.
        smiles_column: column holding SMILES.
        task: ``"regression"`` (targets standardised, predictions in the targets' units),
            ``"classification"`` (binary labels 0/1 per target column), or None: decided by
            :func:`chemgraph.jobs.train.train` from the labels (classification when every
            target column holds only 0 and 1, regression otherwise; a note is logged whenever a
            column holds only 0 and 1), and the decided task is written to ``config.yaml``.
        model: a registered model family (:data:`chemgraph.models.MODELS`), e.g. ``"esa"``
            (edge-set attention) or ``"nsa"`` (node-set attention); None = ``"esa"``, or the
            family of the ``init_from`` checkpoint.
        split: ``"random"`` (seeded), ``"scaffold"`` (Bemis–Murcko, deterministic) or
            ``"predefined"`` (``split_column`` or ``split_file``; set when either is given).
        split_column: a column of the data naming each row's split (``train``, ``val`` or
            ``valid``/``validation``, ``test``; an empty cell leaves the row out), as
            Chemprop's ``--splits-column``.
        split_file: a JSON file of 0-based source rows per split, ``{"train": [...], "val":
            [...], "test": [...]}`` (or Chemprop's ``--splits-file`` list holding one such
            mapping; ``"valid"`` is accepted for ``"val"``, and ``"0-3,7"`` strings for lists);
            a relative path is resolved against the current folder.
        split_fractions: train/validation/test fractions, summing to 1.
        seed: seeds the split (unless ``split_seed`` is set), the weight initialisation and
            the shuffling.
        split_seed: seeds the random split instead of ``seed`` (None = ``seed``); the members
            of an ensemble (:func:`chemgraph.jobs.train.ensemble_member`) keep the first
            member's, so they share one split and their test metrics compare.
        protocol: ``"default"`` or ``"paper"``: where the optimisation settings left at None
            come from (:data:`PROTOCOLS`; under ``"default"``, a model family's
            ``training_settings`` of :class:`chemgraph.models.ModelSpec` first).
        max_epochs: upper bound on training epochs (the cosine schedule's length).
        max_time_minutes: wall-clock budget of the training loop (None = no limit); when it
            runs out, training stops and the best checkpoint so far is evaluated. A cosine
            schedule then decays over whichever of the two runs out first.
        max_rows: use only the first N rows of the table (None = all).
        batch_size, learning_rate (AdamW peak), weight_decay, gradient_clip,
        early_stopping_patience (epochs without a lower validation loss; None = train to the
        end of the schedule): optimisation.
        lr_schedule: ``"cosine"`` (linear warm-up over ``warmup_steps`` optimiser steps, None
            = the first 5% of the run, then cosine decay to 1% of ``learning_rate``) or
            ``"plateau"`` (halved after ``lr_patience`` epochs without improvement), see
            :class:`chemgraph.train.module.PropertyPredictionModule`.
        warmup_steps, lr_patience: see ``lr_schedule``.
        featurizer: atom/bond featurizer preset; None = the model's default (ESA/NSA take
            float one-hot features, ``"canonical"``), or the ``init_from`` checkpoint's.
        fragments: multi-fragment (salt) policy, ``"keep"`` all fragments or ``"largest"``.
        standardize: standardisation of every molecule before featurization, ``"none"``,
            ``"basic"`` or ``"chembl"`` (:func:`chemgraph.chem.standardize`). With
            ``fragments`` it is the run's :attr:`preparation`, stored in the checkpoint:
            ``chemgraph predict`` prepares every molecule the same way.
        model_options: fields of the model's configuration, e.g.
            :class:`chemgraph.models.ESAConfig` (hidden_dim, num_heads, layer_pattern, norm,
            mlp, num_seeds, dropout, attend_to_self, readout, ...); the family's
            ``training_options`` (:class:`chemgraph.models.ModelSpec`, e.g. ESA's
            ``readout: seeds+sum``) fill the options not given (not with ``init_from``, whose
            checkpoint's options are used).
        init_from: a property checkpoint (``best.ckpt`` of ``chemgraph train``) to start from:
            every weight but the output head is copied (:func:`chemgraph.train.finetune.
            transfer_weights`), the head is new for ``target_columns``. ``model``,
            ``featurizer`` and ``model_options`` are the checkpoint's
            (:func:`chemgraph.train.finetune.resolve_init_from`); given otherwise, the run is
            refused. The molecule preparation (``standardize``, ``fragments``) is this run's.
        init_from_sha256: the checkpoint's SHA-256, filled in when None and recorded in
            ``config.yaml``; given (a repeated run), the file must still have it.
        freeze_encoder: with ``init_from``, train the new head only (the copied parameters do
            not change).
        num_workers: DataLoader worker processes.
        accelerator: Lightning accelerator (``"auto"`` picks CUDA when available).
        devices: above 1, the fit runs distributed data-parallel (Lightning DDP) over this
            many forked processes: one per GPU, or CPU processes talking through gloo when
            the run is on the CPU; each computes on one CPU thread. Each process takes
            ``batch_size`` molecules per optimiser step, so a step sees ``devices ×
            batch_size`` molecules and an epoch has ``1/devices`` of the steps. The
            checkpoint and the progress lines come from the first process, the validation
            loss is averaged over the processes (their shares padded to equal sizes), and
            ``metrics.json`` is computed afterwards by one process on the whole validation
            and test splits, as with one device.
        progress: report progress: a tqdm bar per epoch on a terminal, else a line every
            tenth of an epoch (logs, CI), and one line per epoch
            (:class:`chemgraph.train.callbacks.EpochProgress`).

    Raises:
        ConfigError: a bad setting (named, with what is allowed), before any work is done;
            :meth:`chemgraph.models.ModelConfig.check_options` errors for ``model_options``.
    """

    data: str
    target_columns: list[str]
    out: str
    smiles_column: str = "smiles"
    data_root: str | None = None
    task: Literal["regression", "classification"] | None = None
    model: str | None = None
    split: Literal["random", "scaffold", "predefined"] = "random"
    split_column: str | None = None
    split_file: str | None = None
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    seed: int = 0
    split_seed: int | None = None
    protocol: Literal["default", "paper"] = "default"
    max_epochs: int | None = None
    max_time_minutes: float | None = None
    max_rows: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    lr_schedule: Literal["cosine", "plateau"] | None = None
    weight_decay: float | None = None
    warmup_steps: int | None = None
    gradient_clip: float | None = None
    early_stopping_patience: int | None = None
    lr_patience: int | None = None
    featurizer: str | None = None
    fragments: Literal["keep", "largest"] = "keep"
    standardize: Literal["none", "basic", "chembl"] = "none"
    model_options: dict[str, Any] = field(default_factory=dict)
    num_workers: int = 0
    accelerator: str = "auto"
    devices: int = 1
    progress: bool = True
    init_from: str | None = None
    init_from_sha256: str | None = None
    freeze_encoder: bool = False

    CHOICES = {
        "task": ("regression", "classification", None),
        "model": (*MODELS, None),
        "split": ("random", "scaffold", "predefined"),
        "fragments": FRAGMENT_POLICIES,
        "standardize": STANDARDIZE_METHODS,
        "protocol": tuple(PROTOCOLS),
        "lr_schedule": ("cosine", "plateau", None),
    }
    NUMBERS = {
        "max_epochs": (int, 1), "batch_size": (int, 1), "seed": (int, 0), "split_seed": (int, 0),
        "warmup_steps": (int, 0), "early_stopping_patience": (int, 0), "lr_patience": (int, 0),
        "num_workers": (int, 0), "max_rows": (int, 1), "max_time_minutes": (float, 0.1),
        "learning_rate": (float, 0.0), "weight_decay": (float, 0.0), "gradient_clip": (float, 0.0),
        "devices": (int, 1),
    }  # fmt: skip

    @property
    def preparation(self) -> MoleculePreparation:
        """The molecule preparation of the run (standardisation, then the fragment policy)."""
        return MoleculePreparation(standardize=self.standardize, fragments=self.fragments)

    def __post_init__(self) -> None:
        training_options = self.init_from is None
        if self.init_from is not None:
            self.init_from = str(self.init_from)
            settings, self.model, self.featurizer, self.model_options = resolve_init_from(
                self.init_from, self.model, self.featurizer, self.model_options,
                self.init_from_sha256,
            )  # fmt: skip
            self.init_from, self.init_from_sha256 = settings.path, settings.sha256
        elif self.freeze_encoder:
            raise ConfigError("freeze_encoder needs init_from (the checkpoint to start from)")
        elif self.init_from_sha256 is not None:
            raise ConfigError("init_from_sha256 is given without init_from")
        if self.model is None:
            self.model = "esa"
        protocol = dict(PROTOCOLS.get(self.protocol, {}))
        if self.protocol == "default" and self.model in MODELS:
            protocol.update(MODELS[self.model].training_settings)
        for name, value in protocol.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        super().__post_init__()
        if self.split_column is not None and self.split_file is not None:
            raise ConfigError("give split_column or split_file, not both")
        if self.split_column is not None or self.split_file is not None:
            if self.split == "scaffold":
                raise ConfigError(
                    "split 'scaffold' and a predefined split (split_column or split_file) "
                    "exclude each other"
                )
            self.split = "predefined"
        elif self.split == "predefined":
            raise ConfigError("split 'predefined' needs split_column or split_file")
        fractions = tuple(_number("split_fractions", f, float, 0.0) for f in self.split_fractions)
        if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-6:
            raise ConfigError(f"split_fractions must be 3 numbers summing to 1, got {fractions}")
        self.split_fractions = fractions
        if isinstance(self.target_columns, str):
            self.target_columns = [c.strip() for c in self.target_columns.split(",")]
        self.target_columns = [str(c) for c in self.target_columns]
        if not self.target_columns or "" in self.target_columns:
            raise ConfigError(f"target_columns must name columns, got {self.target_columns!r}")
        repeated = sorted({c for c in self.target_columns if self.target_columns.count(c) > 1})
        if repeated:
            raise ConfigError(f"target_columns names {', '.join(repeated)} more than once")
        spec = get_model_spec(self.model)
        if spec.graph_kind != "bond":
            raise ConfigError(
                f"model {self.model!r} reads {spec.graph_kind} graphs of 3D structures; "
                "chemgraph train builds bond graphs from SMILES: train it with chemgraph "
                "transfer on geometries, or choose a bond-graph model"
            )
        if self.featurizer is None:
            self.featurizer = spec.default_featurizer
        preset = get_preset(self.featurizer)
        if preset.atom.dtype != spec.feature_dtype:
            kind = "one-hot (float)" if spec.feature_dtype == torch.float32 else "categorical"
            raise ConfigError(
                f"{self.model.upper()} takes {kind} features; featurizer {self.featurizer!r} "
                f"gives {preset.atom.dtype}: use {spec.default_featurizer!r}"
            )
        if training_options:
            self.model_options = {**spec.training_options, **self.model_options}
        spec.config_class.check_options(self.model_options)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str | None = None) -> TrainingConfig:
        """As :meth:`RunConfig.from_dict`; with ``data`` a registered dataset name,
        ``target_columns`` and ``task`` default to its card's (:func:`dataset_defaults`)."""
        return super().from_dict({**dataset_defaults(values.get("data")), **values}, source)


def dataset_defaults(data: Any) -> dict[str, Any]:
    """``target_columns`` and ``task`` from the card when ``data`` names a registered dataset
    (and is not a file), so ``chemgraph train --data esol`` needs no more; else ``{}``."""
    if data is None or Path(str(data)).is_file() or str(data) not in list_datasets():
        return {}
    card = dataset_card(str(data))
    defaults: dict[str, Any] = {}
    if card.targets:
        defaults["target_columns"] = list(card.targets)
    if card.raw.get("task") in ("regression", "classification"):
        defaults["task"] = card.raw["task"]
    return defaults


def paper_protocol_differences(config: TrainingConfig) -> list[str]:
    """What a ``protocol="paper"`` run does otherwise than the paper (Buterez et al. 2024, "An
    end-to-end attention-based approach for learning on graphs", arXiv:2402.10793, SI 7),
    one sentence each; ``chemgraph train`` logs them when it starts such a run.

    Listed: the optimiser's precision (32-bit AdamW and float32 training, against the paper's
    8-bit AdamW and bfloat16 mixed precision), the weight decay (the paper gives none), each
    model option ``chemgraph train`` sets by default that departs from the configuration's
    paper form (:attr:`chemgraph.models.ModelSpec.training_options`, e.g. ESA's ``readout:
    seeds+sum``, GMoE's ``k: 2`` and LayerNorm), and, for a family other than ESA/NSA, that the
    optimisation settings are the ESA paper's, not its own paper's.
    """
    differences = [
        "AdamW with 32-bit states and float32 training (the paper: 8-bit AdamW, bfloat16 mixed "
        "precision)",
        f"weight decay {config.weight_decay:g} (the paper gives none; 1e-2 is PyTorch's AdamW "
        "default)",
    ]
    spec = get_model_spec(config.model)
    defaults = {f.name: f.default for f in fields(spec.config_class) if f.default is not MISSING}
    for name, value in spec.training_options.items():
        if config.model_options.get(name) == value and defaults.get(name, value) != value:
            differences.append(
                f"model option {name} {value!r} (chemgraph's default for training; the "
                f"paper's form is {defaults[name]!r})"
            )
    if config.model not in ("esa", "nsa"):
        differences.append(
            f"batch size {config.batch_size} and learning rate {config.learning_rate:g} are the "
            f"ESA paper's protocol, not the {config.model} paper's own"
        )
    return differences
