"""The reaction-centre model shipped in ``chemgraph/_data/models/``: the file is the one whose
outputs were recorded, and it still gives them (``tests/fixtures/make_shipped_model_expected.py``
wrote ``shipped_reaction_model_expected.json``); ``chemgraph react`` uses it with no
``--checkpoint``."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from chemgraph._resources import model_path
from chemgraph.cli import main
from chemgraph.reactions.reaction_centre import load_reaction_centre_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED = json.loads((FIXTURES / "shipped_reaction_model_expected.json").read_text())


def _maker():
    spec = importlib.util.spec_from_file_location(
        "make_shipped_model_expected", FIXTURES / "make_shipped_model_expected.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_checkpoint_is_the_recorded_one_and_small():
    path = model_path()
    assert path.name == EXPECTED["file"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == EXPECTED["sha256"]
    assert path.stat().st_size < 5 * 2**20
    card = (path.parent / "README.md").read_text()
    assert EXPECTED["sha256"] in card


@pytest.fixture(scope="module")
def predicted():
    return _maker().predict_textbook(load_reaction_centre_model(model_path()))


def test_textbook_reactions_give_the_recorded_ranked_products(predicted):
    assert len(predicted) == len(EXPECTED["predictions"])
    for got, want in zip(predicted, EXPECTED["predictions"], strict=True):
        assert got["reaction"] == want["reaction"]
        assert got["smiles"] == want["smiles"], got["reaction"]
        assert got["probabilities"] == pytest.approx(want["probabilities"], abs=1e-4)
        assert got["top1_right"] == want["top1_right"]


def test_react_works_out_of_the_box(capsys):
    first = EXPECTED["predictions"][0]
    assert main(["react", first["reaction"], "--top-k", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ranked = [line for line in lines if "\t" in line]
    assert [line.split("\t")[1] for line in ranked] == first["smiles"][:3]
    # acetyl chloride + ethanol: the ester at 0.44, below the threshold of 0.542 (issue 46)
    assert lines[3].startswith("no confident product: the best product's probability 0.4421")
