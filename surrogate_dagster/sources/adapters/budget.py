"""A wall-clock budget for one adapter call.

Two mechanisms, because neither works everywhere:

- **An interrupting alarm** (``SIGALRM`` via ``setitimer``) where signals can be used: on POSIX,
  in the main thread. That is where Dagster runs a step's body: the multiprocess executor starts
  each step in a fresh process and runs it on that process's main thread, and the in-process
  executor runs steps on the run worker's main thread; a forked worker's only thread is its main
  thread too. The handler raises :class:`BudgetExceeded` inside the adapter, so a runaway row
  costs about the budget, not its full run time. The regex engine checks for signals while it
  matches, so even a pathological pattern is interrupted; a single long C call that never checks
  (one huge ``json.loads``) is interrupted when it returns.
- **A measurement** everywhere else (another thread, Windows, a C-installed handler we could not
  restore): the call runs to completion and is then judged by its elapsed time. The outcome is
  the same (the row is quarantined as over budget); only the time spent on it differs.

An alarm armed by someone else (pytest-timeout, an outer watchdog) is respected: when it is due
first it is left alone and the call is measured; otherwise it is suspended for the call and
re-armed afterwards with its remaining time, its handler restored.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class BudgetExceeded(BaseException):
    """Raised inside a call that ran past its budget.

    A BaseException, so an adapter's ``except Exception`` cannot swallow it and carry on.
    """

    def __init__(self, budget_s: float, elapsed_s: float, how: str) -> None:
        super().__init__(f"exceeded the {budget_s:g} s budget ({how} at {elapsed_s:.2f} s)")
        self.budget_s, self.elapsed_s, self.how = budget_s, elapsed_s, how


def _alarm_usable() -> bool:
    return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            # None: a handler installed from C, which Python could not reinstate afterwards
            and signal.getsignal(signal.SIGALRM) is not None)


def call_with_budget(fn: Callable[[], T], budget_s: float) -> T:
    """``fn()``, raising :class:`BudgetExceeded` when it runs longer than ``budget_s`` seconds."""
    start = time.monotonic()
    if _alarm_usable():
        result = _call_with_alarm(fn, budget_s, start)
    else:
        result = fn()
    elapsed = time.monotonic() - start
    if elapsed > budget_s:
        raise BudgetExceeded(budget_s, elapsed, "measured")
    return result


def _call_with_alarm(fn: Callable[[], T], budget_s: float, start: float) -> T:
    armed = [True]

    def on_alarm(signum, frame):  # runs in the main thread, between two bytecodes of fn
        # After fn returned, a late alarm must not abort the clean-up below: it is ignored.
        if armed[0]:
            raise BudgetExceeded(budget_s, time.monotonic() - start, "interrupted")

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, budget_s)
    if outer_delay and outer_delay <= budget_s:
        # Someone else's alarm is due first: theirs wins, this call is only measured.
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, outer_delay, outer_interval)
        signal.signal(signal.SIGALRM, previous_handler)
        return fn()
    try:
        return fn()
    finally:
        armed[0] = False  # first: a plain store, which the interpreter does not interrupt
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if outer_delay:
            remaining = outer_delay - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(remaining, 1e-3), outer_interval)
