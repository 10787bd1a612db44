"""Every dollar the Messages server billed is booked, whatever happens to the process that spent
it: 20 SIGKILLs at random points of a synth run, a disk that fills up mid-run, a garbled Message
Batches results line, a reply claiming impossible usage, tool-use requests on a tight budget and
a corrupt cache entry. The server (``MessagesServer.billed``) is the independent side: its usage
is priced here with the catalog's list prices by a formula written out in this file."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from surrogate_dagster.llm.batches import MessageBatchRunner
from surrogate_dagster.llm.cache import request_key
from surrogate_dagster.llm.client import LLMClient, MalformedReply
from surrogate_dagster.llm.ledger import booked_usd
from surrogate_dagster.llm.local_server import Fault, MessagesServer
from surrogate_dagster.storage import LocalObjectStore
from tests.support.llm_spend_run import CAT, FullDiskStore, run_synth

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def billed_usd(billed: list[dict]) -> float:
    """The server's bill: list price per MTok, cache writes 1.25x and reads 0.1x of the input
    price unless the catalog names them, half of everything for a batch item."""
    total = 0.0
    for b in billed:
        p, u = CAT["prices_per_mtok"][b["model"]], b["usage"]
        write = p.get("cache_write", 1.25 * p["input"])
        read = p.get("cache_read", 0.1 * p["input"])
        usd = (u["input_tokens"] * p["input"] + u.get("cache_creation_input_tokens", 0) * write
               + u.get("cache_read_input_tokens", 0) * read + u["output_tokens"] * p["output"]) / 1e6
        total += usd / 2 if b["batch"] else usd
    return total


def server_bill(url: str) -> list[dict]:
    req = urllib.request.Request(url + "/v1/_local/billing", headers={"x-api-key": "test"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["billed"]


def _driver(store: Path, url: str, attempt: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.support.llm_spend_run", str(store), url, attempt],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_after(p: subprocess.Popen, url: str, n_new: int, delay_s: float, timeout_s: float) -> bool:
    """SIGKILL ``p`` once the server has billed ``n_new`` more replies, ``delay_s`` later (a random
    point inside the reply's bookkeeping); False when the run ended first."""
    n0, t0 = len(server_bill(url)), time.monotonic()
    while p.poll() is None and len(server_bill(url)) < n0 + n_new and time.monotonic() - t0 < timeout_s:
        time.sleep(0.01)
    time.sleep(delay_s)
    if p.poll() is not None:
        return False
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    return True


def test_twenty_sigkills_at_random_points_lose_no_billed_dollar(tmp_path):
    srv = subprocess.Popen([sys.executable, "-m", "surrogate_dagster.llm.local_server", "--port", "0"],
                           cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        url = srv.stdout.readline().strip().rsplit(" ", 1)[-1]
        p = _driver(tmp_path / "scratch", url, "scratch/0")  # one whole run: how many replies it buys
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        n0 = len(server_bill(url))
        store_dir, rng, rows = tmp_path / "store", random.Random(28), []
        for k in range(20):
            p = _driver(store_dir, url, f"kill-{k}/0")
            assert p.stdout.readline().strip() == "START"
            # spread the 20 kills over the run: each after a few more billed replies, at a random moment
            killed = _kill_after(p, url, rng.randint(1, max(1, n0 // 24)), rng.uniform(0.0, 0.05), 300.0)
            billed = billed_usd(server_bill(url)[n0:])
            booked = booked_usd(LocalObjectStore(store_dir, fsync=False)) if store_dir.exists() else 0.0
            rows.append((k, killed, len(server_bill(url)) - n0, round(billed, 6), round(booked, 6)))
            assert booked >= billed - 1e-9, rows
        assert sum(r[1] for r in rows) >= 15, rows  # most runs were killed mid-way, not after the end
        before_final = len(server_bill(url))
        booked_before = booked_usd(LocalObjectStore(store_dir, fsync=False))
        p = _driver(store_dir, url, "final/0")
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "DONE" in out, err[-2000:]
        bill = server_bill(url)
        billed, booked = billed_usd(bill[n0:]), booked_usd(LocalObjectStore(store_dir, fsync=False))
        print(f"20 kills: {len(bill) - n0} replies billed ${billed:.5f}, booked ${booked:.5f} "
              f"({booked / billed:.3f}x); per kill (k, killed, replies, billed, booked) {rows}")
        assert booked >= billed - 1e-9
        # exactly once: the finishing run booked what it was billed, its cache hits at $0
        assert booked - booked_before == pytest.approx(billed_usd(bill[before_final:]), abs=1e-9)
    finally:
        srv.kill()
        srv.wait()


def test_a_disk_that_fills_up_mid_run_loses_no_billed_dollar(tmp_path):
    with MessagesServer() as srv:
        full = FullDiskStore(tmp_path / "store", capacity=150_000)
        with pytest.raises(OSError) as exc:
            run_synth(full, srv.url, "full/0")
        assert "No space left" in str(exc.value)
        billed_full = billed_usd(srv.billed)
        assert len(srv.billed) > 20  # the disk filled up mid-run, not before the first reply
        store = LocalObjectStore(tmp_path / "store", fsync=False)  # the space is freed
        assert booked_usd(store) >= billed_full - 1e-9
        run_synth(store, srv.url, "after/0")
        assert booked_usd(store) >= billed_usd(srv.billed) - 1e-9
        print(f"full disk: billed ${billed_full:.5f} while full, booked ${booked_usd(store):.5f} of "
              f"${billed_usd(srv.billed):.5f} after the re-run")


MODELS = {"judge": "claude-sonnet-5-5", "planner": "claude-opus-5-5"}


def _client(url: str, store, **kw) -> LLMClient:
    return LLMClient(models=MODELS, prices=CAT["prices_per_mtok"], max_tokens=1024, base_url=url, api_key_env=None,
                     cache_store=store, sleep=lambda s: None, backoff_base_s=0.001, spend_batch="batch-000",
                     spend_attempt="run/0", **kw)


def _ask(c: LLMClient, i: int, **kw) -> dict:
    return c.build_request("judge", system="Judge.", messages=[{"role": "user", "content": f"trace {i}"}], **kw)


def test_a_garbled_batch_line_is_booked_at_the_batch_rate_and_not_bought_again(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    probe = _client("http://127.0.0.1:1", store)
    garbled = request_key(_ask(probe, 2))
    with MessagesServer(garble_results=lambda cid: cid == garbled) as srv:
        c = _client(srv.url, store)
        items = [("judge", _ask(c, i)) for i in range(6)]
        out = MessageBatchRunner(c, store, poll_s=0.01, poll_max_s=0.05).run(items, "batch-000/judges")
        assert len(out.responses) == 5 and list(out.errors) == [garbled]
        assert "unreadable" in out.errors[garbled]
        assert len(srv.billed) == 6 and all(b["batch"] for b in srv.billed)  # bought once, never again
        assert srv.requests_to("POST", "/v1/messages") == 0
        record_batch = c.ledger.summary()
        assert booked_usd(store) >= billed_usd(srv.billed) - 1e-9
        # the garbled request is booked at its batch-price worst case, the 5 others as billed
        assert record_batch["uncertain_usd"] > 0 and record_batch["counts"]["uncertain_unreadable_batch_result"] == 1


def test_a_reply_claiming_impossible_usage_is_refused_and_blocks_nothing(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    with MessagesServer() as srv:
        c = _client(srv.url, store, budget_usd=0.5)
        srv.inject(Fault(kind="usage", usage={"input_tokens": 12, "output_tokens": 10 ** 12}))
        with pytest.raises(MalformedReply, match="corrupt"):
            c.send("judge", _ask(c, 0))
        s = c.ledger.summary()
        assert s["uncertain_usd"] < 0.05  # its worst case for max_tokens 1024, not $10 million
        for i in range(1, 6):  # the guard lets every later request through
            assert c.send("judge", _ask(c, i)).output_tokens <= 1024
        srv.inject(Fault(kind="usage", usage={"input_tokens": 10 ** 12, "output_tokens": 3}))
        with pytest.raises(MalformedReply, match="input tokens"):
            c.send("judge", _ask(c, 9))
        assert c.ledger.summary()["spent_total_usd"] < 0.5
        assert booked_usd(store) >= billed_usd(srv.billed) - 1e-9


def test_tool_use_requests_settle_within_their_reservation(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    tool = {"name": "record_verdict", "description": "Record the verdict.",
            "input_schema": {"type": "object", "properties": {"accept": {"type": "boolean"}}}}
    def long_answer(req):  # every reply runs up to max_tokens: the worst case is all that bounds it
        return [{"type": "text", "text": "verdict " * 2000}], "end_turn", "judge"

    with MessagesServer(long_answer) as srv:
        c = _client(srv.url, store)
        for i, choice in enumerate([None, {"type": "any"}, {"type": "tool", "name": "record_verdict"}]):
            req = _ask(c, i, tools=[tool], tool_choice=choice, max_tokens=32)
            resp = c.send("judge", req)
            ref = [k for k in store.list("llm-spend/") if request_key(req) in k]
            worst = json.loads(store.get_bytes(ref[0]))["worst_usd"]
            assert billed_usd(srv.billed[-1:]) == pytest.approx(resp.cost_usd) and resp.output_tokens == 32
            assert resp.cost_usd <= worst  # the tool-use system prompt is inside the reservation


def test_a_corrupt_cache_entry_is_dropped_and_refetched(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    with MessagesServer() as srv:
        c = _client(srv.url, store)
        req = _ask(c, 0)
        first = c.send("judge", req)
        key = request_key(req)
        path = tmp_path / "store" / "llm-cache" / key[:2] / f"{key}.json"
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x01  # one flipped bit: the object store's SHA-256 check fails
        path.write_bytes(bytes(raw))
        again = _client(srv.url, store).send("judge", req)
        assert not again.cached and again.content == first.content
        assert len(srv.billed) == 2 and c.cache.get(key) is not None  # refetched and stored again
        # the first reply's record loses the entry that settled it, so it books its worst case
        first_worst = json.loads(store.get_bytes(min(store.list("llm-spend/"), key=lambda k: json.loads(
            store.get_bytes(k))["at"])))["worst_usd"]
        assert booked_usd(store) == pytest.approx(first_worst + again.cost_usd)


def test_a_resumed_batch_is_booked_once(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    with MessagesServer(polls_to_end=2) as srv:
        first = _client(srv.url, store)
        items = [("judge", _ask(first, i)) for i in range(4)]
        ticks = iter(range(0, 10_000, 100))
        with pytest.raises(Exception, match="re-run the step to resume it"):  # the step dies while it runs
            MessageBatchRunner(first, store, poll_s=0.01, poll_max_s=0.05, max_wait_s=50,
                               clock=lambda: next(ticks)).run(items, "batch-000/judges")
        second = LLMClient(models=MODELS, prices=CAT["prices_per_mtok"], max_tokens=1024, base_url=srv.url,
                           api_key_env=None, cache_store=store, sleep=lambda s: None, spend_batch="batch-000",
                           spend_attempt="run/1")
        out = MessageBatchRunner(second, store, poll_s=0.01, poll_max_s=0.05).run(items, "batch-000/judges")
        assert len(out.responses) == 4 and out.resumed and srv.requests_to("POST", "/v1/messages/batches") == 1
        s = second.ledger.summary()
        assert s["billed_usd"] == 0 and s["counts"]["adopted_calls"] == 4  # the first attempt's records book them
        assert booked_usd(store) == pytest.approx(billed_usd(srv.billed))
