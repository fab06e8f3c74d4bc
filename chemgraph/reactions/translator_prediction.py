"""Predicting reaction outcomes with a GRAT translator: beam search (``chemgraph react
--decoder generate`` and the reaction_outcome recipe's evaluation).

Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs Need?" (arXiv:2006.05213),
section 4.2: a :class:`chemgraph.models.GRATTranslator` learns the product graph of a reaction
by teacher forcing (:func:`chemgraph.reactions.translator_training.train_reaction_model`) and
predicts it by beam search (:func:`predict_reactions`); predicted graphs become RDKit molecules
and canonical SMILES, deduplicated, and are compared with the true products independently of
fragment order (the predictions, top-k metrics and tables: :mod:`chemgraph.reactions.predictions`).
:func:`predict_file` is the table of ``chemgraph react --input`` with this decoder
(:func:`chemgraph.jobs.react.react_file`).

The counterpart of :mod:`chemgraph.reactions.translator_training`: training imports Lightning,
prediction does not (a checkpoint is read into a
:class:`chemgraph.train.predictors.ReactionPredictor`), which is why the two live apart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from chemgraph.batches.reaction import ReactionGraphs, TokenVocabulary, reaction_batch
from chemgraph.chem.graph_codec import AtomLabel, GraphDecodingError, LabelledGraph, graph_to_smiles
from chemgraph.chem.reactions import ReactionParseError
from chemgraph.chem.validity import ReactionInputs, product_problem
from chemgraph.data.reactions import (
    encode_reactions,
    parse_input_reaction,
    reaction_ids,
    reaction_records,
)
from chemgraph.reactions.predictions import (
    Decoded,
    ReactionPrediction,
    Records,
    write_predictions,
)
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.predictors import ReactionPredictorBase

__all__ = ["decode_hypotheses", "predict_file", "predict_reactions", "reaction_inputs"]

log = logging.getLogger(__name__)


def predict_reactions(
    module: ReactionPredictorBase,
    items: Sequence[ReactionGraphs],
    beam_width: int = 8,
    top_k: int = 5,
    batch_size: int = 32,
    length_penalty: float = 0.0,
    progress: bool = False,
    valid_only: bool = True,
) -> list[ReactionPrediction]:
    """Beam search every reaction and turn the graphs into deduplicated canonical SMILES.

    With ``valid_only`` the search builds valid products only: atoms keep to the valences of
    the module's ``allowed_valences`` (:class:`chemgraph.models.grat.ValenceRules`), and a graph
    counts as finished only when RDKit can sanitise it (:func:`graph_to_smiles`) and it is a
    valid product of the reaction's inputs (:func:`chemgraph.chem.validity.product_problem`:
    no radical such as ``[CH3]``, no bare atom or atom the reactants do not hold). Otherwise
    every finished graph counts and invalid ones are reported.

    Args:
        module: a trained translator (eval mode), on any device: a checkpoint's
            :class:`~chemgraph.train.predictors.ReactionPredictor` or the
            :class:`~chemgraph.train.reaction_module.ReactionModule` that trained it.
        items: the reactions as graphs (products not needed).
        beam_width: beams per reaction.
        top_k: most predictions kept per reaction.
        batch_size: reactions per beam search (sorted by size: less padding).
        length_penalty: exponent of the length normalisation of beam scores (0 = rank by
            the summed log-probability).
        progress: log one line per batch.
        valid_only: valence limits and the RDKit check during the search (see above).

    Returns:
        One :class:`ReactionPrediction` per item, in order. Invalid graphs (RDKit cannot
        sanitise them, or an atom token is ``<UNK>``-like) are counted and skipped, never
        raised.
    """
    vocabulary = module.vocabulary
    device = next(module.parameters()).device
    max_distance = module.model.config.max_distance
    order = sorted(range(len(items)), key=lambda i: items[i].num_input_atoms)  # fewer pads
    rules = module.valence_rules if valid_only else None
    results: dict[int, ReactionPrediction] = {}
    start = time.perf_counter()
    for first in range(0, len(order), batch_size):
        chunk = order[first : first + batch_size]
        inputs = [reaction_inputs(items[i]) if valid_only else None for i in chunk]

        def accept(hypothesis: Any, b: int, inputs: list = inputs) -> bool:
            smiles = _graph_smiles(hypothesis, vocabulary)
            return smiles is not None and product_problem(smiles, inputs[b]) is None

        batch = reaction_batch([items[i] for i in chunk], vocabulary, max_distance).to(device)
        beams = module.model.beam_search(
            batch, beam_width, length_penalty, rules=rules, accept=accept if valid_only else None
        )
        for index, hypotheses, reaction in zip(chunk, beams, inputs):
            results[index] = decode_hypotheses(hypotheses, vocabulary, top_k, reaction)
        if progress:
            done = min(first + batch_size, len(order))
            log.info("predicted %d/%d (%.0f s)", done, len(order), time.perf_counter() - start)
    return [results[i] for i in range(len(items))]


def reaction_inputs(item: ReactionGraphs) -> ReactionInputs:
    """The reactants and reagents of a reaction (for :func:`decode_hypotheses`)."""
    return ReactionInputs.from_smiles(graph_to_smiles(g) for g in item.reactants + item.reagents)


def decode_hypotheses(
    hypotheses: Sequence[Any],
    vocabulary: TokenVocabulary,
    top_k: int,
    inputs: ReactionInputs | None = None,
) -> ReactionPrediction:
    """The valid, distinct canonical SMILES of one reaction's finished beams.

    Valid means RDKit sanitises the graph and, given ``inputs``, that it is a product a chemist
    would accept (:func:`chemgraph.chem.validity.product_problem`: no radical or bare atom the
    reactants do not have, no atom the reactants do not account for); a methyl radical
    ``[CH3]`` or a chlorine atom ``[Cl]`` is invalid.

    Args:
        hypotheses: beam-search graphs, best first, each with ``labels`` (token ids),
            ``bonds`` (``(i, j, bond class)``) and ``score``
            (:class:`chemgraph.models.grat.GraphHypothesis`).
        vocabulary: anything with the ``tokens`` list of the model's vocabulary.
        top_k: most SMILES kept.
        inputs: the reactants and reagents (:func:`reaction_inputs`); None = RDKit's check only.

    Returns:
        The prediction; a graph that is not a valid molecule is counted in ``num_invalid``,
        and sets ``top1_invalid`` when it is the first (as does an empty beam).
    """
    smiles, scores, invalid, first_invalid = [], [], 0, False
    for rank, hypothesis in enumerate(hypotheses):
        text = _graph_smiles(hypothesis, vocabulary)
        if text is not None and inputs is not None and product_problem(text, inputs):
            text = None
        if text is None:
            invalid += 1
            first_invalid = first_invalid or rank == 0
            continue
        if text not in smiles and len(smiles) < top_k:
            smiles.append(text)
            scores.append(hypothesis.score)
    return ReactionPrediction(smiles, scores, first_invalid or not hypotheses, invalid)


def _graph_smiles(hypothesis: Any, vocabulary: TokenVocabulary) -> str | None:
    """Canonical SMILES of a decoded graph; None when it is not a valid, non-empty molecule
    (or holds a token that is not an atom label)."""
    try:
        atoms = tuple(AtomLabel.from_token(vocabulary.tokens[i]) for i in hypothesis.labels)
        return graph_to_smiles(LabelledGraph(atoms, tuple(hypothesis.bonds))) or None
    except (GraphDecodingError, ValueError):
        return None


def predict_file(
    checkpoint: str | Path,
    input_path: str | Path,
    output: str | Path,
    top_k: int = 5,
    beam_width: int = 8,
    batch_size: int = 32,
    id_column: str | None = None,
    overwrite: bool = False,
) -> tuple[pd.DataFrame, dict[str, float] | None]:
    """``chemgraph react --input``: predict the products of every reaction of a file, writing
    them as it goes (:func:`chemgraph.reactions.predictions.write_predictions`: ``output`` is
    opened before any reaction is predicted; ``overwrite``: write over an ``OUTPUT.partial``
    an earlier run left).

    The file is read by :func:`chemgraph.data.reactions.reaction_records`: one reaction SMILES
    ``reactants>reagents>[products]`` a line (text after the first whitespace, such as
    USPTO-MIT edit labels, is ignored; blank lines are skipped), or a ``.csv``/``.tsv`` with a
    reaction column (``reaction``, ``rxn_smiles``, ``reactions``, USPTO-50K's
    ``reactants>reagents>production``, ...). Every other record gives one row, in input
    order; a record that cannot be parsed or turned into graphs keeps its row with the reason
    in ``error`` and no prediction. Runs on CUDA when available.

    Returns:
        The table written to ``output``, one row per non-blank record: ``row`` (int64, the
        0-based line number of a text file or data row of a table), ``id`` (a table's
        ``id_column``, else its ``id`` column, ``""`` for an empty cell; the row as text
        without one: :func:`chemgraph.data.reactions.reaction_ids`), ``reaction`` (the reaction
        SMILES as read), ``target`` (canonical SMILES of the products given, ``""`` when none),
        ``target_rank`` (Int64, 1-based rank of the target among the predictions, missing when
        it is not among them), ``top1_invalid`` (nullable boolean: the best-scoring decoded
        graph is not a valid molecule; missing for a row without a prediction), ``prediction_1,
        score_1`` … ``prediction_{top_k}, score_{top_k}`` (valid canonical product SMILES,
        best first, ``""`` past the last valid one; their log-probabilities, NaN past the
        last) and ``error`` (why the row has no prediction: the reason it was not decoded,
        or :data:`~chemgraph.reactions.predictions.NO_PRODUCT`; ``""`` for a row with
        predictions). Also the :func:`~chemgraph.reactions.predictions.top_k_metrics` of
        the decoded reactions that hold products (``reactions``: their number; None when
        none does).

    Raises:
        FileNotFoundError, ValueError: see :func:`chemgraph.train.checkpoint.load_checkpoint`
            (a property-prediction checkpoint is refused); OSError: ``input_path`` cannot be
            read, or ``output`` cannot be written; ValueError: a table without a reaction
            column, or without ``id_column``; see
            :func:`~chemgraph.reactions.predictions.write_predictions`.
    """
    ids = reaction_ids(input_path, id_column)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module = load_checkpoint(checkpoint, kind="reaction", device=device)

    def decode(block: Records) -> Decoded:
        items, kept, errors = [], [], {}
        for row, text, reason in block:
            if reason is None:
                try:
                    reaction = parse_input_reaction(text)
                except ReactionParseError as error:
                    reason = error.reason
            if reason is not None:
                errors[row] = reason
                continue
            # the products, when given, are the target (top-k accuracy, target_rank)
            graphs, _, bad = encode_reactions(
                [reaction], [row], with_product=bool(reaction.products)
            )
            items += graphs
            kept += [row] * len(graphs)
            errors.update({bad_row: bad_reason for bad_row, _, bad_reason in bad})
        predictions = predict_reactions(module, items, beam_width, top_k, batch_size)
        return errors, kept, items, predictions, {}

    return write_predictions(
        reaction_records(input_path), output, decode, top_k, ids, overwrite=overwrite
    )
