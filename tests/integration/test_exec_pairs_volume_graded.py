"""Execution-graded pairs end to end: several pairs per prompt graded in the sandbox, stdin/stdout and
call-based cases run on real TACO/APPS fixture rows, and a local run on the tiny model through the
injected pool, its OCR-2 prompts joined to the mirrored helper cases (the selection rules:
tests/unit/synth/test_exec_pairs_volume.py; case parsing and comparison: tests/unit/synth/test_io_cases.py)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from dagster import materialize

from surrogate_dagster.catalog.loader import load_sources
from surrogate_dagster.hub import OfflineHub
from surrogate_dagster.paths import REPO_ROOT
from surrogate_dagster.sources.mirror import mirror_source
from surrogate_dagster.storage import make_object_store
from surrogate_dagster.curation.stage_io import write_step
from surrogate_dagster.synth.assets import exec_graded_pairs, load_exec_graded_pairs
from surrogate_dagster.synth.config import PAIRS_PREFIX, read_pointer, read_table
from surrogate_dagster.synth.exec_pairs import INJECTED, MODEL, build_exec_pairs, exec_pairs_catalog, known_pass_rates
from surrogate_dagster.synth.graders import Grader, GradingTask, task_from_input_output
from surrogate_dagster.synth.pairs import margin_histogram
from tests.support.smoke_gate import gated_instance

from tests.integration.test_synth_assets import llm_resource, md, resources

from tests.unit.synth.test_exec_pairs_volume import BAD_A, GOOD_A, GOOD_B, PRIME_TESTS, _row
from tests.unit.synth.test_io_cases import APPS, OCR2, TACO, curated_ocr2


BAD_B = "```python\ndef is_prime(n)\n    return True\n```"  # syntax error: the gate fails


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


# --------------------------------------------------------------- stdin/stdout and call-based
def py(code: str) -> str:
    return f"```python\n{code}```"


def test_stdin_cases_of_real_rows_pass_fail_and_time_out_per_case(grader):
    task = task_from_input_output("taco-0", TACO[0]["question"], TACO[0]["input_output"], case_timeout_s=2)
    reference = json.loads(TACO[0]["solutions"])[0]
    slow_on_3 = "import time\nw = int(input())\nif w == 3:\n    while True:\n        time.sleep(1)\nprint('YES')\n"
    good, wrong, slow, crash = grader.grade_many([(task, py(reference)), (task, py("print('YES')\n")),
                                                  (task, py(slow_on_3)), (task, py("raise SystemExit(3)\n"))])
    assert good.passed and good.score == 1.0 and good.kind == "stdio"
    cases = lambda g: next(c for c in g.checks if c.name == "cases")  # noqa: E731
    assert not wrong.passed and cases(wrong).detail["errors"][0] is None and "!=" in cases(wrong).detail["errors"][1]
    # the hanging case fails alone, on its own 2 s limit; the other case still passes
    assert cases(slow).detail["errors"] == [None, "timeout"] and cases(slow).score == 0.5
    assert cases(slow).detail["case_timeout_s"] == 2
    assert cases(crash).score == 0.0 and cases(crash).detail["errors"][0].startswith("exit 3")
    # APPS' own reference passes its multi-line cases
    apps = APPS[0]
    t2 = task_from_input_output("apps-0", apps["question"], apps["input_output"])
    assert grader.grade(t2, py(json.loads(apps["solutions"])[0])).passed


def test_call_based_cases_call_the_function_with_the_json_arguments(grader):
    taco = task_from_input_output("taco-7", TACO[7]["question"], TACO[7]["input_output"],
                                  starter_code=TACO[7]["starter_code"])
    apps = next(r for r in APPS if r["_split"] == "train" and r["problem_id"] == 7)
    apps_task = task_from_input_output("apps-7", apps["question"], apps["input_output"])
    right = "def digital_root(n):\n    return n if n < 10 else digital_root(sum(map(int, str(n))))\n"
    as_method = "class Solution:\n    def digital_root(self, n):\n        return 1 + (n - 1) % 9 if n else 0\n"
    g = grader.grade_many([(taco, py(right)), (apps_task, py(right)), (taco, py(as_method)),
                           (taco, py("def digital_root(n):\n    return n\n")), (taco, py("def other(n):\n    return 1\n"))])
    assert [x.passed for x in g] == [True, True, True, False, False]
    errors = lambda x: next(c for c in x.checks if c.name == "cases").detail["errors"]  # noqa: E731
    assert errors(g[3]) == ["returned 16 != [7]", "returned 942 != [6]", None]
    assert errors(g[4])[0] == "no function digital_root"


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
    # OCR-2 rows on TACO problems 0 and 1, their cases from the mirrored helper (the fixture hub),
    # a cpp row (no Python cases) and rStar rows without a mirrored seed_testcase
    ocr2 = [r for r in OCR2 if r.get("dataset") == "taco" and r.get("index") in ("0", "1")][::2]
    assert [r["index"] for r in ocr2] == ["0", "1"]
    write_step(store, "curated", "opencodereasoning_2", "v1",
               [curated_ocr2(ocr2[0], prompt=TACO[0]["question"], answer=py(json.loads(TACO[0]["solutions"])[0])),
                curated_ocr2(ocr2[1], language="cpp", prompt="in C++")])
    write_step(store, "curated", "rstar_coder", "v1", [_row("rs-1", "Sum two numbers.", [])])
    hub = OfflineHub(REPO_ROOT / "fixtures" / "hub", tmp_path / "pushes", "org")
    taco = next(h for h in load_sources().helpers if h.name == "taco")
    mirror_source(taco, hub, store, log=lambda m: None)
    res = resources(tmp_path, llm_resource("local"), model_dir=str(tiny_model), max_devsecops_prompts=1,
                    max_new_tokens=16, inject_pool=True)
    m = md(materialize([exec_graded_pairs], resources=res, instance=gated_instance()), "exec_graded_pairs")
    assert m["prompts"] == 4 and m["pool_injected"] == 4 and m["pairs"] > 0
    left_out = m["prompts_left_out"]
    assert "| opencodereasoning_2:not_python | 1 |" in left_out and "| rstar_coder:no_question_id | 1 |" in left_out
    assert "stdio" in m["by_kind"]
    assert m["pairs_with_injected"] == m["pairs"]  # the tiny model never passes: every chosen is injected
    assert m["min_margin"] == exec_pairs_catalog().min_margin and m["max_prompts"] == 5000
    assert "| score margin | pairs |" in m["margin_histogram"] and "| pairs made | prompts |" in m["pairs_per_prompt"]
    rows = load_exec_graded_pairs(store)
    assert all(json.loads(r["meta"])["chosen_origin"] == INJECTED for r in rows)
    grades = read_table(store, read_pointer(store, PAIRS_PREFIX), "grades")
    assert Counter(g["origin"] for g in grades) == {MODEL: 16, INJECTED: 4}
    stdio = [g for g in grades if g["kind"] == "stdio"]
    assert [g["passed"] for g in stdio if g["origin"] == INJECTED] == [True]  # OCR-2's answer passes TACO's cases
    # the next run ranks these prompts by the pass rate just measured
    known = known_pass_rates(grades)
    assert set(known) == {"oci-1", "oci-2", str(ocr2[0]["id"]), "dockerfile-flask-gunicorn"}
    assert max(known.values()) == 0.0
