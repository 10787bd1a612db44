"""Grading tasks from dataset rows, the code fence a grader reads, and pair selection over scores
(no execution: the graded batches are tests/integration/test_graders.py)."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.synth.graders import (GradingTask, extract_code, split_python_tests, task_from_opc_educational,
                                             task_from_opencodeinstruct)
from surrogate_dagster.synth.pairs import ScoredCompletion, pass_rate_summary, select_pair

GOOD = "Here you go:\n```python\ndef is_prime(n):\n    if n < 2:\n        return False\n" \
       "    i = 2\n    while i * i <= n:\n        if n % i == 0:\n            return False\n" \
       "        i += 1\n    return True\n```\nExample:\n```python\nprint(is_prime(5))\n```\n"


def test_split_python_tests() -> None:
    setup, tests, dropped = split_python_tests(json.dumps(["import math", "assert f(1) == 1\nassert f(2) == 4",
                                                           "x = f(3)\nassert x == 9", "assert (", ""]))
    assert setup == "import math"
    assert tests == ["assert f(1) == 1", "assert f(2) == 4", "x = f(3)\nassert x == 9"]
    assert dropped == 2
    t = task_from_opc_educational({"instruction": "sum", "testcase": ["assert s([1]) == 1"]}, row_id="e1")
    assert (t.kind, t.tests, t.id) == ("python", ["assert s([1]) == 1"], "e1")
    with pytest.raises(ValueError):
        task_from_opencodeinstruct({"id": "x", "input": "p", "unit_tests": "[]"})
    with pytest.raises(ValueError):
        GradingTask(id="x", kind="cobol", prompt="p")


def test_extract_code_picks_the_right_fence() -> None:
    assert extract_code(GOOD, "python").startswith("def is_prime")
    md = "```bash\necho hi\n```\n```dockerfile\nFROM alpine:3.20\n```"
    assert extract_code(md, "dockerfile") == "FROM alpine:3.20\n"
    assert extract_code(md, "bash") == "echo hi\n"
    assert extract_code(md, "terraform") is None
    assert extract_code("```\nx = 1\n```", "python") == "x = 1\n"
    assert extract_code("x = 1", "python") == "x = 1\n"


def test_pair_ties_and_refusals() -> None:
    s = [ScoredCompletion("a", 0.5, False), ScoredCompletion("b", 1.0, True),
         ScoredCompletion("c", 1.0, True), ScoredCompletion("d", 0.5, False)]
    assert select_pair(s) == (1, 3)  # earliest best, latest worst
    assert select_pair(s[:1]) == "fewer_than_2_completions"
    assert select_pair([ScoredCompletion("a", 1.0, True)] * 4) == "all_scores_equal"
    assert select_pair(s, min_margin=0.5) == "margin_too_small"
    assert select_pair([ScoredCompletion("same", 1.0, True), ScoredCompletion("same ", 0.0, False)]) \
        == "chosen_equals_rejected"
    summary = pass_rate_summary([s, [ScoredCompletion("x", 0.0, False)] * 4])
    assert summary["none_pass_prompts"] == 1 and summary["pairable_prompts"] == 1
    assert summary["score_histogram"]["1.0"] == 2 and summary["score_histogram"]["[0,.25)"] == 4


def test_exec_graded_pairs_wires_sampling_grading_and_pairing() -> None:
    from surrogate_dagster.synth.graders import Grade
    from surrogate_dagster.synth.pairs import exec_graded_pairs

    tasks = [GradingTask(id=f"t{i}", kind="python", prompt=f"p{i}", tests=["assert True"]) for i in range(3)]
    seen = {}

    def generate(prompts: list[str], k: int, temperature: float) -> list[list[str]]:
        seen.update(prompts=prompts, k=k, temperature=temperature)
        return [[f"{p}-{j}" for j in range(k)] for p in prompts]

    class ScoreBySuffix:  # grades "pN-j" as j/3 for t0, all equal for t1, pass/fail for t2
        def grade_many(self, items):
            out = []
            for task, c in items:
                j = int(c.rsplit("-", 1)[1])
                score = {"t0": j / 3, "t1": 0.5, "t2": float(j == 2)}[task.id]
                out.append(Grade(task.id, score, score == 1.0, [], None, task.kind))
            return out

    rows, report = exec_graded_pairs(tasks, generate, ScoreBySuffix(), k=4, temperature=1.0)
    assert seen == {"prompts": ["p0", "p1", "p2"], "k": 4, "temperature": 1.0}
    assert [(r["chosen"], r["rejected"]) for r in rows] == [("p0-3", "p0-0"), ("p2-2", "p2-3")]
    assert report["pairs"] == 2 and report["no_pair"] == {"all_scores_equal": 1}
    assert report["summary"]["prompts"] == 3 and report["summary"]["completions"] == 12
    with pytest.raises(ValueError):
        exec_graded_pairs(tasks, lambda p, k, t: [["only one"]] * len(p), ScoreBySuffix(), k=4)
