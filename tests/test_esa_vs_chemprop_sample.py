"""The held-out QM9 sample of ``benchmarks/esa_vs_chemprop.py`` shares no molecule with the
sample ESA's defaults were chosen on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chemgraph.data.qm9pack import qm9pack_data_folder
from chemgraph.units import HARTREE_TO_EV

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "esa_vs_chemprop.py"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TUNING = SHARED_DATA / "qm9" / "qm9pack_subset10k.csv.gz"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("esa_vs_chemprop", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.shared_data
@pytest.mark.skipif(not TUNING.is_file(), reason=f"{TUNING} not present")
@pytest.mark.skipif(importlib.util.find_spec("qm9pack") is None, reason="qm9pack not installed")
def test_the_heldout_qm9_sample_is_disjoint_from_the_tuning_sample():
    benchmark = load_benchmark()
    dataset = benchmark.DATASETS["qm9_gap_heldout"]
    assert dataset.source == TUNING and not dataset.tuned
    assert benchmark.DATASETS["qm9_gap"].tuned
    sample = benchmark.qm9_heldout_sample(TUNING, 10_000, dataset.heldout_seed)
    tuning = pd.read_csv(TUNING, usecols=["Index", "InChi", "SMILES"])
    assert len(tuning) == 10_000  # the tuning sample is the whole file (its first 10,000 rows)

    assert len(sample) == 10_000 and sample["qm9_index"].is_unique
    assert not set(sample["qm9_index"]) & set(tuning["Index"])
    assert not set(sample["inchi"]) & set(tuning["InChi"])
    assert not set(sample["smiles"]) & set(tuning["SMILES"].str.strip())
    assert sample["qm9_index"].is_monotonic_increasing

    # the labels are qm9pack's own, in eV
    part = pd.read_csv(
        qm9pack_data_folder() / "qm9_part1.csv", usecols=["Index", "HOMO_LUMO_gap_au"]
    )
    joined = sample.merge(part, left_on="qm9_index", right_on="Index")
    assert len(joined) > 1_000
    np.testing.assert_allclose(joined["gap_ev"], joined["HOMO_LUMO_gap_au"] * HARTREE_TO_EV)
