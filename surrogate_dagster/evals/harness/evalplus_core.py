"""EvalPlus (HumanEval+ / MBPP+) scoring with evalplus 0.3.1's own test logic, inside our sandbox.

What runs, exactly:
- problems are loaded by evalplus' loaders (``get_human_eval_plus`` / ``get_mbpp_plus``, the latter
  applying ``mbpp_deserialize_inputs``), from its release files online or from
  ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH`` files offline;
- expected outputs: evalplus' ``trusted_exec`` of each canonical solution over ``base_input`` and
  ``plus_input``, run in the sandbox (benchmark code is still code), cached in the object store;
- each model solution: evalplus' ``untrusted_check`` (its per-input time limits, special oracles
  and float tolerance) run inside the bubblewrap sandbox, ``fast_check=True`` (stop at the first
  failing input: pass@1 only needs the status). evalplus' own guard is weak (PITFALLS): our
  sandbox adds namespaces, rlimits and a wall clock around it; its memory cap is ours
  (``EVALPLUS_MAX_MEMORY_BYTES=-1`` hands it to the sandbox).
- code extraction: evalplus' ``sanitize(text, entrypoint)``; prompts: evalplus' chat
  instruction/response prefixes (``codegen.py``), greedy.
Scoring as evalplus: "base" = original tests, "plus" = base AND extra tests; pass@1 per task.
"""

from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import sys
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

from surrogate_dagster.sandbox import Sandbox, SandboxLimits

from ...inference import GenRequest, InferenceClient
from .common import BatchRunner, EvalReport, Timer, pct

INSTRUCTION_PREFIX = ("Please provide a self-contained Python script that solves the following problem "
                      "in a markdown code block:")
RESPONSE_PREFIX = ("Below is a Python script with a self-contained function that solves the problem and "
                   "passes corresponding tests:")
EVALPLUS_VERSION = importlib.metadata.version("evalplus")  # the Makefile pins 0.3.1
# the report's metric ``scorer``: the package whose test logic decided every verdict
SCORER = (f"evalplus {EVALPLUS_VERSION} (untrusted_check, inside the project's sandbox; verdicts parity-tested "
          "against evalplus.evaluate: tests/integration/test_evalplus_official_parity.py)")
# numpy/evalplus import in every sandbox: no address-space cap (openblas reserves a lot), the
# sandbox's cpu/wall/nproc/tmpfs limits still hold; evalplus forks one child per check.
CHECK_LIMITS = SandboxLimits(memory_mb=None, nproc=64, cpu_s=600, wall_s=600, stdout_bytes=64 << 20,
                             fsize_mb=256, tmpfs_mb=512)
SANDBOX_ENV = {"EVALPLUS_MAX_MEMORY_BYTES": "-1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}

_GROUNDTRUTH = r'''
import base64, pickle, time, zlib
from evalplus.gen.util import trusted_exec
from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
SPEC = json.load(open("__spec__.json"))
PROBLEMS = pickle.load(open("problems.pkl", "rb"))
not_none = MBPP_OUTPUT_NOT_NONE_TASKS if SPEC["dataset"] == "mbpp" else []
for item in ITEMS:
    p = PROBLEMS[item["task_id"]]
    code = p["prompt"] + p["canonical_solution"]
    o = {}
    try:
        for part in ("base", "plus"):
            o[part], o[part + "_time"] = trusted_exec(code, p[part + "_input"], p["entry_point"],
                                                      record_time=True, output_not_none=p["entry_point"] in not_none)
        emit({"i": item["i"], "oracle": base64.b64encode(zlib.compress(pickle.dumps(o, protocol=4), 6)).decode()})
    except BaseException as e:
        emit({"i": item["i"], "error": (type(e).__name__ + ": " + str(e))[:300]})
'''

# evalplus 0.3.1 (PyPI) scores HumanEval/32 (find_zero) as a failure whatever the answer: its oracle
# branch ends in a bare `continue` that never records the input as passed (fixed upstream in
# 26d6d00, "details[i] = True"). For that one task the same oracle (evalplus' _poly, atol, per-input
# time limits) runs here with the fix; every other task goes through untrusted_check unchanged.
_CHECK = r'''
import copy, multiprocessing, pickle
from evalplus.eval import untrusted_check, PASS, FAIL, TIMEOUT

def _find_zero_child(code, inputs, atol, limits, q):
    from evalplus.eval.utils import swallow_io, time_limit
    from evalplus.eval._special_oracle import _poly
    n = 0
    try:
        g = {}
        with swallow_io():
            exec(code, g)
        fn = g["find_zero"]
        for inp, lim in zip(inputs, limits):
            with time_limit(lim):
                with swallow_io():
                    out = fn(*copy.deepcopy(inp))
            if not abs(_poly(*inp, out)) <= atol:
                break
            n += 1
    except BaseException:
        pass
    q.put(n)

def _find_zero_check(code, inputs, atol, ref_time):
    limits = [max(SPEC["min_time_limit"], SPEC["gt_factor"] * t) for t in ref_time]
    q = multiprocessing.Queue()
    proc = multiprocessing.Process(target=_find_zero_child, args=(code, inputs, atol, limits, q))
    proc.start()
    proc.join(min(60, sum(limits)) + 2)
    if proc.is_alive():
        proc.kill()
        return TIMEOUT, []
    n = q.get() if not q.empty() else 0
    return (PASS if n == len(inputs) else FAIL), [True] * n
SPEC = json.load(open("__spec__.json"))
PROBLEMS = pickle.load(open("problems.pkl", "rb"))
import zlib
EXPECTED = pickle.load(open("expected.pkl", "rb"))
for item in ITEMS:
    p = PROBLEMS[item["task_id"]]
    e = pickle.loads(zlib.decompress(EXPECTED[item["task_id"]]))
    res = {"i": item["i"]}
    for part in ("base", "plus"):
        if part == "plus" and (res["base"] != PASS or not p["plus_input"]):
            res["plus"] = res["base"] if not p["plus_input"] else "skipped_base_failed"
            break
        if SPEC["dataset"] == "humaneval" and p["entry_point"] == "find_zero":
            stat, det = _find_zero_check(item["solution"], p[part + "_input"], p["atol"], e[part + "_time"])
        else:
            stat, det = untrusted_check(SPEC["dataset"], item["solution"], p[part + "_input"], p["entry_point"],
                                        e[part], p["atol"], e[part + "_time"], fast_check=True,
                                        min_time_limit=SPEC["min_time_limit"], gt_time_limit_factor=SPEC["gt_factor"])
        res[part] = stat
        res[part + "_inputs_run"] = len(det)
    emit(res)
'''


@dataclass
class EvalPlusConfig:
    """Knobs of one EvalPlus run."""

    dataset: str  # humaneval | mbpp
    max_new_tokens: int = 768
    max_items: int | None = None
    min_time_limit: float = 1.0  # evalplus defaults
    gt_time_limit_factor: float = 4.0
    batch_size: int = 16
    workers: int = 2
    extra: dict = field(default_factory=dict)


def load_problems(dataset: str, override_path: str | None) -> dict[str, dict]:
    """Problems through evalplus' loaders. The override path is read at import by evalplus, so it
    is set in the environment AND on the already-imported module (a long-lived process)."""
    env = "HUMANEVAL_OVERRIDE_PATH" if dataset == "humaneval" else "MBPP_OVERRIDE_PATH"
    if override_path:
        os.environ[env] = override_path
    else:
        os.environ.pop(env, None)
    if dataset == "humaneval":
        import evalplus.data.humaneval as mod

        mod.HUMANEVAL_OVERRIDE_PATH = override_path
        return mod.get_human_eval_plus()
    import evalplus.data.mbpp as mod

    mod.MBPP_OVERRIDE_PATH = override_path
    return mod.get_mbpp_plus()


def _problem_payload(problems: dict[str, dict]) -> dict[str, dict]:
    keep = ("task_id", "prompt", "canonical_solution", "entry_point", "base_input", "plus_input", "atol")
    return {tid: {k: p[k] for k in keep} for tid, p in problems.items()}


def compute_groundtruth(sandbox: Sandbox, dataset: str, problems: dict[str, dict], *, workers: int = 2,
                        log: Callable[[str], None] | None = None) -> dict[str, bytes]:
    """Expected outputs and reference times of the canonical solutions (evalplus' trusted_exec),
    per task as zlib-compressed pickles (opaque to the host)."""
    import pickle

    payload = _problem_payload(problems)
    runner = BatchRunner(sandbox, _GROUNDTRUTH, files={"__spec__.json": json.dumps({"dataset": dataset})},
                         files_for=lambda b: {"problems.pkl": pickle.dumps(
                             {it["task_id"]: payload[it["task_id"]] for it in b}, protocol=4)},
                         limits=CHECK_LIMITS, batch_size=25, workers=workers, env=SANDBOX_ENV, log=log)
    tids = sorted(problems)
    res = runner.run([{"i": i, "task_id": t} for i, t in enumerate(tids)], per_item_wall_s=30)
    out: dict[str, bytes] = {}
    bad = {}
    for tid, r in zip(tids, res):
        if "oracle" in r:
            # kept compressed and only ever unpickled inside a sandbox: MBPP+ outputs reach ~800 MB
            # unpacked (Mbpp/255 alone is most of it); zlib brings them to a few MB
            out[tid] = base64.b64decode(r["oracle"])
        else:
            bad[tid] = r.get("error") or r.get("sandbox_error")
    if bad:
        raise RuntimeError(f"{dataset}: canonical solutions failed for {len(bad)} task(s): "
                           f"{dict(list(bad.items())[:3])}")
    return out


def select_ids(problems: dict[str, dict], max_items: int | None) -> list[str]:
    """Task ids in numeric order, the first ``max_items`` when a subset is asked for."""
    tids = sorted(problems, key=lambda t: int(t.split("/")[-1]))
    return tids[:max_items] if max_items is not None else tids


def chat_request(prompt: str, max_new_tokens: int) -> GenRequest:
    """evalplus' chat prompt: instruction + fenced task, answer opened with its response prefix."""
    user = f"{INSTRUCTION_PREFIX}\n```\n{prompt.strip()}\n```\n"
    return GenRequest(messages=({"role": "user", "content": user},),
                      assistant_prefix=f"{RESPONSE_PREFIX}\n```python\n", max_new_tokens=max_new_tokens)


def sanitize_solution(completion: str, entry_point: str) -> str:
    """evalplus' sanitizer over the fenced answer (the prefix opened the fence)."""
    from evalplus.sanitize import sanitize

    return sanitize("```python\n" + completion, entrypoint=entry_point)


def check_solutions(sandbox: Sandbox, dataset: str, problems: dict[str, dict], expected: dict[str, bytes],
                    solutions: Sequence[tuple[str, str]], cfg: EvalPlusConfig,
                    log: Callable[[str], None] | None = None) -> list[dict]:
    """Run evalplus' untrusted_check on (task_id, solution) pairs in the sandbox."""
    import pickle

    def files_for(batch: list[dict]) -> dict[str, bytes]:
        # only the batch's tasks travel: MBPP+ expected outputs are tens of MB in all
        used = {it["task_id"] for it in batch}
        return {"problems.pkl": pickle.dumps(_problem_payload({t: problems[t] for t in used}), protocol=4),
                "expected.pkl": pickle.dumps({t: expected[t] for t in used}, protocol=4)}

    runner = BatchRunner(sandbox, _CHECK, files={
        "__spec__.json": json.dumps({"dataset": dataset, "min_time_limit": cfg.min_time_limit,
                                     "gt_factor": cfg.gt_time_limit_factor})}, files_for=files_for,
        limits=CHECK_LIMITS, batch_size=cfg.batch_size, workers=cfg.workers, env=SANDBOX_ENV, log=log)
    items = [{"i": i, "task_id": t, "solution": s} for i, (t, s) in enumerate(solutions)]
    # the worst case per sample: evalplus' own cap (60 s per part) plus process start
    return runner.run(items, per_item_wall_s=8.0, base_wall_s=30.0)


def evaluate(client: InferenceClient, sandbox: Sandbox, *, benchmark: str, variant: str, version: str,
             dataset_info: dict, problems: dict[str, dict], expected: dict[str, bytes], cfg: EvalPlusConfig,
             notes: Sequence[str] = (), log: Callable[[str], None] | None = None) -> EvalReport:
    """Generate greedily for every task, sanitize, check in the sandbox, score pass@1."""
    tids = select_ids(problems, cfg.max_items)
    with Timer() as tg:
        gens = client.generate([chat_request(problems[t]["prompt"], cfg.max_new_tokens) for t in tids])
    with Timer() as ts:
        sols = [sanitize_solution(g.text, problems[t]["entry_point"]) for t, g in zip(tids, gens)]
        checked = check_solutions(sandbox, cfg.dataset, problems, expected, list(zip(tids, sols)), cfg, log=log)
    samples = []
    for t, g, s, r in zip(tids, gens, sols, checked):
        base = r.get("base") or f"sandbox_error: {r.get('sandbox_error')}"
        plus = r.get("plus") or base
        samples.append({"task_id": t, "completion": g.text, "solution": s, "finish_reason": g.finish_reason,
                        "completion_tokens": g.completion_tokens, "base": base, "plus": plus,
                        "passed_base": base == "pass", "passed_plus": base == "pass" and plus == "pass"})
    n = len(samples)
    nb = sum(s["passed_base"] for s in samples)
    npl = sum(s["passed_plus"] for s in samples)
    has_plus = any(problems[t]["plus_input"] for t in tids)
    status_counts: dict[str, int] = {}
    for s in samples:
        status_counts[s["plus"]] = status_counts.get(s["plus"], 0) + 1
    return EvalReport(
        benchmark=benchmark, variant=variant, version=version, status="ok",
        score=pct(npl, n) if has_plus else pct(nb, n),
        score_name="pass@1 (base + plus tests)" if has_plus else "pass@1 (base tests only: no plus inputs)",
        n_items=n, samples=samples, dataset=dataset_info,
        metrics={"pass@1_base": pct(nb, n), "pass@1_plus": pct(npl, n) if has_plus else None,
                 "passed_base": nb, "passed_plus": npl, "status_counts": status_counts,
                 "tasks_available": len(problems), "scorer": SCORER, "evalplus": EVALPLUS_VERSION,
                 "inference": client.describe(), "python": sys.version.split()[0]},
        timings={"generate_s": round(tg.s, 3), "score_s": round(ts.s, 3),
                 "samples_per_s": round(n / (tg.s + ts.s), 3) if n else 0.0,
                 "score_samples_per_s": round(n / ts.s, 3) if n and ts.s else 0.0},
        notes=list(notes) + ([f"subset: first {n} of {len(problems)} tasks (max_items)"]
                             if cfg.max_items is not None and n < len(problems) else []))
