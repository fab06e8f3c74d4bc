"""The reaction-centre model: batches, the scorer's symmetry and equivariance, candidate
enumeration, training on hand-written USPTO-MIT lines, checkpoints and ``chemgraph react``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph._resources import model_path
from chemgraph.batches.reaction_centre import molecule_arrays, reaction_centre_batch
from chemgraph.chem.iteration import atom_list, bond_list
from chemgraph.chem.validity import ReactionInputs, product_problem
from chemgraph.cli import main
from chemgraph.data.reaction_centre import (
    enumerate_candidates,
    load_reaction_centre_examples,
    ranked_combinations,
    reaction_centre_example,
)
from chemgraph.errors import ConfigError
from chemgraph.models.reaction_centre import ReactionCentreConfig, ReactionCentreScorer
from chemgraph.reactions.reaction_centre import (
    grouped_log_softmax,
    load_reaction_centre_model,
    save_reaction_centre_model,
)
from chemgraph.reactions.reaction_centre_calibration import (
    CALIBRATION_FEATURES,
    calibrate,
    calibration_features,
    choose_no_product_threshold,
    product_probabilities,
)
from chemgraph.reactions.reaction_centre_training import (
    ReactionCentreTrainingConfig,
    _initial_model,
    train_reaction_centre_model,
)

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "reactions" / "uspto_mit_tiny.txt"
ESTERIFICATION = (
    "[CH3:1][C:2](=[O:3])[OH:4].[OH:5][CH2:6][CH3:7]>>[CH3:1][C:2](=[O:3])[O:5][CH2:6][CH3:7]"  # noqa: E501
)


def test_molecule_arrays_by_hand():
    arrays = molecule_arrays(Chem.MolFromSmiles("C=O.c1ccccc1"), max_distance=2)
    assert arrays.bonds[0, 1] == arrays.bonds[1, 0] == 2  # double
    assert arrays.bonds[2, 3] == 4  # aromatic
    assert arrays.distance[0, 2] == 3  # other fragment = max_distance + 1
    assert arrays.distance[2, 5] == 2  # para carbons: 3 bonds, clamped to 2
    # element C, degree 1, 2 hydrogens, charge 0 (+3), not aromatic, not in a ring, no radical
    assert arrays.atoms[0].tolist() == [0, 1, 2, 3, 0, 0, 0]
    batch = reaction_centre_batch([arrays, molecule_arrays(Chem.MolFromSmiles("O"), 2)])
    assert batch.pad_mask.sum(1).tolist() == [8, 1]


def test_molecule_arrays_of_some_atoms_equal_the_cut_of_the_whole():
    mol = Chem.MolFromSmiles("CC(=O)Cl.c1ccncc1.OCC[NH3+]")
    whole = molecule_arrays(mol, max_distance=3)
    core = np.array([0, 1, 2, 3, 10, 11, 12, 13])  # the first and last fragments
    part = molecule_arrays(mol, max_distance=3, atoms=core)
    assert np.array_equal(part.atoms, whole.atoms[core])
    assert np.array_equal(part.bonds, whole.bonds[np.ix_(core, core)])
    assert np.array_equal(part.distance, whole.distance[np.ix_(core, core)])
    assert part.distance[0, 4] == 4  # other fragment; bonds kept only inside the atoms
    assert part.bonds[1, 2] == 2 and part.bonds.sum() == whole.bonds[np.ix_(core, core)].sum()


def test_atom_and_bond_lists_are_rdkit_order():
    mol = Chem.MolFromSmiles("c1ccccc1C(=O)[O-].[Na+]")
    assert [a.GetIdx() for a in atom_list(mol)] == [a.GetIdx() for a in mol.GetAtoms()]
    assert [a.GetSymbol() for a in atom_list(mol)][-1] == "Na"
    pairs = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in bond_list(mol)]
    assert pairs == [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mol.GetBonds()]
    assert len(pairs) == 9


def _scorer() -> ReactionCentreScorer:
    torch.manual_seed(0)
    config = ReactionCentreConfig(hidden_dim=16, num_heads=2, num_layers=1, pair_hidden=16)
    return ReactionCentreScorer(config).eval()


def test_scorer_is_symmetric_masks_current_bonds_and_is_permutation_equivariant():
    scorer = _scorer()
    mol = Chem.MolFromSmiles("CC(=O)O.OCC")
    with torch.no_grad():
        logits, atoms = scorer(reaction_centre_batch([molecule_arrays(mol, 8)]))
    finite = torch.isfinite(logits[0])
    assert torch.equal(finite, finite.transpose(0, 1))
    assert torch.allclose(logits[0][finite], logits[0].transpose(0, 1)[finite], atol=1e-6)
    assert torch.isinf(logits[0, 1, 2, 2])  # C=O is double now: "double" is not an edit
    assert torch.isinf(logits[0, 0, 0]).all()  # no self pairs
    order = [6, 3, 0, 5, 1, 4, 2]
    permuted = Chem.RenumberAtoms(mol, order)
    with torch.no_grad():
        logits_p, atoms_p = scorer(reaction_centre_batch([molecule_arrays(permuted, 8)]))
    index = torch.tensor(order)
    expected = logits[0][index][:, index]
    assert torch.equal(torch.isfinite(expected), torch.isfinite(logits_p[0]))
    keep = torch.isfinite(expected)
    assert torch.allclose(expected[keep], logits_p[0][keep], atol=1e-5)
    assert torch.allclose(atoms[0][index], atoms_p[0], atol=1e-5)


def test_padding_does_not_change_scores():
    scorer = _scorer()
    small = molecule_arrays(Chem.MolFromSmiles("CCO"), 8)
    large = molecule_arrays(Chem.MolFromSmiles("c1ccccc1CCCC"), 8)
    with torch.no_grad():
        alone, _ = scorer(reaction_centre_batch([small]))
        padded, _ = scorer(reaction_centre_batch([small, large]))
    keep = torch.isfinite(alone[0])
    assert torch.allclose(alone[0][keep], padded[0, :3, :3][keep], atol=1e-5)


def test_grouped_softmax_sums_to_one_per_reaction():
    scores = torch.tensor([1.0, 2.0, 3.0, -1.0, 0.5])
    owner = torch.tensor([0, 0, 0, 1, 1])
    p = grouped_log_softmax(scores, owner, 2).exp()
    assert torch.allclose(p[:3], torch.softmax(scores[:3], 0))
    assert torch.allclose(p[3:], torch.softmax(scores[3:], 0))


def test_candidates_are_valid_distinct_and_in_score_order():
    example = reaction_centre_example(ESTERIFICATION, 8)
    # atoms: C1 0, C2 1, O3 2, O4 3, O5 4, C6 5, C7 6; the true edits (1,3,0) and (1,4,1)
    changes = [((1, 4, 1), 5.0), ((1, 3, 0), 4.0), ((0, 1, 0), -3.0), ((4, 5, 0), -4.0)]
    atom_logits = np.array([2.0, 2.0, 2.0, -2.0, 2.0, 2.0, 2.0])
    found = enumerate_candidates(example.reaction, changes, atom_logits)
    assert found[0].smiles == "CCOC(C)=O" and found[0].edits == ((1, 4, 1), (1, 3, 0))
    assert found[0].edit_score == 9.0 and 3 not in found[0].product_atoms  # water left out
    assert [c.edit_score for c in found] == sorted((c.edit_score for c in found), reverse=True)
    assert len({c.smiles for c in found}) == len(found)
    inputs = ReactionInputs.from_mols([example.reaction.inputs])
    assert all(product_problem(c.smiles, inputs) is None for c in found)
    # C2 with five bonds (the new C-O bond alone) never becomes a candidate
    assert all(c.edits != ((1, 4, 1),) for c in found)


def test_unbalanced_products_are_refused_unless_an_agent_accounts_for_them():
    """Methyl acrylate's C=C made single gains two hydrogens from nowhere: methyl propanoate
    is no candidate without a reducing agent (issue 46), and the refusal says why."""
    changes = [((0, 1, 1), 5.0)]  # C=C of C=CC(=O)OC becomes single
    logits = np.full(6, 2.0)
    alone = reaction_centre_example("C=CC(=O)OC>>", 8, with_edits=False)
    refused = []
    assert enumerate_candidates(alone.reaction, changes, logits, refused=refused) == []
    assert [(r.smiles, r.edits, r.edit_score) for r in refused] == [
        ("CCC(=O)OC", ((0, 1, 1),), 5.0)
    ]
    assert refused[0].reason.startswith("a reduction (oxidation states down by 2)")
    hydrogen = reaction_centre_example("C=CC(=O)OC>[H][H].[Pd]>", 8, with_edits=False)
    found = enumerate_candidates(hydrogen.reaction, changes, np.full(9, 2.0))
    assert [c.smiles for c in found] == ["CCC(=O)OC"]


def test_no_product_threshold_by_hand():
    p = np.array([0.9, 0.1, 0.6, 0.3, 0.7, 0.2])
    right = np.array([1, 0, 0, 1, 1, 0], dtype=bool)
    # sorted by p the answers are 0 0 1 0 1 1; the monotone fit pools (1, 0) to 0.5 each
    assert choose_no_product_threshold(p, right) == 0.3
    assert choose_no_product_threshold(p, right, target=0.6) == 0.7
    assert choose_no_product_threshold(p, np.zeros(6, dtype=bool)) == 1.0
    with pytest.raises(ValueError, match="no reactions"):
        choose_no_product_threshold(np.zeros(0), np.zeros(0, dtype=bool))


def test_combinations_by_summed_logit_one_change_per_pair():
    # changes 0 and 2 share the atom pair (1, 4): never together
    changes = [((1, 4, 1), 5.0), ((1, 3, 0), 4.0), ((1, 4, 2), -1.0)]
    assert ranked_combinations(changes, max_edits=3) == [
        (9.0, (0, 1)), (5.0, (0,)), (4.0, (1,)), (3.0, (1, 2)), (-1.0, (2,)),
    ]  # fmt: skip
    assert ranked_combinations(changes, max_edits=1) == [(5.0, (0,)), (4.0, (1,)), (-1.0, (2,))]


def test_examples_report_unreadable_lines(tmp_path):
    path = tmp_path / "reactions.txt"
    path.write_text(ESTERIFICATION + "\nnot a reaction\n[CH3:1][OH:2]>>[CH3:1][OH:3]\n")
    examples, rows, rejected = load_reaction_centre_examples(path, 8, progress=False)
    assert rows == [0] and examples[0].edits == ((1, 3, 0), (1, 4, 1))
    assert rejected["row"].tolist() == [1, 2]
    assert "separators" in rejected["reason"][0] and "not in the input" in rejected["reason"][1]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("reaction_centre")
    config = ReactionCentreTrainingConfig(
        train=str(TINY), out=str(out), batch_size=4, ranker_batch_size=4, learning_rate=3e-3,
        warmup_steps=5, scorer_epochs=60, ranker_epochs=30, accelerator="cpu", progress=False,
        model_options={"hidden_dim": 32, "num_heads": 4, "num_layers": 2, "pair_hidden": 32,
                       "ranker_hidden": 16, "ranker_heads": 2, "ranker_layers": 1},
    )  # fmt: skip
    return train_reaction_centre_model(config)


def test_a_spent_cpu_budget_stops_the_ranker_after_one_step(tiny_model, tmp_path):
    config = ReactionCentreTrainingConfig(
        train=str(TINY), out=str(tmp_path), batch_size=4, ranker_batch_size=4,
        learning_rate=3e-3, warmup_steps=5, scorer_epochs=60, ranker_epochs=30,
        accelerator="cpu", progress=False, scorer_checkpoint=str(tiny_model.parent / "scorer.pt"),
        model_options=load_reaction_centre_model(tiny_model).config.to_dict(),
        max_cpu_minutes=0.0,
    )  # fmt: skip
    settings = load_reaction_centre_model(train_reaction_centre_model(config)).settings
    trained = load_reaction_centre_model(tiny_model).settings
    # without the budget: 30 epochs of the ranker's batches (at most 2 of 4 reactions a batch)
    assert trained["ranker_steps"] >= 30 and trained["scorer_steps"] == 60 * 2
    # spent before it starts: one chunk of candidates (all 8 reactions), one ranker step
    assert settings["ranker_reactions"] == 8 and settings["ranker_steps"] == 1
    assert "scorer_steps" not in settings and settings["train_cpu_minutes"] > 0


def test_tiny_model_learns_its_reactions_and_round_trips(tiny_model):
    model = load_reaction_centre_model(tiny_model)
    examples, _, _ = load_reaction_centre_examples(TINY, model.config.max_distance, progress=False)
    predictions = model.predict(examples, top_k=3)
    right = [p.smiles[:1] == [e.product_smiles] for p, e in zip(predictions, examples)]
    assert sum(right) >= 6, [
        (p.smiles[:1], e.product_smiles) for p, e in zip(predictions, examples)
    ]
    # the fixture's nitrobenzene -> aniline names no reducing agent: not offered (issue 46)
    assert "Nc1ccccc1" not in predictions[5].smiles
    for prediction in predictions:
        assert prediction.scores == sorted(prediction.scores, reverse=True)
        assert 0 < sum(prediction.scores) <= 1 + 1e-5 or not prediction.smiles
    again = load_reaction_centre_model(tiny_model).predict(examples, top_k=3)
    assert [p.smiles for p in again] == [p.smiles for p in predictions]
    assert np.allclose([p.scores for p in again][0], predictions[0].scores)


def test_candidate_worker_processes_give_the_serial_predictions(tiny_model, monkeypatch):
    import chemgraph.reactions.reaction_centre as reaction_centre

    model = load_reaction_centre_model(tiny_model)
    examples, _, _ = load_reaction_centre_examples(TINY, model.config.max_distance, progress=False)
    serial = model.predict(examples, top_k=5)
    monkeypatch.setattr(reaction_centre, "_WORKER_CHUNK", 2)  # 8 reactions: 4 chunks
    pooled = model.predict(examples, top_k=5, workers=2)
    for one, other in zip(serial, pooled, strict=True):
        assert (one.smiles, one.edits, one.product_atoms) == (
            other.smiles, other.edits, other.product_atoms
        )  # fmt: skip
        assert one.scores == other.scores


def test_react_cli_with_a_reaction_centre_checkpoint(tiny_model, tmp_path, capsys):
    assert main(["react", "CC(=O)O.OCC>>", "--checkpoint", str(tiny_model), "--top-k", "2"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "\t" in line]
    assert 1 <= len(lines) <= 2 and lines[0].startswith("1\t")
    rank, smiles, probability, centre = lines[0].split("\t")
    assert Chem.MolFromSmiles(smiles) is not None and 0 < float(probability) <= 1
    assert all(part.count("-") == 1 and ":" in part for part in centre.split(";"))
    inputs, output = tmp_path / "in.txt", tmp_path / "out.csv"
    inputs.write_text("CC(=O)O.OCC>>CCOC(C)=O\nnot a reaction\n")
    argv = ["react", "--input", str(inputs), "--output", str(output), "--checkpoint",
            str(tiny_model)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 lines read: 1 decoded" in out and "top-k accuracy over 1 of 2" in out
    # a GRAT translator checkpoint is refused with the option that takes it, a property
    # checkpoint (grat.ckpt is GRAT's property model) with the command that takes it
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
    translator = fixture / "reaction_grat_test_fixture.ckpt"
    assert main(["react", "CCO>>", "--checkpoint", str(translator)]) == 2
    assert "--decoder generate" in capsys.readouterr().err
    assert main(["react", "CCO>>", "--checkpoint", str(fixture / "grat.ckpt")]) == 2
    assert "use it with chemgraph predict" in capsys.readouterr().err


def test_fine_tuning_the_shipped_model_starts_from_its_weights(tmp_path):
    shipped = load_reaction_centre_model(model_path())
    config = ReactionCentreTrainingConfig(
        train=str(TINY), out=str(tmp_path / "run"), init_from="shipped", scorer_epochs=1,
        ranker_epochs=1, warmup_steps=1, accelerator="cpu", progress=False,
    )  # fmt: skip
    start = _initial_model(config)
    assert start.config == shipped.config
    for name, value in shipped.scorer.state_dict().items():
        assert torch.equal(start.scorer.state_dict()[name], value), name
    with pytest.raises(ConfigError, match="model_options ask for other values"):
        _initial_model(replace(config, model_options={"hidden_dim": 8}))
    tuned = load_reaction_centre_model(train_reaction_centre_model(config))
    assert tuned.config == shipped.config
    assert tuned.settings["fine_tuned_from"] == shipped.settings["trained_on"]
    moved = [
        name for name, value in shipped.scorer.state_dict().items()
        if not torch.equal(tuned.scorer.state_dict()[name], value)
    ]  # fmt: skip
    assert moved  # the scorer trained on the new reactions


def test_calibration_rescales_the_ranker_probabilities_and_round_trips(tiny_model, tmp_path):
    model = load_reaction_centre_model(tiny_model)
    examples, _, _ = load_reaction_centre_examples(TINY, model.config.max_distance, progress=False)
    raw = model.predict(examples, top_k=20)
    assert model.calibration is None
    errors = calibrate(model, examples)
    assert set(errors) == {"top1_ece_ranker", "top1_ece_calibrated", "no_product_threshold"}
    calibration = model.calibration
    assert calibration.features == CALIBRATION_FEATURES
    assert model.settings["calibration"]["reactions"] == 8
    # one fitting example per candidate of every reaction
    assert calibration.examples == sum(len(p.smiles) for p in raw)
    calibrated = model.predict(examples, top_k=20)
    for before, after in zip(raw, calibrated):
        assert sorted(after.smiles) == sorted(before.smiles)  # every candidate, re-ranked
        assert after.scores == sorted(after.scores, reverse=True)  # best first
        want = product_probabilities(
            calibration,
            calibration_features(
                np.array(before.scores), before.edit_scores, [len(e) for e in before.edits],
                CALIBRATION_FEATURES, before.product_logits, before.unused_change_logits,
                before.refused_gaps,
            )
        )  # fmt: skip
        order = [before.smiles.index(smiles) for smiles in after.smiles]
        assert np.allclose(after.scores, want[order])
        threshold = model.settings["no_product"]["threshold"]
        assert after.threshold == threshold
        assert after.confident == (bool(after.smiles) and after.scores[0] >= threshold)
        assert after.edit_scores == [before.edit_scores[k] for k in order]
        assert after.product_logits == [before.product_logits[k] for k in order]
    save_reaction_centre_model(tmp_path / "calibrated.pt", model)
    again = load_reaction_centre_model(tmp_path / "calibrated.pt")
    assert again.calibration == calibration
    for first, second in zip(again.predict(examples, top_k=20), calibrated):
        assert first.scores == pytest.approx(second.scores)


def test_candidates_carry_their_product_and_unused_change_logits(tiny_model):
    model = load_reaction_centre_model(tiny_model)
    examples, _, _ = load_reaction_centre_examples(TINY, model.config.max_distance, progress=False)
    for (changes, atom_logits), (found, ranker_set) in zip(
        model.changes(examples), model.candidates(examples), strict=True
    ):
        for k, candidate in enumerate(found):
            product = [atom_logits[a] for a in candidate.product_atoms]
            assert ranker_set.product_logits[k] == pytest.approx(sum(product) / len(product))
            unused = [logit for edit, logit in changes if edit not in candidate.edits]
            assert ranker_set.unused_change_logits[k] == (max(unused) if unused else -20.0)
            assert len(unused) == len(changes) - len(candidate.edits)


def test_calibration_reactions_must_leave_reactions_to_train_on(tmp_path):
    config = ReactionCentreTrainingConfig(
        train=str(TINY), out=str(tmp_path), calibration_reactions=8, accelerator="cpu",
        progress=False,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"\(8\) leaves none of the 8 usable reactions"):
        train_reaction_centre_model(config)


def test_the_scorer_does_not_train_on_the_calibration_reactions(tmp_path, caplog):
    # holding the last 3 of the 8 reactions out for calibration trains the same scorer as
    # training on the first 5 alone; none of those 3 is predicted right (the model never saw
    # them), so calibration cannot be fitted: the model is written uncalibrated, with a warning
    options = {"hidden_dim": 16, "num_heads": 2, "num_layers": 1, "pair_hidden": 16,
               "ranker_hidden": 8, "ranker_heads": 2, "ranker_layers": 1}  # fmt: skip
    common = dict(
        train=str(TINY), batch_size=4, ranker_batch_size=4, learning_rate=3e-3, warmup_steps=5,
        scorer_epochs=60, ranker_epochs=1, accelerator="cpu", progress=False,
        model_options=options,
    )  # fmt: skip
    held_out = ReactionCentreTrainingConfig(  # ranker_reactions: capped at the first 5
        out=str(tmp_path / "held_out"), ranker_reactions=6, calibration_reactions=3, **common
    )
    first_five = ReactionCentreTrainingConfig(
        out=str(tmp_path / "first_five"), max_train=5, **common
    )
    scorers, calibrated = [], []
    for config in (held_out, first_five):
        settings = load_reaction_centre_model(train_reaction_centre_model(config)).settings
        assert settings["scorer_reactions"] == 5 and settings["scorer_steps"] == 60 * 2
        assert settings["ranker_reactions"] == 5
        scorers.append(load_reaction_centre_model(Path(config.out) / "scorer.pt").scorer)
        calibrated.append("calibration" in settings)
    assert calibrated == [False, False]
    assert "model.pt is not calibrated (calibration needs right and wrong" in caplog.text
    first, second = (s.state_dict() for s in scorers)
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_training_rejects_reactions_whose_product_is_an_unchanged_input(tmp_path):
    """A recorded product equal to an input molecule (atom maps aside), or differing from it
    in stereo labels alone, is no training example (no candidate can be it): rejected with row,
    reaction and reason. An evaluation keeps it, as a miss."""
    unchanged = "[CH3:1][C:2](=[O:3])[OH:4].[OH:5][CH2:6][CH3:7]>>[OH:5][CH2:6][CH3:7]"
    inverted = "[CH3:1][C@H:2]([F:3])[Cl:4].[OH2:5]>>[CH3:1][C@@H:2]([F:3])[Cl:4]"
    path = tmp_path / "reactions.txt"
    path.write_text(f"{ESTERIFICATION}\n{unchanged}\n{inverted}\n")
    _, rows, rejected = load_reaction_centre_examples(path, 8, progress=False)
    assert rows == [0, 1, 2] and rejected.empty
    examples, rows, rejected = load_reaction_centre_examples(path, 8, progress=False, training=True)
    assert rows == [0] and examples[0].edits == ((1, 3, 0), (1, 4, 1))
    assert rejected["row"].tolist() == [1, 2]
    assert rejected["input"].tolist() == [unchanged, inverted]
    assert rejected["reason"].tolist() == [
        "the recorded product CCO is the input molecule CCO unchanged: no candidate product "
        "can be it",
        "the recorded product C[C@@H](F)Cl is the input molecule C[C@H](F)Cl with other "
        "stereo labels: no candidate product can be it",
    ]
