"""Predictions for new molecules from a checkpoint alone (what ``chemgraph predict`` runs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from chemgraph.data import MoleculeDataModule, MoleculeDataset, featurize_table, read_table
from chemgraph.featurize import FeaturizerPreset
from chemgraph.models import get_model_spec
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.module import PropertyPredictionModule

__all__ = ["predict_dataset", "predict_table"]


def predict_dataset(
    module: PropertyPredictionModule, dataset: MoleculeDataset, batch_builder, batch_size: int
) -> np.ndarray:
    """Predictions of ``module`` for every molecule of ``dataset``, in order, on the module's
    device.

    Args:
        module: a trained module (put in eval mode here).
        dataset: molecules (their labels are not used).
        batch_builder: the model's collate (:meth:`chemgraph.models.ModelSpec.batch_builder`).
        batch_size: molecules per forward pass.

    Returns:
        ``float32 [N, T]``: target units for regression, probability of class 1 for
        classification.
    """
    loader = MoleculeDataModule(dataset, None, None, batch_builder, batch_size).loader(dataset)
    module.eval()
    device = next(module.parameters()).device
    outputs = []
    with torch.inference_mode():
        for inputs, labels in loader:
            outputs.append(module.predict_step((inputs.to(device), labels), 0).float().cpu())
    num_targets = len(module.hparams.target_columns)
    return torch.cat(outputs).numpy() if outputs else np.empty((0, num_targets), np.float32)


def predict_table(
    checkpoint: str | Path,
    input_path: str | Path,
    output_path: str | Path,
    smiles_column: str = "smiles",
    batch_size: int = 256,
    progress: bool = True,
) -> pd.DataFrame:
    """Predict every row of a table and write it with the predictions.

    Args:
        checkpoint: ``best.ckpt`` written by ``chemgraph train``.
        input_path: CSV/TSV/parquet (optionally gzipped) with a SMILES column.
        output_path: CSV to write.
        smiles_column: the SMILES column of the input.
        batch_size: molecules per forward pass.
        progress: show a progress bar while featurizing.

    Returns:
        The written table: every input column, in input order, one row per input row, then
        ``<target>_pred`` per target (target units for regression, probability of class 1 for
        classification; empty for rejected rows) and ``error`` (empty, or why the row could
        not be featurized).

    Raises:
        FileNotFoundError, ValueError: see :func:`chemgraph.train.checkpoint.load_checkpoint`
            (a reaction-outcome checkpoint is refused); ValueError: no ``smiles_column``.
    """
    module = load_checkpoint(checkpoint, kind="property")
    hparams = module.hparams
    preset = FeaturizerPreset.from_dict(hparams.featurizer)
    table = read_table(input_path, keep_blank_lines=True)
    dataset, rejected = featurize_table(
        table,
        smiles_column,
        [],
        preset,
        fragments=hparams.fragments,
        require_labels=False,
        progress=progress,
    )
    spec = get_model_spec(hparams.model)
    dataset.graphs = spec.transform_graphs(module.model.config, dataset.graphs)
    builder = spec.batch_builder(module.model.config)
    predicted = predict_dataset(module, dataset, builder, batch_size)

    result = table.copy()
    for index, target in enumerate(hparams.target_columns):
        column = np.full(len(table), np.nan)
        column[dataset.rows] = predicted[:, index]
        result[f"{target}_pred"] = column
    errors = pd.Series("", index=range(len(table)), dtype=object)
    errors.iloc[rejected["row"].to_numpy(dtype=int)] = rejected["reason"].to_numpy()
    result["error"] = errors.to_numpy()
    Path(output_path).parent.mkdir(parents=True, exist_ok=True)
    result.to_csv(output_path, index=False)
    return result
