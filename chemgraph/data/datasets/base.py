"""The dataset base class: ``download()``, ``parse()``, ``featurize()``, ``split()``.

Each dataset family subclasses :class:`CardDataset` and implements :meth:`CardDataset._parse`
(source files -> a table of records + a rejected-rows table) and, when it does not featurise
SMILES, :meth:`CardDataset._build_graphs`. Featurised graphs are cached in
``$CHEMGRAPH_HOME/featurized/<name>/<key>/`` as :func:`chemgraph.graphs.save_shard` shards; the
key hashes (source files' SHA-256, featurizer configuration, parse options, chemgraph version,
graph key layout :data:`chemgraph.graph_keys.GRAPH_FORMAT`).
Loaders never print; they log and return counts.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch

import chemgraph
from chemgraph._dgl import dgl
from chemgraph._files import file_digest
from chemgraph.data.datasets.card import DatasetCard, SourceFile
from chemgraph.data.datasets.download import chemgraph_home, fetch, verify
from chemgraph.data.readers import REJECTED_COLUMNS
from chemgraph.data.splits import duplicate_groups, find_duplicates, random_split, scaffold_split
from chemgraph.data.table import MoleculeDataset, featurize_table
from chemgraph.errors import DatasetError
from chemgraph.featurize import FeaturizerPreset, get_preset
from chemgraph.graph_keys import GRAPH_FORMAT
from chemgraph.graphs import load_shard, save_shard

__all__ = [
    "CardDataset",
    "DamagedCacheError",
    "ParseResult",
    "check_source_file",
    "rejected_frame",
    "SHARD_SIZE",
]

logger = logging.getLogger(__name__)

SHARD_SIZE = 5_000
"""Graphs per cache shard."""

SPLIT_KEYS = ("train", "valid", "test")


def rejected_frame(rows: Sequence[tuple[int, str, str]]) -> pd.DataFrame:
    """A rejected-rows table (``row`` int64, ``input``, ``reason``) from tuples."""
    return pd.DataFrame(
        {
            "row": pd.Series([r[0] for r in rows], dtype=np.int64),
            "input": pd.Series([r[1] for r in rows], dtype=object),
            "reason": pd.Series([r[2] for r in rows], dtype=object),
        }
    )


@dataclass
class ParseResult:
    """What :meth:`CardDataset.parse` returns.

    Attributes:
        table: one row per parsed record (columns per family, see each class).
        rejected: ``row, input, reason`` of every record that could not be parsed (``row``:
            0-based record index in its file), plus ``file``.
        files: the source files read, in order.
    """

    table: pd.DataFrame
    rejected: pd.DataFrame
    files: list[Path]

    @property
    def counts(self) -> dict[str, int]:
        """``{"parsed": n, "rejected": m}``."""
        return {"parsed": len(self.table), "rejected": len(self.rejected)}


def check_source_file(spec: SourceFile, path: Path, records: int | None) -> bool:
    """Compare a source file that is being read with its card entry, and say so in the log.

    The checksum is compared when ``path`` has the card's file name (another name is an
    accepted alias, e.g. another format of the same data, whose bytes differ by nature), and
    ``records`` (the records the file held) with the card's ``rows``. A match is logged as
    INFO, a difference as a WARNING that names the file and both values (a local copy is the
    user's choice, so it is read), and a check that cannot be made (no checksum on the card)
    as INFO.

    Returns:
        ``True`` when nothing differs from the card.
    """
    same = True
    if path.name != spec.name:
        logger.info("%s: read as the card's %s (checksum not comparable)", path, spec.name)
    else:
        result = verify(path, spec)
        if result is False:
            same = False
            algorithm = "sha256" if spec.sha256 else "md5"
            logger.warning(
                "%s: not the card's file, its checksum differs: %s %s, the card's %s (a local "
                "copy; read as it is, results may differ from the published ones)",
                path, algorithm, file_digest(path, algorithm), spec.sha256 or spec.md5,
            )  # fmt: skip
        elif result is None:
            logger.info("%s: the card publishes no checksum (not checked)", path)
        else:
            logger.info("%s: checksum matches the card", path)
    if records is not None and spec.rows is not None:
        if records != spec.rows:
            same = False
            logger.warning(
                "%s holds %d records; the card's %s holds %d (a partial or other copy)",
                path, records, spec.name, spec.rows,
            )  # fmt: skip
        else:
            logger.info("%s: %d records, as the card says", path, records)
    return same


class CardDataset:
    """A dataset described by a card (see :mod:`chemgraph.data.datasets.card`).

    Args:
        card: the dataset's card.
        root: folder holding the source files (a local copy, or where :meth:`download`
            writes); default ``$CHEMGRAPH_HOME/raw/<name>``. Files are looked up by their
            card name, then by the card's ``aliases``.
        download: fetch missing files when parsing (default ``True``; needs internet).
        splits: read only the files of these splits (card ``split`` of a file), e.g.
            ``["valid", "test"]`` for a local copy without the training file; files without a
            split are always read. Default: every file.
        **options: family options (see each class).

    Attributes:
        card: the card. root: the source folder. options: the family options.
        records_read: card file name -> records the file held when it was parsed (families
            that count them), compared with the card's ``rows``.
    """

    family: ClassVar[str] = ""
    smiles_column: ClassVar[str | None] = "smiles"

    def __init__(
        self,
        card: DatasetCard,
        root: str | os.PathLike[str] | None = None,
        *,
        download: bool = True,
        splits: Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        self.card = card
        self.splits = None if splits is None else tuple(splits)
        self.root = Path(root) if root is not None else chemgraph_home() / "raw" / card.name
        self.auto_download = download
        self.options = self._check_options(options)
        self._parsed: ParseResult | None = None
        self.records_read: dict[str, int] = {}
        self._warned_choice: set[str] = set()
        self._root_given = root is not None

    # --- options ------------------------------------------------------------------------
    default_options: ClassVar[dict[str, Any]] = {}

    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(options) - set(self.default_options))
        if unknown:
            raise ValueError(
                f"dataset {self.card.name!r}: unknown option(s) {unknown}; "
                f"available: {sorted(self.default_options)}"
            )
        return {**self.default_options, **options}

    # --- files --------------------------------------------------------------------------
    @property
    def files(self) -> tuple[SourceFile, ...]:
        """The card's files, restricted to :attr:`splits` when given."""
        if self.splits is None:
            return self.card.files
        unknown = set(self.splits) - {f.split for f in self.card.files}
        if unknown:
            raise ValueError(f"{self.card.name}: no file holds split(s) {sorted(unknown)}")
        return tuple(f for f in self.card.files if f.split is None or f.split in self.splits)

    def _find(self, spec: SourceFile) -> Path | None:
        """The file of ``spec`` under :attr:`root`: its card name, else the first match of its
        aliases (in alias order, then by name). When the folder holds other candidates too
        (say, the full CSV and a small extxyz sample), a warning names the one read and the
        others, once per dataset object."""
        candidates = [self.root / spec.name] if (self.root / spec.name).is_file() else []
        if self.root.is_dir():
            names = sorted(p for p in self.root.iterdir() if p.is_file() or p.is_dir())
            for pattern in spec.aliases:
                candidates += [p for p in names if fnmatch.fnmatch(p.name, pattern)]
        candidates = list(dict.fromkeys(candidates))
        if len(candidates) > 1 and spec.name not in self._warned_choice:
            self._warned_choice.add(spec.name)
            others = ", ".join(p.name for p in candidates[1:])
            logger.warning(
                "%s: %s holds several copies of %s; reading %s (also there: %s); give --root "
                "a folder with only the copy you mean",
                self.card.name, self.root, spec.name, candidates[0].name, others,
            )  # fmt: skip
        return candidates[0] if candidates else None

    def download(self, *, allow_unverified: bool = False, opener=None) -> list[Path]:
        """Make every source file available in :attr:`root`, downloading the missing ones.

        A file already present (by name or alias) is kept; when it is the canonical file
        (its card name) and its checksum differs from the card's, a warning is logged (a
        local copy is the user's choice). Downloads are verified and renamed atomically
        (:func:`chemgraph.data.datasets.download.fetch`).

        Returns:
            The local files, in card order (optional files only when present).

        Raises:
            ValueError, ChecksumError, OSError: see :func:`fetch`.
        """
        paths = []
        for spec in self.files:
            path = self._find(spec)
            if path is None and spec.optional and not spec.url:
                continue
            if path is None:
                path = fetch(spec, self.root, allow_unverified=allow_unverified, opener=opener)
            else:
                check_source_file(spec, path, None)
            paths.append(path)
        return paths

    def source_files(self) -> dict[str, Path]:
        """Card file name -> local path of every available source file.

        Downloads missing files when the dataset was created with ``download=True``.

        Raises:
            FileNotFoundError: a ``root`` that was given is not a folder (and the files cannot
                be downloaded into it with a checksum to verify them); a required file is
                missing and downloading is off (the message names the file, the folder searched
                and how to get it).
        """
        found: dict[str, Path] = {}
        missing = []
        for spec in self.files:
            path = self._find(spec)
            if path is not None:
                found[spec.name] = path
            elif not spec.optional:
                missing.append(spec)
        downloadable = self.auto_download and all(s.url and (s.sha256 or s.md5) for s in missing)
        if missing and self._root_given and not self.root.is_dir() and not downloadable:
            raise FileNotFoundError(
                f"dataset {self.card.name!r}: the folder {self.root} "
                f"{'is not a folder' if self.root.exists() else 'does not exist'}; give --root "
                "(root=...) the folder that holds the dataset's files"
            )
        if missing and self.auto_download:
            self.download()
            return self.source_files_present()
        if missing:
            names = ", ".join(f"{s.name} ({s.url or 'no URL'})" for s in missing)
            raise FileNotFoundError(
                f"dataset {self.card.name!r}: missing in {self.root}: {names}; run "
                f"`chemgraph datasets download {self.card.name}`, pass --root with a copy, or "
                "pass splits=[...] to read only the splits you have"
            )
        return found

    def source_files_present(self) -> dict[str, Path]:
        """Card file name -> local path, for the files present in :attr:`root` only."""
        return {s.name: p for s in self.files if (p := self._find(s)) is not None}

    # --- parse --------------------------------------------------------------------------
    def parse(self) -> ParseResult:
        """Read the source files (once; later calls return the same result).

        Every file read is checked against its card (:func:`check_source_file`: checksum,
        and the number of records where the family counts them in :attr:`records_read`);
        the result is logged, a difference as a warning.

        Returns:
            A :class:`ParseResult`; its counts are logged.
        """
        if self._parsed is None:
            files = self.source_files()
            self.records_read = {}
            table, rejected = self._parse(files)
            for name, path in files.items():
                check_source_file(self.card.file(name), path, self.records_read.get(name))
            self._parsed = ParseResult(table.reset_index(drop=True), rejected, list(files.values()))
            logger.info(
                "%s: parsed %d records, rejected %d", self.card.name, len(table), len(rejected)
            )
        return self._parsed

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(table, rejected)`` of the source files; sets ``records_read[card file name]``
        to the number of records each file held (parsed + rejected), where it is known."""
        raise NotImplementedError

    @property
    def target_columns(self) -> list[str]:
        """The label columns, in label order (the card's ``targets``)."""
        return list(self.card.targets)

    # --- featurize ----------------------------------------------------------------------
    def cache_key(self, featurizer: dict[str, Any]) -> str:
        """16 hex digits of SHA-256 over (source files' SHA-256, featurizer, options, version,
        :data:`~chemgraph.graph_keys.GRAPH_FORMAT`): a cache with older graph keys is not read."""
        sources = {name: file_digest(path) for name, path in self.parse_sources().items()}
        blob = json.dumps(
            {
                "sources": sources,
                "featurizer": featurizer,
                "options": self.options,
                "splits": self.splits,
                "targets": self.target_columns,
                "chemgraph": chemgraph.__version__,
                "graph_format": GRAPH_FORMAT,
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def parse_sources(self) -> dict[str, Path]:
        """The files :meth:`parse` reads (downloading if allowed)."""
        return self.source_files()

    def featurize(
        self,
        preset: str | FeaturizerPreset = "canonical",
        *,
        cache: bool = True,
        **graph_options: Any,
    ) -> tuple[MoleculeDataset, pd.DataFrame]:
        """Graphs and labels of every parsed record, cached on disk.

        Args:
            preset: atom/bond featurizer preset (name or object).
            cache: read/write ``$CHEMGRAPH_HOME/featurized/<name>/<key>/``. The cache is
                checked against its index before it is used (every shard listed in
                ``shards.json`` present, of its size, readable, and together holding the
                index's rows in order); a damaged cache (a missing, truncated or foreign
                shard) is logged as a warning, naming the folder, and built again.
            **graph_options: family options of the graph builder (e.g. ``cutoff``).

        Returns:
            ``(dataset, rejected)``: ``dataset.rows`` index :attr:`ParseResult.table` (whose
            ``row`` column, in families that have one, is the source-file row);
            ``rejected`` lists the parse and featurisation rejects (``row, input, reason``,
            ``file``), ``row`` always the source-file row where the table has one.
        """
        preset = get_preset(preset) if isinstance(preset, str) else preset
        featurizer = {"preset": preset.to_dict(), **graph_options}
        folder = chemgraph_home() / "featurized" / self.card.name / self.cache_key(featurizer)
        if cache and folder.exists():
            try:
                dataset, rejected = _read_cache(folder)
            except DamagedCacheError as error:
                logger.warning("%s; featurizing again to replace it", error)
            else:
                for name, path in self.parse_sources().items():  # said on every read
                    check_source_file(self.card.file(name), path, None)
                logger.info("%s: %d graphs from cache %s", self.card.name, len(dataset), folder)
                return dataset, rejected
        parsed = self.parse()
        dataset, rejected = self._build_graphs(parsed.table, preset, **graph_options)
        if "row" in parsed.table and len(rejected):  # table position -> source-file row
            rejected = rejected.assign(
                row=parsed.table["row"].to_numpy(dtype=np.int64)[rejected["row"].to_numpy()]
            )
        rejected = pd.concat(
            [parsed.rejected.reindex(columns=[*REJECTED_COLUMNS, "file"]), rejected],
            ignore_index=True,
        )
        if cache:
            _write_cache(folder, dataset, rejected, featurizer)
        logger.info("%s: featurised %d graphs, %d rejected", self.card.name, len(dataset),
                    len(rejected))  # fmt: skip
        return dataset, rejected

    def _build_graphs(
        self, table: pd.DataFrame, preset: FeaturizerPreset, **graph_options: Any
    ) -> tuple[MoleculeDataset, pd.DataFrame]:
        """Default: bond graphs from ``table[smiles_column]`` (:func:`featurize_table`)."""
        if graph_options:
            raise ValueError(f"{self.card.name}: unknown graph option(s) {sorted(graph_options)}")
        return featurize_table(
            table, self.smiles_column, self.target_columns, preset, progress=False,
            require_labels=False,
        )  # fmt: skip

    # --- split --------------------------------------------------------------------------
    def split(
        self,
        dataset: MoleculeDataset | None = None,
        method: str | None = None,
        seed: int | None = None,
    ) -> dict[str, np.ndarray]:
        """The card's split protocol (or ``method``) over ``dataset`` (default: the table).

        Methods: ``"random"`` (card ``fractions``, default 80/10/10, seeded), ``"scaffold"``
        (Bemis-Murcko, DeepChem order), and family methods (``"official"`` ...). In random and
        scaffold splits the records of one molecule (:func:`chemgraph.data.duplicate_groups`)
        stay in one split; duplicates found are logged as a warning, which says how many
        molecules a family split puts in more than one split (leakage it was published with).

        Returns:
            ``{"train": idx, "valid": idx, "test": idx}``: sorted ``int64`` positions into
            ``dataset`` (or into the parsed table).
        """
        method = method or self.card.split.get("method", "random")
        seed = self.card.split.get("seed", 0) if seed is None else seed
        table = self.parse().table
        rows = np.arange(len(table)) if dataset is None else np.asarray(dataset.rows)
        smiles = (
            [str(s).strip() for s in table[self.smiles_column].to_numpy(dtype=object)[rows]]
            if self.smiles_column in table
            else None
        )
        groups = None if smiles is None else duplicate_groups(smiles)
        if method == "random":
            fractions = self.card.split.get("fractions", (0.8, 0.1, 0.1))
            split = dict(zip(SPLIT_KEYS, random_split(len(rows), fractions, seed, groups=groups)))
        elif method == "scaffold":
            fractions = self.card.split.get("fractions", (0.8, 0.1, 0.1))
            split = dict(zip(SPLIT_KEYS, scaffold_split(smiles, fractions, groups=groups)))
        else:
            split = self._family_split(rows, method, seed)
        if groups is not None:
            part = np.full(len(rows), -1)
            for number, key in enumerate(SPLIT_KEYS):
                part[split[key]] = number
            if (found := find_duplicates(groups, rows, parts=part)).molecules:
                logger.warning("%s duplicates (%s split): %s", self.card.name, method, found)
        return split

    def _family_split(self, rows: np.ndarray, method: str, seed: int) -> dict[str, np.ndarray]:
        if method == "official" and "split" in self.parse().table:
            names = self.parse().table["split"].to_numpy(dtype=object)[rows]
            return {s: np.flatnonzero(names == s) for s in ("train", "valid", "test")}
        raise ValueError(f"{self.card.name}: unknown split method {method!r}")


# --- cache ------------------------------------------------------------------------------
class DamagedCacheError(DatasetError, ValueError):
    """A featurized-dataset cache folder does not match its index (the message names it)."""


def _write_cache(
    folder: Path, dataset: MoleculeDataset, rejected: pd.DataFrame, featurizer: dict
) -> None:
    """Write shards + index atomically: a temporary folder renamed into place.

    ``shards.json`` lists each shard file with its number of graphs and bytes, so that
    :func:`_read_cache` can tell a complete cache from a damaged one."""
    temporary = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    try:
        shards = []
        for number, start in enumerate(range(0, max(len(dataset), 1), SHARD_SIZE)):
            graphs = dataset.graphs[start : start + SHARD_SIZE]
            if not graphs:
                break
            path = temporary / f"shard_{number:05d}.bin"
            save_shard(path, dgl.batch(graphs), torch.arange(start, start + len(graphs)))
            shards.append({"name": path.name, "graphs": len(graphs), "bytes": path.stat().st_size})
        index = pd.DataFrame({"row": dataset.rows, "smiles": dataset.smiles})
        for j, column in enumerate(dataset.target_columns):
            index[f"label:{column}"] = dataset.labels[:, j].numpy()
        index.to_parquet(temporary / "index.parquet")
        rejected.to_csv(temporary / "rejected.csv", index=False)
        (temporary / "featurizer.json").write_text(json.dumps(featurizer, default=str))
        (temporary / "shards.json").write_text(json.dumps(shards))
        if folder.exists():
            try:
                shutil.rmtree(folder)
            except OSError as error:
                raise DamagedCacheError(
                    f"cannot replace the featurized cache {folder} ({error}); delete that "
                    "folder and run again"
                ) from error
        os.replace(temporary, folder)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _read_cache(folder: Path) -> tuple[MoleculeDataset, pd.DataFrame]:
    """The dataset and rejects of a cache folder, checked against its index.

    Raises:
        DamagedCacheError: a file is missing or unreadable, a shard file is missing, extra
            (foreign), of another size or truncated, or the shards do not hold the index's
            rows ``0..n-1`` in order (the message names the folder and what differs).
    """

    def damaged(what: str) -> DamagedCacheError:
        return DamagedCacheError(
            f"the featurized cache {folder} is damaged ({what}); it is rebuilt, or delete "
            "that folder"
        )

    try:
        index = pd.read_parquet(folder / "index.parquet")
        listed = json.loads((folder / "shards.json").read_text())
        rejected = pd.read_csv(folder / "rejected.csv", keep_default_na=False, dtype={"input": str})
    except (OSError, ValueError) as error:  # a missing file, or one that is not what it was
        raise damaged(f"{type(error).__name__}: {error}") from None
    present = sorted(path.name for path in folder.glob("shard_*.bin"))
    names = [entry["name"] for entry in listed]
    if present != names:
        extra, missing = sorted(set(present) - set(names)), sorted(set(names) - set(present))
        raise damaged(f"shard files missing: {missing}, not in its index: {extra}")
    graphs: list = []
    rows: list[torch.Tensor] = []
    for entry in listed:
        path = folder / entry["name"]
        if path.stat().st_size != entry["bytes"]:
            raise damaged(f"{entry['name']} has {path.stat().st_size} bytes, not {entry['bytes']}")
        try:
            shard_graphs, shard_rows = load_shard(path)
        except ValueError as error:
            raise damaged(str(error)) from None
        graphs.extend(shard_graphs)
        rows.append(shard_rows)
    positions = torch.cat(rows).numpy() if rows else np.zeros(0, dtype=np.int64)
    if not np.array_equal(positions, np.arange(len(index))):
        raise damaged(f"its shards hold {len(positions)} graphs, its index {len(index)} rows")
    targets = [c.removeprefix("label:") for c in index.columns if c.startswith("label:")]
    labels = torch.from_numpy(
        index[[f"label:{t}" for t in targets]].to_numpy(dtype=np.float32, copy=True)
    ).reshape(len(index), len(targets))
    dataset = MoleculeDataset(
        graphs=graphs,
        labels=labels,
        rows=index["row"].to_numpy(),
        smiles=index["smiles"].astype(str).tolist(),
        target_columns=targets,
    )
    return dataset, rejected
