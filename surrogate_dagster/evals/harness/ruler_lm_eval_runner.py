"""lm-evaluation-harness's RULER against a served model; run by the RULER environment's Python.

    <.venv-ruler>/bin/python -I ruler_lm_eval_runner.py --spec spec.json --out result.json

Imports only the standard library (and ``lm_eval``'s version through importlib.metadata): what runs
is lm-eval's own command line, ``python -m lm_eval run``, in a child process of this environment.
``spec.json``:

    {"base_url": "http://host:port",   # the OpenAI-compatible server (without /v1)
     "api_key_env": name | null,       # the variable holding its key (handed on as OPENAI_API_KEY)
     "served_name": str,               # the model name requests use (an adapter's name)
     "tokenizer_dir": dir,             # the checkpoint's tokenizer: chat template and haystack sizing
     "tasks": [...],                   # lm-eval RULER task names (the `ruler` group's members)
     "length": int,                    # max_seq_lengths: the one target length of this run
     "limit": int | null,              # the first N samples of each task (lm-eval --limit)
     "max_length": int,                # the server's context window (lm-eval left-truncates past it)
     "num_concurrent": int,            # parallel requests
     "timeout_s": int,                 # per request
     "output_dir": dir}                # lm-eval's --output_path (its results JSON and samples)

The model is lm-eval's ``local-completions`` with ``--apply_chat_template``: lm-eval renders the
checkpoint's chat template with its tokenizer and appends RULER's answer prefix (``gen_prefix``)
inside the assistant turn, then sends the token ids to ``/v1/completions``. Chat completions
could not carry that prefix: the server would open a new assistant turn after it.

The 13-task mean is lm-eval's own group aggregation: a group file like lm-eval's ``ruler.yaml``
(mean over its tasks, ``weight_by_size: false``) whose metric is this run's length (``ruler.yaml``
aggregates only its default length, 4096), over the tasks of this run.

``result.json``: lm-eval's version, its results file, per-task scores and the group's figure
(fractions, as lm-eval reports them), the task versions, and one row per sample.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

GROUP_PREFIX = "surrogate_ruler_"


def group_config(tasks: list[str], length: int) -> dict:
    """The group lm-eval aggregates: mean over ``tasks`` of metric ``length``, unweighted (ruler.yaml's rule)."""
    return {"group": f"{GROUP_PREFIX}{length}", "task": list(tasks),
            "aggregate_metric_list": [{"metric": str(length), "weight_by_size": False}],
            "metadata": {"version": 1}}


def lm_eval_argv(spec: dict, include_dir: str) -> list[str]:
    """lm-eval's command line for ``spec`` (no secret on it: the key travels as OPENAI_API_KEY)."""
    model_args = {"base_url": spec["base_url"].rstrip("/") + "/v1/completions", "model": spec["served_name"],
                  "tokenizer": spec["tokenizer_dir"], "tokenizer_backend": "huggingface",
                  "tokenized_requests": "True", "max_length": int(spec["max_length"]),
                  "num_concurrent": int(spec.get("num_concurrent") or 1), "max_retries": 3,
                  "timeout": int(spec.get("timeout_s") or 600)}
    for k, v in model_args.items():
        if "," in str(v) or "=" in str(v).split("://")[-1]:
            raise SystemExit(f"model_args {k}={v!r}: lm-eval's key=value,... syntax cannot carry ',' or '='")
    argv = ["run", "--model", "local-completions",
            "--model_args", ",".join(f"{k}={v}" for k, v in model_args.items()),
            "--tasks", f"{GROUP_PREFIX}{spec['length']}", "--include_path", include_dir,
            "--apply_chat_template", "--metadata", json.dumps({"max_seq_lengths": [int(spec["length"])]}),
            "--output_path", spec["output_dir"], "--log_samples", "--batch_size", "1"]
    if spec.get("limit"):
        argv += ["--limit", str(int(spec["limit"]))]
    return argv


def results_file(output_dir: str) -> Path:
    """The results JSON lm-eval wrote under ``output_dir`` (one run: exactly one)."""
    found = sorted(glob.glob(os.path.join(output_dir, "**", "results_*.json"), recursive=True))
    if len(found) != 1:
        raise SystemExit(f"expected one lm-eval results file under {output_dir}, found {len(found)}")
    return Path(found[0])


def summarize(results: dict, tasks: list[str], length: int) -> dict:
    """Per-task scores and the group's figure (fractions) from lm-eval's results JSON."""
    metric, group = f"{length},none", f"{GROUP_PREFIX}{length}"
    res = results["results"]
    missing = [t for t in tasks if metric not in res.get(t, {})]
    if missing:
        raise SystemExit(f"lm-eval's results have no {metric!r} score for {missing}")
    agg = (results.get("groups") or {}).get(group) or res.get(group) or {}
    if metric not in agg:
        raise SystemExit(f"lm-eval's results have no group figure {group}/{metric}")
    return {"per_task": {t: float(res[t][metric]) for t in tasks}, "group_mean": float(agg[metric]),
            "n_samples": {t: int(results.get("n-samples", {}).get(t, {}).get("effective", 0)) for t in tasks},
            "task_versions": {t: results.get("versions", {}).get(t) for t in tasks}}


def sample_rows(results_path: Path, tasks: list[str], length: int) -> list[dict]:
    """One row per sample from lm-eval's samples files beside the results file."""
    rows = []
    for task in tasks:
        files = sorted(results_path.parent.glob(f"samples_{task}_*.jsonl"))
        for f in files:
            for line in f.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                s = json.loads(line)
                doc = s.get("doc") or {}
                out = s.get("filtered_resps") or s.get("resps") or [""]
                while isinstance(out, list):
                    out = out[0] if out else ""
                rows.append({"task": task, "doc_id": s.get("doc_id"), "prompt_tokens": doc.get("length"),
                             "expected": doc.get("outputs"), "output": out, "score": s.get(str(length))})
    return rows


def run(spec: dict) -> dict:
    tasks, length = list(spec["tasks"]), int(spec["length"])
    env = dict(os.environ)
    key_env = spec.get("api_key_env")
    env["OPENAI_API_KEY"] = (os.environ.get(key_env) if key_env else None) or "EMPTY"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    spec = {**spec, "output_dir": str(Path(spec["output_dir"]).resolve())}  # also the child's cwd
    Path(spec["output_dir"]).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ruler_group_") as inc:
        # JSON is YAML: lm-eval's task index reads *.yaml under --include_path
        Path(inc, "surrogate_ruler.yaml").write_text(json.dumps(group_config(tasks, length)))
        argv = lm_eval_argv(spec, inc)
        # -I and the output folder as cwd: nothing of the caller's checkout is importable or written to
        proc = subprocess.run([sys.executable, "-I", "-m", "lm_eval", *argv], env=env, capture_output=True, text=True,
                              cwd=spec["output_dir"])
    if proc.returncode != 0:
        raise SystemExit(f"lm_eval exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    path = results_file(spec["output_dir"])
    results = json.loads(path.read_text(encoding="utf-8"))
    return {"scorer": f"lm-eval=={version('lm-eval')}", "model": "local-completions (--apply_chat_template)",
            "results_file": str(path), "argv": argv, **summarize(results, tasks, length),
            "samples": sample_rows(path, tasks, length)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    result = run(json.loads(Path(a.spec).read_text()))
    Path(a.out).write_text(json.dumps(result, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
