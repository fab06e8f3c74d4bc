"""Predictions for new molecules from a checkpoint alone (what ``chemgraph predict`` runs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from chemgraph.data import MoleculeDataModule, featurize_table, read_table
from chemgraph.featurize import FeaturizerPreset
from chemgraph.models import get_model_spec
from chemgraph.train.module import PropertyPredictionModule

__all__ = ["load_checkpoint", "predict_table"]


def load_checkpoint(path: str | Path) -> PropertyPredictionModule:
    """Rebuild a trained module from a ``best.ckpt``, in eval mode, on the CPU.

    Loaded with ``torch.load(..., weights_only=True)``: the checkpoint's hyper-parameters hold
    the model, featurizer and target-scaler configuration, so nothing else is needed.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not a chemgraph checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a file that is not a checkpoint
        raise ValueError(f"{path} is not a readable PyTorch checkpoint: {error}") from error
    if not isinstance(checkpoint, dict) or not {"hyper_parameters", "state_dict"} <= set(
        checkpoint
    ):
        raise ValueError(f"{path} is not a chemgraph checkpoint (no hyper_parameters/state_dict)")
    parameters = checkpoint["hyper_parameters"]
    if "vocabulary" in parameters:
        raise ValueError(
            f"{path} is a reaction-outcome (GRAT) checkpoint: use it with `chemgraph react`"
        )
    try:
        module = PropertyPredictionModule(**parameters)
    except TypeError as error:  # another Lightning module's checkpoint
        raise ValueError(f"{path} is not a chemgraph train checkpoint: {error}") from error
    module.load_state_dict(checkpoint["state_dict"])
    return module.eval()


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
    """
    module = load_checkpoint(checkpoint)
    hparams = module.hparams
    preset = FeaturizerPreset.from_dict(hparams.featurizer)
    table = read_table(input_path)
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
    loader = MoleculeDataModule(dataset, None, None, builder, batch_size=batch_size).loader(dataset)
    outputs = []
    with torch.inference_mode():
        for batch in loader:
            outputs.append(module.predict_step(batch, 0))
    num_targets = len(hparams.target_columns)
    predicted = torch.cat(outputs).numpy() if outputs else np.empty((0, num_targets))

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
