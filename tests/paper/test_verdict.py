"""The verdict's rule, on hand-made numbers: order by rank correlation, ratios by quotient."""

import pandas as pd
import pytest

from dygsched.paper.target import ClaimCheck, Headline, PaperShape
from dygsched.paper.verdict import SPREAD_COVERS_ONE, WITHIN_SPREAD, check_headline, judge, published_frame, rank_correlation

PUBLISHED = pd.DataFrame(
    {
        "ref": ["Table 1"] * 6 + ["Table 1"] * 2,
        "dataset": ["A"] * 6 + ["B"] * 2,
        "row": ["psg", "greedy", "ilp"] * 2 + ["psg", "greedy"],
        "column": ["tgcn"] * 3 + ["wdgcn"] * 3 + ["tgcn"] * 2,
        "value": [3.0, 2.0, 1.0, 6.0, 5.0, 4.0, 100.0, 1.0],
    }
)


def shape(frame: pd.DataFrame, within: str = "columns") -> PaperShape:
    return PaperShape(frame, paper_ref="Table 1", paper_dataset="A", rank_within=within)


def ours(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(values, index=["psg", "greedy", "ilp"])


def test_the_paper_table_is_read_for_one_dataset_and_the_first_by_default():
    assert published_frame(PUBLISHED, "Table 1", "A").loc["greedy", "wdgcn"] == 5.0
    assert published_frame(PUBLISHED, "Table 1").loc["psg", "tgcn"] == 3.0
    assert published_frame(PUBLISHED, "Table 1", "B").loc["psg", "tgcn"] == 100.0
    assert published_frame(PUBLISHED, "Table 9").empty


def test_the_same_order_at_other_magnitudes_reproduces():
    verdict = judge(shape(ours({"tgcn": [30.0, 20.0, 10.0], "wdgcn": [0.6, 0.5, 0.4]})), PUBLISHED, ())
    assert verdict.order == pytest.approx(1.0) and verdict.cells == 6 and verdict.word == "reproduced"


def test_a_reversed_order_is_not_and_a_swap_is_partly():
    assert judge(shape(ours({"tgcn": [1.0, 2.0, 3.0]})), PUBLISHED, ()).word == "not"
    swapped = judge(shape(ours({"tgcn": [3.0, 1.0, 2.0]})), PUBLISHED, ())
    assert swapped.order == pytest.approx(0.5) and swapped.word == "partly"


def test_rows_rank_their_columns_when_asked():
    published = pd.DataFrame(
        {
            "ref": ["Table 2"] * 3,
            "dataset": ["A"] * 3,
            "row": ["psg"] * 3,
            "column": ["tgcn", "wdgcn", "gat"],
            "value": [3.0, 6.0, 9.0],
        }
    )
    frame = pd.DataFrame({"tgcn": [3.0], "wdgcn": [6.0], "gat": [7.0]}, index=["psg"])
    rho, cells = rank_correlation(frame, published_frame(published, "Table 2", "A"), "rows")
    assert rho == pytest.approx(1.0) and cells == 3
    assert rank_correlation(frame, published_frame(published, "Table 2", "A"), "columns") == (None, 0)  # one row per column


def test_two_cells_are_too_few_to_judge_an_order():
    """Spearman's rho over two cells is +1 or -1 whatever the numbers: such a line is left out."""
    frame = pd.DataFrame({"tgcn": [3.0], "wdgcn": [6.0]}, index=["psg"])
    assert rank_correlation(frame, published_frame(PUBLISHED, "Table 1", "A"), "rows") == (None, 0)
    reversed_pair = judge(shape(ours({"tgcn": [1.0, 2.0, float("nan")]})), PUBLISHED, ())
    assert reversed_pair.order is None and reversed_pair.short_lines == 1 and reversed_pair.word == "not measured"
    assert reversed_pair.summary == "order not judged: too few cells (fewer than 3 in each line that lines up)"


def test_cells_we_lack_are_left_out_not_counted_as_zero():
    frame = ours({"tgcn": [3.0, 2.0, 1.0], "wdgcn": [6.0, float("nan"), 4.0]})
    verdict = judge(shape(frame), PUBLISHED, ())
    assert verdict.cells == 3 and verdict.order == pytest.approx(1.0) and verdict.short_lines == 1


def test_headlines_agree_by_direction_and_are_close_within_a_factor_of_two():
    assert check_headline(Headline("x", 1.5, 1.2)).agrees and check_headline(Headline("x", 1.5, 1.2)).close
    far = check_headline(Headline("x", 1.1, 3.0))
    assert far.agrees and not far.close
    wrong_way = check_headline(Headline("x", 1.5, 0.9))
    assert wrong_way.agrees is False
    assert check_headline(Headline("x", 1.01, 0.99)).agrees  # both within 2% of 1: no difference either way
    missing = check_headline(Headline("x", 1.5, None))
    assert missing.agrees is None and missing.close is None
    share = check_headline(Headline("share", 0.3, 0.1, ratio=False))  # a plain value: close or not
    assert share.agrees is False and share.close is False


def test_the_word_combines_order_and_headlines():
    same = shape(ours({"tgcn": [3.0, 2.0, 1.0]}))
    assert judge(same, PUBLISHED, (Headline("a", 1.5, 1.4),)).word == "reproduced"
    assert judge(same, PUBLISHED, (Headline("a", 1.5, 1.4), Headline("b", 2.0, 5.0))).word == "partly"
    assert judge(None, PUBLISHED, (Headline("a", 1.5, 0.8), Headline("b", 2.0, 0.9))).word == "not"
    assert judge(None, PUBLISHED, (Headline("a", 1.5, None),)).word == "not measured"
    assert judge(None, PUBLISHED, ()).word == "not measured"
    summary = judge(same, PUBLISHED, (Headline("a", 1.5, 1.4), Headline("b", 2.0, None))).summary
    assert summary == "order ρ = +1.00 over 3 cells; 1 of 1 headline ratios agree and are within 2x"


def test_a_spread_over_seeds_that_covers_the_papers_value_agrees():
    # ours 0.97 alone points away from the paper's 1.01; over the seeds it runs 0.95-1.03, which covers it
    within = check_headline(Headline("a", 1.01, 0.97, spread=(0.95, 1.03)))
    assert within.agrees and within.close and within.note == SPREAD_COVERS_ONE  # and 1 too: no direction told
    covers_paper = check_headline(Headline("a", 1.5, 1.3, spread=(1.2, 1.6)))
    assert covers_paper.agrees and covers_paper.close and covers_paper.note == WITHIN_SPREAD
    outside = check_headline(Headline("a", 1.5, 0.9, spread=(0.8, 1.1)))  # covers 1 but not the paper's: the rule as before
    assert outside.agrees is False and outside.note == ""
    assert check_headline(Headline("a", 1.5, 0.9)).note == ""  # one seed: no spread
    summary = judge(None, PUBLISHED, (Headline("a", 1.5, 1.3, spread=(1.2, 1.6)), Headline("b", 2.0, 1.9))).summary
    assert summary == "2 of 2 headline ratios agree and are within 2x (1 within our spread over seeds or rounds)"
    with pytest.raises(ValueError, match="lowest, highest"):
        Headline("a", 1.5, 1.3, spread=(1.6, 1.2))


def test_a_figure_without_numbers_is_judged_by_its_texts_claims():
    holds, fails, unmeasured = ClaimCheck("spread 1%", True), ClaimCheck("spread 7%", False), ClaimCheck("no PSG", None)
    assert judge(None, PUBLISHED, (), (holds,)).word == "reproduced"
    assert judge(None, PUBLISHED, (), (fails,)).word == "not"
    assert judge(None, PUBLISHED, (), (holds, fails)).word == "partly"
    assert judge(None, PUBLISHED, (), (unmeasured,)).word == "not measured"
    assert judge(None, PUBLISHED, (Headline("a", 1.5, 1.4),), (fails,)).word == "partly"
    assert judge(None, PUBLISHED, (), (holds, unmeasured)).summary == "1 of 1 claims of the paper's text hold"


def test_a_paper_frame_given_with_the_shape_is_the_papers_side():
    """Ratios derived from several of the paper's cells are laid out beside ours, not read from one table."""
    paper = ours({"x": [3.0, 2.0, 1.0]})
    same = PaperShape(ours({"x": [30.0, 20.0, 10.0]}), paper_ref="derived", paper_frame=paper)
    reversed_ = PaperShape(ours({"x": [10.0, 20.0, 30.0]}), paper_ref="derived", paper_frame=paper)
    assert judge(same, PUBLISHED.iloc[:0], ()).order == pytest.approx(1.0)
    assert judge(reversed_, PUBLISHED.iloc[:0], ()).word == "not"
