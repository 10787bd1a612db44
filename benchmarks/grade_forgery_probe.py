"""Forged grades and the host judge's cost, measured: the figures of issue 28 items 1 and 7.

    .venv/bin/python benchmarks/grade_forgery_probe.py [--only forgery|fixtures|host]

1. forgery: the 12 test styles x 5 tricks of tests/support/forgery_shapes.py graded by the
   Grader (plus the sixth trick, patched asserts); how many tricked runs score a full pass, per
   style and trick, and whether the honest correct answer passes each style.
2. fixtures: every Python prompt of the fixture hub (OpenCodeInstruct ``unit_tests``, opc-sft-stage2
   educational_instruct ``testcase``) graded with its reference answer and two wrong ones, and the
   exec-graded pairs ``build_exec_pairs`` makes of them: scores, per-test verdicts, pair count
   (compare a run on the commit before a change with one after it).
3. host: a candidate value of N ints that all hash alike, judged on the host: host CPU seconds of
   the whole sample (``time.process_time`` of this process, the sandbox's own time excluded).

Runs against any checkout that has the Grader: put the checkout first on PYTHONPATH. The figures
before and after issue 28's change are in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import forgery_shapes as fs  # noqa: E402


def forgery() -> dict:
    from surrogate_dagster.synth.graders import Grader

    runs = fs.tricked_runs({**fs.TRICKS, **fs.EXTRA_TRICKS})
    tasks = fs.tasks()
    honest = [(tasks[s], fs.fenced(fs.CORRECT)) for s in fs.STYLES]
    grades = Grader(workers=4).grade_many([(t, c) for _, _, t, c in runs] + honest)
    forged = [(s, k) for (s, k, _, _), g in zip(runs, grades) if g.passed or g.score > 0]
    main = [x for x in forged if x[1] in fs.TRICKS]
    honest_ok = {s: g.passed for s, g in zip(fs.STYLES, grades[len(runs):])}
    return {"tricked_runs": len(fs.STYLES) * len(fs.TRICKS), "scored_above_0": len(main),
            "by_trick": dict(Counter(k for _, k in main)), "by_style": dict(Counter(s for s, _ in main)),
            "extra_trick_runs": len(fs.STYLES) * len(fs.EXTRA_TRICKS),
            "extra_scored_above_0": len(forged) - len(main),
            "full_pass": sum(g.passed for (_, k, _, _), g in zip(runs, grades) if k in fs.TRICKS),
            "forged": sorted(f"{s}/{k}" for s, k in forged),
            "honest_correct_passes": honest_ok}


def fixture_tasks():
    from surrogate_dagster.synth.graders import task_from_opc_educational, task_from_opencodeinstruct

    hub = ROOT / "fixtures" / "hub" / "datasets"
    out = []
    for line in (hub / "nvidia/OpenCodeInstruct/default/train.jsonl").read_text().splitlines():
        row = json.loads(line)
        try:
            t = task_from_opencodeinstruct(row)
        except (ValueError, TypeError, KeyError):
            continue
        t.reference = row.get("output")
        out.append(t)
    for line in (hub / "OpenCoder-LLM/opc-sft-stage2/educational_instruct/train.jsonl").read_text().splitlines():
        row = json.loads(line)
        if not row.get("testcase"):
            continue
        try:
            t = task_from_opc_educational(row, row_id=str(row.get("seq_id")))
        except (ValueError, TypeError, KeyError):
            continue
        t.reference = row.get("output")
        out.append(t)
    return out


def fixtures() -> dict:
    from surrogate_dagster.synth.exec_pairs import build_exec_pairs
    from surrogate_dagster.synth.graders import Grader

    tasks = fixture_tasks()
    wrong = ["```python\npass\n```", "```python\ndef f():\n    return None\n```"]

    def gen(prompts, n, temperature):
        by_prompt = {t.prompt: t for t in tasks}
        return [[by_prompt[p].reference or wrong[0], *wrong][:n] for p in prompts]

    res = build_exec_pairs(tasks, gen, Grader(workers=4), n=3, min_margin=0.1, max_pairs_per_prompt=4)
    verdicts = {}
    for g in res.grades:
        checks = json.loads(g["checks"])
        tests = next((c for c in checks if c["name"] == "tests"), None)
        verdicts[f"{g['task_id']}#{g['sample']}"] = {
            "score": g["score"], "passed": g["passed"],
            "errors": [e is None for e in tests["detail"]["errors"]] if tests else None}
    return {"prompts": len(tasks), "tests": sum(len(t.tests) for t in tasks), "pairs": res.summary["pairs"],
            "not_sealed": res.summary.get("python_tests_not_sealed"),
            "references_passing": sum(v["passed"] for k, v in verdicts.items() if k.endswith("#0")),
            "verdicts": verdicts}


def _judge_claim(value: list, plans, perr) -> tuple[dict, int]:
    """judge() over the report stream of a run whose one probe returned ``value`` (an encoded
    value), in the format of the checkout: nonce-tagged lines where the judge wants them, bare
    lines before. Returns the report and the stream's size."""
    from surrogate_dagster.sandbox import judge as J

    events = [{"sol": None}, {"setup": None}, {"t": 0, "a": 0, "v": [value]}, {"t": 0, "end": None}]
    if hasattr(J, "frame_claims"):  # the checkout's own framing (supervisor + nonce)
        nonce = "0123456789abcdef" * 2
        stdout = J.frame_claims(events, nonce)
        return J.judge(plans, perr, stdout, None, nonce=nonce), len(stdout)
    stdout = "".join(J.EVT_MARK + json.dumps(e) + "\n" for e in events)
    return J.judge(plans, perr, stdout, None), len(stdout)


def host(n: int) -> dict:
    from surrogate_dagster.sandbox import Sandbox, SandboxLimits
    from surrogate_dagster.sandbox.runners import plan_tests, run_python_asserts

    out = {}
    # 1. judge() alone: the claim "f() returned a set of n ints that all hash alike"
    colliding = [["int", str(k * (2**61 - 1))] for k in range(1, n + 1)]
    for name, test, value in (("set_claim", "assert f() == {1, 2}", ["set", colliding]),
                              ("dict_claim", "assert f() == {1: 2}", ["dict", [[c, ["int", "0"]] for c in colliding]]),
                              ("list_claim_to_set", "assert set(f()) == {1, 2}", ["list", colliding])):
        plans, perr = plan_tests("def f():\n    pass\n", [test])
        t0, w0 = time.process_time(), time.monotonic()
        rep, size = _judge_claim(value, plans, perr)
        out[name] = {"host_cpu_s": round(time.process_time() - t0, 3), "wall_s": round(time.monotonic() - w0, 3),
                     "errors": [str(e)[:120] for e in rep["errors"]], "report_bytes": size}
    # 2. end to end: the candidate returns a list of n colliding ints, the test makes a set of it
    sb = Sandbox(SandboxLimits(wall_s=120, cpu_s=60, memory_mb=2048, nproc=16))
    code = f"def f():\n    return [k * (2**61 - 1) for k in range(1, {n + 1})]\n"
    t0, w0 = time.process_time(), time.monotonic()
    run = run_python_asserts(sb, code, ["assert set(f()) == {1, 2}"],
                             limits=SandboxLimits(wall_s=120, cpu_s=60, memory_mb=2048))
    out["e2e_list_to_set"] = {"host_cpu_s": round(time.process_time() - t0, 3),
                              "wall_s": round(time.monotonic() - w0, 2),
                              "sandbox_wall_s": round(run.sandbox.wall_ms / 1000, 2),
                              "errors": [str(e)[:120] for e in run.report["errors"]]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["forgery", "fixtures", "host"])
    ap.add_argument("--n", type=int, default=26_000, help="host: elements of the colliding value")
    ap.add_argument("--json", help="write the full result here")
    args = ap.parse_args()
    res = {}
    if args.only in (None, "forgery"):
        res["forgery"] = forgery()
        print("forgery:", json.dumps(res["forgery"], indent=1))
    if args.only in (None, "fixtures"):
        res["fixtures"] = fixtures()
        f = res["fixtures"]
        print(f"fixtures: {f['prompts']} prompts, {f['tests']} tests, {f['pairs']} pairs, "
              f"{f['references_passing']} references pass; not sealed: {f['not_sealed']}")
    if args.only in (None, "host"):
        res["host"] = host(args.n)
        print("host:", json.dumps(res["host"], indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
