"""chemgraph.train.trainer, callbacks and checkpoint: one Trainer factory, progress lines, the
best weights of a fit, and the one checkpoint loader."""

from __future__ import annotations

import logging
import os
import re
import signal
import warnings
from fractions import Fraction
from pathlib import Path

import lightning as L
import pytest
import torch
from tqdm.auto import tqdm

from chemgraph.batches.reaction import TokenVocabulary
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.train.callbacks import CPUTimeLimit, EpochProgress, LossHistory, ValidationLog
from chemgraph.train.checkpoint import (
    best_checkpoint_path,
    checkpoint_kind,
    load_checkpoint,
    load_weights,
)
from chemgraph.train.module import PropertyPredictionModule
from chemgraph.train.predictors import PropertyPredictor, ReactionPredictor
from chemgraph.train.reaction_module import ReactionModule
from chemgraph.train.trainer import make_trainer, quiet_third_party_warnings
from chemgraph.transfer.chains import build_module
from chemgraph.transfer.config import TransferConfig


class _Linear(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def _loss(self, batch) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch))
        self.log("val_score", torch.tensor(0.25))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _loader() -> torch.utils.data.DataLoader:
    x = torch.randn(16, 2, generator=torch.Generator().manual_seed(0))
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    return torch.utils.data.DataLoader(data, batch_size=4)


def test_fit_keeps_the_best_weights_and_records_losses(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="chemgraph")
    history = LossHistory(log_epochs=True)
    trainer = make_trainer(
        max_epochs=3, checkpoint_dir=tmp_path, early_stopping_patience=5, callbacks=[history],
        accelerator="cpu",
    )  # fmt: skip
    assert trainer.precision == "32-true"  # the CPU half of the precision rule
    module = _Linear()
    trainer.fit(module, _loader(), _loader())
    best = best_checkpoint_path(trainer, "raise max_epochs")
    assert best == tmp_path / "best.ckpt" and best.is_file()
    assert [e["epoch"] for e in history.epochs] == [0, 1, 2]
    assert all(e["train_loss"] > 0 and e["val_loss"] > 0 for e in history.epochs)
    assert sum(m.startswith("epoch   2: train_loss ") for m in caplog.messages) == 1
    fresh = _Linear()
    load_weights(fresh, best)
    checkpoint = torch.load(best, weights_only=True)
    torch.testing.assert_close(fresh.state_dict(), checkpoint["state_dict"])


def test_without_checkpoint_dir_nothing_is_written(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.INFO, logger="chemgraph")
    log = ValidationLog([("score", "val_score", 2)])
    trainer = make_trainer(max_epochs=1, val_check_interval=2, callbacks=[log], accelerator="cpu")
    trainer.fit(_Linear(), _loader(), _loader())
    assert list(tmp_path.iterdir()) == []
    steps = [m for m in caplog.messages if m.startswith("step ")]
    assert len(steps) == 2 and all("  score 0.25  (" in m for m in steps)
    with pytest.raises(ValueError, match=r"before its first validation \(no checkpoint\); raise"):
        best_checkpoint_path(trainer, "raise the limits")


def test_quiet_third_party_warnings_is_idempotent():
    logger = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    with warnings.catch_warnings(record=True) as caught:
        quiet_third_party_warnings()
        count = len(logger.filters)
        quiet_third_party_warnings()
        warnings.warn("Checkpoint directory /x exists and is not empty.", UserWarning, stacklevel=1)
    assert len(logger.filters) == count and caught == []
    advert = logger.makeRecord(logger.name, logging.INFO, __file__, 0, "try litlogger", (), None)
    assert not logger.filter(advert)


def test_epoch_progress_logs_a_line_every_tenth_of_an_epoch(caplog):
    caplog.set_level(logging.INFO, logger="chemgraph")
    one_by_one = torch.utils.data.DataLoader(_loader().dataset, batch_size=1)  # 16 steps
    trainer = make_trainer(
        max_epochs=2, callbacks=[EpochProgress(bar=False), LossHistory(log_epochs=True)],
        accelerator="cpu",
    )  # fmt: skip
    trainer.fit(_Linear(), one_by_one, _loader())
    lines = [m for m in caplog.messages if m.startswith("epoch ")]
    # every ceil(16 / 10) = 2 steps; the epoch's line stands for its last step
    expected = []
    for epoch in (0, 1):
        expected += [f"epoch {epoch:3d} step {step}/16" for step in range(2, 16, 2)]
        expected.append(f"epoch {epoch:3d}")
    assert [m.split(":")[0] for m in lines] == expected
    steps = [m for m in lines if " step " in m]
    assert all(re.search(r": train_loss \d+\.\d{4}  \(\d+ s\)$", m) for m in steps)


def test_epoch_progress_bar_counts_the_epoch_steps(monkeypatch, caplog):
    bars = []

    class Recorded(tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr("chemgraph.train.callbacks.tqdm", Recorded)
    caplog.set_level(logging.INFO, logger="chemgraph")
    trainer = make_trainer(max_epochs=2, callbacks=[EpochProgress(bar=True)], accelerator="cpu")
    trainer.fit(_Linear(), _loader(), _loader())
    assert [(bar.desc, bar.total, bar.n) for bar in bars] == [("epoch 0", 4, 4), ("epoch 1", 4, 4)]
    assert all(float(bar.postfix.removeprefix("train_loss=")) > 0 for bar in bars)
    assert not [m for m in caplog.messages if " step " in m]


class _SyncedLinear(_Linear):
    """:class:`_Linear` logging its epoch losses averaged over the processes."""

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch), sync_dist=True)


def test_two_processes_hand_rank_zero_state_back(tmp_path):
    history = LossHistory()
    trainer = make_trainer(
        max_epochs=3, checkpoint_dir=tmp_path, callbacks=[history], accelerator="cpu", devices=2
    )
    module = _SyncedLinear()
    before = module.layer.weight.detach().clone()
    trainer.fit(module, _loader(), _loader())
    assert trainer.world_size == 2 and trainer.current_epoch == 3 and trainer.global_step == 6
    assert [e["epoch"] for e in history.epochs] == [0, 1, 2]
    assert history.epochs[-1]["train_loss"] < history.epochs[0]["train_loss"]
    assert not torch.equal(module.layer.weight, before)  # the last weights came back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt"]
    assert best_checkpoint_path(trainer, "") == tmp_path / "best.ckpt"


def test_devices_lightning_refuses_are_a_value_error():
    with pytest.raises(ValueError, match=r"^accelerator 'gpu', devices 10000: "):
        make_trainer(max_epochs=1, accelerator="gpu", devices=10_000)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A property-prediction and a reaction-outcome checkpoint (random weights)."""
    folder = tmp_path_factory.mktemp("checkpoints")
    torch.manual_seed(0)
    config = TransferConfig(
        featurizer=RadiusGraphFeaturizer(cutoff=3.0, num_basis=8).to_dict(),
        model_options={"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2},
    )
    vocabulary = TokenVocabulary([]).tokens
    modules = {
        "property": build_module(config, ["y"], torch.zeros(4, 1), 1e-3),
        "reaction": ReactionModule(
            model_config={"vocab_size": len(vocabulary), "hidden_dim": 16, "num_heads": 2,
                          "encoder_layers": 1, "decoder_layers": 1, "projection_dim": 8},
            vocabulary=vocabulary,
        ),
    }  # fmt: skip
    paths = {}
    for kind, module in modules.items():
        paths[kind] = folder / f"{kind}.ckpt"
        torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()},
                   paths[kind])  # fmt: skip
    return modules, paths


def test_one_loader_for_both_kinds(checkpoints):
    """Each kind is read into its plain predictor, with the trained module's
    hyper-parameters and weights."""
    modules, paths = checkpoints
    for kind, cls in (("property", PropertyPredictor), ("reaction", ReactionPredictor)):
        for wanted in (kind, None):
            module = load_checkpoint(paths[kind], kind=wanted)
            assert type(module) is cls and not module.training
            assert dict(module.hparams) == dict(modules[kind].hparams)
            assert checkpoint_kind(dict(module.hparams)) == kind
            torch.testing.assert_close(module.state_dict(), modules[kind].state_dict())


def test_the_wrong_kind_says_which_command_takes_it(checkpoints):
    _, paths = checkpoints
    with pytest.raises(ValueError, match="reaction-outcome .* use it with `chemgraph react`"):
        load_checkpoint(paths["reaction"], kind="property")
    with pytest.raises(ValueError, match="property-prediction .* use it with `chemgraph predict`"):
        load_checkpoint(paths["property"], kind="reaction")


def test_files_that_are_not_checkpoints(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.ckpt")
    text = tmp_path / "table.csv"
    text.write_text("smiles\nCCO\n")
    with pytest.raises(ValueError, match="not a readable PyTorch checkpoint"):
        load_checkpoint(text)
    other = tmp_path / "other.ckpt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(ValueError, match="no hyper_parameters/state_dict"):
        load_checkpoint(other)
    torch.save({"hyper_parameters": {"hidden": 3}, "state_dict": {}}, other)
    with pytest.raises(ValueError, match="not a chemgraph property checkpoint"):
        load_checkpoint(other)


def test_a_file_torch_cannot_load_gives_one_line_without_torch_advice(tmp_path):
    """torch's messages span lines and advise ``weights_only=False``; ours is one line with the
    reason only."""
    pickled = tmp_path / "pickled.ckpt"
    torch.save({"hyper_parameters": {"ratio": Fraction(1, 3)}, "state_dict": {}}, pickled)
    zipped = tmp_path / "zipped.ckpt"
    zipped.write_bytes(b"PK\x03\x04 not a zip archive")
    empty = tmp_path / "empty.ckpt"
    empty.write_bytes(b"")
    text = tmp_path / "table.csv"
    text.write_text("smiles\nCCO\n")
    reasons = {  # regular expressions: miniz words its reason by what it finds
        pickled: r"it holds a Python object \(fractions\.Fraction\) that a chemgraph "
        r"checkpoint never holds",
        zipped: r"PytorchStreamReader failed reading zip archive: [^.\n]+",
        empty: r"the file ends early \(empty or truncated\)",
        text: r"not a file written by torch\.save",
    }
    for path, reason in reasons.items():
        with pytest.raises(ValueError) as error:
            load_checkpoint(path)
        prefix = re.escape(f"{path} is not a readable PyTorch checkpoint: ")
        assert re.fullmatch(prefix + reason, str(error.value)), str(error.value)


def test_cosine_schedule_runs_over_the_planned_steps(tmp_path):
    """The learning rate of every optimiser step of a real fit follows the schedule: warm-up
    over the first 5% of the steps, then cosine decay to 1% of the peak at the last step (step
    ``i`` of ``n`` runs at progress ``(i + 1) / n``)."""
    import lightning as L
    import torch

    from chemgraph.train.module import cosine_learning_rate

    seen = []

    class Record(L.Callback):
        def on_before_optimizer_step(self, trainer, module, optimizer):
            seen.append(optimizer.param_groups[0]["lr"])

    import pandas as pd
    from fixtures.tiny_models import tiny_config

    from chemgraph.data import MoleculeDataModule, featurize_table
    from chemgraph.featurize import get_preset
    from chemgraph.models import get_model_spec

    smiles = ["C", "CC", "CCO", "CCN", "c1ccccc1", "CC(=O)O", "CCCC", "OCCO", "CN", "CCCl"]
    table = pd.DataFrame({"smiles": smiles, "y": [float(i) for i in range(10)]})
    dataset, _ = featurize_table(table, "smiles", ["y"], get_preset("canonical"), progress=False)
    module = PropertyPredictionModule(
        tiny_config("esa"), "regression", ["y"], get_preset("canonical").to_dict(),
        learning_rate=1e-3, lr_schedule="cosine", warmup_steps=None,
    )  # fmt: skip
    build = get_model_spec("esa").batch_builder(module.model.config)
    data = MoleculeDataModule(dataset, dataset, None, build, batch_size=4)
    trainer = make_trainer(max_epochs=4, callbacks=[Record()], accelerator="cpu")
    trainer.fit(module, datamodule=data)
    steps = len(seen)
    assert steps == trainer.global_step and steps >= 8
    expected = [cosine_learning_rate((i + 1) / steps, 1e-3, 0.05, 0.01) for i in range(steps)]
    assert torch.allclose(torch.tensor(seen), torch.tensor(expected), rtol=1e-6)


class _Clock:
    """A CPU clock that advances 10 s on every reading (0, 10, 20, ...)."""

    def __init__(self) -> None:
        self.now = -10.0

    def __call__(self) -> float:
        self.now += 10.0
        return self.now


def test_cpu_time_limit_stops_at_the_batch_that_reaches_the_budget(caplog):
    caplog.set_level(logging.INFO, logger="chemgraph")
    # start reads 0 s; the batches end at 10, 20, 30 s: the third reaches 0.5 min
    limit = CPUTimeLimit(0.5, clock=_Clock())
    trainer = make_trainer(max_epochs=5, callbacks=[limit], accelerator="cpu")
    trainer.fit(_Linear(), _loader())  # 4 batches an epoch: 20 without the limit
    assert trainer.global_step == 3 and limit.stopped_step == 3
    assert "CPU-time budget of 0.5 min reached at step 3: training stops" in caplog.messages


def test_cpu_time_limits_with_one_start_share_one_budget():
    clock = _Clock()
    start = clock()  # 0 s
    first = CPUTimeLimit(0.5, start=start, clock=clock)
    make_trainer(max_epochs=5, callbacks=[first], accelerator="cpu").fit(_Linear(), _loader())
    assert first.stopped_step == 3  # 10, 20, 30 s
    second = CPUTimeLimit(1.0, start=start, clock=clock)  # 30 s of its 60 s are spent
    trainer = make_trainer(max_epochs=5, callbacks=[second], accelerator="cpu")
    trainer.fit(_Linear(), _loader())
    assert trainer.global_step == 3 and second.stopped_step == 3  # 40, 50, 60 s
    assert clock.now == 60.0  # no reading after the stop


def test_cpu_time_limit_refuses_a_negative_budget():
    with pytest.raises(ValueError, match="CPU-time budget must be >= 0 minutes"):
        CPUTimeLimit(-1.0)


class _SignalAtBatch(L.Callback):
    """Sends ``signum`` to this process after the first training batch."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.current_epoch == 0 and batch_idx == 0:
            os.kill(os.getpid(), self.signum)


@pytest.mark.parametrize("inherited", ["handler", "ignored"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_fit_is_raised_as_interrupted_not_a_quiet_exit(tmp_path, signum, inherited):
    """Lightning ends the epoch and exits with status 0 on SIGTERM (a scheduler would read
    success) and with status 1 on Ctrl-C; fit raises the signal instead, restores the Ctrl-C
    handler Lightning leaves ignored, and trains no further epoch, whether the process has a
    Ctrl-C handler or inherited SIGINT ignored (started in the background: ``make test &``)."""
    from chemgraph._interrupts import Interrupted
    from chemgraph.train.fit import fit

    history = LossHistory()
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    # the test decides the inherited disposition, whatever started pytest
    signal.signal(
        signal.SIGINT, signal.default_int_handler if inherited == "handler" else signal.SIG_IGN
    )
    sigint, sigterm = signal.getsignal(signal.SIGINT), saved[1]
    try:
        with pytest.raises(Interrupted) as stopped:
            fit(
                _Linear(), (_loader(), _loader()), budget_hint="raise max_epochs",
                quiet=True, max_epochs=5, checkpoint_dir=tmp_path, accelerator="cpu",
                callbacks=[history, _SignalAtBatch(signum)],
            )  # fmt: skip
        assert stopped.value.signum == signum
        assert len(history.epochs) <= 1  # SIGTERM: the epoch ends; SIGINT: at once
        assert signal.getsignal(signal.SIGINT) == sigint
    finally:
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, sigterm)


class _Noisy(_Linear):
    """Dropout on its input: every step draws from torch's generator."""

    def _loss(self, batch) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(torch.nn.functional.dropout(x, 0.3)), y)


class _TermAfter(L.Callback):
    """Sends this process SIGTERM once epoch ``epoch`` has ended, as a scheduler would."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_epoch_end(self, trainer, module) -> None:
        if trainer.current_epoch == self.epoch:
            os.kill(os.getpid(), signal.SIGTERM)


def test_a_fit_stopped_by_sigterm_resumes_from_its_last_checkpoint_as_if_never_stopped(tmp_path):
    """keep_last writes last.ckpt after every validation; a fit stopped by SIGTERM after epoch
    1 and resumed from it ends with the weights, losses and best checkpoint of the fit that
    was never stopped: the batches' order depends on the seed and epoch alone, and the random
    generators (dropout here) are restored with the checkpoint."""
    from chemgraph._interrupts import Interrupted
    from chemgraph.data.datamodule import SeededShuffleSampler
    from chemgraph.train.fit import fit

    x = torch.randn(24, 2, generator=torch.Generator().manual_seed(1))
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))

    def run(folder, callbacks=(), resume_from=None):
        L.seed_everything(0, verbose=False)
        module, history = _Noisy(), LossHistory()
        train = torch.utils.data.DataLoader(
            data, batch_size=4, sampler=SeededShuffleSampler(len(data), seed=3)
        )
        fit(
            module, (train, torch.utils.data.DataLoader(data, batch_size=8)),
            budget_hint="raise max_epochs", restore_best=False, resume_from=resume_from,
            max_epochs=4, checkpoint_dir=folder, keep_last=True,
            callbacks=[history, *callbacks], accelerator="cpu",
        )  # fmt: skip
        return module, history

    whole, whole_history = run(tmp_path / "whole")
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted):
        run(tmp_path / "stopped", [_TermAfter(1)])
    signal.signal(signal.SIGTERM, previous)
    last = tmp_path / "stopped" / "last.ckpt"
    assert torch.load(last, weights_only=True)["epoch"] == 1  # epochs 0 and 1 done
    resumed, resumed_history = run(tmp_path / "stopped", resume_from=last)
    for ours, theirs in zip(resumed.parameters(), whole.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert resumed_history.epochs == whole_history.epochs  # the record came back with it
    folders = (tmp_path / "whole", last.parent)
    best = [torch.load(folder / "best.ckpt", weights_only=True) for folder in folders]
    for name, tensor in best[0]["state_dict"].items():
        torch.testing.assert_close(best[1]["state_dict"][name], tensor, rtol=0, atol=0)


def test_the_best_checkpoint_is_written_beside_itself_and_renamed_never_copied_over(
    tmp_path, monkeypatch
):
    """Lightning wrote best.ckpt through the system's temporary folder and moved it: a full
    (or missing) temporary folder failed the fit, and on another file system the move is a
    copy over the earlier best.ckpt, which a kill or a full disk then destroys (issue 45)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temporary-folder"))
    out = tmp_path / "run"
    trainer = make_trainer(max_epochs=2, checkpoint_dir=out, accelerator="cpu")
    trainer.fit(_Linear(), _loader(), _loader())
    best = out / "best.ckpt"
    assert torch.load(best, weights_only=True)["state_dict"]  # written, and readable
    earlier = best.read_bytes()

    def full_disk(checkpoint, path):  # writes half a file, then the disk is full
        with open(path, "wb") as handle:
            handle.write(earlier[: len(earlier) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError, match="No space left"):
        trainer.save_checkpoint(best)
    assert best.read_bytes() == earlier  # the last good model is whole
    assert sorted(p.name for p in out.iterdir()) == ["best.ckpt"]  # no temporary left


def test_the_reaction_centre_model_is_saved_atomically_too(tmp_path, monkeypatch):
    from chemgraph.reactions.reaction_centre import save_reaction_centre_model

    model = tmp_path / "model.pt"
    model.write_bytes(b"the earlier model")

    class _Model:  # what save_reaction_centre_model reads of a model
        scorer = ranker = torch.nn.Linear(2, 1)
        config = type("Config", (), {"to_dict": lambda self: {}})()
        settings: dict = {}

    def full_disk(checkpoint, path):
        Path(path).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save_reaction_centre_model(model, _Model())
    assert model.read_bytes() == b"the earlier model"
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]
