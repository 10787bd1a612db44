"""LiveCodeBench code generation: release_v6 online, the LeetCode 2023-24 contest stand-in offline.

Problems are dated; only problems dated on or after ``cutoff`` (the model's training cutoff, from
assets/evals.yaml) are scored, so a model is not credited for problems it may have seen.

- Online: the raw ``test*.jsonl`` files of ``livecodebench/code_generation_lite`` (its loading script
  is refused by recent ``datasets``), pinned by revision. Private test cases are JSON
  or base64 -> zlib -> pickle -> JSON; the pickle is opened with a data-only unpickler.
- Offline stand-in: ``leetcode_contests_20240121-Jul.OpenCoder.jsonl`` (180 LeetCode contest problems,
  PROVENANCE.md); NOT LiveCodeBench, and every report says so. Its tests are assert scripts.

Prompts follow lcb_runner's generic chat format (system message + "### Question / ### Format /
### Answer"). Execution (our runner, after lcb_runner's testing_util semantics): functional tests
call ``Solution().<func_name>(*args)`` with one JSON value per input line and compare to the JSON
output (tuples as lists); stdin tests compare stdout line by line, numbers as decimals. Every
program runs in the sandbox, one forked child per problem, all its tests, stop at the first failure.
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

from ...inference import GenRequest, InferenceClient
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
# LeetCode's judge pre-imports these; lcb_runner prepends the same kind of preamble
PREAMBLE = ("from typing import *\nfrom collections import *\nfrom itertools import *\nfrom functools import *\n"
            "from heapq import *\nfrom bisect import *\nfrom math import *\nimport math, string, re, sys\n")
RUN_LIMITS = SandboxLimits(memory_mb=None, nproc=64, cpu_s=600, wall_s=600, stdout_bytes=16 << 20,
                           fsize_mb=64, tmpfs_mb=256)

_RUNNER = r'''
import io, multiprocessing, signal, sys
from decimal import Decimal, InvalidOperation

class _Timeout(BaseException):
    pass

def _alarm(*_):
    raise _Timeout()

def _norm(x):
    if isinstance(x, tuple):
        x = list(x)
    if isinstance(x, list):
        return [_norm(v) for v in x]
    return x

def _same_stdout(got, want):
    g = [l.strip() for l in got.strip().splitlines()]
    w = [l.strip() for l in want.strip().splitlines()]
    if g == w:
        return True
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        ta, tb = a.split(), b.split()
        if len(ta) != len(tb):
            return False
        for x, y in zip(ta, tb):
            if x == y:
                continue
            try:
                if Decimal(x) != Decimal(y):
                    return False
            except InvalidOperation:
                return False
    return True

def _child(item, q):
    signal.signal(signal.SIGALRM, _alarm)
    passed, err = 0, None
    try:
        if item["mode"] == "asserts":
            g = {"__name__": "solution"}
            signal.setitimer(signal.ITIMER_REAL, item["timeout_s"])
            exec(compile(item["code"], "solution.py", "exec"), g)
            for t in item["tests"]:
                exec(compile(t, "test.py", "exec"), g)
                passed += 1
            signal.setitimer(signal.ITIMER_REAL, 0)
        elif item["mode"] == "functional":
            g = {"__name__": "solution"}
            exec(compile(item["code"], "solution.py", "exec"), g)
            for t in item["tests"]:
                args = [json.loads(line) for line in t["input"].split("\n")]
                signal.setitimer(signal.ITIMER_REAL, item["timeout_s"])
                out = getattr(g["Solution"](), item["fn_name"])(*args)
                signal.setitimer(signal.ITIMER_REAL, 0)
                if _norm(out) != _norm(json.loads(t["output"])):
                    err = "wrong_answer"
                    break
                passed += 1
        else:
            code = compile(item["code"], "solution.py", "exec")
            for t in item["tests"]:
                sys.stdin = io.TextIOWrapper(io.BytesIO(t["input"].encode()))
                buf = io.BytesIO()
                sys.stdout = io.TextIOWrapper(buf, write_through=True)
                signal.setitimer(signal.ITIMER_REAL, item["timeout_s"])
                try:
                    exec(code, {"__name__": "__main__"})
                except SystemExit:
                    pass
                signal.setitimer(signal.ITIMER_REAL, 0)
                sys.stdout.flush()
                if not _same_stdout(buf.getvalue().decode("utf-8", "replace"), t["output"]):
                    err = "wrong_answer"
                    break
                passed += 1
    except _Timeout:
        err = "timeout"
    except AssertionError:
        err = "wrong_answer"
    except BaseException as e:
        err = "runtime_error: " + (type(e).__name__ + ": " + str(e))[:200]
    q.put((passed, err))

for item in ITEMS:
    q = multiprocessing.Queue()
    p = multiprocessing.Process(target=_child, args=(item, q))
    p.start()
    p.join(item["timeout_s"] * max(1, len(item["tests"])) + 5)
    if p.is_alive():
        p.kill()
        emit({"i": item["i"], "passed_tests": 0, "error": "timeout"})
        continue
    passed, err = q.get() if not q.empty() else (0, "crashed")
    emit({"i": item["i"], "passed_tests": passed, "error": err})
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


def parse_standin_row(row: dict) -> Problem:
    """A row of the LeetCode contest stand-in: docstring question + starter, assert tests."""
    prompt = row["prompt"]
    if not prompt.startswith('"""'):
        raise ValueError(f"{row['task_id']}: expected the question as a leading docstring")
    body, _, starter = prompt[3:].partition('"""')
    meta = row["meta"] if isinstance(row["meta"], dict) else ast.literal_eval(row["meta"])
    return Problem(id=row["task_id"], title=meta.get("title", row["title"]),
                   date=datetime.fromtimestamp(int(row["start_time"]), tz=timezone.utc).date(),
                   difficulty=str(meta.get("difficulty", "")).lower(), question=body.strip(),
                   starter_code=starter.strip("\n").rstrip(), mode="asserts", tests=[row["test"]])


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


def run_programs(sandbox: Sandbox, problems: Sequence[Problem], codes: Sequence[str], *, timeout_s: float = 6.0,
                 batch_size: int = 8, workers: int = 2, log: Callable[[str], None] | None = None) -> list[dict]:
    """Run each program against its problem's tests in the sandbox."""
    items = [{"i": i, "mode": p.mode, "tests": p.tests, "fn_name": p.fn_name, "timeout_s": timeout_s,
              "code": (PREAMBLE + c) if p.mode != "stdin" else c} for i, (p, c) in enumerate(zip(problems, codes))]
    runner = BatchRunner(sandbox, _RUNNER, limits=RUN_LIMITS, batch_size=batch_size, workers=workers,
                         env={"OPENBLAS_NUM_THREADS": "1"}, log=log)
    per_item = max(timeout_s * max((len(p.tests) for p in problems), default=1), timeout_s) + 5
    return runner.run(items, per_item_wall_s=per_item)


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
        ok = r.get("error") is None and "sandbox_error" not in r
        samples.append({"id": p.id, "date": p.date.isoformat(), "difficulty": p.difficulty, "platform": p.platform,
                        "completion": g.text, "code": c, "passed": ok, "passed_tests": r.get("passed_tests", 0),
                        "tests": len(p.tests) if p.mode != "asserts" else None,
                        "error": r.get("error") or r.get("sandbox_error"), "finish_reason": g.finish_reason})
        d = by_diff.setdefault(p.difficulty or "unknown", [0, 0])
        d[0] += ok
        d[1] += 1
    n, k = len(samples), sum(s["passed"] for s in samples)
    extra = [f"subset: first {n} of {eligible} eligible problems (max_items)"] if n < eligible else []
    return EvalReport(
        benchmark=BENCHMARK, variant=variant, version=version, status="ok", score=pct(k, n),
        score_name=f"pass@1 on problems dated >= {cutoff.isoformat()}", n_items=n, samples=samples,
        dataset=dataset_info,
        metrics={"passed": k, "eligible_after_cutoff": eligible, "total_problems": len(problems),
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
