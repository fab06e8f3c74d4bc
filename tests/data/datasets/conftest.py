"""Every dataset test gets its own empty CHEMGRAPH_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def chemgraph_home(tmp_path, monkeypatch):
    home = tmp_path / "chemgraph_home"
    monkeypatch.setenv("CHEMGRAPH_HOME", str(home))
    return home
