"""Harnesses that run inside the sandbox, and the host side that turns their reports into results.

- ``run_python_asserts``: exec a solution, then each test snippet (one process, a per-test timer).
  The tests are rewritten first (``sealed.py``): inside, only the values the assertions need from
  the candidate's code are computed and reported; the assertions themselves, with their expected
  values, are evaluated on the host (``judge.py``) over plain data. The candidate shares its
  interpreter with the probes, so it can lie about values or stop early, but it never sees what
  the values must be and no report from inside can say "passed".
- ``run_doc_checks``: parse a Dockerfile / Kubernetes YAML / Terraform text (schema-validate K8s
  with kubernetes-validate, parse HCL with python-hcl2) and evaluate trusted assertion
  expressions over the parsed document. No candidate code runs there (the document is only parsed),
  so its one-line JSON report (tagged ``RESULT_MARK``) is the harness' own.

The solution's own stdout goes to /dev/null inside the harness; reports travel on a dup of the
original stdout, so a chatty solution cannot push them past the cap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits, SandboxResult
from surrogate_dagster.sandbox.judge import judge
from surrogate_dagster.sandbox.plain import ENCODER_SOURCE
from surrogate_dagster.sandbox.sealed import TestPlan, plan_test, top_level_names

RESULT_MARK = "__SBX_RESULT__"

_PRELUDE = r'''
import json, os, signal, sys
_out = os.fdopen(os.dup(1), "w")
_null = os.open(os.devnull, os.O_WRONLY)
os.dup2(_null, 1)
class _TestTimeout(BaseException):
    pass
def _alarm(signum, frame):
    raise _TestTimeout()
signal.signal(signal.SIGALRM, _alarm)
SPEC = json.load(open("__sbx_spec__.json"))
def _run(code, name, g, seconds):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        exec(compile(code, name, "exec"), g)
        return None
    except _TestTimeout:
        return "timeout"
    except AssertionError as e:
        return ("AssertionError: " + str(e))[:300] if str(e) else "AssertionError"
    except BaseException as e:
        return (type(e).__name__ + ": " + str(e))[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
def _emit(obj):
    _out.write("__SBX_RESULT__" + json.dumps(obj) + "\n")
    _out.flush()
    os._exit(0)
'''

# The candidate's code and the probes run in one interpreter: everything that comes out of it is
# untrusted. It reports probe values and how each test ended; verdicts are made on the host
# (``judge``) against expected values that never enter the sandbox (``sealed.py``).
ASSERT_HARNESS = r'''
import json, os, signal, sys
sys.set_int_max_str_digits(0)
''' + ENCODER_SOURCE + r'''
_out = os.fdopen(os.dup(1), "w")
_null = os.open(os.devnull, os.O_WRONLY)
os.dup2(_null, 1)
_dumps, _write, _flush, _setitimer = json.dumps, _out.write, _out.flush, signal.setitimer
class _TestTimeout(BaseException):
    pass
class _ProbeStop(BaseException):
    pass
def _alarm(signum, frame):
    raise _TestTimeout()
signal.signal(signal.SIGALRM, _alarm)
SPEC = json.load(open("__sbx_spec__.json"))
def _evt(obj):
    _write("__SBX_EVT__" + _dumps(obj) + "\n")
    _flush()
def _fmt(e):
    return (type(e).__name__ + ": " + str(e))[:300] if str(e) else type(e).__name__
_cur = [None]
def __sbx_probe__(k, thunks):
    vals = []
    for f in thunks:
        try:
            vals.append(_sbx_encode(f()))
        except _TestTimeout:
            _evt({"t": _cur[0], "a": k, "err": "timeout"})
            raise _ProbeStop("timeout")
        except BaseException as e:
            _evt({"t": _cur[0], "a": k, "err": _fmt(e)})
            raise _ProbeStop(_fmt(e))
    _evt({"t": _cur[0], "a": k, "v": vals})
def _run(code, name, g, seconds):
    _setitimer(signal.ITIMER_REAL, seconds)
    try:
        exec(compile(code, name, "exec"), g)
        return None
    except _TestTimeout:
        return "timeout"
    except _ProbeStop as e:
        return str(e)
    except BaseException as e:
        return _fmt(e)
    finally:
        _setitimer(signal.ITIMER_REAL, 0)
g = {"__name__": "solution", "__builtins__": __builtins__}
sys.path.insert(0, os.getcwd())
per = SPEC["per_test_s"]
sol_err = _run(open(SPEC["solution_file"]).read(), SPEC["solution_file"], g, SPEC["solution_s"])
_evt({"sol": sol_err})
setup_err = None if sol_err or not SPEC["setup"] else _run(SPEC["setup"], "setup", g, per)
_evt({"setup": setup_err})
g["__sbx_probe__"] = __sbx_probe__
for i, test in enumerate(SPEC["tests"]):
    if sol_err or setup_err:
        break
    _cur[0] = i
    _evt({"t": i, "end": _run(test, "test_%d" % i, g, per)})
os._exit(0)
'''

DOC_HARNESS = _PRELUDE + r'''
import re
KIND = SPEC["kind"]
TEXT = open("__sbx_doc__").read()

def parse_dockerfile(text):
    """Instructions with continuation lines joined; comments and parser directives dropped."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        parts = buf.split(None, 1)
        out.append({"cmd": parts[0].upper(), "value": parts[1].strip() if len(parts) > 1 else "", "line": start})
        buf = ""
    if buf:
        raise ValueError("dangling line continuation at end of file")
    if not out or out[0]["cmd"] not in ("FROM", "ARG"):
        raise ValueError("a Dockerfile must start with FROM (or ARG)")
    return out

def unquote(v):
    return v[1:-1] if isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] == '"' else v

def _tf_clean(x):
    if isinstance(x, dict):
        return {unquote(k): _tf_clean(v) for k, v in x.items() if k != "__is_block__"}
    if isinstance(x, list):
        return [_tf_clean(v) for v in x]
    return unquote(x)

def blocks(body, name):
    """Nested HCL blocks / YAML lists as a list of dicts, whatever shape the parser chose."""
    v = body.get(name) if isinstance(body, dict) else None
    if isinstance(v, dict):
        return [v]
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []

def get(obj, *path, default=None):
    """obj[a][b]... with lists indexed by int; ``default`` when any step is missing."""
    for p in path:
        try:
            obj = obj[p]
        except (KeyError, IndexError, TypeError):
            return default
    return obj

res = {"parse_ok": False, "parse_error": None, "validation_errors": [], "asserts": []}
env = {"re": re, "any": any, "all": all, "len": len, "blocks": blocks, "get": get}
try:
    if KIND == "dockerfile":
        doc = parse_dockerfile(TEXT)
        env["instructions"] = lambda cmd: [i["value"] for i in doc if i["cmd"] == cmd.upper()]
    elif KIND == "kubernetes":
        import yaml
        doc = [d for d in yaml.safe_load_all(TEXT) if d is not None]
        if not doc or not all(isinstance(d, dict) for d in doc):
            raise ValueError("expected one or more YAML mappings")
        import kubernetes_validate
        for i, d in enumerate(doc):
            try:
                kubernetes_validate.validate(d, SPEC["k8s_version"], strict=True)
            except Exception as e:
                res["validation_errors"].append("doc %d (%s): %s" % (i, d.get("kind"), str(e).splitlines()[0][:300]))
        def pod_specs(kind=None):
            out = []
            for d in doc:
                if kind and d.get("kind") != kind:
                    continue
                s = d.get("spec") or {}
                for path in (("template", "spec"), ("jobTemplate", "spec", "template", "spec"), ()):
                    cur = s
                    for p in path:
                        cur = (cur or {}).get(p) if isinstance(cur, dict) else None
                    if isinstance(cur, dict) and "containers" in cur:
                        out.append(cur)
                        break
            return out
        env["pod_specs"] = pod_specs
        env["containers"] = lambda kind=None: [c for p in pod_specs(kind) for c in (p.get("containers") or [])]
        env["kinds"] = [d.get("kind") for d in doc]
    elif KIND == "terraform":
        import hcl2
        doc = _tf_clean(hcl2.loads(TEXT))
        def resources(rtype):
            return [body for block in doc.get("resource", []) for t, named in block.items() if t == rtype
                    for body in named.values()]
        env["resources"] = resources
    else:
        raise ValueError("unknown document kind %r" % KIND)
    res["parse_ok"] = True
except BaseException as e:
    res["parse_error"] = (type(e).__name__ + ": " + str(e))[:400]
if res["parse_ok"]:
    env["doc"] = doc
    env["text"] = TEXT
    for expr in SPEC["asserts"]:
        code = "if not (" + expr + "):\n    raise AssertionError(" + repr(expr[:120]) + ")\n"
        res["asserts"].append(_run(code, "assert", env, SPEC["per_test_s"]))
_emit(res)
'''


@dataclass
class HarnessRun:
    """Parsed harness output plus the raw sandbox result (``report`` is None when none came)."""

    report: dict[str, Any] | None
    sandbox: SandboxResult
    problem: str | None = None  # why no report: the sandbox's killed_reason or "no_result"
    extra: dict[str, Any] = field(default_factory=dict)


def _parse_report(result: SandboxResult) -> HarnessRun:
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                return HarnessRun(json.loads(line[len(RESULT_MARK):]), result)
            except json.JSONDecodeError:
                break
    return HarnessRun(None, result, problem=result.killed_reason or "no_result")


def plan_tests(code: str, tests: Sequence[str]) -> tuple[list[TestPlan | None], list[str | None]]:
    """Each test rewritten for the sandbox (None, with the reason, when it does not parse)."""
    names = top_level_names(code)
    plans: list[TestPlan | None] = []
    errors: list[str | None] = []
    first = 0
    for t in tests:
        try:
            p = plan_test(t, names, first)
        except (SyntaxError, ValueError) as e:
            plans.append(None)
            errors.append(f"{type(e).__name__}: {e}"[:300])
            continue
        plans.append(p)
        errors.append(None)
        first += len(p.asserts)
    return plans, errors


def assert_files(code: str, plans: list[TestPlan | None], setup: str = "", *, per_test_s: float = 5.0,
                 solution_s: float = 10.0) -> dict[str, str]:
    """The files the assert harness reads; they hold no expected value of a sealed assertion."""
    spec = {"solution_file": "solution.py", "setup": setup, "per_test_s": per_test_s, "solution_s": solution_s,
            "tests": [p.child_source if p else "raise SyntaxError('test does not parse')" for p in plans]}
    return {"solution.py": code, "__sbx_spec__.json": json.dumps(spec)}


def run_python_asserts(sandbox: Sandbox, code: str, tests: Sequence[str], setup: str = "", *,
                       per_test_s: float = 5.0, solution_s: float = 10.0,
                       limits: SandboxLimits | None = None,
                       extra_files: dict[str, str] | None = None,
                       trust_unsealed: bool = True) -> HarnessRun:
    """Exec ``code`` as module ``solution``, then each test in order; the report's ``errors`` hold
    one entry per test (None = passed), decided on the host from the probe values.

    ``report["unsealed"]`` lists the tests whose verdict rests on the sandbox reporting honestly
    (see ``sealed.py``); with ``trust_unsealed=False`` they fail instead."""
    plans, parse_errors = plan_tests(code, tests)
    files = {**(extra_files or {}), **assert_files(code, plans, setup, per_test_s=per_test_s,
                                                   solution_s=solution_s)}
    result = sandbox.run(ASSERT_HARNESS, files=files, limits=limits)
    report = judge(plans, parse_errors, result.stdout, result.killed_reason, trust_unsealed)
    problem = report["solution_error"] if report["solution_error"] in (result.killed_reason, "no_result") else None
    return HarnessRun(report, result, problem=problem)


def run_doc_checks(sandbox: Sandbox, kind: str, text: str, asserts: Sequence[str], *,
                   k8s_version: str = "1.30.0", per_test_s: float = 2.0,
                   limits: SandboxLimits | None = None) -> HarnessRun:
    """Parse/validate a dockerfile|kubernetes|terraform document and evaluate ``asserts``."""
    spec = {"kind": kind, "asserts": list(asserts), "k8s_version": k8s_version, "per_test_s": per_test_s}
    files = {"__sbx_doc__": text, "__sbx_spec__.json": json.dumps(spec)}
    return _parse_report(sandbox.run(DOC_HARNESS, files=files, limits=limits))
