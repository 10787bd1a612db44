"""Sandbox overhead per execution and grading throughput, each against a bare-subprocess baseline.

    .venv/bin/python benchmarks/sandbox_bench.py [--runs 30] [--completions 40]

1. overhead: ``/bin/true`` and ``python -c pass`` run N times bare (subprocess.run) and in the
   sandbox; medians, the difference (target: < 50 ms) and the ratio.
2. grading throughput: python-tests grading of K completions (4 per prompt, mixed right/wrong),
   (a) the assert harness run bare in a temp dir (baseline, no isolation), (b) the same harness in
   the sandbox, (c) the full Grader (sandboxed tests + one batched semgrep run), completions/s.
3. syscall filter: sandbox start (``/bin/true``, ``python -c pass``) and the sandboxed grading of
   K completions, each with the seccomp filter off (baseline) and on, alternated in the same run.
   ``--only filter`` runs this section alone.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from surrogate_dagster.sandbox import Sandbox, SandboxLimits  # noqa: E402
from surrogate_dagster.sandbox.judge import judge  # noqa: E402
from surrogate_dagster.sandbox.runners import (  # noqa: E402
    ASSERT_HARNESS, assert_files, assert_input, plan_tests, run_python_asserts)
from surrogate_dagster.synth.graders import Grader, GradingTask  # noqa: E402

SOLUTIONS = [  # (completion, expected to pass)
    ("def f(xs):\n    return sorted(set(xs))\n", True),
    ("def f(xs):\n    return sorted(xs)\n", False),
    ("def f(xs):\n    out = []\n    for x in xs:\n        if x not in out:\n            out.append(x)\n"
     "    return sorted(out)\n", True),
    ("def f(xs):\n    return list(set(xs))\n", False),
]
TESTS = ["assert f([3, 1, 3]) == [1, 3]", "assert f([]) == []", "assert f([2, 2, 2]) == [2]",
         "assert f([5, -1, 5, 0]) == [-1, 0, 5]", "assert f(list(range(50, 0, -1))) == list(range(1, 51))"]


def paired_ms(bare, boxed, n: int) -> tuple[list[float], list[float]]:
    """Wall times (ms) of ``bare()`` and ``boxed()`` alternated n times, so load spikes from other
    processes on the machine hit both sides alike (one warm-up call each first)."""
    bare(), boxed()
    a, b = [], []
    for _ in range(n):
        for fn, out in ((bare, a), (boxed, b)):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1000)
    return a, b


def bare_harness(code: str, tests: list[str]) -> dict:
    """The assert harness without any isolation: files in a temp dir, plain subprocess; the same
    host-side planning and verdicts as in the sandbox."""
    plans, parse_errors = plan_tests(code, tests)
    nonce = secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as d:
        for name, text in assert_files(code).items():
            Path(d, name).write_text(text)
        Path(d, "main.py").write_text(ASSERT_HARNESS)
        out = subprocess.run([sys.executable, "main.py"], cwd=d, input=assert_input(plans, nonce=nonce),
                             capture_output=True, timeout=60)
    return judge(plans, parse_errors, out.stdout.decode("utf-8", "replace"), None, nonce=nonce)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--completions", type=int, default=40)
    ap.add_argument("--only", choices=["filter"], help="run one section alone")
    args = ap.parse_args()
    if args.only == "filter":
        filter_overhead(args.runs, args.completions)
        return
    sb = Sandbox(SandboxLimits(wall_s=30))
    py = sb.python
    print(f"machine: {os.cpu_count()} cpus, load avg {os.getloadavg()[0]:.2f}; runs={args.runs}")
    print("\n== overhead per execution: median ms (min ms) over alternated runs ==")
    print(f"{'program':22s} {'bare':>14s} {'sandbox':>14s} {'overhead':>14s} {'ratio':>6s}")
    overheads = {}
    system_py = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    programs = [("/bin/true", ["/bin/true"], True)]
    if os.path.exists(system_py):  # the same binary bare and boxed: a like-for-like pair
        programs.append((f"{Path(system_py).name} -c pass", [system_py, "-c", "pass"], True))
    # not like-for-like: inside, the venv's editable-install .pth hook is masked (see core.py)
    programs.append(("venv python -c pass", [py, "-c", "pass"], False))
    for label, argv, fair in programs:
        a, b = paired_ms(lambda: subprocess.run(argv, check=True), lambda: sb.run(argv), args.runs)
        bare, boxed = statistics.median(a), statistics.median(b)
        if fair:
            overheads[label] = boxed - bare
        print(f"{label:22s} {bare:7.1f} ({min(a):5.1f}) {boxed:7.1f} ({min(b):5.1f}) "
              f"{boxed - bare:7.1f} ({min(b) - min(a):5.1f}) {boxed / bare:5.1f}x"
              + ("" if fair else "  (inside: no editable .pth)"))
    worst = max(overheads.values())
    print(f"sandbox overhead: {worst:.1f} ms per execution (median), worst like-for-like pair "
          f"(target < 50 ms): {'OK' if worst < 50 else 'OVER'}")

    k = args.completions
    items = [SOLUTIONS[i % len(SOLUTIONS)] for i in range(k)]
    print(f"\n== grading throughput: {k} python completions x {len(TESTS)} asserts ==")
    t = time.perf_counter()
    bare_results = [bare_harness(c, TESTS) for c, _ in items]
    bare_s = time.perf_counter() - t
    t = time.perf_counter()
    boxed_results = [run_python_asserts(sb, c, TESTS).report for c, _ in items]
    boxed_s = time.perf_counter() - t
    assert [r["errors"] for r in bare_results] == [r["errors"] for r in boxed_results], "sandbox changed results"
    grader = Grader(workers=2)
    task = GradingTask(id="bench", kind="python", prompt="dedupe and sort", tests=TESTS)
    t = time.perf_counter()
    grades = grader.grade_many([(task, f"```python\n{c}```") for c, _ in items])
    full_s = time.perf_counter() - t
    assert [g.passed for g in grades] == [ok for _, ok in items], "grader verdicts differ from expectations"
    print(f"{'mode':44s} {'seconds':>8s} {'compl/s':>8s}")
    print(f"{'bare harness, sequential (baseline)':44s} {bare_s:8.2f} {k / bare_s:8.1f}")
    print(f"{'sandboxed harness, sequential':44s} {boxed_s:8.2f} {k / boxed_s:8.1f}   "
          f"({boxed_s / bare_s:.2f}x baseline time)")
    print(f"{'Grader.grade_many (2 workers + semgrep batch)':44s} {full_s:8.2f} {k / full_s:8.1f}   "
          f"({full_s / bare_s:.2f}x baseline time)")
    t = time.perf_counter()
    grader.linters.semgrep({f"{i}/solution.py": c for i, (c, _) in enumerate(items)})
    print(f"{'  of which one semgrep batch (re-timed)':44s} {time.perf_counter() - t:8.2f}")
    print(f"pass rate: {sum(g.passed for g in grades) / k:.2f}; mean score {statistics.mean(g.score for g in grades):.3f}")
    filter_overhead(args.runs, k)


def filter_overhead(runs: int, k: int) -> None:
    """Section 3: the same sandbox with and without its seccomp filter, alternated."""
    lim = SandboxLimits(wall_s=30)
    off, on = Sandbox(lim, syscall_filter=False), Sandbox(lim)
    print(f"\n== syscall filter: {on.syscall_filter} ==")
    print(f"{'what':34s} {'no filter':>14s} {'filter':>14s} {'overhead':>9s} {'ratio':>6s}")
    for label, argv in (("start: /bin/true", ["/bin/true"]), ("start: python -c pass", [on.python, "-c", "pass"])):
        a, b = paired_ms(lambda: off.run(argv), lambda: on.run(argv), runs)
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{label:34s} {ma:7.1f} ({min(a):5.1f}) {mb:7.1f} ({min(b):5.1f}) {mb - ma:7.1f}ms {mb / ma:5.2f}x")
    items = [SOLUTIONS[i % len(SOLUTIONS)] for i in range(k)]
    times: dict[str, float] = {"off": 0.0, "on": 0.0}
    verdicts: dict[str, list] = {"off": [], "on": []}
    for c, _ in items:  # alternate per completion, so load from other processes hits both alike
        for key, sb in (("off", off), ("on", on)):
            t = time.perf_counter()
            verdicts[key].append(run_python_asserts(sb, c, TESTS).report["errors"])
            times[key] += time.perf_counter() - t
    assert verdicts["off"] == verdicts["on"], "the filter changed grading verdicts"
    print(f"{f'grading: {k} completions x {len(TESTS)} asserts':34s} {times['off']:6.2f}s {'':7s} "
          f"{times['on']:6.2f}s {'':7s} {(times['on'] - times['off']) / k * 1000:7.1f}ms "
          f"{times['on'] / times['off']:5.2f}x  (overhead per completion)")


if __name__ == "__main__":
    main()
