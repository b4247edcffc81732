"""``+protocol=dyglib | tgb | utg``: each preset expands to the settings its documented runs use.

DyGLib's and UTG's presets are compared with the overrides the paper targets run
(``table-stream-accuracy``'s ``DYGLIB_PROTOCOL``, ``table-unified``'s snapshot-model runs), so a
change to either side fails here; TGB's with the settings its config file cites."""

import pytest

from dygsched.engine.run_config import RunConfig
from dygsched.launch.compose import compose_run
from dygsched.paper.bench import stream_accuracy, unified
from dygsched.typed_config import differences
from tests.cli_process import run_dygsched

# what a target sets that is not its protocol: how it keeps its folders small
OPERATIONAL = {"checkpoint=false", "metrics.count_flops=false"}


def composed(*overrides: str) -> RunConfig:
    return compose_run(list(overrides))


def same_run(preset: list[str], explicit: list[str]) -> None:
    differing = differences(composed(*preset), composed(*explicit))
    assert not differing, differing


def test_dyglib_is_table_stream_accuracys_protocol():
    data = ["dataset=collegemsg", "model=tgn"]
    protocol = [o for o in stream_accuracy.DYGLIB_PROTOCOL if o not in OPERATIONAL]
    same_run(["+protocol=dyglib", *data], [*data, *protocol, "epochs=100"])


def test_utg_is_table_unifieds_snapshot_protocol():
    data = ["dataset=collegemsg", f"dataset.snapshot={unified.CUTS['collegemsg']}", "model=gclstm"]
    protocol = [
        *(o for o in unified.SHARED if o not in OPERATIONAL),
        *unified.UTG_PROCEDURE,
        *unified._training(*unified.SNAPSHOT_TRAINING),
        f"eval.one_vs_many={unified.ONE_VS_MANY}",
    ]
    same_run(["+protocol=utg", *data], [*data, *protocol])


def test_tgb_is_tgbs_example_scripts_settings():
    data = ["dataset=bipartite", "model=tgn"]
    tgb = ["sched=single", "world_size=1", "sched.batch_size=200", "split.by=time", "eval.one_vs_many=1000"]
    same_run(["+protocol=tgb", *data], [*data, *tgb, "epochs=50", "early_stop.metric=val.mrr", "early_stop.patience=5"])


@pytest.mark.parametrize("name", ["dyglib", "tgb", "utg"])
def test_a_strategy_or_setting_given_beside_a_preset_wins(name):
    assert composed(f"+protocol={name}", "sched=depcache", "epochs=3").sched.name == "depcache"
    assert composed(f"+protocol={name}", "epochs=3").epochs == 3


def test_the_plain_metric_name_under_several_samplers_and_the_spelling_when_ambiguous(tmp_path):
    from dygsched.errors import ConfigError
    from dygsched.metrics.early_stop import watched_metric

    recorded = {"loss", "ap[random-destinations]", "ap[historical]", "auc[random-destinations]", "auc[historical]"}
    assert watched_metric("val.ap", recorded) == "ap[random-destinations]"
    assert watched_metric("val.ap[historical]", recorded) == "ap[historical]"
    with pytest.raises(ConfigError, match=r"""quoted: "early_stop.metric='val.mrr\["""):
        watched_metric("val.mrr", {"loss", "mrr[historical]", "mrr[inductive]"})
    # through the CLI: DyGLib's preset with the docs' plain val.ap passes the checks (refused only by
    # world_size=2 afterwards, so nothing trains); a metric it does not record names the spelling
    data = [
        "dataset=bipartite",
        "dataset.num_users=120",
        "dataset.num_items=30",
        "dataset.num_events=1500",
        "model=edgebank",
        f"results_dir={tmp_path / 'results'}",
    ]
    plain = run_dygsched("run", "+protocol=dyglib", *data, "early_stop.metric=val.ap", "world_size=2", cwd=tmp_path)
    assert "early_stop" not in plain.stderr and "set world_size=1" in plain.stderr, plain.stderr
    wrong = run_dygsched("run", "+protocol=dyglib", *data, "early_stop.metric=val.mrr", cwd=tmp_path)
    line = wrong.stderr.strip().splitlines()[-1]
    assert wrong.returncode == 1 and "early_stop.metric=val.mrr: sched=single does not record it" in line
    assert """a bracketed name goes quoted: "early_stop.metric='val.""" in line
