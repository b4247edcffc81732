"""table-unified: each run at its best validation MRR, the test's time per snapshot and per pair,
UTG's figures beside the CollegeMsg rows, and the verdict against them."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from dygsched.paper.bench import unified
from dygsched.paper.published import rows_of
from dygsched.paper.verdict import judge
from tests.paper.bench.runs import metric_rows

UTG_TEST_PAIRS = (169, 129, 117, 93)  # UTG's test keys on UCI weekly, snapshots 25-28 (508 in all)


def test_an_event_models_pairs_after_an_earlier_batch_of_their_own_snapshot_are_counted():
    assert unified.same_snapshot_share((3, 5), 4) == pytest.approx(4 / 8)  # the second batch starts inside snapshot 2
    assert unified.same_snapshot_share((3, 5), 8) == 0.0  # one batch: every pair reads the state before the test
    assert unified.same_snapshot_share((4, 4), 4) == 0.0  # batches on the snapshots' boundaries


@pytest.mark.slow  # cuts CollegeMsg: 5-30 s on two shared cores
def test_collegemsg_weekly_in_windows_of_one_tests_utgs_pairs():
    """Our split of CollegeMsg cut weekly, one snapshot per unit, is UTG's: its test snapshots score
    the 508 pairs of UTG's test file, in the same four snapshots."""
    from dygsched.launch.compose import compose_run

    config = compose_run(["dataset=collegemsg", "dataset.snapshot=weekly", "window=1", "task=link"])
    assert unified.test_pairs(config) == UTG_TEST_PAIRS


RUNS = {  # run -> (model, sched, seed, validation MRR per epoch, test MRR per epoch, test seconds per epoch)
    "g0": ("gclstm", "psg", 0, [0.10, 0.14, 0.12], [0.08, 0.11, 0.13], [0.20, 0.30, 0.25]),  # best at 1: 0.11
    "g1": ("gclstm", "psg", 1, [0.15, 0.12, 0.11], [0.09, 0.12, 0.12], [0.25, 0.25, 0.25]),  # best at 0: 0.09
    "e0": ("evolvegcn_o", "psg", 0, [0.10, 0.11, 0.12], [0.10, 0.11, 0.12], [0.30, 0.30, 0.30]),
    "t0": ("tgn", "single", 0, [0.10, 0.12, 0.11], [0.07, 0.09, 0.10], [1.00, 1.20, 1.10]),
    "t1": ("tgn", "single", 1, [0.10, 0.12, 0.11], [0.07, 0.08, 0.10], [1.00, 1.00, 1.00]),
    "b0": ("edgebank", "single", 0, [0.16], [0.15], [0.40]),
    "x0": ("tgn", "single", 0, [0.30], [0.20], [0.50]),  # on our Enron, which is not UTG's: nothing beside it
}
NOT_UTGS = {"x0": ("events", "monthly")}


def write_runs(root) -> None:
    from dygsched.launch.compose import compose_run
    from dygsched.metrics.runs_table import append_run

    folder = root / unified.UNIFIED_DIR
    configs = {  # each strategy's run as its config.yaml keeps it (the test pairs are given: the data is not read)
        "psg": compose_run(["task=link", "link.procedure=utg"]).to_container(),
        "single": compose_run(["dataset=events", "model=tgn", "sched=single", "sched.batch_size=200"]).to_container(),
    }
    for run_id, (model, sched, seed, val, test, seconds) in RUNS.items():
        (folder / run_id).mkdir(parents=True)
        rows = []
        for epoch, (v, t, s) in enumerate(zip(val, test, seconds)):
            rows += [(epoch, -1, 0, "val", "mrr", v), (epoch, -1, 0, "test", "mrr", t), (epoch, -1, 0, "test", "eval_time_s", s)]
            rows += [(epoch, -1, 0, "test", "hits@10", 2 * t), (epoch, -1, 0, "train", "epoch_time_s", 3.0)]
        metric_rows(run_id, rows).to_parquet(folder / run_id / "metrics.parquet")
        (folder / run_id / "config.yaml").write_text(yaml.safe_dump(configs[sched]))
        dataset, cut = NOT_UTGS.get(run_id, ("collegemsg", "weekly"))
        summary = {"run_id": run_id, "status": "ok", "dataset": dataset, "snapshot": cut, "model": model}
        append_run(folder, {**summary, "sched": sched, "seed": seed})


def test_each_run_is_read_at_its_best_validation_mrr_and_sits_beside_utgs_figures(tmp_path, monkeypatch):
    monkeypatch.setattr(unified, "test_pairs", lambda config: UTG_TEST_PAIRS)
    write_runs(tmp_path)
    unified.build_unified(tmp_path)
    per_run = pd.read_csv(tmp_path / unified.UNIFIED_RUNS_CSV)
    per_run = per_run[per_run.dataset == "collegemsg"].set_index(["model", "seed"])
    assert per_run.loc[("gclstm", 0), "test_mrr"] == pytest.approx(0.11) and per_run.loc[("gclstm", 1), "test_mrr"] == 0.09
    assert per_run.loc[("gclstm", 0), "test_time_s"] == pytest.approx(0.25)  # the median over the epochs
    assert per_run.loc[("gclstm", 0), "test_ms_per_snapshot"] == pytest.approx(250 / 4)
    assert per_run.loc[("gclstm", 0), "test_ms_per_pair"] == pytest.approx(250 / 508)
    # batches of 200: pairs 200-297 (snapshot 26's, begun in the first batch) and 400-414 (27's, begun in the second)
    assert per_run.loc[("tgn", 0), "same_snapshot_share"] == pytest.approx((98 + 15) / 508)
    assert pd.isna(per_run.loc[("gclstm", 0), "same_snapshot_share"])  # a snapshot model feeds whole snapshots
    full_table = pd.read_csv(tmp_path / unified.UNIFIED_CSV)
    enron = full_table[full_table.dataset == "events"]
    assert len(enron) == 1 and enron.utg_test_mrr.isna().all() and enron.utg_label.isna().all()
    table = full_table[full_table.dataset == "collegemsg"].set_index("model")
    assert table.loc["gclstm", "test_mrr_mean"] == pytest.approx(0.10) and table.loc["gclstm", "seeds"] == 2
    assert table.loc["gclstm", "utg_test_mrr"] == 0.093 and table.loc["tgn", "utg_test_time_s"] == 1.07
    assert table.loc["edgebank", "utg_label"] == "EdgeBank" and table.loc["evolvegcn_o", "utg_label"] == "EGCN"
    tables = {path: pd.read_csv(tmp_path / path) for path in unified.UNIFIED.tables}
    shape = unified.shape_unified(tables)
    assert list(shape.frame.columns) == [unified.MRR_COLUMN, unified.TIME_COLUMN]
    assert set(shape.frame.index) == {"GCLSTM", "EGCN", "TGN", "EdgeBank"}
    headlines = {h.label: h for h in unified.headlines_unified(tables, rows_of(unified.UNIFIED_NAME))}
    time_ratio = headlines["GCLSTM's test time over TGN's on UCI"]
    assert time_ratio.paper == pytest.approx(0.35 / 1.07) and time_ratio.ours == pytest.approx((0.25 / 1.1 + 0.25 / 1.0) / 2)
    assert headlines["TGN test MRR on UCI"].spread == (0.08, 0.09) and not headlines["TGN test MRR on UCI"].ratio
    verdict = judge(shape, rows_of(unified.UNIFIED_NAME), tuple(headlines.values()))
    assert verdict.order is not None and verdict.cells == 8  # four models in each of two columns
    assert verdict.word in ("reproduced", "partly", "not")
    reading = unified.read_unified(tables)
    assert "collegemsg weekly (UTG's UCI)" in reading and "[UTG 0.093]" in reading and "TGN over them" in reading
