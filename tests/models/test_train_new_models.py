"""``chemgraph train --model X`` then ``chemgraph predict`` for Graphormer, GMoE, GCN and GIN."""

import json

import pandas as pd
import pytest
import torch
import yaml

from chemgraph.cli import main

SMILES = ["CCO", "CCCO", "CC(C)O", "c1ccccc1", "Cc1ccccc1", "Oc1ccccc1", "CC(=O)O", "CCN",
          "c1ccncc1", "C1CCCCC1", "C1CCOC1", "CC(=O)[O-].[Na+]", "[Na+].[Cl-]", "C", "O",
          "CCCl", "C1CC1C", "C1CCC1"]  # fmt: skip
OPTIONS = {
    "graphormer": {"hidden_dim": 16, "num_heads": 2, "num_layers": 1},
    "gmoe-gcn": {"hidden_dim": 16, "num_layers": 2},
    "gmoe-gin": {"hidden_dim": 16, "num_layers": 2, "num_hop1_experts": 0},
    "gcn": {"hidden_dim": 16, "num_layers": 2},
    "gin": {"hidden_dim": 16, "num_layers": 2},
}


@pytest.mark.parametrize("model", sorted(OPTIONS))
def test_train_then_predict(tmp_path, model, capsys):
    data = tmp_path / "molecules.csv"
    pd.DataFrame({"smiles": SMILES, "y": [0.1 * i for i in range(len(SMILES))]}).to_csv(
        data, index=False
    )
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump({"batch_size": 8, "model_options": OPTIONS[model]}))
    out = tmp_path / "run"
    arguments = ["train", "--data", str(data), "--target-columns", "y", "--model", model,
                 "--max-epochs", "2", "--out", str(out), "--config", str(settings)]  # fmt: skip
    assert main(arguments) == 0
    if model.startswith("gmoe"):  # the routing table is printed every epoch, layer by layer
        printed = capsys.readouterr().out
        assert "epoch 1 expert usage (share of node selections) | CV² importance, load" in printed
        table = printed[printed.index("epoch 1 expert usage") :].splitlines()[1:3]
        for layer, line in enumerate(table):  # "  layer 0: 0.25 0.31 0.19 0.25 | 0.010 0.012"
            shares, balance = line.split(": ")[1].split(" | ")
            assert line.startswith(f"  layer {layer}: ") and len(balance.split()) == 2
            assert sum(map(float, shares.split())) == pytest.approx(1, abs=0.03)
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["test"]) == {"rmse", "mae", "r2"}
    if model.startswith("gmoe"):  # routing per epoch and layer, so a collapsed layer shows
        experts = metrics["experts"]
        assert [entry["epoch"] for entry in experts] == [0, 1]
        usage = torch.tensor(experts[1]["usage"])  # [layer, expert] shares of selections
        assert usage.shape[0] == 2 and torch.allclose(usage.sum(1), torch.ones(2), atol=1e-4)
        assert len(experts[1]["importance_cv2"]) == len(experts[1]["load_cv2"]) == 2
    else:
        assert "experts" not in metrics
    checkpoint = torch.load(out / "best.ckpt", weights_only=True)
    assert checkpoint["hyper_parameters"]["featurizer"]["name"] == "ogb"
    assert checkpoint["hyper_parameters"]["model"] == model

    output = tmp_path / "predictions.csv"
    predict = ["predict", "--checkpoint", str(out / "best.ckpt"), "--input", str(data),
               "--output", str(output), "--quiet"]  # fmt: skip
    assert main(predict) == 0
    predictions = pd.read_csv(output)
    assert predictions["y_pred"].notna().all() and len(predictions) == len(SMILES)
