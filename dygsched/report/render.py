"""Render a results root into `report/index.html`, `report/runs.html`, `report/README.md` and
`report/reproduction.md` (the verdict table, its links resolving in the report folder;
`reproduction.docs.md`, the same with links for the project's docs/, is what `make reproduction`
copies there).

The first screen is the verdict of every target (does the paper's shape reproduce here:
``dygsched.paper.verdict``); then one section per paper module (``dygsched.paper.registry``), where
each target shows ours laid out as the paper's table beside the paper's published numbers
(``dygsched/paper/published/``), the verdict's checks, a one-line reading, our full tables and
figures, and how it was made (provenance.json). A target not built yet says so and gives the command that builds it. The
report is written to a temporary folder and renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from dygsched.metrics.runs_table import LEGACY_COLUMNS
from dygsched.paper import published as published_rows
from dygsched.paper import registry
from dygsched.paper.build import SMOKE_DIR
from dygsched.paper.provenance import Provenance, commit, machine, read_provenance
from dygsched.paper.target import Claim, ClaimCheck, PaperTarget, Tables
from dygsched.paper.verdict import Verdict, judge

REPORT_DIR = "report"
MAX_ROWS = 40  # longer tables show their first rows and link the whole CSV
RUN_COLUMNS = (
    "run_id",
    "status",
    "dataset",
    "model",
    "sched",
    "world_size",
    "epochs",
    "epoch_time_s",
    "imbalance_ratio",
    "final_train_loss",
    "eval.metric",
    "eval.value",
    "gpu_peak_allocated_bytes",
    "peak_rss_bytes",
    "saved_for_backward_bytes",
    "peak_mem_bytes_gpu_or_rss",
    "conv_flops_per_epoch",
)


@dataclass(frozen=True)
class RenderedTable:
    name: str  # the CSV's path under the results root
    html: str
    markdown: str
    rows: int
    shown: int


@dataclass(frozen=True)
class PublishedTable:
    ref: str  # e.g. "dygnex Table 4 (Arxiv)"
    html: str
    markdown: str


@dataclass(frozen=True)
class TargetView:
    target: PaperTarget
    status: str  # built | partial | missing | failed | unavailable (an optional dependency absent here)
    tables: tuple[RenderedTable, ...]
    figures: tuple[str, ...]  # paths relative to the report folder
    published: tuple[PublishedTable, ...]
    reading: str
    provenance: Provenance | None
    missing: tuple[str, ...]
    paper_shape: RenderedTable | None = None  # ours laid out as the paper's table
    paper_shape_ref: str = ""
    verdict: Verdict | None = None
    verdict_note: str = ""  # why there is no verdict, where there is none
    smoke: bool = False  # built at smoke size: its checks are shown, its verdict word is not given

    @property
    def word(self) -> str | None:
        """The verdict's word, or ``smoke: no verdict`` for a target built at smoke size (tiny data
        says nothing of the paper's shape; the checks still show that the chain works)."""
        if self.verdict is None:
            return None
        return SMOKE_VERDICT if self.smoke else self.verdict.word


SMOKE_VERDICT = "smoke: no verdict"


def smoke_data(paper_target: PaperTarget, frames: Tables) -> str:
    """What a smoke-size table holds, for its caption: the datasets its tables name (a ``dataset``
    column), else its smoke sweep's ``dataset=``, else the builder's smoke settings."""
    datasets: list[str] = []
    for frame in frames.values():
        if "dataset" in frame.columns:
            datasets.extend(str(v) for v in frame["dataset"].dropna().unique() if str(v) not in datasets)
    for overrides in paper_target.sweep.smoke if paper_target.sweep is not None and not datasets else ():
        for override in overrides:
            key, _, value = override.partition("=")
            if key.lstrip("+") == "dataset":
                datasets.extend(v for v in value.split(",") if v not in datasets)
    if datasets:
        return f"smoke-size {', '.join(datasets)} data"
    return "smoke-size data (the builder's smoke settings)"


def _number(value: float) -> str:
    return f"{value:.4g}"


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """Missing figures print as a dash, never as 0 or 'nan'."""
    return frame.astype(object).where(frame.notna(), "—")


NUMBER_WITH_UNIT = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?(\s*[%x×]|\s+[A-Za-z/]{1,8})?$")


def _is_number(value: object) -> bool:
    """A number, or a number with a short unit ("1.03 s", "12%"): right-aligned; text is left-aligned."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    return isinstance(value, str) and bool(NUMBER_WITH_UNIT.match(value.strip()))


def numeric_columns(frame: pd.DataFrame) -> list[bool]:
    """Per column: whether every present cell is a number (missing cells do not count either way)."""
    flags = []
    for _, column in frame.items():
        present = [v for v in column if not (v is None or (isinstance(v, float) and v != v) or v in ("", "—"))]
        flags.append(bool(present) and all(_is_number(v) for v in present))
    return flags


def html_table(frame: pd.DataFrame, classes: str, missing: str = "—", escape: bool = True) -> str:
    """``frame`` as an HTML table, numbers right-aligned (class ``num``) and text left-aligned."""
    numeric = numeric_columns(frame)

    def cell(value: object, tag: str, is_number: bool) -> str:
        if value is None or (isinstance(value, float) and value != value):
            text = missing
        elif isinstance(value, (float, np.floating)) and not isinstance(value, bool):
            text = _number(float(value))
        else:
            text = html.escape(str(value)) if escape else str(value)
        return f'<{tag} class="num">{text}</{tag}>' if is_number else f"<{tag}>{text}</{tag}>"

    head = "".join(cell(name, "th", flag) for name, flag in zip(frame.columns, numeric))
    body = "\n".join(
        "<tr>" + "".join(cell(value, "td", flag) for value, flag in zip(row, numeric)) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f'<table class="{classes}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def markdown_table(frame: pd.DataFrame) -> str:
    """``frame`` as a Markdown table, numbers right-aligned and text left-aligned, missing as a dash."""
    shown = _shown(frame.map(lambda v: _number(v) if isinstance(v, float) and v == v else v))
    if shown.empty:
        return shown.to_markdown(index=False)
    align = ["right" if flag else "left" for flag in numeric_columns(frame)]
    return shown.to_markdown(index=False, colalign=align, disable_numparse=True)


def render_table(frame: pd.DataFrame, name: str) -> RenderedTable:
    head = frame.head(MAX_ROWS)
    return RenderedTable(name, html_table(head, "data"), markdown_table(head), len(frame), len(head))


def published_tables(published: pd.DataFrame, name: str) -> tuple[PublishedTable, ...]:
    """The paper's numbers for one target: one table per (paper, table or figure, dataset), rows x columns."""
    rows = published[published.target == name]
    # a table whose columns are its datasets (REAL table 5) is one table, not one per dataset
    columns_are_datasets = (rows.dataset == rows.column).groupby([rows.paper, rows.ref]).transform("all")
    rows = rows.assign(dataset=rows.dataset.where(~columns_are_datasets, ""))
    tables = []
    for (paper, ref, dataset), group in rows.groupby(["paper", "ref", "dataset"], sort=False):
        cells = group.assign(cell=[f"{v:g} {u}".strip() for v, u in zip(group.value, group.unit)])
        wide = cells.pivot_table(index="row", columns="column", values="cell", aggfunc="first", sort=False)
        wide = wide.reset_index().rename(columns={"row": ""})
        wide.columns.name = None
        label = f"{paper} {ref}" + (f" ({dataset})" if dataset else "")
        tables.append(PublishedTable(label, html_table(wide, "data paper", missing=""), markdown_table(wide)))
    return tuple(tables)


TABLE_LACKS = (KeyError, ValueError, IndexError, TypeError, ZeroDivisionError, AttributeError)


def _reading(paper_target: PaperTarget, frames: Tables) -> str:
    if not frames:
        return ""
    try:
        return paper_target.reading(frames)
    except TABLE_LACKS as exc:
        return f"(no reading: the table lacks what the reading needs: {exc!r})"


def claim_check(claim: Claim, frames: Tables) -> ClaimCheck:
    """Ours against one claim of the paper's text; a claim with no measurable statement is not checked."""
    if claim.check is None:
        return ClaimCheck("the claim states nothing we can measure", None)
    return claim.check(frames)


def _compared(
    paper_target: PaperTarget, frames: Tables, published: pd.DataFrame, smoke: bool = False
) -> tuple[RenderedTable | None, str, Verdict | None, str]:
    """Ours in the paper's layout, and the verdict; where either cannot be made, why."""
    if not paper_target.reproduces_paper:
        return None, "", None, "a project benchmark: no paper table to reproduce"
    if not frames:
        return None, "", None, "not built"
    rows = published[published.target.isin(paper_target.published_targets)]
    if rows.empty and not paper_target.claims:
        return None, "", None, "the paper prints no number for it and its text claims nothing measurable"
    try:
        shape = paper_target.shape(frames) if paper_target.shape else None
        headlines = paper_target.headlines(frames, rows) if paper_target.headlines and not rows.empty else ()
        claims = tuple(claim_check(claim, frames) for claim in paper_target.claims)
    except TABLE_LACKS as exc:
        return None, "", None, f"the table lacks what the comparison needs: {exc!r}"
    shown = None
    ref = ""
    if shape is not None:
        laid_out = shape.frame.reset_index().rename(columns={shape.frame.index.name or "index": ""})
        laid_out.columns = [str(c) for c in laid_out.columns]
        shown = render_table(laid_out, f"ours as {shape.paper_ref}" + (f" ({shape.unit})" if shape.unit else ""))
        ref = shape.paper_ref + (f" ({shape.paper_dataset})" if shape.paper_dataset else "")
        if smoke:  # the layout is the paper's, the numbers are not of its data
            measured_on = f"the paper's: {shape.paper_dataset}; " if shape.paper_dataset else ""
            ref = f"{shape.paper_ref} ({measured_on}these numbers: {smoke_data(paper_target, frames)}, not measurements)"
    return shown, ref, judge(shape, rows, tuple(headlines), claims), ""


def view_of(
    paper_target: PaperTarget, results: Path, published: pd.DataFrame, figures_dir: Path, smoke: bool = False
) -> TargetView:
    missing = tuple(paper_target.missing_outputs(results))
    provenance = read_provenance(results, paper_target.name)
    smoke = smoke or bool(provenance is not None and provenance.smoke)
    frames = {path: pd.read_csv(results / path) for path in paper_target.tables if path not in missing}
    figures = []
    for path in paper_target.figures:
        if path not in missing:
            copied = f"{paper_target.name}-{Path(path).name}"
            shutil.copyfile(results / path, figures_dir / copied)
            figures.append(f"figures/{copied}")
    if not missing:
        status = "built"  # a benchmark that wrote its tables, then exited 1 on an unmet target, is built
    elif paper_target.absent_needs():
        status = "unavailable"  # not built for want of an optional dependency, which the note names
    elif provenance is not None and not provenance.ok:
        status = "failed"
    else:
        status = "partial" if len(missing) < len(paper_target.outputs) else "missing"
    paper_shape, paper_shape_ref, verdict, verdict_note = _compared(paper_target, frames, published, smoke)
    return TargetView(
        target=paper_target,
        status=status,
        tables=tuple(render_table(frame, path) for path, frame in frames.items()),
        figures=tuple(figures),
        published=published_tables(published, paper_target.name),
        reading=_reading(paper_target, frames),
        provenance=provenance,
        missing=missing,
        paper_shape=paper_shape,
        paper_shape_ref=paper_shape_ref,
        verdict=verdict,
        verdict_note=verdict_note,
        smoke=smoke,
    )


def runs_table(results: Path) -> pd.DataFrame:
    """Every run of every sweep under the results root, the headline columns and where its folder is."""
    frames = []
    for path in sorted(results.rglob("runs.parquet")):
        if {REPORT_DIR, SMOKE_DIR} & set(path.relative_to(results).parts):
            continue  # the smoke run's tiny runs have their own report (make paper SMOKE=1)
        frame = pd.read_parquet(path).rename(columns=LEGACY_COLUMNS)  # an older run's one memory figure
        if frame.empty:
            continue
        folder = path.parent.relative_to(results).as_posix()
        frame = frame[[column for column in RUN_COLUMNS if column in frame.columns]].copy()
        frame.insert(0, "sweep", folder if folder != "." else "")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["sweep", *RUN_COLUMNS])


def _runs_html(runs: pd.DataFrame) -> str:
    """The runs table with each run id linking its folder's summary.json (relative to the report folder)."""
    shown = runs.copy()
    for column in shown.columns:
        if shown[column].dtype == object:
            shown[column] = shown[column].map(lambda v: html.escape(str(v)) if isinstance(v, str) else v)
    if not shown.empty:
        shown["run_id"] = [
            f'<a href="../{f"{sweep}/" if sweep else ""}{run_id}/summary.json">{run_id}</a>'
            for sweep, run_id in zip(shown["sweep"], shown["run_id"])
        ]
    return html_table(shown, "data sortable", escape=False)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("dygsched.report", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def _own_minutes(record: Provenance) -> float:
    """A built target's minutes for the page's total: a reused sweep's time is its maker's; a resumed
    sweep's earlier sittings count with the build that finished it, where they were recorded."""
    if record.resumed_runs and record.minutes_with_runs is not None:
        return record.minutes_with_runs
    return record.wall_s / 60


def _runs_began(record: Provenance) -> str | None:
    """The day a resumed sweep's first sitting began, where recorded."""
    started = (record.sweep or {}).get("started") if record.resumed_runs else None
    return started[:10] if started else None


def render(results: Path, smoke: bool = False) -> Path:
    """Write `<results>/report/` (index.html, runs.html, README.md, reproduction.md and its docs/ copy
    reproduction.docs.md, figures/); returns the report folder."""
    results = Path(results)
    final = results / REPORT_DIR
    building = results / f".{REPORT_DIR}.building"
    shutil.rmtree(building, ignore_errors=True)
    (building / "figures").mkdir(parents=True)
    published = published_rows.published_numbers()
    views: dict[str, list[TargetView]] = {section.key: [] for section in registry.SECTIONS}
    for paper_target in registry.TARGETS:
        views[paper_target.paper].append(view_of(paper_target, results, published, building / "figures", smoke))
    runs = runs_table(results)
    verdicts = [view for section in registry.SECTIONS for view in views[section.key]]
    built = [view.provenance for view in verdicts if view.status == "built" and view.provenance is not None]
    context = {
        "sections": registry.SECTIONS,
        "verdicts": verdicts,
        "built_count": sum(view.status == "built" for view in verdicts),
        "build_dates": sorted({record.date[:10] for record in built} | {day for day in map(_runs_began, built) if day}),
        "build_minutes": sum(_own_minutes(record) for record in built),
        "views": views,
        "runs_count": len(runs),
        "smoke": smoke,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "results": results.as_posix(),
    }
    environment = _environment()
    (building / "index.html").write_text(environment.get_template("index.html.j2").render(**context))
    (building / "README.md").write_text(environment.get_template("README.md.j2").render(**context))
    reproduction = environment.get_template("reproduction.md.j2")
    # one copy whose links resolve here, one whose links resolve in the project's docs/ (make reproduction copies it)
    (building / "reproduction.md").write_text(reproduction.render(docs_copy=False, **context))
    (building / "reproduction.docs.md").write_text(reproduction.render(docs_copy=True, **context))
    (building / "runs.html").write_text(environment.get_template("runs.html.j2").render(table=_runs_html(runs), **context))
    if final.exists():
        shutil.rmtree(final)
    building.rename(final)
    return final
