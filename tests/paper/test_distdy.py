"""DistDy's targets: each reading says what its table shows, each shape and headline lays ours beside
the paper's numbers (ours equal to the paper's reproduces, ours reversed does not), and the storage
table builds at smoke size."""

import inspect

import pandas as pd
import pytest

from dygsched.paper import distdy
from dygsched.paper.build import build_target
from dygsched.paper.published import rows_of
from dygsched.paper.target import PaperTarget
from dygsched.paper.verdict import judge


def _verdict(paper_target: PaperTarget, tables: dict[str, pd.DataFrame]) -> str:
    published = rows_of(paper_target.name)
    shape = paper_target.shape(tables) if paper_target.shape else None
    headlines = paper_target.headlines(tables, published) if paper_target.headlines else ()
    return judge(shape, published, tuple(headlines)).word


def _by_label(headlines) -> dict:
    return {headline.label: headline for headline in headlines}


@pytest.mark.parametrize("paper_target", distdy.TARGETS, ids=lambda t: t.name)
def test_every_builder_takes_exactly_its_settings(paper_target):
    """The settings printed in the recipe are the builder's keyword arguments, all of them, at both sizes."""
    keywords = {name for name, p in inspect.signature(paper_target.build).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert keywords == set(paper_target.settings.full)
    assert set(paper_target.settings.smoke) <= keywords
    assert paper_target.paper == distdy.SECTION.key


# ---- storage ----------------------------------------------------------------------------------------------
def _storage_table(sparse: float, dense: float, best: float, few_changes: float) -> pd.DataFrame:
    settings = (
        distdy.storage.density_setting("sparse"),
        distdy.storage.density_setting("dense"),
        distdy.storage.feature_change_setting(0.1),
        "sparse change",
    )
    return pd.DataFrame(
        {
            "setting": settings,
            "saved_both": [sparse, dense, 0.05, best],
            "saved_features_only": [0.5, 0.4, few_changes, 0.8],
            "saved_edges_only": [0.02, 0.1, 0.03, 0.05],
        }
    )


def test_storage_reading_gives_each_span_of_savings():
    text = distdy.storage.read_storage({"distdy/storage.csv": _storage_table(0.471, 0.366, 0.922, 0.614)})
    assert text == (
        "additive storage saves 5.0% to 92.2% of whole snapshots (features only 40.0% to 80.0%, "
        "edges only 2.0% to 10.0%) over 4 settings"
    )


def test_storage_headlines_are_the_papers_savings_in_percent():
    tables = {"distdy/storage.csv": _storage_table(0.471, 0.366, 0.922, 0.614)}
    headlines = _by_label(distdy.storage.headlines_storage(tables, rows_of("table-distdy-storage")))
    sparse = headlines["storage saved (%), sparse graph (features and edges)"]
    assert (sparse.paper, sparse.ours, sparse.ratio) == (47.1, pytest.approx(47.1), False)
    assert headlines["storage saved (%), the best setting (features and edges)"].paper == 92.2
    assert headlines["feature storage saved (%), 10% feature changes"].ours == pytest.approx(61.4)
    assert _verdict(distdy.storage.STORAGE, tables) == "reproduced"
    assert _verdict(distdy.storage.STORAGE, {"distdy/storage.csv": _storage_table(0.1, 0.08, 0.2, 0.1)}) == "not"
    missing = _storage_table(0.471, 0.366, 0.922, 0.614).iloc[[0]]
    assert (
        _by_label(distdy.storage.headlines_storage({"s.csv": missing}, rows_of("table-distdy-storage")))[
            "storage saved (%), dense graph (features and edges)"
        ].ours
        is None
    )


# ---- partition ----------------------------------------------------------------------------------------------
def _partition_table(seconds) -> pd.DataFrame:
    """Two K per graph, each partitioner's seconds (split between partitioning and storing) from ``seconds(data, name)``."""
    rows = []
    for data in ("Uni", "Ex"):
        for stores in (4, 8):
            for name in ("distdy", "distdy+messages", "metis", "hash", "greedy", "metis_layer"):
                total = seconds(data, name)
                rows.append(
                    {
                        "data": data,
                        "stores": stores,
                        "partitioner": name,
                        "partition_s": total / 4,
                        "store_s": 3 * total / 4,
                        "cut_weight_share": 0.3 if name.startswith("distdy") else {"metis": 0.4, "hash": 0.6}.get(name, 0.5),
                        "balance_bytes": 1.0,
                        "balance_targets": 1.1,
                        "median_passes": 12.0 if name.startswith("distdy") else float("nan"),
                        "partition_vs_metis": 0.5,
                        "partition_vs_metis_layer": 0.25,
                        "out_of_memory": name == "greedy",
                    }
                )
    return pd.DataFrame(rows)


def _paper_seconds(data: str, name: str) -> float:
    paper = rows_of("table-distdy-partition").set_index(["row", "column"]).value
    label = distdy.common.PARTITIONER_LABELS.get(name.split("+")[0])
    return float(paper.get((distdy.common.DATA_LABELS[data], label), 200.0))  # Ex500K's greedy ran out of memory in the paper


def test_partition_reading_names_the_cut_balance_and_out_of_memory():
    text = distdy.partition.read_partition({"distdy/partition.csv": _partition_table(_paper_seconds)})
    assert text.startswith(
        "Uni, K=4: DistDy cuts 30.0% of the fetch weight against 40.0% to 60.0%, largest store over mean 1.00 in bytes and "
        "1.10 in targets, median 12 passes, partitioning 0.50x METIS's and 0.25x METIS-layer's time; out of memory: greedy"
    )
    assert "Ex, K=8:" in text


def test_partition_shape_is_table_3_and_equal_numbers_reproduce():
    tables = {"distdy/partition.csv": _partition_table(_paper_seconds)}
    shape = distdy.partition.shape_partition(tables)
    assert list(shape.frame.index) == ["Uni500K", "Ex500K"]
    assert list(shape.frame.columns) == ["Metis", "Hash", "Greedy", "Metis-layer", "DistDy"]
    assert shape.frame.loc["Uni500K", "Metis-layer"] == pytest.approx(119.93)  # partition and store, the median over K
    assert (shape.paper_ref, shape.paper_dataset, shape.rank_within, shape.unit) == ("Table 3", "Uni500K", "rows", "s")
    headlines = _by_label(distdy.partition.headlines_partition(tables, rows_of("table-distdy-partition")))
    layer = headlines["Metis-layer over DistDy, time to partition and store, Uni500K"]
    assert layer.paper == pytest.approx(119.93 / 83.78) and layer.ours == pytest.approx(layer.paper)
    assert _verdict(distdy.partition.PARTITION, tables) == "reproduced"
    reversed_order = {"distdy/partition.csv": _partition_table(lambda data, name: 1e4 / _paper_seconds(data, name))}
    assert _verdict(distdy.partition.PARTITION, reversed_order) == "not"


# ---- traffic ------------------------------------------------------------------------------------------------
def test_traffic_reading_says_when_distdy_is_not_the_lowest():
    table = pd.DataFrame(
        {
            "stores": [2, 2, 4, 4, 4],
            "source": ["measured", "measured", "counted", "counted", "counted"],
            "partitioner": ["distdy", "metis", "distdy", "metis", "hash"],
            "vs_distdy": [1.0, 1.2, 1.0, 0.9, 1.5],
        }
    )
    text = distdy.traffic.read_traffic(
        {"distdy/traffic/traffic.csv": table, "distdy/traffic/traffic_per_rank.csv": pd.DataFrame()}
    )
    assert (
        text == "2 stores (measured): others fetch 1.20x DistDy's bytes; "
        "4 stores (counted): others fetch 0.90x to 1.50x DistDy's bytes (DistDy not the lowest)"
    )


# ---- time ---------------------------------------------------------------------------------------------------
def _time_tables(over_metis: dict[int, float], on_cards: float) -> dict[str, pd.DataFrame]:
    measured = pd.DataFrame(
        [
            row
            for window, speedup in over_metis.items()
            for row in (
                {"window": window, "partitioner": "distdy", "epoch_time_s": 1.0, "test": 0.5, "speedup_vs_metis": speedup},
                {"window": window, "partitioner": "metis", "epoch_time_s": speedup, "test": 0.5, "speedup_vs_metis": 1.0},
            )
        ]
    )
    simulated = pd.DataFrame(
        {
            "device": ["cpu", "cpu", "v100", "v100"],
            "stores": [4, 4, 4, 4],
            "gbps": [1.0, 10.0, 1.0, 10.0],
            "partitioner": ["distdy"] * 4,
            "speedup_vs_metis": [3.0, 1.1, on_cards - 0.1, on_cards],
            "speedup_vs_hash": [1.0, 1.0, 0.9, 1.0],
        }
    )
    return {"distdy/time/time_measured.csv": measured, "distdy/time/time_simulated.csv": simulated}


def test_time_reading_gives_measured_and_each_devices_simulated_speedups():
    text = distdy.epoch_time.read_time(_time_tables({4: 1.2, 8: 1.0}, 1.3))
    assert text == (
        "measured on 2 ranks, DistDy 1.00x to 1.20x METIS's speed; simulated (cpu) at 1 Gbps 3.00x METIS's speed, its lowest "
        "speedup over any baseline 1.00x over every bandwidth and K; simulated (v100) at 1 Gbps 1.20x METIS's speed, its lowest "
        "speedup over any baseline 0.90x to 1.00x over every bandwidth and K"
    )


def test_time_headlines_use_the_cards_simulated_and_each_window_measured():
    published = rows_of("table-distdy-time")
    tables = _time_tables({4: 1.23, 8: 1.25}, 1.39)
    headlines = distdy.epoch_time.headlines_time(tables, published)
    assert [h.label for h in headlines] == [
        "DistDy over the baselines, the largest speedup (simulated)",
        "DistDy over METIS, window 4 (measured)",
        "DistDy over METIS, window 8 (measured)",
        "DistDy over METIS, window 12 (measured)",
    ]
    assert [h.paper for h in headlines] == [1.39, 1.23, 1.25, 1.11]
    assert [h.ours for h in headlines] == [pytest.approx(1.39), 1.23, 1.25, None]  # cpu's 3.0 is not the paper's cards
    assert _verdict(distdy.epoch_time.TIME, tables) == "reproduced"
    assert _verdict(distdy.epoch_time.TIME, _time_tables({4: 0.8, 8: 0.9}, 0.95)) == "not"


# ---- params -------------------------------------------------------------------------------------------------
def _params_table(budget_speedups: list[float], eta_speedups: list[float]) -> pd.DataFrame:
    budgets, etas = [1, 5, 20, 100, 300], [1.0, 4.0, 6.0, 12.0]
    rows = [
        {"swept": "budget", "value": m, "budget": m, "eta": 6.0, "speedup_vs_metis": s} for m, s in zip(budgets, budget_speedups)
    ]
    rows += [{"swept": "eta", "value": e, "budget": 300, "eta": e, "speedup_vs_metis": s} for e, s in zip(etas, eta_speedups)]
    return pd.DataFrame(rows)


def test_params_reading_finds_the_best_setting_and_figure_11_has_no_printed_number():
    table = _params_table([0.9, 1.0, 1.1, 1.2, 1.2], [1.0, 1.1, 1.25, 1.05])
    assert (
        distdy.params.read_params({"distdy/params.csv": table})
        == "simulated speedup over METIS 0.90x to 1.25x; best at budget 300, eta 6"
    )
    assert rows_of("fig-distdy-params").empty and distdy.params.PARAMS.headlines is None


# ---- capacity -----------------------------------------------------------------------------------------------
def test_capacity_reading_names_the_baselines_out_of_memory():
    table = pd.DataFrame(
        {
            "stores": [4, 4],
            "speedup_vs_metis": [1.1, 1.3],
            "balance_bytes": [1.0, 1.04],
            "metis_out_of_memory": [False, False],
            "hash_out_of_memory": [True, False],
        }
    )
    text = distdy.capacity.read_capacity({"distdy/capacity.csv": table})
    assert (
        text == "K=4: from the tightest feasible D^k to twice it, speedup over METIS 1.10x to 1.30x, "
        "largest store over mean 1.00 to 1.04 in bytes; out of memory at some capacity: hash"
    )


# ---- end to end ---------------------------------------------------------------------------------------------
@pytest.mark.slow  # CI builds every target at smoke size after the suite (make paper SMOKE=1)
def test_storage_builds_at_smoke_size_and_reads(tmp_path):
    build_target(distdy.storage.STORAGE, tmp_path, smoke=True)
    assert not distdy.storage.STORAGE.missing_outputs(tmp_path)
    table = pd.read_csv(tmp_path / distdy.storage.STORAGE_CSV)
    assert table.setting.iloc[0] == distdy.storage.density_setting("sparse") and (table.nodes.iloc[:11] == 500).all()
    assert distdy.storage.read_storage({distdy.storage.STORAGE_CSV: table}).startswith("additive storage saves")
    assert all(
        h.ours is not None
        for h in distdy.storage.headlines_storage({distdy.storage.STORAGE_CSV: table}, rows_of("table-distdy-storage"))
    )


# ---- regimes and the text's claims (issue 46) ------------------------------------------------------------


def _traffic(mb: dict[tuple[int, str], dict[str, float]]) -> dict[str, pd.DataFrame]:
    rows = [
        {"stores": stores, "source": source, "partitioner": name, "in_sum_mb": value}
        for (stores, source), by_name in mb.items()
        for name, value in by_name.items()
    ]
    return {"distdy/traffic/traffic.csv": pd.DataFrame(rows), "distdy/traffic/traffic_per_rank.csv": pd.DataFrame()}


def test_traffic_claim_holds_only_where_distdy_fetches_less_than_metis_and_metis_layer_at_every_store_count():
    (claim,) = distdy.traffic.TRAFFIC.claims
    assert claim.quote.startswith("We observe that DistDy generates lower communication volume")
    lowest = {"distdy": 100.0, "metis": 120.0, "metis_layer": 110.0, "hash": 90.0}  # hash is not named in the text
    held = claim.check(_traffic({(2, "measured"): lowest, (4, "counted"): lowest}))
    assert held.holds is True
    assert held.measured == (
        "feature-fetch bytes per epoch, all ranks, DistDy below Metis and Metis-layer: "
        "2 stores (measured): DistDy 100.0 MB against Metis 120.0, Metis-layer 110.0; "
        "4 stores (counted): DistDy 100.0 MB against Metis 120.0, Metis-layer 110.0"
    )
    one_above = claim.check(_traffic({(2, "measured"): {**lowest, "metis_layer": 98.0}, (4, "counted"): lowest}))
    assert one_above.holds is False and "not below at 1 of 2 store counts" in one_above.measured
    only_metis = claim.check(_traffic({(4, "counted"): {"distdy": 1.0, "metis": 2.0}}))
    assert only_metis.holds is True and "below Metis:" in only_metis.measured
    missing = claim.check(_traffic({(4, "counted"): {"distdy": 1.0, "hash": 2.0}}))
    assert missing.holds is None
    assert claim.check(_traffic({(4, "counted"): {"metis": 1.0, "metis_layer": 2.0}})).holds is None


def test_params_claims_read_figure_11s_text():
    increases, plateau, similar = distdy.params.PARAMS.claims

    def checked(budget_speedups, eta_speedups):
        tables = {"distdy/params.csv": _params_table(budget_speedups, eta_speedups)}
        return increases.check(tables), plateau.check(tables), similar.check(tables)

    rises_then_flat = checked([0.9, 1.0, 1.2, 1.19, 1.2], [1.0, 1.02, 1.04, 1.01])
    assert [c.holds for c in rises_then_flat] == [True, True, True]
    assert rises_then_flat[1].measured == (
        "the best speedup 1.20x at M = 20; M = 20 to 300 all within 2% of it "
        "(M = 1: 0.90x, M = 5: 1.00x, M = 20: 1.20x, M = 100: 1.19x, M = 300: 1.20x)"
    )
    assert rises_then_flat[2].measured == "over eta 1 to 12 the speedup spans 1.00x to 1.04x, 4.0% apart (within 5%)"
    falls = checked([0.56, 0.51, 0.50, 0.49, 0.50], [0.47, 0.48, 0.49, 0.50])  # docs/measurements.md's shape
    assert [c.holds for c in falls] == [False, False, False]
    assert "M = 5, 20, 100, 300 more than 2% below it" in falls[1].measured
    assert "6.4% apart (more than 5%)" in falls[2].measured
    still_rising = checked([0.9, 1.0, 1.1, 1.2, 1.3], [1.0, 1.0, 1.0, 1.0])
    assert [c.holds for c in still_rising] == [True, False, True]
    assert "still rising at the largest budget" in still_rising[1].measured
    dips = checked([0.9, 1.2, 1.0, 1.2, 1.2], [1.0, 1.0, 1.0, 1.0])
    assert dips[1].holds is False and "M = 20 more than 2% below it" in dips[1].measured
    lone = {"distdy/params.csv": _params_table([1.0], [1.0])}  # one budget and one eta: nothing to compare
    assert [claim.check(lone).holds for claim in (increases, plateau, similar)] == [None, None, None]


def test_the_claims_decide_a_figure_without_published_numbers():
    tables = {"distdy/params.csv": _params_table([0.9, 1.0, 1.2, 1.19, 1.2], [1.0, 1.02, 1.04, 1.01])}
    checks = tuple(claim.check(tables) for claim in distdy.params.PARAMS.claims)
    assert judge(None, rows_of("fig-distdy-params"), (), checks).word == "reproduced"
    tables = {"distdy/params.csv": _params_table([0.56, 0.51, 0.50, 0.49, 0.50], [0.47, 0.48, 0.49, 0.50])}
    checks = tuple(claim.check(tables) for claim in distdy.params.PARAMS.claims)
    assert judge(None, rows_of("fig-distdy-params"), (), checks).word == "not"
