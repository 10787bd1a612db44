"""Harnesses that run inside the sandbox, and the host side that turns their reports into results.

- ``run_python_asserts``: exec a solution, then each test snippet (a per-test timer). The tests
  are rewritten first (``shapes.py``, ``sealed.py``): inside, only the values the assertions need
  from the candidate's code are computed and reported; the assertions themselves, with their
  expected values, are evaluated on the host (``judge.py``) over plain data.

  Two processes run inside. ``ASSERT_HARNESS`` (the sandbox's pid 1) forks before it reads
  anything: the parent is the *supervisor*, which never runs candidate code; the child the
  *worker* (``ASSERT_WORKER``), whose memory therefore never held what the supervisor reads next.
  The supervisor reads its input from stdin (a per-run nonce, the tests, the limits; nothing is
  written to a file), makes itself non-dumpable (so a process of the same uid cannot ptrace it or
  open its /proc files: its fds, memory, environment), and hands the worker its part (no nonce)
  over a pipe. The worker loads the candidate's code as its own module ``solution``
  (``import __main__`` there gives that module, not the harness), then runs the tests in it as
  ``__main__`` (as a test script would), and sends its reports over a pipe to the supervisor.
  The supervisor forwards each line to the host tagged with the nonce as a claim of the worker's
  (``W``), and adds what it saw itself (``S``: how the worker ended). The host accepts only
  nonce-tagged lines: the candidate can neither write to the host's channel nor learn the tag.
  What the worker claims is still the candidate's word: it can lie about values or stop early,
  which is why the host requires one report per straight-line assertion and decides every
  verdict itself from values it never told the sandbox to expect.
- ``run_doc_checks``: parse a Dockerfile / Kubernetes YAML / Terraform text (schema-validate K8s
  with kubernetes-validate, parse HCL with python-hcl2) and evaluate trusted assertion
  expressions over the parsed document. No candidate code runs there (the document is only parsed),
  so its one-line JSON report (tagged ``RESULT_MARK``) is the harness' own.

The solution's own stdout goes to /dev/null inside the harness; reports travel on the worker's
pipe and the supervisor's dup of the original stdout, so a chatty solution cannot push them past
the cap.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Sequence

from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits, SandboxResult
from surrogate_dagster.sandbox.judge import HOST_BUDGET_S, judge
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

# One program, two processes. It forks first thing, before anything is read: the child becomes the
# worker (candidate code and probes; its memory never held the nonce), the parent the supervisor
# (pid 1 of the sandbox; never runs candidate code). The supervisor reads {"nonce", "worker": {...}}
# from stdin, hands the worker its part over a pipe, forwards the worker's report lines to the host
# as "<nonce> W <line>" and ends with "<nonce> S <how the worker ended>".
ASSERT_HARNESS = r'''
import json, os, select, signal, sys
MAX_LINE = 1 << 20
_spec_r, _spec_w = os.pipe()
_rep_r, _rep_w = os.pipe()
_pid = os.fork()
if _pid == 0:  # the worker: the host's stdin and stdout are closed before anything else runs
    _null = os.open(os.devnull, os.O_RDWR)
    os.dup2(_spec_r, 0)
    os.dup2(_null, 1)
    os.dup2(_rep_w, 3)
    for _fd in (_spec_r, _spec_w, _rep_r, _rep_w, _null):
        if _fd > 3:
            os.close(_fd)
    _w = {"__name__": "__sbx_worker__", "__builtins__": __builtins__}
    exec(compile(open("__sbx_worker__.py").read(), "__sbx_worker__.py", "exec"), _w)
    os._exit(0)

def supervise():
    os.close(_spec_r)
    os.close(_rep_w)
    raw = sys.stdin.buffer.read()
    spec = json.loads(raw)
    nonce = spec["nonce"].encode()
    worker_in = json.dumps(spec["worker"]).encode()
    del raw, spec
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    out = os.dup(1)  # the host's channel
    os.dup2(null, 1)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 then ignores it from the worker

    def send(kind, payload):
        data = nonce + b" " + kind + b" " + payload + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]

    try:  # not dumpable: the worker (same uid) can neither ptrace us nor open /proc/1/{fd,mem,environ}
        import ctypes
        dumpable = ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE
    except Exception:
        dumpable = False
    if not dumpable:
        os.kill(_pid, signal.SIGKILL)
        send(b"S", json.dumps({"setup_error": "prctl(PR_SET_DUMPABLE) failed"}).encode())
        return
    view = memoryview(worker_in)
    while view:
        try:
            view = view[os.write(_spec_w, view):]
        except BrokenPipeError:
            break
    os.close(_spec_w)
    try:
        pidfd = os.pidfd_open(_pid)
    except (AttributeError, OSError):
        pidfd = None
    buf = b""
    lines = 0
    watch = [_rep_r] + ([pidfd] if pidfd is not None else [])
    while True:
        ready, _, _ = select.select(watch, [], [])
        if pidfd is not None and pidfd in ready:  # the worker ended: take what it wrote, stop there
            os.set_blocking(_rep_r, False)
            try:
                while len(buf) <= MAX_LINE:
                    chunk = os.read(_rep_r, 65536)
                    if not chunk:
                        break
                    buf += chunk
            except BlockingIOError:
                pass
            done = True
        else:
            chunk = os.read(_rep_r, 65536)
            buf += chunk
            done = not chunk
        *full, buf = buf.split(b"\n")
        for line in full:
            send(b"W", line)
            lines += 1
        if len(buf) > MAX_LINE:
            os.kill(_pid, signal.SIGKILL)
            send(b"S", json.dumps({"overflow": True}).encode())
            buf = b""
            done = True
        if done:
            break
    _, st = os.waitpid(_pid, 0)
    code = os.waitstatus_to_exitcode(st)
    send(b"S", json.dumps({"exit": code, "lines": lines, "partial": bool(buf)}).encode())
    return 128 - code if code < 0 else 0  # a worker killed by a signal: the sandbox sees which (cpu, memory)

os._exit(supervise() or 0)
'''

# The worker: runs the candidate's code and the probes (everything it says is untrusted). Its
# stdin is the supervisor's pipe (read whole, then /dev/null), fd 3 its report pipe.
ASSERT_WORKER = r'''
import json, os, signal, sys, types, builtins
sys.set_int_max_str_digits(0)
''' + ENCODER_SOURCE + r'''
def _worker():
    spec = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.set_inheritable(3, False)
    _write, _dumps, _setitimer, _mro_of = os.write, json.dumps, signal.setitimer, type
    def _evt(obj):
        data = (_dumps(obj) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[_write(3, view):]
    class _TestTimeout(BaseException):
        pass
    class _ProbeStop(BaseException):
        pass
    def _alarm(signum, frame):
        raise _TestTimeout()
    signal.signal(signal.SIGALRM, _alarm)
    def _fmt(e):
        return (type(e).__name__ + ": " + str(e))[:300] if str(e) else type(e).__name__
    cur = [None]
    def __sbx_probe__(k, thunks):
        vals = []
        for f in thunks:
            try:
                vals.append(_sbx_encode(f()))
            except _TestTimeout:
                _evt({"t": cur[0], "a": k, "err": "timeout"})
                raise _ProbeStop("timeout")
            except BaseException as e:
                _evt({"t": cur[0], "a": k, "err": _fmt(e)})
                raise _ProbeStop(_fmt(e))
        _evt({"t": cur[0], "a": k, "v": vals})
    def __sbx_raises__(k, fn):
        try:
            fn()
        except _TestTimeout:
            _evt({"t": cur[0], "a": k, "err": "timeout"})
            raise _ProbeStop("timeout")
        except _ProbeStop:
            raise
        except BaseException as e:
            mro = [c.__module__ + "." + c.__qualname__ for c in _mro_of(e).__mro__]
            _evt({"t": cur[0], "a": k, "v": [_sbx_encode(mro)]})
            return
        _evt({"t": cur[0], "a": k, "v": [_sbx_encode(None)]})
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
    # the candidate's code is its own module: "solution" while it loads, "__main__" for the tests
    mod = types.ModuleType("solution")
    g = mod.__dict__
    g["__file__"] = os.path.join(os.getcwd(), spec["solution_file"])
    g["__builtins__"] = builtins
    sys.modules["solution"] = mod
    sys.modules["__main__"] = mod
    sys.path.insert(0, os.getcwd())
    per = spec["per_test_s"]
    sol_err = _run(open(spec["solution_file"]).read(), spec["solution_file"], g, spec["solution_s"])
    _evt({"sol": sol_err})
    g["__name__"] = "__main__"
    setup_err = None if sol_err or not spec["setup"] else _run(spec["setup"], "setup", g, per)
    _evt({"setup": setup_err})
    g["__sbx_probe__"] = __sbx_probe__
    g["__sbx_raises__"] = __sbx_raises__
    for i, test in enumerate(spec["tests"]):
        if sol_err or setup_err:
            break
        if test is None:
            continue  # not run: the host fails it without the sandbox's word
        cur[0] = i
        _evt({"t": i, "end": _run(test, "test_%d" % i, g, per)})
_worker()
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


def _sent(plan: TestPlan | None, trust_unsealed: bool) -> str | None:
    """A test's code as the worker runs it. An unsealed one the host fails without the sandbox's
    word is not sent: its code (a table of expected values in a loop, say) stays out of the
    sandbox. One without any assertion fails too, but still runs: it holds no comparison, and
    later tests may use what it sets up."""
    if plan is None:
        return "raise SyntaxError('test does not parse')"
    if plan.asserts and not plan.sealed and not trust_unsealed:
        return None
    return plan.child_source


def assert_files(code: str) -> dict[str, str]:
    """The files the assert harness needs in the sandbox: the candidate's code and the worker's
    program. Nothing of the tests is among them (they travel on the supervisor's stdin)."""
    return {"solution.py": code, "__sbx_worker__.py": ASSERT_WORKER}


def assert_input(plans: list[TestPlan | None], setup: str = "", *, nonce: str, per_test_s: float = 5.0,
                 solution_s: float = 10.0, trust_unsealed: bool = False) -> bytes:
    """The supervisor's stdin: the nonce (it keeps it) and the worker's part: the rewritten tests
    (probes only; no expected value of a sealed assertion), limits, setup."""
    worker = {"solution_file": "solution.py", "setup": setup, "per_test_s": per_test_s, "solution_s": solution_s,
              "tests": [_sent(p, trust_unsealed) for p in plans]}
    return json.dumps({"nonce": nonce, "worker": worker}).encode()


def run_python_asserts(sandbox: Sandbox, code: str, tests: Sequence[str], setup: str = "", *,
                       per_test_s: float = 5.0, solution_s: float = 10.0,
                       limits: SandboxLimits | None = None,
                       extra_files: dict[str, str] | None = None,
                       trust_unsealed: bool = False, host_budget_s: float | None = HOST_BUDGET_S) -> HarnessRun:
    """Exec ``code`` as module ``solution``, then each test in order as ``__main__``; the report's
    ``errors`` hold one entry per test (None = passed), decided on the host from the probe values.

    ``report["unsealed"]`` lists the tests whose verdict would rest on the sandbox reporting
    honestly (see ``sealed.py``): they fail, and are not run, unless ``trust_unsealed``. A test
    without an assertion fails. ``host_budget_s``: the host's time for judging this run; past it
    every test fails with the reason."""
    plans, parse_errors = plan_tests(code, tests)
    nonce = secrets.token_hex(16)
    files = {**(extra_files or {}), **assert_files(code)}
    stdin = assert_input(plans, setup, nonce=nonce, per_test_s=per_test_s, solution_s=solution_s,
                         trust_unsealed=trust_unsealed)
    result = sandbox.run(ASSERT_HARNESS, files=files, stdin=stdin, limits=limits)
    report = judge(plans, parse_errors, result.stdout, result.killed_reason, trust_unsealed, nonce=nonce,
                   budget_s=host_budget_s)
    problem = report["solution_error"] if report["solution_error"] in (result.killed_reason, "no_result") else None
    return HarnessRun(report, result, problem=problem)


def run_doc_checks(sandbox: Sandbox, kind: str, text: str, asserts: Sequence[str], *,
                   k8s_version: str = "1.30.0", per_test_s: float = 2.0,
                   limits: SandboxLimits | None = None) -> HarnessRun:
    """Parse/validate a dockerfile|kubernetes|terraform document and evaluate ``asserts``."""
    spec = {"kind": kind, "asserts": list(asserts), "k8s_version": k8s_version, "per_test_s": per_test_s}
    files = {"__sbx_doc__": text, "__sbx_spec__.json": json.dumps(spec)}
    return _parse_report(sandbox.run(DOC_HARNESS, files=files, limits=limits))
