"""TGB's persistent forecast and moving average (its ``modules/heuristics.py``), row by row."""

from __future__ import annotations

import pytest
import torch

from dygsched.errors import ConfigError
from dygsched.models.persistent_forecast import PersistentForecast


def tgb_moving_average(labels: list[torch.Tensor], window: int = 7) -> torch.Tensor:
    """TGB's ``MovingAverage.update_dict`` folded over one node's labels, written out."""
    state = labels[0].double()
    for label in labels[1:]:
        state = (state * (window - 1) + label.double()) / window
    return state


def test_each_node_keeps_its_last_label_or_tgbs_moving_average():
    rng = torch.Generator().manual_seed(0)
    nodes = torch.tensor([3, 1, 3, 3, 0, 1])
    labels = torch.rand(6, 5, generator=rng)
    last, average = PersistentForecast(4, mode="last"), PersistentForecast(4, mode="moving_average")
    for model in (last, average):
        model.reset(5)
        assert torch.equal(model.predict(torch.tensor([2, 3])), torch.zeros(2, 5))  # nothing seen: zeros, as TGB's
        model.update(nodes[:3], labels[:3])  # a node twice in one update folds its rows in order
        model.update(nodes[3:], labels[3:])
    torch.testing.assert_close(
        last.predict(torch.tensor([3, 1, 0, 2])), torch.stack([labels[3], labels[5], labels[4], torch.zeros(5)])
    )
    want = torch.stack([tgb_moving_average([labels[0], labels[2], labels[3]]), tgb_moving_average([labels[1], labels[5]])])
    torch.testing.assert_close(average.predict(torch.tensor([3, 1])), want.float())
    assert list(last.parameters()) == [] and last.state_dict() == {}


def test_a_bad_mode_or_window_is_one_line():
    with pytest.raises(ConfigError, match="model.mode must be one of last, moving_average"):
        PersistentForecast(3, mode="median")
    with pytest.raises(ConfigError, match="model.window must be a whole number"):
        PersistentForecast(3, mode="moving_average", window=0)
