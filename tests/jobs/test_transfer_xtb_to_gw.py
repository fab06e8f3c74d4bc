"""xTB → GW end to end, as a user with a few expensive labels runs it: ``chemgraph qc``
(GFN2-xTB HOMO/LUMO with tblite) on molecules of the embedded QM9-GW set, the xTB labels
merged with the GW labels on the molecule id (GW kept for only some molecules), ``chemgraph
transfer`` (ESA on SMILES, one seed), the table, the kept checkpoints scored by ``chemgraph
predict`` and the molecules without a GW label predicted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from chemgraph._resources import cards_folder
from chemgraph.chem import mol_from_smiles
from chemgraph.cli import main

pytest.importorskip("tblite")
pytest.importorskip("qm9pack")

MOLECULES = 24
WITH_GW = 16  # the other 8 keep only their xTB labels


@pytest.fixture(scope="module")
def molecules() -> pd.DataFrame:
    """The first 24 molecules of the embedded QM9-GW set with at least one bond between heavy
    atoms (a bond graph needs an edge), with their qm9pack SMILES and GW HOMO/LUMO (eV)."""
    from chemgraph.data.qm9pack import load_qm9pack

    gw = pd.read_csv(cards_folder() / "qm9_gw_embedded.csv")
    smiles = load_qm9pack().set_index("qm9_index")["smiles"]
    gw["smiles"] = smiles.loc[gw["qm9_index"]].to_numpy()
    bonded = [mol_from_smiles(s).GetNumBonds() > 0 for s in gw["smiles"]]
    return gw[bonded].head(MOLECULES).reset_index(drop=True)


def test_xtb_labels_transfer_to_gw(molecules, tmp_path, capsys):
    library = tmp_path / "library.csv"
    molecules.rename(columns={"qm9_index": "id"})[["id", "smiles"]].to_csv(library, index=False)
    assert main(["qc", str(library), "--output", str(tmp_path / "qc"), "--id-column", "id",
                 "--conformers", "1", "--quiet"]) == 0  # fmt: skip
    xtb = pd.read_csv(tmp_path / "qc" / "labels.csv")
    assert len(xtb) == MOLECULES and xtb["method"].eq("GFN2-xTB").all()
    assert (xtb["homo_ev"] < xtb["lumo_ev"]).all()
    # merge on the id: xTB for every molecule, GW for the first 16 only
    gw = molecules.rename(columns={"qm9_index": "id"})[["id", "gw_homo_ev", "gw_lumo_ev"]]
    gw.loc[WITH_GW:, ["gw_homo_ev", "gw_lumo_ev"]] = np.nan
    merged = xtb.rename(columns={"homo_ev": "xtb_homo", "lumo_ev": "xtb_lumo"}).merge(
        gw.rename(columns={"gw_homo_ev": "gw_homo", "gw_lumo_ev": "gw_lumo"}), on="id"
    )
    assert len(merged) == MOLECULES
    table = tmp_path / "merged.csv"
    merged[["id", "smiles", "xtb_homo", "xtb_lumo", "gw_homo", "gw_lumo"]].to_csv(
        table, index=False
    )
    tiny = {
        "low_name": "xTB", "high_name": "GW",
        "training": {"batch_size": 8, "early_stopping_patience": 3, "learning_rate": 1e-3,
                     "model_options": {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP",
                                       "num_seeds": 2}},
    }  # fmt: skip
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny))
    out = tmp_path / "transfer"
    assert main(["transfer", "--config", str(config), "--data", str(table), "--id-column", "id",
                 "--low-fidelity-columns", "xtb_homo,xtb_lumo",
                 "--high-fidelity-columns", "gw_homo,gw_lumo", "--model", "esa",
                 "--seeds", "1", "--pretrain-epochs", "2", "--finetune-max-epochs", "3",
                 "--workers", "1", "--split-fractions", "0.5,0.25,0.25", "--out", str(out),
                 "--quiet"]) == 0  # fmt: skip
    # the table: GW only, inductive and transductive ESA, and the baselines, finite RMSE (eV)
    results = pd.read_csv(out / "table.csv")
    for target in ("gw_homo", "gw_lumo"):  # as the table names them
        rows = results[results["target"] == target]
        esa = rows[rows["method"] == "ESA"]
        assert list(esa["strategy"]) == ["GW", "Ind.", "Trans."]
        assert set(rows.loc[rows["method"] == "baseline", "setting"]) == {
            "both", "inductive", "transductive"
        }  # fmt: skip
        assert np.isfinite(rows["rmse_mean"]).all() and (rows["rmse_mean"] > 0).all()
    assert "GW" in (out / "table.md").read_text()  # the table, which --quiet does not print
    assert "GW" not in capsys.readouterr().out
    # every fine-tuned model is kept and loads in `chemgraph predict`
    strategies = ["high_fidelity_only", "inductive", "transductive"]
    checkpoints = [
        out / "checkpoints" / f"{strategy}_seed0_{target}" / "best.ckpt"
        for strategy in strategies
        for target in ("gw_homo", "gw_lumo")
    ]
    assert all(path.is_file() for path in checkpoints)
    unlabelled = pd.read_csv(out / "predictions_unlabelled.csv")
    new = tmp_path / "new.csv"
    mine = unlabelled[unlabelled["strategy"] == "transductive"].reset_index(drop=True)
    # with the cheap labels, which the transductive Δ-learning model reads
    merged.set_index("id").loc[mine["id"], ["smiles", "xtb_homo", "xtb_lumo"]].to_csv(new)
    scored = tmp_path / "scored.csv"
    path = out / "checkpoints" / "transductive_seed0_gw_homo" / "best.ckpt"
    assert main(["predict", "--checkpoint", str(path), "--input", str(new), "--output",
                 str(scored), "--id-column", "id", "--quiet"]) == 0  # fmt: skip
    # one seed: predict gives what the transfer run predicted for the same molecules
    np.testing.assert_allclose(pd.read_csv(scored)["gw_homo_pred"], mine["gw_homo_pred"], atol=1e-5)
    # one row per molecule without a GW label and strategy; one seed: the spread is undefined
    without_gw = sorted(merged.loc[merged["gw_homo"].isna(), "id"])
    assert len(unlabelled) == len(without_gw) * len(strategies)
    for strategy in strategies:
        rows = unlabelled[unlabelled["strategy"] == strategy]
        assert sorted(rows["id"]) == without_gw
        assert np.isfinite(rows[["gw_homo_pred", "gw_lumo_pred"]]).all().all()
        assert rows[["gw_homo_std", "gw_lumo_std"]].isna().all().all()
        assert rows["seeds"].eq(1).all()
