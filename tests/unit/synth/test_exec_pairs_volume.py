"""Execution-graded pairs at volume: prompts picked by difficulty, several pairs per prompt with a
real margin, near-identical and duplicate pairs dropped, and a local run on the tiny model that
yields pairs only through the injected reference answers (recorded as such)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from dagster import materialize

from surrogate_dagster.sources.adapters.base import AdapterContext, sft_row
from surrogate_dagster.storage import make_object_store
from surrogate_dagster.curation.stage_io import write_step
from surrogate_dagster.synth import exec_pairs
from surrogate_dagster.synth.assets import exec_graded_pairs, load_exec_graded_pairs
from surrogate_dagster.synth.config import PAIRS_PREFIX, read_pointer, read_table, synth_catalog
from surrogate_dagster.synth.exec_pairs import (INJECTED, MODEL, DifficultyCfg, build_exec_pairs, exec_pairs_catalog,
                                                known_pass_rates, rank_by_difficulty, select_tasks, tasks_from_rows)
from surrogate_dagster.synth.graders import Grader, GradingTask, extract_code
from surrogate_dagster.synth.pairs import ScoredCompletion, margin_histogram, select_pairs

from tests.integration.test_synth_assets import llm_resource, md, resources

PRIME_TESTS = ["assert is_prime(2) == True", "assert is_prime(1) == False", "assert is_prime(9) == False",
               "assert is_prime(97) == True"]
GOOD_A = "```python\ndef is_prime(n):\n    if n < 2:\n        return False\n    return all(n % i for i in range(2, n))\n```"
GOOD_B = ("```python\ndef is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n"
          "        if n % i == 0:\n            return False\n        i += 1\n    return True\n```")
BAD_A = "```python\ndef is_prime(n):\n    return n % 2 == 1\n```"  # fails 2 of 4
BAD_B = "```python\ndef is_prime(n)\n    return True\n```"  # syntax error: the gate fails


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


# ------------------------------------------------------------------------------- real grading
@pytest.fixture(scope="module")
def grader():
    return Grader(workers=2)


def test_several_pairs_per_prompt_graded_in_the_sandbox(grader):
    ref = GOOD_B.replace("i += 1", "i = i + 1")  # a third passing answer
    task = GradingTask(id="prime", kind="python", prompt="Write `is_prime(n)`.", tests=PRIME_TESTS,
                       reference=ref, source="opencodeinstruct")
    twin = GradingTask(id="prime-twin", kind="python", prompt="Write is_prime(n), please.", tests=PRIME_TESTS,
                       source="opc_sft_stage2")
    gen = lambda prompts, n, t: [[GOOD_A, BAD_A, GOOD_B, BAD_B]] * len(prompts)  # noqa: E731
    res = build_exec_pairs([task, twin], gen, grader, n=4, min_margin=0.1, max_pairs_per_prompt=4)
    s = res.summary
    # prompt 1: 2 passing x 2 failing (the cap leaves out BAD_A over BAD_B); prompt 2 has the same
    # samples: its 4 pass/fail pairs are duplicates, the partial-tests pair is new
    assert s["pairs"] == 5 and s["pairs_per_prompt"] == {"1": 1, "4": 1}
    assert s["pairs_by_tier"] == {"tests": 4, "partial_tests": 1, "lint": 0}
    assert s["candidate_pairs_left_out"]["duplicate_pair"] == 4
    assert s["candidate_pairs_left_out"]["over_max_pairs"] == 1 and s["no_pair_by_reason"] == {}
    assert sum(s["margin_histogram"].values()) == 5 and s["pool_injected"] == 0
    metas = [json.loads(r["meta"]) for r in res.rows][:4]
    assert {(m["chosen_index"], m["rejected_index"]) for m in metas} == {(0, 1), (0, 3), (2, 1), (2, 3)}
    assert all(m["chosen_origin"] == MODEL == m["rejected_origin"] for m in metas)
    assert len({r["id"] for r in res.rows}) == 5 and all(r["source"] == "exec_graded" for r in res.rows)
    # with the reference injected it is graded too, flagged, and kept out of the model's pass rate
    res = build_exec_pairs([task], gen, grader, n=4, min_margin=0.1, max_pairs_per_prompt=8, inject_pool=True)
    assert res.summary["pool_injected"] == 1
    assert [g["origin"] for g in res.grades] == [MODEL] * 4 + [INJECTED]
    assert res.summary["overall"]["completions"] == 4 and res.summary["overall"]["pass_rate"] == 0.5
    assert res.summary["pairs_with_injected"] == 2  # reference vs each failing sample


# -------------------------------------------------------------------- the local run, tiny model
@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2

    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny"), layers=1)


def test_local_run_on_the_tiny_model_yields_pairs_through_the_injected_pool(tmp_path, tiny_model):
    store = make_object_store({"kind": "local", "root": str(tmp_path)})
    write_step(store, "curated", "opencodeinstruct", "v1",
               [_row("oci-1", "Write `is_prime(n)`.", PRIME_TESTS),
                _row("oci-2", "Write `is_prime(n)` that treats 1 as not prime.", PRIME_TESTS)])
    write_step(store, "curated", "opc_sft_stage2", "v1", [])
    res = resources(tmp_path, llm_resource("local"), model_dir=str(tiny_model), max_devsecops_prompts=1,
                    max_new_tokens=16, inject_pool=True)
    m = md(materialize([exec_graded_pairs], resources=res), "exec_graded_pairs")
    assert m["prompts"] == 3 and m["pool_injected"] == 3 and m["pairs"] > 0
    assert m["pairs_with_injected"] == m["pairs"]  # the tiny model never passes: every chosen is injected
    assert m["min_margin"] == exec_pairs_catalog().min_margin and m["max_prompts"] == 5000
    assert "| score margin | pairs |" in m["margin_histogram"] and "| pairs made | prompts |" in m["pairs_per_prompt"]
    rows = load_exec_graded_pairs(store)
    assert all(json.loads(r["meta"])["chosen_origin"] == INJECTED for r in rows)
    grades = read_table(store, read_pointer(store, PAIRS_PREFIX), "grades")
    assert Counter(g["origin"] for g in grades) == {MODEL: 12, INJECTED: 3}
    # the next run ranks these prompts by the pass rate just measured
    known = known_pass_rates(grades)
    assert set(known) == {"oci-1", "oci-2", "dockerfile-flask-gunicorn"} and max(known.values()) == 0.0
