"""The shortcuts of candidate enumeration give what the long way gives: the valence check
before building an edited molecule, the fragments computed without building it, and skipping a
combination whose product fragment an earlier one made (brute force over random edit sets of
hand-written USPTO-MIT reactions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rdkit import Chem, rdBase

import chemgraph.chem.reaction_edits as reaction_edits_module
import chemgraph.data.reaction_centre as reaction_centre_module
from chemgraph.chem.reaction_edits import apply_edits, bond_class, mapped_reaction, prepare_inputs
from chemgraph.data.reaction_centre import edited_fragments, enumerate_candidates

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "reactions" / "uspto_mit_tiny.txt"
REACTIONS = [line.split()[0] for line in TINY.read_text().splitlines() if line.strip()]


def _random_edit_sets(inputs: Chem.Mol, count: int, seed: int) -> list[tuple]:
    """``count`` sets of 1-3 edits (distinct atom pairs, any bond class but the current)."""
    rng = np.random.default_rng(seed)
    n = inputs.GetNumAtoms()
    sets = []
    while len(sets) < count:
        pairs = set()
        for _ in range(rng.integers(1, 4)):
            i, j = sorted(rng.choice(n, 2, replace=False).tolist())
            pairs.add((i, j))
        edits = []
        for i, j in sorted(pairs):
            current = bond_class(inputs.GetBondBetweenAtoms(i, j))
            edits.append((i, j, int(rng.choice([c for c in range(5) if c != current]))))
        sets.append(tuple(edits))
    return sets


def _smiles(mol: Chem.Mol | None) -> str | None:
    return None if mol is None else Chem.MolToSmiles(mol)


@pytest.mark.parametrize("line", REACTIONS)
def test_valence_shortcut_gives_what_building_the_molecule_gives(line, monkeypatch):
    inputs = prepare_inputs(mapped_reaction(line).inputs)
    edit_sets = _random_edit_sets(inputs, 300, seed=0)
    with rdBase.BlockLogs():
        short = [_smiles(apply_edits(inputs, edits)) for edits in edit_sets]
        monkeypatch.setattr(reaction_edits_module, "_over_valence", lambda *args: False)
        long = [_smiles(apply_edits(inputs, edits)) for edits in edit_sets]
    assert short == long
    monkeypatch.undo()
    fired = sum(reaction_edits_module._over_valence(inputs, edits) for edits in edit_sets)
    assert fired > 0  # the shortcut was taken


def test_valence_shortcut_by_hand():
    inputs = prepare_inputs(Chem.MolFromSmiles("CC(C)(C)C.C.c1ccccc1"))
    assert reaction_edits_module._over_valence(inputs, [(1, 5, 1)])  # a five-bonded carbon
    assert not reaction_edits_module._over_valence(inputs, [(0, 1, 0), (1, 5, 1)])  # swapped
    # an aromatic carbon's bond sum is not an integer before kekulisation: no shortcut
    assert not reaction_edits_module._over_valence(inputs, [(5, 6, 2)])


@pytest.mark.parametrize("line", REACTIONS)
def test_edited_fragments_are_rdkits_fragments_of_the_edited_molecule(line):
    inputs = prepare_inputs(mapped_reaction(line).inputs)
    neighbours = [{n.GetIdx() for n in atom.GetNeighbors()} for atom in inputs.GetAtoms()]
    checked = 0
    for edits in _random_edit_sets(inputs, 300, seed=1):
        with rdBase.BlockLogs():
            edited = apply_edits(inputs, edits)
        if edited is None:
            continue
        touched = {k for edit in edits for k in edit[:2]}
        expected = [f for f in Chem.GetMolFrags(edited) if touched & set(f)]
        assert edited_fragments(neighbours, edits) == expected
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("line", REACTIONS)
def test_skipping_repeated_fragments_keeps_every_candidate(line, monkeypatch):
    reaction = mapped_reaction(line)
    n = reaction.inputs.GetNumAtoms()
    rng = np.random.default_rng(2)
    edits = sorted({edit for edits in _random_edit_sets(reaction.inputs, 40, 3) for edit in edits})
    changes = [(edit, float(score)) for edit, score in zip(edits, rng.normal(size=len(edits)))]
    changes.sort(key=lambda change: -change[1])
    atom_logits = rng.normal(size=n)

    def candidates():
        with rdBase.BlockLogs():
            found = enumerate_candidates(reaction, changes[:12], atom_logits, 3, 50, 300)
        return [(c.smiles, c.edits, c.edit_score, c.product_atoms) for c in found]

    short = candidates()
    monkeypatch.setattr(reaction_centre_module, "_fragment_key", lambda *args: None)
    assert candidates() == short
