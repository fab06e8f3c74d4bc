"""Old checkpoints keep loading and keep predicting what they predicted when written.

``tests/fixtures/checkpoints/`` holds one tiny checkpoint per registered model family and one
GRAT reaction translator, with the predictions the public API gave when they were written
(``expected.json``; regenerate both with ``tests/fixtures/make_checkpoints.py`` only when the
format is meant to change). A change to a model's parameter names or shapes, a configuration
field, a featurizer preset, the checkpoint loader or the prediction path fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures.tiny_models import BOND_GRAPH_MODELS
from rdkit import Chem

from chemgraph.data.reactions import encode_reactions, parse_input_reaction
from chemgraph.jobs.predict import predict_table
from chemgraph.reactions.translator_prediction import predict_reactions
from chemgraph.train.checkpoint import load_checkpoint

FOLDER = Path(__file__).resolve().parent / "fixtures" / "checkpoints"
EXPECTED = json.loads((FOLDER / "expected.json").read_text())
TOLERANCE = 1e-5


# the bond-graph families: `chemgraph predict` reads SMILES and SDF files as bond graphs, not
# yet 3D structures as the radius graphs of esa-3d
@pytest.mark.parametrize("name", BOND_GRAPH_MODELS)
def test_frozen_property_checkpoint_predicts_as_when_written(name, tmp_path):
    # a family without a frozen checkpoint fails here: run tests/fixtures/make_checkpoints.py
    entry = EXPECTED["property"][name]
    table = tmp_path / "molecules.csv"
    pd.DataFrame({"smiles": EXPECTED["smiles"]}).to_csv(table, index=False)
    summary = predict_table(FOLDER / entry["file"], table, tmp_path / "out.csv", progress=False)
    result = pd.read_csv(summary.output, keep_default_na=False)
    assert result["smiles"].tolist() == [Chem.CanonSmiles(s) for s in EXPECTED["smiles"]]
    assert result["error"].eq("").all()
    predicted = result[[f"{target}_pred" for target in entry["targets"]]].to_numpy()
    np.testing.assert_allclose(predicted, entry["predictions"], rtol=TOLERANCE, atol=TOLERANCE)


def test_frozen_property_checkpoint_is_refused_by_the_reaction_loader():
    with pytest.raises(ValueError, match="use it with `chemgraph predict`"):
        load_checkpoint(FOLDER / EXPECTED["property"]["esa"]["file"], kind="reaction")


def test_frozen_reaction_checkpoint_predicts_as_when_written():
    entry = EXPECTED["reaction"]
    module = load_checkpoint(FOLDER / entry["file"], kind="reaction")
    reactions = [parse_input_reaction(text) for text in entry["reactions"]]
    items, _, rejected = encode_reactions(reactions, range(len(reactions)), with_product=False)
    assert not rejected
    # the search as when they were written: mean log-probability per step, no validity check
    predictions = predict_reactions(
        module, items, beam_width=entry["beam_width"], top_k=entry["top_k"],
        length_penalty=1.0, valid_only=False,
    )  # fmt: skip
    for prediction, expected in zip(predictions, entry["predictions"], strict=True):
        assert prediction.smiles == expected["smiles"]
        np.testing.assert_allclose(
            prediction.scores, expected["scores"], rtol=TOLERANCE, atol=TOLERANCE
        )
