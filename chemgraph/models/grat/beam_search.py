"""Beam search over product graphs with GRAT's step decoder.

Reference: S. Yoo, Y.-S. Kim, K. H. Lee, K. Jeong, J. Choi, H. Lee, Y. S. Choi (2020),
"Graph-Aware Transformer: Is Attention All Graphs Need?", https://arxiv.org/abs/2006.05213
(section 4.2: beam size 8).

:func:`beam_search_graphs` keeps ``k`` hypotheses per reaction in a :class:`BeamState` and runs
:meth:`GRATTranslator.step` once per generated atom; each step has three parts:

1. :func:`score_candidates`: every live hypothesis's extensions (one of its ``k`` best atom
   labels times a bond option) and its ending (``<EOG>``), scored by summed log-probability;
2. :func:`select_per_reaction`: per reaction, the ``k`` best extensions become the next
   hypotheses, and the endings of the live hypotheses are kept when among the ``k`` best
   finished graphs so far;
3. :func:`extend_graphs`: the chosen hypotheses' rows are gathered (decoder cache included)
   and their new atom and bonds written.

With :class:`ValenceRules` (the default of
:func:`chemgraph.reactions.translator_prediction.predict_reactions`) the search only builds
graphs whose atoms keep to valences seen for their label: a bond class that would take an
earlier atom past its largest valence is never chosen, a label is never given to a new atom
whose bonds exceed its largest valence, and a graph ends only when every atom has a valence
seen for its label. ``accept`` (e.g. RDKit sanitisation) vets each graph before it counts as
finished; a refused graph is dropped and the search goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from chemgraph.batches.reaction import (
    BOND_ORDER_HALVES,
    MAX_VALENCE_TABLE,
    SPECIAL_TOKENS,
    ReactionBatch,
)

if TYPE_CHECKING:
    from chemgraph.models.grat.translator import DecoderCache, GRATTranslator

__all__ = [
    "BeamState",
    "Candidates",
    "GraphHypothesis",
    "Selection",
    "ValenceRules",
    "beam_search_graphs",
    "extend_graphs",
    "score_candidates",
    "select_per_reaction",
]

EOG = SPECIAL_TOKENS.index("<EOG>")
BANNED = [i for i, token in enumerate(SPECIAL_TOKENS) if token != "<EOG>"]
"""Tokens never generated: every special token but ``<EOG>``."""


@dataclass
class GraphHypothesis:
    """One decoded graph: token ids of its atoms, ``(i, j, bond_class)`` bonds with ``i < j``,
    summed log-probability and the length-normalised score used for ranking."""

    labels: list[int]
    bonds: list[tuple[int, int, int]]
    log_probability: float
    score: float


@dataclass
class ValenceRules:
    """The valences each atom label may have, as beam search enforces them.

    Attributes:
        allowed: ``bool [V, MAX_VALENCE_TABLE]``: ``allowed[v, s]`` when an atom labelled
            ``v`` may end with bond-order sum ``s`` (half bonds,
            :data:`chemgraph.batches.reaction.BOND_ORDER_HALVES`).
        maximum: ``int64 [V]`` the largest allowed sum (``-1``: the label is never generated).
    """

    allowed: torch.Tensor
    maximum: torch.Tensor

    @classmethod
    def from_lists(
        cls, valences: Sequence[Sequence[int]], device: torch.device | str = "cpu"
    ) -> ValenceRules:
        """From per-token lists such as :func:`chemgraph.batches.reaction.observed_valences`."""
        allowed = torch.zeros(len(valences), MAX_VALENCE_TABLE, dtype=torch.bool)
        for token, sums in enumerate(valences):
            allowed[token, list(sums)] = True
        columns = torch.arange(MAX_VALENCE_TABLE)
        maximum = torch.where(allowed, columns, -1).amax(dim=1)
        return cls(allowed.to(device), maximum.to(device))


@dataclass
class BeamState:
    """The hypotheses of a beam search: ``k`` rows (slots) per reaction, row ``r`` belongs to
    reaction ``r // k``; a slot with ``log_prob = -inf`` is empty.

    Attributes:
        cache: the decoder cache, one row per hypothesis.
        log_prob: ``float32 [R·k]`` summed log-probability of each hypothesis.
        labels: ``int64 [R·k, N + 1]`` token ids of the atoms ``x_0, x_1, …`` decoded so far.
        bonds: ``int64 [R·k, N + 1, N + 1]`` bond class of ``x_i``–``x_j`` at ``[i, j]``, ``j < i``.
        limits: ``int64 [R·k]`` most atoms of the row's reaction.
        beam_width: ``k``.
        finished: per reaction, its finished graphs in the order found.
        done: per reaction, whether its search is over.
    """

    cache: DecoderCache
    log_prob: torch.Tensor
    labels: torch.Tensor
    bonds: torch.Tensor
    limits: torch.Tensor
    beam_width: int
    finished: list[list[GraphHypothesis]]
    done: list[bool]

    @classmethod
    def start(cls, cache: DecoderCache, limits: list[int], beam_width: int) -> BeamState:
        """One live (empty) hypothesis per reaction from ``cache`` (one row per reaction)."""
        num_reactions, k = len(limits), beam_width
        device = cache.memory_mask.device
        reaction_of_row = torch.arange(num_reactions, device=device).repeat_interleave(k)
        cache.select(reaction_of_row)
        log_prob = torch.full((num_reactions, k), float("-inf"), device=device)
        log_prob[:, 0] = 0.0
        rows, size = num_reactions * k, max(limits) + 1
        return cls(
            cache=cache,
            log_prob=log_prob.view(rows),
            labels=torch.zeros(rows, size, dtype=torch.long, device=device),
            bonds=torch.zeros(rows, size, size, dtype=torch.long, device=device),
            limits=torch.tensor(limits, device=device).repeat_interleave(k),
            beam_width=k,
            finished=[[] for _ in range(num_reactions)],
            done=[False] * num_reactions,
        )

    def newest_atom(self, t: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Label ``int64 [R·k]`` and bonds ``int64 [R·k, t - 1]`` of ``x_{t-1}`` (None at 0)."""
        if not t:
            return None, None
        return self.labels[:, t - 1], self.bonds[:, t - 1, : t - 1]

    def hypothesis(
        self, row: int, num_nodes: int, log_probability: float, length_penalty: float
    ) -> GraphHypothesis:
        """Row ``row``'s first ``num_nodes`` atoms as a finished graph."""
        lower = self.bonds[row, :num_nodes, :num_nodes].tolist()
        found = [(j, i, lower[i][j]) for i in range(num_nodes) for j in range(i) if lower[i][j]]
        return GraphHypothesis(
            labels=self.labels[row, :num_nodes].tolist(),
            bonds=found,
            log_probability=log_probability,
            score=log_probability / (num_nodes + 1) ** length_penalty,
        )


@dataclass
class Candidates:
    """One step's candidates: per reaction, its ``k·L·O`` extensions (indexed by beam, label
    rank, bond option) then its ``k`` endings (one per beam).

    Attributes:
        scores: ``float32 [R, k·L·O + k]`` summed log-probabilities (``-inf``: impossible).
        labels: ``int64 [R·k, L]`` the ``L`` best atom labels of each hypothesis.
        num_options: ``O``: option 0 is the most likely bond set, option ``o > 0`` changes one
            bond of it to its second most likely class.
        best_bonds: ``int64 [R·k, t]`` most likely bond class to each earlier atom.
        flip_at, flip_class: ``int64 [R·k, O - 1]`` the earlier atom and the class of each
            changed bond (None when ``O = 1``).
    """

    scores: torch.Tensor
    labels: torch.Tensor
    num_options: int
    best_bonds: torch.Tensor
    flip_at: torch.Tensor | None
    flip_class: torch.Tensor | None

    @property
    def num_extensions(self) -> int:
        """``k·L·O``: the endings follow the extensions in :attr:`scores`."""
        beams_per_reaction = self.labels.shape[0] // self.scores.shape[0]
        return beams_per_reaction * self.labels.shape[1] * self.num_options

    def extension(self, index: int) -> tuple[int, int, int]:
        """Beam, label rank and bond option of extension ``index`` (< :attr:`num_extensions`)."""
        beam, rest = divmod(index, self.labels.shape[1] * self.num_options)
        label_rank, option = divmod(rest, self.num_options)
        return beam, label_rank, option

    def bonds(self, rows: torch.Tensor, options: torch.Tensor) -> torch.Tensor:
        """Bonds ``int64 [len(rows), t]`` of option ``options[i]`` of hypothesis ``rows[i]``."""
        edges = self.best_bonds[rows]
        if self.flip_at is None:
            return edges
        pick = (options - 1).clamp(min=0).unsqueeze(1)
        at = self.flip_at[rows].gather(1, pick)
        changed = self.flip_class[rows].gather(1, pick)
        flipped = edges.scatter(1, at, changed)
        return torch.where((options > 0).unsqueeze(1), flipped, edges)


@dataclass
class Selection:
    """What each slot holds after a step.

    Attributes:
        source: ``int64 [R·k]`` the row each slot extends (an empty slot keeps its own).
        labels: ``int64 [R·k]`` label of the new atom.
        options: ``int64 [R·k]`` bond option (:class:`Candidates`) of the new atom.
        log_prob: ``float32 [R·k]`` summed log-probability; ``-inf`` for an empty slot.
    """

    source: torch.Tensor
    labels: torch.Tensor
    options: torch.Tensor
    log_prob: torch.Tensor


def score_candidates(
    state: BeamState,
    label_logits: torch.Tensor,
    edge_logits: torch.Tensor,
    t: int,
    alternatives: int,
    rules: ValenceRules | None = None,
) -> Candidates:
    """Score every extension and ending of the live hypotheses at step ``t``.

    Args:
        state: the hypotheses before step ``t``.
        label_logits: ``float [R·k, V]`` from :meth:`GRATTranslator.step`.
        edge_logits: ``float [R·k, t, C]`` from :meth:`GRATTranslator.step`.
        t: the step.
        alternatives: most single-bond changes per hypothesis.
        rules: valence limits (module docstring); None = none. Uses the bond-order sums the
            decoder cache keeps (:attr:`DecoderCache.valence`).
    """
    k = state.beam_width
    num_reactions = len(state.done)
    label_logits = label_logits.float()
    label_logits[:, BANNED] = float("-inf")
    label_logp = F.log_softmax(label_logits, dim=-1)
    atom_logp = torch.where((t < state.limits)[:, None], label_logp, float("-inf"))
    atom_logp[:, EOG] = float("-inf")
    edge_logp = F.log_softmax(edge_logits.float(), dim=-1)  # [R·k, t, C]
    end_logp = label_logp[:, EOG]
    halves = torch.tensor(BOND_ORDER_HALVES, device=edge_logp.device)
    if rules is not None:
        atom_logp = atom_logp.masked_fill(rules.maximum < 0, float("-inf"))
        if t:
            used, earlier = state.cache.valence, state.labels[:, :t]  # [R·k, t]
            room = (rules.maximum[earlier] - used).unsqueeze(-1)
            edge_logp = edge_logp.masked_fill((halves > room) & (halves > 0), float("-inf"))
            final = rules.allowed[earlier, used.clamp(max=MAX_VALENCE_TABLE - 1)]
            complete = (final & (used < MAX_VALENCE_TABLE)).all(dim=1)
            end_logp = end_logp.masked_fill(~complete, float("-inf"))
        else:
            end_logp = torch.full_like(end_logp, float("-inf"))  # no empty product
    best_logp, best_bonds = edge_logp.max(-1)
    options = best_logp.sum(-1, keepdim=True)  # [R·k, 1]
    option_valence = halves[best_bonds].sum(-1, keepdim=True)
    flip_at = flip_class = None
    if t and alternatives:
        top2 = edge_logp.topk(2, dim=-1)
        delta = top2.values[..., 1] - top2.values[..., 0]
        delta, flip_at = delta.topk(min(alternatives, t), dim=-1)
        flip_class = top2.indices[..., 1].gather(1, flip_at)
        options = torch.cat([options, options + delta], dim=1)
        change = halves[flip_class] - halves[best_bonds.gather(1, flip_at)]
        option_valence = torch.cat([option_valence, option_valence + change], dim=1)
    top_label_logp, top_label = atom_logp.topk(min(k, atom_logp.shape[1]), dim=-1)
    extend = state.log_prob.view(-1, 1, 1) + top_label_logp[:, :, None] + options[:, None, :]
    if rules is not None:  # the new atom's own bonds within its label's largest valence
        too_many = option_valence[:, None, :] > rules.maximum[top_label][:, :, None]
        extend = extend.masked_fill(too_many, float("-inf"))
    end = (state.log_prob + end_logp).view(num_reactions, k)
    return Candidates(
        scores=torch.cat([extend.view(num_reactions, -1), end], dim=1),
        labels=top_label,
        num_options=options.shape[1],
        best_bonds=best_bonds,
        flip_at=flip_at,
        flip_class=flip_class,
    )


def select_per_reaction(
    state: BeamState,
    candidates: Candidates,
    t: int,
    length_penalty: float,
    accept: Callable[[GraphHypothesis, int], bool] | None = None,
) -> Selection:
    """Per reaction still searching: its ``k`` best extensions fill its slots, and the ending
    of each live hypothesis joins its finished graphs when it is among the ``k`` best endings
    found so far (and ``accept`` is None or ``accept(graph, b)`` is true, ``b`` the reaction's
    index in the batch). Endings do not compete with extensions
    for slots, so every graph the search passes through that may end is considered.

    A reaction is done when no extension is left, or when it has ``k`` finished graphs and no
    extension can still beat the worst of them: a summed log-probability only falls as a graph
    grows, so the best score a hypothesis can still reach is its log-probability normalised by
    the longest length allowed (with ``length_penalty`` 0: its log-probability; the search is
    then exact over the hypotheses it keeps). Its slots are then emptied. Updates
    ``state.finished`` and ``state.done``."""
    k = state.beam_width
    rows, device = state.log_prob.shape[0], state.log_prob.device
    selection = Selection(
        source=torch.arange(rows, device=device),
        labels=torch.zeros(rows, dtype=torch.long, device=device),
        options=torch.zeros(rows, dtype=torch.long, device=device),
        log_prob=torch.full((rows,), float("-inf"), device=device),
    )
    num_extensions = candidates.num_extensions
    extensions = candidates.scores[:, :num_extensions]
    top_score, top_index = extensions.topk(min(k, num_extensions), dim=-1)
    endings = candidates.scores[:, num_extensions:].tolist()
    limits = state.limits[::k].tolist()
    for b, (best_scores, best_indices) in enumerate(zip(top_score.tolist(), top_index.tolist())):
        if state.done[b]:
            continue
        finished = state.finished[b]
        for beam, score in sorted(enumerate(endings[b]), key=lambda pair: -pair[1]):
            normalised = score / (t + 1) ** length_penalty
            if score == float("-inf") or (len(finished) == k and normalised <= finished[-1].score):
                break
            found = state.hypothesis(b * k + beam, t, score, length_penalty)
            if accept is None or accept(found, b):
                finished.append(found)
                finished.sort(key=lambda h: -h.score)
                del finished[k:]
        chosen = 0
        for score, index in zip(best_scores, best_indices):
            if score == float("-inf"):
                break
            beam, label_rank, option = candidates.extension(index)
            slot, row = b * k + chosen, b * k + beam
            selection.source[slot] = row
            selection.labels[slot] = candidates.labels[row, label_rank]
            selection.options[slot] = option
            selection.log_prob[slot] = score
            chosen += 1
        reachable = best_scores[0] / (limits[b] + 1) ** length_penalty if chosen else None
        if chosen == 0 or (len(finished) == k and reachable <= finished[-1].score):
            state.done[b] = True
            selection.log_prob[b * k : (b + 1) * k] = float("-inf")
    return selection


def extend_graphs(state: BeamState, candidates: Candidates, selection: Selection, t: int) -> None:
    """Gather the selected rows and add atom ``x_t`` with its bonds to ``x_0 … x_{t-1}``."""
    source = selection.source
    state.cache.select(source)
    state.labels, state.bonds = state.labels[source], state.bonds[source]
    state.labels[:, t] = selection.labels
    if t:
        state.bonds[:, t, :t] = candidates.bonds(source, selection.options)
    state.log_prob = selection.log_prob


def beam_search_graphs(
    model: GRATTranslator,
    batch: ReactionBatch,
    beam_width: int,
    length_penalty: float,
    edge_alternatives: int | None,
    max_nodes: int | None,
    rules: ValenceRules | None = None,
    accept: Callable[[GraphHypothesis, int], bool] | None = None,
) -> list[list[GraphHypothesis]]:
    """The search of :meth:`GRATTranslator.beam_search` (see there for the arguments), with
    ``model`` as it is (no gradient or mode handling)."""
    alternatives = beam_width - 1 if edge_alternatives is None else edge_alternatives
    limits = batch.num_input_atoms.clamp(min=1).tolist()
    if max_nodes is not None:
        limits = [max_nodes] * len(limits)
    state = BeamState.start(model.start(batch), limits, beam_width)
    for t in range(max(limits) + 1):
        label_logits, edge_logits = model.step(state.cache, t, *state.newest_atom(t))
        candidates = score_candidates(state, label_logits, edge_logits, t, alternatives, rules)
        selection = select_per_reaction(state, candidates, t, length_penalty, accept)
        if all(state.done):
            break
        extend_graphs(state, candidates, selection, t)
    return [sorted(found, key=lambda h: -h.score) for found in state.finished]
