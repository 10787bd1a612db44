"""Runs whose process is gone release what they hold.

A run executed in process (the CLI's ``materialize`` calls) or by the default run launcher is
orchestrated by one local process. When that process dies without ending the run (SIGKILL, an OOM
kill), Dagster leaves the run STARTED and its pool slots claimed, so every later step in the same
pool (``llm``, ``gpu``) waits for a slot that is never given back. ``recover_dead_runs`` finds
such runs, marks them failed and frees their slots; it also frees slots still held by runs that
already ended.

Whose process a run is: the CLI tags its runs with its pid and host (:func:`owner_tags`); for
other runs the pid is the one Dagster records on the run's RUN_START event, trusted only when the
instance launches runs as local processes (``DefaultRunLauncher``). A run on another host, or with
no recorded pid, is left alone: Dagster's run monitoring daemon handles those in a deployment.

Only public instance methods are used: ``get_run_records``/``all_logs`` to read,
``report_run_failed`` to end a run, and the event log storage's concurrency methods
(``get_concurrency_info``, ``free_concurrency_slots_for_run``, the same call the UI's "free slots"
button makes) to release its claims.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Callable

PID_TAG = "surrogate/pid"
HOST_TAG = "surrogate/host"

# Runs that may still hold (or wait for) pool slots. QUEUED runs have no process yet.
_UNFINISHED = ("NOT_STARTED", "STARTING", "STARTED", "CANCELING")
_FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


def owner_tags() -> dict[str, str]:
    """Tags naming this process as the run's orchestrator (pid and host)."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


@dataclass
class Released:
    """What was done for one run: marked failed (with the reason), and per pool the claimed slots
    freed and the waiting steps taken out of the queue."""

    run_id: str
    reason: str
    marked_failed: bool
    freed: dict[str, int] = field(default_factory=dict)
    dequeued: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        what = f"marked run {self.run_id} ({self.reason}) failed" if self.marked_failed \
            else f"run {self.run_id} ({self.reason})"
        parts = [f"freed {n} slot(s) in pool {p}" for p, n in sorted(self.freed.items())]
        parts += [f"dropped {n} waiting step(s) from pool {p}" for p, n in sorted(self.dequeued.items())]
        return f"{what}; {'; '.join(parts) or 'held no pool slots'}"


# --- is the process alive? -----------------------------------------------------------------------

def _boot_time() -> float | None:
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _proc_state(pid: int) -> tuple[str, float | None] | None:
    """(state letter, start time as epoch seconds) from /proc, None where /proc is unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    rest = stat[stat.rfind(")") + 2:].split()
    state = rest[0]
    boot = _boot_time()
    try:
        started = boot + int(rest[19]) / os.sysconf("SC_CLK_TCK") if boot is not None else None
    except (IndexError, ValueError, OSError):
        started = None
    return state, started


def process_alive(pid: int, started_by: float | None = None) -> bool:
    """True when ``pid`` is a live process on this host that existed at ``started_by`` (epoch s).

    A zombie counts as gone (it runs no code), and so does a process that started after
    ``started_by``: the pid was reused by something else after the run's own process died.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user
    st = _proc_state(pid)
    if st is None:
        return True
    state, started = st
    if state in ("Z", "X"):
        return False
    # /proc start times have clock-tick resolution and btime whole seconds: allow 2 s of slack.
    return not (started_by is not None and started is not None and started > started_by + 2.0)


# --- whose process is a run? ---------------------------------------------------------------------

def _launches_local_processes(instance) -> bool:
    from dagster import DefaultRunLauncher

    try:
        return isinstance(instance.run_launcher, DefaultRunLauncher)
    except Exception:  # a launcher that cannot be built here (missing k8s config): not local
        return False


def run_owner(instance, run, local_launcher: bool) -> tuple[int | None, str]:
    """(pid, description) of the process orchestrating ``run`` on this host; pid None when it
    is not this host's to judge (another host, or no pid recorded)."""
    host = socket.gethostname()
    tags = run.tags or {}
    if PID_TAG in tags:
        if tags.get(HOST_TAG, host) != host:
            return None, f"owned by host {tags[HOST_TAG]}"
        try:
            return int(tags[PID_TAG]), f"pid {tags[PID_TAG]}"
        except ValueError:
            return None, f"unreadable {PID_TAG} tag"
    if not local_launcher:
        return None, "launched by a remote run launcher"
    from dagster import DagsterEventType

    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.RUN_START):
        if entry.dagster_event is not None and entry.dagster_event.pid:
            return int(entry.dagster_event.pid), f"pid {entry.dagster_event.pid}"
    return None, "no pid recorded"


# --- release -------------------------------------------------------------------------------------

def held_slots(instance) -> dict[str, dict[str, tuple[int, int]]]:
    """run id -> {pool: (claimed slots, waiting steps)} over every pool of the instance."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return {}
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for pool in sorted(storage.get_concurrency_keys()):
        info = storage.get_concurrency_info(pool)
        for slot in info.claimed_slots:
            per = out.setdefault(slot.run_id, {})
            claimed, waiting = per.get(pool, (0, 0))
            per[pool] = (claimed + 1, waiting)
        for step in info.pending_steps:
            if step.assigned_timestamp is None:  # a waiting step; an assigned one is a claimed slot
                per = out.setdefault(step.run_id, {})
                claimed, waiting = per.get(pool, (0, 0))
                per[pool] = (claimed, waiting + 1)
    return out


def _released(run_id: str, reason: str, marked: bool, held: dict[str, tuple[int, int]]) -> Released:
    return Released(run_id, reason, marked, {p: c for p, (c, _) in held.items() if c},
                    {p: w for p, (_, w) in held.items() if w})


def release_run(instance, run, reason: str, held: dict[str, tuple[int, int]] | None = None) -> Released:
    """Mark ``run`` failed (when unfinished) with ``reason`` and free every slot it holds."""
    marked = run.status.value in _UNFINISHED
    if marked:
        instance.report_run_failed(
            run, message=f"Run process is gone ({reason}); marked failed and its pool slots freed "
                         f"by surrogate_dagster run recovery.")
    if held is None:
        held = held_slots(instance).get(run.run_id, {})
    if held:
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
    return _released(run.run_id, reason, marked, held)


def recover_dead_runs(instance, log: Callable[[str], None] | None = print) -> list[Released]:
    """Mark unfinished runs whose process is gone as failed and free their pool slots, then free
    the slots still held by runs that have ended. Returns what was released (logged through
    ``log``). Runs this host cannot judge are left alone."""
    from dagster import DagsterRunStatus, RunsFilter

    released: list[Released] = []
    held = held_slots(instance)
    local_launcher = _launches_local_processes(instance)
    records = instance.get_run_records(
        filters=RunsFilter(statuses=[DagsterRunStatus(s) for s in _UNFINISHED]))
    for rec in records:
        run = rec.dagster_run
        pid, who = run_owner(instance, run, local_launcher)
        if pid is None:
            continue
        started_by = rec.start_time or rec.create_timestamp.timestamp()
        if process_alive(pid, started_by):
            continue
        released.append(release_run(instance, run, f"{who} gone", held.pop(run.run_id, {})))
    # Slots of runs that ended (or were deleted) without giving them back.
    for run_id, pools in held.items():
        run = instance.get_run_by_id(run_id)
        if run is None:
            instance.event_log_storage.free_concurrency_slots_for_run(run_id)
            released.append(_released(run_id, "run deleted", False, pools))
        elif run.status.value in _FINISHED:
            released.append(release_run(instance, run, f"already {run.status.value}", pools))
    if log is not None:
        for r in released:
            log(f"[run recovery] {r.describe()}")
    return released


def release_own_runs(instance, reason: str, pid: int | None = None) -> list[Released]:
    """Mark this process's unfinished runs (by :func:`owner_tags`) failed and free their slots."""
    from dagster import DagsterRunStatus, RunsFilter

    tags = {PID_TAG: str(pid or os.getpid()), HOST_TAG: socket.gethostname()}
    held = held_slots(instance)
    runs = instance.get_runs(filters=RunsFilter(tags=tags, statuses=[DagsterRunStatus(s) for s in _UNFINISHED]))
    return [release_run(instance, run, reason, held.get(run.run_id, {})) for run in runs]


def own_runs_blocked(instance, pid: int | None = None) -> bool:
    """True when a step of one of this process's unfinished runs waits for a pool slot."""
    from dagster import DagsterRunStatus, RunsFilter

    tags = {PID_TAG: str(pid or os.getpid()), HOST_TAG: socket.gethostname()}
    mine = {r.run_id for r in instance.get_runs(
        filters=RunsFilter(tags=tags, statuses=[DagsterRunStatus(s) for s in _UNFINISHED]))}
    storage = instance.event_log_storage
    if not mine or not storage.supports_global_concurrency_limits:
        return False
    for pool in storage.get_concurrency_keys():
        if any(s.run_id in mine and s.assigned_timestamp is None
               for s in storage.get_concurrency_info(pool).pending_steps):
            return True
    return False
