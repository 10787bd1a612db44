"""Host pool slots: a taken slot makes the next taker wait until it is released; k slots let k
steps in at once; a dead holder's lock is gone with its process; every pool asset holds one."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from surrogate_dagster.runtime.host_pools import MARK, pool_slot


def test_the_second_taker_waits_for_the_first_to_release(tmp_path) -> None:
    events: list[tuple[str, float]] = []
    first_in, second_waits = threading.Event(), threading.Event()
    logs: list[str] = []

    def log(line: str) -> None:
        logs.append(line)
        if line.endswith("waiting"):
            second_waits.set()

    def first() -> None:
        with pool_slot(tmp_path, "gpu", 1, "run A"):
            events.append(("A in", time.monotonic()))
            first_in.set()
            second_waits.wait(30)  # A holds the slot until B has found it taken
            events.append(("A out", time.monotonic()))

    def second() -> None:
        first_in.wait(10)
        with pool_slot(tmp_path, "gpu", 1, "run B", log):
            events.append(("B in", time.monotonic()))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    order = [name for name, _ in sorted(events, key=lambda e: e[1])]
    assert order == ["A in", "A out", "B in"]
    # the waiter says whom it waits for, then when it got in
    assert "all 1 host slot(s) taken (by run A pid" in logs[0] and logs[0].endswith("waiting")
    assert logs[1].startswith("pool gpu: host slot 0 taken after waiting")
    assert logs[2].startswith("pool gpu: host slot 0 released after")


def test_k_slots_admit_k_takers_at_once(tmp_path) -> None:
    with pool_slot(tmp_path, "llm", 2, "a") as i, pool_slot(tmp_path, "llm", 2, "b") as j:
        assert {i, j} == {0, 1}
        blocked = threading.Event()

        def third() -> None:
            with pool_slot(tmp_path, "llm", 2, "c"):
                blocked.set()

        t = threading.Thread(target=third, daemon=True)
        t.start()
        assert not blocked.wait(1.0)  # both slots are held
    t.join(10)
    assert blocked.is_set()


def test_a_killed_holder_leaves_no_lock(tmp_path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom pathlib import Path\n"
        "from surrogate_dagster.runtime.host_pools import pool_slot\n"
        "with pool_slot(Path(sys.argv[1]), 'gpu', 1, 'dying run'):\n"
        "    print('in', flush=True); time.sleep(600)\n"), str(tmp_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "in"
        holder.kill()
        holder.wait(30)
        t0 = time.monotonic()
        with pool_slot(tmp_path, "gpu", 1, "next run") as i:
            assert i == 0 and time.monotonic() - t0 < 5
    finally:
        holder.kill()


def test_a_pool_without_slots_is_an_error(tmp_path) -> None:
    with pytest.raises(ValueError, match="0 slots"):
        with pool_slot(tmp_path, "gpu", 0, "x"):
            pass


def test_every_pool_asset_runs_holding_a_host_slot() -> None:
    from surrogate_dagster.definitions import defs

    pooled = {key.to_user_string(): getattr(a.op.compute_fn.decorated_fn, MARK, False)
              for key, a in defs.get_repository_def().assets_defs_by_key.items()
              if a.is_executable and a.op.pool}
    assert len(pooled) >= 8 and all(pooled.values()), [k for k, ok in pooled.items() if not ok]
