"""The dft_to_gw recipe's `full` data path (QM9 + QM9-GW) offline, on a 30-molecule fixture.

Fixture (tests/recipes/data/qm9_gw_full/):
* ``qm9/qm9pack_tiny.csv``: the qm9pack 1.0.3 rows (real QM9: B3LYP geometries and labels) of
  the 30 molecules of ``qm9_gw_tiny.csv``, copied byte for byte from ``qm9_part1.csv``;
* ``qm9_gw/db_new_qm9_gw.yaml``: those molecules in the QM9-GW layout of the ``qm9_gw`` card,
  holding chemgraph's pyscf PBE and G0W0@PBE/def2-SVP values (``qm9_gw_tiny.csv``), not
  QM9-GW's numbers (the real file is not available offline).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chemgraph.data import qm9_gw
from chemgraph.recipes import dft_to_gw
from chemgraph.recipes.registry import recipe_settings
from chemgraph.train.config import merge_settings
from chemgraph.transfer import chains
from chemgraph.transfer.config import TransferConfig
from chemgraph.units import HARTREE_TO_EV

FIXTURE = Path(__file__).parent / "data" / "qm9_gw_full"
TINY_MODEL = {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2}


def _config(**training):
    return {
        "data": {
            "source": "full",
            "full": {
                "qm9_root": str(FIXTURE / "qm9"),
                "qm9_gw_root": str(FIXTURE / "qm9_gw"),
                "split_counts": {"train": 18, "val": 4, "test": 8},
            },
        },
        "training": {
            "seeds": 1, "pretrain_epochs": 1, "finetune_max_epochs": 1, "batch_size": 16,
            "progress": False, "workers": 1, "model_options": TINY_MODEL, **training,
        },
    }  # fmt: skip


@pytest.fixture(autouse=True)
def chemgraph_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CHEMGRAPH_HOME", str(tmp_path / "chemgraph_home"))


def _full(**full):
    values = recipe_settings("dft_to_gw", _config())
    values["data"]["full"].update(full)
    featurizer = TransferConfig.from_dict(values["training"]).graph_featurizer
    return qm9_gw.full_data(values["data"], featurizer)


def test_full_pretrains_on_the_qm9_gw_dft_columns_in_ev():
    data, split = _full()
    assert len(data) == 30 and [len(split[k]) for k in ("train", "val", "test")] == [18, 4, 8]
    methane = int(np.flatnonzero(data.ids == 1)[0])
    # by hand, tests/recipes/data/qm9_gw_full/qm9_gw/db_new_qm9_gw.yaml:
    # '000001': {PBE: {HOMO: -9.315254, LUMO: 1.523783}, G0W0: {HOMO: -13.60301, LUMO: 4.53385}}
    assert data.low[methane].tolist() == pytest.approx([-9.315254, 1.523783])
    assert data.high[methane].tolist() == pytest.approx([-13.60301, 4.53385])
    # not QM9's B3LYP: qm9pack_tiny.csv has HOMO_au -0.3877, LUMO_au 0.1171 for molecule 1
    assert data.low[methane, 0].item() != pytest.approx(-0.3877 * HARTREE_TO_EV, abs=0.1)
    assert data.low_theory.startswith("pbe_homo, pbe_lumo of QM9-GW (PBE")
    assert data.high_theory.startswith("g0w0_homo, g0w0_lumo (QM9-GW")
    # every low label is a PBE value of the file (eV), none a B3LYP one
    table = pd.read_csv(Path(__file__).parent / "data" / "qm9_gw_tiny.csv").set_index("qm9_index")
    expected = table.loc[data.ids, ["pbe_homo_ev", "pbe_lumo_ev"]].to_numpy(np.float32)
    np.testing.assert_array_equal(data.low.numpy(), expected)


def test_b3lyp_is_a_labelled_choice():
    data, _ = _full(dft_source="qm9")
    methane = int(np.flatnonzero(data.ids == 1)[0])
    assert data.low[methane].tolist() == pytest.approx(
        [-0.3877 * HARTREE_TO_EV, 0.1171 * HARTREE_TO_EV], rel=1e-6
    )
    assert "dft_source: qm9, not the paper's QM9-GW DFT" in data.low_theory
    with pytest.raises(ValueError, match="dft_source must be qm9_gw or qm9"):
        _full(dft_source="b3lyp")
    with pytest.raises(ValueError, match=r"dft_targets: \['b3lyp_homo'\] are not columns"):
        _full(dft_targets=["b3lyp_homo", "pbe_lumo"])


def test_orbital_energies_must_be_in_ev():
    hartree = pd.DataFrame({"pbe_homo": [-0.34, -0.25], "pbe_lumo": [0.05, 0.01]})
    with pytest.raises(ValueError, match="median pbe_homo is -0.295, not an orbital energy in eV"):
        qm9_gw.check_orbital_energies_ev(hartree, ["pbe_homo", "pbe_lumo"], "DFT labels")
    ev = hartree * HARTREE_TO_EV
    qm9_gw.check_orbital_energies_ev(ev, ["pbe_homo", "pbe_lumo"], "DFT labels")


@pytest.fixture
def modules(monkeypatch):
    """Every module run_transfer builds: its targets, outputs and training labels."""
    built = []
    original = chains.build_module

    def spy(config, targets, labels, *arguments):
        module = original(config, targets, labels, *arguments)
        built.append(
            dict(targets=list(targets), outputs=module.model.config.num_outputs, labels=labels)
        )
        return module

    monkeypatch.setattr(chains, "build_module", spy)
    return built


def test_per_target_chains_by_default(tmp_path, modules, caplog):
    caplog.set_level(logging.INFO, logger="chemgraph")
    table = dft_to_gw.run(_config(), out=tmp_path)
    # 3 strategies x 2 targets = 6 chains: GW only builds one module, Ind. and Trans. two
    # (pretrained, fine-tuned)
    assert len(modules) == (1 + 2 + 2) * 2
    assert all(m["outputs"] == 1 and len(m["targets"]) == 1 for m in modules)
    assert [m["targets"][0] for m in modules].count("homo") == 5
    # the pretraining labels of a HOMO chain are the file's PBE HOMOs (eV), one column
    pbe = pd.read_csv(Path(__file__).parent / "data" / "qm9_gw_tiny.csv")
    pretraining = [m for m in modules if m["labels"].shape[0] != 18]  # fine-tuning: 18 (GW train)
    assert len(pretraining) == 4
    for module in pretraining:
        column = "pbe_homo_ev" if module["targets"] == ["homo"] else "pbe_lumo_ev"
        assert module["labels"].shape[1] == 1
        assert set(module["labels"][:, 0].tolist()) <= set(pbe[column].astype(np.float32).tolist())
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert list(runs["targets"]) == list(runs["target"]) and len(runs) == 6
    assert list(table.loc[table["method"] == "ESA", "strategy"]) == ["GW", "Ind.", "Trans."] * 2
    assert (tmp_path / "curves" / "transductive_seed0_lumo_pretrain.png").exists()
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    assert list(predictions.columns) == [
        "strategy", "seed", "id", "smiles", "homo", "homo_pred", "lumo", "lumo_pred",
    ]  # fmt: skip
    assert len(predictions) == (3 + 8) * 8  # 3 strategies x 1 seed, 8 baselines (the mean too)
    logged = caplog.text
    assert "a separate pretraining + fine-tuning chain per target (HOMO, LUMO)" in logged
    assert "inductive seed 0 homo: pretraining on" in logged
    assert "DFT labels [pbe_homo, pbe_lumo of QM9-GW" in logged


def test_joint_targets_trains_one_chain_with_two_outputs(tmp_path, modules):
    dft_to_gw.run(_config(joint_targets=True), out=tmp_path)
    assert len(modules) == 1 + 2 + 2  # 3 chains, one per strategy
    assert all(m["outputs"] == 2 and m["targets"] == ["homo", "lumo"] for m in modules)
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert set(runs["targets"]) == {"homo+lumo"} and len(runs) == 6
    assert (tmp_path / "curves" / "transductive_seed0_pretrain.png").exists()


def test_the_full_profile_differs_from_the_paper_only_where_stated(tmp_path):
    values = recipe_settings("dft_to_gw", None)
    config = TransferConfig.from_dict(
        merge_settings(values["training"], values["profiles"]["full"])
    )
    values["data"]["full"].update(
        qm9_root=str(FIXTURE / "qm9"), qm9_gw_root=str(FIXTURE / "qm9_gw")
    )
    values["data"]["full"]["split_counts"] = {"train": 18, "val": 4, "test": 8}
    data, split = qm9_gw.full_data(values["data"], config.graph_featurizer)
    lines = dft_to_gw.paper_differences("full", values["data"], config, data, split)
    # of the settings, only these two differ from the Table 5 protocol (paper + authors' code)
    settings = [line for line in lines if "where the Table 5 protocol has" in line]
    assert settings == [
        "finetune_max_epochs = 300, where the Table 5 protocol has none (paper SI 7: early "
        "stopping ends training)"
    ]
    assert any(line.startswith("weight_decay = 0.01; not given in the paper") for line in lines)
    assert not any(line.startswith("DFT labels") for line in lines)  # QM9-GW's DFT, as the paper
    assert "GW split 18/4/8 molecules; the paper 25,000/5,000/10,000 (SI 4)" in lines
    assert "DFT pool 30 molecules (transductive); the paper 133,885" in lines
    assert any(line.startswith("GW labels: g0w0_homo, g0w0_lumo") for line in lines)
    assert "loss: MSE of standardised labels; the authors' command: MAE" in lines
    b3lyp = dict(values["data"]["full"], dft_source="qm9")
    lines = dft_to_gw.paper_differences(
        "full", dict(values["data"], full=b3lyp), config, data, split
    )
    assert lines[0].startswith("DFT labels: B3LYP/6-31G(2df,p) (QM9) (data.full.dft_source: qm9)")
