"""Scenarios -> plan -> parallel subagents -> aggregate -> ChatML/Hermes trace -> dual validation,
all through the real anthropic SDK against the local Messages server (the stand-in model)."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

import jinja2
import pytest

from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.local_server import Fault, MessagesServer
from surrogate_dagster.llm.standin import StandInModel
from surrogate_dagster.paths import ASSETS_DIR
from surrogate_dagster.sources.hermes import parse_tool_calls, to_template_messages
from surrogate_dagster.synth.orchestrator import TOOL_NAMES, BatchFailed, synthesize_batch, system_prompt
from surrogate_dagster.synth.scenarios import (batch_keys, batch_slice, expand_scenarios, load_synth_config,
                                               make_scenario, shingles)
from surrogate_dagster.synth.validate_traces import structural_check, validate_batch

CFG = load_synth_config(ASSETS_DIR / "synth.yaml")
SEEDS = {s["task"]: make_scenario(s, "seed") for s in CFG["seeds"]}
PARALLEL = SEEDS["For our FastAPI billing API: add rate limiting per API key, structured JSON logging and a /healthz endpoint"]
SOLO = SEEDS["Migrate this Dockerfile for the Flask API to a multi-stage build and get the final image under 200 MB"]
ASK = SEEDS["Drop the unused legacy_sessions table from the production Postgres database"]
SUBAGENT_LATENCY = 0.3


def latency(req: dict, label: str) -> float:
    return SUBAGENT_LATENCY if label == "subagent" else 0.0


def client_for(server: MessagesServer, cache_dir: Path, **kw) -> LLMClient:
    opts = dict(models=CFG["models"], prices=CFG["prices_per_mtok"], max_tokens=CFG["max_tokens"],
                base_url=server.url, api_key_env="SURROGATE_UNSET_KEY_FOR_TESTS", cache_store=cache_dir,
                backoff_base_s=0.01, sleep=lambda s: None)
    opts.update(kw)
    return LLMClient(**opts)


@pytest.fixture()
def server():
    with MessagesServer(StandInModel().respond, latency=latency) as srv:
        yield srv


def test_plan_parallel_subagents_aggregate(server, tmp_path):
    rows, summary = synthesize_batch(client_for(server, tmp_path), [PARALLEL, SOLO, ASK], batch_key="batch-000")
    assert summary["traces"] == 3 and summary["failed"] == 0 and summary["stopped"] is None
    par = rows[0]
    meta = json.loads(par["meta"])
    calls = [c for m in par["messages"] if m["role"] == "assistant" for c in parse_tool_calls(m["content"])]
    assert [c["name"] for c in calls] == ["spawn_subagent"] * 3 + ["receive_results"] * 3
    final = par["messages"][-1]
    assert final["role"] == "assistant" and "<tool_call>" not in final["content"]
    for c in calls[:3]:  # the planner aggregated every subagent's result
        assert c["arguments"]["role"] in final["content"]
    # the three subagents really ran at the same time: server side and client side
    subs = [r for r in server.records if r.label == "subagent"]
    assert len(subs) == 3
    assert max(r.t_start for r in subs) < min(r.t_end for r in subs)
    assert max(r.t_end for r in subs) - min(r.t_start for r in subs) < 2 * SUBAGENT_LATENCY
    times = meta["subagents"]
    assert max(t["start_s"] for t in times) < min(t["end_s"] for t in times)
    assert meta["n_subagents"] == 3 and meta["tags"]["parallel"] is True
    # sequential task: solo, no subagents; irreversible task: asks, runs nothing
    solo, ask = (json.loads(r["meta"]) for r in rows[1:])
    assert solo["n_subagents"] == 0 and solo["simulated_tools"] == {"file_read": 1}
    assert ask["n_subagents"] == 0 and "confirm" in rows[2]["messages"][-1]["content"]
    assert all(structural_check(r, s) == [] for r, s in zip(rows, [PARALLEL, SOLO, ASK]))
    assert summary["ledger"]["billed_usd"] > 0 and summary["ledger"]["counts"]["calls"] == len(server.records)


def _qwen25_template() -> str:
    spec = importlib.util.find_spec("trl")  # locate TRL's copy of the real Qwen2.5 template, no import
    path = Path(spec.submodule_search_locations[0]) / "chat_templates" / "qwen2_5.jinja"
    return path.read_text()


def test_trace_is_chatml_hermes_and_renders_through_qwen25_template(server, tmp_path):
    rows, _ = synthesize_batch(client_for(server, tmp_path), [PARALLEL, SOLO])
    sysmsg = system_prompt()
    assert sysmsg.startswith("You are a function calling AI model") and "You are Surrogate-1." in sysmsg
    listed = [json.loads(line)["function"]["name"] for line in
              sysmsg.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()]
    assert listed == TOOL_NAMES and len(listed) == 11  # the runbook names 11 (scratchpad read + write)
    assert "If confidence < 0.6 → ask user" in sysmsg
    template = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(_qwen25_template())
    for row in rows:
        assert row["kind"] == "sft" and row["source"] == "synth_orchestrator"
        assert {m["role"] for m in row["messages"]} <= {"system", "user", "assistant", "tool"}
        assert row["messages"][0]["content"] == sysmsg
        assert [t["function"]["name"] for t in json.loads(row["tools"])] == TOOL_NAMES
        n_calls = sum(len(parse_tool_calls(m["content"])) for m in row["messages"] if m["role"] == "assistant")
        n_tool = sum(m["role"] == "tool" for m in row["messages"])
        assert n_calls == n_tool > 0
        text = template.render(messages=to_template_messages(row["messages"]), add_generation_prompt=False)
        assert text.startswith("<|im_start|>system\nYou are a function calling AI model")
        assert text.count("<tool_response>") == n_tool  # one wrapper per result, not two
        assert text.count("<tool_call>") == n_calls + sysmsg.count("<tool_call>")  # + the format example
        assert text.rstrip().endswith("<|im_end|>")


def test_cache_rerun_makes_zero_http_calls(server, tmp_path):
    batch = [PARALLEL, SOLO, ASK]
    rows1, s1 = synthesize_batch(client_for(server, tmp_path / "c"), batch)
    n = server.n_requests
    rows2, s2 = synthesize_batch(client_for(server, tmp_path / "c"), batch)  # a re-run of the partition
    assert server.n_requests == n
    assert [r["messages"] for r in rows1] == [r["messages"] for r in rows2]
    assert s2["ledger"]["billed_usd"] == 0 and s2["ledger"]["counts"] == {"cache_hits": s1["ledger"]["counts"]["calls"]}


def test_budget_stop_mid_batch_says_how_far(server, tmp_path):
    batch = [PARALLEL, SOLO, ASK, SEEDS[CFG["seeds"][1]["task"]]]
    # one subagent at a time: the reservations in flight are one call's, so the budget arithmetic
    # below holds whatever the price list (parallel subagents are reserved together)
    _, full = synthesize_batch(client_for(server, tmp_path / "probe"), batch[:1], max_parallel_subagents=1)
    one = full["ledger"]["billed_usd"]
    # the output part of the costliest single call's worst case (any role)
    call_worst = max(CFG["max_tokens"][r] * CFG["prices_per_mtok"][m]["output"] / 1e6 for r, m in CFG["models"].items())
    # Room for the first scenario plus one call's worst case: the guard must stop early in the
    # second scenario, before the spend could pass the budget.
    budget = one + 1.3 * call_worst
    n0 = server.n_requests
    client = client_for(server, tmp_path / "c", budget_usd=budget)
    rows, s = synthesize_batch(client, batch, batch_key="batch-007", max_parallel_subagents=1)
    assert s["stopped"] == "budget" and 1 <= len(rows) < len(batch), (one, budget, s["stop_message"])
    assert f"of {len(batch)} in batch batch-007" in s["stop_message"] and f"{len(rows)} traces done" in s["stop_message"]
    assert f"${budget:.2f}" in s["stop_message"]
    led = s["ledger"]
    assert led["spent_total_usd"] <= budget and led["counts"]["budget_stops"] >= 1
    assert server.n_requests - n0 == led["counts"]["calls"]  # nothing was sent past the guard


def test_malformed_reply_fails_one_scenario_not_the_batch(server, tmp_path):
    server.inject(Fault("malformed", match=lambda req: req["messages"][0]["content"] == SOLO["task"]))
    rows, s = synthesize_batch(client_for(server, tmp_path), [PARALLEL, SOLO, ASK])
    assert len(rows) == 2 and s["failed_by_reason"] == {"malformed_reply": 1}
    assert s["failures"][0]["scenario_id"] == SOLO["id"] and s["ledger"]["counts"]["malformed"] == 1


def test_service_down_fails_the_batch_for_a_rerun(server, tmp_path):
    server.inject(*[Fault("status", 529) for _ in range(20)])
    with pytest.raises(BatchFailed, match="circuit") as exc:
        synthesize_batch(client_for(server, tmp_path, breaker_threshold=4), [PARALLEL, SOLO])
    assert exc.value.rows == [] and exc.value.summary["stopped"] == "circuit_open"
    assert exc.value.summary["ledger"]["counts"]["retries_529"] == 4


def test_scenarios_expand_dedup_and_tag(server, tmp_path):
    client = client_for(server, tmp_path)
    scen, summary = expand_scenarios(client, CFG["seeds"], target=120, per_request=25, dedup_threshold=0.6)
    assert len(scen) == 120 and summary["shortfall"] == 0 and summary["seeds"] == len(CFG["seeds"])
    assert len({s["id"] for s in scen}) == 120
    assert all(s["parallel"] == (s["independent_steps"] >= 3) for s in scen)
    assert summary["parallel"] > 20 and summary["irreversible"] > 5
    assert sum(summary["dropped_by_reason"].values()) > 0  # the writer repeats itself; dedup caught it
    for a, b in itertools.combinations(scen, 2):
        sa, sb = shingles(a["task"]), shingles(b["task"])
        assert len(sa & sb) / len(sa | sb) < 0.6
    n = server.n_requests
    again, _ = expand_scenarios(client_for(server, tmp_path), CFG["seeds"], target=120, per_request=25)
    assert again == scen and server.n_requests == n  # cached round by round
    keys = batch_keys(len(scen), 25)
    assert keys[-1] == "batch-004" and sum(len(batch_slice(scen, k, 25)) for k in keys) == 120
    with pytest.raises(ValueError, match="past the end"):
        batch_slice(scen, "batch-005", 25)


def test_bad_scenario_items_are_dropped_with_reasons(tmp_path):
    def writer(req):
        items = [{"task": "short", "independent_steps": 1, "irreversible": False},
                 {"task": "Add a health check endpoint to the Go API service", "independent_steps": "3",
                  "irreversible": False},
                 {"task": "Add OpenAPI docs to the Flask reporting service, generated from the routes",
                  "independent_steps": 1, "irreversible": False}]
        return [{"type": "tool_use", "id": "toolu_x", "name": "record_scenarios", "input": {"scenarios": items}}], \
            "tool_use", "scenario_writer"
    with MessagesServer(writer) as srv:
        scen, summary = expand_scenarios(client_for(srv, tmp_path), CFG["seeds"][:2], target=5, max_rounds=2)
    assert len(scen) == 3 and summary["shortfall"] == 2
    assert summary["dropped_by_reason"] == {"bad_item_task_length": 2, "bad_item_independent_steps": 2,
                                            "exact_duplicate": 1}


def test_dual_validator_keeps_only_traces_both_judges_accept(tmp_path):
    standin = StandInModel()

    def responder(req):
        content, stop, label = standin.respond(req)
        user = json.dumps(req["messages"][-1]["content"])
        if label == "judge" and req["model"] == CFG["models"]["judge_2"] and "Dockerfile" in user:
            content = [{"type": "tool_use", "id": "toolu_v", "name": "record_verdict", "input": {
                "accept": False, "score": 2, "reasons": ["the image size target is never measured"]}}]
        if label == "planner" and "legacy_sessions" in user and len(req["messages"]) == 1:
            content = [{"type": "text", "text": "Dropping it now."}, {"type": "tool_use", "id": "toolu_d",
                        "name": "shell_exec", "input": {"command": "psql -c 'DROP TABLE legacy_sessions'"}}]
        return content, stop, label

    with MessagesServer(responder) as srv:
        client = client_for(srv, tmp_path)
        rows, _ = synthesize_batch(client, [PARALLEL, SOLO, ASK])
        judged_before = sum(r.label == "judge" for r in srv.records)
        kept, rejected, summary = validate_batch(client, rows, {s["id"]: s for s in (PARALLEL, SOLO, ASK)})
        judge_calls = sum(r.label == "judge" for r in srv.records) - judged_before
    assert [json.loads(r["meta"])["scenario_id"] for r in kept] == [PARALLEL["id"]]
    verdicts = json.loads(kept[0]["meta"])["validation"]["verdicts"]
    assert [v["model"] for v in verdicts] == [CFG["models"]["judge"], CFG["models"]["judge_2"]]
    by_scn = {r["scenario_id"]: r for r in rejected}
    assert by_scn[SOLO["id"]]["stage"] == "judges"
    assert by_scn[SOLO["id"]]["reasons"] == [f"{CFG['models']['judge_2']}: the image size target is never measured"]
    assert by_scn[ASK["id"]]["stage"] == "structural"
    assert "rule_destructive_command_executed" in by_scn[ASK["id"]]["reasons"]
    assert judge_calls == 4  # the structurally broken trace never reached the (paid) judges
    assert summary["judge_agreement"] == {"both_accept": 1, "disagree": 1}
    assert summary["samples"]["kept"][0]["verdicts"] and summary["samples"]["rejected"][0]["reasons"]


def test_structural_rules_against_tags(server, tmp_path):
    rows, _ = synthesize_batch(client_for(server, tmp_path), [PARALLEL, SOLO])
    par, solo = rows
    assert structural_check(par, {**PARALLEL, "parallel": False}) == ["rule_sequential_spawned"]
    assert structural_check(solo, {**SOLO, "parallel": True}) == ["rule_parallel_not_spawned"]
    assert "rule_irreversible_not_asked" in structural_check(solo, {**SOLO, "irreversible": True})
    cut = {**par, "messages": par["messages"][:-1]}  # ends on a tool turn: no final answer
    assert "no_final_answer" in structural_check(cut, PARALLEL)
    bad = {**par, "messages": par["messages"][:2] + [{"role": "assistant", "content":
           '<tool_call>\n{"name": "launch_missiles", "arguments": {}}\n</tool_call>'}]}
    assert {"format_unknown_tool", "format_missing_tool_response"} <= set(structural_check(bad, PARALLEL))


def test_tool_environment_real_tools_and_errors(server, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from surrogate_dagster.synth.orchestrator import ToolEnvironment
    with ThreadPoolExecutor(5) as pool:
        env = ToolEnvironment(client_for(server, tmp_path), PARALLEL["task"], pool, 0.0, {})
        assert env.execute("scratchpad_write", {"key": "plan", "value": "1. a"}) == ('{"ok": true, "keys": ["plan"]}', False)
        assert json.loads(env.execute("scratchpad_read", {"key": "plan"})[0])["value"] == "1. a"
        assert env.execute("scratchpad_read", {"key": "nope"})[1] is True
        assert json.loads(env.execute("reflexion_log", {"error_type": "e", "root_cause": "r", "prevention": "p"})[0]) \
            == {"logged": True, "entries": 1}
        assert env.execute("spawn_subagent", {"role": "x", "prompt": "p", "max_steps": "many"})[1] is True
        ids = [json.loads(env.execute("spawn_subagent", {"role": f"r{i}", "prompt": "add CI"})[0])["subagent_id"]
               for i in range(5)]
        assert ids == ["sa-1", "sa-2", "sa-3", "sa-4", "sa-5"]
        assert "at most 5" in env.execute("spawn_subagent", {"role": "r6", "prompt": "p"})[0]
        out = json.loads(env.execute("receive_results", {"subagent_id": "sa-2"})[0])
        assert out["status"] == "done" and out["output"].startswith("Done:")
        assert env.execute("receive_results", {"subagent_id": "sa-9"})[1] is True
        assert env.execute("launch_missiles", {})[1] is True
        listing, err = env.execute("search_repo", {"query": "rate limit middleware"})
        assert not err and "rate_limit.py" in listing and env.simulated == {"search_repo": 1}
        env.wait_all()
