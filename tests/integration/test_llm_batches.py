"""The Message Batches API runner against the local server through the real SDK: a round trip at
the batch discount, polling with backoff, partial results (errored and expired requests retried,
then answered directly), resume after a crash (same batch id, one submission on the server's
request log), the budget guard before submission, and the response cache in front of it all."""

from __future__ import annotations

import pytest

from surrogate_dagster.llm.batches import MessageBatchRunner
from surrogate_dagster.llm.cache import DirStore, request_key
from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.ledger import BATCH_DISCOUNT, Price
from surrogate_dagster.llm.local_server import MessagesServer

MODELS = {"judge": "claude-opus-4-1", "judge_2": "claude-sonnet-4-5"}
PRICES = {"claude-opus-4-1": {"input": 15.0, "output": 75.0}, "claude-sonnet-4-5": {"input": 3.0, "output": 15.0}}
BATCHES = ("POST", "/v1/messages/batches")


def responder(req: dict):
    text = str(req["messages"][-1]["content"])
    return [{"type": "text", "text": f"verdict on {text}"}], "end_turn", "judge"


def make(url: str, tmp_path, **kw) -> LLMClient:
    return LLMClient(models=MODELS, prices=PRICES, max_tokens=64, base_url=url, api_key_env=None,
                     cache_store=tmp_path / "cache", sleep=lambda s: None, backoff_base_s=0.001, **kw)


def items(c: LLMClient, n: int = 3, roles: tuple[str, ...] = ("judge", "judge_2")) -> list[tuple[str, dict]]:
    """Request ``i`` asks about "trace i"; the roles alternate."""
    return [(roles[i % len(roles)], c.build_request(roles[i % len(roles)], system="Judge.",
                                                   messages=[{"role": "user", "content": f"trace {i}"}]))
            for i in range(n)]


def runner(c: LLMClient, tmp_path, sleeps: list | None = None, **kw) -> MessageBatchRunner:
    return MessageBatchRunner(c, tmp_path / "store", poll_s=0.5, poll_max_s=2.0, poll_backoff=2.0,
                              sleep=(sleeps.append if sleeps is not None else (lambda s: None)), **kw)


def test_batch_round_trip_at_half_price_with_polling_backoff(tmp_path):
    with MessagesServer(responder, polls_to_end=3) as srv:
        c, sleeps = make(srv.url, tmp_path), []
        reqs = items(c)
        out = runner(c, tmp_path, sleeps).run(reqs, "batch-000/judges")
        assert srv.requests_to(*BATCHES) == 1 and srv.requests_to("POST", "/v1/messages") == 0
        assert sorted(r.path for r in srv.batch_items) == sorted(request_key(q) for _, q in reqs)  # custom_id
        assert sleeps == [0.5, 1.0, 2.0]  # three in_progress polls, exponential backoff capped at 2 s
        assert srv.requests_to("GET", f"/v1/messages/batches/{out.batch_ids[0]}") == 4
        assert srv.requests_to("GET", f"/v1/messages/batches/{out.batch_ids[0]}/results") == 1
    assert len(out.responses) == 3 and not out.errors and out.counts["succeeded"] == 3
    for role, q in reqs:
        r = out.responses[request_key(q)]
        assert r.batched and r.text == f"verdict on {q['messages'][0]['content']}"
        p = Price(**{"input_per_mtok": PRICES[q["model"]]["input"], "output_per_mtok": PRICES[q["model"]]["output"]})
        assert r.cost_usd == pytest.approx(BATCH_DISCOUNT * p.cost(r.input_tokens, r.output_tokens))
    led = c.ledger.summary()
    assert led["counts"]["batch_calls"] == 3 and led["billed_usd"] == pytest.approx(
        sum(r.cost_usd for r in out.responses.values()), abs=1e-6)
    record = DirStore(tmp_path / "store").get_bytes("llm-batches/batch-000/judges.json").decode()
    assert out.batch_ids[0] in record and '"status":"collected"' in record
    # a re-run is answered from the response cache: nothing submitted, nothing paid
    with MessagesServer(responder) as srv2:
        c2 = LLMClient(models=MODELS, prices=PRICES, max_tokens=64, base_url=srv2.url, api_key_env=None,
                       cache_store=tmp_path / "cache")
        again = runner(c2, tmp_path).run(items(c2), "batch-000/judges")
        assert srv2.n_requests == 0 and again.counts["cache_hits"] == 3 and c2.ledger.summary()["billed_usd"] == 0


def test_partial_results_errored_resubmitted_expired_falls_back_to_a_direct_call(tmp_path):
    seen: dict[str, int] = {}

    def outcome(custom_id: str, params: dict) -> str:
        seen[custom_id] = seen.get(custom_id, 0) + 1
        text = params["messages"][0]["content"]
        if text == "trace 1":
            return "expired"  # expires in every batch
        if text == "trace 2" and seen[custom_id] == 1:
            return "errored"  # an api_error: the resubmission succeeds
        return "succeeded"

    with MessagesServer(responder, batch_outcome=outcome) as srv:
        c = make(srv.url, tmp_path)
        reqs = items(c)
        out = runner(c, tmp_path, max_resubmits=1).run(reqs, "batch-001/judges")
        assert srv.requests_to(*BATCHES) == 2  # the first batch, then one resubmission of 2 requests
        assert srv.requests_to("POST", "/v1/messages") == 1  # the twice-expired request, answered directly
    keys = [request_key(q) for _, q in reqs]
    assert set(out.responses) == set(keys) and not out.errors
    assert out.counts["expired"] == 2 and out.counts["errored"] == 1 and out.counts["succeeded"] == 2
    assert out.counts["direct_fallback"] == 1 and out.counts["submitted_requests"] == 5
    assert out.responses[keys[0]].batched and out.responses[keys[2]].batched
    assert not out.responses[keys[1]].batched  # full price: it came back through the direct path
    led = c.ledger.summary()
    assert led["counts"]["calls"] == 3 and led["counts"]["batch_calls"] == 2  # expired/errored were never billed


class Crash(RuntimeError):
    """Stands for the process dying while the batch is being processed."""


def test_crash_after_submit_resumes_the_same_batch_without_a_second_submission(tmp_path):
    def crash(_s: float) -> None:
        raise Crash("killed while polling")

    with MessagesServer(responder, polls_to_end=1) as srv:
        c = make(srv.url, tmp_path)
        with pytest.raises(Crash):
            MessageBatchRunner(c, tmp_path / "store", poll_s=1, sleep=crash).run(items(c), "batch-002/judges")
        record = DirStore(tmp_path / "store").get_bytes("llm-batches/batch-002/judges.json").decode()
        assert '"status":"submitted"' in record and srv.requests_to(*BATCHES) == 1
        # the restarted step: a fresh client (fresh ledger), the same store
        c2 = make(srv.url, tmp_path)
        out = runner(c2, tmp_path).run(items(c2), "batch-002/judges")
        assert srv.requests_to(*BATCHES) == 1  # picked up, not re-submitted
        assert len(srv.batch_items) == 3
    assert out.resumed == out.batch_ids and out.batch_ids[0] in record and len(out.responses) == 3
    assert out.counts.get("submitted_requests", 0) == 0 and c2.ledger.summary()["counts"]["batch_calls"] == 3


def test_budget_guard_reserves_before_submitting(tmp_path):
    with MessagesServer(responder) as srv:
        probe = make(srv.url, tmp_path)
        worst = Price(15.0, 75.0).cost(probe.estimate_input_tokens(items(probe)[0][1]), 64, batch=True)
        c = make(srv.url, tmp_path, budget_usd=worst * 1.5)  # room for one request's worst case
        reqs = items(c, roles=("judge",))
        out = runner(c, tmp_path).run(reqs, "batch-003/judges")
        assert len(srv.batch_items) == 1
    assert len(out.responses) == 1 and len(out.budget_stopped) == 2 and "budget guard" in out.stop_message
    assert c.ledger.summary()["spent_total_usd"] <= worst * 1.5


def test_bad_job_names_are_refused(tmp_path):
    with MessagesServer(responder) as srv:
        c = make(srv.url, tmp_path)
        with pytest.raises(ValueError, match="bad batch job"):
            runner(c, tmp_path).run(items(c), "../escape")
