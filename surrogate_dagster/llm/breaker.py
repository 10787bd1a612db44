"""A circuit breaker: after N consecutive failed attempts, fail fast instead of hammering the API.

Closed -> (N consecutive failures) -> open: every call raises :class:`CircuitOpenError` at once.
After ``reset_after_s`` one trial call is let through (half-open); its success closes the circuit,
its failure re-opens it for another ``reset_after_s``. Shared by all threads of a client, so a
parallel subagent fan-out stops together when the service is down.
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class CircuitOpenError(RuntimeError):
    """The breaker is open: the service failed repeatedly, nothing was sent."""


class CircuitBreaker:
    """Consecutive-failure breaker with a half-open trial after a cool-down."""

    def __init__(self, failure_threshold: int = 5, reset_after_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be >= 1")
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False
        self.trips = 0
        self.last_error = ""

    @property
    def state(self) -> str:
        """"closed", "open" or "half_open"."""
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.reset_after_s:
            return "half_open"
        return "open"

    def before_call(self) -> None:
        """Raise :class:`CircuitOpenError` unless a call may go out now."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return
            if state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True
                return
            wait = self.reset_after_s - (self._clock() - self._opened_at) if self._opened_at else 0.0
            raise CircuitOpenError(
                f"circuit open after {self._failures} consecutive failed LLM attempts "
                f"(last: {self.last_error}); failing fast, next trial in {max(wait, 0.0):.1f}s")

    def record_success(self) -> None:
        """A good reply closes the circuit and clears the failure streak."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def record_failure(self, error: str) -> bool:
        """Count a failed attempt; returns True when the circuit is (now) open."""
        with self._lock:
            self._failures += 1
            self.last_error = error[:200]
            was_trial = self._trial_in_flight
            self._trial_in_flight = False
            if was_trial or self._failures >= self.failure_threshold:
                if self._opened_at is None or was_trial:
                    self.trips += 1
                self._opened_at = self._clock()
            return self._opened_at is not None
