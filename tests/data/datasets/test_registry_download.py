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
import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from chemgraph._resources import card_path, cards_folder, recipe_path
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


def _cut_values(text: str) -> list[str]:
    """What YAML made of a card other than its author wrote: an entry of a flow mapping that
    has no value (``{description: a, b}`` reads as ``description: a`` and an entry ``b``: an
    unquoted comma cut the value), and text whose brackets or quotes do not pair up (a value
    cut inside them)."""
    problems = []

    def visit(node, where: str) -> None:
        if isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                visit(item, f"{where}[{index}]")
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                if ":" not in text[key.end_mark.index : value.start_mark.index]:
                    problems.append(
                        f"{where}: {key.value!r} has no value (cut from the one before)"
                    )
                visit(value, f"{where}.{key.value}")
        elif isinstance(node, ScalarNode):
            for opening, closing in ("()", "[]", "{}"):
                if node.value.count(opening) != node.value.count(closing):
                    problems.append(f"{where}: unpaired {opening}{closing} in {node.value!r}")
            if node.style is None and node.value.count('"') % 2:
                problems.append(f"{where}: unpaired quote in {node.value!r}")

    visit(yaml.compose(text), "card")
    return problems


@pytest.mark.parametrize("path", sorted(cards_folder().glob("*.yaml")), ids=lambda p: p.stem)
def test_every_card_value_is_read_as_written(path):
    """A comma in an unquoted flow value (``{unit: eV, description: a, b}``) cut the column
    descriptions of qm9, qm9pack, oc20 and the USPTO cards; ``datasets info`` showed the cut."""
    text = path.read_text(encoding="utf-8")
    assert _cut_values(text) == []
    data = yaml.safe_load(text)
    for name, column in (data.get("columns") or {}).items():
        assert set(column) <= {"unit", "description"}, (name, column)
        assert isinstance(column["description"], str) and column["description"], name
        assert column.get("unit") is None or isinstance(column["unit"], str), name
    if "family" in data:  # a dataset card: its prose is whole sentences
        card = dataset_card(path.stem)
        assert card.description.endswith(".") and card.citation.endswith("."), path.stem
        assert card.description == " ".join(str(data["description"]).split())


def test_the_card_check_finds_a_value_cut_by_a_comma():
    cut = "columns:\n  u0: {unit: eV, description: minus the atom references (atomref.txt, x)}\n"
    assert _cut_values(cut) == [
        "card.columns.u0.description: unpaired () in 'minus the atom references (atomref.txt'",
        "card.columns.u0: 'x)' has no value (cut from the one before)",
    ]
    assert _cut_values(cut.replace("description: minus", 'description: "minus')
                       .replace("x)}", 'x)"}')) == []  # fmt: skip


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
