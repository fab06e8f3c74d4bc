"""`chemgraph datasets list | info | download | featurize`."""

from __future__ import annotations

from chemgraph.cli import main

from .conftest import FIXTURES


def test_list_and_info(capsys):
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "dockstring" in out and "260,155" in out and "uspto_mit" in out
    assert main(["datasets", "info", "qm9_gw"]) == 0
    assert "figshare.21610077" in capsys.readouterr().out


def test_featurize_local_copy_then_cached(capsys, chemgraph_home):
    argv = ["datasets", "featurize", "hiv", "--root", str(FIXTURES / "moleculenet")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "hiv: 2 graphs, 1 rejected records" in out and "Explicit valence" in out
    assert (chemgraph_home / "featurized" / "hiv").is_dir()
    assert main(argv) == 0


def test_unknown_dataset_is_a_user_error(capsys):
    assert main(["datasets", "info", "nope"]) == 2
    assert "no dataset card 'nope'" in capsys.readouterr().err
