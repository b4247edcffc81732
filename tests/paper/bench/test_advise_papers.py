"""bench-advise-<paper>: the paper's ratios from its cells, the advisor's against them, the term that makes
the gap, the order and the verdict, on hand-made tables; every paper's cells, hardware and strategies."""

import math
from pathlib import Path

import pandas as pd
import pytest

from dygsched.advise.hardware import gpu_named, link_named
from dygsched.errors import DygschedError
from dygsched.paper.bench.advise_paper_settings import EPOCH, MEMORY, PAPERS, Cell, Contender, PaperSetting, Ratio, cell_value
from dygsched.paper.bench.advise_papers import (
    ADVISE_PAPERS,
    build_advise_paper,
    compare,
    headlines_of,
    order_line,
    paper_relative,
    reading_of,
    shape_of,
)
from dygsched.paper.published import published_numbers
from dygsched.paper.verdict import judge

PUBLISHED = pd.DataFrame(
    {
        "ref": ["T"] * 4,
        "dataset": [""] * 4,
        "row": ["A", "B", "C", "B vs A"],
        "column": ["time"] * 3 + ["saving"],
        "value": [1.0, 2.0, 4.0, 20.0],
        "target": ["t"] * 4,
    }
)
SETTING = PaperSetting(
    paper="toy",
    hardware="two GPUs",
    gpu="a100-80gb",
    gpus=2,
    nodes=1,
    link="pcie",
    link_note="",
    data=(),
    smoke_data=(),
    contenders=(Contender("A", ("sched=psg",)), Contender("B", ("sched=esdg",)), Contender("C", ("sched=blad",))),
    method="A",
    metric=EPOCH,
    ratios=(
        Ratio("B", "A", EPOCH, (Cell("T", "B", "time"),), (Cell("T", "A", "time"),)),
        Ratio("C", "A", EPOCH, (Cell("T", "C", "time"),), (Cell("T", "A", "time"),)),
        Ratio("C", "B", MEMORY, (Cell("T", "C", "time"),), (Cell("T", "B", "time"),)),
    ),
    reads=("t",),
)


def predictions(times: list[float], compute: list[float], memory: list[float]) -> pd.DataFrame:
    """The advisor's rows for A, B and C: each time is its compute plus 0.1 s of communication."""
    table = pd.DataFrame(
        {
            "label": ["A", "B", "C"],
            EPOCH: times,
            "compute_s": compute,
            "communication_s": [t - c for t, c in zip(times, compute)],
            "overhead_s": [0.0] * 3,
            MEMORY: memory,
            "runs": [True] * 3,
            "reason": [""] * 3,
        }
    )
    relative = paper_relative(SETTING, PUBLISHED)
    table["paper_relative"] = [relative.get(label, math.nan) for label in table.label]
    table["advisor_relative"] = table[EPOCH] / table[EPOCH].iloc[0]
    return table


def test_a_ratio_is_read_from_the_papers_cells_and_a_saving_becomes_a_ratio():
    assert SETTING.ratios[1].paper(PUBLISHED) == 4.0
    assert Ratio("B", "A", EPOCH, (Cell("T", "B vs A", "saving"),), saving=True).paper(PUBLISHED) == pytest.approx(1.25)
    assert paper_relative(SETTING, PUBLISHED) == {"A": 1.0, "B": 2.0, "C": 4.0}  # the memory ratio is not the order's
    with pytest.raises(DygschedError, match="expected exactly one"):
        cell_value(PUBLISHED, Cell("T", "D", "time"))


def test_the_advisors_ratios_beside_the_papers_with_the_term_that_makes_each():
    table = predictions([1.0, 1.9, 1.5], compute=[0.9, 1.0, 1.4], memory=[1.0, 1.0, 3.0])
    ratios = compare(SETTING, table, PUBLISHED).set_index("baseline")
    b, c = ratios.loc["B"], ratios.iloc[1]
    assert b.advisor_ratio == pytest.approx(1.9) and bool(b.same_direction) and bool(b.within_2x)
    assert b.dominant_term == "communication"  # B's 0.9 s of communication against A's 0.1 s; compute differs by 0.1 s
    assert c.advisor_ratio == pytest.approx(1.5) and not bool(c.within_2x)  # the paper's 4x
    assert c.dominant_term == "compute" and c.gap_compute == pytest.approx(0.5)
    memory = ratios.iloc[2]
    assert memory.advisor_ratio == pytest.approx(3.0) and memory.dominant_term == "memory"


def test_the_order_and_the_verdict():
    right = predictions([1.0, 2.0, 3.0], compute=[0.9, 1.9, 2.9], memory=[1.0, 2.0, 4.0])
    wrong = predictions([3.0, 2.0, 1.0], compute=[2.9, 1.9, 0.9], memory=[4.0, 2.0, 1.0])
    assert order_line(right, EPOCH) == "same order"
    assert order_line(wrong, EPOCH).startswith("first wrong (the paper: A < B < C; ours: C < B < A)")
    for table, word in ((right, "reproduced"), (wrong, "not")):
        tables = {"advise_papers/toy_predictions.csv": table, "advise_papers/toy_ratios.csv": compare(SETTING, table, PUBLISHED)}
        verdict = judge(shape_of(SETTING)(tables), PUBLISHED, headlines_of(SETTING)(tables, PUBLISHED))
        assert verdict.word == word
        assert reading_of(SETTING)(tables).startswith("by epoch time: ")
    assert verdict.order == pytest.approx(-1.0)


@pytest.mark.parametrize("setting", PAPERS.values(), ids=lambda s: s.paper)
def test_every_paper_names_its_hardware_cells_and_strategies(setting):
    gpu_named(setting.gpu), link_named(setting.link)
    published = published_numbers()
    published = published[published.target.isin(setting.reads)]
    labels = [c.label for c in setting.contenders]
    assert setting.method in labels and len(set(labels)) == len(labels)
    for ratio in setting.ratios:
        assert {ratio.baseline, ratio.method} <= set(labels)
        assert ratio.paper(published) > 0  # every cell is there, exactly once
    assert len(paper_relative(setting, published)) >= 2, "the paper ranks at least two of them"


def test_the_targets_read_the_published_rows_of_the_tables_they_compare_with():
    from dygsched.report.render import _compared

    target = ADVISE_PAPERS[0]
    setting = PAPERS["dygnex"]
    table = pd.DataFrame({"label": [c.label for c in setting.contenders], EPOCH: [1.1, 9.0, 1.3, 1.05, 1.0]})
    published = published_numbers()
    published = published[published.target.isin(setting.reads)]
    relative = paper_relative(setting, published)
    table = table.assign(runs=True, reason="", compute_s=table[EPOCH], communication_s=0.0, overhead_s=0.0, **{MEMORY: 1.0})
    table["paper_relative"] = [relative[label] for label in table.label]
    table["advisor_relative"] = table[EPOCH]
    frames = {setting.predictions_csv: table, setting.ratios_csv: compare(setting, table, published)}
    _, _, verdict, note = _compared(target, frames, published_numbers())
    assert verdict is not None and not note
    assert verdict.order == pytest.approx(1.0) and verdict.cells == 5


def test_bad_settings_are_one_error_before_anything_runs(tmp_path: Path):
    with pytest.raises(DygschedError, match="unknown paper 'nope'"):
        build_advise_paper(tmp_path, "nope")
    with pytest.raises(DygschedError, match="sizes"):
        build_advise_paper(tmp_path, "dygnex", sizes="huge")
    with pytest.raises(DygschedError, match="steps"):
        build_advise_paper(tmp_path, "dygnex", steps=2)
    assert not any(tmp_path.iterdir())


@pytest.mark.slow  # profiling on this CPU: about 30 s
def test_the_smoke_build_writes_both_tables_end_to_end(tmp_path: Path):
    target = next(t for t in ADVISE_PAPERS if t.name == "bench-advise-dygnex")
    target.build(tmp_path, **target.settings.at(True))
    predictions = pd.read_csv(tmp_path / PAPERS["dygnex"].predictions_csv)
    assert list(predictions.label) == [c.label for c in PAPERS["dygnex"].contenders]
    assert predictions.runs.all() and (predictions[EPOCH] > 0).all()
    assert (tmp_path / PAPERS["dygnex"].ratios_csv).is_file()
