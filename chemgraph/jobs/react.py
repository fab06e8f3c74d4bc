"""``chemgraph react`` and reaction outcome prediction with GRAT: beam search.

Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs Need?" (arXiv:2006.05213),
section 4.2: a :class:`chemgraph.models.GRATTranslator` learns the product graph of a reaction
by teacher forcing (:func:`chemgraph.reactions.translator_training.train_reaction_model`) and
predicts it by beam search (:func:`predict_reactions`); predicted graphs become RDKit molecules
and canonical SMILES, deduplicated, and are compared with the true products independently of
fragment order (the predictions, top-k metrics and tables: :mod:`chemgraph.reactions.predictions`).

``chemgraph react`` (:class:`ReactOptions`, :func:`react`, :func:`react_file`) decodes with
this beam search (``--decoder generate``) or the reaction-centre model
(:mod:`chemgraph.reactions.reaction_centre`, the default). Nothing here imports Lightning: a
checkpoint is read into a :class:`chemgraph.train.predictors.ReactionPredictor`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from rdkit import rdBase

from chemgraph._interrupts import interrupts_raise
from chemgraph.batches.reaction import ReactionGraphs, TokenVocabulary, reaction_batch
from chemgraph.chem.graph_codec import (
    AtomLabel,
    GraphDecodingError,
    GraphEncodingError,
    LabelledGraph,
    graph_to_smiles,
)
from chemgraph.chem.reactions import ReactionParseError
from chemgraph.chem.validity import ReactionInputs, product_problem
from chemgraph.data.reactions import (
    encode_reactions,
    parse_input_reaction,
    reaction_ids,
    reaction_records,
)
from chemgraph.errors import ConfigError
from chemgraph.reactions.predictions import ReactionPrediction, prediction_table
from chemgraph.reactions.reaction_centre import load_reaction_centre_model, predict_reaction_file
from chemgraph.train.checkpoint import checkpoint_kind, load_checkpoint
from chemgraph.train.predictors import ReactionPredictorBase

__all__ = [
    "INPUT_FORMAT",
    "ReactOptions",
    "decode_hypotheses",
    "predict_file",
    "predict_reactions",
    "react",
    "react_file",
    "reaction_inputs",
]

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
) -> tuple[pd.DataFrame, dict[str, float] | None]:
    """``chemgraph react --input``: predict the products of every reaction of a file.

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
            read; ValueError: a table without a reaction column, or without ``id_column``.
    """
    ids = reaction_ids(input_path, id_column)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module = load_checkpoint(checkpoint, kind="reaction", device=device)
    items, kept, errors, texts = [], [], {}, {}
    for row, text, reason in reaction_records(input_path):
        texts[row] = text
        if reason is None:
            try:
                reaction = parse_input_reaction(text)
            except ReactionParseError as error:
                reason = error.reason
        if reason is not None:
            errors[row] = reason
            continue
        # the products, when given, are the target (top-k accuracy, target_rank)
        graphs, _, bad = encode_reactions([reaction], [row], with_product=bool(reaction.products))
        items += graphs
        kept += [row] * len(graphs)
        errors.update({bad_row: bad_reason for bad_row, _, bad_reason in bad})
    predictions = predict_reactions(module, items, beam_width, top_k, batch_size)
    return prediction_table(output, texts, errors, kept, items, predictions, top_k, ids=ids)


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
            ``"generate"``: a GRAT translator's beam search (:func:`predict_reactions`; needs
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
            hint = "a GRAT translator checkpoint needs --decoder generate"
            try:  # a Lightning checkpoint: say which kind it is
                stored = torch.load(path, map_location="cpu", weights_only=True)
                if checkpoint_kind(stored.get("hyper_parameters", {})) == "property":
                    hint = "it is a property-prediction checkpoint of chemgraph train: use it "
                    hint += "with chemgraph predict"
            except Exception:  # noqa: BLE001  (not a checkpoint either: keep the first hint)
                pass
            raise ConfigError(f"{error}; {hint}") from error


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
    """The products of every reaction of a file, written to the CSV ``output``
    (``chemgraph react --input FILE --output OUT``): the table of :func:`predict_file`
    (generate) or :func:`chemgraph.reactions.reaction_centre.predict_reaction_file` (centre).
    ``id_column``: the table's identifier column for the output's ``id`` (default: a column
    named ``id``, ``ID`` or ``Id``; an empty cell stays empty; without such a column, the
    row number: :func:`chemgraph.data.reactions.reaction_ids`).

    Raises:
        ConfigError: see :class:`ReactOptions`; ``output`` not ``.csv``/``.csv.gz``; no such
            input; an input without reactions; an ``id_column`` the input lacks; an existing
            ``output`` without ``overwrite``.
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
            return predict_reaction_file(
                options.centre_model(), input_path, output, options.top_k, options.workers,
                id_column,
            )  # fmt: skip
        return predict_file(
            options.checkpoint_file, input_path, output, options.top_k, options.beam_width,
            options.batch_size, id_column,
        )  # fmt: skip
