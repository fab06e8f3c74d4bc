import os
import re
import subprocess
import sys

import pytest
import torch

from chemgraph._dgl import dgl, graphbolt_library_present


def test_import_chemgraph_then_dgl_in_a_fresh_interpreter():
    code = (
        "import chemgraph, dgl, torch\n"
        "g = dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 2])), num_nodes=3)\n"
        "b = dgl.batch([g, g])\n"
        "print(dgl.__version__, b.num_nodes(), b.num_edges(), b.batch_size)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2.1.0", "6", "4", "2"]


def test_backend_is_pytorch():
    assert os.environ["DGLBACKEND"] == "pytorch"
    assert dgl.backend.backend_name == "pytorch"


@pytest.mark.skipif(graphbolt_library_present(), reason="GraphBolt exists for this torch")
def test_graphbolt_stub_explains_itself():
    import dgl.graphbolt as graphbolt

    with pytest.raises(
        ImportError, match=re.escape(f"no GraphBolt library for torch {torch.__version__}")
    ):
        graphbolt.ItemSampler  # noqa: B018


def test_graph_operations_chemgraph_relies_on():
    g = dgl.graph((torch.tensor([0, 1, 1]), torch.tensor([1, 0, 2])), num_nodes=4)
    assert g.in_degrees().tolist() == [1, 1, 1, 0]
    dense = g.adj_external(scipy_fmt=None).to_dense()
    assert dense.tolist() == [[0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    distances = dgl.shortest_dist(g)
    assert distances[0].tolist() == [0, 1, 2, -1]
