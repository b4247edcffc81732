"""bench-vs-pygt and bench-tgn-pyg: their readings, and bad input refused before anything runs."""

from __future__ import annotations

import pandas as pd
import pytest

from dygsched.paper.bench import tgn_pyg, vs_pygt


def test_vs_pygt_and_tgn_pyg_readings_give_dygscheds_ratio():
    table = pd.DataFrame({"dataset": ["twitter_tennis", "synthetic20k"], "model": ["tgcn", "wdgcn"], "ratio": [0.5, 1.25]})
    assert vs_pygt.read_vs_pygt({"bench_vs_pygt.csv": table}) == (
        "dygsched's time per training group against the plain PyG-Temporal loop: "
        "tgcn on twitter_tennis 0.50x, wdgcn on synthetic20k 1.25x (below 1x: dygsched faster)"
    )
    tgn = pd.DataFrame({"implementation": ["pyg_modules", "dygsched"], "epoch_s": [2.0, 2.6], "ratio": [1.3, 1.3]})
    assert (
        tgn_pyg.read_tgn_pyg({"bench_tgn_pyg.csv": tgn})
        == "the reference TGN takes 1.30x the epoch time of a TGN of PyG's modules"
    )


def test_vs_pygt_refuses_an_unknown_model_before_it_runs_anything(tmp_path):
    from dygsched.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown model 'gcn'"):
        vs_pygt.build_vs_pygt(
            tmp_path, datasets=("twitter_tennis",), models=("gcn",), epochs=1, hidden=8, layers=1, window=4, seed=0
        )
    assert vs_pygt.model_width("evolvegcn_h", 12, 64) == 12 and vs_pygt.model_width("tgcn", 12, 64) == 64
