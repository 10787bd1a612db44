"""Host-side verdicts for the assert harness: untrusted probe reports in, per-test errors out.

Everything the sandbox printed is treated as claims by the candidate. A claim can only supply
values for a probe (which the host then checks against expectations the sandbox never saw) or say
that a test stopped early (which can only fail it). Reports that break the protocol (a sealed
assertion reported twice, an unknown id, a malformed line) mark the whole run as tampered: every
test fails. Only ``holds`` decides that an assertion passed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from surrogate_dagster.sandbox.plain import BadValue, decode
from surrogate_dagster.sandbox.sealed import HostEvalError, TestPlan

EVT_MARK = "__SBX_EVT__"
_MISSING = object()


@dataclass
class Reports:
    """What the sandbox claimed, grouped; ``tampered`` says why the claims cannot be used."""

    sol: Any = _MISSING
    setup: Any = _MISSING
    ends: dict[int, Any] = field(default_factory=dict)
    events: dict[int, list[dict]] = field(default_factory=dict)  # assertion id -> reports
    tampered: str | None = None


def _is_err(x: Any) -> bool:
    return x is None or type(x) is str


def collect(stdout: str, plans: list[TestPlan | None]) -> Reports:
    """Parse the event lines, checking each against the plan (ids, owners, multiplicity)."""
    owner: dict[int, tuple[int, bool]] = {}  # assertion id -> (test index, straight-line)
    aid = 0
    for t, p in enumerate(plans):
        for straight in (p.straight if p else []):
            owner[aid] = (t, straight)
            aid += 1
    r = Reports()

    def bad(why: str) -> Reports:
        r.tampered = why
        return r

    for line in stdout.splitlines():
        if not line.startswith(EVT_MARK):
            continue
        try:
            e = json.loads(line[len(EVT_MARK):])
        except (json.JSONDecodeError, RecursionError):
            return bad("malformed report")
        if type(e) is not dict:
            return bad("malformed report")
        keys = set(e)
        if keys in ({"sol"}, {"setup"}):
            k = keys.pop()
            if getattr(r, k) is not _MISSING or not _is_err(e[k]):
                return bad(f"{k} reported twice")
            setattr(r, k, e[k])
        elif keys == {"t", "end"}:
            t = e["t"]
            if type(t) is not int or not 0 <= t < len(plans) or t in r.ends or not _is_err(e["end"]):
                return bad("bad test end report")
            r.ends[t] = e["end"]
        elif keys in ({"t", "a", "v"}, {"t", "a", "err"}):
            a = e["a"]
            if type(a) is not int or a not in owner or owner[a][0] != e["t"]:
                return bad("report for an unknown assertion")
            if "v" in e and type(e["v"]) is not list or "err" in e and type(e["err"]) is not str:
                return bad("malformed assertion report")
            if owner[a][1] and a in r.events:
                return bad("straight-line assertion reported twice")
            r.events.setdefault(a, []).append(e)
        else:
            return bad("unknown report")
    return r


def _verdict(plan: TestPlan, first_id: int, r: Reports, end: Any) -> str | None:
    for j, (ap, straight) in enumerate(zip(plan.asserts, plan.straight)):
        evs = r.events.get(first_id + j, [])
        if straight and not evs:
            return end if isinstance(end, str) else "no_result"
        for ev in evs:
            if "err" in ev:
                return ev["err"][:300]
            try:
                values = [decode(v) for v in ev["v"]]
                ok = ap.holds(values)
            except (BadValue, HostEvalError, RecursionError) as exc:
                return f"bad value: {exc}"[:300]
            except Exception as exc:  # noqa: BLE001 - the dataset's expression failed on these values
                return f"{type(exc).__name__}: {exc}"[:300]
            if not ok:
                return f"AssertionError: {ap.source} (got {', '.join(repr(v)[:80] for v in values)})"[:300]
    if end is _MISSING:
        return "no_result"
    return end


def judge(plans: list[TestPlan | None], parse_errors: list[str | None], stdout: str,
          sandbox_problem: str | None, trust_unsealed: bool = True) -> dict[str, Any]:
    """The harness report: ``errors`` per test (None = passed), computed here from the probe values."""
    r = collect(stdout, plans)
    n = len(plans)
    unsealed = [i for i, p in enumerate(plans) if p is not None and not p.sealed]
    base = {"unsealed": unsealed, "tampered": r.tampered}
    if r.tampered:
        return {**base, "solution_error": None, "setup_error": None, "errors": [f"tampered: {r.tampered}"] * n}
    if r.sol is _MISSING:
        why = sandbox_problem or "no_result"
        return {**base, "solution_error": why, "setup_error": None, "errors": [why] * n}
    if r.sol is not None:
        return {**base, "solution_error": r.sol, "setup_error": None, "errors": ["solution_error"] * n}
    setup = None if r.setup is _MISSING else r.setup
    if setup is not None:
        return {**base, "solution_error": None, "setup_error": setup, "errors": ["setup_error"] * n}
    errors: list[str | None] = []
    first = 0
    for i, p in enumerate(plans):
        if p is None:
            errors.append(parse_errors[i])
            continue
        err = _verdict(p, first, r, r.ends.get(i, _MISSING))
        if err == "no_result" and sandbox_problem:
            err = sandbox_problem
        if err is None and not trust_unsealed and not p.sealed:
            err = "unsealed: the verdict would rest on the sandbox's word"
        errors.append(err)
        first += len(p.asserts)
    return {**base, "solution_error": None, "setup_error": setup, "errors": errors}
