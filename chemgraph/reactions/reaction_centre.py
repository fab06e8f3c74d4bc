"""Reaction outcomes by reaction-centre prediction: the model, prediction, checkpoints.

The model (:mod:`chemgraph.models.reaction_centre`: Jin et al. 2017, WLN/WLDN, NeurIPS,
arXiv:1709.04555; Coley et al. 2019, Chem. Sci. 10, 370; on the GRAT encoder of Yoo et al.
2020, arXiv:2006.05213) is trained in two stages, each for a fixed number of epochs
(:func:`chemgraph.reactions.reaction_centre_training.train_reaction_centre_model`):

1. the scorer learns, for every input atom pair, which bond class it takes in the product
   (sigmoid cross-entropy over the pair's other classes; the edits come from the atom maps,
   :func:`chemgraph.chem.reaction_edits.reaction_edits`) and, per atom, whether it ends in the
   product;
2. the trained scorer proposes candidates for the first ``ranker_reactions`` training reactions
   (:func:`chemgraph.data.reaction_centre.enumerate_candidates`), and the ranker learns to put
   the recorded product first (softmax cross-entropy over a reaction's candidates; reactions
   whose product is not among them are left out of this stage and counted).

3. the ranker's probabilities are calibrated on the last ``calibration_reactions`` training
   reactions, on which neither the scorer nor the ranker trains, and the "no confident
   product" threshold is chosen on them
   (:mod:`chemgraph.reactions.reaction_centre_calibration`).

Prediction: scorer -> best ``top_changes`` changes -> candidates (valid and balanced by
construction) -> ranker -> softmax probabilities (the ranking) -> calibrated probabilities,
best first, and the outcome "no confident product" below the threshold. A
checkpoint is a plain dictionary (``hyper_parameters``: plain values; ``state_dict``: tensors),
read with ``torch.load(..., weights_only=True)``. This module imports no Lightning (the
training stages do, in :mod:`chemgraph.reactions.reaction_centre_training`), so ``chemgraph
react`` starts without it.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rdkit import Chem, rdBase
from tqdm.auto import tqdm

from chemgraph._files import replacing
from chemgraph._interrupts import die_with_parent
from chemgraph.batches.reaction_centre import (
    MoleculeArrays,
    molecule_arrays,
    reaction_centre_batch,
)
from chemgraph.chem.reaction_edits import Edit, apply_edits, prepare_inputs
from chemgraph.chem.validity import ReactionInputs
from chemgraph.data.reaction_centre import (
    Candidate,
    ReactionCentreExample,
    Refusal,
    enumerate_candidates,
)
from chemgraph.models.reaction_centre import (
    CandidateRanker,
    ReactionCentreConfig,
    ReactionCentreScorer,
)
from chemgraph.reactions.predictions import (
    ReactionPrediction,
    top_k_metrics,
)
from chemgraph.reactions.reaction_centre_calibration import (
    MAX_LOG_MARGIN,
    calibration_features,
    product_probabilities,
)
from chemgraph.train.calibration import (
    PlattScaling,
    expected_calibration_error,
    reliability_table,
)
from chemgraph.train.checkpoint import read_checkpoint_file

__all__ = [
    "CHECKPOINT_KIND",
    "NO_CONFIDENT_PRODUCT",
    "CandidateSet",
    "ReactionCentreModel",
    "ReactionCentrePrediction",
    "candidate_set",
    "candidate_workers",
    "evaluate_reaction_centre",
    "grouped_log_softmax",
    "load_reaction_centre_model",
    "prediction_outcome",
    "ranker_batch",
    "reaction_candidates",
    "ranker_scores",
    "save_reaction_centre_model",
    "undetermined_stereo",
]

log = logging.getLogger(__name__)

CHECKPOINT_KIND = "reaction_centre"
"""``hyper_parameters["kind"]`` of a reaction-centre checkpoint."""

_NO_CHANGE_LOGIT = -20.0
_REFUSALS_KEPT = 3
"""Refused products a prediction reports (best summed logit first)."""


@dataclass
class CandidateSet:
    """The candidates of one reaction for the ranker, cut to the reaction's core.

    The core is every input fragment that holds an edited atom of any candidate or an atom of
    any candidate's product: untouched reagents and solvents are left out of the ranker's
    graphs, on both sides of the difference encoding (their encodings would differ only through
    attention to the centre).

    Attributes:
        example: index of the reaction's example.
        core: ``int64 [M]`` input atoms of the core, ascending.
        arrays: each candidate's edited molecule cut to the core (:class:`MoleculeArrays`).
        product_atoms: each candidate's product atoms as positions in ``core``.
        edit_scores: each candidate's summed scorer logit.
        label: the recorded product's candidate (-1 = unknown or absent).
        product_logits, unused_change_logits, refused_gaps: per candidate, the scorer's mean
            product logit of its product atoms, its best logit among the changes the candidate
            does not make and how far its summed logit falls below the best refused
            product's (calibration features, :data:`chemgraph.reactions.
            reaction_centre_calibration.CALIBRATION_FEATURES`).
    """

    example: int
    core: np.ndarray
    arrays: list[MoleculeArrays]
    product_atoms: list[np.ndarray]
    edit_scores: list[float]
    label: int = -1
    product_logits: list[float] = field(default_factory=list)
    unused_change_logits: list[float] = field(default_factory=list)
    refused_gaps: list[float] = field(default_factory=list)


def _cut(arrays: MoleculeArrays, core: np.ndarray) -> MoleculeArrays:
    return MoleculeArrays(
        arrays.atoms[core], arrays.bonds[np.ix_(core, core)], arrays.distance[np.ix_(core, core)]
    )


def candidate_set(
    index: int,
    example: ReactionCentreExample,
    found: Sequence[Candidate],
    max_distance: int,
    label: int = -1,
) -> CandidateSet:
    """The :class:`CandidateSet` of reaction ``index`` (``example``) and its candidates
    ``found`` (:func:`chemgraph.data.reaction_centre.enumerate_candidates`), each edited
    molecule's atom pairs bucketed up to ``max_distance`` bonds; ``label``: the recorded
    product's candidate (-1 = unknown or absent)."""
    wanted = {k for c in found for e in c.edits for k in e[:2]}
    wanted |= {k for c in found for k in c.product_atoms}
    fragments = Chem.GetMolFrags(example.reaction.inputs, asMols=False, sanitizeFrags=False)
    core = np.array(sorted(k for f in fragments if wanted & set(f) for k in f), dtype=np.int64)
    position = np.full(example.arrays.num_atoms, -1, dtype=np.int64)
    position[core] = np.arange(len(core))
    return CandidateSet(
        index,
        core,
        [molecule_arrays(c.molecule, max_distance, core) for c in found],
        [position[list(c.product_atoms)] for c in found],
        [c.edit_score for c in found],
        label,
    )


def ranker_batch(examples: Sequence[ReactionCentreExample], sets: Sequence[CandidateSet]) -> dict:
    """The reactants, candidates and targets of some reactions' candidate sets as tensors:
    ``reactants`` and ``candidates`` (:class:`~chemgraph.batches.reaction_centre.
    ReactionCentreBatch` of the cores, one row per set and per candidate), ``owner`` (``int64
    [K]``: each candidate's set), ``product_mask`` (``bool [K, M]``), ``edit_score`` (``float32
    [K]``) and ``labels`` (``int64 [S]``: the recorded product's row among the candidates, -1
    when absent)."""
    reactants = reaction_centre_batch([_cut(examples[s.example].arrays, s.core) for s in sets])
    arrays, owner, masks, scores, labels, first = [], [], [], [], [], 0
    for k, s in enumerate(sets):
        arrays += s.arrays
        owner += [k] * len(s.arrays)
        masks += s.product_atoms
        scores += s.edit_scores
        labels.append(first + s.label if s.label >= 0 else -1)
        first += len(s.arrays)
    candidates = reaction_centre_batch(arrays)
    mask = torch.zeros(candidates.pad_mask.shape, dtype=torch.bool)
    for k, atoms in enumerate(masks):
        mask[k, torch.from_numpy(atoms)] = True
    return {
        "reactants": reactants, "candidates": candidates, "owner": torch.tensor(owner),
        "product_mask": mask, "edit_score": torch.tensor(scores, dtype=torch.float32),
        "labels": torch.tensor(labels),
    }  # fmt: skip


def _move(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def ranker_scores(ranker: CandidateRanker, batch: dict) -> torch.Tensor:
    """Scores ``float32 [K]`` of the candidates of a :func:`ranker_batch`."""
    keys = ("reactants", "candidates", "owner", "product_mask", "edit_score")
    return ranker(*(batch[k] for k in keys))


def grouped_log_softmax(scores: torch.Tensor, owner: torch.Tensor, groups: int) -> torch.Tensor:
    """Log-softmax of ``scores [K]`` within each owner group (``owner: int64 [K]``)."""
    top = torch.full((groups,), -torch.inf, device=scores.device)
    top = top.scatter_reduce(0, owner, scores.detach(), reduce="amax")
    exp = torch.exp(scores - top[owner])
    total = torch.zeros(groups, device=scores.device).index_add(0, owner, exp)
    return scores - top[owner] - torch.log(total[owner])


@dataclass
class ReactionCentreModel:
    """A trained scorer and ranker with their candidate settings (eval mode).

    Attributes:
        config: the model sizes.
        scorer, ranker: the networks.
        settings: ``top_changes``, ``max_edits``, ``max_candidates``, ``max_tries`` and what
            the model was trained on (plain values, as stored in the checkpoint).
    """

    config: ReactionCentreConfig
    scorer: ReactionCentreScorer
    ranker: CandidateRanker
    settings: dict[str, Any]

    @property
    def device(self) -> torch.device:
        return next(self.scorer.parameters()).device

    @torch.no_grad()
    def changes(
        self, examples: Sequence[ReactionCentreExample], batch_size: int = 32
    ) -> list[tuple[list[tuple[Edit, float]], np.ndarray]]:
        """Per example, its best ``top_changes`` bond changes ``((i, j, c), logit)`` best first
        and its product-atom logits ``float [N]``.

        Every atom pair of the input may change, the reagent field's (``reactants>reagents>``)
        as much as the reactants': the model was trained so, on USPTO-MIT, whose reactions list
        their reagents among the reactants, and reagents give atoms (HNO3 its nitro group,
        NaN3 its azide)."""
        top = self.settings["top_changes"]
        order = sorted(range(len(examples)), key=lambda k: examples[k].arrays.num_atoms)
        out: dict[int, tuple] = {}
        for first in range(0, len(order), batch_size):
            chunk = order[first : first + batch_size]
            batch = reaction_centre_batch([examples[k].arrays for k in chunk]).to(self.device)
            pair_logits, atom_logits = self.scorer(batch)
            n = pair_logits.shape[1]
            upper = torch.triu(torch.ones(n, n, dtype=torch.bool, device=self.device), 1)
            pair_logits = pair_logits.masked_fill(~upper[None, :, :, None], float("-inf"))
            flat = pair_logits.flatten(1)
            values, index = flat.topk(min(top, flat.shape[1]), dim=1)
            values, index = values.cpu().numpy(), index.cpu().numpy()
            atoms = atom_logits.cpu().numpy()
            classes = pair_logits.shape[-1]
            for row, k in enumerate(chunk):
                found = []
                for value, flat_index in zip(values[row], index[row]):
                    if not np.isfinite(value):
                        break
                    pair, c = divmod(int(flat_index), classes)
                    found.append(((pair // n, pair % n, c), float(value)))
                size = examples[k].arrays.num_atoms
                out[k] = (found, atoms[row, :size])
        return [out[k] for k in range(len(examples))]

    def candidates(
        self, examples: Sequence[ReactionCentreExample], progress: bool = False, workers: int = 1
    ) -> list[tuple[list[Candidate], CandidateSet | None]]:
        """Per example, its valid candidate products (best summed logit first, without their
        molecules) and their :class:`CandidateSet` for the ranker (None without candidates;
        ``example`` is the position in ``examples``, ``label`` the recorded product's
        candidate or -1), from :func:`reaction_candidates`.

        ``workers`` > 1 enumerates in that many worker processes (same result, in order;
        fewer than ``2 * _WORKER_CHUNK`` (32) reactions are done here, as starting a worker
        costs seconds); the scorer runs in this process.
        """
        with contextlib.closing(self._candidate_stream(examples, progress, workers)) as stream:
            return [(found, ranker_set) for found, ranker_set, _ in stream]

    def _candidate_stream(
        self,
        examples: Sequence[ReactionCentreExample],
        progress: bool,
        workers: int,
        pool: Any = None,
    ) -> Iterator[tuple[list[Candidate], CandidateSet | None, list[Refusal]]]:
        """:meth:`candidates` with each reaction's refused products (:func:`reaction_candidates`),
        one example at a time, in order, each as soon as its worker chunk is done (so
        :meth:`predict` ranks while the workers enumerate), in ``pool``
        (:func:`candidate_workers`) or a pool of ``workers`` of its own. Closed early (an
        error, an interrupt), it cancels the pending chunks and terminates its own workers."""
        own = pool is None and workers > 1 and len(examples) >= 2 * _WORKER_CHUNK
        if own:
            pool = _candidate_pool(workers)
        bar = tqdm(total=len(examples), desc="candidates", unit="reaction", disable=not progress)
        complete = False  # every chunk done
        try:
            if own:  # the workers start (and import) while the scorer runs
                for _ in range(workers):
                    pool.submit(int)
            scored = self.changes(examples)
            tasks = [(k, e, *found) for k, (e, found) in enumerate(zip(examples, scored))]
            options = (dict(self.settings), self.config.max_distance)
            if pool is None:
                for task in tasks:
                    yield reaction_candidates(*task, *options)
                    bar.update()
                return
            chunks = [tasks[k : k + _WORKER_CHUNK] for k in range(0, len(tasks), _WORKER_CHUNK)]
            futures = [pool.submit(_candidates_of_chunk, chunk, options) for chunk in chunks]
            for n, future in enumerate(futures, 1):
                results = future.result()
                bar.update(len(results))
                complete = n == len(futures)
                yield from results
        finally:
            bar.close()
            if own:
                _stop_pool(pool, complete)

    @property
    def calibration(self) -> PlattScaling | None:
        """The calibration of the ranker's probabilities (None: not calibrated)."""
        values = self.settings.get("calibration")
        return PlattScaling.from_dict(values) if values else None

    @torch.no_grad()
    def predict(
        self,
        examples: Sequence[ReactionCentreExample],
        top_k: int = 5,
        batch_size: int = 8,
        progress: bool = False,
        calibrated: bool = True,
        workers: int = 1,
        pool: Any = None,
    ) -> list[ReactionCentrePrediction]:
        """Ranked products of each example (its ``product_smiles`` is not used): ``scores``
        are the calibrated probabilities when the model is calibrated and ``calibrated`` is
        True, else the ranker's, and the products are ranked by them, best first.
        ``workers``: processes that enumerate the candidates (:meth:`candidates`), or ``pool``:
        those of :func:`candidate_workers`, for many calls."""
        calibration = self.calibration if calibrated else None
        stream = self._candidate_stream(examples, progress, workers, pool)
        with contextlib.closing(stream):
            return self._rank(examples, stream, top_k, batch_size, calibration)

    def _rank(
        self,
        examples: Sequence[ReactionCentreExample],
        stream: Iterator[tuple[list[Candidate], CandidateSet | None, list[Refusal]]],
        top_k: int,
        batch_size: int,
        calibration: PlattScaling | None,
    ) -> list[ReactionCentrePrediction]:
        """:meth:`predict`'s ranking of the candidates ``stream`` gives, ``batch_size``
        reactions at a time as they come."""
        predictions: list[ReactionCentrePrediction] = []
        for first in range(0, len(examples), batch_size):
            chunk = list(range(first, min(first + batch_size, len(examples))))
            found_of = {k: next(stream) for k in chunk}
            sets = [found_of[k][1] for k in chunk if found_of[k][1] is not None]
            probabilities: dict[int, np.ndarray] = {}
            if sets:
                batch = _move(ranker_batch(examples, sets), self.device)
                scores = ranker_scores(self.ranker, batch)
                log_p = grouped_log_softmax(scores, batch["owner"], len(sets))
                p = log_p.exp().cpu().numpy()
                start = 0
                for s in sets:
                    probabilities[s.example] = p[start : start + len(s.arrays)]
                    start += len(s.arrays)
            for k in chunk:
                found, ranker_set, refused = found_of[k]
                p = probabilities.get(k, np.zeros(0))
                product_logits = ranker_set.product_logits if ranker_set else []
                unused_logits = ranker_set.unused_change_logits if ranker_set else []
                refused_gaps = ranker_set.refused_gaps if ranker_set else []
                scores = p if calibration is None else product_probabilities(
                    calibration,
                    calibration_features(
                        p, [c.edit_score for c in found], [len(c.edits) for c in found],
                        calibration.features, product_logits, unused_logits, refused_gaps,
                    )
                )  # fmt: skip
                # best first by the probability printed (ties: the ranker's order)
                ranked = sorted(range(len(found)), key=lambda r: (-scores[r], -p[r]))[:top_k]
                threshold = self.no_product_threshold if calibration is not None else None
                predictions.append(
                    ReactionCentrePrediction(
                        smiles=[found[r].smiles for r in ranked],
                        scores=[float(scores[r]) for r in ranked],
                        top1_invalid=not found,
                        num_invalid=0,
                        edits=[found[r].edits for r in ranked],
                        edit_scores=[found[r].edit_score for r in ranked],
                        product_atoms=[found[r].product_atoms for r in ranked],
                        product_logits=[product_logits[r] for r in ranked],
                        unused_change_logits=[unused_logits[r] for r in ranked],
                        refused_gaps=[refused_gaps[r] for r in ranked],
                        refused=[(x.smiles, x.reason) for x in refused[:_REFUSALS_KEPT]],
                        undetermined_stereo=undetermined_stereo(
                            prepare_inputs(examples[k].reaction.inputs),
                            found[ranked[0]].edits,
                            found[ranked[0]].product_atoms,
                        )
                        if ranked
                        else 0,
                        confident=bool(ranked)
                        and (threshold is None or scores[ranked[0]] >= threshold),
                        threshold=threshold,
                    )
                )
        return predictions

    @property
    def no_product_threshold(self) -> float | None:
        """The calibrated top-1 probability below which a prediction is "no confident
        product" (:func:`chemgraph.reactions.reaction_centre_calibration.
        choose_no_product_threshold`; None: not chosen for this model)."""
        chosen = self.settings.get("no_product")
        return float(chosen["threshold"]) if chosen else None


def reaction_candidates(
    index: int,
    example: ReactionCentreExample,
    changes: Sequence[tuple[Edit, float]],
    atom_logits: np.ndarray,
    settings: dict[str, Any],
    max_distance: int,
) -> tuple[list[Candidate], CandidateSet | None, list[Refusal]]:
    """The candidates of one reaction (:func:`chemgraph.data.reaction_centre.
    enumerate_candidates` with ``settings``' ``max_edits``, ``max_candidates``, ``max_tries``),
    their :func:`candidate_set` (index ``index``; ``label``: the candidate whose SMILES is
    the example's recorded product, -1 when none is; None when there is no candidate) and the
    products the rules refused, best summed logit first.

    The candidates come back without their edited molecules (``molecule`` None): the set holds
    what the ranker needs, and a worker process returns less.
    """
    refused: list[Refusal] = []
    with rdBase.BlockLogs():  # e.g. RDKit's hydride warnings; refusals are expected
        found = enumerate_candidates(
            example.reaction,
            changes,
            atom_logits,
            settings["max_edits"],
            settings["max_candidates"],
            settings["max_tries"],
            ReactionInputs.from_mols([example.reaction.inputs]),
            refused,
        )  # fmt: skip
    if not found:
        return [], None, refused
    label = next((r for r, c in enumerate(found) if c.smiles == example.product_smiles), -1)
    ranker_set = candidate_set(index, example, found, max_distance, label)
    ranker_set.product_logits = [float(atom_logits[list(c.product_atoms)].mean()) for c in found]
    ranker_set.unused_change_logits = [
        max((logit for edit, logit in changes if edit not in c.edits), default=_NO_CHANGE_LOGIT)
        for c in found
    ]
    best_refused = refused[0].edit_score if refused else -np.inf
    ranker_set.refused_gaps = [
        float(np.clip(c.edit_score - best_refused, -MAX_LOG_MARGIN, 0.0)) for c in found
    ]
    return [replace(c, molecule=None) for c in found], ranker_set, refused


_WORKER_CHUNK = 16
"""Reactions per task of a candidate worker process."""


def _candidates_of_chunk(tasks: list[tuple], options: tuple) -> list[tuple]:
    return [reaction_candidates(*task, *options) for task in tasks]


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops us
    die_with_parent()


def _candidate_pool(workers: int) -> Any:
    """A pool of ``workers`` ``spawn`` processes for :func:`_candidates_of_chunk` (Ctrl-C
    reaches only the parent; a worker ends with it)."""
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker
    )


def _stop_pool(pool: Any, complete: bool) -> None:
    """Shut a candidate pool down; unless its work is ``complete``, terminate its workers first
    (their chunks are not wanted; Python < 3.14 has no public call)."""
    if not complete:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def candidate_workers(workers: int) -> Iterator[Any]:
    """Within the block, a pool of ``workers`` candidate processes for many
    :meth:`ReactionCentreModel.predict` calls (``pool=``), started once (a file predicted block
    by block); None for one worker. An error or interrupt terminates the workers."""
    if workers <= 1:
        yield None
        return
    pool = _candidate_pool(workers)
    complete = False
    try:
        yield pool
        complete = True
    finally:
        _stop_pool(pool, complete)


@dataclass
class ReactionCentrePrediction(ReactionPrediction):
    """:class:`chemgraph.reactions.predictions.ReactionPrediction` with the reaction centre.

    ``scores`` are the calibrated probabilities (:func:`chemgraph.reactions.
    reaction_centre_calibration.calibrate`), or, for a model
    without calibration, the ranker's (softmax over the reaction's candidates);
    ``top1_invalid`` is True only when no candidate was valid (every prediction is valid by
    construction). ``edits[r]``: the ``(i, j, bond class)`` edits of prediction ``r`` (input
    atom indices in the order the reactants and reagents are written); ``edit_scores[r]``: the
    scorer's summed logit of those edits; ``product_atoms[r]``:
    the input atoms that make up its product (the map from product atoms to reactant atoms);
    ``product_logits[r]``, ``unused_change_logits[r]``, ``refused_gaps[r]``: as
    :class:`CandidateSet` has them. ``refused``: ``(SMILES, reason)`` of the best products the
    rules refused (:class:`chemgraph.data.reaction_centre.Refusal`, up to three, best summed
    logit first: why methyl propanoate is not offered for butadiene and methyl acrylate).
    ``confident``: there is a product and the top-1 probability reaches the model's
    :attr:`ReactionCentreModel.no_product_threshold`, ``threshold`` (always, when it is None);
    False is the outcome "no confident product". ``undetermined_stereo``: the stereocentres and
    double bonds of the first product that the reaction makes or changes and whose
    configuration the model does not say (:func:`undetermined_stereo`).
    """

    edits: list[tuple[Edit, ...]] = field(default_factory=list)
    edit_scores: list[float] = field(default_factory=list)
    product_atoms: list[tuple[int, ...]] = field(default_factory=list)
    product_logits: list[float] = field(default_factory=list)
    unused_change_logits: list[float] = field(default_factory=list)
    refused_gaps: list[float] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    confident: bool = True
    threshold: float | None = None
    undetermined_stereo: int = 0


def undetermined_stereo(
    inputs: Chem.Mol, edits: Sequence[Edit], product_atoms: Sequence[int]
) -> int:
    """How many stereo elements of a candidate's product the reaction makes or changes without
    a configuration: tetrahedral centres at an edited atom and double bonds with an edited end
    that could be stereo but carry no label (RDKit's ``FindPotentialStereo``). The edits do
    not say a configuration, so :func:`chemgraph.chem.reaction_edits.apply_edits` leaves these
    unassigned (a new stereocentre from a ketone reduction, the inverted carbon of a
    Mitsunobu reaction).

    Args:
        inputs: the input molecule (:func:`chemgraph.chem.reaction_edits.prepare_inputs`).
        edits: the candidate's edits.
        product_atoms: its product atoms.
    """
    edited = apply_edits(inputs, edits)
    if edited is None:
        return 0
    touched = {k for edit in edits for k in edit[:2]}
    product = set(product_atoms)
    count = 0
    for element in Chem.FindPotentialStereo(edited):
        if element.specified != Chem.StereoSpecified.Unspecified:
            continue
        if element.type == Chem.StereoType.Atom_Tetrahedral:
            atoms = {element.centeredOn}
        elif element.type == Chem.StereoType.Bond_Double:
            bond = edited.GetBondWithIdx(element.centeredOn)
            atoms = {bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()}
        else:
            continue
        count += bool(atoms & touched) and atoms <= product
    return count


def save_reaction_centre_model(path: str | Path, model: ReactionCentreModel) -> None:
    """Write a checkpoint: ``{"hyper_parameters": {...}, "state_dict": {...}}`` (plain values
    and CPU tensors; ``torch.load(path, weights_only=True)`` reads it), beside ``path`` first and
    then renamed into place (:func:`chemgraph._files.replacing`)."""
    state = {f"scorer.{k}": v.cpu() for k, v in model.scorer.state_dict().items()}
    state |= {f"ranker.{k}": v.cpu() for k, v in model.ranker.state_dict().items()}
    checkpoint = {
        "hyper_parameters": {
            "kind": CHECKPOINT_KIND,
            "model_config": model.config.to_dict(),
            "settings": dict(model.settings),
        },
        "state_dict": state,
    }
    with replacing(path) as temporary:
        torch.save(checkpoint, temporary)


def load_reaction_centre_model(
    path: str | Path, device: str | torch.device = "cpu"
) -> ReactionCentreModel:
    """Rebuild a :class:`ReactionCentreModel` from :func:`save_reaction_centre_model`'s file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not a readable PyTorch file (why, in one line:
            :func:`chemgraph.train.checkpoint.read_checkpoint_file`), not a reaction-centre
            checkpoint, or one whose weights do not fit its model (damaged, or of another
            version).
    """
    checkpoint = read_checkpoint_file(path, ("hyper_parameters", "state_dict"))
    parameters = checkpoint["hyper_parameters"]
    if not isinstance(parameters, dict) or parameters.get("kind") != CHECKPOINT_KIND:
        raise ValueError(f"{path} is not a reaction-centre checkpoint")
    try:
        config = ReactionCentreConfig(**parameters["model_config"])
        scorer, ranker = ReactionCentreScorer(config), CandidateRanker(config)
        state = checkpoint["state_dict"]
        scorer.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("scorer.")})
        ranker.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("ranker.")})
    except (AttributeError, KeyError, RuntimeError, TypeError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"{path} is a reaction-centre checkpoint whose model cannot be rebuilt (damaged, or "
            f"written by another chemgraph version): {reason}"
        ) from error
    return ReactionCentreModel(
        config, scorer.to(device).eval(), ranker.to(device).eval(), parameters["settings"]
    )


def evaluate_reaction_centre(
    model: ReactionCentreModel,
    examples: Sequence[ReactionCentreExample],
    top_k: int = 5,
    progress: bool = False,
    workers: int = 1,
) -> tuple[dict[str, Any], list[ReactionCentrePrediction]]:
    """Top-k accuracy, invalid outputs, speed and calibration on reactions with products.

    Returns:
        The metrics and the predictions. Metrics: those of
        :func:`chemgraph.reactions.predictions.top_k_metrics` (``top_1`` … in %, ``invalid_top1``:
        reactions with no valid product in %), ``invalid_outputs``: predictions of any rank
        that fail :func:`chemgraph.chem.validity.product_problem` (a count, 0 by
        construction), ``reactions_per_second`` (wall clock of :meth:`ReactionCentreModel.predict`
        on this machine), ``top1_auroc``: ROC AUC of "top-1 is right" against the top-1
        probability (NaN when all or none are right), ``top1_ece``: its expected calibration
        error, ``calibration``: per probability decile ``[mean probability, share right,
        reactions]`` (:func:`chemgraph.train.calibration.reliability_table`). The probability
        is the calibrated one for a calibrated model.
    """
    from sklearn.metrics import roc_auc_score

    from chemgraph.chem.graph_codec import same_molecules
    from chemgraph.chem.validity import product_problem

    start = time.perf_counter()
    predictions = model.predict(examples, top_k=top_k, progress=progress, workers=workers)
    seconds = time.perf_counter() - start
    targets = [e.product_smiles for e in examples]
    metrics: dict[str, Any] = top_k_metrics(predictions, targets)
    invalid = 0
    for example, prediction in zip(examples, predictions):
        inputs = ReactionInputs.from_mols([example.reaction.inputs])
        invalid += sum(product_problem(s, inputs) is not None for s in prediction.smiles)
    metrics["invalid_outputs"] = invalid
    metrics["reactions_per_second"] = len(examples) / max(seconds, 1e-9)
    right = np.array(
        [bool(p.smiles) and same_molecules(p.smiles[0], t) for p, t in zip(predictions, targets)]
    )
    confidence = np.array([p.scores[0] if p.scores else 0.0 for p in predictions])
    metrics["top1_auroc"] = (
        float(roc_auc_score(right, confidence)) if 0 < right.sum() < len(right) else float("nan")
    )
    metrics["top1_ece"] = expected_calibration_error(confidence, right)
    metrics["calibration"] = reliability_table(confidence, right)
    return metrics, predictions


NO_CONFIDENT_PRODUCT = "no confident product"
"""The outcome of a reaction whose best product's calibrated probability is below the model's
threshold (:attr:`ReactionCentrePrediction.confident`)."""


def prediction_outcome(prediction: ReactionPrediction) -> str:
    """``"product"``, :data:`NO_CONFIDENT_PRODUCT` or ``""`` (no valid product at all; the
    table's error column says so) for one prediction (any decoder's: a GRAT translator's
    predictions are always ``"product"`` when they hold one)."""
    if not prediction.smiles:
        return ""
    return "product" if getattr(prediction, "confident", True) else NO_CONFIDENT_PRODUCT
