"""Harnesses that run inside the sandbox and report per-check results as one JSON line.

- ``run_python_asserts``: exec a solution, then each test snippet separately (one process), with a
  per-test timer; counts passes. Used by the code graders and reusable by the evals.
- ``run_doc_checks``: parse a Dockerfile / Kubernetes YAML / Terraform text (schema-validate K8s
  with kubernetes-validate, parse HCL with python-hcl2) and evaluate trusted assertion
  expressions over the parsed document.

The solution's own stdout goes to /dev/null inside the harness; results travel on a dup of the
original stdout, tagged with ``RESULT_MARK``, so a chatty solution cannot push them past the cap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits, SandboxResult

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

ASSERT_HARNESS = _PRELUDE + r'''
g = {"__name__": "solution", "__builtins__": __builtins__}
sys.path.insert(0, os.getcwd())
per = SPEC["per_test_s"]
sol_err = _run(open(SPEC["solution_file"]).read(), SPEC["solution_file"], g, SPEC["solution_s"])
setup_err = None if sol_err or not SPEC["setup"] else _run(SPEC["setup"], "setup", g, per)
errors = []
for i, test in enumerate(SPEC["tests"]):
    if sol_err or setup_err:
        errors.append("solution_error" if sol_err else "setup_error")
        continue
    before = {k for k in g if k.startswith("test_")}
    err = _run(test, "test_%d" % i, g, per)
    if err is None:  # pytest-style snippets: call the test functions they define
        for name in sorted(k for k in g if k.startswith("test_") and k not in before and callable(g[k])):
            err = _run(name + "()", name, g, per)
            if err:
                break
    errors.append(err)
_emit({"solution_error": sol_err, "setup_error": setup_err, "errors": errors})
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


def run_python_asserts(sandbox: Sandbox, code: str, tests: Sequence[str], setup: str = "", *,
                       per_test_s: float = 5.0, solution_s: float = 10.0,
                       limits: SandboxLimits | None = None,
                       extra_files: dict[str, str] | None = None) -> HarnessRun:
    """Exec ``code`` as module ``solution`` then each test in order; report per-test errors."""
    spec = {"solution_file": "solution.py", "setup": setup, "tests": list(tests),
            "per_test_s": per_test_s, "solution_s": solution_s}
    files = {**(extra_files or {}), "solution.py": code, "__sbx_spec__.json": json.dumps(spec)}
    return _parse_report(sandbox.run(ASSERT_HARNESS, files=files, limits=limits))


def run_doc_checks(sandbox: Sandbox, kind: str, text: str, asserts: Sequence[str], *,
                   k8s_version: str = "1.30.0", per_test_s: float = 2.0,
                   limits: SandboxLimits | None = None) -> HarnessRun:
    """Parse/validate a dockerfile|kubernetes|terraform document and evaluate ``asserts``."""
    spec = {"kind": kind, "asserts": list(asserts), "k8s_version": k8s_version, "per_test_s": per_test_s}
    files = {"__sbx_doc__": text, "__sbx_spec__.json": json.dumps(spec)}
    return _parse_report(sandbox.run(DOC_HARNESS, files=files, limits=limits))
