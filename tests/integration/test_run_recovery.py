"""A run whose process dies gives its pool slot back; SIGTERM ends a run waiting on a pool.

Each scenario runs real Dagster runs in child processes against a temp DAGSTER_HOME holding the
instance config the CLI writes (pool limit 1): one child takes the ``llm`` slot and sleeps, is
killed with SIGKILL, and the next run of a pool-``llm`` asset must finish within a bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surrogate_dagster import cli
from surrogate_dagster.runtime.run_recovery import HOST_TAG, PID_TAG, held_slots, process_alive

pytestmark = pytest.mark.slow

CHILD = r'''
import os, sys, time
from pathlib import Path
from dagster import DagsterInstance, asset, materialize
from surrogate_dagster import cli

mode, marker = sys.argv[1], Path(sys.argv[2])

@asset(pool="llm")
def hold_llm():
    marker.write_text(str(os.getpid()))
    time.sleep(600)

@asset(pool="llm")
def use_llm():
    return 1

instance = DagsterInstance.get()
t0 = time.monotonic()
if mode in ("hold", "hold_tagged"):
    materialize([hold_llm], instance=instance, tags=cli.owner_tags() if mode == "hold_tagged" else None)
elif mode in ("next", "next_recover"):
    if mode == "next_recover":
        cli.recover_instance(instance)  # what `make run` does before its first run
    ok = materialize([use_llm], instance=instance, tags=cli.owner_tags()).success
    print(f"DONE success={ok} after {time.monotonic() - t0:.1f}s", flush=True)
elif mode == "guarded":
    from surrogate_dagster.runtime.run_interrupts import InterruptGuard
    with InterruptGuard(instance):
        materialize([use_llm], instance=instance, tags=cli.owner_tags())
    print("DONE", flush=True)
'''


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = cli.ensure_instance_home(tmp_path / "dagster_home", set_env=False)
    monkeypatch.setenv("DAGSTER_HOME", str(h))
    (tmp_path / "child.py").write_text(CHILD)
    return h


def _spawn(tmp_path, mode: str, marker: str = "marker") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(tmp_path / "child.py"), mode, str(tmp_path / marker)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_for(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _hold_slot(tmp_path, mode: str = "hold") -> subprocess.Popen:
    """A child holding the llm slot (its asset is running)."""
    holder = _spawn(tmp_path, mode)
    marker = tmp_path / "marker"
    _wait_for(lambda: marker.exists() or holder.poll() is not None, 120, "the holder to take the slot")
    assert holder.poll() is None, holder.stdout.read()[-3000:]
    return holder


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _instance():
    from dagster import DagsterInstance

    return DagsterInstance.get()


@pytest.mark.parametrize("hold_mode", ["hold", "hold_tagged"])
def test_killed_run_releases_its_pool_slot(home, tmp_path, hold_mode):
    # "hold": the pid comes from Dagster's RUN_START event; "hold_tagged": from the CLI's tags.
    holder = _hold_slot(tmp_path, hold_mode)
    _kill(holder)

    # Without recovery the next run waits for the dead run's slot (and ignores SIGTERM meanwhile).
    # It is killed once its step waits in the pool queue (on a loaded box that takes longer than
    # a fixed wait): a second dead run, this one holding a waiting step and no slot.
    blocked = _spawn(tmp_path, "next")
    instance = _instance()

    def blocked_waits() -> bool:
        return blocked.poll() is not None or any(
            pools.get("llm", (0, 0))[1] for pools in held_slots(instance).values())

    _wait_for(blocked_waits, 180, "the next run's step to wait for the llm slot")
    with pytest.raises(subprocess.TimeoutExpired):
        blocked.communicate(timeout=3)  # still waiting: the dead run holds the slot
    _kill(blocked)

    t0 = time.monotonic()
    nxt = _spawn(tmp_path, "next_recover")
    try:
        out, _ = nxt.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        _kill(nxt)
        pytest.fail("the next pool-llm run did not finish within 90 s after recovery")
    waited = time.monotonic() - t0
    assert nxt.returncode == 0, out[-3000:]
    assert "DONE success=True" in out, out[-3000:]
    recovered = [line for line in out.splitlines() if line.startswith("[run recovery]")]
    assert len(recovered) == 2, out[-3000:]
    assert all("gone) failed" in line for line in recovered), recovered
    assert any("freed 1 slot(s) in pool llm" in line for line in recovered), recovered  # the holder
    assert any("dropped 1 waiting step(s) from pool llm" in line for line in recovered), recovered
    assert waited < 90

    from dagster import DagsterRunStatus

    instance = _instance()
    runs = instance.get_runs()
    dead = [r for r in runs if r.status == DagsterRunStatus.FAILURE]
    assert len(dead) == 2 and len(runs) == 3  # holder, blocked one: failed; recovering run: success
    assert held_slots(instance) == {}


def test_sigterm_while_blocked_on_a_pool_exits_promptly(home, tmp_path):
    holder = _hold_slot(tmp_path, "hold_tagged")  # alive: the slot is legitimately taken
    try:
        waiter = _spawn(tmp_path, "guarded", marker="unused")
        instance = _instance()

        def waiter_blocked() -> bool:
            return any("llm" in pools and r.tags.get(PID_TAG) == str(waiter.pid)
                       for run_id, pools in held_slots(instance).items()
                       if (r := instance.get_run_by_id(run_id)) is not None) or waiter.poll() is not None

        _wait_for(waiter_blocked, 120, "the guarded run to wait on the llm pool")
        assert waiter.poll() is None
        t0 = time.monotonic()
        waiter.send_signal(signal.SIGTERM)
        try:
            out, _ = waiter.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            _kill(waiter)
            pytest.fail("SIGTERM was ignored while the run waited on the llm pool")
        assert time.monotonic() - t0 < 20
        assert waiter.returncode == 128 + signal.SIGTERM, out[-3000:]
        assert "blocked on a pool slot" in out and "failed" in out, out[-3000:]
        # The interrupted run is failed and left nothing in the pool queue; the holder keeps its slot.
        mine = [r for r in instance.get_runs() if r.tags.get(PID_TAG) == str(waiter.pid)]
        assert [r.status.value for r in mine] == ["FAILURE"]
        assert mine[0].run_id not in held_slots(instance)
        assert holder.poll() is None
    finally:
        _kill(holder)


def test_recovery_leaves_live_and_foreign_runs_alone(home, tmp_path):
    from dagster import DagsterRunStatus

    from surrogate_dagster.runtime.run_recovery import recover_dead_runs

    holder = _hold_slot(tmp_path, "hold_tagged")
    try:
        instance = _instance()
        assert recover_dead_runs(instance, log=None) == []  # its process is alive
        # A run tagged by another host is not this host's to judge, whatever its pid.
        run = instance.get_runs()[0]
        instance.add_run_tags(run.run_id, {HOST_TAG: "some-other-host", PID_TAG: "999999"})
        _kill(holder)
        assert recover_dead_runs(instance, log=None) == []
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED
    finally:
        _kill(holder)


def test_process_alive():
    assert process_alive(os.getpid())
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert not process_alive(p.pid)  # reaped: gone (or reused by a process started after it)
    # This process started before now: alive; a run that started before this process did cannot
    # be this process's run (the pid was reused).
    assert process_alive(os.getpid(), started_by=time.time())
    if Path("/proc/self/stat").exists():
        assert not process_alive(os.getpid(), started_by=time.time() - 10 * 365 * 86400)


def test_instance_config_has_pools_and_run_monitoring(tmp_path):
    import yaml
    from dagster import DagsterInstance

    home = cli.ensure_instance_home(tmp_path / "h", set_env=False)
    cfg = yaml.safe_load((home / "dagster.yaml").read_text())
    assert cfg["concurrency"]["pools"]["default_limit"] == 1
    assert cfg["run_monitoring"]["enabled"] is True
    assert cfg["run_monitoring"]["free_slots_after_run_end_seconds"] > 0
    with DagsterInstance.from_config(str(home)) as instance:  # Dagster accepts it
        assert instance.run_monitoring_enabled
        # the daemon dequeues the UI's runs every second, not Dagster's default 5
        assert instance.run_coordinator.dequeue_interval_seconds == 1
    # The config an earlier CLI wrote is upgraded; one a person edited is kept.
    (home / "dagster.yaml").write_text(cli._OLD_INSTANCE_YAMLS[0])
    cli.ensure_instance_home(home, set_env=False)
    assert (home / "dagster.yaml").read_text() == cli.INSTANCE_YAML
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    cli.ensure_instance_home(home, set_env=False)
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


def test_a_forked_workers_sigterm_does_not_stop_the_cli():
    import multiprocessing

    from surrogate_dagster.runtime.run_interrupts import InterruptGuard

    lines: list = []
    # The default SIGTERM disposition, whatever earlier code in this process installed: the worker
    # must get it back after the fork and die by the signal.
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        _fork_and_terminate_a_worker(InterruptGuard, lines, multiprocessing)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _set_then_sleep(started) -> None:
    started.set()
    time.sleep(30)


def _fork_and_terminate_a_worker(InterruptGuard, lines: list, multiprocessing) -> None:
    with InterruptGuard(None, log=lines.append, exit=lambda code: lines.append(("exit", code))) as guard:
        ctx = multiprocessing.get_context("fork")
        started = ctx.Event()
        worker = ctx.Process(target=_set_then_sleep, args=(started,))
        worker.start()
        assert started.wait(60)  # set by the worker's code, after the after-fork hooks ran
        worker.terminate()  # SIGTERM to the worker only, as a curation pool's shutdown does
        worker.join(timeout=10)
        time.sleep(0.3)
        assert worker.exitcode == -signal.SIGTERM  # the worker died by it, as without the guard
        assert guard.requested is None and lines == []
