"""EdgeBank's memory modes on a hand-made history: which pairs score 1, the window's bounds, the threshold."""

import numpy as np
import pytest
import torch

from dygsched.errors import ConfigError
from dygsched.models.edgebank import EdgeBank

# (src, dst, t) in stream order: (0,1) three times, (2,3) twice, (4,5) once, (1,0) once
HISTORY = [(0, 1, 0.0), (2, 3, 1.0), (0, 1, 2.0), (4, 5, 3.0), (2, 3, 5.0), (0, 1, 8.0), (1, 0, 10.0)]


def history():
    src, dst, t = zip(*HISTORY, strict=True)
    return torch.tensor(src), torch.tensor(dst), torch.tensor(t, dtype=torch.float64)


def scores(bank, pairs, proportion=0.15):
    src = torch.tensor([p[0] for p in pairs])
    dst = torch.tensor([p[1] for p in pairs])
    return bank(*history(), src, dst, proportion=proportion).tolist()


PAIRS = [(0, 1), (2, 3), (4, 5), (1, 0), (3, 2), (6, 7)]


def test_unlimited_remembers_every_directed_pair():
    assert scores(EdgeBank(8), PAIRS) == [1, 1, 1, 1, 0, 0]  # (3, 2) was never seen: the memory is directed


def test_repeat_threshold_keeps_pairs_seen_at_least_the_mean_count():
    # counts 3, 2, 1, 1: mean 1.75, so (0, 1) and (2, 3) stay
    assert scores(EdgeBank(8, memory="repeat_threshold"), PAIRS) == [1, 1, 0, 0, 0, 0]


def test_fixed_proportion_window_starts_at_the_quantile_and_is_inclusive():
    times = np.array([t for *_, t in HISTORY])
    start = np.quantile(times, 1 - 0.3)  # 5.6: only the events at 8 and 10 are inside
    assert 5.0 < start < 8.0
    assert scores(EdgeBank(8, memory="time_window"), PAIRS, proportion=0.3) == [1, 0, 0, 1, 0, 0]
    # the configured proportion wins over the phase's; at 1 the whole history is inside (both bounds inclusive)
    assert scores(EdgeBank(8, memory="time_window", time_window_proportion=1.0), PAIRS, proportion=0.3) == [1, 1, 1, 1, 0, 0]


def test_repeat_interval_window_is_the_mean_gap_of_repeated_pairs_over_all_pairs():
    # (0,1): gaps 2 and 6, mean 4; (2,3): gap 4; singletons 0: window (4 + 4) / 4 pairs = 2, so [8, 10]
    bank = EdgeBank(8, memory="time_window", time_window_mode="repeat_interval")
    assert bank._mean_repeat_interval(bank._keys(*history()[:2]), history()[2]) == pytest.approx(2.0)
    assert scores(bank, PAIRS) == [1, 0, 0, 1, 0, 0]


def test_several_negatives_per_event_and_an_empty_history():
    bank = EdgeBank(8)
    out = bank(*history(), torch.tensor([0, 2]), torch.tensor([[1, 5, 3], [3, 3, 0]]))
    assert out.tolist() == [[1, 0, 0], [1, 1, 0]]
    empty = torch.zeros(0, dtype=torch.int64)
    assert bank(empty, empty, empty.double(), torch.tensor([0]), torch.tensor([1])).tolist() == [0]
    assert list(bank.parameters()) == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"memory": "forever"}, "model.memory must be one of"), ({"time_window_mode": "x"}, "model.time_window_mode")],
)
def test_bad_modes_are_config_errors(settings, message):
    with pytest.raises(ConfigError, match=message):
        EdgeBank(8, **settings)
