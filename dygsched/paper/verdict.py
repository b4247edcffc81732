"""Whether a paper's shape reproduces here, computed from the numbers: one verdict per target.

Two checks, each from the target's own numbers against its published rows:

* **order**: the paper's table ranks its strategies (or variants, or settings); ours, laid out as the
  paper lays its table out (``PaperShape``), ranks them too. The check is Spearman's rank correlation
  between the two over the cells both have, taken along each row (or each column) and averaged,
  weighted by the cells compared. A line is only ranked where at least three cells line up (two
  cells always give +1 or -1, whatever the numbers): with fewer the order says "too few cells".
* **headlines**: each ratio the paper states (``Headline``), ours beside it and the quotient
  ours / paper. A ratio *agrees* when it points the same way as the paper's (both above 1, both
  below, or both within 2% of 1) and is *close* when the quotient lies between 1/2 and 2. A headline
  that is a plain value (a share, a saving) is only checked for being close. Where ours has a spread
  (the lowest and highest over seeds or rounds) and the spread covers the paper's value, the ratio
  agrees and is close: "within our spread". Where the spread covers 1 as well, the check says so
  instead of judging the direction.
* **claims**: a figure that prints no number is judged by what the paper's text says of it, in its
  words, where the claim is measurable (DyGNeX figure 3: the final accuracies lie within 3%). A claim
  that holds counts as a headline that agrees and is close.

The word, by this rule (docs/report.md states it too):

* **reproduced**: the order correlates at 0.8 or more (or is not taken) and every headline agrees and
  is close, and every measured claim holds;
* **not**: the order correlates at 0 or less, or no headline agrees and no claim holds (when there
  are some);
* **partly**: everything between;
* **not measured**: there was nothing of ours to compare (no shared cell, no headline or claim measured).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from dygsched.paper.target import ClaimCheck, Headline, PaperShape

ORDER_REPRODUCED = 0.8
MIN_CELLS = 3  # per line: Spearman's rho over two cells is always +1 or -1
CLOSE_FACTOR = 2.0
NEAR_ONE = 0.02


WITHIN_SPREAD = "within our spread"
SPREAD_COVERS_ONE = "our spread covers 1 and the paper's value: no direction can be told"


@dataclass(frozen=True)
class HeadlineCheck:
    headline: Headline
    agrees: bool | None  # None where ours is missing
    close: bool | None
    note: str = ""  # WITHIN_SPREAD or SPREAD_COVERS_ONE where the spread decided


@dataclass(frozen=True)
class Verdict:
    order: float | None  # Spearman's rho, ours against the paper's; None where not taken
    cells: int  # how many cells the order compared
    headlines: tuple[HeadlineCheck, ...]
    word: str
    short_lines: int = 0  # lines left out of the order for sharing fewer than MIN_CELLS cells
    claims: tuple[ClaimCheck, ...] = ()

    @property
    def summary(self) -> str:
        parts = []
        if self.order is not None:
            parts.append(f"order ρ = {self.order:+.2f} over {self.cells} cells")
        elif self.short_lines:
            parts.append(f"order not judged: too few cells (fewer than {MIN_CELLS} in each line that lines up)")
        measured = [check for check in self.headlines if check.agrees is not None]
        if measured:
            parts.append(
                f"{sum(bool(c.agrees and c.close) for c in measured)} of {len(measured)} headline ratios agree and are within 2x"
            )
            spread = sum(bool(c.note) for c in measured)
            if spread:
                parts[-1] += f" ({spread} within our spread over seeds or rounds)"
        claims = [claim for claim in self.claims if claim.holds is not None]
        if claims:
            parts.append(f"{sum(bool(c.holds) for c in claims)} of {len(claims)} claims of the paper's text hold")
        return "; ".join(parts) if parts else "nothing of ours to compare"


def _direction(value: float) -> int:
    return 0 if abs(value - 1) <= NEAR_ONE else (1 if value > 1 else -1)


def _covers(spread: tuple[float, float], value: float) -> bool:
    low, high = spread
    return low <= value <= high


def check_headline(headline: Headline) -> HeadlineCheck:
    quotient = headline.quotient
    if quotient is None:
        return HeadlineCheck(headline, None, None)
    if headline.spread is not None and _covers(headline.spread, headline.paper):
        covers_one = headline.ratio and _covers(headline.spread, 1.0)
        return HeadlineCheck(headline, True, True, SPREAD_COVERS_ONE if covers_one else WITHIN_SPREAD)
    close = 1 / CLOSE_FACTOR <= quotient <= CLOSE_FACTOR
    agrees = _direction(headline.ours) == _direction(headline.paper) if headline.ratio else close  # type: ignore[arg-type]
    return HeadlineCheck(headline, agrees, close)


def published_frame(published: pd.DataFrame, ref: str, dataset: str = "") -> pd.DataFrame:
    """The paper's table ``ref`` (of ``dataset``; the first dataset when empty) as rows x columns of numbers."""
    rows = published[published.ref == ref]
    if rows.empty:
        return pd.DataFrame()
    chosen = dataset or rows.dataset.iloc[0]
    rows = rows[rows.dataset == chosen]
    return rows.pivot_table(index="row", columns="column", values="value", aggfunc="first", sort=False)


def rank_correlation(ours: pd.DataFrame, paper: pd.DataFrame, within: str) -> tuple[float | None, int]:
    """Spearman's rho of ours against the paper's along each row (``within="rows"``) or each column,
    averaged weighted by the cells compared; lines with fewer than ``MIN_CELLS`` shared, varying
    cells are left out (``short_lines`` counts those that had some)."""
    rho, cells, _ = _rank_correlation(ours, paper, within)
    return rho, cells


def _rank_correlation(ours: pd.DataFrame, paper: pd.DataFrame, within: str) -> tuple[float | None, int, int]:
    from scipy.stats import spearmanr

    rows = [r for r in ours.index if r in paper.index]
    columns = [c for c in ours.columns if c in paper.columns]
    if not rows or not columns:
        return None, 0, 0
    ours, paper = ours.loc[rows, columns].astype(float), paper.loc[rows, columns].astype(float)
    lines = [(ours.loc[r], paper.loc[r]) for r in rows] if within == "rows" else [(ours[c], paper[c]) for c in columns]
    total, weight, short = 0.0, 0, 0
    for mine, theirs in lines:
        both = mine.notna() & theirs.notna()
        if 0 < both.sum() < MIN_CELLS:
            short += 1
        if both.sum() < MIN_CELLS or mine[both].nunique() < 2 or theirs[both].nunique() < 2:
            continue
        rho = spearmanr(mine[both].to_numpy(), theirs[both].to_numpy()).statistic
        if rho == rho:
            total += float(rho) * int(both.sum())
            weight += int(both.sum())
    return (total / weight, weight, short) if weight else (None, 0, short)


def judge(
    shape: PaperShape | None,
    published: pd.DataFrame,
    headlines: tuple[Headline, ...],
    claims: tuple[ClaimCheck, ...] = (),
) -> Verdict:
    """The verdict for one target: ``shape`` (ours as the paper's table) against ``published`` (its
    rows), its ``headlines`` and the checks of its text's ``claims``."""
    order, cells, short = (None, 0, 0)
    if shape is not None:
        paper = (
            shape.paper_frame
            if shape.paper_frame is not None
            else published_frame(published, shape.paper_ref, shape.paper_dataset)
        )
        order, cells, short = _rank_correlation(shape.frame, paper, shape.rank_within)
    checks = tuple(check_headline(h) for h in headlines)
    measured = [c for c in checks if c.agrees is not None]
    held = [claim.holds for claim in claims if claim.holds is not None]
    if order is None and not measured and not held:
        word = "not measured"
    elif (order is None or order >= ORDER_REPRODUCED) and all(c.agrees and c.close for c in measured) and all(held):
        word = "reproduced"
    elif (order is not None and order <= 0) or ((measured or held) and not any(c.agrees for c in measured) and not any(held)):
        word = "not"
    else:
        word = "partly"
    if order is not None and math.isnan(order):
        order = None
    return Verdict(order, cells, checks, word, short, claims)
