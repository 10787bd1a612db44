"""LiveCodeBench code generation: release_v6 online, the LeetCode 2023-24 contest stand-in offline.

Problems are dated; only problems dated on or after ``cutoff`` (the model's training cutoff, from
assets/evals.yaml) are scored, so a model is not credited for problems it may have seen.

- Online: the raw ``test*.jsonl`` files of ``livecodebench/code_generation_lite`` (its loading script
  is refused by recent ``datasets``), pinned by revision. Private test cases are JSON
  or base64 -> zlib -> pickle -> JSON; the pickle is opened with a data-only unpickler.
- Offline stand-in: ``leetcode_contests_20240121-Jul.OpenCoder.jsonl`` (180 LeetCode contest problems,
  PROVENANCE.md); NOT LiveCodeBench, and every report says so. Its tests are assert scripts.

Prompts follow lcb_runner's generic chat format (system message + "### Question / ### Format /
### Answer").

Grading keeps the verdict out of the candidate's reach: the sandbox returns outputs only and the
host compares them with the expected outputs, which never enter it (``lcb_judge.py``, lcb_runner's
comparison rules). Inside, one trusted runner (the sandbox's pid 1, made non-dumpable so no other
process there can open its file descriptors or trace it) starts a fresh interpreter per problem
that runs the program against each test input in turn, as lcb_runner's ``grade_stdio`` /
``grade_call_based`` do: stdin tests with the input on fd 0 and ``sys.stdin``, ``sys.stdout``
captured; functional tests call ``Solution().<func_name>(*args)`` (one JSON value per input line)
and return the value as plain data; a per-test alarm of ``timeout_s``; the first timeout or error
stops the problem. The runner kills the problem at lcb_runner's global deadline
(``(timeout_s + 1) * tests + 5`` s) and passes on what came out, whatever it says. The stand-in's
assert scripts are read into the same functional tests (keyword arguments, expected value) where
their shape allows; the others run through the sealed assert harness (``sandbox/runners.py``),
also judged on the host, with unsealed tests failing.

Where this differs from lcb_runner: stdin is a real file (``open(0)``, ``sys.stdin.buffer`` read
the whole input; lcb_runner mocks ``sys.stdin`` and ``open``), output written straight to fd 1
is not captured (as there), a functional value that is not plain data (a numpy scalar, a custom
object) fails instead of being compared by its own ``__eq__``, and outputs past ``OUTPUT_CAP``
bytes per problem fail.
"""

from __future__ import annotations

import ast
import base64
import json
import zlib
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

from surrogate_dagster.sandbox import Sandbox, SandboxLimits
from surrogate_dagster.sandbox.plain import ENCODER_SOURCE
from surrogate_dagster.sandbox.runners import run_python_asserts

from ...inference import GenRequest, InferenceClient
from . import lcb_judge
from .common import BatchRunner, EvalReport, Timer, extract_python, pct, safe_loads, sha256_bytes

BENCHMARK = "livecodebench"
HF_REPO = "livecodebench/code_generation_lite"
SYSTEM = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
          "generate a correct Python program that matches the specification and passes all tests. You will NOT "
          "return anything except for the program.")
FMT_STARTER = ("You will use the following starter code to write the solution to the problem and enclose your "
               "code within delimiters.")
FMT_STDIN = ("Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on "
             "the sample inputs). Enclose your code within delimiters as follows.")
# lcb_runner's ``import_string``, prepended to every program (stdin and functional): star imports
# of these modules, then the modules themselves (so ``datetime``, ``copy``, ``random`` name the module)
_PRELUDE_MODULES = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                    "statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")
PREAMBLE = ("".join(f"from {m} import *\n" for m in _PRELUDE_MODULES)
            + "".join(f"import {m}\n" for m in _PRELUDE_MODULES if m not in ("builtins", "typing"))
            + "sys.setrecursionlimit(50000)\n")
# the whole batch (every problem's outputs pass through stdout); per problem, OUTPUT_CAP
OUTPUT_CAP = 32 << 20
BATCH_SIZE = 4
RUN_LIMITS = SandboxLimits(memory_mb=None, nproc=64, cpu_s=600, wall_s=600,
                           stdout_bytes=BATCH_SIZE * OUTPUT_CAP + (1 << 20), fsize_mb=64, tmpfs_mb=256)
# the report's metric ``scorer``: what decided the verdicts, and what holds it to lcb_runner's
SCORER = ("project host comparator (evals/harness/lcb_judge.py) with lcb_runner's testing_util rules; "
          "parity-tested against nvidia-livecodebench 26.3 (tests/env/test_lcb_parity.py)")
CHILD_FILE = "__lcb_child__.py"

# One problem in a fresh interpreter: reads its spec (code, inputs, no expected output) from
# stdin, then writes one JSON record per test on its original stdout; everything here runs
# beside the candidate's code, so the host treats every record as the candidate's claim.
_CHILD = r'''
import io, json, os, signal, sys
sys.set_int_max_str_digits(50000)
_spec = json.loads(sys.stdin.read())
_rep = os.fdopen(os.dup(1), "w")
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 1)
os.dup2(_null, 0)
''' + ENCODER_SOURCE + r'''
_dumps, _write, _flush, _setitimer, _exec = json.dumps, _rep.write, _rep.flush, signal.setitimer, exec
class _Timeout(BaseException):
    pass
def _alarm(*_):
    raise _Timeout()
signal.signal(signal.SIGALRM, _alarm)
def _rec(obj):
    _write(_dumps(obj) + "\n")
    _flush()
def _fmt(e):
    return (type(e).__name__ + ": " + str(e))[:300]
T = _spec["timeout_s"]
if _spec["mode"] == "stdin":
    try:
        code = compile(_spec["code"], "solution.py", "exec")
    except BaseException as e:
        _rec({"compile": _fmt(e)})
        os._exit(0)
    _rec({"compile": None})
    for t in _spec["tests"]:
        fd = os.memfd_create("stdin")
        view = memoryview(t["input"].encode())
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, 0)
        os.dup2(fd, 0)
        os.close(fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        buf = io.BytesIO()
        sys.stdout = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        err = None
        _setitimer(signal.ITIMER_REAL, T)
        try:
            _exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        except SystemExit:
            pass
        except _Timeout:
            err = "timeout"
        except BaseException as e:
            err = "runtime: " + _fmt(e)
        finally:
            _setitimer(signal.ITIMER_REAL, 0)
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        if err:
            _rec({"err": err})
            break
        _rec({"out": buf.getvalue().decode("utf-8", "replace")})
else:
    g = {"__name__": "tmp_sol", "__builtins__": __builtins__}
    _setitimer(signal.ITIMER_REAL, T)
    try:
        _exec(compile(_spec["code"], "solution.py", "exec"), g)
        obj = g["Solution"]() if "class Solution" in _spec["code"] else None
        method = getattr(obj, _spec["fn_name"]) if obj is not None else g[_spec["fn_name"]]
        _setitimer(signal.ITIMER_REAL, 0)
        _rec({"compile": None})
    except BaseException as e:
        _setitimer(signal.ITIMER_REAL, 0)
        _rec({"compile": "timeout" if isinstance(e, _Timeout) else _fmt(e)})
        os._exit(0)
    for t in _spec["tests"]:
        err = None
        _setitimer(signal.ITIMER_REAL, T)
        try:
            if "kwargs" in t:
                pred = method(**t["kwargs"])
            else:
                pred = method(*[json.loads(line) for line in t["input"].split("\n")])
        except _Timeout:
            err = "timeout"
        except BaseException as e:
            err = "runtime: " + _fmt(e)
        finally:
            _setitimer(signal.ITIMER_REAL, 0)
        if err:
            _rec({"err": err})
            break
        try:
            _rec({"v": _sbx_encode(pred)})
        except BaseException as e:
            _rec({"enc": "not plain data: " + _fmt(e)})
os._exit(0)
'''

# The trusted side inside the sandbox (pid 1): one child per problem, killed at its deadline;
# every other process of the namespace is killed before the next problem starts.
_RUNNER = r'''
import ctypes, selectors, signal, subprocess, time
if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0
    raise SystemExit("prctl(PR_SET_DUMPABLE) failed")
def _clean():
    try:
        os.kill(-1, signal.SIGKILL)  # from the namespace's init: every process but itself
    except ProcessLookupError:
        pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
for item in ITEMS:
    spec = json.dumps({k: item[k] for k in ("mode", "code", "fn_name", "tests", "timeout_s")}).encode()
    p = subprocess.Popen([sys.executable, "-s", "__lcb_child__.py"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
    deadline = time.monotonic() + item["deadline_s"]
    status, out = "ok", bytearray()
    try:
        p.stdin.write(spec)
        p.stdin.close()
    except BrokenPipeError:
        pass
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            status = "global_timeout"
            break
        if not sel.select(left):
            continue
        chunk = os.read(p.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        out += chunk
        if len(out) > item["out_cap"]:
            status = "output_limit"
            break
    sel.close()
    _clean()
    p.stdout.close()
    records = []
    for line in bytes(out).decode("utf-8", "replace").split("\n"):
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                records.append({"bad": line[:200]})
    emit({"i": item["i"], "records": records, "status": status})
'''


@dataclass
class Problem:
    """One dated problem with its tests, in the runner's terms."""

    id: str
    title: str
    date: date
    difficulty: str
    question: str
    starter_code: str
    mode: str  # asserts | functional | stdin
    tests: list
    fn_name: str = ""
    platform: str = "leetcode"


def _decode_tests(raw: str) -> list[dict]:
    """LCB test cases: a JSON string, or base64 -> zlib -> pickle (a JSON string)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return json.loads(safe_loads(zlib.decompress(base64.b64decode(raw))))


def parse_lcb_row(row: dict) -> Problem:
    """A row of code_generation_lite's test*.jsonl."""
    tests = _decode_tests(row["public_test_cases"]) + _decode_tests(row["private_test_cases"])
    meta = json.loads(row.get("metadata") or "{}")
    modes = {t["testtype"] for t in tests}
    if len(modes) != 1:
        raise ValueError(f"{row['question_id']}: mixed test types {modes}")
    mode = "functional" if modes == {"functional"} else "stdin"
    return Problem(id=str(row["question_id"]), title=row["question_title"],
                   date=datetime.fromisoformat(row["contest_date"]).date(), difficulty=row["difficulty"],
                   question=row["question_content"], starter_code=row.get("starter_code") or "", mode=mode,
                   tests=[{"input": t["input"], "output": t["output"]} for t in tests],
                   fn_name=meta.get("func_name", ""), platform=row["platform"])


def _json_exact(x: object) -> bool:
    """True when ``x`` survives a JSON round trip with its types (no tuple, set, non-str key, nan)."""
    if x is None or type(x) in (bool, int, str):
        return True
    if type(x) is float:
        return x == x and x not in (float("inf"), float("-inf"))
    if type(x) is list:
        return all(_json_exact(v) for v in x)
    if type(x) is dict:
        return all(type(k) is str and _json_exact(v) for k, v in x.items())
    return False


def standin_functional_tests(test: str) -> tuple[str, list[dict]] | None:
    """The stand-in's assert script as functional tests, ``(fn_name, [{"kwargs", "output"}])``, when it
    is ``my_solution = Solution()`` then pairs of ``test_input = {literal}`` and
    ``assert my_solution.<fn>(**test_input) == <literal>``; None for any other shape."""
    body = ast.parse(test).body
    if not body or ast.unparse(body[0]) != "my_solution = Solution()" or len(body) % 2 != 1:
        return None
    fn, tests = None, []
    for assign, check in zip(body[1::2], body[2::2]):
        if not (isinstance(assign, ast.Assign) and ast.unparse(assign.targets) == "test_input"
                and isinstance(check, ast.Assert) and isinstance(check.test, ast.Compare)):
            return None
        cmp = check.test
        call = cmp.left
        if not (len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.Eq) and isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) == "my_solution"
                and not call.args and len(call.keywords) == 1 and call.keywords[0].arg is None
                and ast.unparse(call.keywords[0].value) == "test_input"):
            return None
        try:
            kwargs, want = ast.literal_eval(assign.value), ast.literal_eval(cmp.comparators[0])
        except (ValueError, SyntaxError):
            return None
        if type(kwargs) is not dict or not _json_exact(kwargs) or not _json_exact(want) \
                or (fn is not None and call.func.attr != fn):
            return None
        fn = call.func.attr
        tests.append({"kwargs": kwargs, "output": json.dumps(want)})
    return (fn, tests) if fn else None


def parse_standin_row(row: dict) -> Problem:
    """A row of the LeetCode contest stand-in: docstring question + starter; its assert script read
    into functional tests where the shape allows (``standin_functional_tests``), else kept whole."""
    prompt = row["prompt"]
    if not prompt.startswith('"""'):
        raise ValueError(f"{row['task_id']}: expected the question as a leading docstring")
    body, _, starter = prompt[3:].partition('"""')
    meta = row["meta"] if isinstance(row["meta"], dict) else ast.literal_eval(row["meta"])
    functional = standin_functional_tests(row["test"])
    mode, fn, tests = ("functional", *functional) if functional else ("asserts", "", [row["test"]])
    return Problem(id=row["task_id"], title=meta.get("title", row["title"]),
                   date=datetime.fromtimestamp(int(row["start_time"]), tz=timezone.utc).date(),
                   difficulty=str(meta.get("difficulty", "")).lower(), question=body.strip(),
                   starter_code=starter.strip("\n").rstrip(), mode=mode, tests=tests, fn_name=fn)


def load_standin(path: str | Path) -> list[Problem]:
    return [parse_standin_row(json.loads(line)) for line in Path(path).read_text().splitlines() if line.strip()]


def load_lcb_files(paths: Iterable[str | Path]) -> list[Problem]:
    out = []
    for p in paths:
        for line in Path(p).read_text().splitlines():
            if line.strip():
                out.append(parse_lcb_row(json.loads(line)))
    return out


def download_release(files: Sequence[str], revision: str, cache_dir: str | None = None) -> list[Path]:
    """The release's raw files from the Hub (online only)."""
    from huggingface_hub import hf_hub_download

    return [Path(hf_hub_download(HF_REPO, f, repo_type="dataset", revision=revision, cache_dir=cache_dir))
            for f in files]


def build_request(p: Problem, max_new_tokens: int) -> GenRequest:
    """lcb_runner's generic chat prompt."""
    user = f"### Question:\n{p.question}\n\n"
    if p.starter_code:
        user += f"### Format: {FMT_STARTER}\n```python\n{p.starter_code}\n```\n\n"
    else:
        user += f"### Format: {FMT_STDIN}\n```python\n# YOUR CODE HERE\n```\n\n"
    user += "### Answer: (use the provided format with backticks)\n\n"
    return GenRequest(messages=({"role": "system", "content": SYSTEM}, {"role": "user", "content": user}),
                      max_new_tokens=max_new_tokens)


def deadline_s(timeout_s: float, n_tests: int) -> float:
    """lcb_runner's global timeout of one program (``check_correctness``)."""
    return (timeout_s + 1) * n_tests + 5


def run_programs(sandbox: Sandbox, problems: Sequence[Problem], codes: Sequence[str], *, timeout_s: float = 6.0,
                 batch_size: int = BATCH_SIZE, workers: int = 2,
                 log: Callable[[str], None] | None = None) -> list[dict]:
    """Each program's verdict on its problem's tests: the sandbox runs it and returns outputs,
    the host judges them (``lcb_judge``). One dict per program: ``passed``, ``passed_tests``,
    ``error`` (None when passed) and ``detail``."""
    out: list[dict | None] = [None] * len(problems)
    items = []
    for i, (p, c) in enumerate(zip(problems, codes)):
        if p.mode == "asserts":
            out[i] = _run_asserts(sandbox, p, c, timeout_s)
            continue
        inputs = [{"kwargs": t["kwargs"]} if "kwargs" in t else {"input": t["input"]} for t in p.tests]
        items.append({"i": i, "mode": p.mode, "tests": inputs, "fn_name": p.fn_name, "timeout_s": timeout_s,
                      "code": PREAMBLE + c, "deadline_s": deadline_s(timeout_s, len(p.tests)),
                      "out_cap": OUTPUT_CAP})
    if items:
        runner = BatchRunner(sandbox, _RUNNER, files={CHILD_FILE: _CHILD}, limits=RUN_LIMITS,
                             batch_size=batch_size, workers=workers, env={"OPENBLAS_NUM_THREADS": "1"}, log=log)
        per_item = max(it["deadline_s"] for it in items) + 2  # + the child interpreter's start
        for it, res in zip(items, runner.run(items, per_item_wall_s=per_item)):
            p = problems[it["i"]]
            if "sandbox_error" in res:
                v = lcb_judge.Verdict(False, 0, lcb_judge.NO_RESULT, f"sandbox: {res['sandbox_error']}")
            else:
                records = res.get("records") if type(res.get("records")) is list else []
                status = res.get("status")
                v = lcb_judge.judge(p.mode, p.tests, records, None if status == "ok" else str(status))
            out[it["i"]] = {"passed": v.passed, "passed_tests": v.passed_tests, "error": v.error,
                            "detail": v.detail}
    return [r for r in out if r is not None]


def _run_asserts(sandbox: Sandbox, p: Problem, code: str, timeout_s: float) -> dict:
    """A stand-in problem whose assert script is not plain input/output: the sealed assert harness,
    judged on the host; a test that rests on the sandbox reporting honestly fails."""
    run = run_python_asserts(sandbox, PREAMBLE + code, p.tests, per_test_s=deadline_s(timeout_s, 1),
                             solution_s=timeout_s, limits=RUN_LIMITS, trust_unsealed=False)
    errors = (run.report or {}).get("errors") or [run.problem or "no_result"]
    passed = sum(e is None for e in errors)
    first = next((e for e in errors if e is not None), None)
    return {"passed": first is None, "passed_tests": passed, "detail": str(first or "")[:300],
            "error": None if first is None else (lcb_judge.TLE if first == "timeout" else lcb_judge.WRONG)}


def evaluate(client: InferenceClient, sandbox: Sandbox, problems: Sequence[Problem], *, cutoff: date,
             variant: str, version: str, dataset_info: dict, max_new_tokens: int = 1024,
             max_items: int | None = None, timeout_s: float = 6.0, notes: Sequence[str] = (),
             log: Callable[[str], None] | None = None) -> EvalReport:
    """Score pass@1 (greedy) on problems dated on/after ``cutoff``."""
    dated = sorted((p for p in problems if p.date >= cutoff), key=lambda p: (p.date, p.id))
    eligible = len(dated)
    if max_items is not None:
        dated = dated[:max_items]
    if not dated:
        raise ValueError(f"no problem is dated on or after the cutoff {cutoff}: nothing to score")
    with Timer() as tg:
        gens = client.generate([build_request(p, max_new_tokens) for p in dated])
    with Timer() as ts:
        codes = [extract_python(g.text) for g in gens]
        res = run_programs(sandbox, dated, codes, timeout_s=timeout_s, log=log)
    samples, by_diff = [], {}
    for p, g, c, r in zip(dated, gens, codes, res):
        ok = r["passed"]
        samples.append({"id": p.id, "date": p.date.isoformat(), "difficulty": p.difficulty, "platform": p.platform,
                        "completion": g.text, "code": c, "passed": ok, "passed_tests": r.get("passed_tests", 0),
                        "tests": len(p.tests) if p.mode != "asserts" else None,
                        "error": r["error"], "detail": r["detail"], "finish_reason": g.finish_reason})
        d = by_diff.setdefault(p.difficulty or "unknown", [0, 0])
        d[0] += ok
        d[1] += 1
    n, k = len(samples), sum(s["passed"] for s in samples)
    extra = [f"subset: first {n} of {eligible} eligible problems (max_items)"] if n < eligible else []
    return EvalReport(
        benchmark=BENCHMARK, variant=variant, version=version, status="ok", score=pct(k, n),
        score_name=f"pass@1 on problems dated >= {cutoff.isoformat()}", n_items=n, samples=samples,
        dataset=dataset_info,
        metrics={"scorer": SCORER, "passed": k, "eligible_after_cutoff": eligible, "total_problems": len(problems),
                 "excluded_before_cutoff": len(problems) - eligible, "cutoff": cutoff.isoformat(),
                 "pass@1_by_difficulty": {d: pct(a, b) for d, (a, b) in sorted(by_diff.items())},
                 "date_range": [dated[0].date.isoformat(), dated[-1].date.isoformat()],
                 "inference": client.describe()},
        timings={"generate_s": round(tg.s, 3), "score_s": round(ts.s, 3),
                 "samples_per_s": round(n / (tg.s + ts.s), 3), "score_samples_per_s": round(n / ts.s, 3)},
        notes=list(notes) + extra)


def run(client: InferenceClient, sandbox: Sandbox, *, offline: bool, cutoff: date, standin_file: str | Path,
        release: str, files: Sequence[str], revision: str, max_new_tokens: int, max_items: int | None,
        timeout_s: float, cache_dir: str | None = None, log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint (online: LCB ``release``; offline: the stand-in)."""
    if offline:
        path = Path(standin_file)
        problems = load_standin(path)
        info = {"source": "LeetCode contest stand-in (OpenCoder copy)", "file": str(path),
                "sha256": sha256_bytes(path.read_bytes())}
        return evaluate(client, sandbox, problems, cutoff=cutoff, dataset_info=info,
                        variant="LeetCode contests 2023-07..2024-01 stand-in (NOT LiveCodeBench)",
                        version="standin-opencoder-180", max_new_tokens=max_new_tokens, max_items=max_items,
                        timeout_s=timeout_s, log=log,
                        notes=["offline stand-in: LiveCodeBench data is not reachable; same task type "
                               "(LeetCode contest problems), different problems and tests"])
    paths = download_release(files, revision, cache_dir)
    problems = load_lcb_files(paths)
    info = {"source": f"hf://datasets/{HF_REPO}@{revision}", "files": list(files),
            "sha256": {p.name: sha256_bytes(p.read_bytes()) for p in paths}}
    return evaluate(client, sandbox, problems, cutoff=cutoff, dataset_info=info,
                    variant=f"LiveCodeBench code_generation_lite {release}", version=release,
                    max_new_tokens=max_new_tokens, max_items=max_items, timeout_s=timeout_s, log=log)
