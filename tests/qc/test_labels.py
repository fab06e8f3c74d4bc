"""Many molecules: results file, resume, failures reported as rows."""

from __future__ import annotations

import numpy as np
import pytest

from chemgraph.qc import QCMolecule, compute_frontier_orbitals, read_results

pytest.importorskip("tblite")
pytest.importorskip("pyscf")


def _water(name: str, stretch: float = 1.0) -> QCMolecule:
    half = np.deg2rad(104.52) / 2
    r = 0.9572 * stretch
    positions = [[0, 0, 0], [r * np.sin(half), 0, r * np.cos(half)],
                 [-r * np.sin(half), 0, r * np.cos(half)]]  # fmt: skip
    return QCMolecule(name, ("O", "H", "H"), positions)


def test_results_written_and_resumed(tmp_path):
    path = tmp_path / "results.csv"
    molecules = [_water("a"), _water("b", 1.05)]
    counts = compute_frontier_orbitals(molecules, path, method="xtb")
    assert counts == {
        "requested": 2, "skipped": 0, "ok": 2, "scf_not_converged": 0, "qp_not_converged": 0,
        "error": 0,
    }  # fmt: skip
    rows = read_results(path)
    assert [r["molecule_id"] for r in rows] == ["a", "b"]
    assert float(rows[0]["homo_ev"]) == pytest.approx(-12.177, abs=0.01)
    assert rows[0]["method"] == "GFN2-xTB"
    # a rerun with one more molecule computes only the new one and appends it
    counts = compute_frontier_orbitals([*molecules, _water("c", 0.95)], path, method="xtb")
    assert counts["skipped"] == 2 and counts["ok"] == 1
    assert [r["molecule_id"] for r in read_results(path)] == ["a", "b", "c"]
    assert path.read_text().count("molecule_id") == 1  # one header


def test_truncated_last_row_is_recomputed(tmp_path):
    path = tmp_path / "results.csv"
    compute_frontier_orbitals([_water("a"), _water("b", 1.05)], path, method="xtb")
    text = path.read_text()
    path.write_text(
        text[: text.rindex("\n", 0, len(text) - 1) + 1] + "b,ok,-12.1"
    )  # killed mid-row
    assert [r["molecule_id"] for r in read_results(path)] == ["a"]


def test_non_converging_scf_is_reported_not_dropped(tmp_path):
    path = tmp_path / "results.csv"
    counts = compute_frontier_orbitals(
        [_water("a"), _water("b", 1.05)], path, method="dft", max_cycle=1
    )
    assert counts["scf_not_converged"] == 2 and counts["ok"] == 0
    rows = read_results(path)
    assert [r["status"] for r in rows] == ["scf_not_converged"] * 2
    assert "did not converge in 1 cycles" in rows[0]["message"]
    assert rows[0]["homo_ev"] == ""
    # failures are not retried unless asked
    assert compute_frontier_orbitals([_water("a")], path, method="dft")["skipped"] == 1
    counts = compute_frontier_orbitals([_water("a")], path, method="dft", retry_failed=True)
    assert counts["ok"] == 1


def test_failed_quasiparticle_solve_is_a_rejected_row(tmp_path, water, failing_quasiparticle_solve):
    failing_quasiparticle_solve(("LUMO",))
    path = tmp_path / "results.csv"
    counts = compute_frontier_orbitals([water], path, method="gw", frozen_core=True)
    assert counts["qp_not_converged"] == 1 and counts["ok"] == 0
    (row,) = read_results(path)
    assert row["status"] == "qp_not_converged"
    assert "not solved for LUMO (residual 0.17" in row["message"]
    assert row["homo_ev"] == row["lumo_ev"] == ""  # no label, not 0 eV


def test_bad_input_becomes_an_error_row(tmp_path):
    hydroxyl = QCMolecule("OH", ("O", "H"), [[0, 0, 0], [0, 0, 0.97]])
    counts = compute_frontier_orbitals([hydroxyl], tmp_path / "r.csv", method="xtb")
    assert counts["error"] == 1
    (row,) = read_results(tmp_path / "r.csv")
    assert row["status"] == "error" and "closed shells" in row["message"]


@pytest.mark.slow  # starting two spawned worker processes takes seconds
def test_two_workers_give_the_same_rows(tmp_path):
    molecules = [_water(str(i), 0.9 + 0.05 * i) for i in range(4)]
    compute_frontier_orbitals(molecules, tmp_path / "one.csv", method="xtb")
    compute_frontier_orbitals(molecules, tmp_path / "two.csv", method="xtb", workers=2)
    one = {r["molecule_id"]: r["homo_ev"] for r in read_results(tmp_path / "one.csv")}
    two = {r["molecule_id"]: r["homo_ev"] for r in read_results(tmp_path / "two.csv")}
    assert one == two


def test_molecule_validation():
    with pytest.raises(ValueError, match=r"positions must be \[2, 3\]"):
        QCMolecule("x", ("H", "H"), [[0, 0, 0]])
    with pytest.raises(ValueError, match="unknown element"):
        QCMolecule("x", ("Xx",), [[0, 0, 0]])
    with pytest.raises(KeyError, match="unknown method"):
        compute_frontier_orbitals([], "unused.csv", method="ccsd")
