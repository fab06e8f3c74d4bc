"""SMILES-to-SMILES Transformer baseline for reaction outcome prediction (Molecular Transformer).

A small re-implementation of the Molecular Transformer recipe of Schwaller et al. 2019,
"Molecular Transformer: A Model for Uncertainty-Calibrated Chemical Reaction Prediction",
ACS Cent. Sci. 5, 1572-1583, DOI 10.1021/acscentsci.9b00576, written for this benchmark:

* the paper's regex SMILES tokenizer (bracket atoms, two-letter halogens, bonds, ring closures);
* source = canonical ``reactants>reagents`` tokens (the "separated" variant: reagents are the
  reactant-side molecules that give no atom-mapped atom to the product; ``--mixed`` keeps them
  among the reactants), target = canonical product tokens (atom maps removed, RDKit canonical);
* a ``torch.nn.Transformer`` encoder-decoder (pre-LN), learned token embeddings shared by source,
  target and output layer, sinusoidal positions, optional label smoothing, AdamW with linear
  warm-up and inverse-square-root decay (or cosine when ``max_steps`` is set), gradient clipping,
  a fixed CPU-time (time.process_time) / step budget and fixed seeds;
* batched beam search (all beams of a batch of reactions decoded together);
* top-1/2/3/5 accuracy against the canonical product, comparing fragment-order-independently
  (sorted ``.``-split canonical fragments), and invalid rates: ``invalid_top1`` = best beam not
  parseable by RDKit or not a valid product of the reactants (a radical or bare atom they lack,
  atoms they do not hold: :mod:`chemgraph.chem.validity`) (%), ``invalid_beam`` = share of all
  beams that are invalid so (%).

Data: USPTO-MIT text files, one ``reactants>reagents>products`` reaction per line (anything
after the first whitespace, the edit label, is ignored); ``.gz`` is read directly. Reactions that
fail to parse are skipped and counted.

    # memorisation check: train a small model on 64 reactions, evaluate on the same 64
    # (~3 min on one CPU core; should reach >90% top-1)
    python benchmarks/smiles_transformer.py --smoke
    # a reduced CPU run: the 30k reactions of the USPTO-MIT valid split (1% held out for the
    # validation loss), 200 test reactions, a CPU-sized model (one step of the default
    # 256-wide 3+3-layer model takes seconds on one core; the defaults are meant for a GPU)
    python benchmarks/smiles_transformer.py --minutes 9 --max-test 200 --d-model 128 \
        --heads 4 --layers 3 --ff-dim 512 --dropout 0 --lr 2e-3 --warmup 200

Prints the settings, periodic training / validation lines and a table of top-1/2/3/5 accuracy
and invalid rates (all in %). ``--out DIR`` also writes ``metrics.json`` and
``predictions.csv``. From another benchmark script in this folder::

    from smiles_transformer import SmilesTransformerSettings, read_reactions, train_and_evaluate
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import math
import random
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from rdkit import Chem, RDLogger
from torch import nn
from tqdm import tqdm

USPTO = Path(__file__).resolve().parents[2] / "shared" / "data" / "uspto"

# The SMILES regex of Schwaller et al. (bracket atoms first, then Br/Cl before B/C).
SMILES_TOKEN = re.compile(
    r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|/|:|~|@|\?|>|\*|\$|%[0-9]{2}"
    r"|[0-9])"
)
ATOM_MAP = re.compile(r":(\d+)\]")
PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
TOP_K = (1, 2, 3, 5)
# nn.Transformer's encoder warns that pre-LN layers cannot use the nested-tensor fast path.
warnings.filterwarnings("ignore", message="enable_nested_tensor is True")


@dataclass
class SmilesTransformerSettings:
    """Model, optimisation and decoding settings (defaults: a small Molecular Transformer)."""

    d_model: int = 256
    heads: int = 8
    encoder_layers: int = 3
    decoder_layers: int = 3
    ff_dim: int = 1024
    dropout: float = 0.1
    batch_size: int = 64  # reactions per batch (ignored when batch_tokens is set)
    batch_tokens: int | None = None  # or: source + target tokens per batch
    lr: float = 1e-3  # peak learning rate, reached at the end of warm-up
    warmup: int = 400
    schedule: str = "inverse_sqrt"  # or "cosine" (needs max_steps)
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    label_smoothing: float = 0.0
    beam_width: int = 5
    max_decode_len: int = 200
    max_source_tokens: int = 400  # longer training reactions are skipped
    eval_batch_size: int = 32  # reactions per beam-search batch
    valid_fraction: float = 0.01  # share of train held out for a validation loss
    valid_every: int = 250  # steps between validation losses
    log_every: int = 50
    separate_reagents: bool = True
    seed: int = 0
    max_minutes: float = 10.0  # training budget in CPU minutes of this process (time.process_time)
    max_steps: int | None = None
    threads: int = 1
    device: str = "cpu"


# ---------------------------------------------------------------------------------------------
# Data


def read_reactions(path: str | Path, limit: int | None = None) -> list[str]:
    """The first ``limit`` non-empty lines of a (gzipped) reaction file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    lines: list[str] = []
    with opener(path, "rt") as handle:
        for line in handle:
            if line.strip():
                lines.append(line.strip())
                if limit is not None and len(lines) >= limit:
                    break
    return lines


def tokenize(smiles: str) -> list[str]:
    """Regex SMILES tokens; raises ``ValueError`` if the tokens do not cover the string."""
    tokens = SMILES_TOKEN.findall(smiles)
    if "".join(tokens) != smiles:
        raise ValueError(f"untokenizable SMILES: {smiles}")
    return tokens


def canonical_smiles(smiles: str) -> str | None:
    """RDKit canonical SMILES without atom maps (``None`` if RDKit cannot parse it)."""
    if not smiles:
        return ""
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    for atom in mol.GetAtoms():
        atom.SetAtomMapNum(0)
    mol = Chem.MolFromSmiles(Chem.MolToSmiles(mol))  # re-parse: canonical without the maps
    return None if mol is None else Chem.MolToSmiles(mol)


def fragment_key(smiles: str) -> str | None:
    """Order-independent key: sorted canonical fragments (``None`` if invalid or empty)."""
    if not smiles:
        return None
    mol = Chem.MolFromSmiles(smiles)
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    return ".".join(sorted(Chem.MolToSmiles(mol).split(".")))


def parse_reaction(line: str, separate_reagents: bool = True) -> tuple[str, str] | None:
    """(source, product) canonical SMILES of one reaction line, or ``None`` if it fails.

    Source is ``reactants>reagents`` when ``separate_reagents`` (reagents: the given middle field
    plus, for atom-mapped reactions, reactant-side molecules whose mapped atoms do not appear in
    the product), else all molecules ``.``-joined.
    """
    fields = line.split()
    if not fields:
        return None
    parts = fields[0].split(">")
    if len(parts) != 3:
        return None
    reactants, reagents, products = parts
    molecules = [m for m in reactants.split(".") if m]
    given_reagents = [m for m in reagents.split(".") if m]
    product_maps = set(ATOM_MAP.findall(products))
    if separate_reagents and product_maps:
        kept = [m for m in molecules if set(ATOM_MAP.findall(m)) & product_maps]
        moved = [m for m in molecules if not set(ATOM_MAP.findall(m)) & product_maps]
        molecules, given_reagents = kept, moved + given_reagents
    if not separate_reagents:
        molecules, given_reagents = molecules + given_reagents, []
    source = canonical_smiles(".".join(molecules))
    reagent_side = canonical_smiles(".".join(given_reagents))
    product = canonical_smiles(products)
    if not source or reagent_side is None or not product:
        return None
    if separate_reagents:
        source = f"{source}>{reagent_side}"
    try:
        tokenize(source), tokenize(product)
    except ValueError:
        return None
    return source, product


def parse_reactions(
    lines: Iterable[str], separate_reagents: bool = True, desc: str = "parse"
) -> tuple[list[tuple[str, str]], int]:
    """Parsed (source, product) pairs and the number of lines skipped."""
    RDLogger.DisableLog("rdApp.*")
    pairs, skipped = [], 0
    for line in tqdm(lines, desc=desc, mininterval=10, leave=False):
        pair = parse_reaction(line, separate_reagents)
        if pair is None:
            skipped += 1
        else:
            pairs.append(pair)
    return pairs, skipped


class Vocabulary:
    """Token <-> index map shared by source and target; index 0-3 are pad/bos/eos/unk."""

    def __init__(self, sequences: Iterable[Sequence[str]]):
        tokens = sorted({t for seq in sequences for t in seq})
        self.itos = SPECIALS + tokens
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi.get(t, UNK) for t in tokens]

    def decode(self, ids: Iterable[int]) -> str:
        out = []
        for i in ids:
            if i == EOS:
                break
            if i not in (PAD, BOS):
                out.append(self.itos[i] if i != UNK else "?")
        return "".join(out)


def pad_batch(sequences: Sequence[Sequence[int]], bos_eos: bool = False) -> torch.Tensor:
    """Right-padded LongTensor; ``bos_eos`` wraps each sequence in <bos> ... <eos>."""
    if bos_eos:
        sequences = [[BOS, *s, EOS] for s in sequences]
    out = torch.full((len(sequences), max(len(s) for s in sequences)), PAD, dtype=torch.long)
    for i, s in enumerate(sequences):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def make_batches(
    lengths: Sequence[int], settings: SmilesTransformerSettings, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches of indices, bucketed by length (sorted within pools of 50 batches)."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = 50 * settings.batch_size
    batches: list[list[int]] = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        if settings.batch_tokens:
            batch: list[int] = []
            for i in chunk:
                if batch and (len(batch) + 1) * max(lengths[i], lengths[batch[-1]]) > (
                    settings.batch_tokens
                ):
                    batches.append(batch)
                    batch = []
                batch.append(i)
            if batch:
                batches.append(batch)
        else:
            step = settings.batch_size
            batches.extend(chunk[j : j + step] for j in range(0, len(chunk), step))
    rng.shuffle(batches)
    return batches


# ---------------------------------------------------------------------------------------------
# Model


class SinusoidalPositions(nn.Module):
    """Fixed sine/cosine position encodings (Vaswani et al. 2017), grown on demand."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model = d_model
        self.register_buffer("table", self._table(max_len), persistent=False)

    def _table(self, length: int) -> torch.Tensor:
        position = torch.arange(length, dtype=torch.float32)[:, None]
        freq = torch.exp(
            torch.arange(0, self.d_model, 2, dtype=torch.float32)
            * (-math.log(10000.0) / self.d_model)
        )
        table = torch.zeros(length, self.d_model)
        table[:, 0::2] = torch.sin(position * freq)
        table[:, 1::2] = torch.cos(position * freq)
        return table

    def forward(self, length: int) -> torch.Tensor:
        if length > self.table.size(0):
            self.table = self._table(2 * length).to(self.table.device)
        return self.table[:length]


class SmilesTransformer(nn.Module):
    """Pre-LN encoder-decoder over SMILES tokens with tied input/output embeddings."""

    def __init__(self, vocab_size: int, settings: SmilesTransformerSettings):
        super().__init__()
        d = settings.d_model
        self.scale = math.sqrt(d)
        self.embed = nn.Embedding(vocab_size, d, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0.0, d**-0.5)
        with torch.no_grad():
            self.embed.weight[PAD].zero_()
        self.positions = SinusoidalPositions(d)
        self.dropout = nn.Dropout(settings.dropout)
        self.transformer = nn.Transformer(
            d_model=d,
            nhead=settings.heads,
            num_encoder_layers=settings.encoder_layers,
            num_decoder_layers=settings.decoder_layers,
            dim_feedforward=settings.ff_dim,
            dropout=settings.dropout,
            batch_first=True,
            norm_first=True,
        )
        self.out = nn.Linear(d, vocab_size, bias=True)
        self.out.weight = self.embed.weight

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) * self.scale + self.positions(tokens.size(1))
        return self.dropout(x)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        src_pad = src == PAD
        memory = self.transformer.encoder(self._embed(src), src_key_padding_mask=src_pad)
        return memory, src_pad

    def decode(
        self, tgt_in: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor
    ) -> torch.Tensor:
        length = tgt_in.size(1)
        causal = torch.triu(
            torch.ones(length, length, dtype=torch.bool, device=tgt_in.device), diagonal=1
        )
        hidden = self.transformer.decoder(
            self._embed(tgt_in),
            memory,
            tgt_mask=causal,
            tgt_key_padding_mask=tgt_in == PAD,
            memory_key_padding_mask=src_pad,
        )
        return self.out(hidden)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        memory, src_pad = self.encode(src)
        return self.decode(tgt_in, memory, src_pad)

    @torch.no_grad()
    def start_incremental(self, memory: torch.Tensor, src_pad: torch.Tensor) -> dict:
        """State for :meth:`step`: per-layer cross-attention keys/values and an empty cache."""
        heads = self.transformer.decoder.layers[0].self_attn.num_heads
        cross = []
        for layer in self.transformer.decoder.layers:
            attn = layer.multihead_attn
            d = attn.embed_dim
            w_k, w_v = attn.in_proj_weight[d : 2 * d], attn.in_proj_weight[2 * d :]
            b_k, b_v = attn.in_proj_bias[d : 2 * d], attn.in_proj_bias[2 * d :]
            cross.append(
                (
                    _split_heads(nn.functional.linear(memory, w_k, b_k), heads),
                    _split_heads(nn.functional.linear(memory, w_v, b_v), heads),
                )
            )
        # additive mask over memory positions, broadcast over heads and the single query
        mask = torch.zeros(src_pad.shape, dtype=memory.dtype, device=memory.device)
        mask = mask.masked_fill(src_pad, float("-inf"))[:, None, None, :]
        return {"cross": cross, "mask": mask, "self": [None] * len(cross), "length": 0}

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, state: dict) -> torch.Tensor:
        """Next-token logits for the newest tokens (one per row), updating ``state`` in place.

        Uses the weights of ``self.transformer.decoder`` (pre-LN layers, eval mode) with cached
        self-attention keys/values, so decoding costs one position per step; it gives the same
        logits as :meth:`decode` on the whole prefix (checked in ``_check_incremental``).
        """
        position = state["length"]
        x = self.embed(tokens[:, None]) * self.scale + self.positions(position + 1)[position]
        heads = self.transformer.decoder.layers[0].self_attn.num_heads
        for i, layer in enumerate(self.transformer.decoder.layers):
            sa = layer.self_attn
            q, k, v = nn.functional.linear(
                layer.norm1(x), sa.in_proj_weight, sa.in_proj_bias
            ).chunk(3, dim=-1)
            k, v = _split_heads(k, heads), _split_heads(v, heads)
            if state["self"][i] is not None:
                k = torch.cat([state["self"][i][0], k], dim=2)
                v = torch.cat([state["self"][i][1], v], dim=2)
            state["self"][i] = (k, v)
            h = nn.functional.scaled_dot_product_attention(_split_heads(q, heads), k, v)
            x = x + sa.out_proj(_merge_heads(h))
            ca = layer.multihead_attn
            d = ca.embed_dim
            q = nn.functional.linear(layer.norm2(x), ca.in_proj_weight[:d], ca.in_proj_bias[:d])
            mem_k, mem_v = state["cross"][i]
            h = nn.functional.scaled_dot_product_attention(
                _split_heads(q, heads), mem_k, mem_v, attn_mask=state["mask"]
            )
            x = x + ca.out_proj(_merge_heads(h))
            x = x + layer.linear2(layer.activation(layer.linear1(layer.norm3(x))))
        state["length"] = position + 1
        return self.out(self.transformer.decoder.norm(x))[:, 0]

    @staticmethod
    def reorder(state: dict, rows: torch.Tensor) -> None:
        """Keep the self-attention cache of the hypotheses ``rows`` (in that order)."""
        state["self"] = [(k[rows], v[rows]) for k, v in state["self"]]


def _split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    batch, length, dim = x.shape
    return x.view(batch, length, heads, dim // heads).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    batch, heads, length, dh = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * dh)


@torch.no_grad()
def beam_search(
    model: SmilesTransformer, src: torch.Tensor, beam_width: int, max_len: int
) -> list[list[tuple[list[int], float]]]:
    """Beams (token ids after <bos>, summed log-probability), best first, for each source row.

    All ``batch x beam_width`` hypotheses are decoded together, one position per step with a
    key/value cache; a finished hypothesis (one that emitted <eos>) keeps its score and is
    extended with padding. No length penalty. At most ``max_len`` tokens per hypothesis.
    """
    model.eval()
    batch, k = src.size(0), beam_width
    memory, src_pad = model.encode(src)
    state = model.start_incremental(memory, src_pad)
    state["cross"] = [
        (a.repeat_interleave(k, 0), b.repeat_interleave(k, 0)) for a, b in state["cross"]
    ]
    state["mask"] = state["mask"].repeat_interleave(k, 0)
    seqs = torch.full((batch * k, 1), BOS, dtype=torch.long, device=src.device)
    scores = torch.zeros(batch, k, device=src.device)
    scores[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    finished = torch.zeros(batch * k, dtype=torch.bool, device=src.device)
    offsets = (torch.arange(batch, device=src.device) * k)[:, None]
    for _ in range(max_len):
        logp = torch.log_softmax(model.step(seqs[:, -1], state).float(), dim=-1)
        vocab = logp.size(1)
        logp[:, [PAD, BOS, UNK]] = float("-inf")
        logp[finished] = float("-inf")
        logp[finished, PAD] = 0.0
        candidates = (scores.view(-1, 1) + logp).view(batch, k * vocab)
        scores, index = candidates.topk(k, dim=1)
        rows = (offsets + torch.div(index, vocab, rounding_mode="floor")).view(-1)
        tokens = (index % vocab).view(-1, 1)
        seqs = torch.cat([seqs[rows], tokens], dim=1)
        model.reorder(state, rows)
        finished = finished[rows] | (tokens.view(-1) == EOS)
        if bool(finished.all()):
            break
    seqs, scores = seqs.view(batch, k, -1).tolist(), scores.tolist()
    return [[(seqs[b][j][1:], scores[b][j]) for j in range(k)] for b in range(batch)]


@torch.no_grad()
def _check_incremental(model: SmilesTransformer, src: torch.Tensor, tgt_in: torch.Tensor) -> float:
    """Largest |logit difference| between cached step-by-step and whole-prefix decoding."""
    model.eval()
    memory, src_pad = model.encode(src)
    full = model.decode(tgt_in, memory, src_pad)
    state = model.start_incremental(memory, src_pad)
    steps = torch.stack([model.step(tgt_in[:, t], state) for t in range(tgt_in.size(1))], dim=1)
    mask = tgt_in != PAD
    return float((full - steps)[mask].abs().max())


# ---------------------------------------------------------------------------------------------
# Training and evaluation


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _lr_factor(step: int, settings: SmilesTransformerSettings) -> float:
    step = step + 1
    warm = min(1.0, step / max(1, settings.warmup))
    if settings.schedule == "cosine" and settings.max_steps:
        if step <= settings.warmup:
            return warm
        progress = (step - settings.warmup) / max(1, settings.max_steps - settings.warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return warm if step <= settings.warmup else math.sqrt(settings.warmup / step)


def _batch_tensors(
    examples: Sequence[tuple[list[int], list[int]]], index: Sequence[int], device: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    src = pad_batch([examples[i][0] for i in index]).to(device)
    tgt = pad_batch([examples[i][1] for i in index], bos_eos=True).to(device)
    return src, tgt[:, :-1], tgt[:, 1:]


@torch.no_grad()
def _validation(
    model: SmilesTransformer,
    examples: Sequence[tuple[list[int], list[int]]],
    settings: SmilesTransformerSettings,
) -> tuple[float, float]:
    """Mean token cross-entropy and teacher-forced token accuracy (%) on held-out examples."""
    model.eval()
    loss_sum, correct, count = 0.0, 0, 0
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]))
    for start in range(0, len(order), settings.batch_size):
        src, tgt_in, tgt_out = _batch_tensors(
            examples, order[start : start + settings.batch_size], settings.device
        )
        logits = model(src, tgt_in)
        mask = tgt_out != PAD
        loss_sum += nn.functional.cross_entropy(logits[mask], tgt_out[mask], reduction="sum").item()
        correct += (logits.argmax(-1)[mask] == tgt_out[mask]).sum().item()
        count += mask.sum().item()
    model.train()
    return loss_sum / max(1, count), 100.0 * correct / max(1, count)


def train_model(
    train_pairs: Sequence[tuple[str, str]],
    settings: SmilesTransformerSettings,
) -> tuple[SmilesTransformer, Vocabulary, dict]:
    """Train on (source, product) SMILES pairs within the time/step budget.

    Returns the model (best validation-loss weights if a validation split was held out, else the
    last ones), the vocabulary and training statistics.
    """
    _seed_everything(settings.seed)
    rng = random.Random(settings.seed)
    tokenized = [(tokenize(s), tokenize(p)) for s, p in train_pairs]
    too_long = sum(len(s) > settings.max_source_tokens for s, _ in tokenized)
    tokenized = [(s, p) for s, p in tokenized if len(s) <= settings.max_source_tokens]
    order = list(range(len(tokenized)))
    rng.shuffle(order)
    n_valid = int(len(tokenized) * settings.valid_fraction)
    valid_tok = [tokenized[i] for i in order[:n_valid]]
    train_tok = [tokenized[i] for i in order[n_valid:]]
    vocab = Vocabulary(seq for pair in train_tok for seq in pair)
    train_ex = [(vocab.encode(s), vocab.encode(p)) for s, p in train_tok]
    valid_ex = [(vocab.encode(s), vocab.encode(p)) for s, p in valid_tok]
    lengths = [len(s) + len(p) for s, p in train_ex]
    print(
        f"train {len(train_ex)} reactions, validation {len(valid_ex)}, vocabulary {len(vocab)}, "
        f"skipped (source > {settings.max_source_tokens} tokens) {too_long}",
        flush=True,
    )

    model = SmilesTransformer(len(vocab), settings).to(settings.device)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"model: {parameters:,} parameters", flush=True)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, betas=(0.9, 0.998), weight_decay=settings.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, settings))
    criterion = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=settings.label_smoothing)

    budget = settings.max_minutes * 60.0  # CPU seconds of this process, as CPUTimeLimit counts
    start, cpu_start = time.perf_counter(), time.process_time()
    step, seen = 0, 0
    best_loss, best_state, valid_loss, valid_acc = math.inf, None, math.nan, math.nan
    run_loss, run_tokens = 0.0, 0
    done = False
    model.train()
    while not done:
        for index in make_batches(lengths, settings, rng):
            if time.process_time() - cpu_start >= budget or (
                settings.max_steps is not None and step >= settings.max_steps
            ):
                done = True
                break
            src, tgt_in, tgt_out = _batch_tensors(train_ex, index, settings.device)
            logits = model(src, tgt_in)
            loss = criterion(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), settings.clip_norm)
            optimizer.step()
            scheduler.step()
            step += 1
            seen += len(index)
            tokens = int((tgt_out != PAD).sum())
            run_loss += loss.item() * tokens
            run_tokens += tokens
            if step % settings.log_every == 0:
                elapsed = time.perf_counter() - start
                print(
                    f"step {step:>6}  epoch {seen / len(train_ex):6.2f}  "
                    f"loss {run_loss / max(1, run_tokens):.4f}  "
                    f"lr {scheduler.get_last_lr()[0]:.2e}  {elapsed / 60:5.1f} min",
                    flush=True,
                )
                run_loss, run_tokens = 0.0, 0
            if valid_ex and step % settings.valid_every == 0:
                valid_loss, valid_acc = _validation(model, valid_ex, settings)
                print(
                    f"  validation: loss {valid_loss:.4f}  token accuracy {valid_acc:.2f}%",
                    flush=True,
                )
                if valid_loss < best_loss:
                    best_loss, best_state = valid_loss, copy.deepcopy(model.state_dict())
    train_seconds = time.perf_counter() - start
    train_cpu_seconds = time.process_time() - cpu_start
    if valid_ex:
        valid_loss, valid_acc = _validation(model, valid_ex, settings)
        print(f"  final validation: loss {valid_loss:.4f}  token accuracy {valid_acc:.2f}%")
        if valid_loss < best_loss:
            best_loss, best_state = valid_loss, None
        if best_state is not None:
            model.load_state_dict(best_state)
            print(f"  using the best validation checkpoint (loss {best_loss:.4f})")
    stats = {
        "train_seconds": train_seconds,
        "train_cpu_seconds": train_cpu_seconds,
        "steps": step,
        "epochs": seen / max(1, len(train_ex)),
        "parameters": parameters,
        "train_reactions": len(train_ex),
        "valid_reactions": len(valid_ex),
        "valid_loss": best_loss if valid_ex else None,
        "vocabulary": len(vocab),
    }
    return model, vocab, stats


def predict(
    model: SmilesTransformer,
    vocab: Vocabulary,
    sources: Sequence[str],
    settings: SmilesTransformerSettings,
) -> list[list[str]]:
    """Beam-search predictions (``beam_width`` SMILES strings, best first) for source SMILES."""
    encoded = [vocab.encode(tokenize(s)) for s in sources]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    results: list[list[str]] = [[] for _ in sources]
    progress = tqdm(total=len(order), desc="beam search", mininterval=10)
    for start in range(0, len(order), settings.eval_batch_size):
        index = order[start : start + settings.eval_batch_size]
        src = pad_batch([encoded[i] for i in index]).to(settings.device)
        max_len = min(settings.max_decode_len, src.size(1) + 10)  # products: <= reactant tokens
        beams = beam_search(model, src, settings.beam_width, max_len)
        for i, hyps in zip(index, beams):
            results[i] = [vocab.decode(ids) for ids, _ in hyps]
        progress.update(len(index))
    progress.close()
    return results


def score_predictions(
    targets: Sequence[str],
    predictions: Sequence[Sequence[str]],
    sources: Sequence[str] | None = None,
) -> dict:
    """Top-k accuracy (%) and invalid rates (%) of beam predictions against target SMILES.

    With ``sources`` (``reactants>reagents`` SMILES), a prediction is also invalid when it is
    not a product a chemist would accept (:func:`chemgraph.chem.validity.product_problem`: a
    radical or bare atom the reactants lack, atoms they do not hold), as GRAT's are counted.
    Invalid beams are left out before the top-k ranks are counted (as GRAT's predictions
    hold only valid graphs); ``invalid_top1`` still counts a best beam that is invalid.
    """
    from chemgraph.chem.validity import ReactionInputs, product_problem

    RDLogger.DisableLog("rdApp.*")
    hits = dict.fromkeys(TOP_K, 0)
    invalid_top1 = invalid_beams = total_beams = 0
    for row, (target, beams) in enumerate(zip(targets, predictions)):
        key = fragment_key(target)
        keys = [fragment_key(p) for p in beams]
        if sources is not None:
            inputs = ReactionInputs.from_smiles(sources[row].replace(">", ".").split("."))
            keys = [k if k is None or product_problem(p, inputs) is None else None
                    for k, p in zip(keys, beams)]  # fmt: skip
        invalid_top1 += keys[0] is None
        invalid_beams += sum(k is None for k in keys)
        total_beams += len(keys)
        valid = [k for k in keys if k is not None]  # filtered, as GRAT's graphs are
        for k in TOP_K:
            hits[k] += key is not None and key in valid[:k]
    n = max(1, len(targets))
    out = {f"top_{k}": 100.0 * hits[k] / n for k in TOP_K}
    out["invalid_top1"] = 100.0 * invalid_top1 / n
    out["invalid_beam"] = 100.0 * invalid_beams / max(1, total_beams)
    out["reactions"] = len(targets)
    return out


def train_and_evaluate(
    train_reactions: list[str],
    test_reactions: list[str],
    settings: SmilesTransformerSettings | None = None,
    return_predictions: bool = False,
) -> dict:
    """Train on raw reaction lines, beam-search the test lines, return metrics.

    Keys: top_1, top_2, top_3, top_5, invalid_top1, invalid_beam (all %), reactions (test
    reactions scored), train_seconds, steps, epochs, parameters, plus skipped_train,
    skipped_test, train_reactions, valid_reactions, valid_loss, vocabulary, eval_seconds,
    beam_width (and ``predictions``: rows of source, target, beams when ``return_predictions``).
    Top-k with k > beam_width counts all beams.
    """
    settings = settings or SmilesTransformerSettings()
    torch.set_num_threads(settings.threads)
    train_pairs, skipped_train = parse_reactions(
        train_reactions, settings.separate_reagents, "parse train"
    )
    test_pairs, skipped_test = parse_reactions(
        test_reactions, settings.separate_reagents, "parse test"
    )
    print(
        f"parsed: train {len(train_pairs)} (skipped {skipped_train}), "
        f"test {len(test_pairs)} (skipped {skipped_test})",
        flush=True,
    )
    model, vocab, stats = train_model(train_pairs, settings)
    start = time.perf_counter()
    sources = [s for s, _ in test_pairs]
    targets = [p for _, p in test_pairs]
    predictions = predict(model, vocab, sources, settings)
    metrics = score_predictions(targets, predictions, sources)
    metrics.update(stats)
    metrics.update(
        skipped_train=skipped_train,
        skipped_test=skipped_test,
        eval_seconds=time.perf_counter() - start,
        beam_width=settings.beam_width,
    )
    if return_predictions:
        metrics["predictions"] = [
            {"source": s, "target": t, "beams": b} for s, t, b in zip(sources, targets, predictions)
        ]
    return metrics


def print_table(metrics: dict, label: str = "SMILES Transformer (this run)") -> None:
    header = "".join(f"{'top-' + str(k):>8}" for k in TOP_K)
    print(f"\n{'':<32}{header}{'inv@1':>8}{'inv@beam':>10}")
    print(
        f"{label:<32}"
        + "".join(f"{metrics[f'top_{k}']:>8.2f}" for k in TOP_K)
        + f"{metrics['invalid_top1']:>8.2f}{metrics['invalid_beam']:>10.2f}"
    )
    print(
        f"{metrics['reactions']} test reactions, beam {metrics['beam_width']}; "
        f"{metrics['steps']} steps, {metrics['epochs']:.2f} epochs, "
        f"{metrics['train_seconds'] / 60:.1f} min training, "
        f"{metrics['eval_seconds'] / 60:.1f} min beam search, {metrics['parameters']:,} parameters"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(USPTO / "uspto_mit_valid.txt.gz"))
    parser.add_argument("--test", default=str(USPTO / "uspto_mit_test.txt.gz"))
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--max-test", type=int, default=200)
    parser.add_argument("--test-on-train", action="store_true", help="evaluate on the train set")
    parser.add_argument("--smoke", action="store_true", help="memorise 64 reactions (~3 min)")
    parser.add_argument(
        "--minutes", type=float, default=10.0, help="training budget in CPU minutes of this process"
    )
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    parser.add_argument("--ff-dim", type=int, default=1024)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--beam-width", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--mixed", action="store_true", help="reagents among the reactants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None, help="folder for metrics.json, predictions.csv")
    args = parser.parse_args()
    if args.smoke:  # memorisation check with a CPU-sized model (the defaults need a GPU)
        args.max_train, args.max_test, args.test_on_train, args.minutes = 64, 64, True, 2.5
        args.d_model, args.heads, args.layers, args.ff_dim, args.dropout = 128, 4, 2, 512, 0.0
        args.batch_size, args.lr, args.warmup = 16, 3e-3, 100
    settings = SmilesTransformerSettings(
        d_model=args.d_model,
        heads=args.heads,
        encoder_layers=args.layers,
        decoder_layers=args.layers,
        ff_dim=args.ff_dim,
        dropout=args.dropout,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        label_smoothing=args.label_smoothing,
        beam_width=args.beam_width,
        separate_reagents=not args.mixed,
        seed=args.seed,
        max_minutes=args.minutes,
        max_steps=args.max_steps,
        threads=args.threads,
        device=args.device,
    )
    print(json.dumps({"train": args.train, "test": args.test, **asdict(settings)}), flush=True)
    train = read_reactions(args.train, args.max_train)
    test = (
        train[: args.max_test] if args.test_on_train else read_reactions(args.test, args.max_test)
    )
    start = time.perf_counter()
    metrics = train_and_evaluate(train, test, settings, return_predictions=args.out is not None)
    predictions = metrics.pop("predictions", None)
    print_table(metrics)
    print(f"({(time.perf_counter() - start) / 60:.1f} min in all)")
    if args.out:
        import pandas as pd

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(
            json.dumps({"settings": asdict(settings), "metrics": metrics}, indent=2)
        )
        rows = [
            {"source": p["source"], "target": p["target"]}
            | {f"beam_{j + 1}": b for j, b in enumerate(p["beams"])}
            for p in predictions
        ]
        pd.DataFrame(rows).to_csv(out / "predictions.csv", index=False)
        print(f"wrote {out / 'metrics.json'} and {out / 'predictions.csv'}")


if __name__ == "__main__":
    main()
