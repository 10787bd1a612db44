"""Synthesis at volume against the local Messages server (stand-in model, real SDK): rejected
traces are sampled again until the target is accepted, the budget guard and the attempt limit
stop the loop with their stop_reason, the judges and the scenario writer go through Message
Batches (the cost projection of a token profile: tests/unit/synth/test_synth_volume_config.py)."""

from __future__ import annotations

import json
import re

import anthropic
import pytest
from dagster import materialize

from surrogate_dagster.llm.batches import MessageBatchRunner
from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.local_server import MessagesServer
from surrogate_dagster.llm.standin import StandInModel
from surrogate_dagster.resources import ObjectStoreResource
from surrogate_dagster.synth.assets import orchestrator_traces, synth_scenarios
from surrogate_dagster.synth.config import resolve_llm, resolve_synth
from surrogate_dagster.synth.projection import RequestRecorder, count_input_tokens, project, stand_in_input_tokens
from surrogate_dagster.synth.resource import LLMResource, SynthSettings
from surrogate_dagster.synth.scenarios import expand_scenarios, make_scenario
from surrogate_dagster.synth.volume import synthesize_until_accepted
from tests.unit.synth.test_synth_volume_config import CAT

SEEDS = {s["task"]: make_scenario(s, "seed") for s in CAT["seeds"]}
PARALLEL = SEEDS["For our FastAPI billing API: add rate limiting per API key, structured JSON logging and a /healthz endpoint"]
SOLO = SEEDS["Migrate this Dockerfile for the Flask API to a multi-stage build and get the final image under 200 MB"]
ASK = SEEDS["Drop the unused legacy_sessions table from the production Postgres database"]
BATCHES = ("POST", "/v1/messages/batches")


class Picky:
    """The stand-in, except that judge_2 rejects the first trace it sees of the scenarios in
    ``first_only`` and every trace of those in ``always``. The planner's final answer names the
    sample it is (a new sample is a different trace, as with a real model)."""

    def __init__(self, first_only=(), always=()) -> None:
        self.standin, self.first_only, self.always = StandInModel(), set(first_only), set(always)
        self.seen: dict[str, int] = {}

    def __call__(self, req: dict):
        content, stop, label = self.standin.respond(req)
        system = json.dumps(req.get("system"))
        sample = re.search(r"\(Sample (\d+)\.\)", system)
        if label == "planner" and sample and stop == "end_turn":
            content = [*content, {"type": "text", "text": f"(sample {sample.group(1)})"}]
        if label == "judge" and req["model"] == CAT["models"]["judge_2"]:
            user = req["messages"][0]["content"]
            task = re.search(r"<scenario>(.*?)</scenario>", user, re.S).group(1)
            self.seen[task] = self.seen.get(task, 0) + 1
            if task in self.always or (task in self.first_only and self.seen[task] == 1):
                content = [{"type": "tool_use", "id": "toolu_v", "name": "record_verdict",
                            "input": {"accept": False, "score": 2, "reasons": ["the change is never verified"]}}]
        return content, stop, label


def client_for(srv: MessagesServer, tmp_path, **kw) -> LLMClient:
    return LLMClient(models=CAT["models"], prices=CAT["prices_per_mtok"], max_tokens=CAT["max_tokens"],
                     base_url=srv.url, api_key_env=None, cache_store=tmp_path / "cache", backoff_base_s=0.001,
                     sleep=lambda s: None, **kw)


def runner(client: LLMClient, tmp_path) -> MessageBatchRunner:
    return MessageBatchRunner(client, tmp_path / "store", poll_s=0.01, poll_max_s=0.05)


def test_rejected_traces_are_replaced_until_the_target_is_accepted(tmp_path):
    picky = Picky(first_only={PARALLEL["task"], SOLO["task"]})
    with MessagesServer(picky) as srv:
        c = client_for(srv, tmp_path)
        res = synthesize_until_accepted(c, [PARALLEL, SOLO, ASK], target=3, batch_key="batch-000",
                                        max_attempts_per_scenario=3, batch_runner=runner(c, tmp_path))
        judged_in_batches = sum(r.label == "judge" for r in srv.batch_items)
        assert srv.requests_to(*BATCHES) == 2  # one Message Batch of judges per round
        assert srv.requests_to("POST", "/v1/messages") == sum(u["calls"] - u["batched_calls"]
                                                              for u in c.usage_by_role().values())
    s = res["summary"]
    assert s["stop_reason"] == "target_reached" and s["accepted"] == s["target"] == 3 and len(res["kept"]) == 3
    assert s["attempts"] == 5 and s["rounds"] == 2 and s["rejected_by_reason"] == {"judges_rejected": 2}
    assert [r["scenarios"] for r in s["by_round"]] == [3, 2]
    assert {json.loads(r["meta"])["scenario_id"] for r in res["kept"]} == {PARALLEL["id"], SOLO["id"], ASK["id"]}
    assert {(r["scenario_id"], r["attempt"]) for r in res["rejections"]} == {(PARALLEL["id"], 1), (SOLO["id"], 1)}
    replaced = [r for r in res["kept"] if json.loads(r["meta"])["scenario_id"] == SOLO["id"]][0]
    assert json.loads(replaced["meta"])["attempt"] == 2 and "(sample 2)" in replaced["messages"][-1]["content"]
    assert judged_in_batches == 2 * 5  # both judges of every trace, all inside message batches
    assert c.ledger.summary()["counts"]["batch_calls"] == judged_in_batches
    usage = c.usage_by_role()
    assert usage["judge"]["batched_calls"] == usage["judge"]["calls"] == 5
    assert usage["planner"]["cache_read_input_tokens"] > 0  # the planner's prefix is cached across calls


def test_attempt_limit_stops_with_attempts_exhausted(tmp_path):
    with MessagesServer(Picky(always={SOLO["task"]})) as srv:
        c = client_for(srv, tmp_path)
        res = synthesize_until_accepted(c, [PARALLEL, SOLO, ASK], target=3, batch_key="batch-001",
                                        max_attempts_per_scenario=3)
    s = res["summary"]
    assert s["stop_reason"] == "attempts_exhausted" and s["accepted"] == 2 and s["attempts"] == 3 + 1 + 1
    assert s["scenarios_without_trace"] == [SOLO["id"]] and s["rejected_by_reason"] == {"judges_rejected": 3}
    assert [r["attempt"] for r in res["rejections"]] == [1, 2, 3]


def test_budget_guard_stops_the_loop_with_stop_reason_budget(tmp_path):
    with MessagesServer(Picky(first_only={PARALLEL["task"], SOLO["task"]})) as srv:
        probe = client_for(srv, tmp_path / "probe")
        full = synthesize_until_accepted(probe, [PARALLEL, SOLO, ASK], target=3, batch_key="probe",
                                         batch_runner=runner(probe, tmp_path / "probe"))
        spent = probe.ledger.summary()["spent_total_usd"]
        budget = spent * 0.6  # not enough for the second round
        c = client_for(srv, tmp_path / "c", budget_usd=budget)
        res = synthesize_until_accepted(c, [PARALLEL, SOLO, ASK], target=3, batch_key="batch-002",
                                        batch_runner=runner(c, tmp_path / "c"))
    assert full["summary"]["stop_reason"] == "target_reached"
    s = res["summary"]
    assert s["stop_reason"] == "budget" and "budget guard" in s["stop_message"] and s["accepted"] < 3
    assert c.ledger.summary()["spent_total_usd"] <= budget


def test_scenario_writer_runs_as_message_batches(tmp_path):
    seeds = CAT["seeds"][:10]
    with MessagesServer() as srv:
        c = client_for(srv, tmp_path)
        scen, summary = expand_scenarios(c, seeds, target=70, per_request=25, batch_runner=runner(c, tmp_path))
        assert srv.requests_to(*BATCHES) >= 1 and srv.requests_to("POST", "/v1/messages") == 0
    assert len(scen) == 70 and summary["shortfall"] == 0 and summary["rounds"] >= 3
    assert {r.label for r in srv.batch_items} == {"scenario_writer"}
    assert c.usage_by_role()["scenario_writer"]["batched_calls"] == len(srv.batch_items)


def test_traces_asset_records_target_attempts_stop_reason_and_projection(tmp_path):
    picky = Picky(first_only={PARALLEL["task"]})
    with MessagesServer(picky) as srv:
        llm = LLMResource(**resolve_llm({"base_url": srv.url, "api_key_env": "SURROGATE_UNSET_KEY_FOR_TESTS",
                                         "batch_poll_s": 0.01}, CAT).model_dump())
        res = {"object_store": ObjectStoreResource(kind="local", root=str(tmp_path)), "llm": llm,
               "synth": SynthSettings(**resolve_synth({"target_count": 40, "sample_traces": 1}, CAT).model_dump())}
        materialize([synth_scenarios], resources=res)
        r = materialize([orchestrator_traces], partition_key="batch-000", resources=res)
        assert srv.requests_to(*BATCHES) >= 2
    m = {k: v.value for k, v in r.asset_materializations_for_node("orchestrator_traces")[-1].metadata.items()}
    assert m["target"] == 25 and m["stop_reason"] in ("target_reached", "attempts_exhausted")
    assert m["accepted"] == m["kept"] and m["attempts"] >= 25 and m["rounds"] >= 2
    assert m["volume"]["rejected_by_reason"].get("judges_rejected", 0) >= 1
    expected = project(CAT["traces"]["measured_tokens_per_trace"], models=CAT["models"],
                       prices=CAT["prices_per_mtok"], budget_usd=CAT["budget_usd"], spent_usd=m["projection"]["budget_usd"]
                       - m["projection"]["budget_left_usd"])
    assert m["projected_cost_per_trace_usd"] == expected["projected_cost_per_trace_usd"] > 0
    assert m["traces_the_budget_buys"] == expected["traces_the_budget_buys"]
    assert set(m["projection"]["by_kind"]["planner"]) >= {"input_tokens", "output_tokens",
                                                          "cache_creation_input_tokens", "cache_read_input_tokens"}
    assert m["usage_by_call_kind"]["judge"]["batched_calls"] == m["usage_by_call_kind"]["judge"]["calls"] > 0
    # a keyed endpoint: the input tokens are re-measured with count_tokens on this batch's real
    # planner/subagent/judge requests (the stand-in counts as its replies do: ratio 1)
    counted = m["projection"]["counted_by_kind"]
    assert m["projection"]["token_counts"] == "count_tokens" and {"planner", "subagent", "judge", "judge_2"} <= set(counted)
    assert all(c["ratio"] == 1.0 and 0 < c["requests"] <= 3 for c in counted.values())
    assert srv.requests_to("POST", "/v1/messages/count_tokens") == sum(c["requests"] for c in counted.values())


def test_count_tokens_route_counts_like_the_replies(tmp_path):
    with MessagesServer() as srv:
        c = client_for(srv, tmp_path)
        recorder = RequestRecorder(c, per_kind=2)
        synthesize_until_accepted(c, [PARALLEL, SOLO], target=2, batch_key="batch-000", max_attempts_per_scenario=1)
        assert len(recorder.requests["planner"]) == 2 and recorder.requests.get("subagent")
        for kind, reqs in recorder.requests.items():
            for r in reqs:
                assert count_input_tokens(c.sdk, r) == stand_in_input_tokens(r) > 0, kind
        with pytest.raises(anthropic.BadRequestError, match="messages"):
            c.sdk.messages.count_tokens(model=recorder.requests["planner"][0]["model"], messages=[])
