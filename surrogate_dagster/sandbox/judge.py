"""Host-side verdicts for the assert harness: untrusted probe reports in, per-test errors out.

The host reads only lines tagged with the run's nonce, which only the supervisor holds
(``runners.py``): ``<nonce> S <json>`` is the supervisor's own account of how the worker ended,
``<nonce> W <json>`` a claim of the worker's (the candidate's process). Any other output means
something else wrote to the channel: the run is tampered and every test fails.

A claim can only supply values for a probe (which the host then checks against expectations the
sandbox never saw) or say that a test stopped early (which can only fail it). Reports that break
the protocol (a straight-line assertion reported twice, an unknown id, a malformed line) mark the
whole run as tampered. Only ``holds`` decides that an assertion passed; a test passes only when
every straight-line assertion of it was reported once and held, a test that asserts nothing
fails, and an unsealed test (``sealed.py``) fails unless the caller trusts the sandbox's word
(``trust_unsealed``; then it still fails when none of its assertions reported).

The values are the candidate's, so the host's work is bounded per sample (``plain.Budget``):
decoded nodes capped, number texts capped, sets and dicts built only from elements that do not
share hash values in bulk, comparisons linear, and a clock (``budget_s``): past it the sample
fails, every test with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from surrogate_dagster.sandbox.plain import BadValue, Budget, HostBudgetExceeded, budget_scope, decode
from surrogate_dagster.sandbox.sealed import HostEvalError, TestPlan

HOST_BUDGET_S = 10.0  # host seconds for judging one sample (a whole run of the harness)
_MISSING = object()


@dataclass
class Reports:
    """What the sandbox claimed, grouped; ``tampered`` says why the claims cannot be used."""

    sol: Any = _MISSING
    setup: Any = _MISSING
    ends: dict[int, Any] = field(default_factory=dict)
    events: dict[int, list[dict]] = field(default_factory=dict)  # assertion id -> reports
    tampered: str | None = None
    worker: dict = field(default_factory=dict)  # the supervisor's account (exit status, ...)


def _is_err(x: Any) -> bool:
    return x is None or type(x) is str


def frame_claims(events: Iterable[dict], nonce: str, exit_code: int = 0) -> str:
    """The output a supervisor writes for a worker that reported ``events`` (tests, probes)."""
    lines = [f"{nonce} W {json.dumps(e)}" for e in events]
    lines.append(f"{nonce} S {json.dumps({'exit': exit_code, 'lines': len(lines), 'partial': False})}")
    return "\n".join(lines) + "\n"


def collect(stdout: str, plans: list[TestPlan | None], nonce: str) -> Reports:
    """Parse the nonce-tagged lines, checking each claim against the plan (ids, owners, multiplicity)."""
    owner: dict[int, tuple[int, bool]] = {}  # assertion id -> (test index, straight-line)
    aid = 0
    for t, p in enumerate(plans):
        for straight in (p.straight if p else []):
            owner[aid] = (t, straight)
            aid += 1
    r = Reports()
    prefix = nonce + " "

    def bad(why: str) -> Reports:
        r.tampered = why
        return r

    if len(nonce) < 16:
        return bad("no nonce")
    for line in stdout.split("\n"):
        if not line:
            continue
        if not line.startswith(prefix) or line[len(prefix) + 1:len(prefix) + 2] != " ":
            return bad("output the harness did not write")
        kind, payload = line[len(prefix)], line[len(prefix) + 2:]
        try:
            e = json.loads(payload)
        except (json.JSONDecodeError, RecursionError, ValueError):
            return bad("malformed report")
        if type(e) is not dict:
            return bad("malformed report")
        if kind == "S":
            r.worker.update(e)
            continue
        if kind != "W":
            return bad("unknown channel")
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
    if r.worker.get("overflow"):
        return bad("a report line over the size limit")
    return r


def _verdict(plan: TestPlan, first_id: int, r: Reports, end: Any) -> str | None:
    if not plan.asserts:
        return "no assertion: a test must assert something"
    reported = False
    for j, (ap, straight) in enumerate(zip(plan.asserts, plan.straight)):
        evs = r.events.get(first_id + j, [])
        if straight and not evs:
            return end if isinstance(end, str) else "no_result"
        for ev in evs:
            reported = True
            if "err" in ev:
                return ev["err"][:300]
            try:
                values = [decode(v) for v in ev["v"]]
                ok = ap.holds(values)
            except HostBudgetExceeded:
                raise
            except (BadValue, HostEvalError, RecursionError) as exc:
                return f"bad value: {exc}"[:300]
            except Exception as exc:  # noqa: BLE001 - the dataset's expression failed on these values
                return f"{type(exc).__name__}: {exc}"[:300]
            if not ok:
                return ap.failure(values)[:300]
    if end is _MISSING:
        return "no_result"
    if end is None and not reported:
        return "no assertion ran"
    return end


def judge(plans: list[TestPlan | None], parse_errors: list[str | None], stdout: str,
          sandbox_problem: str | None, trust_unsealed: bool = False, *, nonce: str,
          budget_s: float | None = HOST_BUDGET_S) -> dict[str, Any]:
    """The harness report: ``errors`` per test (None = passed), computed here from the probe values.

    ``nonce``: the run's (what the supervisor tags its lines with). ``budget_s``: the host's time
    for this sample; past it every test fails with ``host_budget: ...``."""
    unsealed = [i for i, p in enumerate(plans) if p is not None and p.asserts and not p.sealed]
    base = {"unsealed": unsealed, "no_assert": [i for i, p in enumerate(plans) if p is not None and not p.asserts]}
    with budget_scope(Budget(budget_s)):
        try:
            return _judge(plans, parse_errors, stdout, sandbox_problem, trust_unsealed, nonce, base)
        except HostBudgetExceeded as e:
            why = f"host_budget: {e}"
            return {**base, "tampered": None, "solution_error": None, "setup_error": None,
                    "errors": [why] * len(plans), "host_budget_exceeded": True}


def _judge(plans: list[TestPlan | None], parse_errors: list[str | None], stdout: str, sandbox_problem: str | None,
           trust_unsealed: bool, nonce: str, base: dict[str, Any]) -> dict[str, Any]:
    r = collect(stdout, plans, nonce)
    n = len(plans)
    base = {**base, "tampered": r.tampered, "worker": r.worker}
    if r.tampered:
        return {**base, "solution_error": None, "setup_error": None, "errors": [f"tampered: {r.tampered}"] * n}
    if r.worker.get("setup_error"):
        why = f"harness: {r.worker['setup_error']}"
        return {**base, "solution_error": why, "setup_error": None, "errors": [why] * n}
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
        if p.asserts and not p.sealed and not trust_unsealed:
            err: str | None = "unsealed: the verdict would rest on the sandbox's word"
        else:
            err = _verdict(p, first, r, r.ends.get(i, _MISSING))
            if err == "no_result" and sandbox_problem:
                err = sandbox_problem
        errors.append(err)
        first += len(p.asserts)
    return {**base, "solution_error": None, "setup_error": setup, "errors": errors}
