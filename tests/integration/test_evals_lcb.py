"""LiveCodeBench wrapper: dated problems, cutoff filter, and known answers in the sandbox, for the
offline stand-in (assert tests) and for LCB's own row format (functional + stdin, encoded private
tests). The stand-in's parsing and the encoded tests' refusals: tests/unit/evals/test_lcb_standin.py."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from datetime import date

import pytest

from surrogate_dagster.evals.harness import livecodebench as L
from surrogate_dagster.sandbox import Sandbox
from tests.support.scripted_model import ScriptedModel
from tests.unit.evals.test_lcb_standin import problems

GOOD = {
    "minimumPushes": "class Solution:\n    def minimumPushes(self, word: str) -> int:\n"
                     "        return sum(i // 8 + 1 for i in range(len(word)))\n",
    "minimumCost": "class Solution:\n    def minimumCost(self, nums: List[int]) -> int:\n"
                   "        return nums[0] + sum(sorted(nums[1:])[:2])\n",
    "maxFrequencyElements": "class Solution:\n    def maxFrequencyElements(self, nums):\n"
                            "        c = Counter(nums)\n        m = max(c.values())\n"
                            "        return sum(v for v in c.values() if v == m)\n",
}


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def _lcb_row(qid: str, tests: list[dict], private_encoded: bool, starter: str = "", func: str = "") -> dict:
    public, private = tests[:1], tests[1:]
    priv = json.dumps(private)
    if private_encoded:  # LCB's storage: base64(zlib(pickle(json string)))
        priv = base64.b64encode(zlib.compress(pickle.dumps(priv))).decode()
    return {"question_title": qid, "question_content": "q", "platform": "atcoder", "question_id": qid,
            "contest_id": "c", "contest_date": "2025-02-01T00:00:00", "starter_code": starter, "difficulty": "easy",
            "public_test_cases": json.dumps(public), "private_test_cases": priv,
            "metadata": json.dumps({"func_name": func} if func else {})}


def test_known_answers_standin(sandbox, problems):
    ids = {"minimumPushes": "weekly-contest-381-minimum-number-of-pushes-to-type-word-i",
           "minimumCost": "biweekly-contest-122-divide-an-array-into-subarrays-with-minimum-cost-i",
           "maxFrequencyElements": "weekly-contest-380-count-elements-with-maximum-frequency"}
    by_fn = {fn: next(p for p in problems if p.id == pid) for fn, pid in ids.items()}
    ps = [by_fn[f] for f in GOOD] + [by_fn["minimumPushes"], by_fn["minimumPushes"]]
    codes = list(GOOD.values()) + [
        "class Solution:\n    def minimumPushes(self, word):\n        return len(word)\n",
        "class Solution:\n    def minimumPushes(self, word):\n        while True:\n            pass\n"]
    res = L.run_programs(sandbox, ps, codes, timeout_s=3)
    assert [r["error"] for r in res[:3]] == [None, None, None]
    assert res[3]["error"] == "wrong_answer" and res[4]["error"] == "timeout"


def test_cutoff_excludes_older_problems_and_scores(sandbox, problems):
    def answer(req):  # the right program for one problem, prose for the others
        return ("```python\n" + GOOD["minimumPushes"] + "```" if "Telephone keypads" in req.messages[1]["content"]
                and "distinct" in req.messages[1]["content"] else "I am not sure.")

    model = ScriptedModel(answer)
    rep = L.evaluate(model, sandbox, problems, cutoff=date(2024, 1, 21), variant="stand-in", version="t",
                     dataset_info={}, max_items=None, timeout_s=3)
    # weekly contest 381 (2024-01-21, four problems) is the only one on/after the cutoff
    assert rep.metrics["eligible_after_cutoff"] == 4 and rep.metrics["excluded_before_cutoff"] == 176
    assert rep.n_items == 4 and rep.metrics["date_range"] == ["2024-01-21", "2024-01-21"]
    passed = {s["id"]: s["passed"] for s in rep.samples}
    assert passed["weekly-contest-381-minimum-number-of-pushes-to-type-word-i"] is True
    assert sum(passed.values()) == 1 and rep.score == 25.0
    assert model.seen[0].messages[0]["content"].startswith("You are an expert Python programmer")
    with pytest.raises(ValueError, match="cutoff"):
        L.evaluate(model, sandbox, problems, cutoff=date(2030, 1, 1), variant="v", version="t", dataset_info={})


def test_lcb_rows_functional_and_stdin(sandbox, tmp_path):
    rows = [_lcb_row("f1", [{"input": "1\n2", "output": "3", "testtype": "functional"},
                            {"input": "[1]\n[2]", "output": "[1, 2]", "testtype": "functional"}], True,
                     starter="class Solution:\n    def add(self, a, b):", func="add"),
            _lcb_row("s1", [{"input": "2 3\n", "output": "5\n", "testtype": "stdin"},
                            {"input": "10 0.5\n", "output": "10.50", "testtype": "stdin"}], False)]
    f = tmp_path / "test.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ps = L.load_lcb_files([f])
    assert [p.mode for p in ps] == ["functional", "stdin"] and len(ps[0].tests) == 2
    assert ps[0].fn_name == "add" and ps[0].date == date(2025, 2, 1)
    codes = ["class Solution:\n    def add(self, a, b):\n        return a + b\n",
             "a, b = input().split()\nprint(float(a) + float(b) if '.' in a + b else int(a) + int(b))\n",
             "class Solution:\n    def add(self, a, b):\n        return 3\n",
             "print(5)\n"]
    res = L.run_programs(sandbox, [ps[0], ps[1], ps[0], ps[1]], codes, timeout_s=3)
    assert [r["error"] for r in res] == [None, None, "wrong_answer", "wrong_answer"]
    assert res[2]["passed_tests"] == 1 and res[3]["passed_tests"] == 1
    req = L.build_request(ps[1], 64)
    assert "Read the inputs from stdin" in req.messages[1]["content"]
