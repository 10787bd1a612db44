"""BFCL wrapper: the AST checker on known answers (bfcl-eval's rules), Hermes decoding, relevance
categories, and the whole shipped AST data answered by its own ground truth."""

from __future__ import annotations

import pytest

from surrogate_dagster.evals.harness import bfcl
from surrogate_dagster.evals.harness.bfcl_ast import check_call, check_sample, std_string
from surrogate_dagster.paths import shared_dir
from surrogate_dagster.sources.hermes import format_tool_calls
from tests.support.scripted_model import ScriptedModel

DATA = shared_dir() / "data/benchmarks/BFCL"
FUNC = {"name": "calc.area", "parameters": {"type": "dict", "required": ["base", "height"], "properties": {
    "base": {"type": "integer"}, "height": {"type": "float"}, "unit": {"type": "string"},
    "dims": {"type": "array", "items": {"type": "integer"}}, "opts": {"type": "dict"}}}}
GT = {"calc.area": {"base": [10], "height": [5.0], "unit": ["units", ""], "dims": [[1, 2], ""],
                    "opts": [{"mode": ["fast", ""], "level": [1]}, ""]}}


@pytest.mark.parametrize("args, ok", [
    ({"base": 10, "height": 5.0}, True),
    ({"base": 10, "height": 5}, True),                           # int accepted for float
    ({"base": 10, "height": 5.0, "unit": "Units"}, True),        # strings: case and punctuation folded
    ({"base": 10, "height": 5.0, "dims": [1, 2]}, True),
    ({"base": 10, "height": 5.0, "opts": {"level": 1}}, True),   # dict key with "" may be omitted
    ({"base": 10}, False),                                       # missing required
    ({"base": "10", "height": 5.0}, False),                      # wrong type
    ({"base": 11, "height": 5.0}, False),                        # wrong value
    ({"base": 10, "height": 5.0, "color": "red"}, False),        # unknown parameter
    ({"base": 10, "height": 5.0, "dims": [1, 3]}, False),
    ({"base": 10, "height": 5.0, "opts": {"mode": "slow", "level": 1}}, False),
    ({"base": 10, "height": 5.0, "opts": {"mode": "fast"}}, False),  # required dict key missing
])
def test_check_call(args, ok):
    assert (check_call(FUNC, {"name": "calc.area", "arguments": args}, GT) is None) is ok


def test_parallel_any_order_and_count():
    f2 = {"name": "f", "parameters": {"type": "dict", "required": ["x"], "properties": {"x": {"type": "integer"}}}}
    gt = [{"f": {"x": [1]}}, {"f": {"x": [2]}}]
    calls = [{"name": "f", "arguments": {"x": 2}}, {"name": "f", "arguments": {"x": 1}}]
    assert check_sample("parallel", [f2], calls, gt) is None
    assert check_sample("parallel", [f2], calls[:1], gt).startswith("wrong number")
    assert check_sample("parallel", [f2], [calls[0], calls[0]], gt) is not None
    assert check_sample("simple_python", [f2], calls, gt[:1]).startswith("wrong number")


def test_std_string_rule():
    assert std_string("April 1, 2024") == std_string("april 1 2024") == "april12024"


def test_relevance_categories_and_decode_errors():
    q = {"id": "x", "function": [FUNC]}
    call = format_tool_calls([{"name": "calc.area", "arguments": {"base": 10, "height": 5.0}}])
    assert bfcl.score_output("irrelevance", q, {}, "That is not something these tools do.")[0] is True
    assert bfcl.score_output("irrelevance", q, {}, call)[0] is False
    assert bfcl.score_output("live_relevance", q, {}, call)[0] is True
    assert bfcl.score_output("live_relevance", q, {}, "no")[0] is False
    ok, reason, _ = bfcl.score_output("simple_python", q, {"x": [GT]}, "<tool_call>{not json</tool_call>")
    assert not ok and reason.startswith("decode")
    ok, reason, _ = bfcl.score_output("simple_python", q, {"x": [GT]}, "<tool_call>\n" + '{"name": "calc.area"')
    assert not ok


def _ideal(gt: list[dict]) -> list[dict]:
    """The first acceptable value of every parameter that has one (nested dicts reduced likewise)."""
    def red(v):
        if isinstance(v, dict):
            return {k: red([x for x in vs if x != ""][0]) for k, vs in v.items() if [x for x in vs if x != ""]}
        if isinstance(v, list) and v and all(isinstance(e, dict) for e in v):
            return [red(e) for e in v]
        return v
    return [{"name": n, "arguments": {p: red([x for x in vals if x != ""][0]) for p, vals in params.items()
                                      if [x for x in vals if x != ""]}}
            for exp in gt for n, params in exp.items()]


@pytest.mark.parametrize("category", ["simple_python", "multiple", "parallel", "live_parallel"])
def test_ground_truth_answers_pass_and_renamed_calls_fail(category):
    questions, answers, info = bfcl.load_category(DATA, category)
    assert len(info["sha256"]) == 64
    for q in questions:
        calls = _ideal(answers[q["id"]])
        ok, reason, _ = bfcl.score_output(category, q, answers, format_tool_calls(calls))
        assert ok, (q["id"], reason)
        calls[0]["name"] += "_v2"
        assert not bfcl.score_output(category, q, answers, format_tool_calls(calls))[0]


def test_run_reports_per_category_and_names_the_subset():
    def answer(req):  # a model that always calls the first listed function with no arguments
        return format_tool_calls([{"name": "nothing", "arguments": {}}]) if "simple" in str(req) else "No."
    # the project's checker (bfcl-eval's own, in .venv-bfcl: tests/env/test_bfcl_official_parity.py)
    rep = bfcl.run(ScriptedModel(answer), DATA, categories=["simple_python", "irrelevance"], max_per_category=3,
                   scorer="project")
    assert rep.metrics["accuracy_by_category"] == {"simple_python": 0.0, "irrelevance": 100.0}
    assert rep.score == 50.0 and rep.n_items == 6
    assert any("subset: first 3" in n for n in rep.notes)
    req, _ = bfcl.build_request(bfcl.load_category(DATA, "simple_python")[0][0], 32)
    assert "<tools>" in req.messages[0]["content"] and '"type": "object"' in req.messages[0]["content"]
    # without bfcl-eval a multi-turn category is named as not run, never scored by the project's checker
    rep = bfcl.run(ScriptedModel(answer), DATA, categories=["simple_python", "multi_turn_base"], max_per_category=1,
                   scorer="project", not_run={"web_search_base": "needs the internet"})
    assert set(rep.metrics["accuracy_by_category"]) == {"simple_python"}
    assert rep.metrics["not_run"] == {"web_search_base": "needs the internet",
                                      "multi_turn_base": "bfcl-eval environment absent (.venv-bfcl, or "
                                                         "SURROGATE_BFCL_PYTHON): " + bfcl.IN_PROCESS_REASON}
    assert "FALLBACK" in rep.notes[0] and rep.metrics["fallback"].startswith("bfcl-eval environment absent")
    with pytest.raises(ValueError, match="none of the categories is scorable"):
        bfcl.run(ScriptedModel(answer), DATA, categories=["multi_turn_base"], max_per_category=1, scorer="project")
