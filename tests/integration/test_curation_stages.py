"""The parallel per-source steps: the fork pool's contract and the sanitize step over rows, in and out
of worker processes. The NER prefilter: tests/unit/curation/test_ner_prefilter.py."""
from __future__ import annotations

import os
import re
import time
from collections import Counter

import pytest

from surrogate_dagster.curation.parallel import map_chunks
from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig
from surrogate_dagster.sanitize import ner as ner_mod
from surrogate_dagster.curation.sanitize_stage import sanitize_rows


def _square_chunk(static, rows, start, end):
    return [rows[i] ** 2 + static for i in range(start, end)]


def _die_on_chunk(static, rows, start, end):
    if start <= 13 < end:
        os._exit(9)  # a worker killed mid-chunk (what the OOM killer does)
    return end - start


@pytest.mark.parametrize("workers,chunk", [(1, 4), (2, 4), (2, 1), (3, 100)])
def test_map_chunks_is_ordered_and_independent_of_workers(workers, chunk):
    done = []
    parts = map_chunks(_square_chunk, 0, list(range(23)), workers, chunk, progress=lambda d, n: done.append((d, n)))
    assert [x for p in parts for x in p] == [i * i for i in range(23)]
    assert done[-1] == (23, 23) and [d for d, _ in done] == sorted(d for d, _ in done)


def test_a_dead_worker_fails_the_step_with_a_message_not_a_hang():
    with pytest.raises(RuntimeError, match=r"worker process died while _die_on_chunk ran over 40 rows "
                                           r"\(first unfinished chunk: rows \[(0|4|8|12), "):
        map_chunks(_die_on_chunk, None, list(range(40)), workers=2, chunk_size=4)
    assert map_chunks(_square_chunk, 1, list(range(9)), workers=2, chunk_size=4) == [[1, 2, 5, 10], [17, 26, 37, 50], [65]]


def _pid_chunk(static, rows, start, end):
    return os.getpid()


def _raise_on_chunk(static, rows, start, end):
    if start <= 13 < end:
        raise ValueError(f"bad row {rows[13]!r}")
    return end - start


def _window_chunk(static, rows, start, end):
    assert len(rows[start:end]) == end - start and rows[start:end] == [rows[i] for i in range(start, end)]
    for outside in (start - 1, end):
        if 0 <= outside < 40:
            with pytest.raises(IndexError):
                rows[outside]  # a worker only holds its own chunk
    return rows[start]


def test_pool_is_forked_once_per_static_and_reused():
    from surrogate_dagster.curation import parallel

    parallel.shutdown_pools()
    static = object()
    first = {p for part in [map_chunks(_pid_chunk, static, list(range(40)), 2, 4)] for p in part}
    again = set(map_chunks(_pid_chunk, static, list(range(40)), 2, 4))
    assert os.getpid() not in first and again <= first and len(parallel._POOLS) == 1
    other = set(map_chunks(_pid_chunk, object(), list(range(40)), 2, 4))
    assert not other & first and len(parallel._POOLS) == 2  # another static: its own workers
    for i in range(parallel.MAX_POOLS + 1):
        map_chunks(_pid_chunk, (i, object()), list(range(8)), 2, 4)
    assert len(parallel._POOLS) == parallel.MAX_POOLS  # least recently used pools were shut down
    parallel.shutdown_pools()
    assert not parallel._POOLS


def test_a_worker_exception_keeps_its_type_and_the_next_call_starts_clean():
    with pytest.raises(ValueError, match="bad row 13") as err:
        map_chunks(_raise_on_chunk, None, list(range(40)), workers=2, chunk_size=4)
    assert any("rows [12, 16)" in note for note in getattr(err.value, "__notes__", []))
    assert sum(map_chunks(_raise_on_chunk, None, list(range(12)), workers=2, chunk_size=4)) == 12


def _runs(pid: int) -> bool:
    """The process exists and is not a zombie (a killed, unreaped child is one)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_worker_killed_between_calls_is_replaced():
    from surrogate_dagster.curation import parallel

    static = object()
    pids = set(map_chunks(_pid_chunk, static, list(range(8)), 2, 4))
    victim = next(iter(pids))
    os.kill(victim, 9)
    end = time.monotonic() + 30  # let it die (the pool reaps it when asked whether it is alive)
    while time.monotonic() < end and _runs(victim):
        time.sleep(0.05)
    again = set(map_chunks(_pid_chunk, static, list(range(8)), 2, 4))
    assert again and not again & pids  # a dead pool is noticed and forked anew
    parallel.shutdown_pools()


def test_workers_see_only_their_chunk_by_absolute_row_numbers():
    rows = [f"r{i}" for i in range(40)]
    assert map_chunks(_window_chunk, None, rows, workers=2, chunk_size=7) == rows[::7]


class CountingNER:
    """Tags 'Ada Lovelace' as PERSON and counts how many segments reach the model."""

    name = "counting"
    fork_safe = True

    def __init__(self) -> None:
        self.calls, self.seen = 0, []

    def tag(self, texts):
        self.calls += 1
        self.seen += texts
        return [[(m.start(), m.end(), "PERSON") for m in re.finditer("Ada Lovelace", t)] for t in texts]


def _rows():
    rows = []
    for i in range(40):
        user = f"Write a function to sort list {i}." + (" Ask Ada Lovelace about it." if i % 10 == 0 else "")
        answer = "Here is how:\n```python\ndef f(x):\n    return sorted(x)\n```\n"
        if i % 7 == 0:
            answer += "Use token ghp_R4nd0mT0k3nV4lu3ABCDEFGHIJKLMNOPQRst to push."
        rows.append({"id": f"r{i}", "kind": "sft", "messages": [{"role": "user", "content": user},
                                                                {"role": "assistant", "content": answer}]})
    return rows


@pytest.mark.parametrize("workers,chunk", [(1, 256), (1, 3), (2, 5)])
def test_sanitize_rows_matches_row_by_row_sanitizing(workers, chunk):
    ner_mod.TAG_CACHE.clear()
    backend = CountingNER()
    san = Sanitizer(SanitizerConfig(categories=("person_names", "vcs_ci_tokens")), ner=backend)
    rows = _rows()
    res = sanitize_rows(rows, san, workers=workers, chunk_size=chunk)
    expect_counts: Counter = Counter()
    for row, out in zip(rows, res.rows):
        for m, o in zip(row["messages"], out["messages"]):
            r = san.sanitize(m["content"])
            assert o["content"] == r.text
            expect_counts.update({k: v for k, v in r.counts.items() if v})
    assert res.counts == expect_counts == Counter(person_names=4, vcs_ci_tokens=6)
    assert res.changed == len({i for i in range(40) if i % 10 == 0 or i % 7 == 0})
    assert "Ada Lovelace" not in str(res.rows) and "ghp_" not in str(res.rows)
    if workers == 1:
        # batched: one model call per chunk (plus rescans of changed texts), and only the prose
        # that can hold a name reaches the model: never the plain sentences
        assert backend.calls <= -(-40 // chunk) + res.changed
        assert not any(t.startswith(("Write a function to sort list", "Here is how")) and "Ada" not in t
                       for t in backend.seen)
