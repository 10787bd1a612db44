"""Eval throughput per harness on this machine (samples/s), with a baseline measured in the same run.

    .venv/bin/python benchmarks/eval_throughput.py [--quick]

Two figures per harness:
- end to end: greedy generation with a tiny random Qwen2 (the local profile's model shape) plus
  scoring. Generation dominates and scales with the model: on the real 7B it is vLLM's figure.
- scoring only: known answers (canonical solutions / references) through the scorer, i.e. what
  the harness itself costs per sample whatever the model.
Baselines (named in the output):
- HumanEval / MBPP+: evalplus 0.3.1's ``untrusted_check`` run directly on the host, unsandboxed, as
  ``evalplus.evaluate`` would (canonical solutions only: trusted code). Ratio = our sandboxed,
  batched scoring / that: the price of the sandbox.
- LiveCodeBench: our runner with one sandbox per sample (batch size 1) vs batched (16 per sandbox).
- BFCL: scoring is pure Python; the baseline is generation itself (scoring share of the time).
- RULER: lm-eval's whole run out of process (its sample generation, the stand-in server, its
  scoring) vs generating the same number of same-length prompts in process.
- DevSecOps: the synth grader on reference answers, one grade_many batch (semgrep once per batch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rate(n: int, s: float) -> float:
    return n / s if s > 0 else float("inf")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer items (about a minute)")
    args = ap.parse_args()
    k = 1 if args.quick else 2
    from surrogate_dagster.evals.harness import bfcl_official, bfcl, humaneval_plus, livecodebench, mbpp_plus, ruler
    from surrogate_dagster.evals.harness.evalplus_core import (EvalPlusConfig, check_solutions, compute_groundtruth,
                                                               evaluate, load_problems)
    from surrogate_dagster.inference import ModelRef, TransformersInference
    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
    from surrogate_dagster.paths import ASSETS_DIR, shared_dir
    from surrogate_dagster.sandbox import Sandbox

    tmp = Path(tempfile.mkdtemp())
    bdir = shared_dir() / "data" / "benchmarks"
    sb = Sandbox()
    rows = []
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; tiny Qwen2 hidden 64, vocab 2048")
    model = build_tiny_qwen2(tmp / "model", vocab_size=2048, hidden=64)
    client = TransformersInference(ModelRef("tiny", str(model)), batch_size=16)

    def evalplus_rows(dataset: str, benchmark: str, path: Path, n: int, label: str) -> list[tuple]:
        """Scoring of canonical solutions (sandboxed, batched) vs evalplus unsandboxed, and end to
        end on the tiny model, for the first ``n`` problems of an evalplus dataset file."""
        problems = load_problems(dataset, str(path))
        ids = sorted(problems, key=lambda t: int(t.split("/")[1]))[:n]
        sub = {t: problems[t] for t in ids}
        gt = compute_groundtruth(sb, dataset, sub)
        sols = [(t, sub[t]["prompt"] + sub[t]["canonical_solution"]) for t in ids]
        t0 = time.monotonic()
        res = check_solutions(sb, dataset, sub, gt, sols, EvalPlusConfig(dataset))
        ours = time.monotonic() - t0
        if dataset == "humaneval":
            assert all(r["base"] == "pass" for r in res), "a canonical HumanEval solution failed"
        base = rate(n, _unsandboxed_evalplus(dataset, sub, gt, sols))
        rep = evaluate(client, sb, benchmark=benchmark, variant="bench", version="", dataset_info={},
                       problems=sub, expected=gt, cfg=EvalPlusConfig(dataset, max_new_tokens=128))
        out = [(label, n, rep.timings["samples_per_s"], rate(n, ours), "evalplus untrusted_check unsandboxed", base)]
        if dataset == "humaneval":  # the sandbox's batching: the same scoring on one worker
            t0 = time.monotonic()
            check_solutions(sb, dataset, sub, gt, sols, EvalPlusConfig(dataset, workers=1))
            out.append((f"{dataset}, 1 sandbox worker", n, float("nan"), rate(n, time.monotonic() - t0),
                        "evalplus untrusted_check unsandboxed", base))
        return out

    # ---- HumanEval (offline variant) and MBPP+ ---------------------------------------------------
    he_path, _ = humaneval_plus.prepare_offline(sb, tmp)
    rows += evalplus_rows("humaneval", "humaneval_plus", he_path, 20 * k, "humaneval (base tests)")
    mb_path, _ = mbpp_plus.prepare_offline(bdir / "MbppPlus.PropertyEval.json", tmp)
    rows += evalplus_rows("mbpp", "mbpp_plus", mb_path, 10 * k, "mbpp+ (base + plus)")

    # ---- LiveCodeBench stand-in ----------------------------------------------------------------
    lcb = livecodebench.load_standin(bdir / "leetcode_contests_20240121-Jul.OpenCoder.jsonl")[:8 * k]
    wrong = ["class Solution:\n    pass\n"] * len(lcb)  # fails fast at the first test: harness cost only
    t0 = time.monotonic()
    livecodebench.run_programs(sb, lcb, wrong, batch_size=16)
    ours = time.monotonic() - t0
    t0 = time.monotonic()
    livecodebench.run_programs(sb, lcb, wrong, batch_size=1)
    single = time.monotonic() - t0
    from datetime import date

    rep = livecodebench.evaluate(client, sb, lcb, cutoff=date(2023, 1, 1), variant="bench", version="",
                                 dataset_info={}, max_new_tokens=128)
    rows.append(("livecodebench stand-in", len(lcb), rep.timings["samples_per_s"], rate(len(lcb), ours),
                 "one sandbox per sample", rate(len(lcb), single)))

    # ---- BFCL ----------------------------------------------------------------------------------
    cats = ["simple_python", "parallel", "irrelevance"]
    # the in-process path (project prompts, batched generation) whose throughput this measures
    rep = bfcl.run(client, bdir / "BFCL", categories=cats, max_per_category=4 * k, max_new_tokens=64,
                   scorer="official" if bfcl_official.official_python() else "project")
    rows.append(("bfcl (3 AST categories)", rep.n_items, rep.timings["samples_per_s"],
                 rep.timings["score_samples_per_s"], "generation alone", rate(rep.n_items, rep.timings["generate_s"])))

    # ---- RULER ---------------------------------------------------------------------------------
    # lm-eval's RULER out of process (its data generation, the stand-in server, its scoring) vs the
    # same number of prompts of the same length generated in process: the price of the official harness
    if ruler.lm_eval_python() is not None:
        from surrogate_dagster.inference import GenRequest

        tasks = ["niah_single_1", "niah_multikey_2"]
        rep = ruler.run(client, tasks=tasks, not_run={}, length=2048, label="bench", samples_per_task=2 * k,
                        timeout_s=900, work_dir=tmp / "ruler")
        hay = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"
        text = hay * max(1, int(1900 / max(1, client.count_tokens(hay))))
        reqs = [GenRequest(messages=({"role": "user", "content": text},), max_new_tokens=128)] * rep.n_items
        t0 = time.monotonic()
        client.generate(reqs)
        inproc = time.monotonic() - t0
        e2e = rep.timings["samples_per_s"]
        rows.append(("ruler lm-eval @2048 (2 tasks)", rep.n_items, e2e, e2e, "in-process generation, same prompts",
                     rate(rep.n_items, inproc)))
    else:
        print(f"ruler: skipped (no lm-eval environment, {ruler.DEFAULT_PYTHON})")

    # ---- DevSecOps -----------------------------------------------------------------------------
    from surrogate_dagster.evals.harness import devsecops
    from surrogate_dagster.synth.graders import Grader

    seed = devsecops.load_seed(ASSETS_DIR / "devsecops_eval_seed.yaml")
    tasks = devsecops.stratified(seed.tasks, 5 * k)
    grader = Grader()
    t0 = time.monotonic()
    grades = grader.grade_many([(t, t.reference) for t in tasks])
    ours = time.monotonic() - t0
    assert all(g.passed for g in grades)
    t0 = time.monotonic()
    for t in tasks[:3]:
        grader.grade(t, t.reference)
    one = time.monotonic() - t0
    rep = devsecops.run(client, grader, tasks, max_new_tokens=128)
    rows.append(("devsecops (5 categories)", len(tasks), rep.timings["samples_per_s"], rate(len(tasks), ours),
                 "one grade() call per sample", rate(3, one)))

    print()
    print(f"{'harness':28} {'items':>5} {'e2e/s':>8} {'score/s':>9}  {'baseline':38} {'base/s':>8} {'ratio':>6}")
    for name, n, e2e, score, bname, b in rows:
        print(f"{name:28} {n:>5} {e2e:>8.2f} {score:>9.2f}  {bname:38} {b:>8.2f} {score / b:>6.2f}")
    print("\ne2e/s: tiny-model generation + scoring; score/s: scoring known answers (RULER: lm-eval's whole run);"
          "\nratio = score/s / base/s. Our scoring runs 2 sandboxes in parallel by default (the 1-worker row"
          "\ncompares like with like: evalplus' loop is sequential). DevSecOps e2e > score: garbage answers fail"
          "\nthe first gate, references run every check.")
    print(json.dumps({r[0]: {"items": r[1], "e2e_per_s": round(r[2], 3), "score_per_s": round(r[3], 3),
                             "baseline": r[4], "baseline_per_s": round(r[5], 3)} for r in rows}))
    return 0


def _unsandboxed_evalplus(dataset: str, problems: dict, expected: dict, sols: list) -> float:
    """evalplus' own check of canonical solutions on the host (what `evalplus.evaluate` does)."""
    import pickle
    import zlib

    os.environ["EVALPLUS_MAX_MEMORY_BYTES"] = "-1"
    from evalplus.eval import untrusted_check

    t0 = time.monotonic()
    for tid, code in sols:
        p, e = problems[tid], pickle.loads(zlib.decompress(expected[tid]))  # our own data, canonical code
        for part in ("base", "plus"):
            if p[part + "_input"]:
                untrusted_check(dataset, code, p[part + "_input"], p["entry_point"], e[part], p["atol"],
                                e[part + "_time"], fast_check=True)
    return time.monotonic() - t0


if __name__ == "__main__":
    sys.exit(main())
