"""What a reaction-outcome model predicts, and how it is scored and tabulated.

One :class:`ReactionPrediction` per reaction (ranked valid product SMILES with scores), the
same for both decoders of ``chemgraph react``: the GRAT translator's beam search
(:mod:`chemgraph.reactions.translator_prediction`) and the reaction-centre model
(:mod:`chemgraph.reactions.reaction_centre`); :func:`top_k_metrics` (top-k accuracy, invalid
outputs; the products compared independently of fragment order), :func:`prediction_frame` (one
row per reaction: the recipes' ``predictions.csv``) and :func:`write_predictions` (``chemgraph
react --input``'s table: one row per record of the file, written as it is predicted).
"""

from __future__ import annotations

import gzip
import io
import itertools
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from chemgraph.chem.graph_codec import same_molecules

__all__ = [
    "NO_PRODUCT",
    "TOP_K",
    "ReactionPrediction",
    "format_top_k_metrics",
    "REACTIONS_PER_BLOCK",
    "Decoded",
    "Records",
    "prediction_frame",
    "top_k_metrics",
    "write_predictions",
]

log = logging.getLogger(__name__)

NO_PRODUCT = "no valid product graph was decoded"
"""Why a decoded reaction has no prediction: its beams hold no valid molecule."""

TOP_K = (1, 2, 3, 5)
"""The top-k accuracies reported (as the Molecular Transformer and Yoo et al. 2020 do)."""


@dataclass
class ReactionPrediction:
    """The predicted products of one reaction: a GRAT translator's beam search
    (:func:`chemgraph.reactions.translator_prediction.predict_reactions`) or the reaction-centre
    model
    (:class:`chemgraph.reactions.reaction_centre.ReactionCentrePrediction`).

    Attributes:
        smiles: up to ``top_k`` distinct valid canonical product SMILES, best first.
        scores: their scores: length-normalised log-probabilities (beam search), the ranker's
            probabilities (reaction centre).
        top1_invalid: the best-scoring decoded graph is not a valid molecule.
        num_invalid: finished beam graphs that are not valid molecules.
    """

    smiles: list[str]
    scores: list[float]
    top1_invalid: bool
    num_invalid: int


def target_rank(predictions: Sequence[str], target: str) -> int | None:
    """1-based rank of the first of ``predictions`` (SMILES) that holds the molecules of
    ``target`` (:func:`chemgraph.chem.graph_codec.same_molecules`: fragment order ignored);
    None when none does or ``target`` is ``""`` (unknown)."""
    if not target:
        return None
    return next((r for r, s in enumerate(predictions, 1) if same_molecules(s, target)), None)


def top_k_metrics(
    predictions: Sequence[ReactionPrediction], targets: Sequence[str], ks: Sequence[int] = TOP_K
) -> dict[str, float]:
    """Top-k accuracy (%) and invalid-output rates (%).

    A reaction is correct at ``k`` when one of its first ``k`` distinct predictions holds the
    same molecules as the target (:func:`chemgraph.chem.graph_codec.same_molecules`: fragment
    order ignored).

    Returns:
        ``top_<k>`` for each of ``ks``; ``invalid_top1``: share of reactions whose
        best-scoring graph is not a valid product
        (:func:`chemgraph.reactions.translator_prediction.decode_hypotheses`: a radical such as
        ``[CH3]`` counts), or that have none; ``invalid_beam``: share of all finished beam
        graphs that are invalid; ``reactions``: their number.
    """
    n = max(1, len(targets))
    metrics = {}
    ranks = [target_rank(p.smiles, t) for p, t in zip(predictions, targets)]
    for k in ks:
        metrics[f"top_{k}"] = 100 * sum(r is not None and r <= k for r in ranks) / n
    metrics["invalid_top1"] = 100 * sum(p.top1_invalid for p in predictions) / n
    total = sum(len(p.smiles) + p.num_invalid for p in predictions)
    metrics["invalid_beam"] = 100 * sum(p.num_invalid for p in predictions) / max(1, total)
    metrics["reactions"] = len(targets)
    return metrics


def format_top_k_metrics(metrics: dict[str, float]) -> str:
    """:func:`top_k_metrics` as two lines: a header (``top-1 … invalid-top1``) and the
    percentages."""
    names = [f"top_{k}" for k in TOP_K if f"top_{k}" in metrics] + ["invalid_top1"]
    header = "".join(f"{name.replace('_', '-'):>14}" for name in names)
    values = "".join(f"{metrics[name]:>13.2f}%" for name in names)
    return f"{header}\n{values}"


def prediction_frame(
    rows: Sequence[int],
    items: Sequence[Any],
    predictions: Sequence[ReactionPrediction],
    top_k: int | None = None,
) -> pd.DataFrame:
    """One row per reaction of ``items`` (reaction graphs or reaction-centre examples: anything
    with ``product_smiles``) and their ``predictions``: ``row`` (int64), ``target`` (canonical
    SMILES of the products, ``""`` when unknown), ``target_rank`` (Int64: 1-based rank of the
    target among the predictions, missing when it is not among them), ``top1_invalid``
    (boolean), ``prediction_1, score_1`` … (``top_k`` of each; None = as many as the reaction
    with the most valid predictions has; ``""`` and NaN past a reaction's last valid
    prediction). The columns and their dtypes are there even when ``rows`` is empty."""
    if top_k is None:
        top_k = max((len(p.smiles) for p in predictions), default=0)
    ranks = range(1, top_k + 1)
    columns = ["row", "target", "target_rank", "top1_invalid"]
    columns += [f"{name}_{rank}" for rank in ranks for name in ("prediction", "score")]
    records = []
    for row, item, prediction in zip(rows, items, predictions):
        record = {"row": row, "target": item.product_smiles}
        record["target_rank"] = target_rank(prediction.smiles, item.product_smiles)
        record["top1_invalid"] = prediction.top1_invalid
        for rank in range(top_k):
            found = rank < len(prediction.smiles)
            record[f"prediction_{rank + 1}"] = prediction.smiles[rank] if found else ""
            record[f"score_{rank + 1}"] = prediction.scores[rank] if found else None
        records.append(record)
    dtypes = {"row": "int64", "target": str, "target_rank": "Int64", "top1_invalid": "boolean"}
    dtypes |= {f"prediction_{rank}": str for rank in ranks}
    dtypes |= {f"score_{rank}": "float64" for rank in ranks}
    return pd.DataFrame(records, columns=columns).astype(dtypes)


Records = list[tuple[int, str, str | None]]
"""A block of a file of reactions: ``(row, reaction SMILES, reason or None)`` of each record
(:func:`chemgraph.data.reactions.reaction_records`)."""

Decoded = tuple[dict[int, str], list[int], list[Any], list[ReactionPrediction], dict[str, list]]
"""What a decoder makes of a block of :data:`Records`: ``{row: reason}`` of the records it did
not decode; the rows, inputs (anything with ``product_smiles``) and predictions of those it
did; and its further text columns, ``{name: one value per decoded reaction}``."""

REACTIONS_PER_BLOCK = 1000
"""Reactions predicted, then written, at a time by :func:`write_predictions`."""


def write_predictions(
    records: Iterable[tuple[int, str, str | None]],
    output: str | Path,
    decode: Callable[[Records], Decoded],
    top_k: int,
    ids: dict[int, str] | None = None,
    extra: Sequence[str] = (),
    overwrite: bool = False,
) -> tuple[pd.DataFrame, dict[str, float] | None]:
    """Write the table of ``chemgraph react --input`` to the CSV ``output`` (gzipped for
    ``.csv.gz``) as it goes: one row per record of the file, in input order.

    The output is opened first, before any reaction is predicted, as ``OUTPUT.partial`` (so an
    output that cannot be written fails at once); each block of :data:`REACTIONS_PER_BLOCK`
    records is decoded and its rows appended there; when every block is written it is renamed
    to ``output``. A run that stops (an error, an interrupt) keeps its rows so far in
    ``OUTPUT.partial`` and says so (a warning).

    Args:
        records: the file's records (:func:`chemgraph.data.reactions.reaction_records`).
        output: the CSV file.
        decode: the decoder, one block at a time (:data:`Decoded`).
        top_k: predictions per row.
        ids: ``{row: identifier}`` of the records (:func:`chemgraph.data.reactions.
            reaction_ids`); None or ``{}``: the file has no identifiers, and each record's
            ``id`` is its row number.
        extra: the names of the decoder's further text columns, after the
            :func:`prediction_frame` columns (``""`` for a row it did not decode).
        overwrite: write over an ``OUTPUT.partial`` left by an earlier run.

    Returns:
        The table: ``row`` (int64), ``id`` (the record's identifier, ``""`` for an empty
        one; the row as text when the file has none), ``reaction``, the
        :func:`prediction_frame` columns
        (``target``, ``target_rank``, ``top1_invalid`` — missing for a row without a
        prediction (not decoded, or no valid product) —,
        ``prediction_k`` and ``score_k`` for ``k`` up to ``top_k``; ``""`` and NaN past a row's
        last prediction), the ``extra`` columns and ``error`` (the reason a row was not
        decoded, :data:`NO_PRODUCT` for a decoded row without a valid product, else ``""``);
        and the :func:`top_k_metrics` of the decoded reactions that hold products at each
        ``k`` of :data:`TOP_K` up to ``top_k`` (past ``top_k`` a reaction has no more
        predictions, so a larger ``k`` would repeat the top-``top_k`` accuracy); None when
        none does.

    Raises:
        ValueError: ``OUTPUT.partial`` exists without ``overwrite`` (another run is writing
            ``output``, or one that stopped left its rows there).
        OSError: ``OUTPUT.partial`` cannot be created (the message names the path and why).
    """
    file = _PartialCSV(Path(output), overwrite)
    known: list[tuple[ReactionPrediction, str]] = []
    frames: list[pd.DataFrame] = []
    try:
        block: Records = []
        for record in itertools.chain(records, [None]):
            if record is not None:
                block.append(record)
                if len(block) < REACTIONS_PER_BLOCK:
                    continue
            if block or not frames:  # an empty file still gets its header
                errors, rows, items, predictions, values = decode(block)
                texts = {row: text for row, text, _ in block}
                table = _block_table(
                    texts, errors, rows, items, predictions, top_k,
                    {name: values.get(name, []) for name in extra}, ids or {},
                )  # fmt: skip
                file.write(table)
                frames.append(table)
                known += [(p, i.product_smiles) for i, p in zip(items, predictions)
                          if i.product_smiles]  # fmt: skip
                block = []
    except BaseException:
        file.close()
        written = sum(len(frame) for frame in frames)
        log.warning("stopped: the %d reactions written so far are in %s", written, file.partial)
        raise
    file.close()
    os.replace(file.partial, output)
    metrics = None
    if known:
        ks = [k for k in TOP_K if k <= top_k]
        metrics = top_k_metrics([p for p, _ in known], [t for _, t in known], ks)
    return pd.concat(frames, ignore_index=True), metrics


class _PartialCSV:
    """``OUTPUT.partial``: created at once (refused when it exists, unless ``overwrite``),
    CSV blocks appended and flushed, plain or gzip as ``output`` is named."""

    def __init__(self, output: Path, overwrite: bool) -> None:
        self.partial = output.with_name(f"{output.name}.partial")
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            self.binary = os.fdopen(os.open(self.partial, flags, 0o644), "wb")
        except FileExistsError:
            raise ValueError(
                f"{self.partial} exists: another chemgraph react is writing {output}, or one "
                "stopped and left its rows there; remove it, or pass --overwrite"
            ) from None
        except OSError as error:
            raise OSError(f"cannot write {output}: {self.partial}: {error.strerror}") from None
        compressed = output.name.lower().endswith(".gz")
        self.stream = gzip.GzipFile(fileobj=self.binary, mode="wb") if compressed else None
        self.text = io.TextIOWrapper(self.stream or self.binary, encoding="utf-8", newline="")
        self.header = True

    def write(self, table: pd.DataFrame) -> None:
        table.to_csv(self.text, header=self.header, index=False)
        self.header = False
        self.text.flush()  # a gzip stream: flushed to a point a reader can decompress to

    def close(self) -> None:
        self.text.close()  # closes the gzip stream, which leaves the file to us
        self.binary.close()


def _block_table(
    records: dict[int, str],
    errors: dict[int, str],
    rows: Sequence[int],
    items: Sequence[Any],
    predictions: Sequence[ReactionPrediction],
    top_k: int,
    extra: dict[str, list[str]],
    ids: dict[int, str],
) -> pd.DataFrame:
    """The rows of :func:`write_predictions`'s table of one block of records."""
    table = pd.DataFrame(
        {
            "row": pd.Series(list(records), dtype="int64"),
            "id": [ids.get(row, "") if ids else str(row) for row in records],
            "reaction": list(records.values()),
        }
    )
    frame = prediction_frame(rows, items, predictions, top_k)
    for name, values in extra.items():
        frame[name] = pd.Series(values, index=frame.index, dtype=object)
    table = table.merge(frame, on="row", how="left")
    text_columns = ["target", *extra] + [f"prediction_{rank}" for rank in range(1, top_k + 1)]
    table[text_columns] = table[text_columns].fillna("")
    # the frame's dtypes (an extra text column stays text, also with no row decoded)
    table = table.astype({c: t for c, t in frame.dtypes.items() if c not in extra})
    table["error"] = [errors.get(row, "") for row in table["row"]]
    unpredicted = table["prediction_1"] == ""
    table.loc[table["top1_invalid"].notna() & unpredicted, "error"] = NO_PRODUCT
    # a row without a prediction has no best-scoring product to be invalid: its error says why
    table.loc[unpredicted, "top1_invalid"] = pd.NA
    return table
