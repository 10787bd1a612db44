"""Cost projection of trace synthesis: dollars per accepted trace and how many traces a budget buys.

The input is a token profile: per call kind (``planner``, ``subagent``, ``simulator``,
``scenario_writer``, ``judge``, ``judge_2``) the calls and tokens (input, output, cache write,
cache read) that one ACCEPTED trace cost on average, rejected attempts and scenario writing
included. Scenario writing covers both the expansion of the scenario set and the fresh scenarios
a trace batch draws when its scenarios run out of attempts (synth/volume.py): those draws go
through the batch's client as ``scenario_writer`` calls, and the planner, simulator, subagent and
judge calls of fresh scenarios are counted like any other attempt, so a run's
:func:`measure_profile` already carries them (the traces asset records it per batch as
``measured_tokens_per_trace``). The stand-in's judges accept every well-formed trace, so the
profile measured on it has no fresh draws; a paid run whose judges reject scenarios for good
shows more ``scenario_writer`` and planner calls per accepted trace. :func:`measure_profile` derives it from a run's per-role usage
(:meth:`LLMClient.usage_by_role`); ``assets/synth.yaml`` (``traces.measured_tokens_per_trace``)
holds the profile measured on the local stand-in by ``benchmarks/synth_cost_projection.py``.

:func:`project` prices a profile with a deployment's models and prices (cache writes 1.25x input,
reads 0.1x, batched kinds at the batch discount; :class:`~surrogate_dagster.llm.ledger.Price`).
The stand-in's token counts are characters / 4 of template text, not Claude's: the projection
shows the method and the shape of the spend; the per-batch metadata of a paid run gives the real
figures to re-project with.
"""

from __future__ import annotations

import math
from typing import Any

from ..llm.ledger import Price

CALL_KINDS = ("planner", "subagent", "simulator", "scenario_writer", "judge", "judge_2")
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def measure_profile(usage_by_role: dict[str, dict[str, int]], accepted: int) -> dict[str, dict[str, float]]:
    """Per call kind, calls and tokens per accepted trace (``usage_by_role`` totals / ``accepted``)."""
    if accepted < 1:
        raise ValueError("no accepted trace: cannot measure a cost per accepted trace")
    unknown = set(usage_by_role) - set(CALL_KINDS)
    if unknown:
        raise ValueError(f"unknown call kinds {sorted(unknown)}; expected {CALL_KINDS}")
    return {kind: {f: round(u.get(f, 0) / accepted, 3) for f in ("calls", "batched_calls", *TOKEN_FIELDS)}
            for kind, u in sorted(usage_by_role.items())}


def project(profile: dict[str, dict[str, float]], *, models: dict[str, str], prices: dict[str, Any],
            budget_usd: float, spent_usd: float = 0.0) -> dict[str, Any]:
    """Dollars per accepted trace by call kind and in total, and how many traces ``budget_usd``
    (less ``spent_usd``) buys. A kind's calls are priced at the batch discount in the share given
    by its ``batched_calls`` / ``calls``."""
    if budget_usd <= 0:
        raise ValueError("budget_usd must be positive")
    by_kind: dict[str, Any] = {}
    total = 0.0
    for kind, t in sorted(profile.items()):
        if kind not in models:
            raise KeyError(f"no model configured for call kind {kind!r}")
        price = Price.parse(models[kind], prices[models[kind]])
        calls = float(t.get("calls", 0))
        batched_share = float(t.get("batched_calls", 0)) / calls if calls else 0.0
        args = [float(t.get(f, 0)) for f in TOKEN_FIELDS]
        full = price.cost(args[0], args[1], args[2], args[3])
        usd = full * (1 - batched_share) + price.cost(args[0], args[1], args[2], args[3], batch=True) * batched_share
        by_kind[kind] = {"model": models[kind], "usd_per_trace": round(usd, 6),
                         **{f: t.get(f, 0) for f in ("calls", "batched_calls", *TOKEN_FIELDS)}}
        total += usd
    left = max(0.0, budget_usd - spent_usd)
    return {
        "projected_cost_per_trace_usd": round(total, 6),
        "traces_the_budget_buys": math.floor(left / total) if total > 0 else None,
        "budget_usd": budget_usd, "budget_left_usd": round(left, 6), "by_kind": by_kind,
    }
