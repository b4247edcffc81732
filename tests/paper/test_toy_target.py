"""docs/architecture.md's recipe "adding a paper table", followed: one builder function and its
target in a paper module, the paper's numbers as rows of one CSV; then `dygsched paper` builds it,
records how, and the report shows it beside the paper with a verdict."""

import json
from pathlib import Path

import pandas as pd
import pytest

from dygsched.cli import main
from dygsched.paper import published, registry
from dygsched.paper.common import table_named, write_table
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Regime, Settings, Tables

PAPER_ROWS = """ref,target,dataset,row,column,value,unit,source
Table 1,table-toy,Toy,PSG,seconds,2.0,s,"Table 1, epoch time"
Table 1,table-toy,Toy,Greedy,seconds,1.0,s,"Table 1, epoch time"
Section 5 (text),table-toy,Toy,Greedy vs PSG,speedup,2.0,x,"Greedy is 2x faster than PSG"
"""


# ---- what the newcomer writes in the paper's module -------------------------------------------------
def paper_main(argv: list[str]) -> int:
    """``dygsched paper ARGS``, through the program's own dispatch (which hands it the report's render)."""
    return main(["paper", *argv])


def build_toy(results: Path, epochs: int) -> None:
    seconds = {"psg": 2.0 * epochs, "greedy": 1.1 * epochs}
    write_table(pd.DataFrame({"sched": list(seconds), "seconds": list(seconds.values())}), results / "toy" / "toy.csv")


def read_toy(tables: Tables) -> str:
    table = table_named(tables).set_index("sched")
    return f"greedy {table.seconds['psg'] / table.seconds['greedy']:.2f}x faster than PSG"


def shape_toy(tables: Tables) -> PaperShape:
    table = table_named(tables).set_index("sched").rename(index={"psg": "PSG", "greedy": "Greedy"})
    return PaperShape(table[["seconds"]], paper_ref="Table 1", paper_dataset="Toy", unit="s")


def headlines_toy(tables: Tables, rows: pd.DataFrame) -> tuple[Headline, ...]:
    table = table_named(tables).set_index("sched")
    paper = rows[rows.row == "Greedy vs PSG"].value.item()
    return (Headline("PSG over Greedy, epoch time", paper, table.seconds["psg"] / table.seconds["greedy"]),)


TOY = PaperTarget(
    name="table-toy",
    paper="dygnex",
    title="A toy table",
    reproduces="Toy table 1",
    outputs=("toy/toy.csv",),
    repeats="one measurement",
    minutes=0.1,
    build=build_toy,
    reading=read_toy,
    regime=Regime(paper="the toy paper's one GPU", ours="10 epochs on 2 CPU ranks", why="no GPU here"),
    settings=Settings(full={"epochs": 10}, smoke={"epochs": 1}),
    shape=shape_toy,
    headlines=headlines_toy,
)


@pytest.fixture
def toy_registered(tmp_path, monkeypatch):
    """The toy target in the registry and its rows among the published numbers, as the recipe leaves them."""
    csv = tmp_path / "toy.csv"
    csv.write_text(PAPER_ROWS)
    rows = pd.read_csv(csv, dtype=str, keep_default_na=False).assign(paper="toy")
    rows["value"] = rows["value"].astype(float)
    everything = pd.concat([published.published_numbers(), rows[list(published.COLUMNS)]], ignore_index=True)
    monkeypatch.setattr(published, "published_numbers", lambda: everything)
    monkeypatch.setattr(registry, "TARGETS", (*registry.TARGETS, TOY))
    return tmp_path / "results"


def test_the_toy_target_builds_records_and_renders_its_checks_at_smoke_size_without_a_verdict_word(toy_registered, capsys):
    results = toy_registered
    assert paper_main(["table-toy", "--results", str(results), "--smoke", "--in-process"]) == 0
    root = results / "smoke"
    assert pd.read_csv(root / "toy" / "toy.csv").seconds.tolist() == [2.0, 1.1]  # the smoke setting: 1 epoch
    record = json.loads((root / "provenance" / "table-toy.json").read_text())
    assert record["command"] == f"dygsched paper table-toy --results {results} --smoke" and record["exit_code"] == 0
    assert record["recipe"] == [f"tests.paper.test_toy_target.build_toy({str(root)!r}, epochs=1)"]
    readme = (root / "report" / "README.md").read_text()
    assert "| [table-toy](#table-toy) |" in readme and '<a id="table-toy"></a>' in readme
    assert "| smoke: no verdict |" in readme and "| reproduced |" not in readme  # smoke size: its checks, no word
    assert "PSG over Greedy, epoch time: paper 2, ours 1.82, ours / paper 0.91" in readme
    assert "greedy 1.82x faster than PSG" in readme
    index = (root / "report" / "index.html").read_text()
    assert 'id="table-toy"' in index and "Laid out as the paper's Table 1 (the paper's: Toy; these numbers: smoke-size" in index


def test_a_built_target_is_not_rebuilt_and_rerun_builds_it_again(toy_registered, capsys):
    results = toy_registered
    assert paper_main(["table-toy", "--results", str(results), "--in-process"]) == 0
    assert pd.read_csv(results / "toy" / "toy.csv").seconds.tolist() == [20.0, 11.0]
    capsys.readouterr()
    assert paper_main(["table-toy", "--results", str(results), "--in-process"]) == 0
    assert "present, not rerun" in capsys.readouterr().err
    assert paper_main(["table-toy", "--results", str(results), "--in-process", "--rerun"]) == 0
    assert "table-toy (under a minute) ..." in capsys.readouterr().err


def test_a_failing_builder_is_recorded_and_the_exit_status_says_so(toy_registered, monkeypatch, capsys):
    def broken(results: Path, epochs: int) -> None:
        raise ValueError("the measurement broke")

    monkeypatch.setattr(registry, "TARGETS", (*registry.TARGETS[:-1], TOY.__class__(**{**TOY.__dict__, "build": broken})))
    results = toy_registered
    assert paper_main(["table-toy", "--results", str(results), "--in-process"]) == 1
    assert "1 target(s) failed: table-toy" in capsys.readouterr().err
    assert "the measurement broke" in (results / "provenance" / "table-toy.log").read_text()
    assert json.loads((results / "provenance" / "table-toy.json").read_text())["exit_code"] == 1


def test_set_changes_a_setting_and_anything_else_is_one_error(toy_registered, capsys):
    from dygsched.paper.build import split_overrides

    assert split_overrides(TOY, smoke=False, overrides=("epochs=3",)) == ({"epochs": 3}, ())
    results = toy_registered
    assert paper_main(["table-toy", "--results", str(results), "--in-process", "--set", "epochs=2"]) == 0
    assert pd.read_csv(results / "toy" / "toy.csv").seconds.tolist() == [4.0, 2.2]
    record = json.loads((results / "provenance" / "table-toy.json").read_text())
    assert record["command"].endswith("--set epochs=2") and record["recipe"][0].endswith("epochs=2)")
    capsys.readouterr()
    assert main(["paper", "table-toy", "--results", str(results / "other"), "--in-process", "--set", "sched=psg"]) == 1
    assert "error: table-toy runs no training sweep; its settings are: epochs (got sched=psg)" in capsys.readouterr().err
    assert not (results / "other").exists()


def test_set_reaches_any_argument_of_the_builder_not_only_the_listed_ones():
    from dygsched.paper.build import split_overrides

    def build_with_options(results: Path, epochs: int, scheds: tuple[str, ...] = ("psg",), rounds: int = 3) -> None:
        raise AssertionError("not built here")

    target = TOY.__class__(**{**TOY.__dict__, "build": build_with_options})
    settings, rest = split_overrides(target, smoke=True, overrides=("rounds=2", "scheds=greedy"))
    assert settings == {"epochs": 1, "rounds": 2, "scheds": ("greedy",)} and rest == ()
