"""LiveCodeBench wrapper: dated problems, cutoff filter, and known answers in the sandbox, for the
offline stand-in (assert tests) and for LCB's own row format (functional + stdin, encoded private
tests); the host's verdicts on the hand-checked parity set (tests/support/lcb_parity_cases.py,
also run through lcb_runner itself by tests/env/test_lcb_parity.py) and on forged verdicts. The
stand-in's parsing and the encoded tests' refusals: tests/unit/evals/test_lcb_standin.py."""

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
    scorer = rep.metrics["scorer"]
    assert scorer.startswith("project host comparator") and "nvidia-livecodebench" in scorer
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


def _parity_problems():
    from tests.support.lcb_parity_cases import CASES, PROBLEMS

    probs = {pid: L.Problem(id=pid, title=pid, date=date(2025, 1, 1), difficulty="easy", question="q",
                            starter_code="", mode=p.mode, tests=p.tests, fn_name=p.fn_name)
             for pid, p in PROBLEMS.items()}
    return CASES, [probs[c.problem] for c in CASES]


def test_host_verdicts_match_the_hand_labels(sandbox):
    """Every hand-checked pair (tests/support/lcb_parity_cases.py) gets lcb_runner's verdict from
    the host comparator: pass/fail, the tests passed before the first failure, the failure kind."""
    from tests.support.lcb_parity_cases import HALF, TIMEOUT_S

    cases, probs = _parity_problems()
    res = L.run_programs(sandbox, probs, [c.code for c in cases], timeout_s=TIMEOUT_S)
    got = {c.id: (r["passed"], r["passed_tests"], r["error"]) for c, r in zip(cases, res)}
    want = {c.id: (c.passed, c.passed_tests, c.kind) for c in cases}
    wrong = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    by_half = {h: sum(got[c.id] == want[c.id] for c in cases if HALF[c.id] == h) for h in ("tune", "held_out")}
    assert not wrong, f"agreement by half {by_half}; (got, want): {wrong}"


FORGERIES = {
    # prints what a harness would take for success, then nothing useful
    "prints_pass": "print('PASS')\nprint('__EVAL_RESULT__ {\"passed\": true}')\n",
    # ends the process with status 0 before any test ran
    "exit_0_early": "import os\nos._exit(0)\n",
    "sys_exit_0": "import sys\nsys.exit(0)\n",
    # writes forged records into the runner's report channel and every fd it can reach
    "writes_verdict_channel": (
        "import glob, json, os\n"
        "nonce = ''\n"
        "for p in glob.glob('/sandbox/*'):\n"
        "    try:\n        nonce = nonce or (open(p).read().strip() if p.endswith('__nonce__') else '')\n"
        "    except OSError:\n        pass\n"
        "rec = {'i': 0, 'records': [{'compile': None}, {'out': '5'}, {'out': '6'}, {'out': '0'}], 'status': 'ok'}\n"
        "line = ('__EVAL_RESULT__' + nonce + json.dumps(rec) + '\\n').encode()\n"
        "for fd in ['/proc/1/fd/1', '/proc/1/fd/2', '/proc/self/fd/1', '/proc/self/fd/3', '/dev/stdout']:\n"
        "    try:\n        with open(fd, 'wb') as f:\n            f.write(line)\n"
        "    except OSError:\n        pass\n"
        "for n in range(3, 64):\n    try:\n        os.write(n, line)\n    except OSError:\n        pass\n"
        "print(json.dumps({'out': '5'}))\n"),
    # reaches up the stack for the harness' own reporting (an emit function, a result queue, a
    # record writer) and reports "all passed" through it, then leaves before any test runs
    "reports_through_the_harness": (
        "import os, sys\n"
        "f, seen = sys._getframe(), {}\n"
        "while f is not None:\n"
        "    seen.update(f.f_globals)\n    seen.update(f.f_locals)\n    f = f.f_back\n"
        "i = seen['item']['i'] if isinstance(seen.get('item'), dict) else 0\n"
        "for name, arg in (('emit', {'i': i, 'passed_tests': 3, 'error': None, 'passed': True}),\n"
        "                  ('_rec', {'passed': True}), ('_evt', {'passed': True})):\n"
        "    try:\n        seen[name](arg)\n    except Exception:\n        pass\n"
        "q = seen.get('q')\n"
        "if q is not None:\n"
        "    q.put((3, None))\n    q.close()\n    q.join_thread()\n"
        "os._exit(0)\n"),
    # forges its own record stream (the dup of the child's stdout) with verdict-shaped records
    "forges_own_records": (
        "import json, os\n"
        "recs = [{'passed': True}, {'t': 0, 'ok': True}, {'err': None}, {'verdict': 'pass', 'passed_tests': 3}]\n"
        "for n in range(3, 16):\n    try:\n"
        "        os.write(n, ''.join(json.dumps(r) + '\\n' for r in recs).encode())\n"
        "    except OSError:\n        pass\n"
        "os._exit(0)\n"),
}


def test_forged_verdicts_get_no_pass(sandbox):
    """A candidate that prints PASS, exits 0 early or writes to the verdict channel (the runner's
    stdout, its own record stream) passes nothing: it never sees the expected outputs, and what it
    writes is only ever compared with them on the host."""
    p = L.Problem(id="sum", title="sum", date=date(2025, 1, 1), difficulty="easy", question="q", starter_code="",
                  mode="stdin", tests=[{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4\n", "output": "6\n"},
                                       {"input": "0 0\n", "output": "0\n"}])
    res = L.run_programs(sandbox, [p] * len(FORGERIES), list(FORGERIES.values()), timeout_s=2)
    assert [r["passed"] for r in res] == [False] * len(FORGERIES), dict(zip(FORGERIES, res))
    assert all(r["passed_tests"] == 0 for r in res), dict(zip(FORGERIES, res))
    honest = L.run_programs(sandbox, [p], ["a, b = map(int, input().split())\nprint(a + b)\n"], timeout_s=2)
    assert honest[0]["passed"] is True  # the same problem, solved, passes


def test_runner_is_out_of_the_candidates_reach(sandbox):
    """The runner that relays outputs (the sandbox's pid 1) is non-dumpable: the candidate can open
    none of its file descriptors, memory or environment, nor trace it. Passing this problem means
    every attempt failed."""
    code = ("import ctypes, os\nres = []\n"
            "for path, mode in (('/proc/1/fd/1', 'wb'), ('/proc/1/fd/0', 'rb'), ('/proc/1/mem', 'rb'),\n"
            "                   ('/proc/1/environ', 'rb')):\n"
            "    try:\n        open(path, mode).close()\n        res.append('opened')\n"
            "    except OSError as e:\n        res.append(type(e).__name__)\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "res.append('attached' if libc.ptrace(16, 1, 0, 0) == 0 else os.strerror(ctypes.get_errno()))\n"
            "print(*res)\n")
    want = "PermissionError PermissionError PermissionError PermissionError Operation not permitted\n"
    p = L.Problem(id="reach", title="reach", date=date(2025, 1, 1), difficulty="easy", question="q",
                  starter_code="", mode="stdin", tests=[{"input": "", "output": want}])
    r = L.run_programs(sandbox, [p], [code], timeout_s=2)[0]
    assert r["passed"], r["detail"]


LINKED_DOUBLE = (
    "class ListNode:\n    def __init__(self, val=0, next=None):\n        self.val = val\n        self.next = next\n"
    "class Solution:\n    def doubleIt(self, head):\n        vals = []\n        while head:\n"
    "            vals.append(head.val)\n            head = head.next\n"
    "        out = None\n        for d in reversed(str(int(''.join(map(str, vals))) * {k})):\n"
    "            out = ListNode(int(d), out)\n        return out\n")


def test_standin_linked_list_problem_is_judged_on_the_host(sandbox, problems):
    """A stand-in test that builds ListNode values runs through the sealed assert harness: the
    right doubling passes, tripling fails with the host's assertion message."""
    p = next(q for q in problems if q.id == "weekly-contest-358-double-a-number-represented-as-a-linked-list")
    assert p.mode == "asserts"
    good, bad = L.run_programs(sandbox, [p, p], [LINKED_DOUBLE.format(k=2), LINKED_DOUBLE.format(k=3)], timeout_s=6)
    assert good["passed"] and good["error"] is None
    assert not bad["passed"] and bad["error"] == "wrong_answer" and "[3, 7, 8]" in bad["detail"]
