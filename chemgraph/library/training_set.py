"""A ``chemgraph featurize`` folder as the training set of ``chemgraph train -i FOLDER``: the
folder's graphs, rows and rejected records read back as a
:class:`~chemgraph.data.MoleculeDataset` (the graphs are not made again), and the molecule
preparation the folder's molecules had, which the checkpoint then stores.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch

from chemgraph.chem import MoleculePreparation
from chemgraph.data import MoleculeDataset
from chemgraph.data.datasets import DataSource, list_datasets
from chemgraph.featurize import get_preset
from chemgraph.graphs.shards import load_shard
from chemgraph.library.output import read_manifest, shard_name
from chemgraph.train.config import TrainingConfig

__all__ = ["featurize_folder", "prepared_as_the_folder", "read_featurized"]


def featurize_folder(config: TrainingConfig) -> Path | None:
    """``config.data`` as a ``chemgraph featurize`` folder: a folder that is not a registered
    dataset's name (a name wins over a folder in the working directory, as in
    :func:`~chemgraph.data.datasets.read_data`); None when it is not one."""
    folder = Path(config.data)
    return folder if folder.is_dir() and str(config.data) not in list_datasets() else None


def prepared_as_the_folder(config: TrainingConfig) -> TrainingConfig:
    """With ``config.data`` a ``chemgraph featurize`` folder, ``config`` with the folder's
    molecule preparation (standardize, fragments), which the checkpoint then stores, so that
    ``predict`` prepares new molecules as the folder's were; ``config`` itself otherwise.

    Raises:
        ValueError: ``config`` asks for another preparation than the folder's.
    """
    folder = featurize_folder(config)
    if folder is None:
        return config
    options = read_manifest(folder)["options"]
    prepared = MoleculePreparation(
        standardize=options["standardize"], fragments=options.get("fragments", "keep")
    )
    if config.preparation not in (MoleculePreparation(), prepared):
        raise ValueError(
            f"{config.data} holds molecules prepared with standardize {prepared.standardize}, "
            f"fragments {prepared.fragments}, not standardize {config.standardize}, fragments "
            f"{config.fragments} as asked; featurize the data again with `chemgraph featurize "
            f"DATA --standardize {config.standardize} --fragments {config.fragments}`, or "
            "leave out --standardize and --fragments to train on the folder's molecules"
        )
    return replace(config, standardize=prepared.standardize, fragments=prepared.fragments)


def read_featurized(
    config: TrainingConfig,
) -> tuple[DataSource, MoleculeDataset, pd.DataFrame]:
    """The molecules of a ``chemgraph featurize`` folder (``config.data``) with the labels of
    ``config.target_columns`` (its ``--target-columns``), as
    :func:`chemgraph.data.featurize_table` would give them: rows are the source file's rows,
    the folder's ``rejected.csv`` are the rejected records, and a molecule whose targets are
    all missing is rejected as ``"all targets missing: ..."``. ``smiles`` are the folder's
    canonical SMILES (of the prepared molecule).

    Returns:
        ``(source, dataset, rejected)``: ``source.table`` holds ``row``, ``id``, ``smiles`` and
        the targets of every featurized record, ``source.rejected`` the folder's rejects.

    Raises:
        ValueError: not a complete featurize folder, no graphs, graphs with conformers (3D;
            ``train`` fits 2D models), another featurizer preset than the model's, or a target
            that is not one of the folder's label columns.
    """
    folder = Path(config.data)
    manifest = read_manifest(folder)
    options = manifest["options"]
    again = f"featurize the data again with `chemgraph featurize DATA --graphs {config.featurizer}"
    labels = ",".join(config.target_columns)
    if options["graphs"] is None:
        raise ValueError(
            f"{folder} holds no graphs (featurized with --graphs none); {again} "
            f"--target-columns {labels} --output NEW_FOLDER`"
        )
    if options["conformers"]:
        raise ValueError(
            f"{folder} holds 3D graphs with explicit hydrogens (featurized with --conformers "
            f"{options['conformers']}); chemgraph train fits 2D models: {again} "
            f"--target-columns {labels} --output NEW_FOLDER` (without --conformers)"
        )
    wanted = get_preset(config.featurizer)
    if manifest["graph_featurizer"] != json.loads(json.dumps(wanted.to_dict())):
        raise ValueError(
            f"{folder} holds graphs of the {manifest['graph_featurizer']['name']!r} preset but "
            f"{config.model} is trained here on the {wanted.name!r} preset ({wanted.to_dict()}); "
            f"{again} --target-columns {labels} --output NEW_FOLDER`, or pass --featurizer "
            f"{manifest['graph_featurizer']['name']} if {config.model} takes it"
        )
    kept = options.get("label_columns", [])
    missing = [name for name in config.target_columns if name not in kept]
    if missing:
        raise ValueError(
            f"target columns {missing} are not label columns of {folder} (it has "
            f"{kept or 'none'}); {again} --target-columns {labels} --output NEW_FOLDER`"
        )
    graphs: list = []
    tables = []
    for shard in range(manifest["counts"]["shards"]):
        name = shard_name(shard)
        shard_graphs, rows = load_shard(folder / "graphs" / f"{name}.bin")
        features = pq.read_table(
            folder / "features" / f"{name}.parquet",
            columns=["row", "id", "smiles", *config.target_columns],
        ).to_pandas()
        if rows.tolist() != features["row"].tolist():
            raise ValueError(f"{folder}: graphs/{name}.bin and features/{name}.parquet differ")
        graphs += shard_graphs
        tables.append(features)
    table = pd.concat(tables, ignore_index=True)
    rejected = pd.read_csv(folder / "rejected.csv", dtype=str, keep_default_na=False)
    rejected["row"] = rejected["row"].astype(np.int64)
    if config.max_rows is not None:
        keep = (table["row"] < config.max_rows).to_numpy()
        graphs = [graph for graph, kept_row in zip(graphs, keep) if kept_row]
        table = table[keep].reset_index(drop=True)
        rejected = rejected[rejected["row"] < config.max_rows].reset_index(drop=True)
    values = table[config.target_columns].to_numpy(dtype=np.float64)
    unlabelled = np.isnan(values).all(axis=1)
    source = DataSource(
        table=table,
        rows=table["row"].to_numpy(dtype=np.int64),
        rejected=rejected,
        description=f"{folder} (chemgraph featurize output of {manifest['input']})",
    )
    keep = np.flatnonzero(~unlabelled)
    dataset = MoleculeDataset(
        graphs=[graphs[index] for index in keep],
        labels=torch.from_numpy(values[keep]),
        rows=source.rows[keep],
        smiles=table["smiles"].iloc[keep].tolist(),
        target_columns=list(config.target_columns),
    )
    reason = f"all targets missing: {', '.join(config.target_columns)}"
    unused = table[unlabelled]
    not_used = pd.DataFrame(
        {"row": unused["row"], "id": unused["id"], "input": unused["smiles"], "reason": reason}
    )
    return source, dataset, not_used
