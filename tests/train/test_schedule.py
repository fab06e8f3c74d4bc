"""The learning-rate schedule of PropertyPredictionModule and the protocols of TrainingConfig."""

from __future__ import annotations

import math

import pytest
import yaml

from chemgraph.train.config import PROTOCOLS, TrainingConfig
from chemgraph.train.module import cosine_learning_rate


def test_cosine_schedule_hand_values():
    # peak 1e-3, warm-up over the first 10%, floor 1% of the peak
    peak, warmup, floor = 1e-3, 0.1, 0.01
    assert cosine_learning_rate(0.05, peak, warmup, floor) == pytest.approx(5e-4)
    assert cosine_learning_rate(0.1, peak, warmup, floor) == pytest.approx(1e-3)
    # halfway through the decay (progress 0.55): floor + (1 - floor) / 2 of the peak
    assert cosine_learning_rate(0.55, peak, warmup, floor) == pytest.approx(1e-3 * 0.505)
    # u = 0.25: ½(1 + cos(π/4)) = 0.853553...
    expected = 1e-3 * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi / 4)))
    assert cosine_learning_rate(0.325, peak, warmup, floor) == pytest.approx(expected)
    assert cosine_learning_rate(1.0, peak, warmup, floor) == pytest.approx(1e-5)
    assert cosine_learning_rate(3.0, peak, warmup, floor) == pytest.approx(1e-5)  # clamped
    assert cosine_learning_rate(0.0, peak, 0.0, floor) == pytest.approx(1e-3)  # no warm-up


def _config(**settings):
    return TrainingConfig.from_dict(
        {"data": "x.csv", "target_columns": ["y"], "out": "o", **settings}
    )


def test_protocols_fill_only_what_is_not_given():
    default = _config()
    assert default.protocol == "default"
    for name, value in PROTOCOLS["default"].items():  # ESA's own batch size first
        assert getattr(default, name) == (64 if name == "batch_size" else value)
    paper = _config(protocol="paper", batch_size=32)
    assert (paper.learning_rate, paper.lr_schedule, paper.gradient_clip) == (1e-4, "plateau", 0.5)
    assert (paper.early_stopping_patience, paper.lr_patience) == (30, 15)
    assert paper.batch_size == 32  # given explicitly: wins over the protocol


def test_config_yaml_round_trip_keeps_the_values_used(tmp_path):
    written = _config(protocol="paper", learning_rate=3e-4).to_dict()
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(written))
    assert TrainingConfig.from_yaml(path).to_dict() == written


def test_unknown_protocol_and_schedule_are_refused():
    from chemgraph.errors import ConfigError

    with pytest.raises(ConfigError, match="protocol must be one of"):
        _config(protocol="fast")
    with pytest.raises(ConfigError, match="lr_schedule must be one of"):
        _config(lr_schedule="linear")
