"""SIGINT/SIGTERM end the CLI promptly, also while a step waits for a pool slot.

During ``materialize`` Dagster replaces the SIGINT/SIGTERM handlers with one that only sets a
flag, and acts on the flag only inside a step's user code. A step waiting for a pool slot never
gets there (Dagster 1.13's in-process executor polls the claim in a tight loop), so the signal is
swallowed and the process spins until it is killed.

:class:`InterruptGuard` watches signals through ``signal.set_wakeup_fd``, which the interpreter
writes to whatever Python handler is installed. On SIGINT/SIGTERM it records the signal (the CLI
checks :attr:`InterruptGuard.requested` after each run and stops), and a watcher thread waits for
the main thread to finish: at once when this process's run is blocked on a pool, after
``grace_s`` otherwise, or on a second signal, it marks this process's unfinished runs failed, frees
their slots and exits with 128 + the signal number.

Processes forked while the guard is active (curation workers) get the wakeup descriptor and the
SIGTERM handler back as they were: otherwise a worker's own SIGTERM (``terminate()`` at pool
shutdown) would be written to the parent's descriptor and read as a signal to the CLI.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from typing import Callable

from .run_recovery import own_runs_blocked, release_own_runs

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_keyboard_interrupt(signo, frame):  # noqa: ARG001 - signal handler signature
    raise KeyboardInterrupt(f"signal {signo}")


_active: "InterruptGuard | None" = None


def _after_fork_in_child() -> None:
    guard = _active
    if guard is None or guard._sock is None:
        return
    try:
        signal.set_wakeup_fd(-1)
        if signal.getsignal(signal.SIGTERM) is _raise_keyboard_interrupt:
            signal.signal(signal.SIGTERM, guard._prev_term)
    except ValueError:  # forked from a thread other than the main one: handlers untouched there
        pass
    for s in guard._sock:
        s.close()
    guard._sock = None


os.register_at_fork(after_in_child=_after_fork_in_child)


class InterruptGuard:
    """Context manager for the CLI's main thread; see the module docstring."""

    def __init__(self, instance, grace_s: float = 30.0, poll_s: float = 0.2,
                 log: Callable[[str], None] = print, exit: Callable[[int], None] = os._exit) -> None:
        self.instance = instance
        self.grace_s, self.poll_s = grace_s, poll_s
        self.log, self._exit = log, exit
        self.requested: int | None = None
        self._count = 0
        self._done = threading.Event()
        self._signalled = threading.Event()
        self._sock: tuple[socket.socket, socket.socket] | None = None

    def __enter__(self) -> "InterruptGuard":
        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach the main thread only; nothing to guard
        # Outside Dagster's context SIGTERM ends the CLI the way Ctrl-C does (KeyboardInterrupt).
        self._prev_term = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        r, w = socket.socketpair()
        w.setblocking(False)
        self._sock = (r, w)
        self._prev_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
        threading.Thread(target=self._read_signals, name="interrupt-reader", daemon=True).start()
        threading.Thread(target=self._watch, name="interrupt-watch", daemon=True).start()
        global _active
        _active = self
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        global _active
        self._done.set()
        if self._sock is None:
            return
        _active = None
        signal.set_wakeup_fd(self._prev_fd)
        signal.signal(signal.SIGTERM, self._prev_term)
        for s in self._sock:
            s.close()
        if exc_type is not None:
            # Ended by an exception (KeyboardInterrupt between Dagster's checkpoints): a run this
            # process had in flight must not stay STARTED holding its slots.
            self._release(f"CLI pid {os.getpid()} ended by {exc_type.__name__}")

    def _read_signals(self) -> None:
        r = self._sock[0]  # kept: a fork clears self._sock in the child only
        while not self._done.is_set():
            try:
                data = r.recv(64)
            except OSError:
                return
            if not data:
                return
            for signo in data:
                if signo in _STOP_SIGNALS:
                    self._count += 1
                    if self.requested is None:
                        self.requested = signo
                        self.log(f"\n[interrupt] {signal.Signals(signo).name}: stopping after the current "
                                 f"run (again to stop now)")
                    self._signalled.set()

    def _watch(self) -> None:
        self._signalled.wait()
        deadline = time.monotonic() + self.grace_s
        while not self._done.wait(self.poll_s):
            blocked = self._safe_blocked()
            if blocked or self._count > 1 or time.monotonic() > deadline:
                why = "blocked on a pool slot" if blocked else \
                    "second signal" if self._count > 1 else f"no exit within {self.grace_s:.0f}s"
                self._release(f"CLI pid {os.getpid()} interrupted by "
                              f"{signal.Signals(self.requested).name} ({why})")
                sys.stdout.flush()
                sys.stderr.flush()
                self._exit(128 + self.requested)
                return

    def _safe_blocked(self) -> bool:
        try:
            return own_runs_blocked(self.instance)
        except Exception:  # storage busy or closing: decide on the next poll
            return False

    def _release(self, reason: str) -> None:
        try:
            for r in release_own_runs(self.instance, reason):
                self.log(f"[interrupt] {r.describe()}")
        except Exception as exc:  # best effort: the next `make run` recovers what is left
            self.log(f"[interrupt] could not release this process's runs ({type(exc).__name__}); "
                     f"the next run's recovery will")
