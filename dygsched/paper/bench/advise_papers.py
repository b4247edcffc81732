"""bench-advise-<paper>: ``dygsched advise`` given each paper's hardware, against the paper's order and ratios.

For each of the five papers the advisor is asked, in process (``dygsched.advise.advisor``), what the
strategies the paper compares (its method and its baselines, as this project implements them) cost
on the paper's stated GPU, GPU count and link (``PAPERS``: each with the paper's words), on the
generated graph or stream the paper's own targets train at full size. Profiling runs here, on this
CPU; the advisor scales its seconds to the paper's GPU by the ratio of memory bandwidths and says so.
Three checks per paper, each against the paper's published figures (``published/<paper>.csv``, read
from the rows of the target that reproduces that table, never copied):

* **order**: the strategies ranked by the paper's figure (epoch time, peak memory per GPU or
  communication time), the advisor's against the paper's, as Spearman's rho (``PaperShape``);
* **ratios**: each baseline's figure over the paper's method's, the advisor's beside the paper's
  (agreeing in direction and within 2x, by ``verdict.check_headline``);
* **the term**: for each ratio, the term of the advisor's breakdown whose difference between the two
  strategies is largest (compute, communication after any overlap, optimizer steps; memory for a
  memory figure): where the advisor disagrees with the paper, that term makes the difference.

The verdict is the reproduction targets' (``verdict.judge``), one per paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.errors import DygschedError
from dygsched.paper.bench.advise_paper_settings import (
    COMMUNICATION,
    EPOCH,
    MEMORY,
    METRIC_WORDS,
    MINUTES,
    OUR_SIZES,
    PAPER_SIZES,
    PAPERS,
    REPRODUCES,
    SECTION_OF,
    TIME_TERMS,
    Contender,
    PaperSetting,
)
from dygsched.paper.common import table_named, write_table
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Regime, Section, Settings, Tables


# ---- asking the advisor ------------------------------------------------------------------------------
def compose_contenders(setting: PaperSetting, data: Sequence[str]) -> list[tuple[Contender, Any, Any]]:
    """Each contender's run composed and checked as ``dygsched run`` checks it (``compose_cases``'s
    steps, with the contender's own strategy settings): ``(contender, StrategyCase, its data)``."""
    from dygsched.advise.cases import StrategyCase
    from dygsched.data.loading import for_task, load_data
    from dygsched.launch.checks import check_data, check_run, precheck
    from dygsched.launch.compose import compose_run

    loaded: dict[str, Any] = {}
    out = []
    for contender in setting.contenders:
        run = compose_run([*data, *contender.overrides, "world_size=1", "progress=false"])
        precheck(run)
        checked = check_run(run)
        key = repr(run.dataset)
        if key not in loaded:
            loaded[key] = load_data(run.dataset)
        mine = for_task(loaded[key], checked.strategy.data_kind, run)
        check_data(checked, mine, 1)
        try:
            case = StrategyCase.of(run, checked.strategy)
        except TypeError as exc:  # a strategy no family of the advisor prices
            raise DygschedError(f"{setting.paper}: {contender.label}: {exc}") from None
        out.append((contender, case, mine))
    return out


def advise_paper(setting: PaperSetting, data: Sequence[str], steps: int, budget: float) -> pd.DataFrame:
    """The advisor's prediction for every contender on the paper's hardware: one row each."""
    import torch

    from dygsched.advise.advisor import Request, predict, profile_cases, targets

    composed = compose_contenders(setting, data)
    data_of = {id(case): mine for _, case, mine in composed}
    counts = tuple(sorted({contender.gpus or setting.gpus for contender, _, _ in composed}))
    request = Request(gpus=counts, nodes=setting.nodes, link=setting.link, gpu=setting.gpu)
    cases = [case for _, case, _ in composed]
    device = torch.device("cpu")  # the paper's GPU is priced from this CPU's profile (an assumption the table states)
    profile = profile_cases(cases, lambda case: data_of[id(case)], device, request, steps, budget)
    rows = []
    for contender, case, _ in composed:
        gpus = contender.gpus or setting.gpus
        asked = Request(gpus=(gpus,), nodes=setting.nodes, link=setting.link, gpu=setting.gpu)
        (prediction,) = predict([case], lambda c: data_of[id(c)], profile, asked)
        (target,) = targets(profile, asked)
        memory = prediction.peak_memory_bytes
        rows.append(
            {
                "paper": setting.paper,
                "label": contender.label,
                "sched": case.name,
                "gpu": setting.gpu,
                "gpus": gpus,
                "nodes": setting.nodes,
                "link": target.link.name if gpus > 1 else "",
                "runs": prediction.runs,
                "reason": prediction.reason,
                EPOCH: prediction.epoch_time_s if prediction.runs else math.nan,
                "compute_s": prediction.compute_s,
                COMMUNICATION: prediction.communication_s,
                "overhead_s": prediction.overhead_s,
                "steps": prediction.steps,
                MEMORY: memory if memory is not None and prediction.runs else math.nan,
                "memory_limit_bytes": target.memory_bytes,
                "fits": None if memory is None or not prediction.runs else bool(memory <= target.memory_bytes),
                "traffic_bytes": prediction.traffic_bytes if prediction.runs else math.nan,
                "terms": prediction.terms,
                "compute_scale": f"{target.scale.factor:.3g}x: {target.scale.source}",
                "profile_s": profile.seconds,
            }
        )
    return pd.DataFrame(rows)


# ---- comparing with the paper ------------------------------------------------------------------------
def paper_relative(setting: PaperSetting, published: pd.DataFrame) -> dict[str, float]:
    """The paper's figure (``setting.metric``) of each contender over its method's: 1 for the method,
    the published ratio for each baseline that has one against the method."""
    relative = {setting.method: 1.0}
    for ratio in setting.ratios:
        if ratio.metric == setting.metric and ratio.method == setting.method:
            relative[ratio.baseline] = ratio.paper(published)
    return relative


def dominant_term(baseline: pd.Series, method: pd.Series, metric: str) -> tuple[str, dict[str, float]]:
    """The term of the advisor's breakdown that sets the two apart most: for a time, the largest
    difference of compute, communication (after any overlap) and optimizer steps; a memory figure is
    its own term. ``(name, every term's difference)``."""
    if metric == MEMORY:
        return "memory", {"memory_bytes": float(baseline[MEMORY] - method[MEMORY])}
    gaps = {name: float(baseline[column] - method[column]) for name, column in TIME_TERMS.items()}
    if metric == COMMUNICATION:
        return "communication", gaps
    finite = {name: gap for name, gap in gaps.items() if gap == gap}
    return (max(finite, key=lambda name: abs(finite[name])) if finite else "", gaps)


def compare(setting: PaperSetting, predictions: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """One row per published ratio: the paper's, the advisor's, and the term that makes the advisor's."""
    from dygsched.paper.verdict import check_headline

    by_label = predictions.set_index("label")
    rows = []
    for ratio in setting.ratios:
        baseline, method = by_label.loc[ratio.baseline], by_label.loc[ratio.method]
        ours = float(baseline[ratio.metric] / method[ratio.metric]) if method[ratio.metric] > 0 else math.nan
        paper = ratio.paper(published)
        check = check_headline(Headline(ratio.label, paper, ours if ours == ours else None))
        term, gaps = dominant_term(baseline, method, ratio.metric)
        rows.append(
            {
                "paper": setting.paper,
                "ratio": ratio.label,
                "baseline": ratio.baseline,
                "method": ratio.method,
                "metric": ratio.metric,
                "paper_ratio": paper,
                "advisor_ratio": ours,
                "quotient": ours / paper if ours == ours else math.nan,
                "same_direction": check.agrees,
                "within_2x": check.close,
                "dominant_term": term,
                **{f"gap_{name.replace(' ', '_')}": gap for name, gap in gaps.items()},
                "cells": "; ".join(
                    f"{c.ref} {c.row} / {c.column}" + (f" ({c.dataset})" if c.dataset else "") for c in ratio.numerator
                )
                + (" over " + "; ".join(f"{c.ref} {c.row} / {c.column}" for c in ratio.denominator) if ratio.denominator else ""),
            }
        )
    return pd.DataFrame(rows)


def order_line(predictions: pd.DataFrame, metric: str) -> str:
    """Whether the advisor ranks the strategies the paper ranks in the paper's order."""
    ranked = predictions.dropna(subset=["paper_relative", metric])
    if len(ranked) < 2:
        return "too few strategies ranked by the paper"
    ours = list(ranked.sort_values(metric).label)
    paper = list(ranked.sort_values("paper_relative").label)
    if ours == paper:
        return "same order"
    return (
        "first right" if ours[0] == paper[0] else "first wrong"
    ) + f" (the paper: {' < '.join(paper)}; ours: {' < '.join(ours)})"


def build_advise_paper(results: Path, paper: str, sizes: str = "full", steps: int = 8, budget: float = 8.0) -> None:
    """Ask the advisor for ``paper``'s comparison (``sizes``: ``full`` or ``smoke``), compare, write both tables."""
    from dygsched.paper.published import published_numbers

    if paper not in PAPERS:
        raise DygschedError(f"bench-advise: unknown paper {paper!r} (choose from {', '.join(PAPERS)})")
    if sizes not in ("full", "smoke"):
        raise DygschedError(f"bench-advise-{paper}: sizes is 'full' or 'smoke', not {sizes!r}")
    if steps < 3 or not budget > 0:
        raise DygschedError(f"bench-advise-{paper}: steps must be at least 3 (one is a warm-up) and budget more than 0 s")
    setting = PAPERS[paper]
    published = published_numbers()
    published = published[published.target.isin(setting.reads)]
    print(
        f"bench-advise-{paper}: profiling on this CPU, pricing on {setting.gpus} x {setting.gpu} over {setting.link}", flush=True
    )
    predictions = advise_paper(setting, setting.data if sizes == "full" else setting.smoke_data, steps, budget)
    relative = paper_relative(setting, published)
    method = predictions.set_index("label").loc[setting.method, setting.metric]
    predictions["metric"] = setting.metric
    predictions["paper_relative"] = [relative.get(label, math.nan) for label in predictions.label]
    predictions["advisor_relative"] = predictions[setting.metric] / method if method > 0 else math.nan
    ratios = compare(setting, predictions, published)
    scale = predictions.compute_scale.iloc[0]
    write_table(
        predictions,
        results / setting.predictions_csv,
        f"order by {METRIC_WORDS[setting.metric]}: {order_line(predictions, setting.metric)}",
        f"compute: {scale}",
    )
    write_table(
        ratios,
        results / setting.ratios_csv,
        *(f"{r.ratio}: paper {r.paper_ratio:.3g}, advisor {r.advisor_ratio:.3g}, {r.dominant_term}" for r in ratios.itertuples()),
    )


# ---- what the report reads ---------------------------------------------------------------------------
def shape_of(setting: PaperSetting) -> Callable[[Tables], PaperShape]:
    def shape(tables: Tables) -> PaperShape:
        table = table_named(tables, Path(setting.predictions_csv).name).set_index("label")
        column = f"{METRIC_WORDS[setting.metric]} over {setting.method}'s"
        ours = table[["advisor_relative"]].rename(columns={"advisor_relative": column})
        paper = table[["paper_relative"]].rename(columns={"paper_relative": column})
        return PaperShape(
            ours, paper_ref=f"the paper's ratios ({'; '.join(setting.reads)})", rank_within="columns", unit="x", paper_frame=paper
        )

    return shape


def headlines_of(setting: PaperSetting) -> Callable[[Tables, pd.DataFrame], tuple[Headline, ...]]:
    def headlines(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
        table = table_named(tables, Path(setting.ratios_csv).name).set_index("ratio")
        out = []
        for ratio in setting.ratios:
            ours = float(table.at[ratio.label, "advisor_ratio"])
            out.append(Headline(f"{ratio.label} (advisor)", ratio.paper(published), ours if ours == ours else None))
        return tuple(out)

    return headlines


def reading_of(setting: PaperSetting) -> Callable[[Tables], str]:
    def reading(tables: Tables) -> str:
        predictions = table_named(tables, Path(setting.predictions_csv).name)
        ratios = table_named(tables, Path(setting.ratios_csv).name)
        parts = [f"by {METRIC_WORDS[setting.metric]}: {order_line(predictions, setting.metric)}"]
        close = ratios[ratios.same_direction.astype(str).eq("True") & ratios.within_2x.astype(str).eq("True")]
        parts.append(f"{len(close)} of {len(ratios)} ratios point the paper's way and are within 2x")
        for row in ratios.drop(close.index).itertuples():
            parts.append(
                f"{row.ratio}: advisor {row.advisor_ratio:.3g}x against {row.paper_ratio:.3g}x, "
                f"its gap mostly {row.dominant_term}"
            )
        refused = predictions[~predictions.runs.astype(str).eq("True")]
        parts += [f"{row.label} cannot run: {row.reason}" for row in refused.itertuples()]
        return "; ".join(parts)

    return reading


# ---- the targets ---------------------------------------------------------------------------------------


def advise_target(paper: str) -> PaperTarget:
    setting = PAPERS[paper]
    strategies = ", ".join(c.label for c in setting.contenders)
    return PaperTarget(
        name=f"bench-advise-{paper}",
        paper=SECTION_OF.get(paper, paper),
        title=f"dygsched advise on the paper's hardware ({setting.gpus} x {setting.gpu}, {setting.link}): {strategies}",
        reproduces=REPRODUCES[paper],
        outputs=(setting.predictions_csv, setting.ratios_csv),
        repeats="one profile on this CPU (each family's steps: the fastest of two per group), one prediction per strategy",
        minutes=MINUTES[paper],
        build=build_advise_paper,
        reading=reading_of(setting),
        regime=Regime(
            paper=f"{setting.hardware} Sizes: {PAPER_SIZES[paper]}.",
            ours=f"The advisor, profiled on this CPU, priced for {setting.gpus} x {setting.gpu} over {setting.nodes} node(s) "
            f"joined by {setting.link} ({setting.link_note}); {OUR_SIZES[paper]}.",
            why="The advisor scales this CPU's seconds to the paper's GPU by the ratio of memory bandwidths (its printed "
            "assumption), on the graphs the paper's targets here train, not the paper's own; docs/advise.md says which term "
            "makes each disagreement.",
        ),
        settings=Settings(
            full={"paper": paper, "sizes": "full", "steps": 8, "budget": 8.0},
            smoke={"sizes": "smoke", "steps": 3, "budget": 1.0},
        ),
        shape=shape_of(setting),
        headlines=headlines_of(setting),
        published_from=setting.reads,
    )


ADVISE_PAPERS: tuple[PaperTarget, ...] = tuple(advise_target(paper) for paper in PAPERS)
# for the registry: no section of its own (each target sits in its paper's), and its targets
SECTIONS: tuple[Section, ...] = ()
TARGETS = ADVISE_PAPERS
