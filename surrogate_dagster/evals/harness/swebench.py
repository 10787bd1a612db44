"""SWE-bench Lite through the official ``swebench`` harness, which builds and runs every instance in
Docker. Where Docker (CLI + a reachable daemon) is absent, or the dataset rows with their test
fields cannot be fetched (offline: the shared copy has no test_patch / FAIL_TO_PASS), the report
is ``unavailable`` and says why: it is never a pass.

When it can run: prompts are SWE-bench's own retrieval prompts (``princeton-nlp/SWE-bench_Lite_bm25_13K``,
field ``text``: issue + BM25-retrieved files, asking for a ``<patch>`` diff); the model answers
greedily; the diff is extracted; predictions go to ``python -m swebench.harness.run_evaluation``
run out of process with ``swebench_python`` (an environment with ``swebench`` installed: it pins
its own dependencies), and its JSON report gives the resolved instances.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from ...inference import GenRequest, InferenceClient
from .common import EvalReport, Timer, pct, unavailable

BENCHMARK = "swebench_lite"
VARIANT = "SWE-bench Lite (test, 300) via the swebench harness, BM25 13K retrieval prompts"
_PATCH_TAG = re.compile(r"<patch>\n?(.*?)</patch>", re.S)
_DIFF_FENCE = re.compile(r"```(?:diff|patch)?\n(diff --git.*?|--- .*?)```", re.S)


def docker_status(timeout_s: float = 20.0) -> tuple[bool, str]:
    """(usable, detail): the docker CLI exists and a daemon answers ``docker info``."""
    exe = shutil.which("docker")
    if not exe:
        return False, "the docker CLI is not installed on this machine"
    try:
        r = subprocess.run([exe, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, "docker info timed out: no Docker daemon answers"
    if r.returncode != 0:
        return False, f"no Docker daemon reachable: {r.stderr.strip()[:200]}"
    return True, f"Docker server {r.stdout.strip()}"


def extract_patch(text: str) -> str:
    """The unified diff in a model answer: a <patch> block, else a diff fence, else a bare diff."""
    m = _PATCH_TAG.search(text)
    if m:
        return m.group(1).strip() + "\n"
    m = _DIFF_FENCE.search(text)
    if m:
        return m.group(1).strip() + "\n"
    i = text.find("diff --git")
    return text[i:].strip() + "\n" if i >= 0 else ""


def parse_harness_report(path: Path) -> dict:
    """The harness' summary JSON -> resolved / submitted ids and counts."""
    d = json.loads(Path(path).read_text())
    resolved = d.get("resolved_ids") or d.get("resolved_instances_ids") or []
    if isinstance(d.get("resolved_instances"), int) and not resolved:
        raise ValueError(f"{path}: report has counts but no resolved ids")
    return {"resolved_ids": sorted(resolved), "submitted_ids": sorted(d.get("submitted_ids") or []),
            "total_instances": d.get("total_instances"), "error_ids": sorted(d.get("error_ids") or [])}


def run(client: InferenceClient, *, offline: bool, work_dir: Path, swebench_python: str | None,
        dataset_name: str = "princeton-nlp/SWE-bench_Lite", prompts_dataset: str = "princeton-nlp/SWE-bench_Lite_bm25_13K",
        split: str = "test", max_items: int | None = None, max_new_tokens: int = 2048, max_workers: int = 4,
        timeout_s: int = 4 * 3600, log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint, or say plainly why it cannot be evaluated here."""
    ok, detail = docker_status()
    if not ok:
        return unavailable(BENCHMARK, VARIANT, f"Docker unavailable ({detail}): SWE-bench's harness runs every "
                           "instance's tests in a container, so nothing was scored", "% resolved")
    if offline:
        return unavailable(BENCHMARK, VARIANT, "offline: the harness needs the HF dataset rows with test_patch / "
                           "FAIL_TO_PASS / PASS_TO_PASS; the shared copy has only problem statements and gold patches",
                           "% resolved")
    if not swebench_python:
        return unavailable(BENCHMARK, VARIANT, "no swebench environment configured (phases.evals.swebench_python)",
                           "% resolved")
    from datasets import load_dataset

    rows = list(load_dataset(prompts_dataset, split=split))
    rows = rows[:max_items] if max_items else rows
    with Timer() as tg:
        gens = client.generate([GenRequest(messages=({"role": "user", "content": r["text"]},),
                                           max_new_tokens=max_new_tokens) for r in rows])
    work_dir.mkdir(parents=True, exist_ok=True)
    model_name = client.ref.name
    preds = [{"instance_id": r["instance_id"], "model_name_or_path": model_name, "model_patch": extract_patch(g.text)}
             for r, g in zip(rows, gens)]
    pred_path = work_dir / "predictions.jsonl"
    pred_path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    run_id = f"{model_name}-{client.ref.revision or 'rev'}"
    with Timer() as ts:
        proc = subprocess.run([swebench_python, "-m", "swebench.harness.run_evaluation", "--dataset_name", dataset_name,
                               "--split", split, "--predictions_path", str(pred_path), "--max_workers",
                               str(max_workers), "--run_id", run_id], cwd=work_dir, capture_output=True, text=True,
                              timeout=timeout_s)
    report_path = work_dir / f"{model_name}.{run_id}.json"
    if proc.returncode != 0 or not report_path.exists():
        raise RuntimeError(f"swebench harness failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    rep = parse_harness_report(report_path)
    resolved = set(rep["resolved_ids"])
    samples = [{**p, "resolved": p["instance_id"] in resolved, "empty_patch": not p["model_patch"]} for p in preds]
    n = len(samples)
    return EvalReport(benchmark=BENCHMARK, variant=VARIANT, version=f"{dataset_name}:{split}", status="ok",
                      score=pct(len(resolved), n), score_name="% resolved", n_items=n, samples=samples,
                      dataset={"source": dataset_name, "prompts": prompts_dataset, "split": split},
                      metrics={"resolved": len(resolved), "errors": len(rep["error_ids"]), "docker": detail,
                               "empty_patches": sum(s["empty_patch"] for s in samples), "inference": client.describe()},
                      timings={"generate_s": round(tg.s, 3), "score_s": round(ts.s, 3),
                               "samples_per_s": round(n / (tg.s + ts.s), 4) if n else 0.0})
