"""The leaderboard's overall formula (evals/harness/bfcl_overall.py) on hand-computed figures; its parity
with bfcl-eval's own generate_leaderboard_csv: tests/env/test_bfcl_overall_parity.py."""

from __future__ import annotations

import pytest

from surrogate_dagster.evals.harness import bfcl, bfcl_overall


def S(acc, n=10):
    return {"accuracy": acc, "total_count": n}


def test_leaves_are_the_leaderboards_scored_categories():
    assert len(bfcl_overall.leaves()) == 21 and "live_relevance" not in bfcl_overall.leaves()
    assert bfcl_overall.leaves()[:3] == ["simple_python", "simple_java", "simple_javascript"]


def test_drop_renormalizes_the_weights_over_what_ran():
    # simple_python 0.5 alone in non-live; irrelevance 1.0; multi_turn_base 0.2: weights 10, 10, 30 of 50
    r = bfcl_overall.overall({"simple_python": S(0.5), "irrelevance": S(1.0), "multi_turn_base": S(0.2)})
    assert r["overall"] == pytest.approx((10 * 0.5 + 10 * 1.0 + 30 * 0.2) / 50)  # 0.42
    assert r["groups"] == {"simple": 0.5, "non_live": 0.5, "irrelevance": 1.0, "multi_turn": 0.2}
    assert "agentic" not in r["groups"] and "web_search_base" in r["missing"]


def test_live_is_weighted_by_question_count_and_non_live_is_not():
    r = bfcl_overall.overall({"live_simple": S(1.0, 30), "live_multiple": S(0.0, 10),
                              "simple_python": S(1.0, 400), "multiple": S(0.0, 1)})
    assert r["groups"]["live"] == pytest.approx(0.75)      # (30*1 + 10*0) / 40
    assert r["groups"]["non_live"] == pytest.approx(0.5)   # mean(simple, multiple), counts ignored
    assert r["overall"] == pytest.approx(0.625)            # weights 10 and 10


def test_zero_counts_missing_categories_as_bfcl_eval_does():
    totals = {c: 5 for c in bfcl_overall.leaves()}
    full = {c: S(1.0) for c in bfcl_overall.leaves()}
    assert bfcl_overall.overall(full, missing="zero", totals=totals)["overall"] == pytest.approx(1.0)
    only_mt = {c: S(1.0) for c in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                   "multi_turn_long_context")}
    assert bfcl_overall.overall(only_mt, missing="zero", totals=totals)["overall"] == pytest.approx(0.30)
    assert bfcl_overall.overall(only_mt)["overall"] == pytest.approx(1.0)
    with pytest.raises(KeyError, match="totals"):
        bfcl_overall.overall(only_mt, missing="zero")
    with pytest.raises(ValueError, match="missing"):
        bfcl_overall.overall(only_mt, missing="skip")
    assert bfcl_overall.overall({})["overall"] is None


def test_report_score_is_the_formula_in_percent():
    score, detail = bfcl.leaderboard_score({"simple_python": 50.0, "irrelevance": 100.0, "multi_turn_base": 20.0},
                                           {"simple_python": 2, "irrelevance": 1, "multi_turn_base": 5})
    assert score == 42.0 and detail["groups"]["multi_turn"] == 20.0
    assert detail["categories_in_overall"] == ["simple_python", "irrelevance", "multi_turn_base"]
