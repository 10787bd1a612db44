"""Prompt caching against the local Messages server through the real SDK: the repeated system
prompt carries ``cache_control``, the server reports cache writes and reads like the API, and the
ledger prices them (write 1.25x, read 0.1x input), so repeated calls cost less than uncached ones."""

from __future__ import annotations

import pytest

from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.ledger import CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER, Price
from surrogate_dagster.llm.local_server import MessagesServer

MODELS = {"planner": "claude-opus-4-1", "subagent": "claude-sonnet-4-5"}
PRICES = {"claude-opus-4-1": {"input": 15.0, "output": 75.0}, "claude-sonnet-4-5": {"input": 3.0, "output": 15.0}}
LONG_SYSTEM = "You are a careful planner. " + " ".join(f"Rule {i}: check the plan step {i} twice." for i in range(160))
SEEN: list[dict] = []


def responder(req: dict):
    SEEN.append(req)
    return [{"type": "text", "text": "ok " + str(req["messages"][-1]["content"])[:20]}], "end_turn", "answer"


def client(url: str, tmp_path, **kw) -> LLMClient:
    return LLMClient(models=MODELS, prices=PRICES, max_tokens=64, base_url=url, api_key_env=None,
                     cache_store=None, sleep=lambda s: None, **kw)


def ask(c: LLMClient, i: int, role: str = "planner", system: str = LONG_SYSTEM):
    return c.complete(role, system=system, messages=[{"role": "user", "content": f"question {i}"}])


def test_repeated_system_prompt_is_written_once_then_read_and_costs_less(tmp_path):
    with MessagesServer(responder) as srv:
        cached = client(srv.url, tmp_path)
        replies = [ask(cached, i) for i in range(4)]
    assert SEEN[-1]["system"] == [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    first, rest = replies[0], replies[1:]
    assert first.cache_creation_input_tokens > 1024 and first.cache_read_input_tokens == 0
    assert all(r.cache_read_input_tokens == first.cache_creation_input_tokens and r.cache_creation_input_tokens == 0
               for r in rest)
    price = Price(15.0, 75.0)
    for r in replies:  # the ledger's cost is the documented formula, to the cent fraction
        expected = (r.input_tokens * 15.0 + r.cache_creation_input_tokens * 15.0 * CACHE_WRITE_MULTIPLIER
                    + r.cache_read_input_tokens * 15.0 * CACHE_READ_MULTIPLIER + r.output_tokens * 75.0) / 1e6
        assert r.cost_usd == pytest.approx(expected) == pytest.approx(
            price.cost(r.input_tokens, r.output_tokens, r.cache_creation_input_tokens, r.cache_read_input_tokens))
    with MessagesServer(responder) as srv:  # the same four calls without caching
        plain = client(srv.url, tmp_path, cache_roles=())
        uncached = [ask(plain, i) for i in range(4)]
    assert all(u.cache_creation_input_tokens == u.cache_read_input_tokens == 0 for u in uncached)
    assert SEEN[-1]["system"] == LONG_SYSTEM
    billed, unbilled = cached.ledger.summary(), plain.ledger.summary()
    assert billed["cache_read_input_tokens"] == 3 * first.cache_creation_input_tokens
    assert billed["billed_usd"] < 0.5 * unbilled["billed_usd"]  # 1.25 + 3 * 0.1 input units instead of 4
    assert first.cost_usd > uncached[0].cost_usd  # the write itself costs more than an uncached call


def test_no_caching_below_the_minimum_or_for_roles_left_out(tmp_path):
    with MessagesServer(responder) as srv:
        c = client(srv.url, tmp_path)
        short = [ask(c, i, system="Be brief.") for i in range(2)]  # a prefix under 1024 tokens
        sub = [ask(c, i, role="subagent") for i in range(2)]  # subagent prompts are not marked
    assert all(r.cache_creation_input_tokens == r.cache_read_input_tokens == 0 for r in short + sub)
    assert SEEN[-1]["system"] == LONG_SYSTEM


def test_cache_expires_after_its_ttl(tmp_path):
    with MessagesServer(responder, cache_ttl_s=0.0) as srv:
        c = client(srv.url, tmp_path)
        a, b = ask(c, 1), ask(c, 2)
    assert a.cache_creation_input_tokens and b.cache_creation_input_tokens and not b.cache_read_input_tokens
