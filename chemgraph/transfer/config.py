"""The settings of a transfer-learning run (:class:`TransferConfig`), its strategies and the
models it trains (:func:`target_groups`).

By default every target gets its own chain, one pretraining and one fine-tuning of a model with
one output, as in the authors' code for Buterez et al. 2024 Table 5 (one target per run);
``joint_targets`` trains one model with an output per target instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chemgraph.chem import STANDARDIZE_METHODS, MoleculePreparation
from chemgraph.chem.parse import FRAGMENT_POLICIES
from chemgraph.errors import ConfigError, setting
from chemgraph.featurize import FeaturizerPreset, RadiusGraphFeaturizer
from chemgraph.models import get_model_spec
from chemgraph.train.config import RunConfig
from chemgraph.train.delta import DELTA_STRATEGIES
from chemgraph.train.module import LR_SCHEDULES

__all__ = [
    "DELTA_SETTINGS",
    "LABEL_AUGMENTATION",
    "PAPER_STRATEGIES",
    "PRETRAINED_STRATEGIES",
    "PRETRAINING_POOLS",
    "STRATEGIES",
    "TRANSFER_PROTOCOLS",
    "TRANSFER_ONLY_SETTINGS",
    "TransferConfig",
    "model_label",
    "target_groups",
    "turned_off",
]

STRATEGIES = ("high_fidelity_only", "inductive", "transductive", "label_augmentation")
"""Every strategy a run may train: ``high_fidelity_only`` (the high-fidelity labels alone),
``inductive`` and ``transductive`` (pretrained on the low-fidelity labels of every molecule but
the high-fidelity test molecules, or of every molecule; Buterez et al. 2024), and
``label_augmentation`` (:data:`LABEL_AUGMENTATION`)."""

PAPER_STRATEGIES = ("high_fidelity_only", "inductive", "transductive")
"""The strategies of Buterez et al. 2024 Table 5 (the ``paper`` protocol's)."""

LABEL_AUGMENTATION = "label_augmentation"
"""The transductive strategy whose model reads each molecule's low-fidelity labels as an input:
pretrained as ``transductive`` (the same pool; a run that trains both pretrains once per seed
and targets), then fine-tuned as a :class:`chemgraph.models.LabelAugmentation` of the
pretrained network, whose readout also reads the molecule's standardised low-fidelity labels
(Buterez, Janet, Kiddle, Oglic and Liò 2024, "Transfer learning with graph neural networks for
improved molecular property prediction in the multi-fidelity setting", Nat. Commun. 15, 1517,
doi:10.1038/s41467-024-45566-8: the low-fidelity label concatenated to the graph embedding
before the final layers). Not a Δ-learning strategy: the network learns the high-fidelity
labels themselves. ``chemgraph predict`` reads the low-fidelity values from the input columns
named as the run's (:attr:`MultiFidelityData.low_fidelity_columns`); a record without one gets
an error and no prediction. In neither protocol's strategies: ahead of the transductive
Δ-learning network on test on xTB → DFT, behind on FreeSolv and ESOL, where validation chose it
once (``benchmarks/README.md``, "Label augmentation against the default strategies")."""

PRETRAINED_STRATEGIES = ("inductive", "transductive", LABEL_AUGMENTATION)
"""The strategies that pretrain on the low-fidelity labels (``freeze_encoder`` acts on their
fine-tuning)."""

PRETRAINING_POOLS = {"inductive": "inductive", "transductive": "transductive",
                     LABEL_AUGMENTATION: "transductive"}  # fmt: skip
"""The pretraining pool of each pretrained strategy, by the strategy that names it
(:func:`chemgraph.transfer.chains.pretraining_pool`)."""


DELTA_SETTINGS = ("delta_learning", "stack_kernel_ridge")
"""The settings that act on the transfer strategies only (:data:`DELTA_STRATEGIES`)."""

TRANSFER_ONLY_SETTINGS = ("freeze_encoder", *DELTA_SETTINGS)
"""Switches that act on the transfer strategies' fine-tuning only (``freeze_encoder``:
:data:`PRETRAINED_STRATEGIES`; the others: :data:`DELTA_STRATEGIES`): with none of their
strategies they would change nothing, so :class:`TransferConfig` refuses them."""


def turned_off(*names: str) -> str:
    """What turns the switches ``names`` off, as the user gave them: ``"leave out
    --delta-learning"`` on a command line (:func:`chemgraph.errors.setting`), else ``"set
    delta_learning: false"``."""
    flags = [setting(name) for name in names if setting(name) != name]
    keys = [f"{name}: false" for name in names if setting(name) == name]
    parts = [f"leave out {' and '.join(flags)}"] if flags else []
    return " and ".join(parts + ([f"set {' and '.join(keys)}"] if keys else []))


TRANSFER_PROTOCOLS: dict[str, dict[str, Any]] = {
    "default": {
        "strategies": list(PAPER_STRATEGIES), "seeds": 2, "pretrain_epochs": 100,
        "pretrain_early_stopping": True,
        "finetune_max_epochs": 100, "early_stopping_patience": 10, "lr_patience": 5,
        "batch_size": 64, "learning_rate": 5e-4, "gradient_clip": 1.0, "delta_learning": True,
    },
    "paper": {
        "strategies": list(PAPER_STRATEGIES), "seeds": 5, "pretrain_epochs": 150,
        "pretrain_early_stopping": False,
        "finetune_max_epochs": 300, "early_stopping_patience": 30, "lr_patience": 15,
        "batch_size": 128, "learning_rate": 1e-4, "gradient_clip": 0.5, "delta_learning": False,
    },
}  # fmt: skip
"""The settings of :class:`TransferConfig` left at None, by ``protocol``: ``"default"``, sized
for a user's table on a CPU (every phase ends by early stopping on its validation molecules,
within an upper bound of epochs; 2 seeds, the fewest that give a spread and an ensemble, so
that a table of 3,000 molecules with two targets trains within 10 minutes on 2 cores;
Δ-learning, so that the transfer strategies use each molecule's low-fidelity value as an
input, as the best baselines do), and ``"paper"``, the
protocol of Buterez et al. 2024 (arXiv:2402.10793; SI 4: 150 fixed pretraining epochs, 5 seeds;
SI 7: AdamW lr 1e-4, batch 128, clipping 0.5, early stopping after 30 epochs, the learning
rate halved after 15), sized for a GPU; the ``dft_to_gw`` recipe runs it. ``delta_learning``
of a protocol applies when ``strategies`` holds a transfer strategy."""


@dataclass
class TransferConfig(RunConfig):
    """Settings of a transfer-learning run (round-trips through YAML; every setting has a
    default). The settings left at None take the ``protocol``'s values
    (:data:`TRANSFER_PROTOCOLS`), so ``config.yaml`` records the values used.

    Attributes:
        protocol: ``"default"`` (a CPU and a user's table) or ``"paper"`` (Buterez et al.
            2024's protocol), the source of every setting left at None.
        strategies: subset of :data:`STRATEGIES`, in table order (both protocols':
            :data:`PAPER_STRATEGIES`).
        seeds: number of seeds (0 .. seeds-1); the table reports mean ± std over them.
        pretrain_epochs: pretraining epochs: an upper bound with ``pretrain_early_stopping``,
            else a fixed count (Buterez et al. 2024 SI 4: 150).
        pretrain_early_stopping: stop the pretraining after ``early_stopping_patience`` epochs
            without a lower loss on its held-out molecules (``pretrain_val_fraction`` of the
            pool) and keep its best weights; False: ``pretrain_epochs`` fixed epochs, the last
            weights kept (the paper's).
        pretrain_max_minutes: wall-clock cap of one pretraining (None = none; the run then
            stops early and says so in the log and in ``runs.csv``). A cap makes the results
            depend on the machine's speed and load; None keeps them reproducible.
        finetune_max_epochs: upper bound of fine-tuning epochs (early stopping decides).
        finetune_max_minutes: wall-clock cap of one fine-tuning (None = none).
        early_stopping_patience, lr_patience: in epochs, on the validation loss
            (``lr_patience``: the ``"plateau"`` schedule only).
        freeze_encoder: fine-tune only the fresh head (default False: full fine-tuning); the
            transfer strategies only, so ``strategies`` must hold one (else refused).
        joint_targets: one model predicts every target (one pretraining and one fine-tuning
            per strategy and seed); default False: one chain per target, each model with one
            output (the authors' code for Buterez et al. 2024 Table 5: one target per model).
        delta_learning: the transfer strategies fine-tune on the residual of a linear
            correction of what the low-fidelity level says about each molecule, and add the
            correction back: ``high ≈ low @ W + b + model(molecule)``, with ``low`` the
            molecule's own low-fidelity labels (``transductive``: they are known for every
            molecule, the test molecules included) or the pretrained model's prediction of
            them (``inductive``); ``W``, ``b`` fitted by least squares on the high-fidelity
            training molecules over every low-fidelity target of the model
            (:class:`chemgraph.train.delta.DeltaLearning`). Each fine-tuned checkpoint holds
            the correction (and, ``inductive``, the pretrained model), so that ``chemgraph
            predict`` gives high-fidelity values: a ``transductive`` one reads each molecule's
            low-fidelity values from the input columns named as the run's
            (:attr:`MultiFidelityData.low_fidelity_columns`). ``high_fidelity_only`` has
            no low-fidelity level to correct, so ``strategies`` must hold a transfer strategy
            (else refused: it would change nothing). The ``default`` protocol's: True when
            ``strategies`` holds a transfer strategy; the ``paper`` protocol's: False, the
            low-fidelity level only the pretraining target (Buterez et al. 2024 Table 5).
        stack_kernel_ridge: with ``delta_learning``, each transfer strategy also gets a
            stacked Δ-learning row ("+ kernel ridge (stacked Δ)"): ``high ≈ low @ W + b +
            w·model(molecule) + (1 − w)·kernel_ridge(molecule)``, the kernel ridge of the
            Δ-learning baseline (:func:`chemgraph.train.baselines.residual_kernel_ridge`,
            Morgan fingerprints, ``alpha`` on validation) fitted to the residuals of the same
            correction, ``w`` per target and seed from
            :data:`chemgraph.train.delta.STACK_WEIGHTS` by the high-fidelity validation RMSE
            (:func:`chemgraph.train.delta.stack_weights`; ``stack_weight`` in ``runs.csv``).
            Needs ``delta_learning``, a transfer strategy in ``strategies`` and SMILES (the
            fingerprints); refused otherwise, before any work. The checkpoints hold the
            unstacked model only (its own row), not the kernel ridge (they say so to
            ``chemgraph predict``: :attr:`chemgraph.train.delta.DeltaLearning.stacked`).
            Default False.
        baselines: compute the baselines of every setting on the same split
            (:func:`baseline_runs`) and put them in the table (default True).
        batch_size, finetune_batch_size (None = batch_size), learning_rate,
        finetune_learning_rate (None = learning_rate),
        weight_decay, gradient_clip: optimisation (AdamW).
        lr_schedule: ``"plateau"`` (halve the learning rate after ``lr_patience`` epochs
            without improvement; Buterez et al. 2024 SI 7) or ``"cosine"`` (linear warm-up,
            then cosine decay to ``final_lr_fraction`` of the peak over the phase's epochs, or
            over its ``*_max_minutes`` when that runs out first), for both phases
            (:class:`chemgraph.train.module.PropertyPredictionModule`).
        warmup_steps: linear warm-up over this many optimiser steps; None = none for
            ``"plateau"``, the first 5% of each phase for ``"cosine"``.
        final_lr_fraction: floor of the ``"cosine"`` schedule, as a fraction of the peak.
        pretrain_val_fraction: share of the pretraining pool held out for its learning curve.
        model: the registered model family (:data:`chemgraph.models.MODELS`); default
            ``esa-3d``, ESA over the edges of radius graphs of 3D structures (Buterez et al.
            2024 Table 5); a bond-graph family (``esa``, ``gin``, ...) on molecules' 2D graphs.
        featurizer: the family's featurizer (:meth:`chemgraph.models.ModelSpec.featurizer`):
            :class:`chemgraph.featurize.RadiusGraphFeaturizer` fields for ``esa-3d``, a preset
            name (e.g. ``canonical``) for a bond-graph family; empty = the family's default.
        model_options: fields of the family's configuration (e.g.
            :class:`chemgraph.models.ESAConfig`), over the family's
            :attr:`~chemgraph.models.ModelSpec.training_options` (none for ``esa-3d``).
        standardize, fragments: the molecule preparation of a SMILES table
            (:class:`chemgraph.chem.MoleculePreparation`: ``"none"``, ``"basic"`` or
            ``"chembl"`` standardisation, then ``"keep"`` every fragment or the
            ``"largest"``), as ``chemgraph train`` and ``featurize`` apply it; stored in every
            fine-tuned checkpoint, so that ``chemgraph predict`` prepares new molecules the
            same way. Not used for radius graphs of 3D structures.
        accelerator: Lightning accelerator; ``precision`` ``"auto"`` = bf16-mixed on CUDA,
            32-true on CPU (:func:`chemgraph.train.trainer.make_trainer`).
        num_workers: DataLoader workers.
        workers: processes that train the independent chains (strategy x seed x model) side
            by side, one torch thread each, at most the CPUs available and the chains; 1 = one
            after another in this process. The results are the same either way at the same
            thread count (every chain seeds itself); default 2.
        progress: show progress within each epoch (a bar on a terminal, else a line every
            tenth of an epoch, :class:`chemgraph.train.callbacks.EpochProgress`) and log one
            line per epoch.

    Raises:
        ConfigError: a bad setting (named, with what is allowed; by its flag on ``chemgraph
            transfer``'s command line, :func:`chemgraph.errors.setting`).
    """

    protocol: str = "default"
    strategies: list[str] | None = None
    seeds: int | None = None
    pretrain_epochs: int | None = None
    pretrain_early_stopping: bool | None = None
    pretrain_max_minutes: float | None = None
    finetune_max_epochs: int | None = None
    finetune_max_minutes: float | None = None
    early_stopping_patience: int | None = None
    lr_patience: int | None = None
    freeze_encoder: bool = False
    joint_targets: bool = False
    delta_learning: bool | None = None
    stack_kernel_ridge: bool = False
    baselines: bool = True
    batch_size: int | None = None
    finetune_batch_size: int | None = None
    learning_rate: float | None = None
    finetune_learning_rate: float | None = None
    weight_decay: float = 1e-2
    lr_schedule: str = "plateau"
    warmup_steps: int | None = None
    final_lr_fraction: float = 0.01
    gradient_clip: float | None = None
    pretrain_val_fraction: float = 0.05
    model: str = "esa-3d"
    featurizer: dict[str, Any] | str = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)
    standardize: str = "none"
    fragments: str = "keep"
    accelerator: str = "auto"
    precision: str = "auto"
    num_workers: int = 0
    workers: int = 2
    progress: bool = True

    NUMBERS = {
        "seeds": (int, 1), "pretrain_epochs": (int, 1), "finetune_max_epochs": (int, 1),
        "batch_size": (int, 1), "finetune_batch_size": (int, 1),
        "early_stopping_patience": (int, 0), "lr_patience": (int, 0), "warmup_steps": (int, 0),
        "num_workers": (int, 0), "workers": (int, 1), "learning_rate": (float, 0.0),
        "finetune_learning_rate": (float, 0.0), "weight_decay": (float, 0.0),
        "gradient_clip": (float, 0.0), "pretrain_val_fraction": (float, 0.0),
        "pretrain_max_minutes": (float, 0.0), "finetune_max_minutes": (float, 0.0),
        "final_lr_fraction": (float, 0.0),
    }  # fmt: skip
    CHOICES = {
        "lr_schedule": LR_SCHEDULES,
        "standardize": STANDARDIZE_METHODS,
        "fragments": FRAGMENT_POLICIES,
    }

    def __post_init__(self) -> None:
        if self.protocol not in TRANSFER_PROTOCOLS:
            raise ConfigError(
                f"{setting('protocol')} must be one of {tuple(TRANSFER_PROTOCOLS)}, got "
                f"{self.protocol!r}"
            )
        delta_given = self.delta_learning is not None
        for name, value in TRANSFER_PROTOCOLS[self.protocol].items():
            if getattr(self, name) is None:
                setattr(self, name, list(value) if isinstance(value, list) else value)
        if not delta_given and not any(s in DELTA_STRATEGIES for s in self.strategies or []):
            self.delta_learning = False  # the protocol's applies to transfer strategies only
        super().__post_init__()
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown or not self.strategies:
            raise ConfigError(
                f"{setting('strategies')} must be a non-empty subset of {STRATEGIES}: {unknown}"
            )
        for name in (
            "joint_targets",
            "baselines",
            "pretrain_early_stopping",
            *TRANSFER_ONLY_SETTINGS,
        ):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for kinds, names in (
            (PRETRAINED_STRATEGIES, ("freeze_encoder",)), (DELTA_STRATEGIES, DELTA_SETTINGS)
        ):  # fmt: skip
            corrections = [name for name in names if getattr(self, name)]
            if corrections and not any(s in kinds for s in self.strategies):
                flags = " and ".join(setting(name) for name in corrections)
                raise ConfigError(
                    f"{flags} appl{'y' if len(corrections) > 1 else 'ies'} to the transfer "
                    f"strategies ({', '.join(kinds)}) only, and {setting('strategies')} "
                    f"has none ({', '.join(self.strategies)}): add one, or "
                    f"{turned_off(*corrections)}"
                )
        if self.stack_kernel_ridge and not self.delta_learning:
            raise ConfigError(
                f"{setting('stack_kernel_ridge')} blends two Δ-learning models: it needs "
                f"{setting('delta_learning', True)}"
            )
        if not 0 < self.pretrain_val_fraction < 1:
            raise ConfigError(
                f"pretrain_val_fraction must be in (0, 1), got {self.pretrain_val_fraction}"
            )
        try:
            spec = get_model_spec(self.model)
            self.graph_featurizer  # noqa: B018  (validates the featurizer fields)
            self.model_options = {**spec.training_options, **self.model_options}
            spec.config_class.check_options(self.model_options)
        except ValueError as error:
            raise ConfigError(str(error)) from None

    @property
    def graph_featurizer(self) -> FeaturizerPreset | RadiusGraphFeaturizer:
        """The model family's featurizer of :attr:`featurizer`
        (:meth:`chemgraph.models.ModelSpec.featurizer`)."""
        return get_model_spec(self.model).featurizer(self.featurizer or None)

    @property
    def preparation(self) -> MoleculePreparation:
        """The molecule preparation of :attr:`standardize` and :attr:`fragments`."""
        return MoleculePreparation(standardize=self.standardize, fragments=self.fragments)


def model_label(model: str) -> str:
    """The ``method`` of a model family's rows in :func:`results_table`: ``"ESA"`` for
    ``esa`` and ``esa-3d`` alike (the table's setting says which), ``"GIN"`` for ``gin``."""
    return model.upper().removesuffix("-3D")


def target_groups(targets: list[str], joint: bool) -> list[list[int]]:
    """The targets of each model a run trains, as positions in ``targets``: one group of every
    target (``joint``) or one group per target."""
    if joint:
        return [list(range(len(targets)))]
    return [[t] for t in range(len(targets))]
