"""Synthesis at volume: keep synthesizing and judging until a batch has its target of accepted traces.

One round synthesizes every scenario of the batch that has no accepted trace yet
(:func:`~.orchestrator.synthesize_batch`) and judges the new traces
(:func:`~.validate_traces.validate_batch`, the two judges as one Message Batch when a runner is
given). A rejected or failed scenario is tried again in the next round as a new sample (the
planner request names the attempt, see :func:`~.orchestrator.planner_system`), up to
``max_attempts_per_scenario`` times.

When scenarios run out of attempts and those still in play cannot reach the target (fewer of
them than traces still missing), fresh scenarios are drawn (``fresh``, a
:class:`~.scenarios.FreshScenarios`) to make up the difference and join the next round, up to
``max_fresh_scenarios`` per call: the cap that bounds what an always-rejecting judge can cost
(at most ``(len(scenarios) + max_fresh_scenarios) * max_attempts_per_scenario`` scenario
attempts). The loop stops with ``stop_reason``:

- ``target_reached``: ``target`` traces accepted;
- ``budget``: the budget guard stopped synthesis, judging or a fresh draw (what was accepted is kept);
- ``attempts_exhausted``: every scenario still without a trace has used its attempts and no
  fresh scenarios may be drawn (no ``fresh`` source, or ``max_fresh_scenarios`` is 0);
- ``scenario_cap``: the same, after ``max_fresh_scenarios`` fresh scenarios were drawn;
- ``writer_exhausted``: the same, after a draw gave no usable scenario (all malformed or
  duplicates).

A service outage (breaker open, retries exhausted) still raises
:class:`~.orchestrator.BatchFailed`, so the partition fails and is re-run alone from the cache.
Dagster-free.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..llm.breaker import CircuitOpenError
from ..llm.client import LLMClient, RetriesExhausted
from ..llm.ledger import BudgetExceeded
from .orchestrator import BatchFailed, synthesize_batch
from .validate_traces import validate_batch

STOP_REASONS = ("target_reached", "budget", "attempts_exhausted", "scenario_cap", "writer_exhausted")


def synthesize_until_accepted(client: LLMClient, scenarios: list[dict], *, target: int, batch_key: str,
                              max_attempts_per_scenario: int = 3, max_turns: int = 8, n_samples: int = 3,
                              batch_runner: Any = None, fresh: Any = None,
                              max_fresh_scenarios: int = 0) -> dict[str, Any]:
    """Run rounds until ``target`` traces are accepted or a stop reason applies (module docstring).

    Returns ``{"kept", "rejections", "traces", "fresh_scenarios", "summary"}``: the accepted rows
    (one per scenario), every rejection of every attempt (``attempt`` set; ``stage`` synthesis,
    structural, judges or judge_error), the synthesized rows by id (latest attempt), the fresh
    scenarios drawn and a JSON-ready summary with ``target``, ``accepted``, ``rejected_by_reason``
    (over all attempts), ``attempts``, ``fresh_scenarios_drawn``, ``fresh_draws``, ``stop_reason``
    and what each round did.
    """
    if target < 1 or max_attempts_per_scenario < 1:
        raise ValueError("target and max_attempts_per_scenario must be positive")
    if max_fresh_scenarios < 0:
        raise ValueError("max_fresh_scenarios must be non-negative")
    by_id = {s["id"]: s for s in scenarios}
    if fresh is not None:
        fresh.set_batch_tasks([s["task"] for s in scenarios])
    drawn: list[dict] = []
    draws, writer_dry = 0, False
    tries: Counter = Counter()
    kept: list[dict] = []
    accepted: set[str] = set()
    rejections: list[dict] = []
    traces: dict[str, dict] = {}
    by_reason: Counter = Counter()
    agreement: Counter = Counter()
    rounds: list[dict] = []
    stop_reason, stop_message, unjudged = "", "", 0
    pending = list(scenarios)
    attempt = 0
    while True:
        if len(kept) >= target:
            stop_reason = "target_reached"
            break
        need = target - len(kept) - len(pending)
        n_fresh = 0
        if need > 0 and fresh is not None and len(drawn) < max_fresh_scenarios:
            want = min(need, max_fresh_scenarios - len(drawn))
            draws += 1
            try:
                new = fresh.draw(want)[:want]
            except BudgetExceeded as exc:
                stop_reason, stop_message = "budget", f"fresh scenario draw {draws} of {batch_key}: {exc}"
                break
            except (RetriesExhausted, CircuitOpenError) as exc:
                raise BatchFailed(f"batch {batch_key}: fresh scenario draw {draws}: {exc}", list(kept), {
                    "batch": batch_key, "how_far": f"{len(kept)} of {target} accepted before fresh draw {draws}",
                    "ledger": client.ledger.summary()}) from exc
            writer_dry = not new
            drawn.extend(new)
            by_id.update({s["id"]: s for s in new})
            pending.extend(new)
            n_fresh = len(new)
        if not pending:
            stop_reason = ("attempts_exhausted" if fresh is None or max_fresh_scenarios == 0 else
                           "scenario_cap" if len(drawn) >= max_fresh_scenarios else
                           "writer_exhausted" if writer_dry else "attempts_exhausted")
            break
        attempt += 1
        rows, syn = synthesize_batch(client, pending, batch_key=batch_key, max_turns=max_turns, attempt=attempt)
        kept_r, rejected_r, val = validate_batch(client, rows, by_id, n_samples=n_samples, batch_runner=batch_runner,
                                                 batch_job=f"{batch_key}/judges/attempt-{attempt}")
        tried = {r_["scenario_id"] for r_ in syn["failures"]} | {_scenario_id(r) for r in rows}
        tries.update(tried)
        for row in rows:
            traces[row["id"]] = row
        for f in syn["failures"]:
            rejections.append({"id": f"synth-{f['scenario_id']}", "scenario_id": f["scenario_id"], "attempt": attempt,
                               "stage": "synthesis", "reasons": [f["reason"]], "detail": f["detail"]})
            by_reason[f"synthesis:{f['reason']}"] += 1
        for rej in rejected_r:
            rejections.append({**rej, "attempt": attempt})
        by_reason.update(val["rejected_by_reason"])
        agreement.update(val["judge_agreement"])
        unjudged = val["unjudged"]
        for row in kept_r:
            if len(kept) < target:  # a batch never keeps more than its target
                kept.append(row)
                accepted.add(_scenario_id(row))
        rounds.append({"attempt": attempt, "scenarios": len(pending), "fresh": n_fresh, "synthesized": len(rows),
                       "accepted": len(kept_r), "rejected": len(rejected_r) + len(syn["failures"]),
                       "unjudged": val["unjudged"], "message_batches": val.get("message_batches") or {}})
        stops = [m for m in (syn["stop_message"], val["stop_message"]) if m]
        if stops:
            stop_reason, stop_message = "budget", " ".join(stops)
            break
        pending = [s for s in pending if s["id"] not in accepted and tries[s["id"]] < max_attempts_per_scenario]
    n_rows = sum(r["synthesized"] for r in rounds)
    summary = {
        "target": target, "accepted": len(kept), "rejected_by_reason": dict(by_reason),
        "attempts": sum(tries.values()), "rounds": len(rounds), "stop_reason": stop_reason,
        "fresh_scenarios_drawn": len(drawn), "fresh_draws": draws, "max_fresh_scenarios": max_fresh_scenarios,
        "fresh_dropped_by_reason": dict(fresh.dropped) if fresh is not None else {},
        "stop_message": stop_message, "unjudged": unjudged,
        "scenarios_without_trace": sorted(set(by_id) - accepted),
        "judge_agreement": dict(agreement), "by_round": rounds,
        "how_far": f"{sum(tries.values())} scenario attempts over {len(rounds)} rounds ({len(drawn)} fresh "
                   f"scenarios in {draws} draws), {len(kept)} of {target} accepted, {n_rows} traces",
    }
    return {"kept": kept, "rejections": rejections, "traces": traces, "fresh_scenarios": drawn, "summary": summary}


def _scenario_id(row: dict) -> str:
    return json.loads(row["meta"])["scenario_id"]
