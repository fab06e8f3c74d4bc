"""Which task `train` picks for targets given without `--task`, and the note it logs."""

import logging

import torch

from chemgraph.jobs.train import infer_task


def test_task_inference_rules(caplog):
    caplog.set_level(logging.INFO, logger="chemgraph")
    nan = float("nan")
    binary = torch.tensor([[0.0, 1.0], [1.0, nan], [nan, 0.0], [1.0, 1.0]])
    assert infer_task(binary, ["a", "b"]) == "classification"
    assert "target 'a', 'b' holds only 0 and 1" in caplog.text
    caplog.clear()
    mixed = torch.tensor([[0.0, 0.5], [1.0, 2.0]])
    assert infer_task(mixed, ["a", "b"]) == "regression"
    assert "target 'a' holds only 0 and 1 but 'b' does not: training regression" in caplog.text
    caplog.clear()
    continuous = torch.tensor([[0.0], [2.0], [nan]])
    assert infer_task(continuous, ["y"]) == "regression"
    assert caplog.text == ""  # no note when nothing is 0/1
    assert infer_task(torch.tensor([[nan], [nan]]), ["y"]) == "regression"
