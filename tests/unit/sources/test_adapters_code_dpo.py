"""Code SFT and DPO adapters on their offline fixtures (fixtures/hub/datasets/...), read as jsonl."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from surrogate_dagster.sources.adapters import code_sft, dpo
from surrogate_dagster.sources.adapters.base import AdapterContext, Quarantine
from surrogate_dagster.sources.ocr2_questions import (
    POSITION_KEY, SPLIT_KEY, build_question_index, helper_rows_from_mirror, question_from_row, question_lookup)

HUB = Path(__file__).resolve().parents[3] / "fixtures" / "hub" / "datasets"
ADAPTERS = {**code_sft.ADAPTERS, **dpo.ADAPTERS}


def load(repo: str, config: str, split: str) -> list[dict]:
    with open(HUB / repo / config / f"{split}.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def question_index() -> dict:
    return build_question_index(helper_rows_from_mirror(HUB))


def ctx_for(adapter: str, config: str, split: str, index: dict | None = None) -> AdapterContext:
    ctx = AdapterContext(source=adapter, config=config, options={"split": split})
    if index is not None:
        ctx.helper_questions = question_lookup(index)
    return ctx


# (adapter, repo, config, split) -> {0-based row: expected quarantine reason}; every other row converts.
CASES = {
    ("rstar_coder", "microsoft/rStar-Coder", "synthetic_sft", "train"):
        {10: "empty_answer", 11: "no_code", 12: "wrong_type", 13: "missing_field"},
    ("rstar_coder", "microsoft/rStar-Coder", "seed_sft", "train"):
        {7: "wrong_type", 8: "empty_question", 9: "missing_field"},
    ("opencodereasoning_2", "nvidia/OpenCodeReasoning-2", "default", "python"):
        {5: "ocr2_question_empty_taco", 6: "ocr2_id_not_found_taco", 11: "ocr2_question_empty_code_contests",
         15: "bad_index", 16: "empty_answer"},
    ("opencodereasoning_2", "nvidia/OpenCodeReasoning-2", "default", "cpp"):
        {8: "ocr2_question_empty_codeforces", 9: "ocr2_id_not_found_apps", 10: "missing_field"},
    ("opencodeinstruct", "nvidia/OpenCodeInstruct", "default", "train"):
        {11: "malformed_json", 12: "empty_answer", 13: "missing_field"},
    ("ling_coder_sft", "inclusionAI/Ling-Coder-SFT", "default", "train"):
        {8: "bad_role", 9: "last_turn_not_assistant", 10: "empty_answer", 11: "non_text_content", 12: "wrong_type"},
    ("opc_sft_stage1", "OpenCoder-LLM/opc-sft-stage1", "filtered_infinity_instruct", "train"):
        {6: "empty_answer", 7: "wrong_type"},
    ("opc_sft_stage1", "OpenCoder-LLM/opc-sft-stage1", "largescale_diverse_instruct", "train"): {7: "empty_question"},
    ("opc_sft_stage1", "OpenCoder-LLM/opc-sft-stage1", "realuser_instruct", "train"): {7: "missing_field"},
    ("opc_sft_stage2", "OpenCoder-LLM/opc-sft-stage2", "educational_instruct", "train"):
        {4: "wrong_type", 5: "wrong_type"},
    ("opc_sft_stage2", "OpenCoder-LLM/opc-sft-stage2", "evol_instruct", "train"): {7: "empty_answer"},
    ("opc_sft_stage2", "OpenCoder-LLM/opc-sft-stage2", "mceval_instruct", "train"): {7: "wrong_type"},
    ("opc_sft_stage2", "OpenCoder-LLM/opc-sft-stage2", "package_instruct", "train"): {7: "missing_field"},
    ("self_oss_instruct", "bigcode/self-oss-instruct-sc2-exec-filter-50k", "default", "train"):
        {8: "empty_answer", 9: "missing_field"},
    ("codefeedback_filtered", "m-a-p/CodeFeedback-Filtered-Instruction", "default", "train"):
        {10: "empty_answer", 11: "missing_field"},
    ("code_preference_pairs", "Vezora/Code-Preference-Pairs", "default", "train"):
        {9: "chosen_equals_rejected", 10: "empty_answer", 11: "wrong_type"},
    ("capybara_dpo", "argilla/distilabel-capybara-dpo-7k-binarized", "default", "train"):
        {6: "rating_not_better", 7: "chosen_equals_rejected", 8: "wrong_type", 9: "prompt_mismatch"},
    ("when2call_pref", "nvidia/When2Call", "train_pref", "train"):
        {9: "malformed_toolcall", 10: "bad_tool_schema", 11: "chosen_equals_rejected", 12: "bad_prompt_turn"},
}


def run(case: tuple, index: dict) -> tuple[dict[int, dict], dict[int, str]]:
    adapter, repo, config, split = case
    ctx = ctx_for(adapter, config, split, index)
    ok, bad = {}, {}
    for i, row in enumerate(load(repo, config, split)):
        try:
            ok[i] = ADAPTERS[adapter](row, ctx)
        except Quarantine as q:
            bad[i] = q.reason
    return ok, bad


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: f"{c[0]}:{c[2]}/{c[3]}")
def test_fixture_file_converts_and_quarantines_as_expected(case, question_index):
    ok, bad = run(case, question_index)
    assert bad == CASES[case]
    assert len(ok) >= 4, "each fixture needs real rows, not only bad ones"
    kind = "dpo" if case[0] in dpo.ADAPTERS else "sft"
    ids = [r["id"] for r in ok.values()]
    assert len(set(ids)) == len(ids), "ids must be unique within a file"
    for r in ok.values():
        assert set(r) == {"id", "source", "kind", "messages", "prompt", "chosen", "rejected", "tools", "meta"}
        assert r["source"] == case[0] and r["kind"] == kind
        meta = json.loads(r["meta"])
        assert meta["config"] == case[2]
        if kind == "sft":
            assert r["messages"][-1]["role"] == "assistant" and r["messages"][-1]["content"].strip()
            assert any(m["role"] == "user" for m in r["messages"])
        else:
            assert r["prompt"][-1]["role"] == "user" and r["chosen"] != r["rejected"]


def test_registry_names():
    assert set(code_sft.ADAPTERS) == {"rstar_coder", "opencodereasoning_2", "opencodeinstruct", "ling_coder_sft",
                                      "opc_sft_stage1", "opc_sft_stage2", "self_oss_instruct", "codefeedback_filtered"}
    assert set(dpo.ADAPTERS) == {"code_preference_pairs", "capybara_dpo", "when2call_pref"}


# --- OCR-2 question rebuild ------------------------------------------------------------------------

def test_question_index_covers_every_helper_row(question_index):
    # 10 TACO rows + 8 + 6 APPS + 8 code_contests + 8 codeforces; 3 of them have no statement ("")
    assert len(question_index) == 10 + 14 + 8 + 8
    assert sum(1 for v in question_index.values() if not v) == 3
    taco = load("BAAI/TACO", "default", "train")
    assert question_index[("taco", "train", 2)] == taco[2]["question"]
    assert question_index[("taco", "train", 4)] == ""  # the row exists, its question is empty
    assert question_index[("apps", "test", 1)] == load("codeparrot/apps", "default", "test")[1]["question"]
    contests = load("deepmind/code_contests", "default", "train")
    assert question_index[("code_contests", "train", 5)] == contests[5]["description"]


def test_codeforces_statement_layout():
    row = load("open-r1/codeforces", "default", "train")[1]
    text = question_from_row("open-r1/codeforces", row)
    expected = (f"{row['description']}\n\nInput\n\n{row['input_format']}\n\nOutput\n\n{row['output_format']}"
                "\n\nExamples"
                + "".join(f"\n\nInput\n\n{e['input']}\n\nOutput\n\n{e['output']}" for e in row["examples"])
                + f"\n\nNote\n\n{row['note']}")
    assert text == expected
    no_examples = load("open-r1/codeforces", "default", "train")[5]
    assert "Examples" not in question_from_row("open-r1/codeforces", no_examples)
    assert question_from_row("open-r1/codeforces", {"description": "", "input_format": "x"}) is None


def test_question_index_accepts_repo_ids_flat_streams_and_wanted():
    rows = [{SPLIT_KEY: "train", POSITION_KEY: 0, "question": "A"}, {SPLIT_KEY: "test", POSITION_KEY: 0, "question": "B"},
            {SPLIT_KEY: "train", POSITION_KEY: 1, "question": "C"}]
    index = build_question_index({"BAAI/TACO": rows})
    assert index == {("taco", "train", 0): "A", ("taco", "test", 0): "B", ("taco", "train", 1): "C"}
    assert build_question_index({"taco": {"train": [{"question": "A"}, {"question": "C"}]}},
                                wanted={("taco", "train", 1)}) == {("taco", "train", 1): "C"}
    with pytest.raises(ValueError, match="unknown OCR-2 helper"):
        build_question_index({"mbpp": []})
    with pytest.raises(ValueError, match="_split"):
        build_question_index({"taco": [{"question": "A"}]})


def test_helper_mirror_missing_repo_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="BAAI/TACO"):
        helper_rows_from_mirror(tmp_path)


def test_ocr2_rebuilds_question_and_marks_language(question_index):
    py = load("nvidia/OpenCodeReasoning-2", "default", "python")
    r = code_sft.adapt_opencodereasoning_2(py[0], ctx_for("opencodereasoning_2", "default", "python", question_index))
    assert r["messages"][0]["content"] == load("BAAI/TACO", "default", "train")[0]["question"]
    assert r["messages"][1]["content"] == py[0]["r1_generation"]
    meta = json.loads(r["meta"])
    assert (meta["id"], meta["question_id"], meta["language"], meta["judgement"]) == (
        py[0]["id"], py[0]["question_id"], "python", "right")
    assert r["id"] == py[0]["id"]
    assert json.loads(code_sft.adapt_opencodereasoning_2(
        py[4], ctx_for("opencodereasoning_2", "default", "python", question_index))["meta"]).get("pass_rate") is None
    cpp = load("nvidia/OpenCodeReasoning-2", "default", "cpp")
    r = code_sft.adapt_opencodereasoning_2(cpp[6], ctx_for("opencodereasoning_2", "default", "cpp", question_index))
    assert r["messages"][0]["content"].startswith(load("open-r1/codeforces", "default", "train")[3]["description"])
    assert r["messages"][0]["content"].endswith("Write the solution in C++.")
    assert json.loads(r["meta"])["language"] == "cpp"
    # a real question (not the "-" placeholder) is used as is, without any lookup
    own = dict(py[0], question="Print 42.")
    r = code_sft.adapt_opencodereasoning_2(own, AdapterContext("opencodereasoning_2"))
    assert r["messages"][0]["content"] == "Print 42."


# --- code SFT specifics ----------------------------------------------------------------------------

def test_rstar_seed_appends_starter_code_and_synthetic_groups_by_seed():
    seed = load("microsoft/rStar-Coder", "seed_sft", "train")
    r = code_sft.adapt_rstar_coder(seed[0], AdapterContext("rstar_coder", config="seed_sft"))
    user = r["messages"][0]["content"]
    assert user.startswith(seed[0]["question"].rstrip()) and seed[0]["starter_code"].strip() in user
    assert user.endswith("```")
    assert json.loads(r["meta"])["question_id"] == "lc_121"
    r = code_sft.adapt_rstar_coder(seed[2], AdapterContext("rstar_coder", config="seed_sft"))
    assert r["messages"][0]["content"] == seed[2]["question"]          # empty starter_code: nothing appended
    meta = json.loads(code_sft.adapt_rstar_coder(seed[3], AdapterContext("rstar_coder", config="seed_sft"))["meta"])
    assert meta["is_passed"] is False                                  # kept here; the catalog filter drops it
    syn = load("microsoft/rStar-Coder", "synthetic_sft", "train")
    ctx = AdapterContext("rstar_coder", config="synthetic_sft")
    a, b = code_sft.adapt_rstar_coder(syn[0], ctx), code_sft.adapt_rstar_coder(syn[9], ctx)
    assert json.loads(a["meta"])["group_key"] == json.loads(b["meta"])["group_key"] and a["id"] != b["id"]
    with pytest.raises(ValueError, match="config"):
        code_sft.adapt_rstar_coder(syn[0], AdapterContext("rstar_coder", config="synthetic_rl"))


def test_opencodeinstruct_meta_keeps_tests_and_coerces_score():
    rows = load("nvidia/OpenCodeInstruct", "default", "train")
    ctx = AdapterContext("opencodeinstruct")
    metas = [json.loads(code_sft.adapt_opencodeinstruct(r, ctx)["meta"]) for r in rows[:11]]
    assert metas[0]["unit_tests"] == json.loads(rows[0]["unit_tests"]) and metas[0]["id"] == rows[0]["id"]
    assert [m.get("average_test_score") for m in metas[:5]] == [1.0, 0.9, 0.5, None, 1.0]
    assert metas[1]["tests_execution_status"][-1] == "fail"
    assert metas[0]["llm_judgement"]["logical_correctness"]["score"] == 5


@pytest.mark.parametrize("value,expected", [("1", 1.0), ("0.5", 0.5), (0.9, 0.9), ("n/a", None), (None, None),
                                            (float("nan"), None), (True, None), ([1], None), (" 0.7 ", 0.7)])
def test_to_float(value, expected):
    got = code_sft.to_float(value)
    assert got == expected or (expected is None and got is None)
    assert got is None or not math.isnan(got)


def test_ling_roles_multi_turn_and_language():
    rows = load("inclusionAI/Ling-Coder-SFT", "default", "train")
    ctx = AdapterContext("ling_coder_sft")
    r = code_sft.adapt_ling_coder_sft(rows[1], ctx)
    assert [m["role"] for m in r["messages"]] == ["system", "user", "assistant"]
    assert json.loads(r["meta"])["language"] == "java"
    r = code_sft.adapt_ling_coder_sft(rows[2], ctx)
    assert [m["role"] for m in r["messages"]] == ["user", "assistant", "user", "assistant"]
    assert r["messages"][2]["content"] == rows[2]["messages"][2]["content"]
    assert r["id"] == rows[2]["mid"] and json.loads(r["meta"])["mid"] == rows[2]["mid"]
    assert json.loads(code_sft.adapt_ling_coder_sft(rows[3], ctx)["meta"])["language"] == "cpp"


def test_opc_configs_and_testcases():
    edu = load("OpenCoder-LLM/opc-sft-stage2", "educational_instruct", "train")
    r = code_sft.adapt_opc_sft_stage2(edu[0], AdapterContext("opc_sft_stage2", config="educational_instruct"))
    meta = json.loads(r["meta"])
    assert meta["testcase"] == edu[0]["testcase"] and meta["entry_point"] == "max_product_of_three"
    assert meta["id"] == edu[0]["seq_id"] and r["id"] == str(edu[0]["seq_id"])
    evol = load("OpenCoder-LLM/opc-sft-stage2", "evol_instruct", "train")
    assert "testcase" not in json.loads(code_sft.adapt_opc_sft_stage2(
        evol[0], AdapterContext("opc_sft_stage2", config="evol_instruct"))["meta"])
    real = load("OpenCoder-LLM/opc-sft-stage1", "realuser_instruct", "train")
    r = code_sft.adapt_opc_sft_stage1(real[0], AdapterContext("opc_sft_stage1", config="realuser_instruct"))
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in r["messages"][0]["content"]
    with pytest.raises(ValueError):
        code_sft.adapt_opc_sft_stage1(real[0], AdapterContext("opc_sft_stage1", config="educational_instruct"))
    mceval = load("OpenCoder-LLM/opc-sft-stage2", "mceval_instruct", "train")
    langs = {json.loads(code_sft.adapt_opc_sft_stage2(r, AdapterContext("opc_sft_stage2", config="mceval_instruct"))
                        ["meta"])["language"] for r in mceval[:7]}
    assert {"kotlin", "elixir", "haskell", "ruby"} <= langs


def test_self_oss_uses_instruction_never_prompt():
    rows = load("bigcode/self-oss-instruct-sc2-exec-filter-50k", "default", "train")
    for row in rows[:8]:
        r = code_sft.adapt_self_oss_instruct(row, AdapterContext("self_oss_instruct"))
        assert r["messages"][0]["content"] == row["instruction"] != row["prompt"]
        assert "### Snippet" not in r["messages"][0]["content"]
        meta = json.loads(r["meta"])
        assert (meta["id"], meta["sha1"]) == (row["id"], row["sha1"])


def test_codefeedback_lang_meta():
    rows = load("m-a-p/CodeFeedback-Filtered-Instruction", "default", "train")
    metas = [json.loads(code_sft.adapt_codefeedback_filtered(r, AdapterContext("codefeedback_filtered"))["meta"])
             for r in rows[:10]]
    assert metas[0]["lang"] == "python" and metas[7] == {**metas[7], "lang": "c++", "language": "cpp"}
    assert metas[5]["language"] == "bash"  # lang "shell" normalised


# --- DPO specifics ---------------------------------------------------------------------------------

def test_code_preference_pairs_shape():
    rows = load("Vezora/Code-Preference-Pairs", "default", "train")
    r = dpo.adapt_code_preference_pairs(rows[0], AdapterContext("code_preference_pairs"))
    assert r["prompt"] == [{"role": "user", "content": rows[0]["input"]}]
    assert (r["chosen"], r["rejected"]) == (rows[0]["accepted"], rows[0]["rejected"])
    assert r["messages"] == [] and json.loads(r["meta"])["language"] == "python"


def test_capybara_multi_turn_prompt_and_meta():
    rows = load("argilla/distilabel-capybara-dpo-7k-binarized", "default", "train")
    r = dpo.adapt_capybara_dpo(rows[2], AdapterContext("capybara_dpo"))
    assert r["prompt"] == rows[2]["chosen"][:-1] and len(r["prompt"]) == 5
    assert r["chosen"] == rows[2]["chosen"][-1]["content"] and r["rejected"] == rows[2]["rejected"][-1]["content"]
    meta = json.loads(r["meta"])
    assert (meta["rating_chosen"], meta["rating_rejected"], meta["user_turns"]) == (5, 1, 3)
    assert meta["chosen_model"] == "gpt-4-1106-preview" and meta["origin"] == "EverythingLM"


_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)


def test_when2call_hermes_prompt_and_calls():
    rows = load("nvidia/When2Call", "train_pref", "train")
    ctx = AdapterContext("when2call_pref", config="train_pref")
    r = dpo.adapt_when2call_pref(rows[3], ctx)
    system, user = r["prompt"]
    assert system["role"] == "system" and user == {"role": "user", "content": rows[3]["messages"][0]["content"]}
    listed = [json.loads(line) for line in system["content"].split("<tools>\n")[1].split("\n</tools>")[0].splitlines()]
    assert [t["function"]["name"] for t in listed] == ["get_current_weather", "stock_quote"]
    assert listed[0]["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert [json.loads(b) for b in _CALL.findall(r["chosen"])] == [
        {"name": "get_current_weather", "arguments": {"city": "Oslo"}},
        {"name": "stock_quote", "arguments": {"symbol": "MSFT"}}]
    assert "<TOOLCALL>" not in r["chosen"] and json.loads(r["tools"]) == listed
    assert json.loads(r["meta"])["chosen_kind"] == "tool_call"
    # Arrow null-unified properties are dropped from the schema
    props = json.loads(dpo.adapt_when2call_pref(rows[2], ctx)["tools"])[0]["function"]["parameters"]["properties"]
    assert set(props) == {"city", "units"} and "default" not in props["city"]
    # the refusal is the chosen side, the forced call is rejected
    r = dpo.adapt_when2call_pref(rows[0], ctx)
    assert "<tool_call>" in r["rejected"] and json.loads(r["meta"])["chosen_kind"] == "text"
    # no tools offered: no function-calling system prompt
    r = dpo.adapt_when2call_pref(rows[8], ctx)
    assert [m["role"] for m in r["prompt"]] == ["user"] and r["tools"] == ""
