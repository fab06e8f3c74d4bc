"""Cards, registry, resources, downloads (checksum, atomic rename) and the shard cache."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import subprocess
import sys
import urllib.error

import pytest
import torch

from chemgraph._resources import card_path, recipe_path
from chemgraph.data.datasets import (
    ChecksumError,
    SourceFile,
    dataset_card,
    get_dataset,
    list_datasets,
)
from chemgraph.data.datasets.download import fetch, open_text
from chemgraph.data.datasets.moleculenet import MoleculeNetDataset
from chemgraph.graph_keys import EDGE_FEATURES, GRAPH_FORMAT, NODE_FEATURES

from .conftest import FIXTURES

EXPECTED = {
    "bace", "bbbp", "clintox", "dockstring", "esol", "freesolv", "hiv", "lipophilicity",
    "oc20", "qm9", "qm9_gw", "qm9pack", "tox21", "uspto_50k", "uspto_mit",
}  # fmt: skip


def test_every_card_is_registered_and_complete():
    assert set(list_datasets()) == EXPECTED
    for name in EXPECTED:
        card = dataset_card(name)
        assert card.name == name and card.license and card.citation and card.files
        assert card.split.get("method"), name
        for target in card.targets:
            assert target in card.units, (name, target)


def test_dockstring_card_has_all_five_benchmark_targets():
    assert dataset_card("dockstring").targets == ("PARP1", "F2", "KIT", "ESR2", "PGR")


def test_qm9_card_units_and_conversion_constant():
    card = dataset_card("qm9")
    assert len(card.targets) == 19
    assert card.units["homo"] == "eV" and card.units["u0_atom"] == "eV"
    assert card.units["mu"] == "D" and card.units["cv"] == "cal/(mol K)"
    assert card.raw["hartree_to_ev"] == 27.211386245988


def test_resources_find_cards_and_recipes():
    assert card_path("esol").name == "esol.yaml"
    assert recipe_path("qm9_gap", "config.yaml").is_file()
    with pytest.raises(FileNotFoundError, match="available: .*esol"):
        card_path("no_such_dataset")


def _spec(path, digest):
    return SourceFile(name="data.csv", url=path.as_uri(), sha256=digest)


def test_download_file_url_verified(tmp_path):
    source = tmp_path / "source.csv"
    source.write_bytes(b"smiles\nCCO\n")
    folder = tmp_path / "cache"
    good = fetch(_spec(source, hashlib.sha256(b"smiles\nCCO\n").hexdigest()), folder)
    assert good.read_bytes() == b"smiles\nCCO\n"
    assert sorted(p.name for p in folder.iterdir()) == ["data.csv"]


def test_checksum_mismatch_leaves_nothing(tmp_path):
    source = tmp_path / "source.csv"
    source.write_bytes(b"smiles\nCCO\n")
    folder = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="differs from the card"):
        fetch(_spec(source, "0" * 64), folder)
    assert list(folder.iterdir()) == []


def test_failed_download_leaves_nothing_and_unverified_is_refused(tmp_path):
    def broken(url, fh):
        fh.write(b"half a file")
        raise OSError("connection reset")

    folder = tmp_path / "cache"
    with pytest.raises(OSError, match="connection reset"):
        fetch(SourceFile(name="x.csv", url="https://example.org/x", sha256="0" * 64), folder,
              opener=broken)  # fmt: skip
    assert list(folder.iterdir()) == []
    with pytest.raises(ValueError, match="no checksum"):
        fetch(SourceFile(name="x.csv", url="https://example.org/x"), folder)


def test_failed_download_names_the_file_the_folder_and_the_fix(tmp_path):
    def offline(url, fh):
        raise urllib.error.URLError("Name or service not known")

    spec = SourceFile(name="x.csv", url="https://example.org/x", sha256="0" * 64)
    with pytest.raises(OSError, match=r"x\.csv is not in .*wrong_root.* failed .*--root"):
        fetch(spec, tmp_path / "wrong_root", opener=offline)
    a_file = tmp_path / "x.csv"
    a_file.write_text("smiles\n")
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        fetch(spec, a_file, opener=offline)


def test_dataset_download_uses_card_and_chemgraph_home(chemgraph_home):
    payload = (FIXTURES / "moleculenet" / "delaney-processed.csv").read_bytes()
    seen = []

    def fake(url, fh):
        seen.append(url)
        fh.write(payload)

    card = dataset_card("esol")
    spec = dataclasses.replace(card.files[0], sha256=hashlib.sha256(payload).hexdigest())
    dataset = MoleculeNetDataset(dataclasses.replace(card, files=(spec,)))
    (path,) = dataset.download(opener=fake)
    assert seen == [
        "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/delaney-processed.csv"
    ]
    assert path == chemgraph_home / "raw" / "esol" / "delaney-processed.csv"
    assert dataset.parse().counts == {"parsed": 3, "rejected": 0}


def test_missing_files_without_download_name_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="chemgraph datasets download esol"):
        get_dataset("esol", root=tmp_path, download=False).parse()


def test_featurize_cache_second_load_identical(chemgraph_home):
    dataset = get_dataset("esol", root=FIXTURES / "moleculenet", download=False)
    first, rejected = dataset.featurize("canonical")
    folders = list((chemgraph_home / "featurized" / "esol").iterdir())
    assert len(folders) == 1 and (folders[0] / "index.parquet").is_file()
    second, rejected_again = get_dataset(
        "esol", root=FIXTURES / "moleculenet", download=False
    ).featurize("canonical")
    assert second.smiles == first.smiles == ["CCO", "c1ccccc1", "Oc1ccccc1"]
    assert torch.equal(second.labels, first.labels)
    assert second.labels[:, 0].tolist() == pytest.approx([1.10, -1.64, 0.0])
    for a, b in zip(first.graphs, second.graphs):
        assert torch.equal(a.ndata[NODE_FEATURES], b.ndata[NODE_FEATURES])
        assert torch.equal(a.edata[EDGE_FEATURES], b.edata[EDGE_FEATURES])
        assert torch.equal(torch.stack(a.edges()), torch.stack(b.edges()))
    # another featurizer is another cache entry
    dataset.featurize("ogb")
    assert len(list((chemgraph_home / "featurized" / "esol").iterdir())) == 2


def test_cache_written_with_other_graph_keys_is_not_read(chemgraph_home, monkeypatch):
    dataset = get_dataset("esol", root=FIXTURES / "moleculenet", download=False)
    current = dataset.cache_key({"preset": "canonical"})
    monkeypatch.setattr("chemgraph.data.datasets.base.GRAPH_FORMAT", GRAPH_FORMAT - 1)
    assert dataset.cache_key({"preset": "canonical"}) != current


def test_open_text_reads_single_member_archives(tmp_path):
    import tarfile

    member = tmp_path / "test.txt"
    member.write_text("a\r\nb\n")
    archive = tmp_path / "test.txt.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(member, arcname="test.txt")
    with open_text(archive) as fh:
        assert fh.read() == "a\nb\n"


@pytest.mark.slow
def test_non_editable_install_finds_cards(tmp_path):
    """A wheel built from the checkout ships the cards (pip install . without -e)."""
    root = card_path("esol").resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        pytest.skip("not a source checkout")
    if shutil.which("pip") is None and subprocess.run([sys.executable, "-m", "pip", "--version"],
                                                       capture_output=True).returncode:  # fmt: skip
        pytest.skip("pip unavailable")
    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheel_dir), str(root)], check=True)  # fmt: skip
    import zipfile

    (wheel,) = wheel_dir.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "chemgraph/_data/datasets/esol.yaml" in names
    assert "chemgraph/_data/recipes/qm9_gap/config.yaml" in names
