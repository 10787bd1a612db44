"""The LLM client's parts that need no server: the circuit breaker's half-open trial, the request-hash
cache key and its corrupt entries, the budget over earlier batches and reservations."""

from __future__ import annotations

import pytest

from surrogate_dagster.llm.breaker import CircuitBreaker, CircuitOpenError
from surrogate_dagster.llm.cache import DirStore, ResponseCache, request_key
from surrogate_dagster.llm.ledger import BudgetExceeded, CostLedger, record_batch_spend, spent_in_store

PRICES = {"claude-opus-4-1": {"input": 15.0, "output": 75.0}, "claude-sonnet-4-5": {"input": 3.0, "output": 15.0}}
TOOL = {"name": "get_weather", "description": "weather", "input_schema": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def test_breaker_half_open_trial():
    now = [0.0]
    b = CircuitBreaker(2, reset_after_s=10, clock=lambda: now[0])
    b.record_failure("x")
    assert b.state == "closed"
    assert b.record_failure("y") and b.state == "open"
    with pytest.raises(CircuitOpenError):
        b.before_call()
    now[0] = 11
    b.before_call()  # the one trial
    with pytest.raises(CircuitOpenError):
        b.before_call()  # a second caller during the trial fails fast
    b.record_success()
    assert b.state == "closed"


def test_cache_key_is_canonical_and_complete():
    base = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5}
    assert request_key(base) == request_key(dict(reversed(list(base.items()))))
    for change in ({"temperature": 0.5}, {"tools": [TOOL]}, {"system": "t"}, {"model": "n"}, {"max_tokens": 6}):
        assert request_key({**base, **change}) != request_key(base)
    with pytest.raises(ValueError, match="max_tokens"):
        request_key({"model": "m", "messages": []})


def test_corrupt_cache_entry_is_a_counted_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    key = "ab" * 32
    cache.put(key, {"content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}, "m")
    assert cache.get(key) is not None
    (tmp_path / "llm-cache" / "ab" / f"{key}.json").write_text("{broken")
    assert cache.get(key) is None and cache.corrupt == 1


def test_budget_counts_earlier_batches_and_reservations(tmp_path):
    store = DirStore(tmp_path)
    led = CostLedger(PRICES, budget_usd=1.0)
    res = led.reserve("claude-opus-4-1", 1000, 1000)
    led.settle(res, "claude-opus-4-1", 1000, 500)
    record_batch_spend(store, "batch-000", "run-a", led.summary())
    record_batch_spend(store, "batch-000", "run-b", {"batch_usd": 0.25})  # a re-run: both attempts count
    spent = spent_in_store(store, ["batch-000", "batch-001"])
    assert spent == pytest.approx(0.0525 + 0.25)
    nxt = CostLedger(PRICES, budget_usd=1.0, spent_before_usd=spent)
    nxt.reserve("claude-sonnet-4-5", 0, 20_000)  # $0.30 in flight, not yet billed
    with pytest.raises(BudgetExceeded):
        nxt.reserve("claude-sonnet-4-5", 0, 30_000)  # 0.3025 + 0.30 + 0.45 > 1.0
    with pytest.raises(KeyError, match="no price"):
        nxt.reserve("gpt-x", 1, 1)
