"""Parity: the project's BFCL checker and bfcl-eval's own give the same verdict on hand-written outputs.

Every case below is written by hand with its expected verdict (neither checker produced it): correct
calls, wrong values, wrong types, missing required / omitted non-optional arguments, extra arguments,
wrong function names, call counts, parallel and multiple calls, string normalisation, the "variable"
and optional-marker corner cases, and relevance. The project's checker must give the expected
verdict everywhere (tests/unit/evals/test_bfcl_project_checker.py); bfcl-eval, run out of process in
its own environment, must give it too (skipped, with the reason, when that environment is absent).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from surrogate_dagster.evals.harness import bfcl, bfcl_official
from surrogate_dagster.evals.harness.bfcl_ast import check_sample
from surrogate_dagster.sources.hermes import format_tool_calls
from tests.support.scripted_model import ScriptedModel
from tests.unit.evals.test_bfcl_project_checker import AST_CASES, DATA, GT_PARIS, TEXT_CASES, WEATHER, _answer, weather


OFFICIAL = bfcl_official.official_python()
needs_official = pytest.mark.skipif(
    OFFICIAL is None, reason=f"no bfcl-eval environment ({bfcl_official.DEFAULT_PYTHON}; `make setup` builds it)")


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


@needs_official
def test_one_runner_process_serves_every_check():
    item = bfcl_official.make_item("k", "irrelevance", [WEATHER], None, [], None)
    bfcl_official.check([item])
    pid = bfcl_official._RUNNERS[str(OFFICIAL)].proc.pid
    _, verdicts = bfcl_official.check([item])
    assert bfcl_official._RUNNERS[str(OFFICIAL)].proc.pid == pid
    assert verdicts["k"]["valid"] is True  # no call on an irrelevance question
