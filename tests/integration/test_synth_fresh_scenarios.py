"""Fresh scenarios against the local Messages server (stand-in model, real SDK): when scenarios run
out of attempts, the scenario writer draws new ones until the batch reaches its target, the budget
guard stops it, the cap on fresh scenarios is hit or the writer gives nothing usable; a re-run of a
finished batch is all cache hits; the traces asset records the fresh draws."""

from __future__ import annotations

import hashlib

import pytest
from dagster import materialize

from surrogate_dagster.llm.batches import MessageBatchRunner
from surrogate_dagster.llm.cache import request_key
from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.local_server import Fault, MessagesServer
from surrogate_dagster.llm.standin import StandInModel
from surrogate_dagster.resources import ObjectStoreResource
from surrogate_dagster.synth.assets import orchestrator_traces, synth_scenarios
from surrogate_dagster.synth.config import resolve_llm, resolve_synth
from surrogate_dagster.synth.resource import LLMResource, SynthSettings
from surrogate_dagster.synth.orchestrator import BatchFailed
from surrogate_dagster.synth.scenarios import FreshScenarios, make_scenario
from surrogate_dagster.synth.volume import synthesize_until_accepted
from tests.unit.synth.test_fresh_cap import CAT

SEEDS = [make_scenario(s, "seed") for s in CAT["seeds"]]
BY_TASK = {s["task"]: s for s in SEEDS}
PARALLEL = BY_TASK["For our FastAPI billing API: add rate limiting per API key, structured JSON logging and a /healthz endpoint"]
SOLO = BY_TASK["Migrate this Dockerfile for the Flask API to a multi-stage build and get the final image under 200 MB"]
ASK = BY_TASK["Drop the unused legacy_sessions table from the production Postgres database"]
BATCH = [PARALLEL, SOLO, ASK]
BATCHES = ("POST", "/v1/messages/batches")


class Strict:
    """The stand-in, except that judge_2 rejects every trace of the tasks in ``always`` (of every
    task with ``reject_all``), and with ``writer_repeats`` the scenario writer answers with the
    catalog's seed tasks only (all duplicates of the scenario set)."""

    def __init__(self, always=(), reject_all: bool = False, writer_repeats: bool = False) -> None:
        self.standin, self.always, self.reject_all = StandInModel(), set(always), reject_all
        self.writer_repeats = writer_repeats

    def __call__(self, req: dict):
        content, stop, label = self.standin.respond(req)
        if label == "judge" and req["model"] == CAT["models"]["judge_2"]:
            user = req["messages"][0]["content"]
            task = user.split("<scenario>", 1)[1].split("</scenario>", 1)[0]
            if self.reject_all or task in self.always:
                content = [{"type": "tool_use", "id": "toolu_v", "name": "record_verdict",
                            "input": {"accept": False, "score": 2, "reasons": ["the change is never verified"]}}]
        if label == "scenario_writer" and self.writer_repeats:
            items = [{k: s[k] for k in ("task", "independent_steps", "irreversible")} for s in CAT["seeds"][:5]]
            content = [{"type": "tool_use", "id": "toolu_w", "name": "record_scenarios", "input": {"scenarios": items}}]
        return content, stop, label


def client_for(srv: MessagesServer, root, max_tokens: dict | None = None, **kw) -> LLMClient:
    return LLMClient(models=CAT["models"], prices=CAT["prices_per_mtok"], max_tokens=max_tokens or CAT["max_tokens"],
                     base_url=srv.url, api_key_env=None, cache_store=root / "cache", backoff_base_s=0.001,
                     sleep=lambda s: None, **kw)


def run_batch(srv: MessagesServer, root, *, batched: bool = True, max_fresh: int = 5, attempts: int = 3, **kw):
    """One batch of the three scenarios with a fresh-scenario writer; returns (client, fresh, result)."""
    c = client_for(srv, root, **kw)
    runner = MessageBatchRunner(c, root / "store", poll_s=0.01, poll_max_s=0.05) if batched else None
    fresh = FreshScenarios(c, CAT["seeds"], [s["task"] for s in SEEDS], batch_key="batch-000", batch_runner=runner)
    res = synthesize_until_accepted(c, BATCH, target=3, batch_key="batch-000", max_attempts_per_scenario=attempts,
                                    batch_runner=runner, fresh=fresh, max_fresh_scenarios=max_fresh)
    return c, fresh, res


def test_scenarios_rejected_forever_are_replaced_by_fresh_ones(tmp_path):
    with MessagesServer(Strict(always={SOLO["task"], ASK["task"]})) as srv:
        c, fresh, res = run_batch(srv, tmp_path)
        writer_items = [r for r in srv.batch_items if r.label == "scenario_writer"]
        assert srv.requests_to("POST", "/v1/messages") == sum(u["calls"] - u["batched_calls"]
                                                              for u in c.usage_by_role().values())
    s = res["summary"]
    assert s["stop_reason"] == "target_reached" and s["accepted"] == 3 and len(res["kept"]) == 3
    kept_ids = {r["id"] for r in res["kept"]}
    assert f"synth-{PARALLEL['id']}" in kept_ids
    assert not kept_ids & {f"synth-{SOLO['id']}", f"synth-{ASK['id']}"}
    # SOLO and ASK used their 3 attempts each; the two scenarios in their place were drawn in one request
    assert [r["scenarios"] for r in s["by_round"]][:3] == [3, 2, 2] and s["by_round"][3]["fresh"] >= 2
    assert s["fresh_scenarios_drawn"] == len(res["fresh_scenarios"]) >= 2 and s["fresh_draws"] >= 1
    assert len(writer_items) == s["fresh_draws"]  # each draw went out as a Message Batch
    assert c.usage_by_role()["scenario_writer"]["batched_calls"] == s["fresh_draws"]
    assert s["attempts"] == 1 + 3 + 3 + s["fresh_scenarios_drawn"] * 1 + sum(
        r["scenarios"] for r in s["by_round"][4:])
    assert sorted(s["scenarios_without_trace"]) == sorted([SOLO["id"], ASK["id"]])
    # a fresh scenario is a new task of the scenario set's kind, its id a hash of the draw's request
    first = res["fresh_scenarios"][0]
    assert first["origin"] == "fresh" and first["task"] not in BY_TASK and first["id"].startswith("fresh-")
    rebuilt = FreshScenarios(c, CAT["seeds"], [x["task"] for x in SEEDS], batch_key="batch-000")
    rebuilt.set_batch_tasks([x["task"] for x in BATCH])
    key = request_key(rebuilt.request(2))
    assert {x["id"] for x in res["fresh_scenarios"] if x["round"] == 1} <= {
        "fresh-" + hashlib.sha256(f"{key}/{i}".encode()).hexdigest()[:12] for i in range(10)}
    assert {f"synth-{x['id']}" for x in res["fresh_scenarios"]} & kept_ids


def test_rerun_of_a_finished_batch_pays_nothing(tmp_path):
    with MessagesServer(Strict(always={SOLO["task"]})) as srv:
        c1, _, first = run_batch(srv, tmp_path)
        direct, batches = srv.requests_to("POST", "/v1/messages"), srv.requests_to(*BATCHES)
        c2, _, again = run_batch(srv, tmp_path)  # same cache and store: a re-run of the partition
        assert srv.requests_to("POST", "/v1/messages") == direct and srv.requests_to(*BATCHES) == batches
    assert first["summary"]["fresh_scenarios_drawn"] >= 1 and first["summary"]["stop_reason"] == "target_reached"
    assert c1.ledger.summary()["batch_usd"] > 0 and c2.ledger.summary()["batch_usd"] == 0
    assert [x["id"] for x in again["fresh_scenarios"]] == [x["id"] for x in first["fresh_scenarios"]]
    assert [r["id"] for r in again["kept"]] == [r["id"] for r in first["kept"]]


def test_budget_guard_stops_before_the_target_with_stop_reason_budget(tmp_path):
    with MessagesServer(Strict(always={SOLO["task"], ASK["task"]})) as srv:
        probe, _, exhausted = run_batch(srv, tmp_path / "probe", max_fresh=0)  # rounds 1-3 only
        spent = probe.ledger.summary()["spent_total_usd"]
        # The guard reserves a call's worst case before sending it: for a planner turn, max_tokens of
        # output at the planner's price. This budget covers rounds 1-3 and the fresh draw, but not
        # the worst case of a fresh scenario's first planner turn.
        price = CAT["prices_per_mtok"][CAT["models"]["planner"]]
        budget = spent + 0.95 * CAT["max_tokens"]["planner"] * price["output"] / 1e6
        c, _, res = run_batch(srv, tmp_path / "c", budget_usd=budget)
    assert exhausted["summary"]["stop_reason"] == "attempts_exhausted" and exhausted["summary"]["accepted"] == 1
    s = res["summary"]
    assert s["stop_reason"] == "budget" and "budget guard" in s["stop_message"] and s["accepted"] == 1
    assert s["fresh_draws"] == 1 and s["fresh_scenarios_drawn"] == 2 and s["rounds"] == 4
    assert s["by_round"][-1]["synthesized"] == 0  # stopped before the fresh scenarios' planner
    assert c.ledger.summary()["spent_total_usd"] <= budget


def test_budget_guard_stops_a_fresh_draw(tmp_path):
    # A writer allowed a long reply reserves more than a planner turn: the guard stops the draw itself.
    caps = {**CAT["max_tokens"], "scenario_writer": 64000}
    price = CAT["prices_per_mtok"][CAT["models"]["scenario_writer"]]
    writer_worst = caps["scenario_writer"] * price["output"] / 1e6
    with MessagesServer(Strict(always={SOLO["task"], ASK["task"]})) as srv:
        probe, _, _ = run_batch(srv, tmp_path / "probe", batched=False, max_fresh=0, max_tokens=caps)
        spent = probe.ledger.summary()["spent_total_usd"]
        budget = spent + 0.5 * writer_worst  # room for rounds 1-3 (a planner turn's worst case), not the draw
        c, fresh, res = run_batch(srv, tmp_path / "c", batched=False, budget_usd=budget, max_tokens=caps)
    s = res["summary"]
    assert s["stop_reason"] == "budget" and s["stop_message"].startswith("fresh scenario draw 1 of batch-000")
    assert "budget guard" in s["stop_message"] and s["accepted"] == 1
    assert s["fresh_draws"] == 1 and s["fresh_scenarios_drawn"] == 0 and s["rounds"] == 3 and fresh.drawn == []
    assert c.ledger.summary()["spent_total_usd"] <= budget


def test_writer_outage_fails_the_batch_for_a_rerun(tmp_path):
    def is_writer(q: dict) -> bool:
        return (q.get("tool_choice") or {}).get("name") == "record_scenarios"

    with MessagesServer(Strict(always={SOLO["task"]})) as srv:
        srv.inject(*[Fault("status", 529, match=is_writer) for _ in range(50)])
        with pytest.raises(BatchFailed, match="fresh scenario draw 1") as err:
            run_batch(srv, tmp_path, batched=False, attempts=1)
    assert err.value.summary["how_far"] == "2 of 3 accepted before fresh draw 1"
    assert len(err.value.rows) == 2


def test_cap_on_fresh_scenarios_stops_an_always_rejecting_judge(tmp_path):
    with MessagesServer(Strict(reject_all=True)) as srv:
        _, fresh, res = run_batch(srv, tmp_path, batched=False, max_fresh=2, attempts=2)
        assert srv.requests_to(*BATCHES) == 0  # without a runner the writer and judges are direct calls
    s = res["summary"]
    assert s["stop_reason"] == "scenario_cap" and s["accepted"] == 0 and res["kept"] == []
    assert s["fresh_scenarios_drawn"] == 2 and s["fresh_draws"] == 1 and fresh.draws == 1
    assert s["attempts"] == (3 + 2) * 2 and s["rounds"] == 4
    assert s["rejected_by_reason"] == {"judges_rejected": 10}
    assert len(s["scenarios_without_trace"]) == 5


def test_writer_giving_only_duplicates_stops_with_writer_exhausted(tmp_path):
    with MessagesServer(Strict(reject_all=True, writer_repeats=True)) as srv:
        _, fresh, res = run_batch(srv, tmp_path, batched=False, max_fresh=5, attempts=1)
    s = res["summary"]
    assert s["stop_reason"] == "writer_exhausted" and s["fresh_scenarios_drawn"] == 0 and s["fresh_draws"] == 1
    assert s["fresh_dropped_by_reason"] == {"exact_duplicate": 5} and s["attempts"] == 3


def test_no_fresh_source_or_zero_cap_keeps_attempts_exhausted(tmp_path):
    with MessagesServer(Strict(always={SOLO["task"]})) as srv:
        _, fresh, res = run_batch(srv, tmp_path, batched=False, max_fresh=0, attempts=1)
        assert not [r for r in srv.records if r.label == "scenario_writer"]
    assert res["summary"]["stop_reason"] == "attempts_exhausted" and fresh.draws == 0
    with pytest.raises(ValueError, match="max_fresh_scenarios"):
        synthesize_until_accepted(None, BATCH, target=3, batch_key="b", max_fresh_scenarios=-1)


def test_traces_asset_draws_fresh_scenarios_and_reruns_free(tmp_path):
    with MessagesServer(Strict(always={SOLO["task"]})) as srv:
        llm = LLMResource(**resolve_llm({"base_url": srv.url, "api_key_env": "SURROGATE_UNSET_KEY_FOR_TESTS",
                                         "batch_poll_s": 0.01}, CAT).model_dump())
        res = {"object_store": ObjectStoreResource(kind="local", root=str(tmp_path)), "llm": llm,
               "synth": SynthSettings(**resolve_synth({"target_count": 40, "sample_traces": 1}, CAT).model_dump())}
        materialize([synth_scenarios], resources=res)
        r = materialize([orchestrator_traces], partition_key="batch-000", resources=res)
        m = {k: v.value for k, v in r.asset_materializations_for_node("orchestrator_traces")[-1].metadata.items()}
        sent = srv.requests_to("POST", "/v1/messages") + srv.requests_to(*BATCHES)
        again = materialize([orchestrator_traces], partition_key="batch-000", resources=res)
        m2 = {k: v.value for k, v in again.asset_materializations_for_node("orchestrator_traces")[-1].metadata.items()}
        assert srv.requests_to("POST", "/v1/messages") + srv.requests_to(*BATCHES) == sent
    assert m["target"] == 25 and m["accepted"] == 25 and m["stop_reason"] == "target_reached"
    assert m["fresh_scenarios_drawn"] >= 1 and m["fresh_draws"] >= 1 and m["max_fresh_scenarios"] == 25
    assert m["volume"]["fresh_scenarios_drawn"] == m["fresh_scenarios_drawn"]
    assert m["usage_by_call_kind"]["scenario_writer"]["calls"] == m["fresh_draws"]
    # the batch's own per-trace profile counts the fresh draws' writer calls per accepted trace
    assert m["measured_tokens_per_trace"]["scenario_writer"]["calls"] == round(m["fresh_draws"] / 25, 3)
    assert m["measured_tokens_per_trace"]["planner"]["calls"] > 0
    assert m2["batch_usd"] == 0 and m2["accepted"] == 25 and m2["fresh_scenarios_drawn"] == m["fresh_scenarios_drawn"]
