"""chemgraph.graphs.shards: compact shards that load as the tensors saved, byte-reproducible."""

import json
import struct

import numpy as np
import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mols_from_smiles
from chemgraph.featurize import available_presets, get_preset
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES, POSITIONS
from chemgraph.graphs import load_shard, load_shard_batch, mols_to_graphs, save_shard, select_graphs
from chemgraph.graphs.shards import SHARD_FORMAT, shard_rows

# 20 drug-like cores (stereo centres and double bonds, rings, S, P-free heteroatoms) x 15
# substituents on their first atom: 300 distinct molecules
CORES = [
    "c1ccc2ccccc2c1", "c1ccc(cc1)C(=O)N[C@@H](C)C(=O)O", "C1CCN(CC1)C(=O)c1ccncc1",
    "c1ccc(cc1)S(=O)(=O)N", "C(/C=C/c1ccccc1)O", "c1cnc2[nH]ccc2c1", "c1ccc(cc1)[C@H](O)CN",
    "CC(C)Cc1ccc(cc1)[C@@H](C)C(=O)O", "c1ccc2c(c1)oc(=O)cc2", "C1CC[C@H]2CCCC[C@@H]2C1",
    "c1ccc(cc1)Oc1ccccc1", "c1cc(ccc1N)S(=O)(=O)Nc1nccs1", "C1COCCN1c1ccccc1",
    "c1ccc(cc1)C#N", "C1=CC(=O)NC1=O", "c1ccc(cc1)/C=C/C(=O)OCC", "c1ccc2[nH]c(=O)ccc2c1",
    "C[C@H](N)Cc1ccccc1", "c1ccn2ccnc2c1", "C1CC(CCC1N)C(=O)NCc1ccco1",
]  # fmt: skip
SUBSTITUENTS = ["", "C", "Cl", "F", "Br", "O", "N", "OC", "FC(F)(F)", "N#C", "CC(=O)",
                "CS(=O)(=O)", "[O-][N+](=O)", "C=C", "I"]  # fmt: skip


@pytest.fixture(scope="module")
def molecules():
    mols = mols_from_smiles([s + core for core in CORES for s in SUBSTITUENTS])
    assert all(not isinstance(m, Exception) for m in mols)
    return mols


def same_bits(x, y):
    """Equal dtype, shape and bytes (-0.0 is not 0.0, NaN is NaN)."""
    return x.dtype == y.dtype and x.shape == y.shape and x.numpy().tobytes() == y.numpy().tobytes()


def assert_same_graphs(expected, loaded, same=torch.equal):
    assert len(expected) == len(loaded)
    for a, b in zip(expected, loaded):
        assert a.idtype == b.idtype and a.num_nodes() == b.num_nodes()
        assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        assert sorted(a.ndata) == sorted(b.ndata) and sorted(a.edata) == sorted(b.edata)
        for key in a.ndata:
            assert a.ndata[key].dtype == b.ndata[key].dtype, key
            assert same(a.ndata[key], b.ndata[key]), key
        for key in a.edata:
            assert a.edata[key].dtype == b.edata[key].dtype, key
            assert same(a.edata[key], b.edata[key]), key


def save_previous_format(path, graph, rows):
    """What chemgraph wrote before this format: dgl.save_graphs with three labels."""
    labels = {
        "row": rows,
        "num_nodes": graph.batch_num_nodes(),
        "num_edges": graph.batch_num_edges(),
    }
    dgl.save_graphs(str(path), [graph], labels)


def header_of(path):
    data = path.read_bytes()
    (length,) = struct.unpack_from("<Q", data, 16)
    return json.loads(data[24 : 24 + length])


@pytest.mark.parametrize("preset", available_presets())
def test_every_preset_loads_identical_tensors_from_a_5x_smaller_file(tmp_path, molecules, preset):
    graph = mols_to_graphs(molecules, get_preset(preset))
    rows = torch.arange(len(molecules), dtype=torch.int64) * 7 + 3
    save_shard(tmp_path / "new.bin", graph, rows)
    graphs, loaded_rows = load_shard(tmp_path / "new.bin")
    assert loaded_rows.dtype == torch.int64 and torch.equal(loaded_rows, rows)
    assert_same_graphs(dgl.unbatch(graph), graphs)
    save_previous_format(tmp_path / "old.bin", graph, rows)
    ratio = (tmp_path / "old.bin").stat().st_size / (tmp_path / "new.bin").stat().st_size
    assert ratio >= 5, ratio  # measured: canonical 20x, ogb 8x


def test_categorical_columns_take_one_byte_or_one_bit(tmp_path, molecules):
    canonical, ogb = get_preset("canonical"), get_preset("ogb")
    save_shard(tmp_path / "c.bin", mols_to_graphs(molecules, canonical), torch.arange(300))
    save_shard(tmp_path / "o.bin", mols_to_graphs(molecules, ogb), torch.arange(300))
    atoms = sum(m.GetNumAtoms() for m in molecules)
    x = header_of(tmp_path / "c.bin")["ndata"][NODE_FEATURES]
    mass = canonical.atom.field_names.index("atomic_mass*0.01")
    assert x["dtype"] == "float32" and x["shape"] == [atoms, 76]
    assert mass not in x["binary"] and len(x["binary"]) == 75  # every other column is 0/1
    assert x["bits"]["dtype"] == "|u1" and x["bits"]["shape"] == [atoms, 10]  # 75 bits
    assert x["values"]["dtype"] == "<f4" and x["values"]["shape"] == [atoms, 1]
    e = header_of(tmp_path / "c.bin")["edata"][EDGE_FEATURES]
    assert e["bits"]["shape"][1] == 2 and e["values"]["shape"][1] == 0
    header = header_of(tmp_path / "o.bin")
    assert header["format"] == SHARD_FORMAT and header["idtype"] == "int64"
    values = header["ndata"][NODE_FEATURES]["values"]
    assert (values["dtype"], values["shape"]) == ("|u1", [atoms * 9])
    assert header["src"]["dtype"] == "|u1"  # edge ends within each molecule


def test_equal_inputs_give_equal_bytes(tmp_path, molecules):
    preset = get_preset("canonical")
    save_shard(tmp_path / "a.bin", mols_to_graphs(molecules, preset), torch.arange(300))
    save_shard(tmp_path / "b.bin", mols_to_graphs(molecules, preset), torch.arange(300))
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    assert not list(tmp_path.glob(".*.tmp-*"))  # the temporary file was renamed


def test_any_homogeneous_graph_data_round_trips(tmp_path):
    """Radius graphs and dataset caches hold bool, int, float16/64 and 3-D data; floats that
    look binary but are -0.0, NaN or inf stay raw; empty graphs and int32 ids survive."""
    first = dgl.graph(([0, 1, 2], [1, 2, 0]), num_nodes=3, idtype=torch.int32)
    first.ndata["fixed"] = torch.tensor([True, False, True])
    first.ndata["z"] = torch.tensor([1, 6, 300], dtype=torch.int64)
    first.ndata["pos"] = torch.tensor([[0.0, -0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    first.ndata["flags"] = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[1.0, 1.0]]])  # [3, 1, 2]
    first.edata["shift"] = torch.tensor([[-1, 0, 70000], [0, 0, 0], [1, 1, 1]], dtype=torch.int32)
    first.edata["d"] = torch.tensor([1.0, float("nan"), float("inf")], dtype=torch.float64)
    first.edata["half"] = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float16)
    first.edata["spd"] = torch.tensor([-1, 2, 3], dtype=torch.int16)
    empty = dgl.graph(([], []), num_nodes=0, idtype=torch.int32)
    single = dgl.graph(([], []), num_nodes=1, idtype=torch.int32)
    for g in (empty, single):  # every graph of a batch holds the same keys
        for key, value in first.ndata.items():
            g.ndata[key] = value[: g.num_nodes()]
        for key, value in first.edata.items():
            g.edata[key] = value[:0]
    graphs = [first, empty, single]
    rows = torch.tensor([2**40, 0, 5])
    save_shard(tmp_path / "s.bin", dgl.batch(graphs), rows)
    loaded, loaded_rows = load_shard(tmp_path / "s.bin")
    assert torch.equal(loaded_rows, rows)
    assert_same_graphs(graphs, loaded, same=same_bits)
    assert torch.signbit(loaded[0].ndata["pos"][0, 1])  # -0.0
    header = header_of(tmp_path / "s.bin")
    assert header["ndata"]["pos"]["binary"] == [0, 2]  # column 1 holds -0.0
    assert header["edata"]["d"]["binary"] == []
    assert header["edata"]["shift"]["values"]["dtype"] == "<i4"
    assert header["edata"]["spd"]["values"]["dtype"] == "|i1"


@pytest.mark.parametrize("preset", ["canonical", "ogb"])
def test_molecules_selected_from_a_shard_batch_equal_those_batched_one_by_one(
    tmp_path, molecules, preset
):
    graph = mols_to_graphs(molecules[:60], get_preset(preset))
    save_shard(tmp_path / "s.bin", graph, torch.arange(60) + 100)
    batched, rows = load_shard_batch(tmp_path / "s.bin")
    assert batched.batch_size == 60 and torch.equal(rows, torch.arange(60) + 100)
    one_by_one, _ = load_shard(tmp_path / "s.bin")
    assert_same_graphs(dgl.unbatch(graph), one_by_one)
    # any order, repeats, a molecule without bonds (a lone atom) and an empty selection
    lone = mols_to_graphs(mols_from_smiles(["[Na+]", "C"]), get_preset(preset))
    mixed = dgl.batch([graph, lone])
    for indices in ([59, 0, 3, 3, 60, 17], [61], list(range(62))[::-1], []):
        selected = select_graphs(mixed, np.array(indices))
        expected = dgl.batch([dgl.unbatch(mixed)[i] for i in indices]) if indices else None
        assert selected.batch_size == len(indices)
        if expected is not None:
            assert_same_graphs([expected], [selected])
            assert torch.equal(selected.batch_num_nodes(), expected.batch_num_nodes())
            assert torch.equal(selected.batch_num_edges(), expected.batch_num_edges())
    with pytest.raises(IndexError, match="out of range for a batch of 62"):
        select_graphs(mixed, [62])


def test_an_empty_shard(tmp_path):
    graph = mols_to_graphs([], get_preset("canonical"))
    save_shard(tmp_path / "e.bin", graph, torch.zeros(0, dtype=torch.int64))
    graphs, rows = load_shard(tmp_path / "e.bin")
    assert graphs == [] and rows.dtype == torch.int64 and rows.shape == (0,)


def test_positions_survive(tmp_path, molecules):
    from chemgraph.chem import embed_conformers

    mols = [embed_conformers(m, 1, seed=0).mol for m in molecules[:5]]
    graph = mols_to_graphs(mols, get_preset("canonical"), with_positions=True)
    save_shard(tmp_path / "p.bin", graph, torch.arange(5))
    graphs, _ = load_shard(tmp_path / "p.bin")
    assert_same_graphs(dgl.unbatch(graph), graphs)
    assert graphs[0].ndata[POSITIONS].dtype == torch.float32


@pytest.mark.parametrize("preset", available_presets())
def test_shards_of_the_previous_format_still_load(tmp_path, molecules, preset):
    graph = mols_to_graphs(molecules[:40], get_preset(preset))
    save_previous_format(tmp_path / "old.bin", graph, torch.arange(40))
    graphs, rows = load_shard(tmp_path / "old.bin")
    assert torch.equal(rows, torch.arange(40))
    assert_same_graphs(dgl.unbatch(graph), graphs)


def test_bad_inputs_and_files_are_clear_errors(tmp_path, molecules):
    graph = mols_to_graphs(molecules[:3], get_preset("canonical"))
    with pytest.raises(ValueError, match="2 rows for 3 graphs"):
        save_shard(tmp_path / "x.bin", graph, torch.arange(2))
    hetero = dgl.heterograph({("a", "r", "a"): ([0], [0]), ("a", "s", "a"): ([0], [0])})
    with pytest.raises(ValueError, match="homogeneous"):
        save_shard(tmp_path / "x.bin", hetero, torch.arange(1))
    graph.ndata["bf"] = torch.zeros(graph.num_nodes(), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="'bf' has dtype torch.bfloat16"):
        save_shard(tmp_path / "x.bin", graph, torch.arange(3))
    assert not (tmp_path / "x.bin").exists()

    (tmp_path / "text.bin").write_text("CCO\n")
    with pytest.raises(ValueError, match="is not a chemgraph graph shard"):
        load_shard(tmp_path / "text.bin")
    del graph.ndata["bf"]
    save_shard(tmp_path / "good.bin", graph, torch.arange(3))
    data = (tmp_path / "good.bin").read_bytes()
    for cut in (20, 60, len(data) - 9):  # in the length, the header, the arrays
        (tmp_path / "cut.bin").write_bytes(data[:cut])
        with pytest.raises(ValueError, match="truncated or damaged.*again with --resume"):
            load_shard(tmp_path / "cut.bin")
        with pytest.raises(ValueError, match="truncated or damaged"):  # without decoding
            shard_rows(tmp_path / "cut.bin")
    assert shard_rows(tmp_path / "good.bin").tolist() == [0, 1, 2]
    newer = data.replace(b'"format":1', b'"format":9')
    (tmp_path / "newer.bin").write_bytes(newer)
    with pytest.raises(ValueError, match="format 9; .* up to 1: upgrade chemgraph"):
        load_shard(tmp_path / "newer.bin")
