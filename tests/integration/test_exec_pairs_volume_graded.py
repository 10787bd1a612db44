"""Execution-graded pairs end to end: several pairs per prompt graded in the sandbox, and a local run on the
tiny model through the injected pool (the selection rules: tests/unit/synth/test_exec_pairs_volume.py)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from dagster import materialize

from surrogate_dagster.storage import make_object_store
from surrogate_dagster.curation.stage_io import write_step
from surrogate_dagster.synth.assets import exec_graded_pairs, load_exec_graded_pairs
from surrogate_dagster.synth.config import PAIRS_PREFIX, read_pointer, read_table
from surrogate_dagster.synth.exec_pairs import INJECTED, MODEL, build_exec_pairs, exec_pairs_catalog, known_pass_rates
from surrogate_dagster.synth.graders import Grader, GradingTask
from surrogate_dagster.synth.pairs import margin_histogram
from tests.support.smoke_gate import gated_instance

from tests.integration.test_synth_assets import llm_resource, md, resources

from tests.unit.synth.test_exec_pairs_volume import BAD_A, GOOD_A, GOOD_B, PRIME_TESTS, _row


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
    m = md(materialize([exec_graded_pairs], resources=res, instance=gated_instance()), "exec_graded_pairs")
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
