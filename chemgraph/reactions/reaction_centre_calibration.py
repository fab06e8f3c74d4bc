"""Calibration of the reaction-centre model's probabilities, and its "no confident product"
threshold (stage 3 of :mod:`chemgraph.reactions.reaction_centre`).

The ranker's softmax sums to 1 over a reaction's candidates even when the recorded product is
not among them, so its probabilities are too high: :func:`calibrate` fits a Platt scaling
(:func:`chemgraph.train.calibration.fit_platt_scaling`) of "this candidate is the recorded
product" on each candidate's :func:`calibration_features` over held-out reactions, and chooses
on the same reactions the top-1 probability below which a prediction is "no confident
product" (:func:`choose_no_product_threshold`). :func:`product_probabilities` turns a reaction's
features into the probabilities printed. No Lightning is imported here (``chemgraph react``
uses it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from chemgraph.train.calibration import (
    PlattScaling,
    expected_calibration_error,
    fit_platt_scaling,
)

if TYPE_CHECKING:
    from chemgraph.data.reaction_centre import ReactionCentreExample
    from chemgraph.reactions.reaction_centre import ReactionCentreModel

__all__ = [
    "CALIBRATION_FEATURES",
    "MAX_LOG_MARGIN",
    "NO_PRODUCT_TARGET",
    "calibrate",
    "calibration_features",
    "choose_no_product_threshold",
    "product_probabilities",
]

log = logging.getLogger(__name__)

CALIBRATION_FEATURES = (
    "log_probability", "log_margin", "log_gap_to_best", "edit_score", "edits",
    "product_logit", "unused_change_logit", "refused_gap",
)  # fmt: skip
"""Features of a candidate that its calibrated probability is fitted on: the natural log of its
ranker probability; that minus the log of the best other candidate's (capped at
:data:`MAX_LOG_MARGIN`; the cap when it is the only candidate); its log gap to the best
candidate (0 for the best: the margin's negative part); the scorer's summed logit of its
edits; how many edits it makes; the scorer's mean product logit of its product atoms; the
scorer's best logit among its ``top_changes`` that the candidate does not make
(-20 when it makes them all); and how far its summed logit falls below
that of the best product the rules refused (:class:`chemgraph.data.reaction_centre.Refusal`:
unbalanced or strained; 0 when it is above it or none was refused, at least
-:data:`MAX_LOG_MARGIN`), so a candidate left over once the scorer's favourites were refused
is not sure because it is alone. Chosen by 5-fold cross-validation on held-out reactions (model
card, section Calibration). A model calibrated on another list of these names (earlier ones:
the first two, five or seven) is scored with its own list."""

MAX_LOG_MARGIN = 20.0
"""The cap of the log margins and gaps among the :data:`CALIBRATION_FEATURES`."""


def calibration_features(
    probabilities: np.ndarray,
    edit_scores: Sequence[float],
    edit_counts: Sequence[int],
    names: Sequence[str] = CALIBRATION_FEATURES,
    product_logits: Sequence[float] = (),
    unused_change_logits: Sequence[float] = (),
    refused_gaps: Sequence[float] = (),
) -> np.ndarray:
    """The calibration features ``names`` (of :data:`CALIBRATION_FEATURES`) ``float64 [K, F]``
    of one reaction's ``K`` candidates, from their ranker probabilities ``[K]`` (which sum to
    1), the scorer's summed logits of their edits ``[K]``, their numbers of edits ``[K]`` and,
    when ``names`` hold them, their product logits, best unused change logits and gaps below
    the best refused product ``[K]`` (:class:`CandidateSet`).

    Raises:
        KeyError: a name not in :data:`CALIBRATION_FEATURES`.
    """
    log_p = np.log(np.clip(np.asarray(probabilities, dtype=np.float64), 1e-300, None))
    if len(log_p) < 2:
        margin = np.full_like(log_p, MAX_LOG_MARGIN)
    else:
        order = np.argsort(-log_p)
        best_other = np.where(np.arange(len(log_p)) == order[0], log_p[order[1]], log_p[order[0]])
        margin = np.minimum(log_p - best_other, MAX_LOG_MARGIN)
    columns = {
        "log_probability": log_p,
        "log_margin": margin,
        "log_gap_to_best": np.minimum(margin, 0.0),
        "edit_score": np.asarray(edit_scores, dtype=np.float64),
        "edits": np.asarray(edit_counts, dtype=np.float64),
        "product_logit": np.asarray(product_logits, dtype=np.float64),
        "unused_change_logit": np.asarray(unused_change_logits, dtype=np.float64),
        "refused_gap": np.asarray(refused_gaps, dtype=np.float64),
    }
    return np.column_stack([columns[name] for name in names]).reshape(len(log_p), len(names))


def product_probabilities(calibration: PlattScaling, features: np.ndarray) -> np.ndarray:
    """The calibrated probabilities ``float64 [K]`` of one reaction's ``K`` candidates from
    their :func:`calibration_features` ``[K, F]``: each candidate's Platt scaling, scaled down
    to sum to 1 where they would sum to more (the candidates are different products of one
    reaction, so at most one is the product)."""
    probabilities = calibration.probability(features)
    total = probabilities.sum()
    return probabilities / total if total > 1 else probabilities


def calibrate(
    model: ReactionCentreModel,
    examples: Sequence[ReactionCentreExample],
    progress: bool = False,
    workers: int = 1,
) -> dict[str, float]:
    """Calibrate ``model``'s ranker probabilities on held-out reactions with products, in
    place: ``model.settings["calibration"]`` (with ``reactions``, how many were used), and
    choose the "no confident product" threshold on the same reactions,
    ``model.settings["no_product"]`` (:func:`choose_no_product_threshold`).

    Every candidate of every reaction is one example (right: it is the recorded product); the
    fit is :func:`chemgraph.train.calibration.fit_platt_scaling` of
    :func:`calibration_features`.

    Returns:
        On these reactions, the expected calibration error of the top-1 probability before
        and after (``top1_ece_ranker``, ``top1_ece_calibrated``), also logged, and the
        threshold (``no_product_threshold``).

    Raises:
        ValueError: no right or no wrong candidate among them.
    """
    from chemgraph.chem.graph_codec import same_molecules

    limit = model.settings["max_candidates"]
    predictions = model.predict(
        examples, top_k=limit, progress=progress, calibrated=False, workers=workers
    )
    features, right, top1 = [], [], []
    for example, prediction in zip(examples, predictions):
        if not prediction.smiles:
            continue
        hits = [same_molecules(s, example.product_smiles) for s in prediction.smiles]
        features.append(
            calibration_features(
                prediction.scores,
                prediction.edit_scores,
                [len(e) for e in prediction.edits],
                CALIBRATION_FEATURES,
                prediction.product_logits,
                prediction.unused_change_logits,
                prediction.refused_gaps,
            )
        )
        right += hits
        top1.append((prediction.scores[0], hits[0]))
    calibration = fit_platt_scaling(np.concatenate(features), np.asarray(right),
                                    CALIBRATION_FEATURES)  # fmt: skip
    raw = np.array([t[0] for t in top1])
    hit = np.array([t[1] for t in top1])
    after = np.array([product_probabilities(calibration, f)[0] for f in features])
    model.settings["calibration"] = calibration.to_dict() | {"reactions": len(examples)}
    # the product printed first is the most probable once calibrated
    best, best_right, start = [], [], 0
    for f in features:
        p = product_probabilities(calibration, f)
        best.append(float(p.max()))
        best_right.append(bool(right[start + int(p.argmax())]))
        start += len(f)
    threshold = choose_no_product_threshold(np.array(best), np.array(best_right))
    model.settings["no_product"] = {"threshold": threshold, "reactions": len(best)}
    errors = {
        "top1_ece_ranker": expected_calibration_error(raw, hit),
        "top1_ece_calibrated": expected_calibration_error(after, hit),
        "no_product_threshold": threshold,
    }
    log.info(
        "calibrated on %d held-out reactions (%d candidates): top-1 expected calibration "
        "error %.3f (ranker) -> %.3f; no confident product below a top-1 probability of %.3f",
        len(examples), calibration.examples, errors["top1_ece_ranker"],
        errors["top1_ece_calibrated"], threshold,
    )  # fmt: skip
    return errors


NO_PRODUCT_TARGET = 0.5
"""The share of right top-1 products from which a prediction counts as confident: a product
offered as *the* product should be right more often than not."""


def choose_no_product_threshold(
    probabilities: np.ndarray, right: np.ndarray, target: float = NO_PRODUCT_TARGET
) -> float:
    """The top-1 probability from which predictions are right at least ``target`` of the time.

    An isotonic regression of "the top-1 is right" on its calibrated probability (scikit-learn's
    ``IsotonicRegression``: the monotone fit, so the answer does not hang on one bin) over
    held-out reactions; the threshold is the smallest probability whose fitted share of
    right answers reaches ``target``. Below it a prediction is "no confident product"
    (:attr:`ReactionCentrePrediction.confident`).

    Args:
        probabilities: ``float [R]`` each reaction's top-1 calibrated probability.
        right: ``bool [R]`` whether that top-1 is the recorded product.
        target: the share of right answers asked for.

    Returns:
        The threshold (one of ``probabilities``); 1.0 when the fit never reaches ``target``.

    Raises:
        ValueError: no reactions.
    """
    from sklearn.isotonic import IsotonicRegression

    p = np.asarray(probabilities, dtype=np.float64)
    if len(p) == 0:
        raise ValueError("no reactions to choose the no-product threshold on")
    fit = IsotonicRegression(out_of_bounds="clip").fit(p, np.asarray(right, dtype=np.float64))
    grid = np.unique(p)
    reached = grid[fit.predict(grid) >= target]
    return float(reached[0]) if len(reached) else 1.0
