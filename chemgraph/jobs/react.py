"""``chemgraph react``: the ranked products of reactions (:class:`ReactOptions`, :func:`react`,
:func:`react_file`).

Two decoders: the reaction-centre model (:mod:`chemgraph.reactions.reaction_centre`, the
default) or a GRAT translator's beam search (``--decoder generate``:
:mod:`chemgraph.reactions.translator_prediction`, trained by
:mod:`chemgraph.reactions.translator_training`). Nothing here imports Lightning: a checkpoint
is read into a :class:`chemgraph.train.predictors.ReactionPredictor`.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from rdkit import rdBase

from chemgraph._interrupts import interrupts_raise
from chemgraph.chem.graph_codec import GraphEncodingError
from chemgraph.data.reactions import (
    encode_reactions,
    parse_input_reaction,
    reaction_ids,
    reaction_records,
)
from chemgraph.errors import ConfigError
from chemgraph.reactions.predictions import Decoded, ReactionPrediction, Records, write_predictions
from chemgraph.reactions.reaction_centre import (
    ReactionCentreModel,
    candidate_workers,
    load_reaction_centre_model,
    prediction_outcome,
)
from chemgraph.reactions.translator_prediction import predict_file, predict_reactions
from chemgraph.train.checkpoint import checkpoint_kind, load_checkpoint

__all__ = ["INPUT_FORMAT", "ReactOptions", "react", "react_file"]

log = logging.getLogger(__name__)


INPUT_FORMAT = (
    "give one reaction SMILES 'reactants>reagents>[products]' a line, or a .csv/.tsv with a "
    "reaction column and at least one data row under its header"
)
"""What ``chemgraph react --input`` reads, told to a user whose file gave no reaction."""

DECODERS = ("centre", "generate")


@dataclass(frozen=True)
class ReactOptions:
    """How ``chemgraph react`` predicts (checks itself when built; its messages name the
    command's options, so the Python API and the command refuse the same values alike).

    Attributes:
        decoder: ``"centre"``: the reaction-centre model
            (:mod:`chemgraph.reactions.reaction_centre`, the shipped one unless ``checkpoint``);
            ``"generate"``: a GRAT translator's beam search
            (:func:`chemgraph.reactions.translator_prediction.predict_reactions`; needs
            ``checkpoint``).
        checkpoint: a model file (``model.pt`` of the ``reaction_centre`` recipe, or the
            ``best.ckpt``/run folder of the ``reaction_outcome`` recipe), or None.
        top_k: predictions per reaction.
        beam_width, batch_size: the beam search's width and reactions per search (generate).
        workers: processes that enumerate the candidate products (centre, a file of
            reactions; the predictions do not depend on it).

    Raises:
        ConfigError: an unknown decoder, generate without a checkpoint, a count below 1, or
            ``top_k`` above ``beam_width`` (generate).
    """

    decoder: str = "centre"
    checkpoint: str | Path | None = None
    top_k: int = 5
    beam_width: int = 8
    batch_size: int = 32
    workers: int = 1

    def __post_init__(self) -> None:
        if self.decoder not in DECODERS:
            raise ConfigError(
                f"--decoder must be one of {', '.join(DECODERS)}, got {self.decoder!r}"
            )
        if self.decoder == "generate" and self.checkpoint is None:
            raise ConfigError(
                "--decoder generate needs --checkpoint (best.ckpt of the reaction_outcome recipe)"
            )
        for name in ("top_k", "beam_width", "batch_size", "workers"):
            if getattr(self, name) < 1:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag} must be at least 1, got {getattr(self, name)}")
        if self.decoder == "generate" and self.top_k > self.beam_width:
            raise ConfigError(f"--top-k {self.top_k} exceeds --beam-width {self.beam_width}")

    @property
    def checkpoint_file(self) -> Path | None:
        """The checkpoint's file (a ``reaction_outcome`` run folder: its ``best.ckpt``)."""
        if self.checkpoint is None:
            return None
        path = Path(self.checkpoint)
        return path / "best.ckpt" if path.is_dir() else path

    def centre_model(self) -> Any:
        """The reaction-centre model of :attr:`checkpoint`, or the shipped one.

        Raises:
            ConfigError: no such file, or a file that is no reaction-centre model (a GRAT
                translator checkpoint: the message says to pass ``--decoder generate``).
        """
        from chemgraph._resources import model_path

        path = self.checkpoint_file or model_path()
        if not path.is_file():
            raise ConfigError(f"checkpoint {path} does not exist")
        try:
            return load_reaction_centre_model(path)
        except ValueError as error:
            hint = ""
            try:  # another chemgraph checkpoint: say which kind it is
                stored = torch.load(path, map_location="cpu", weights_only=True)
                hint = (
                    "; it is a property-prediction checkpoint of chemgraph train: use it with "
                    "chemgraph predict"
                    if checkpoint_kind(stored["hyper_parameters"]) == "property"
                    else "; a GRAT translator checkpoint needs --decoder generate"
                )
            except Exception:  # noqa: BLE001  (damaged, or not chemgraph's: the error says)
                pass
            raise ConfigError(f"{error}{hint}") from error


def react(reaction: str, options: ReactOptions | None = None) -> ReactionPrediction:
    """The ranked products of one reaction SMILES ``reactants>reagents>`` (``chemgraph react
    REACTION``).

    Returns:
        The prediction: valid canonical product SMILES, best first, with their probabilities
        (centre; :class:`chemgraph.reactions.reaction_centre.ReactionCentrePrediction` also gives
        each product's bond edits) or log-probabilities (generate).

    Raises:
        ConfigError: see :class:`ReactOptions`. ReactionParseError, GraphEncodingError: the
            reaction cannot be read or turned into graphs (the reason is RDKit's or the
            graph codec's).
    """
    options = ReactOptions() if options is None else options
    if options.decoder == "centre":
        from chemgraph.batches.reaction_centre import unknown_elements
        from chemgraph.data.reaction_centre import reaction_centre_example

        model = options.centre_model()
        with rdBase.BlockLogs():  # RDKit's log lines: its reasons are in the errors raised
            example = reaction_centre_example(reaction, model.config.max_distance, with_edits=False)
            unknown = unknown_elements(example.reaction.inputs)
            if unknown:
                log.warning(
                    "%s: no atom feature of the model's own (the elements it knows are those "
                    "of chemgraph.batches.reaction_centre.ELEMENTS): the prediction lies "
                    "outside its training domain", ", ".join(unknown),
                )  # fmt: skip
            return model.predict([example], top_k=options.top_k)[0]
    module = load_checkpoint(options.checkpoint_file, kind="reaction")
    with rdBase.BlockLogs():
        items, _, bad = encode_reactions([parse_input_reaction(reaction)], [0], with_product=False)
        if bad:
            raise GraphEncodingError(bad[0][2])
        (prediction,) = predict_reactions(module, items, options.beam_width, options.top_k, 1)
    return prediction


def react_file(
    input_path: str | Path,
    output: str | Path,
    options: ReactOptions | None = None,
    overwrite: bool = False,
    id_column: str | None = None,
) -> tuple[pd.DataFrame, dict[str, float] | None]:
    """The products of every reaction of a file, written to the CSV ``output`` as they are
    predicted (``chemgraph react --input FILE --output OUT``; ``output`` is opened before any
    reaction is predicted, as ``OUTPUT.partial``, renamed when complete: a run that stops keeps
    its rows so far there): the table of
    :func:`chemgraph.reactions.translator_prediction.predict_file` (generate) or
    :func:`_centre_file` (centre).
    ``id_column``: the table's identifier column for the output's ``id`` (default: a column
    named ``id``, ``ID`` or ``Id``; an empty cell stays empty; without such a column, the
    row number: :func:`chemgraph.data.reactions.reaction_ids`).

    Raises:
        ConfigError: see :class:`ReactOptions`; ``output`` not ``.csv``/``.csv.gz``; no such
            input; an input without reactions; an ``id_column`` the input lacks; an existing
            ``output`` without ``overwrite``.
        OSError: ``output`` cannot be written (before any reaction is predicted).
        ValueError: ``OUTPUT.partial`` exists without ``overwrite`` (another run is writing
            ``output``, or one that stopped left its rows there).
    """
    options = ReactOptions() if options is None else options
    if not str(output).endswith((".csv", ".csv.gz")):
        raise ConfigError(f"--output {output}: react writes CSV; give a .csv or .csv.gz")
    if not Path(input_path).is_file():
        raise ConfigError(f"input {input_path} does not exist")
    if Path(output).exists() and not overwrite:
        raise ConfigError(
            f"{output} exists; pass --overwrite to replace it or choose another --output"
        )
    try:  # the id column first: a header-only table still names its columns
        reaction_ids(input_path, id_column)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if next(reaction_records(input_path), None) is None:
        raise ConfigError(f"{input_path} holds no reactions; {INPUT_FORMAT}")
    # RDKit's log lines ("SMILES Parse Error: ...", "WARNING: not removing hydrogen atom ...")
    # stay off the terminal: a reaction's reason is in the table's error column
    # (chemgraph.chem.parse captures RDKit's messages while its logs are blocked)
    with rdBase.BlockLogs(), interrupts_raise():  # SIGTERM too stops the workers; no output
        if options.decoder == "centre":
            return _centre_file(
                options.centre_model(), input_path, output, options.top_k, options.workers,
                id_column, overwrite,
            )  # fmt: skip
        return predict_file(
            options.checkpoint_file, input_path, output, options.top_k, options.beam_width,
            options.batch_size, id_column, overwrite,
        )  # fmt: skip


_CENTRE_COLUMNS = (
    "outcome", "edits_1", "undetermined_stereo_1", "refused", "reagents", "unknown_elements",
)  # fmt: skip
"""The reaction-centre decoder's columns after the :func:`chemgraph.reactions.predictions.
prediction_frame` columns of ``react --input``'s table (:func:`_centre_file`)."""


def _centre_file(
    model: ReactionCentreModel,
    input_path: str | Path,
    output: str | Path,
    top_k: int = 5,
    workers: int = 1,
    id_column: str | None = None,
    overwrite: bool = False,
) -> tuple[Any, dict[str, float] | None]:
    """``chemgraph react --input`` with the reaction-centre model.

    Reads the file as :func:`chemgraph.reactions.translator_prediction.predict_file` does (one
    reaction SMILES a line, or a ``.csv``/``.tsv`` with a reaction column; atom maps optional)
    and writes the same table, as it goes
    (:func:`chemgraph.reactions.predictions.write_predictions`: ``output`` is opened before any
    reaction is predicted): ``row``, ``id`` (``id_column``: see
    :func:`chemgraph.data.reactions.reaction_ids`), ``reaction``, ``target``, ``target_rank``,
    ``top1_invalid`` (False when a candidate was valid, missing when none was), ``prediction_k``
    and ``score_k`` (the calibrated probability) for ``k`` up to ``top_k``, ``error``; plus
    ``outcome`` (:func:`chemgraph.reactions.reaction_centre.prediction_outcome`: ``product`` or
    ``no confident product``, empty without a prediction), ``edits_1`` (the reaction centre of
    the top prediction: ``i-j:class`` with 0-based atom indices of the input as written,
    ``;``-joined), ``undetermined_stereo_1``
    (:func:`chemgraph.reactions.reaction_centre.undetermined_stereo` of the top prediction),
    ``refused`` (the best products the rules refused, ``SMILES: reason`` joined by ``; ``),
    ``reagents`` (the reagent field as written: its molecules are atom sources like the
    reactants, and stay reagents here) and ``unknown_elements`` (the reactants' and reagents'
    elements outside :data:`chemgraph.batches.reaction_centre.ELEMENTS`, space-separated: a
    warning names their rows, whose predictions lie outside the model's training domain).
    ``workers``: processes that enumerate the candidates, started once for the file;
    ``overwrite``: write over an ``OUTPUT.partial`` an earlier run left.

    Returns:
        The table and the :func:`chemgraph.reactions.predictions.top_k_metrics` of the
        reactions that hold products (None when none does).

    Raises:
        OSError: ``input_path`` cannot be read, or ``output`` cannot be written; ValueError: a
            table without a reaction column, or without ``id_column``; see
            :func:`~chemgraph.reactions.predictions.write_predictions`.
    """
    from chemgraph.batches.reaction_centre import unknown_elements
    from chemgraph.chem.reaction_edits import BOND_CLASSES
    from chemgraph.chem.reactions import ReactionParseError, split_reaction_smiles
    from chemgraph.data.reaction_centre import reaction_centre_example

    ids = reaction_ids(input_path, id_column)
    flagged: list[int] = []

    def decode(block: Records, pool: Any) -> Decoded:
        examples, kept, errors = [], [], {}
        for row, text, reason in block:
            if reason is None:
                try:
                    examples.append(
                        reaction_centre_example(text, model.config.max_distance, with_edits=False)
                    )
                    kept.append(row)
                    continue
                except ReactionParseError as error:
                    reason = error.reason
            errors[row] = reason
        predictions = model.predict(examples, top_k=top_k, pool=pool)
        unknown = [" ".join(unknown_elements(example.reaction.inputs)) for example in examples]
        flagged.extend(row for row, elements in zip(kept, unknown) if elements)
        edits = [
            ";".join(f"{i}-{j}:{BOND_CLASSES[c]}" for i, j, c in p.edits[0]) if p.edits else ""
            for p in predictions
        ]
        extra = {
            "outcome": [prediction_outcome(p) for p in predictions],
            "edits_1": edits,
            "undetermined_stereo_1": [
                str(p.undetermined_stereo) if p.smiles else "" for p in predictions
            ],
            "refused": [
                "; ".join(f"{smiles}: {why}" for smiles, why in p.refused) for p in predictions
            ],
            "reagents": [split_reaction_smiles(example.text)[1] for example in examples],
            "unknown_elements": unknown,
        }
        return errors, kept, examples, predictions, extra

    with candidate_workers(workers) as pool:
        written = write_predictions(
            reaction_records(input_path), output, functools.partial(decode, pool=pool), top_k,
            ids, extra=_CENTRE_COLUMNS, overwrite=overwrite,
        )  # fmt: skip
    if flagged:
        rows = ", ".join(map(str, flagged[:5])) + (", ..." if len(flagged) > 5 else "")
        subject = (
            f"1 reaction (row {rows}) holds"
            if len(flagged) == 1
            else f"{len(flagged)} reactions (rows {rows}) hold"
        )
        log.warning(
            "%s elements without an atom feature of the model's own (column "
            "unknown_elements): predicted outside its training domain", subject,
        )  # fmt: skip
    return written
