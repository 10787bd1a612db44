"""Parity: the project's BFCL checker and bfcl-eval's own give the same verdict on hand-written outputs.

Every case below is written by hand with its expected verdict (neither checker produced it): correct
calls, wrong values, wrong types, missing required / omitted non-optional arguments, extra arguments,
wrong function names, call counts, parallel and multiple calls, string normalisation, the "variable"
and optional-marker corner cases, and relevance. The project's checker must give the expected
verdict everywhere (always run); bfcl-eval, run out of process in its own environment, must give it
too (skipped, with the reason, when that environment is absent).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from surrogate_dagster.evals.harness import bfcl, bfcl_official
from surrogate_dagster.evals.harness.bfcl_ast import check_sample
from surrogate_dagster.paths import shared_dir
from surrogate_dagster.sources.hermes import format_tool_calls
from tests.support.scripted_model import ScriptedModel

DATA = shared_dir() / "data/benchmarks/BFCL"

OFFICIAL = bfcl_official.official_python()
needs_official = pytest.mark.skipif(
    OFFICIAL is None, reason=f"no bfcl-eval environment ({bfcl_official.DEFAULT_PYTHON}; `make setup` builds it)")

AREA = {"name": "geometry.area", "description": "Area of a shape.", "parameters": {
    "type": "dict", "required": ["base", "height"], "properties": {
        "base": {"type": "integer"}, "height": {"type": "float"}, "unit": {"type": "string"},
        "dims": {"type": "array", "items": {"type": "integer"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "dict", "properties": {"mode": {"type": "string"}, "level": {"type": "integer"}}},
        "points": {"type": "array", "items": {"type": "dict"}},
        "exact": {"type": "boolean"}, "pair": {"type": "tuple", "items": {"type": "integer"}},
        "note": {"type": "string"}}}}
WEATHER = {"name": "get_weather", "description": "Forecast.", "parameters": {
    "type": "dict", "required": ["city"], "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}
GT_AREA = {"geometry.area": {
    "base": [10], "height": [5.0], "unit": ["cm", "centimeters", ""], "dims": [[1, 2], ""],
    "tags": [["Red Fox", "blue"], ""], "opts": [{"mode": ["fast", ""], "level": [1]}, ""],
    "points": [[{"x": [1], "y": [2]}], ""], "exact": [True, ""], "pair": [[3, 4], ""]}}
GT_PARIS = {"get_weather": {"city": ["Paris", "Paris, France"], "days": [3, ""]}}
GT_BERLIN = {"get_weather": {"city": ["Berlin"], "days": [""]}}


def area(**kw):
    return {"name": "geometry.area", "arguments": {"base": 10, "height": 5.0, **kw}}


def weather(city, **kw):
    return {"name": "get_weather", "arguments": {"city": city, **kw}}


def gt_area(**override):
    g = copy.deepcopy(GT_AREA)
    g["geometry.area"].update(override)
    return [g]


# (case id, category, functions, ground truth, calls, expected verdict)
AST_CASES = [
    ("correct-minimal", "simple_python", [AREA], [GT_AREA], [area()], True),
    ("int-for-float", "simple_python", [AREA], [GT_AREA], [area(height=5)], True),
    ("float-for-int", "simple_python", [AREA], [GT_AREA], [area(base=10.0)], False),
    ("bool-for-int", "simple_python", [AREA], [GT_AREA], [{"name": "geometry.area",
                                                           "arguments": {"base": True, "height": 5.0}}], False),
    ("string-for-int", "simple_python", [AREA], [GT_AREA], [area(base="10")], False),
    ("wrong-value", "simple_python", [AREA], [GT_AREA], [area(base=11)], False),
    ("missing-required", "simple_python", [AREA], [GT_AREA], [{"name": "geometry.area",
                                                               "arguments": {"base": 10}}], False),
    ("extra-unknown-arg", "simple_python", [AREA], [GT_AREA], [area(color="red")], False),
    ("extra-arg-not-in-gt", "simple_python", [AREA], [GT_AREA], [area(note="hi")], False),
    ("omitted-non-optional", "simple_python", [AREA], gt_area(unit=["cm"]), [area()], False),
    ("given-non-optional", "simple_python", [AREA], gt_area(unit=["cm"]), [area(unit="cm")], True),
    ("wrong-function-name", "simple_python", [AREA], [GT_AREA], [{"name": "geometry_area",
                                                                  "arguments": {"base": 10, "height": 5.0}}], False),
    ("two-calls-in-simple", "simple_python", [AREA], [GT_AREA], [area(), area()], False),
    ("no-call", "simple_python", [AREA], [GT_AREA], [], False),
    # string normalisation: case, spaces and ,./-_*^ are folded; other characters are not
    ("str-case", "simple_python", [AREA], [GT_AREA], [area(unit="CM")], True),
    ("str-hyphen", "simple_python", [AREA], [GT_AREA], [area(unit="centi-meters")], True),
    ("str-space-dot", "simple_python", [AREA], [GT_AREA], [area(unit="c m.")], True),
    ("str-other-word", "simple_python", [AREA], [GT_AREA], [area(unit="mm")], False),
    ("str-plural", "simple_python", [AREA], [GT_AREA], [area(unit="cms")], False),
    ("str-quote-fold", "simple_python", [AREA], gt_area(unit=["it's"]), [area(unit='IT"S')], True),
    ("list-str-fold", "simple_python", [AREA], [GT_AREA], [area(tags=["red fox", "Blue"])], True),
    ("list-order", "simple_python", [AREA], [GT_AREA], [area(tags=["blue", "Red Fox"])], False),
    ("list-short", "simple_python", [AREA], [GT_AREA], [area(tags=["Red Fox"])], False),
    ("list-int", "simple_python", [AREA], [GT_AREA], [area(dims=[1, 2])], True),
    ("list-int-wrong", "simple_python", [AREA], [GT_AREA], [area(dims=[2, 1])], False),
    ("list-item-type-str", "simple_python", [AREA], [GT_AREA], [area(dims=["1", "2"])], False),
    # items of the wrong type fall into the "variable" case (the ground truth's type is list) and are
    # compared as is, where 1.0 == 1 in Python
    ("list-item-type-float", "simple_python", [AREA], [GT_AREA], [area(dims=[1.0, 2.0])], True),
    # the optional marker "" reads as an empty list
    ("list-empty-optional", "simple_python", [AREA], [GT_AREA], [area(dims=[])], True),
    ("list-empty-required", "simple_python", [AREA], gt_area(dims=[[1, 2]]), [area(dims=[])], False),
    ("list-not-list", "simple_python", [AREA], [GT_AREA], [area(dims=1)], False),
    ("tuple-as-list", "simple_python", [AREA], [GT_AREA], [area(pair=[3, 4])], True),
    ("dict-optional-key", "simple_python", [AREA], [GT_AREA], [area(opts={"level": 1})], True),
    ("dict-str-fold", "simple_python", [AREA], [GT_AREA], [area(opts={"mode": "FAST", "level": 1})], True),
    ("dict-wrong-value", "simple_python", [AREA], [GT_AREA], [area(opts={"mode": "slow", "level": 1})], False),
    ("dict-missing-key", "simple_python", [AREA], [GT_AREA], [area(opts={"mode": "fast"})], False),
    ("dict-extra-key", "simple_python", [AREA], [GT_AREA], [area(opts={"level": 1, "depth": 2})], False),
    ("list-of-dicts", "simple_python", [AREA], [GT_AREA], [area(points=[{"x": 1, "y": 2}])], True),
    ("list-of-dicts-missing", "simple_python", [AREA], [GT_AREA], [area(points=[{"x": 1}])], False),
    ("list-of-dicts-empty-optional", "simple_python", [AREA], [GT_AREA], [area(points=[])], True),
    ("bool", "simple_python", [AREA], [GT_AREA], [area(exact=True)], True),
    ("int-for-bool", "simple_python", [AREA], [GT_AREA], [area(exact=1)], False),
    ("string-for-bool", "simple_python", [AREA], [GT_AREA], [area(exact="true")], False),
    # "variable": the ground truth spells an integer parameter as a variable name (a string)
    ("variable-name", "simple_python", [AREA], gt_area(base=["n"]), [area(base="n")], True),
    ("variable-no-fold", "simple_python", [AREA], gt_area(base=["n"]), [area(base="N")], False),
    # simple categories check against the first listed function
    ("simple-first-function", "simple_python", [WEATHER, AREA], [GT_AREA], [area()], False),
    ("live-simple", "live_simple", [WEATHER], [GT_PARIS], [weather("paris, france", days=3)], True),
    ("live-simple-wrong", "live_simple", [WEATHER], [GT_PARIS], [weather("Lyon")], False),
    ("multiple", "multiple", [AREA, WEATHER], [GT_PARIS], [weather("Paris")], True),
    ("multiple-wrong-function", "multiple", [AREA, WEATHER], [GT_PARIS], [area()], False),
    ("multiple-two-calls", "multiple", [AREA, WEATHER], [GT_PARIS], [weather("Paris"), area()], False),
    ("live-multiple", "live_multiple", [AREA, WEATHER], [GT_PARIS], [weather("Paris", days=3)], True),
    ("live-multiple-wrong-type", "live_multiple", [AREA, WEATHER], [GT_PARIS], [weather("Paris", days="3")],
     False),
    ("parallel", "parallel", [WEATHER], [GT_PARIS, GT_BERLIN], [weather("Paris"), weather("Berlin")], True),
    ("parallel-any-order", "parallel", [WEATHER], [GT_PARIS, GT_BERLIN], [weather("Berlin"), weather("Paris")],
     True),
    ("parallel-missing", "parallel", [WEATHER], [GT_PARIS, GT_BERLIN], [weather("Paris")], False),
    ("parallel-duplicate", "parallel", [WEATHER], [GT_PARIS, GT_BERLIN], [weather("Paris"), weather("Paris")],
     False),
    ("parallel-too-many", "parallel", [WEATHER], [GT_PARIS, GT_BERLIN],
     [weather("Paris"), weather("Berlin"), weather("Rome")], False),
    ("parallel-extra-arg", "live_parallel", [WEATHER], [GT_PARIS, GT_BERLIN],
     [weather("Paris"), weather("Berlin", days=2)], False),
    ("parallel-multiple", "parallel_multiple", [AREA, WEATHER], [GT_AREA, GT_PARIS], [weather("Paris"), area()],
     True),
    ("parallel-multiple-wrong", "live_parallel_multiple", [AREA, WEATHER], [GT_AREA, GT_PARIS],
     [area(), weather("Paris", days=4)], False),
]

CALL = format_tool_calls([weather("Paris")])
# (case id, category, functions, ground truth, raw model text, expected verdict): decoding included
TEXT_CASES = [
    ("irrelevance-declines", "irrelevance", [WEATHER], None, "I cannot look that up with these tools.", True),
    ("irrelevance-calls", "irrelevance", [WEATHER], None, CALL, False),
    ("irrelevance-malformed-call", "irrelevance", [WEATHER], None, "<tool_call>\n{not json\n</tool_call>", True),
    ("live-irrelevance-calls", "live_irrelevance", [WEATHER], None, CALL, False),
    ("live-relevance-calls", "live_relevance", [WEATHER], None, CALL, True),
    ("live-relevance-text", "live_relevance", [WEATHER], None, "Paris is sunny.", False),
    ("ast-decode-error", "simple_python", [WEATHER], [GT_PARIS], "<tool_call>\n{not json\n</tool_call>", False),
    ("ast-text-call", "simple_python", [WEATHER], [GT_PARIS], CALL, True),
]


def _project(category, functions, gt, calls, err):
    q = {"id": "x", "function": functions}
    return bfcl.project_verdict(category, q, {"x": gt}, calls, err)


def _items():
    items, expected = [], {}
    for cid, cat, funcs, gt, calls, want in AST_CASES:
        items.append(bfcl_official.make_item(cid, cat, funcs, gt, calls, None))
        expected[cid] = want
    for cid, cat, funcs, gt, text, want in TEXT_CASES:
        calls, err = bfcl.decode_calls(text)
        items.append(bfcl_official.make_item(cid, cat, funcs, gt, calls, err))
        expected[cid] = want
    return items, expected


def test_cases_cover_every_scored_category():
    cats = {c[1] for c in AST_CASES} | {c[1] for c in TEXT_CASES}
    assert cats == set(bfcl.AST_CATEGORIES) | set(bfcl.RELEVANCE_CATEGORIES)
    ids = [c[0] for c in AST_CASES + TEXT_CASES]
    assert len(ids) == len(set(ids))
    assert {c[-1] for c in AST_CASES} == {True, False}


@pytest.mark.parametrize("cid, cat, funcs, gt, calls, want", AST_CASES, ids=[c[0] for c in AST_CASES])
def test_project_checker_gives_the_expected_verdict(cid, cat, funcs, gt, calls, want):
    reason = check_sample(cat, funcs, calls, gt)
    assert (reason is None) is want, reason


@pytest.mark.parametrize("cid, cat, funcs, gt, text, want", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_project_verdict_on_raw_outputs(cid, cat, funcs, gt, text, want):
    calls, err = bfcl.decode_calls(text)
    assert _project(cat, funcs, gt, calls, err)[0] is want


@pytest.fixture(scope="module")
def official_verdicts():
    items, expected = _items()
    label, verdicts = bfcl_official.check(items)
    return label, verdicts, expected


@needs_official
def test_official_checker_gives_the_same_verdicts(official_verdicts):
    label, verdicts, expected = official_verdicts
    assert label.startswith("bfcl-eval ")
    wrong = {k: (want, verdicts[k]) for k, want in expected.items() if verdicts[k]["valid"] is not want}
    assert not wrong, json.dumps(wrong, indent=1, default=str)
    assert not any(v["error_type"] == "checker_exception" for v in verdicts.values())


@needs_official
def test_official_failures_name_the_rule(official_verdicts):
    _, verdicts, _ = official_verdicts
    assert verdicts["missing-required"]["error_type"] == "simple_function_checker:missing_required"
    assert verdicts["wrong-function-name"]["error_type"] == "simple_function_checker:wrong_func_name"
    assert verdicts["string-for-int"]["error_type"] == "type_error:simple"
    assert verdicts["ast-decode-error"]["error_type"] == "ast_decoder:decoder_failed"


@needs_official
def test_checker_exception_is_a_recorded_failure_not_a_crash():
    broken = copy.deepcopy(WEATHER)
    del broken["parameters"]["required"]  # bfcl-eval raises KeyError on this
    item = bfcl_official.make_item("k", "simple_python", [broken], [GT_PARIS], [weather("Paris")], None)
    _, verdicts = bfcl_official.check([item])
    assert verdicts["k"]["valid"] is False and verdicts["k"]["error_type"] == "checker_exception"
    assert check_sample("simple_python", [broken], [weather("Paris")], [GT_PARIS]) is not None


def test_runner_failure_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unique"):
        bfcl_official.check([{"key": "a"}, {"key": "a"}], python=tmp_path / "python")
    # this environment's interpreter has no bfcl_eval: the runner cannot import it and exits non-zero
    with pytest.raises(bfcl_official.OfficialCheckerError, match="runner exited"):
        bfcl_official.check([{"key": "a"}], python=Path(sys.executable))


def _answer(req):
    return format_tool_calls([{"name": "nothing", "arguments": {}}]) if "simple" in str(req) else "No."


def test_fallback_scorer_is_labelled(monkeypatch, tmp_path):
    monkeypatch.delenv(bfcl_official.ENV_VAR, raising=False)
    monkeypatch.setattr(bfcl_official, "DEFAULT_PYTHON", tmp_path / "absent" / "python")
    assert bfcl.pick_scorer("auto") == "project"
    with pytest.raises(bfcl_official.OfficialCheckerError, match="make setup"):
        bfcl.pick_scorer("official")
    with pytest.raises(ValueError, match="scorer"):
        bfcl.pick_scorer("mine")
    rep = bfcl.run(ScriptedModel(_answer), DATA, categories=["simple_python", "irrelevance"], max_per_category=2)
    assert rep.metrics["scorer"] == "project-ast (parity-tested)"
    assert any(n.startswith("scorer: project-ast (parity-tested)") for n in rep.notes)
    assert "parity_disagreements" not in rep.metrics
    monkeypatch.setenv(bfcl_official.ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(bfcl_official.OfficialCheckerError, match="does not exist"):
        bfcl.pick_scorer("auto")


@needs_official
def test_run_scores_with_bfcl_eval_and_says_so():
    def answer(req):  # right on the first simple_python question (its ground truth), wrong elsewhere
        return first_call if first_q_text in str(req) else _answer(req)
    questions, answers, _ = bfcl.load_category(DATA, "simple_python")
    first_q_text = questions[0]["question"][0][-1]["content"]
    (name, params), = answers[questions[0]["id"]][0].items()
    first_call = format_tool_calls([{"name": name, "arguments": {
        p: [v for v in vals if v != ""][0] for p, vals in params.items() if [v for v in vals if v != ""]}}])
    rep = bfcl.run(ScriptedModel(answer), DATA, categories=["simple_python", "irrelevance", "live_relevance"],
                   max_per_category=3, scorer="official")
    assert rep.metrics["scorer"].startswith("bfcl-eval ") and f"scorer: {rep.metrics['scorer']}" in rep.notes
    assert rep.metrics["accuracy_by_category"] == {"simple_python": pytest.approx(100 / 3, abs=0.01),
                                                   "irrelevance": 100.0, "live_relevance": 0.0}
    assert rep.metrics["parity_disagreements"] == 0 and rep.metrics["checker_exceptions"] == 0
    s = rep.samples[1]
    assert s["passed"] is False and s["project_passed"] is False and s["reason"].startswith("simple_function_checker")


def test_gated_figure_is_the_harness_categories_not_the_overall():
    from surrogate_dagster.evals.config import load_eval_catalog
    b = load_eval_catalog().tier1.bfcl
    # the yaml's categories are the ones the harness scores (each one, once) and the gate is the variant's
    assert len(b.categories) == len(set(b.categories)) == 11
    assert set(b.categories) <= set(bfcl.AST_CATEGORIES) | set(bfcl.RELEVANCE_CATEGORIES)
    assert b.variant.threshold == 80 and b.threshold == 70
    assert "11 single-turn" in b.variant.differs and "not the leaderboard's overall" in b.variant.differs
    assert "bfcl-eval" in b.variant.differs
