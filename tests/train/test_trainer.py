"""chemgraph.train.trainer, callbacks and checkpoint: one Trainer factory, progress lines, the
best weights of a fit, and the one checkpoint loader."""

from __future__ import annotations

import logging
import warnings

import lightning as L
import pytest
import torch

from chemgraph.batches.reaction import TokenVocabulary
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.train.callbacks import LossHistory, ValidationLog
from chemgraph.train.checkpoint import (
    best_checkpoint_path,
    checkpoint_kind,
    load_checkpoint,
    load_weights,
)
from chemgraph.train.module import PropertyPredictionModule
from chemgraph.train.reaction_module import ReactionModule
from chemgraph.train.trainer import make_trainer, quiet_third_party_warnings
from chemgraph.train.transfer import TransferConfig, build_module


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
    modules, paths = checkpoints
    for kind, cls in (("property", PropertyPredictionModule), ("reaction", ReactionModule)):
        for wanted in (kind, None):
            module = load_checkpoint(paths[kind], kind=wanted)
            assert isinstance(module, cls) and not module.training
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
