import pytest

from dygsched.metrics.recorder import MetricRecorder
from dygsched.metrics.summary import summarize


def frame():
    rows = []
    for rank, busy in ((0, [5.0, 2.0, 2.0, 2.0]), (1, [1.0, 1.0, 1.6, 1.0])):
        rec = MetricRecorder("r", rank)
        for epoch in range(4):
            rec.add(epoch, "train", "busy_s", busy[epoch])
            rec.add(epoch, "train", "wait_s", 10.0)  # waits never count towards imbalance
            rec.add(epoch, "train", "epoch_time_s", [9.0, 3.0, 4.0, 5.0][epoch])
            rec.add(epoch, "train", "bytes_allreduce", 100)
            rec.add(epoch, "train", "peak_rss_bytes", 1000 + rank + epoch)
            if rank == 0:
                rec.add(epoch, "train", "loss", 1.0 / (epoch + 1))
                rec.add(epoch, "test", "loss", 0.3)
                rec.add(epoch, "test", "mse", 0.3 - epoch * 0.01)
        rows += rec.rows
    return MetricRecorder.frame(rows)


def test_summary_figures():
    summary = summarize(frame(), {"run_id": "r", "status": "ok"})
    assert summary["epoch_time_s"] == 4.0  # median of epochs after the first
    assert summary["imbalance_ratio"] == pytest.approx(2.0)  # median of 2.0, 1.25, 2.0
    assert summary["final_train_loss"] == 0.25
    assert summary["eval"] == {"split": "test", "metric": "mse", "value": pytest.approx(0.27)}
    assert summary["comm_bytes_per_epoch"] == {"allreduce": 200, "hidden_state": 0, "features": 0, "host_to_device": 0, "halo": 0}
    assert summary["peak_rss_bytes"] == 1004  # the largest over epochs and ranks
    assert summary["gpu_peak_allocated_bytes"] is None  # a CPU run has no GPU figure: missing, not 0
    assert summary["saved_for_backward_bytes"] is None  # not counted by this run


def test_a_metric_not_measured_is_missing_with_its_reason_never_zero():
    rec = MetricRecorder("r", 0)
    for epoch in range(2):
        rec.add(epoch, "train", "epoch_time_s", 1.0)
        rec.add_missing(epoch, "train", "conv_flops", "metrics.count_flops=false")
        rec.add_missing(epoch, "train", "peak_rss_bytes", "cannot reset")
    assert rec.missing == {"conv_flops": "metrics.count_flops=false", "peak_rss_bytes": "cannot reset"}
    summary = summarize(MetricRecorder.frame(rec.rows), {"run_id": "r", "missing": rec.missing})
    assert summary["conv_flops_per_epoch"] is None and summary["peak_rss_bytes"] is None
    assert summary["missing"]["conv_flops"] == "metrics.count_flops=false"


def test_a_strategys_own_byte_kind_joins_the_communication_figures():
    rec = MetricRecorder("r", 0)
    for epoch in range(2):
        rec.add(epoch, "train", "epoch_time_s", 1.0)
        rec.add(epoch, "train", "bytes_feature_fetch", 300)
    summary = summarize(MetricRecorder.frame(rec.rows), {"run_id": "r", "status": "ok"})
    assert summary["comm_bytes_per_epoch"]["feature_fetch"] == 300
    assert summary["comm_bytes_per_epoch"]["hidden_state"] == 0


def test_each_memory_measure_keeps_its_own_name():
    """The GPU allocator's peak, the peak resident set and the bytes saved for the backward are
    three figures: a run that measures some never shows them under another's name."""
    rec = MetricRecorder("r", 0)
    for epoch in range(2):
        rec.add(epoch, "train", "epoch_time_s", 1.0)
        rec.add(epoch, "train", "gpu_peak_allocated_bytes", 500 + epoch)
        rec.add(epoch, "train", "peak_rss_bytes", 9000)
        rec.add(epoch, "train", "saved_for_backward_bytes", 70)
    summary = summarize(MetricRecorder.frame(rec.rows), {"run_id": "r", "status": "ok"})
    measures = ("gpu_peak_allocated_bytes", "peak_rss_bytes", "saved_for_backward_bytes")
    assert [summary[m] for m in measures] == [501, 9000, 70]
    assert "peak_mem_bytes" not in summary


def test_a_samplers_loss_is_not_the_runs_evaluation_metric():
    rec = MetricRecorder("r", 0)
    rec.add(0, "train", "epoch_time_s", 1.0)
    for name, value in (("loss[random]", 0.7), ("ap[random]", 0.8), ("loss[historical]", 0.9), ("ap[historical]", 0.6)):
        rec.add(0, "test", name, value)
    summary = summarize(MetricRecorder.frame(rec.rows), {"run_id": "r", "status": "ok"})
    assert summary["eval"] == {"split": "test", "metric": "ap[random]", "value": pytest.approx(0.8)}
