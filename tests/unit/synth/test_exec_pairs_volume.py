"""Execution-graded pairs at volume: prompts picked by difficulty, several pairs per prompt with a
real margin, near-identical and duplicate pairs dropped (graded in the sandbox, and a local run on
the tiny model: tests/integration/test_exec_pairs_volume_graded.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from surrogate_dagster.sources.adapters.base import AdapterContext, sft_row
from surrogate_dagster.synth import exec_pairs
from surrogate_dagster.synth.config import synth_catalog
from surrogate_dagster.synth.exec_pairs import INJECTED, MODEL, DifficultyCfg, exec_pairs_catalog, known_pass_rates, rank_by_difficulty, select_tasks, tasks_from_rows
from surrogate_dagster.synth.graders import GradingTask, extract_code
from surrogate_dagster.synth.pairs import ScoredCompletion, margin_histogram, select_pairs


PRIME_TESTS = ["assert is_prime(2) == True", "assert is_prime(1) == False", "assert is_prime(9) == False",
               "assert is_prime(97) == True"]
GOOD_A = "```python\ndef is_prime(n):\n    if n < 2:\n        return False\n    return all(n % i for i in range(2, n))\n```"
GOOD_B = ("```python\ndef is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n"
          "        if n % i == 0:\n            return False\n        i += 1\n    return True\n```")
BAD_A = "```python\ndef is_prime(n):\n    return n % 2 == 1\n```"  # fails 2 of 4


def grade(checks: list[tuple[str, float, bool]], gate: str | None = None) -> dict:
    return {"failed_gate": gate, "checks": [{"name": n, "role": r, "score": sc, "passed": ok}
                                            for n, (r, sc, ok) in zip(range(len(checks)), checks)]}


def sc(text: str, score: float, tests: float, lint: float = 1.0, gate: str | None = None) -> ScoredCompletion:
    checks = [("functional", tests, tests == 1.0), ("lint", lint, lint == 1.0)]
    return ScoredCompletion(text, score, tests == 1.0 and lint == 1.0 and not gate, grade(checks, gate))


# ------------------------------------------------------------------------------------------ pairs
def test_catalog_states_a_positive_lint_margin_and_the_volume_target():
    cat = exec_pairs_catalog()
    assert cat.max_prompts == 5000 and cat.min_margin > 0 and cat.max_pairs_per_prompt >= 2
    with pytest.raises(ValueError):
        exec_pairs_catalog({**synth_catalog(), "exec_pairs": {**synth_catalog()["exec_pairs"], "min_margin": 0}})
    with pytest.raises(ValueError, match="no 'exec_pairs' section"):
        exec_pairs_catalog({"target_count": 1})


def test_each_passing_sample_pairs_with_each_failing_one_capped():
    s = [sc("pass one", 1.0, 1.0), sc("fail one", 0.3, 0.5), sc("pass two", 0.95, 1.0), sc("fail two", 0.0, 0.0)]
    picked, why = select_pairs(s, min_margin=0.1, max_pairs=3)
    assert [(p.chosen, p.rejected) for p in picked] == [(0, 3), (2, 3), (0, 1)]  # largest margins first
    assert all(p.tier == "tests" for p in picked) and why["over_max_pairs"] == 2  # (2, 1) and (1, 3)
    assert why["margin_too_small"] == 1  # (0, 2): both pass, 0.05 apart
    picked, _ = select_pairs(s, min_margin=0.1, max_pairs=10)
    assert {(p.chosen, p.rejected) for p in picked} == {(0, 1), (0, 3), (2, 1), (2, 3), (1, 3)}
    assert [p.tier for p in picked][-1] == "partial_tests"  # 0.5 of the tests beat none, after pass/fail


def test_lint_only_pairs_need_the_margin_and_never_outrank_tests():
    clean, noisy = sc("clean", 1.0, 1.0), sc("noisy", 0.95, 1.0, lint=0.75)
    assert select_pairs([clean, noisy], min_margin=0.1, max_pairs=4) == ([], Counter({"margin_too_small": 1}))
    picked, _ = select_pairs([clean, sc("dirty", 0.8, 1.0, lint=0.0)], min_margin=0.1, max_pairs=4)
    assert [(p.tier, p.margin) for p in picked] == [("lint", 0.2)]
    # higher score from clean lint but fewer tests passed: no pair either way round
    picked, why = select_pairs([sc("lint-clean, 3/4 tests", 0.9, 0.9), sc("all tests, dirty", 0.8, 1.0, lint=0.0)],
                               min_margin=0.1, max_pairs=4)
    assert picked == [] and why["chosen_passes_fewer_tests"] == 1


def test_near_identical_and_duplicate_pairs_are_dropped():
    # same text (whitespace aside), graded differently: a flaky grade
    picked, why = select_pairs([sc("x = 1\n", 1.0, 1.0), sc("x  =  1", 0.0, 0.0)], min_margin=0.1, max_pairs=4)
    assert picked == [] and why["chosen_equals_rejected"] == 1
    # same code, other prose: the graded artifact is identical
    a, b = f"Here it is:\n{GOOD_A}", f"Sure.\n{GOOD_A}\nDone."
    pair = [sc(a, 1.0, 1.0), sc(b, 0.0, 0.0)]
    picked, why = select_pairs(pair, min_margin=0.1, max_pairs=4, code_of=lambda c: extract_code(c, "python"))
    assert picked == [] and why["same_code"] == 1
    assert len(select_pairs(pair, min_margin=0.1, max_pairs=4)[0]) == 1  # without code_of it pairs
    # the same (chosen, rejected) under a second prompt, or twice within one
    seen: set[str] = set()
    first, _ = select_pairs([sc(GOOD_A, 1.0, 1.0), sc(BAD_A, 0.4, 0.5)], min_margin=0.1, max_pairs=4, seen=seen)
    again, why = select_pairs([sc(GOOD_A, 1.0, 1.0), sc(BAD_A, 0.4, 0.5), sc(BAD_A + " ", 0.4, 0.5)],
                              min_margin=0.1, max_pairs=4, seen=seen)
    assert len(first) == 1 and again == [] and why["duplicate_pair"] == 2


def test_margin_histogram_bins():
    assert margin_histogram([0.05, 0.1, 0.3, 1.0]) == {"[0,0.1)": 1, "[0.1,0.25)": 1, "[0.25,0.5)": 1,
                                                       "[0.5,0.75)": 0, "[0.75,1]": 1}
    with pytest.raises(ValueError):
        margin_histogram([1.5])


# ------------------------------------------------------------------------------ prompt selection
def _task(tid: str, n_tests: int, chars: int) -> GradingTask:
    return GradingTask(id=tid, kind="python", prompt="p" * chars, tests=["assert True"] * n_tests, source="s")


def test_difficulty_uses_the_known_pass_rate_else_prompt_features():
    cfg = DifficultyCfg(tests_for_max=10, chars_for_max=2000, never_passed=0.5)
    tasks = [_task("easy-known", 10, 2000), _task("hard-known", 1, 10), _task("never", 1, 10),
             _task("big", 10, 2000), _task("small", 1, 100)]
    known = {"easy-known": 1.0, "hard-known": 0.25, "never": 0.0}
    ranked = rank_by_difficulty(tasks, known, cfg)
    assert [t.id for t in ranked] == ["big", "hard-known", "never", "small", "easy-known"]
    assert ranked[0].meta == {"difficulty": 1.0, "difficulty_basis": "features"}
    assert ranked[1].meta == {"difficulty": 0.75, "difficulty_basis": "pass_rate"}
    assert ranked[2].meta["difficulty"] == 0.5 and ranked[3].meta["difficulty"] == 0.075


def test_known_pass_rates_count_model_samples_only():
    rows = [{"task_id": "a", "passed": True, "origin": MODEL}, {"task_id": "a", "passed": False, "origin": MODEL},
            {"task_id": "a", "passed": True, "origin": INJECTED}, {"task_id": "b", "passed": False}]
    assert known_pass_rates(rows) == {"a": 0.5, "b": 0.0}


def _row(rid: str, prompt: str, tests: list[str], answer: str = GOOD_B) -> dict:
    return sft_row(AdapterContext(source="opencodeinstruct"), rid,
                   [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}],
                   meta={"unit_tests": tests})


def test_tasks_hardest_first_duplicates_once_and_capped():
    rows = [_row("r1", "Write `is_prime(n)`.", PRIME_TESTS[:1]), _row("r2", "Write `is_prime(n)` " + "x" * 1500, PRIME_TESTS),
            _row("r3", "Write  `is_prime(n)`. ", PRIME_TESTS), _row("r4", "Write `f`.", [])]
    tasks, dropped = tasks_from_rows(rows, "opencodeinstruct", 1, 6000)
    assert [t.id for t in tasks] == ["r2"] and tasks[0].reference == GOOD_B
    assert dropped == Counter({"opencodeinstruct:duplicate_prompt": 1, "opencodeinstruct:no_tests": 1,
                               "opencodeinstruct:over_limit": 1})
    all_tasks, _ = tasks_from_rows(rows, "opencodeinstruct", None, 6000)
    picked, dropped = select_tasks(all_tasks, 1)
    assert [t.id for t in picked] == ["r2"] and dropped == Counter({"opencodeinstruct:over_max_prompts": 1})
