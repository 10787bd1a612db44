"""LLMClient against the local Messages API server, through the real anthropic SDK over HTTP:
tool use, retries (429 + retry-after, 529, 500, dropped connection), malformed replies, the circuit
breaker, the request-hash cache, the cost ledger and the budget guard. Their parts that need no
server: tests/unit/llm/test_llm_breaker_cache_ledger.py."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request

import pytest

from surrogate_dagster.llm.breaker import CircuitOpenError
from surrogate_dagster.llm.cache import DirStore
from surrogate_dagster.llm.client import LLMClient, LLMError, MalformedReply, RetriesExhausted
from surrogate_dagster.llm.ledger import BudgetExceeded
from surrogate_dagster.llm.local_server import STANDIN_MODEL_ID, Fault, MessagesServer
from tests.unit.llm.test_llm_breaker_cache_ledger import PRICES, TOOL

MODELS = {"planner": "claude-opus-4-1", "subagent": "claude-sonnet-4-5"}


def weather_responder(req: dict) -> tuple[list[dict], str, str]:
    """A tiny model: answers a tool result with text, otherwise calls get_weather for the city asked."""
    last = req["messages"][-1]["content"]
    if isinstance(last, list) and last and last[0].get("type") == "tool_result":
        return [{"type": "text", "text": f"It is {last[0]['content']}."}], "end_turn", "answer"
    city = str(last).split()[-1].strip("?")
    return [{"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": city}}], "tool_use", "call"


@pytest.fixture()
def server():
    with MessagesServer(weather_responder) as srv:
        yield srv


def make_client(server, tmp_path, **kw) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    opts = dict(models=MODELS, prices=PRICES, max_tokens=256, base_url=server.url, api_key_env=None,
                cache_store=tmp_path / "cache", backoff_base_s=0.01, sleep=sleeps.append, seed=1)
    opts.update(kw)
    return LLMClient(**opts), sleeps


def ask(client: LLMClient, text: str = "Weather in Paris?", **kw):
    return client.complete("planner", system="You are helpful.", messages=[{"role": "user", "content": text}],
                           tools=[TOOL], **kw)


def test_tool_use_round_trip_and_exact_cost(server, tmp_path):
    client, _ = make_client(server, tmp_path)
    r1 = ask(client)
    assert [u["name"] for u in r1.tool_uses] == ["get_weather"] and r1.tool_uses[0]["input"] == {"city": "Paris"}
    assert r1.stop_reason == "tool_use" and r1.served_by == STANDIN_MODEL_ID and not r1.cached
    msgs = [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": r1.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "sunny"}]}]
    r2 = client.complete("planner", system="You are helpful.", messages=msgs, tools=[TOOL])
    assert r2.text == "It is sunny." and r2.tool_uses == []
    expected = sum((r.input_tokens * 15.0 + r.output_tokens * 75.0) / 1e6 for r in (r1, r2))
    s = client.ledger.summary()
    assert s["billed_usd"] == pytest.approx(expected, abs=1e-6)
    assert s["by_model"]["claude-opus-4-1"]["calls"] == 2 and s["counts"]["calls"] == 2
    assert server.n_requests == 2


def test_429_honours_retry_after_and_caps_it(server, tmp_path):
    client, sleeps = make_client(server, tmp_path, retry_after_cap_s=5.0)
    server.inject(Fault("status", 429, retry_after="3"), Fault("status", 429, retry_after="999"))
    r = ask(client)
    assert r.tool_uses and sleeps == [3.0, 5.0]  # honoured, then capped at retry_after_cap_s
    assert server.n_requests == 3 and [rec.fault for rec in server.records] == ["429", "429", ""]
    s = client.ledger.summary()
    assert s["counts"]["retries_429"] == 2 and s["uncertain_usd"] == 0  # an error status is not billed


def test_529_and_500_use_exponential_backoff_with_jitter(server, tmp_path):
    client, sleeps = make_client(server, tmp_path, backoff_base_s=1.0)
    server.inject(Fault("status", 529), Fault("status", 500), Fault("status", 503))
    assert ask(client).tool_uses
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0 and 2.0 <= sleeps[2] <= 4.0
    assert client.ledger.summary()["counts"] == {"calls": 1, "retries_500": 1, "retries_503": 1, "retries_529": 1}


def test_dropped_connection_is_retried_and_booked_as_uncertain(server, tmp_path):
    client, sleeps = make_client(server, tmp_path)
    server.inject(Fault("drop"))
    assert ask(client).tool_uses and len(sleeps) == 1
    s = client.ledger.summary()
    # no idempotency key: the dropped request may have been billed, so its worst case is kept
    assert s["uncertain_usd"] > 0 and s["counts"]["uncertain_connection"] == 1
    assert s["spent_total_usd"] == pytest.approx(s["billed_usd"] + s["uncertain_usd"])


def test_malformed_reply_raises_is_counted_and_never_cached(server, tmp_path):
    client, _ = make_client(server, tmp_path)
    server.inject(Fault("malformed"))
    with pytest.raises(MalformedReply, match="not JSON"):
        ask(client)
    s = client.ledger.summary()
    assert s["counts"]["malformed"] == 1 and s["uncertain_usd"] > 0
    before = server.n_requests
    assert not ask(client).cached and server.n_requests == before + 1  # the bad reply was not cached
    assert ask(client).cached and server.n_requests == before + 1


def test_malformed_shape_is_rejected(server, tmp_path):
    from surrogate_dagster.llm.client import normalize_reply
    good = {"type": "message", "content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": 1, "output_tokens": 1}}
    assert normalize_reply(good)["content"] == [{"type": "text", "text": "x"}]
    for bad in ({**good, "content": "x"}, {**good, "usage": {}}, {**good, "content": [{"type": "image"}]},
                {**good, "content": [{"type": "tool_use", "name": "t", "input": "notadict", "id": "1"}]}, []):
        with pytest.raises(MalformedReply):
            normalize_reply(bad)


def test_circuit_breaker_opens_then_fails_fast(server, tmp_path):
    client, _ = make_client(server, tmp_path, breaker_threshold=3, max_attempts=10)
    server.inject(*[Fault("status", 529) for _ in range(6)])
    with pytest.raises(CircuitOpenError, match="3 consecutive"):
        ask(client)
    assert server.n_requests == 3
    with pytest.raises(CircuitOpenError, match="failing fast"):
        ask(client, "Weather in Rome?")
    assert server.n_requests == 3  # nothing sent while open


def test_retries_exhausted_and_non_retryable(server, tmp_path):
    client, sleeps = make_client(server, tmp_path, max_attempts=2, breaker_threshold=10)
    server.inject(Fault("status", 500), Fault("status", 500))
    with pytest.raises(RetriesExhausted, match="2 attempts"):
        ask(client)
    assert len(sleeps) == 1
    n = server.n_requests
    with pytest.raises(LLMError, match="HTTP 400 .not retryable"):  # first message must be 'user'
        client.complete("planner", system="s", messages=[{"role": "assistant", "content": "hi"}])
    assert server.n_requests == n + 1 and client.breaker.state == "closed"


def test_cache_hits_cost_nothing_and_send_nothing(server, tmp_path):
    client, _ = make_client(server, tmp_path)
    first = ask(client)
    n = server.n_requests
    again = LLMClient(models=MODELS, prices=PRICES, max_tokens=256, base_url=server.url, api_key_env=None,
                      cache_store=DirStore(tmp_path / "cache"))  # a fresh process, same store
    hit = ask(again)
    assert hit.cached and hit.cost_usd == 0 and hit.content == first.content and server.n_requests == n
    s = again.ledger.summary()
    assert s["billed_usd"] == 0 and s["counts"] == {"cache_hits": 1}
    assert s["by_model"]["claude-opus-4-1"]["cached_output_tokens"] == first.output_tokens
    assert not ask(again, max_tokens=128).cached and server.n_requests == n + 1  # other params: a miss


def test_budget_guard_stops_before_exceeding(server, tmp_path):
    client, _ = make_client(server, tmp_path, budget_usd=0.05, max_tokens=256)
    r = ask(client)  # worst case ~0.02: allowed
    spent = client.ledger.summary()["spent_total_usd"]
    n = server.n_requests
    with pytest.raises(BudgetExceeded) as exc:
        ask(client, "Weather in Oslo?", max_tokens=2000, progress={"scenarios_done": 1})  # worst case > budget left
    assert server.n_requests == n  # nothing was sent
    e = exc.value
    assert e.progress == {"scenarios_done": 1} and e.spent_usd == pytest.approx(spent)
    assert e.spent_usd + e.next_worst_usd > 0.05 and "$0.05" in str(e) and "not sent" in str(e)
    assert r.cost_usd == pytest.approx(spent) and client.ledger.summary()["counts"]["budget_stops"] == 1


def test_configuration_errors_are_clear(server, tmp_path, monkeypatch):
    monkeypatch.delenv("SURROGATE_TEST_KEY", raising=False)
    with pytest.raises(LLMError, match="SURROGATE_TEST_KEY"):
        LLMClient(models=MODELS, prices=PRICES, api_key_env="SURROGATE_TEST_KEY")  # production, no key
    with pytest.raises(KeyError, match="no price configured"):
        LLMClient(models={"planner": "claude-unknown"}, prices=PRICES, base_url=server.url)
    with pytest.raises(KeyError, match="no max_tokens"):
        LLMClient(models=MODELS, prices=PRICES, max_tokens={"planner": 5}, base_url=server.url)


def test_api_key_comes_from_named_env_var_and_is_never_logged(server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SURROGATE_TEST_KEY", "sk-test-very-secret")
    client, _ = make_client(server, tmp_path, api_key_env="SURROGATE_TEST_KEY")
    server.inject(Fault("status", 529))
    with caplog.at_level(logging.DEBUG):
        ask(client)
    assert "retrying" in caplog.text and "sk-test-very-secret" not in caplog.text


def _post(url: str, body: dict, key: str | None = "k") -> tuple[int, dict]:
    req = urllib.request.Request(url + "/v1/messages", data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **({"x-api-key": key} if key else {})})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_local_server_speaks_the_messages_api(server):
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Weather in Lima?"}]}
    status, reply = _post(server.url, body)
    assert status == 200 and reply["stop_reason"] == "max_tokens"  # 5 tokens cannot hold the tool call
    assert reply["usage"]["input_tokens"] > 0 and reply["model"] == STANDIN_MODEL_ID
    assert _post(server.url, {**body, "stream": True})[1]["error"]["message"].startswith("streaming is not supported")
    assert _post(server.url, body, key=None)[0] == 401
    assert _post(server.url, {"model": "m", "messages": []})[0] == 400
