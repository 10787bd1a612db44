"""Tool and agent adapters against the offline hub fixtures (fixtures/hub/datasets/...).

Every fixture row has an expected outcome: converted ("ok") or quarantined with a given reason.
The mirror's catalog filters (swe_gym_openhands resolved, nebius target) are applied as the
mirror applies them, before the adapter.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from surrogate_dagster.sources.adapters import agent, tools
from surrogate_dagster.sources.adapters.base import ROLES, AdapterContext, Quarantine
from surrogate_dagster.sources.hermes import parse_tool_calls

REPO = Path(__file__).resolve().parents[3]
HUB = REPO / "fixtures/hub/datasets"
SHARED = Path(os.environ.get("SURROGATE_SHARED_DIR", REPO.parent / "shared"))
ADAPTERS = {**tools.ADAPTERS, **agent.ADAPTERS}
OK = "ok"

# source -> (hf repo, {config/split file: expected outcome per row, in file order})
EXPECTED: dict[str, tuple[str, dict[str, list[str]]]] = {
    "hermes_function_calling": ("NousResearch/hermes-function-calling-v1", {
        "func_calling_singleturn/train": [OK, OK, OK, "bad_tool_call", "bad_role", "undeclared_tool"],
        "func_calling/train": [OK, OK, "bad_tool_call", "no_assistant_turn", "empty_conversation", OK],
        "glaive_func_calling/train": [OK, OK, OK, "bad_tool_call", OK, "no_user_turn"]}),
    "xlam_function_calling": ("Salesforce/xlam-function-calling-60k", {
        "default/train": [OK, OK, OK, OK, OK, "bad_json", "undeclared_tool", "bad_tools", "no_tool_call"]}),
    "toucan_kimi_k2": ("Agent-Ark/Toucan-1.5M", {
        "Kimi-K2/train": [OK, OK, OK, "bad_tool_call", "bad_role", "undeclared_tool", "bad_json"]}),
    "when2call_sft": ("nvidia/When2Call", {
        "train_sft/train": [OK, OK, OK, OK, OK, "when2call_bare_tool_call", "bad_tool_call", "undeclared_tool",
                            "empty_conversation"]}),
    "toolmind": ("Nanbeige/ToolMind", {
        "default/train": [OK, OK, OK, "bad_tool_call", "undeclared_tool", "bad_role", "empty_conversation"]}),
    "nemotron_swe": ("nvidia/Nemotron-SWE-v1", {
        "default/r2e_gym": [OK, OK, OK, "bad_tool_call", "bad_role", "no_assistant_turn"]}),
    "swe_gym_openhands": ("SWE-Gym/OpenHands-Sampled-Trajectories", {   # rows 4-5 fail resolved == True
        "default/train.raw": [OK, OK, OK, "filtered", "filtered", "bad_tool_call", "bad_role", "no_assistant_turn"]}),
    "hermes_agent_traces": ("lambda/hermes-agent-reasoning-traces", {
        "kimi/train": [OK, OK, OK, "bad_tool_call", "undeclared_tool", "bad_role"],
        "glm-5.1/train": [OK, OK, OK, "bad_tool_call", "undeclared_tool", "bad_role"]}),
    "nebius_swe_agent": ("nebius/SWE-agent-trajectories", {              # rows 4-5 fail target == True
        "default/train": [OK, OK, OK, "filtered", "filtered", "bad_role", "non_text_content", "no_assistant_turn"]}),
    "swe_gym": ("SWE-Gym/SWE-Gym", {"default/train": [OK, OK, OK, "empty_patch", "bad_patch", "no_user_turn"]}),
    "orca_agentinstruct": ("microsoft/orca-agentinstruct-1M-v1", {
        "default/open_domain_qa": [OK, OK, "bad_json", "empty_conversation", "no_assistant_turn", "bad_role"],
        "default/code_": [OK, OK, OK, OK, OK, "bad_json"],
        "default/follow_up": [OK, OK, OK, OK, OK, "no_assistant_turn"]}),
}
MIRROR_FILTER = {"swe_gym_openhands": lambda r: bool(r["resolved"]), "nebius_swe_agent": lambda r: bool(r["target"])}
TOOL_SOURCES = [s for s in EXPECTED if s in tools.ADAPTERS] + ["hermes_agent_traces"]


def rows_of(repo: str, part: str) -> list[dict]:
    return [json.loads(line) for line in (HUB / repo / f"{part}.jsonl").read_text().splitlines() if line.strip()]


def run(source: str, row: dict, config: str = "default", **options) -> dict:
    return ADAPTERS[source](row, AdapterContext(source=source, config=config, options=options))


def outcome(source: str, row: dict, config: str) -> str:
    if source in MIRROR_FILTER and not MIRROR_FILTER[source](row):
        return "filtered"
    try:
        out = run(source, row, config)
    except Quarantine as q:
        return q.reason
    check_normalized(out, source)
    return OK


def check_normalized(out: dict, source: str) -> None:
    """The shared contract every converted row must meet."""
    assert set(out) == {"id", "source", "kind", "messages", "prompt", "chosen", "rejected", "tools", "meta"}
    assert out["kind"] == "sft" and out["source"] == source and out["id"]
    assert all(m["role"] in ROLES and isinstance(m["content"], str) for m in out["messages"])
    json.loads(out["meta"])
    declared = set()
    if out["tools"]:
        tl = json.loads(out["tools"])
        for t in tl:
            assert t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
            assert "null" not in json.dumps(t)  # Arrow-unified nulls never reach the prompt
            declared.add(t["function"]["name"])
        system = out["messages"][0]
        assert system["role"] == "system" and all(f'"name": "{n}"' in system["content"] for n in declared)
    for m in out["messages"]:
        if m["role"] == "assistant":
            assert all(c["name"] in declared for c in parse_tool_calls(m["content"]))
        if m["role"] == "tool":
            assert m["content"].startswith("<tool_response>\n") and m["content"].endswith("\n</tool_response>")


CASES = [(s, repo, part, i, exp) for s, (repo, parts) in EXPECTED.items()
         for part, exps in parts.items() for i, exp in enumerate(exps)]


@pytest.mark.parametrize("source, repo, part, index, expected", CASES,
                         ids=[f"{c[0]}:{c[2]}:{c[3] + 1}" for c in CASES])
def test_fixture_row_outcome(source, repo, part, index, expected):
    rows = rows_of(repo, part)
    assert outcome(source, rows[index], part.split("/")[0]) == expected


@pytest.mark.parametrize("source", list(EXPECTED))
def test_fixture_layout_and_size(source):
    repo, parts = EXPECTED[source]
    rev = (HUB / repo / "revision.txt").read_text().strip()
    assert len(rev) == 40 and all(c in "0123456789abcdef" for c in rev)
    for part, exps in parts.items():
        assert len(rows_of(repo, part)) == len(exps)
        assert 6 <= len(exps) <= 20


def test_adapter_names_match_the_catalog():
    catalog = yaml.safe_load((REPO / "assets/sources.yaml").read_text())["sources"]
    names = {s["adapter"] for s in catalog if s["family"] in ("tool", "agent")}
    assert names == set(ADAPTERS) == set(EXPECTED)


def test_pinned_revisions():
    assert (HUB / "nvidia/Nemotron-SWE-v1/revision.txt").read_text().strip() == "0fe17a965b297a9c943a59050a14c42d5f0083ce"
    assert (HUB / "SWE-Gym/SWE-Gym/revision.txt").read_text().strip() == "bb94ed9e39bbeb96a7fcbfb533b80f25a7fd59cb"


# ------------------------------------------------------------------------------ per-source gotchas

def test_xlam_row_equal_to_bfcl_parallel_multiple_0():
    bfcl = json.loads((SHARED / "data/benchmarks/BFCL/BFCL_v4_parallel_multiple.json").read_text().splitlines()[0])
    assert bfcl["id"] == "parallel_multiple_0"
    out = run("xlam_function_calling", rows_of("Salesforce/xlam-function-calling-60k", "default/train")[0])
    user = next(m["content"] for m in out["messages"] if m["role"] == "user")
    assert user == bfcl["question"][0][0]["content"]
    ours = {t["function"]["name"]: t["function"] for t in json.loads(out["tools"])}
    assert set(ours) == {f["name"] for f in bfcl["function"]}
    assert ours["math_toolkit.sum_of_multiples"]["parameters"]["required"] == ["lower_limit", "upper_limit", "multiples"]
    assert ours["math_toolkit.sum_of_multiples"]["parameters"]["properties"]["multiples"]["type"] == "array"
    calls = parse_tool_calls(out["messages"][-1]["content"])
    assert calls == [{"name": "math_toolkit.sum_of_multiples", "arguments": {"lower_limit": 1, "upper_limit": 1000, "multiples": [3, 5]}},
                     {"name": "math_toolkit.product_of_primes", "arguments": {"count": 5}}]


def test_hermes_fc_rebuilds_system_and_rewrites_python_calls():
    row = rows_of("NousResearch/hermes-function-calling-v1", "func_calling_singleturn/train")[0]
    assert "{'arguments'" in row["conversations"][2]["value"]  # the native single-quoted call
    out = run("hermes_function_calling", row, "func_calling_singleturn")
    assert "'type': 'function'" not in out["messages"][0]["content"]  # Python-literal tool list is gone
    assert out["messages"][-1]["content"] == \
        '<tool_call>\n{"name": "get_stock_fundamentals", "arguments": {"symbol": "TSLA"}}\n</tool_call>'


def test_hermes_fc_toolless_row_has_no_system_and_no_tools():
    out = run("hermes_function_calling", rows_of("NousResearch/hermes-function-calling-v1", "glaive_func_calling/train")[2])
    assert out["tools"] == "" and [m["role"] for m in out["messages"]] == ["user", "assistant"]


def test_toucan_merges_parallel_calls_and_drops_kimi_tokens():
    rows = rows_of("Agent-Ark/Toucan-1.5M", "Kimi-K2/train")
    out = run("toucan_kimi_k2", rows[0])
    assert "<|im_" not in json.dumps(out["messages"])
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "assistant"]
    assert [c["name"] for c in parse_tool_calls(out["messages"][2]["content"])] == \
        ["company_research_exa", "competitor_finder_exa", "linkedin_search_exa"]
    assert json.loads(out["meta"])["target_tools"] == ["company_research_exa", "competitor_finder_exa", "linkedin_search_exa"]
    kept = run("toucan_kimi_k2", rows[1])["messages"][2]["content"]
    dropped = run("toucan_kimi_k2", rows[1], reasoning="drop")["messages"][2]["content"]
    assert kept.startswith("<think>\nThe user wants alerts") and "<think>" not in dropped
    assert parse_tool_calls(kept) == parse_tool_calls(dropped) == [{"name": "weather-get_alerts", "arguments": {"state": "CA"}}]


def test_when2call_toolcall_rewrite_and_null_unified_tools():
    rows = rows_of("nvidia/When2Call", "train_sft/train")
    plain = [run("when2call_sft", r, "train_sft") for r in rows[:5]]
    assert "<TOOLCALL>" not in json.dumps([o["messages"] for o in plain])
    assert [json.loads(o["meta"])["answer_kind"] for o in plain] == ["text", "tool_call", "text", "tool_call", "tool_call"]
    unified = pa.Table.from_pylist(rows[:5]).to_pylist()  # what older datasets / Parquet would yield
    assert unified[0]["tools"][0]["parameters"]["properties"]["domain"] is None
    assert [run("when2call_sft", r, "train_sft") for r in unified] == plain
    params = json.loads(plain[0]["tools"])[0]["function"]["parameters"]
    assert params["properties"]["latitude"]["type"] == "integer" and params["required"] == ["region", "latitude", "longitude"]


def test_when2call_bug_as_dict_content_is_quarantined():
    row = copy.deepcopy(rows_of("nvidia/When2Call", "train_sft/train")[5])
    row["messages"][1]["content"] = json.loads(row["messages"][1]["content"])
    with pytest.raises(Quarantine) as q:
        run("when2call_sft", row)
    assert q.value.reason == "when2call_bare_tool_call"


def test_toolmind_drops_arrow_null_arguments():
    row = rows_of("Nanbeige/ToolMind", "default/train")[0]
    assert row["conversations"][1]["tool_calls"][0]["function"]["arguments"]["flight_id"] is None
    out = run("toolmind", row)
    assert parse_tool_calls(out["messages"][2]["content"]) == [
        {"name": "search_flights", "arguments": {"origin": "SFO", "destination": "JFK", "date": "2025-03-14"}}]
    book = next(t for t in json.loads(out["tools"]) if t["function"]["name"] == "book_flight")
    assert book["function"]["parameters"]["required"] == ["flight_id"]  # from the "arguments" key


def test_nemotron_accepts_object_arguments():
    row = rows_of("nvidia/Nemotron-SWE-v1", "default/r2e_gym")[0]
    as_objects = copy.deepcopy(row)
    for m in as_objects["messages"]:
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    assert run("nemotron_swe", as_objects) == run("nemotron_swe", row)


def test_swe_gym_openhands_observation_prefix_and_null_content():
    row = rows_of("SWE-Gym/OpenHands-Sampled-Trajectories", "default/train.raw")[0]
    assert row["instance_id"] == "python__mypy-15976"  # ADP's _<n> suffix undone
    out = run("swe_gym_openhands", row)
    tool_turns = [m["content"] for m in out["messages"] if m["role"] == "tool"]
    assert tool_turns and not any("OBSERVATION:" in t.split("\n", 2)[1] for t in tool_turns)
    assert out["messages"][-1]["content"] == '<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>'
    assert "You are a helpful assistant that can interact with a computer" in out["messages"][0]["content"]
    n_native = sum(len(m["tool_calls"] or []) for m in row["messages"])
    assert json.loads(out["meta"])["n_tool_calls"] == n_native


def test_lambda_keeps_agent_prompt_unless_it_disagrees_with_tools():
    row = rows_of("lambda/hermes-agent-reasoning-traces", "kimi/train")[0]
    out = run("hermes_agent_traces", row, "kimi")
    assert out["messages"][0]["content"] == row["conversations"][0]["value"]
    assert out["messages"][1]["content"].startswith("<think>") is False
    other = copy.deepcopy(row)
    other["conversations"][0]["value"] = other["conversations"][0]["value"].replace('"name": "todo"', '"name": "todo2"')
    rebuilt = run("hermes_agent_traces", other, "kimi")["messages"][0]["content"]
    assert rebuilt != other["conversations"][0]["value"] and '"name": "todo"' in rebuilt


def test_nebius_plain_chatml_with_text_commands():
    row = rows_of("nebius/SWE-agent-trajectories", "default/train")[0]
    out = run("nebius_swe_agent", row)
    assert out["tools"] == "" and out["messages"][0]["content"] == row["trajectory"][0]["system_prompt"]
    assistant = [m["content"] for m in out["messages"] if m["role"] == "assistant"]
    assert len(assistant) == sum(t["role"] == "ai" for t in row["trajectory"])
    assert assistant[-1].rstrip().endswith("```\nsubmit\n```") and "<tool_call>" not in "".join(assistant)


def test_swe_gym_patch_answer_and_meta():
    row = rows_of("SWE-Gym/SWE-Gym", "default/train")[0]
    out = run("swe_gym", row)
    assert out["messages"][1]["content"] == f"```diff\n{row['patch'].rstrip()}\n```"
    assert row["problem_statement"].strip() in out["messages"][0]["content"]
    meta = json.loads(out["meta"])
    assert (meta["repo"], meta["base_commit"]) == (row["repo"], row["base_commit"])


def test_orca_drops_empty_system_keeps_real_one():
    ok = run("orca_agentinstruct", rows_of("microsoft/orca-agentinstruct-1M-v1", "default/open_domain_qa")[0], split="open_domain_qa")
    assert [m["role"] for m in ok["messages"]] == ["user", "assistant"]
    assert json.loads(ok["meta"])["category"] == "open_domain_qa"
    sys_row = run("orca_agentinstruct", rows_of("microsoft/orca-agentinstruct-1M-v1", "default/code_")[2])
    assert sys_row["messages"][0] == {"role": "system", "content": "You are a helpful coding assistant."}


def test_ids_are_unique_per_source():
    for source, (repo, parts) in EXPECTED.items():
        ids = [run(source, r, p.split("/")[0])["id"] for p, exps in parts.items()
               for r, e in zip(rows_of(repo, p), exps) if e == OK]
        assert len(ids) == len(set(ids)), source


def test_mirror_then_normalize_matches_expectations(tmp_path):
    """Through the real mirror (catalog filters, Parquet round trip, which null-unifies structs
    across rows) and normalize step: the same rows survive and quarantine for the same reasons."""
    from collections import Counter

    from surrogate_dagster.catalog.loader import load_sources
    from surrogate_dagster.hub import OfflineHub
    from surrogate_dagster.sources.mirror import mirror_source
    from surrogate_dagster.sources.normalize import normalize_source
    from surrogate_dagster.storage import LocalObjectStore

    hub = OfflineHub(REPO / "fixtures/hub", tmp_path / "push", "org")
    store = LocalObjectStore(tmp_path / "store")
    specs = [s for s in load_sources().sources if s.name in EXPECTED]
    assert len(specs) == len(EXPECTED)
    for spec in specs:
        expected = Counter(e for exps in EXPECTED[spec.name][1].values() for e in exps if e != "filtered")
        mirror_source(spec, hub, store, log=lambda m: None)
        report = normalize_source(spec, store, log=lambda m: None)
        assert report.rows_out == expected.pop(OK), spec.name
        assert dict(report.quarantined) == dict(expected), spec.name
        assert report.duplicate_ids == 0
