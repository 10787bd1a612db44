"""Durable spend: what reservation records, cache envelopes and attempt summaries book (hand-worked
dollar figures), corrupt cache entries dropped, impossible usage refused, tool-use prompt tokens in
the reservation (Anthropic's documented figures)."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.llm.cache import DirStore, ResponseCache
from surrogate_dagster.llm.client import LLMClient, MalformedReply, normalize_reply, tool_use_system_tokens
from surrogate_dagster.llm.ledger import (
    CostLedger,
    SpendJournal,
    booked_usd,
    record_batch_spend,
    spent_in_store,
)
from surrogate_dagster.storage import LocalObjectStore

BODY = {"id": "m", "model": "x", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2}}


@pytest.fixture
def store(tmp_path):
    return LocalObjectStore(tmp_path / "store", fsync=False)


def test_records_book_settled_released_and_worst_case(store):
    j = SpendJournal(store, "batch-000", "run-a/0")
    cache = ResponseCache(store)
    r1 = j.reserve("a" * 64, "m", 0.30, batch=False)
    cache.put("a" * 64, BODY, "m", spend={"usd": 0.12, "batch": False, "reservation": r1})  # settled: 0.12
    r2 = j.reserve("b" * 64, "m", 0.20, batch=False)
    j.release(r2, "HTTP 529")                                                          # released: 0
    j.reserve("c" * 64, "m", 0.10, batch=False)                                        # killed in flight: 0.10
    j.reserve("d" * 64, "m", 0.05, batch=True)
    cache.put("d" * 64, BODY, "m", spend={"usd": 0.01, "batch": True, "reservation": "llm-spend/other.json"})
    # d's entry settles another reservation, so d's own record keeps its worst case: 0.05
    assert spent_in_store(store, ["batch-000"]) == pytest.approx(0.12 + 0.0 + 0.10 + 0.05)
    assert booked_usd(store) == pytest.approx(0.27)
    assert spent_in_store(store, ["batch-000"], exclude_attempt="run-a/0") == 0.0


def test_an_attempt_summary_stands_for_its_records(store):
    j = SpendJournal(store, "batch-000", "run-a/0")
    j.reserve("c" * 64, "m", 0.10, batch=False)
    record_batch_spend(store, "batch-000", "run-a/0", {"batch_usd": 0.07, "journal": {"usd": 0.08}})
    record_batch_spend(store, "batch-000", "old/0", {"batch_usd": 1.0})  # a summary from before journals
    SpendJournal(store, "batch-000", "run-b/0").reserve("e" * 64, "m", 0.40, batch=False)  # killed, no summary
    assert spent_in_store(store, ["batch-000"]) == pytest.approx(0.08 + 1.0 + 0.40)


def test_nested_batch_keys_are_kept_apart(store):
    SpendJournal(store, "evals", "r/0").reserve("a" * 64, "m", 0.5, batch=False)
    SpendJournal(store, "evals/devsecops_tasks", "r/0").reserve("b" * 64, "m", 2.0, batch=False)
    assert spent_in_store(store, ["evals"]) == pytest.approx(0.5)
    assert spent_in_store(store, ["evals/devsecops_tasks"]) == pytest.approx(2.0)
    assert booked_usd(store) == pytest.approx(2.5)


def test_ledger_summary_books_in_flight_and_not_adopted():
    led = CostLedger({"m": {"input": 1.0, "output": 10.0}}, budget_usd=10)
    a = led.reserve("m", 1000, 1000)          # $0.001 + $0.01 worst
    led.settle(a, "m", 500, 100)              # $0.0005 + $0.001 = $0.0015
    b = led.reserve("m", 1000, 1000, batch=True)  # $0.0055, still in flight
    c = led.reserve("m", 1000, 1000)
    led.settle(c, "m", 1000, 1000, adopted=True)  # an earlier attempt's record books it
    s = led.summary()
    assert s["billed_usd"] == pytest.approx(0.0015) and s["adopted_usd"] == pytest.approx(0.011)
    assert s["in_flight_usd"] == pytest.approx(b) == pytest.approx(0.0055)


def test_journal_summary_adds_in_flight(store):
    led = CostLedger({"m": {"input": 1.0, "output": 10.0}}, budget_usd=10)
    led.journal = SpendJournal(store, "b", "r/0")
    led.settle(led.reserve("m", 1000, 1000), "m", 500, 100)
    led.reserve("m", 1000, 1000)
    assert led.summary()["journal"]["usd"] == pytest.approx(0.0015 + 0.011)


def test_a_flipped_bit_drops_the_entry(store, tmp_path):
    cache = ResponseCache(store)
    cache.put("f" * 64, BODY, "m", spend={"usd": 0.1, "batch": False, "reservation": None})
    path = tmp_path / "store" / "llm-cache" / "ff" / ("f" * 64 + ".json")
    raw = bytearray(path.read_bytes())
    raw[40] ^= 0x04
    path.write_bytes(bytes(raw))
    assert cache.get("f" * 64) is None and cache.corrupt == 1
    assert not store.exists("llm-cache/ff/" + "f" * 64 + ".json")  # dropped: the next reply replaces it


def test_a_digest_mismatch_drops_the_entry_and_format_1_still_reads(tmp_path):
    d = DirStore(tmp_path / "d")
    cache = ResponseCache(d)
    cache.put("a" * 64, BODY, "m")
    key = "llm-cache/aa/" + "a" * 64 + ".json"
    env = json.loads(d.get_bytes(key))
    env["response"]["content"][0]["text"] = "ok!"  # parses, but is not what was stored
    d.put_bytes(key, json.dumps(env).encode())
    assert cache.get("a" * 64) is None and not d.exists(key)
    old = {"format": 1, "key": "b" * 64, "model": "m", "stored_at": 0, "response": BODY}
    d.put_bytes("llm-cache/bb/" + "b" * 64 + ".json", json.dumps(old).encode())
    assert cache.get("b" * 64) == BODY and cache.spend_of("b" * 64) is None


def test_usage_no_reply_could_have_is_corrupt():
    body = {"type": "message", "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 20,
                                                                                       "output_tokens": 1024}}
    assert normalize_reply(body, max_tokens=1024, max_input_tokens=20)["usage"]["output_tokens"] == 1024
    with pytest.raises(MalformedReply, match="1000000000000 output tokens for max_tokens 1024"):
        normalize_reply({**body, "usage": {"input_tokens": 20, "output_tokens": 10 ** 12}}, max_tokens=1024)
    with pytest.raises(MalformedReply, match="input tokens"):
        normalize_reply({**body, "usage": {"input_tokens": 5, "output_tokens": 3,
                                           "cache_read_input_tokens": 16}}, max_tokens=1024, max_input_tokens=20)


@pytest.mark.parametrize("model,choice,tokens", [
    ("claude-sonnet-4-5", None, 346), ("claude-opus-4-1", {"type": "auto"}, 346),
    ("claude-sonnet-4-5", {"type": "any"}, 313), ("claude-opus-4-1", {"type": "tool", "name": "t"}, 313),
    ("claude-3-opus-20240229", None, 530), ("claude-3-opus-20240229", {"type": "any"}, 281),
    ("claude-3-sonnet-20240229", None, 159), ("claude-3-haiku-20240307", {"type": "tool", "name": "t"}, 340),
    ("claude-3-5-haiku-20241022", None, 264),
    ("claude-opus-5-5", None, 530), ("claude-sonnet-5-5", {"type": "any"}, 340),  # not documented: the largest
])
def test_tool_use_system_prompt_tokens(model, choice, tokens):
    assert tool_use_system_tokens(model, choice) == tokens


def test_the_reservation_counts_the_tool_use_prompt():
    c = LLMClient(models={"judge": "claude-sonnet-4-5"}, prices={"claude-sonnet-4-5": {"input": 3, "output": 15}},
                  base_url="http://127.0.0.1:1", api_key_env=None, chars_per_token=3.0)
    msgs = [{"role": "user", "content": "x" * 30}]
    plain = c.build_request("judge", system="", messages=msgs)
    tools = c.build_request("judge", system="", messages=msgs, tools=[{"name": "t"}])
    # canonical JSON ["",[{"content":"x...x","role":"user"}],null]: 70 chars -> 24 tokens at 3 chars
    assert c.estimate_input_tokens(plain) == 24
    # with the tool, [{"name":"t"}] instead of null: 80 chars -> 27, plus the 346-token tool-use prompt
    assert c.estimate_input_tokens(tools) == 27 + 346
