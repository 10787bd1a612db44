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
The stand-in's token counts are characters / 4 of template text, not Claude's. With a key,
:func:`project_counted` re-measures them: the Messages API's ``count_tokens`` endpoint (through
the anthropic SDK) counts the input of the planner, subagent, judge (...) requests a batch
rendered for its real scenarios (:class:`RequestRecorder`), each kind's input-side tokens are
scaled by counted / stand-in count of those same requests (:func:`counted_ratios`), and the
result names the counts it used (``token_counts``: ``count_tokens`` or
``stand_in_chars_per_4``). Output tokens are generated, not countable ahead: they stay the
stand-in's. The local Messages server answers ``count_tokens`` too, so the path runs in tests.
"""

from __future__ import annotations

import math
from typing import Any

from ..llm.cache import canonical_json
from ..llm.ledger import Price
from ..llm.local_server import TOOL_USE_SYSTEM_TOKENS, estimate_tokens

CALL_KINDS = ("planner", "subagent", "simulator", "scenario_writer", "judge", "judge_2")
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")  # all scale with the prompt
COUNT_PARAMS = ("model", "system", "messages", "tools", "tool_choice")  # what count_tokens takes of a request


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


class RequestRecorder:
    """Keeps the first ``per_kind`` requests each call kind renders through ``client.build_request``
    (the real scenarios' planner, subagent, simulator and judge requests, as they are sent)."""

    def __init__(self, client: Any, per_kind: int = 3) -> None:
        self.per_kind = per_kind
        self.requests: dict[str, list[dict]] = {}
        build = client.build_request

        def recording(role: str, **kw: Any) -> dict:
            request = build(role, **kw)
            kept = self.requests.setdefault(role, [])
            if len(kept) < self.per_kind:
                kept.append(request)
            return request

        client.build_request = recording


def stand_in_input_tokens(request: dict) -> int:
    """A request's input tokens as the stand-in counts them (what the catalog's profile holds):
    characters / 4 of system, messages and tools, plus the tool-use system prompt."""
    n = estimate_tokens(canonical_json([request.get("system"), request["messages"], request.get("tools")]))
    if request.get("tools"):
        n += TOOL_USE_SYSTEM_TOKENS.get((request.get("tool_choice") or {}).get("type", "auto"), 346)
    return n


def count_input_tokens(sdk: Any, request: dict) -> int:
    """``messages.count_tokens`` (anthropic SDK) on one request built by ``LLMClient.build_request``."""
    params = {k: request[k] for k in COUNT_PARAMS if request.get(k) is not None}
    return int(sdk.messages.count_tokens(**params).input_tokens)


def counted_ratios(sdk: Any, requests: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    """Per call kind: requests counted, their stand-in and counted input tokens, and the ratio."""
    out = {}
    for kind, reqs in sorted(requests.items()):
        if not reqs:
            continue
        stand_in = sum(stand_in_input_tokens(r) for r in reqs)
        counted = sum(count_input_tokens(sdk, r) for r in reqs)
        out[kind] = {"requests": len(reqs), "stand_in_tokens": stand_in, "counted_tokens": counted,
                     "ratio": round(counted / stand_in, 4)}
    return out


def reprofile(profile: dict[str, dict[str, float]], ratios: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The profile with each counted kind's input-side tokens scaled by its ratio (other kinds, and
    output tokens, unchanged)."""
    out = {}
    for kind, t in profile.items():
        r = ratios.get(kind, {}).get("ratio")
        out[kind] = {f: (round(float(v) * r, 3) if r is not None and f in INPUT_FIELDS else v) for f, v in t.items()}
    return out


def project_counted(profile: dict[str, dict[str, float]], *, models: dict[str, str], prices: dict[str, Any],
                    budget_usd: float, spent_usd: float = 0.0, sdk: Any = None,
                    requests: dict[str, list[dict]] | None = None) -> dict[str, Any]:
    """:func:`project` on token counts measured with ``count_tokens`` when ``sdk`` (a keyed client)
    and rendered ``requests`` are given, else on the stand-in's profile; ``token_counts`` says which,
    ``counted_by_kind`` holds the measurement, ``kinds_not_counted`` the kinds left at the stand-in's."""
    ratios = counted_ratios(sdk, requests) if sdk is not None and requests else {}
    ratios = {k: v for k, v in ratios.items() if k in profile}
    result = project(reprofile(profile, ratios) if ratios else profile, models=models, prices=prices,
                     budget_usd=budget_usd, spent_usd=spent_usd)
    return {**result, "token_counts": "count_tokens" if ratios else "stand_in_chars_per_4",
            "counted_by_kind": ratios, "kinds_not_counted": sorted(set(profile) - set(ratios)),
            "output_tokens": "stand_in_chars_per_4"}
