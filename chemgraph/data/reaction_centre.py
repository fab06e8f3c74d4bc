"""Reaction-centre data: mapped reactions -> training examples; scored changes -> candidates.

* :func:`load_reaction_centre_examples` reads a file of atom-mapped reactions (USPTO-MIT lines,
  or any ``reactants>reagents>products`` file of :func:`chemgraph.data.reactions.reaction_records`)
  with a progress bar, and turns each into a :class:`ReactionCentreExample`: the input molecule
  as arrays, the edits (:func:`chemgraph.chem.reaction_edits.reaction_edits`) and the atoms of
  the product. Reactions that cannot be read are reported (row, input, reason), never dropped
  silently; so are, for training, reactions whose recorded product is an input molecule given
  back unchanged (:class:`UnchangedInputs`), which no candidate can be, and rxnmapper maps
  with more bond changes than :data:`MAX_MAPPED_BOND_CHANGES`.
* :func:`enumerate_candidates` turns the scored bond changes of one reaction into candidate
  products: combinations of the best-scored changes, applied with RDKit
  (:func:`chemgraph.chem.reaction_edits.apply_edits`), sanitised, the product fragments chosen
  by the scorer's product-atom logits, checked by :func:`chemgraph.chem.validity.product_problem`
  and :func:`chemgraph.chem.validity.redox_problem` and deduplicated, so every candidate is a
  valid, balanced product by construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from rdkit import Chem, rdBase
from tqdm.auto import tqdm

from chemgraph.batches.reaction_centre import MoleculeArrays, molecule_arrays
from chemgraph.chem.atom_mapping import has_product_atom_maps, map_reactions
from chemgraph.chem.reaction_edits import (
    Edit,
    MappedReaction,
    apply_edits,
    mapped_reaction,
    prepare_inputs,
    product_smiles,
    reaction_edits,
)
from chemgraph.chem.reactions import ReactionParseError, canonical_smiles
from chemgraph.chem.validity import ReactionInputs, product_problem, redox_problem
from chemgraph.data.datasets.base import rejected_frame
from chemgraph.data.reactions import reaction_records

__all__ = [
    "MAX_MAPPED_BOND_CHANGES",
    "Candidate",
    "ReactionCentreExample",
    "Refusal",
    "UnchangedInputs",
    "edited_fragments",
    "enumerate_candidates",
    "ranked_combinations",
    "load_reaction_centre_examples",
    "reaction_centre_example",
]


@dataclass
class ReactionCentreExample:
    """One reaction for the reaction-centre model.

    Attributes:
        text: the reaction SMILES as read.
        reaction: the parsed reaction (input molecule, product, product atoms).
        arrays: the input molecule as :class:`MoleculeArrays`.
        edits: the recorded edits (empty without a mapped product).
        product_smiles: canonical SMILES of the recorded product (``""`` when unknown).
        mapping_confidence: rxnmapper's confidence when the atom maps were made by
            :func:`load_reaction_centre_examples` (``text`` is then the mapped reaction); None
            when they came with the reaction.
    """

    text: str
    reaction: MappedReaction
    arrays: MoleculeArrays
    edits: tuple[Edit, ...]
    product_smiles: str
    mapping_confidence: float | None = None

    @property
    def product_atoms(self) -> list[int]:
        return sorted(self.reaction.product_atoms)


def reaction_centre_example(
    text: str, max_distance: int, with_edits: bool = True
) -> ReactionCentreExample:
    """The example of one reaction SMILES.

    Args:
        text: ``reactants>reagents>products``; the products (atom-mapped) are needed for
            ``with_edits``, else they may be empty.
        max_distance: distance buckets of the model.
        with_edits: derive the recorded edits (training, evaluation).

    Raises:
        ReactionParseError: see :func:`chemgraph.chem.reaction_edits.mapped_reaction`; with
            ``with_edits`` also a product that is missing or not fully mapped, or a bond type
            outside single, double, triple and aromatic.
    """
    reaction = mapped_reaction(text)
    edits: tuple[Edit, ...] = ()
    if with_edits:
        try:
            edits = reaction_edits(reaction)
        except ValueError as error:
            raise ReactionParseError(str(error), text) from error
    try:
        arrays = molecule_arrays(reaction.inputs, max_distance)
    except ValueError as error:
        raise ReactionParseError(str(error), text) from error
    return ReactionCentreExample(text, reaction, arrays, edits, reaction.product_smiles)


MAX_MAPPED_BOND_CHANGES = 6
"""The most bond changes an rxnmapper map may give (:func:`load_reaction_centre_examples`):
the most of any recorded map of USPTO-MIT (Jin et al. 2017), 6 in 9,999 validation reactions
(1: 1,704, 2: 5,489, 3: 1,975, 4: 683, 5: 139, 6: 9). A map with more pairs atoms wrongly:
rxnmapper's attention grows unreliable near its 512-token limit (Schwaller et al. 2021)."""


def load_reaction_centre_examples(
    path: str | Path,
    max_distance: int,
    max_reactions: int | None = None,
    with_edits: bool = True,
    progress: bool = True,
    min_mapping_confidence: float = 0.0,
    training: bool = False,
    max_mapped_bond_changes: int = MAX_MAPPED_BOND_CHANGES,
) -> tuple[list[ReactionCentreExample], list[int], pd.DataFrame]:
    """Read and encode the reactions of a file, with a progress bar (reactions done / total).

    With ``with_edits``, reactions whose products carry no atom maps are mapped first with
    rxnmapper (:func:`chemgraph.chem.atom_mapping.map_reactions`, which rejects implausible
    maps); those it cannot map, maps with a confidence below ``min_mapping_confidence``, or
    maps with more than ``max_mapped_bond_changes`` bond changes (default
    :data:`MAX_MAPPED_BOND_CHANGES`), are rejected with the confidence in the reason, and the
    others keep it (:attr:`ReactionCentreExample.mapping_confidence`).

    ``training``: also reject the reactions whose recorded product is an input molecule
    given back unchanged, or changed in its stereo labels alone (:class:`UnchangedInputs`):
    :func:`enumerate_candidates` never offers such a product, so they teach no reaction
    centre. An evaluation keeps them (they count as misses).

    Returns:
        The examples, their rows (0-based line or data row), and the rejected records
        (``row``, ``input``, ``reason``, ``file``).

    Raises:
        OSError: the file cannot be read.
        AtomMapperMissingError: unmapped reactions and no rxnmapper installed.
    """
    records = list(itertools.islice(reaction_records(path), max_reactions))
    confidences: dict[int, float] = {}
    if with_edits:
        unmapped = [
            k for k, (_, text, reason) in enumerate(records)
            if reason is None and text.count(">") == 2 and text.split(">")[2]
            and not has_product_atom_maps(text)
        ]  # fmt: skip
        maps = map_reactions([records[k][1] for k in unmapped], progress=progress)
        for k, answer in zip(unmapped, maps):
            row, text, _ = records[k]
            if answer.error is not None:
                records[k] = (row, text, answer.error)
            elif not answer.confidence >= min_mapping_confidence:
                records[k] = (
                    row, text, f"rxnmapper's atom-map confidence {answer.confidence:.3f} is "
                    f"below min_mapping_confidence {min_mapping_confidence:g}",
                )  # fmt: skip
            else:
                records[k] = (row, answer.mapped, None)
                confidences[k] = answer.confidence
    examples, rows, rejected = [], [], []
    for k, (row, text, reason) in enumerate(tqdm(
        records, desc=f"encoding {Path(path).name}", unit="reaction", disable=not progress
    )):  # fmt: skip
        if reason is None:
            try:
                with rdBase.BlockLogs():  # e.g. hydride warnings; reasons come as errors
                    example = reaction_centre_example(text, max_distance, with_edits)
            except ReactionParseError as error:
                reason = error.reason
            else:
                example.mapping_confidence = confidences.get(k)
                reason = _unusable(example, training, max_mapped_bond_changes)
                if reason is None:
                    examples.append(example)
                    rows.append(row)
                    continue
        rejected.append((row, text, reason))
    frame = rejected_frame(rejected)
    frame["file"] = str(path)
    return examples, rows, frame


def _unusable(
    example: ReactionCentreExample, training: bool, max_mapped_bond_changes: int
) -> str | None:
    """Why ``example`` is no training example (:func:`load_reaction_centre_examples`), or
    None."""
    confidence = example.mapping_confidence
    if confidence is not None and len(example.edits) > max_mapped_bond_changes:
        return (
            f"rxnmapper's atom map (confidence {confidence:.3f}) gives {len(example.edits)} "
            f"bond changes, more than the {max_mapped_bond_changes} of any recorded map of "
            "USPTO-MIT: an implausible map"
        )
    if training and example.product_smiles:
        same = UnchangedInputs(example.reaction.inputs).match(example.product_smiles)
        if same is not None:
            return (
                f"the recorded product {example.product_smiles} is the input molecule {same}"
                f"{' unchanged' if same == example.product_smiles else ' with other stereo labels'}"
                ": no candidate product can be it"
            )
    return None


class UnchangedInputs:
    """Recognises an input molecule of a reaction given back as its product: no reaction
    outcome. Nor is a product that differs from an input only in stereo labels, when an input
    has any (applying edits clears the label of an edited centre,
    :func:`chemgraph.chem.reaction_edits.apply_edits`, so such a product is an input that
    merely lost it): :func:`enumerate_candidates` skips both, and
    :func:`load_reaction_centre_examples` does not train on reactions recorded so.

    Args:
        inputs: the reaction's input molecule (every reactant and reagent, atom maps allowed).
    """

    def __init__(self, inputs: Chem.Mol) -> None:
        self.smiles = {canonical_smiles(m) for m in Chem.GetMolFrags(inputs, asMols=True)}
        constitutions = {_constitution(text): text for text in self.smiles}
        # only where an input has stereo labels does a constitution say more than the SMILES
        self.constitutions = {} if constitutions.keys() <= self.smiles else constitutions

    def match(self, smiles: str) -> str | None:
        """The canonical SMILES of the input that product ``smiles`` (canonical, no atom maps)
        gives back, or None when it is no input's."""
        if smiles in self.smiles:
            return smiles
        if self.constitutions:
            return self.constitutions.get(_constitution(smiles))
        return None


@dataclass
class Candidate:
    """One candidate product of a reaction.

    Attributes:
        smiles: canonical SMILES of the product fragments (no atom maps).
        edits: the edits applied.
        edit_score: summed scorer logit of the edits.
        molecule: the whole edited molecule (reagents and by-products too; atom ``k`` is input
            atom ``k``); None once the ranker's arrays are made from it
            (:func:`chemgraph.reactions.reaction_centre.reaction_candidates`).
        product_atoms: the atoms of the product fragments.
    """

    smiles: str
    edits: tuple[Edit, ...]
    edit_score: float
    molecule: Chem.Mol | None
    product_atoms: tuple[int, ...]


@dataclass(frozen=True)
class Refusal:
    """A product that combinations of the best-scored changes give but the rules refuse
    (:func:`chemgraph.chem.validity.product_problem`, :func:`chemgraph.chem.validity.
    redox_problem`).

    Attributes:
        smiles: canonical SMILES of the refused product.
        edits: the edits that give it.
        edit_score: their summed scorer logit.
        reason: the rule's one-line reason.
    """

    smiles: str
    edits: tuple[Edit, ...]
    edit_score: float
    reason: str


def ranked_combinations(
    changes: Sequence[tuple[Edit, float]], max_edits: int = 4
) -> list[tuple[float, tuple[int, ...]]]:
    """Every combination of 1 … ``max_edits`` of ``changes`` with at most one change per atom
    pair, as ``(summed logit, indices into changes)``, highest sum first (ties in the order
    of :func:`itertools.combinations`, by size first): the order in which
    :func:`enumerate_candidates` applies them."""
    combos = []
    for size in range(1, max_edits + 1):
        for combo in itertools.combinations(range(len(changes)), size):
            pairs = {changes[k][0][:2] for k in combo}
            if len(pairs) == size:
                combos.append((sum(changes[k][1] for k in combo), combo))
    combos.sort(key=lambda item: -item[0])
    return combos


def edited_fragments(
    neighbours: Sequence[set[int]], edits: Sequence[Edit]
) -> list[tuple[int, ...]]:
    """The fragments (connected components) holding an edited atom once ``edits`` are made,
    without making them: what :func:`apply_edits` then ``Chem.GetMolFrags`` give (each
    fragment's atoms ascending, fragments by their first atom), as hydrogen and charge rules
    never add or remove a bond.

    Args:
        neighbours: per input atom, the indices of its bonded atoms.
        edits: ``(i, j, c)`` edits; class 0 removes the bond, any other makes one.
    """
    changed: dict[int, dict[int, bool]] = {}
    for i, j, c in edits:
        changed.setdefault(i, {})[j] = bool(c)
        changed.setdefault(j, {})[i] = bool(c)
    fragments, done = [], set()
    for start in sorted(changed):
        if start in done:
            continue
        component, stack = {start}, [start]
        while stack:
            atom = stack.pop()
            bonded = neighbours[atom]
            if atom in changed:
                own = changed[atom]
                bonded = {k for k in bonded if own.get(k, True)} | {k for k, b in own.items() if b}
            for k in bonded:
                if k not in component:
                    component.add(k)
                    stack.append(k)
        done |= component
        fragments.append(tuple(sorted(component)))
    return sorted(fragments)


def _ring_neighbourhoods(mol: Chem.Mol) -> list[frozenset[int]]:
    """Per atom, itself and the atoms of its ring system in ``mol`` (rings joined through
    shared atoms: the hydrogen rules of :func:`apply_edits` pass along them)."""
    near = [frozenset({k}) for k in range(mol.GetNumAtoms())]
    for ring in mol.GetRingInfo().AtomRings():
        system = frozenset(ring).union(*(near[k] for k in ring))
        for k in system:
            near[k] = system
    return near


def _fragment_key(
    fragment: Sequence[int], edits: Sequence[Edit], near: Sequence[frozenset[int]]
) -> tuple | None:
    """What fixes the edited ``fragment`` (:func:`apply_edits`): its atoms and the edits at
    them or at atoms in their input rings (the only edits whose hydrogen and charge rules
    reach it). Two combinations with the same key give the same product; None for a lone
    atom (a halide's charge depends on every edit)."""
    if len(fragment) == 1:
        return None
    reach = frozenset().union(*(near[k] for k in fragment))
    return frozenset(fragment), frozenset(e for e in edits if e[0] in reach or e[1] in reach)


def _constitution(smiles: str) -> str:
    """Canonical SMILES of ``smiles`` without stereochemistry."""
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles), isomericSmiles=False)


def enumerate_candidates(
    reaction: MappedReaction,
    changes: Sequence[tuple[Edit, float]],
    atom_logits: np.ndarray,
    max_edits: int = 4,
    max_candidates: int = 20,
    max_tries: int = 60,
    inputs: ReactionInputs | None = None,
    refused: list[Refusal] | None = None,
) -> list[Candidate]:
    """Candidate products from combinations of the best-scored bond changes.

    Every combination of 1 … ``max_edits`` of ``changes`` (at most one change per atom pair)
    is scored by the sum of its logits (the log-odds of that edit set when the changes are
    independent Bernoulli variables) and applied best first with RDKit; a combination whose
    molecule does not sanitise, whose product is not valid
    (:func:`chemgraph.chem.validity.product_problem`) or not balanced (a reduction or oxidation
    no reactant or reagent accounts for: :func:`chemgraph.chem.validity.redox_problem`),
    repeats an earlier product or is one of the input molecules unchanged (also once an edited
    centre has lost its stereo label), is skipped. The product of an edited molecule is the
    edited fragment whose atoms have the highest mean product logit (the scorer's "ends in the main
    product"): a by-product (tosylate, Ph3P=O, water) is not the product because it is
    larger, and untouched reagents and counter-ions are not part of it. Given the recorded
    edits, this choice gives the recorded product far more often than keeping every fragment
    with a positive mean; few recorded products hold several molecules. The fragments come
    from the bond changes alone (:func:`edited_fragments`), so a combination whose product
    fragment and the edits that reach it repeat an earlier applied combination's is skipped
    before RDKit is called (same candidates, a fifth less time on USPTO-MIT).

    Args:
        reaction: the reaction (its ``inputs`` molecule).
        changes: ``((i, j, c), logit)`` best first (the scorer's top changes).
        atom_logits: ``float [N]`` product logit per input atom.
        max_edits: most changes combined.
        max_candidates: stop after this many distinct valid products.
        max_tries: stop after applying this many combinations.
        inputs: the facts for the validity check (computed from ``reaction.inputs`` if None).
        refused: when given, gets a :class:`Refusal` for each distinct product the validity or
            balance rules refused, in the order met (best summed logit first).

    Returns:
        Up to ``max_candidates`` candidates, in the order of their summed logits.
    """
    inputs = inputs or ReactionInputs.from_mols([reaction.inputs])
    combos = ranked_combinations(changes, max_edits)
    prepared = prepare_inputs(reaction.inputs)
    near = _ring_neighbourhoods(prepared)
    neighbours = [{n.GetIdx() for n in atom.GetNeighbors()} for atom in prepared.GetAtoms()]
    candidates: list[Candidate] = []
    unchanged = UnchangedInputs(reaction.inputs)
    seen: set[str] = set()
    fragments_seen: set[tuple] = set()  # of the combinations RDKit could apply
    refused_smiles: set[str] = set()
    means: dict[tuple[int, ...], float] = {}  # mean product logit of each fragment met

    def mean_logit(fragment: tuple[int, ...]) -> float:
        if fragment not in means:
            means[fragment] = float(atom_logits[list(fragment)].mean())
        return means[fragment]

    for score, combo in combos[:max_tries]:
        edits = tuple(changes[k][0] for k in combo)
        fragments = edited_fragments(neighbours, edits)
        chosen = max(fragments, key=mean_logit)
        key = _fragment_key(chosen, edits, near)
        if key in fragments_seen:
            continue  # the same product as an earlier combination's (or none, as it had)
        molecule = apply_edits(prepared, edits)
        if molecule is None:
            continue
        if key is not None:
            fragments_seen.add(key)
        smiles = product_smiles(molecule, chosen)
        if smiles is None or smiles in seen or unchanged.match(smiles) is not None:
            continue
        problem = product_problem(smiles, inputs) or redox_problem(
            prepared, molecule, chosen, inputs
        )
        if problem is not None:
            if refused is not None and smiles not in refused_smiles:
                refused_smiles.add(smiles)
                refused.append(Refusal(smiles, edits, score, problem))
            continue
        seen.add(smiles)
        candidates.append(Candidate(smiles, edits, score, molecule, tuple(sorted(chosen))))
        if len(candidates) >= max_candidates:
            break
    return candidates
