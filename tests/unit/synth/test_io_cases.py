"""stdin/stdout and call-based prompts: cases read from the real TACO/APPS fixture rows (the
helper mirrors OpenCodeReasoning-2 points at), joined to curated OCR-2 rows by dataset/split/index,
outputs compared the way APPS/TACO's testing_util compares them, malformed cases counted. The
sandboxed runs are in tests/integration/test_exec_pairs_volume_graded.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from surrogate_dagster.paths import REPO_ROOT
from surrogate_dagster.sources.adapters.base import AdapterContext, sft_row
from surrogate_dagster.synth.exec_pairs import (CaseLookup, exec_pairs_catalog, helper_test_index, task_from_curated,
                                                tasks_from_rows, wanted_helper_keys)
from surrogate_dagster.synth.graders import (MalformedTests, call_result_matches, io_cases, stdout_matches,
                                             task_from_input_output, task_from_rstar_testcase)

HUB = REPO_ROOT / "fixtures" / "hub" / "datasets"


def fixture_rows(repo: str, split: str) -> list[dict]:
    """A helper fixture split as the mirror stores it: each row tagged with its split and position."""
    lines = (HUB / repo / "default" / f"{split}.jsonl").read_text().splitlines()
    return [{**json.loads(ln), "_split": split, "_split_index": i} for i, ln in enumerate(lines) if ln.strip()]


TACO = fixture_rows("BAAI/TACO", "train")
APPS = fixture_rows("codeparrot/apps", "train") + fixture_rows("codeparrot/apps", "test")
OCR2 = [json.loads(ln) for ln in (HUB / "nvidia/OpenCodeReasoning-2/default/python.jsonl").read_text().splitlines()]


def key_of(row: dict):
    return next(iter(wanted_helper_keys([row])), None)


def curated_ocr2(row: dict, language: str = "python", prompt: str | None = None, answer: str | None = None) -> dict:
    """An OCR-2 row in the curated (normalized) shape: the adapter's meta keys (dataset, split,
    index, language) and its user/assistant turns."""
    meta = {"id": row["id"], "dataset": row["dataset"], "split": row["split"], "index": row["index"],
            "language": language}
    return sft_row(AdapterContext(source="opencodereasoning_2"), row["id"],
                   [{"role": "user", "content": prompt or f"problem {row['dataset']} {row['index']}"},
                    {"role": "assistant", "content": answer or row.get("r1_generation") or "x"}], meta=meta)


# ---------------------------------------------------------------------------------- comparison
def test_stdout_compared_as_testing_util_does():
    assert stdout_matches("YES\n", "YES\n") and stdout_matches("YES", "YES\n\n")
    assert stdout_matches("1 2\n3\n", " 1 2 \n\n3")  # stripped lines
    assert stdout_matches("1 2 3", "1\n2\n3\n")  # whitespace tokens
    assert stdout_matches("0.3333333", "0.33333333333")  # within numpy.allclose's tolerances
    assert not stdout_matches("0.33", "0.3333333")
    assert not stdout_matches("NO\n", "YES\n") and not stdout_matches("", "0\n")
    assert not stdout_matches("2 1", "1 2")  # order matters (testing_util's set fallback is not taken)


def test_call_results_unwrap_a_one_element_expected_list():
    assert call_result_matches(7, [7]) and call_result_matches([1, 2], [1, 2])
    assert call_result_matches([1, 2], [[1, 2]]) and not call_result_matches(7, [6])
    assert not call_result_matches(7, [7, 7])


# --------------------------------------------------------------------------------- real rows
def test_stdin_and_call_based_cases_from_the_fixture_rows():
    t = task_from_input_output("taco-0", TACO[0]["question"], TACO[0]["input_output"], source="x")
    assert t.kind == "stdio" and t.fn_name == "" and t.cases == [{"stdin": "8\n", "stdout": "YES\n"},
                                                                 {"stdin": "3\n", "stdout": "NO\n"}]
    call = task_from_input_output("taco-7", TACO[7]["question"], TACO[7]["input_output"],
                                  starter_code=TACO[7]["starter_code"], max_cases=2, case_timeout_s=2)
    assert call.fn_name == "digital_root" and call.cases == [{"args": [16], "expected": [7]},
                                                             {"args": [942], "expected": [6]}]
    assert "def digital_root(n):" in call.prompt and call.meta["case_timeout_s"] == 2
    apps = next(r for r in APPS if r["_split"] == "train" and r["problem_id"] == 7)
    assert task_from_input_output("apps-7", apps["question"], apps["input_output"]).cases[1] == \
        {"args": [942], "expected": 6}


@pytest.mark.parametrize("broken, reason", [
    (lambda io: io[: len(io) // 2], "malformed_test_json"),  # truncated JSON
    (lambda io: json.dumps({**json.loads(io), "outputs": json.loads(io)["outputs"][:1]}), "cases_length_mismatch"),
    (lambda io: json.dumps({**json.loads(io), "inputs": [], "outputs": []}), "no_cases"),
    (lambda io: json.dumps({**json.loads(io), "inputs": [5, 6]}), "bad_case_type"),
    (lambda io: json.dumps({**json.loads(io), "fn_name": "not a name"}), "bad_fn_name"),
    (lambda io: "[1, 2]", "malformed_test_json"),
])
def test_malformed_cases_name_their_reason(broken, reason):
    with pytest.raises(MalformedTests) as e:
        task_from_input_output("t", "q", broken(TACO[0]["input_output"]))
    assert e.value.reason == reason


def test_rstar_testcase_rows_stdin_and_call_based():
    # rStar-Coder seed_testcase columns (research/SOURCES.md 2.1); the fixtures mirror no
    # *_testcase config, so these rows follow the documented schema: inputs/outputs JSON strings
    row = {"question_id": "lc_1", "question": "Read n, print n squared.", "starter_code": "",
           "inputs": json.dumps(["3\n", "12\n"]), "outputs": json.dumps(["9\n", "144\n"]), "func_name": ""}
    t = task_from_rstar_testcase(row, max_cases=1)
    assert t.kind == "stdio" and t.cases == [{"stdin": "3\n", "stdout": "9\n"}] and t.id == "lc_1"
    call = task_from_rstar_testcase({**row, "func_name": "square", "starter_code": "def square(n):",
                                     "inputs": json.dumps(["[3]", "[12]"]), "outputs": json.dumps([9, 144])})
    assert call.cases == [{"args": [3], "expected": 9}, {"args": [12], "expected": 144}]
    assert "def square(n):" in call.prompt
    with pytest.raises(MalformedTests) as e:
        task_from_rstar_testcase({**row, "outputs": "[\"9\\n\""})
    assert e.value.reason == "malformed_test_json"
    with pytest.raises(MalformedTests) as e:
        io_cases(["[3"], [9], "square")
    assert e.value.reason == "malformed_test_json"


# ------------------------------------------------------------------ curated OCR-2 rows -> tasks
def test_curated_ocr2_rows_join_the_helper_cases_with_counted_reasons():
    taco_apps = [r for r in OCR2 if r.get("dataset") in ("taco", "apps")]
    rows = [curated_ocr2(r, prompt=f"problem {i}") for i, r in enumerate(taco_apps)]
    wanted = wanted_helper_keys(rows)
    index = helper_test_index({"BAAI/TACO": TACO, "codeparrot/apps": APPS}, wanted)
    assert set(index) <= wanted and index  # only the referenced rows are indexed
    other = [curated_ocr2(r, prompt="cc") for r in OCR2 if r.get("dataset") == "code_contests"][:1]
    cpp = curated_ocr2(taco_apps[0], language="cpp", prompt="cpp version")
    tasks, dropped = tasks_from_rows([*rows, *other, cpp], "opencodereasoning_2", None, 6000,
                                     lookup=CaseLookup(helpers=index))
    found = [r for r in rows if key_of(r) in index]
    assert len(tasks) == len(found) >= 4 and all(t.kind == "stdio" and t.cases for t in tasks)
    assert {t.fn_name for t in tasks} >= {""}
    assert dropped["opencodereasoning_2:not_python"] == 1 and dropped["opencodereasoning_2:no_tests"] >= len(other)
    assert all(t.reference for t in tasks)  # the OCR-2 answer, graded only as an injected sample
    # a helper row whose cases do not parse: the prompt is skipped and counted, nothing raises
    key = next(iter(index))
    broken = {**index, key: {**index[key], "input_output": index[key]["input_output"][:-3]}}
    row = next(r for r in rows if key_of(r) == key)
    assert task_from_curated(row, "opencodereasoning_2", CaseLookup(helpers=broken)) == "malformed_test_json"
    _, dropped = tasks_from_rows([row], "opencodereasoning_2", None, 6000, lookup=CaseLookup(helpers=broken))
    assert dropped == Counter({"opencodereasoning_2:malformed_test_json": 1})
    # helpers not mirrored with their cases: counted as such
    assert task_from_curated(row, "opencodereasoning_2", CaseLookup(missing={"taco", "apps"})) == "tests_not_mirrored"


def test_rstar_rows_without_a_testcase_mirror_are_counted():
    row = sft_row(AdapterContext(source="rstar_coder"), "r1", [{"role": "user", "content": "q"},
                                                              {"role": "assistant", "content": "a"}],
                  meta={"question_id": "lc_121"})
    assert task_from_curated(row, "rstar_coder", CaseLookup(missing={"rstar_coder"})) == "tests_not_mirrored"
    tc = {"question_id": "lc_121", "question": "q", "inputs": json.dumps(["1\n"]), "outputs": json.dumps(["1\n"])}
    t = task_from_curated(row, "rstar_coder", CaseLookup(rstar={"lc_121": tc}))
    assert t.id == "r1" and t.prompt == "q" and t.cases == [{"stdin": "1\n", "stdout": "1\n"}]
    nameless = {**row, "meta": json.dumps({"group_key": "g"})}  # synthetic_sft: no question_id
    assert task_from_curated(nameless, "rstar_coder", CaseLookup()) == "no_question_id"


def test_catalog_names_a_cap_and_a_test_rule_per_source():
    cat = exec_pairs_catalog()
    assert set(cat.sources) == {"opencodeinstruct", "opc_sft_stage2", "opencodereasoning_2", "rstar_coder"}
    assert cat.sources["opencodereasoning_2"].mirrors == ["taco", "apps"]
    assert cat.io_tests.case_timeout_s > 0 and cat.io_tests.max_cases >= 1
