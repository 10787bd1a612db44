"""lm-evaluation-harness's RULER against a served model; run by the RULER environment's Python.

    <.venv-ruler>/bin/python -I ruler_lm_eval_runner.py --spec spec.json --out result.json

What runs is lm-eval's own command line, ``python -m lm_eval run``, in a child process of this
environment. This file imports the standard library at the top (the project's tests read its
helpers from the main environment) and ``transformers`` only to measure the prompts lm-eval sent.
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
     "output_dir": dir,                # lm-eval's --output_path (its results JSON and samples)
     "dataset_cache_dir": dir | null}  # reuse generated datasets (ruler_dataset_cache.py); null: none

The model is lm-eval's ``local-completions`` with ``--apply_chat_template``: lm-eval renders the
checkpoint's chat template with its tokenizer and appends RULER's answer prefix (``gen_prefix``)
inside the assistant turn, then sends the token ids to ``/v1/completions``. Chat completions
could not carry that prefix: the server would open a new assistant turn after it.

The 13-task mean is lm-eval's own group aggregation: a group file like lm-eval's ``ruler.yaml``
(mean over its tasks, ``weight_by_size: false``) whose metric is this run's length (``ruler.yaml``
aggregates only its default length, 4096), over the tasks of this run.

With ``dataset_cache_dir``, each task is a wrapper task file in the include path, named as lm-eval's
(which it overrides): lm-eval's own task file (``include:``) with ``custom_dataset`` pointing at
:mod:`.ruler_dataset_cache`, which calls lm-eval's generator named by that file once per tokenizer,
length and versions and reuses its output (lm-eval's generators make 500 samples per task whatever
``--limit`` asks).

lm-eval cuts a prompt longer than ``max_length - 1`` minus the task's ``max_gen_toks`` from the left
without saying so (its warning tests the already-cut prompt). The runner tokenizes every logged
prompt as lm-eval did (the checkpoint's tokenizer, no special tokens added) and counts the cut ones.

``result.json``: lm-eval's version, its results file, per-task scores and the group's figure
(fractions, as lm-eval reports them), the task versions, one row per sample (with its prompt's
tokens and the tokens cut), the cut prompts per task and each task's dataset-cache event.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

GROUP_PREFIX = "surrogate_ruler_"
CACHE_MODULE = Path(__file__).with_name("ruler_dataset_cache.py")
CACHE_EVENTS = "surrogate_ruler_cache_events.jsonl"
_TASK_RE = re.compile(r"^task:\s*(\S+)\s*$", re.M)
_DATASET_RE = re.compile(r"^custom_dataset:\s*!function\s+(\S+)\s*$", re.M)


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


def lm_eval_task_files(ruler_dir: Path | None = None) -> dict[str, tuple[Path, str]]:
    """lm-eval's RULER task files: task name -> (its YAML, the ``module.function`` of its ``custom_dataset``)."""
    if ruler_dir is None:
        spec = importlib.util.find_spec("lm_eval")
        if spec is None or not spec.origin:
            raise SystemExit("lm_eval is not importable in this environment")
        ruler_dir = Path(spec.origin).parent / "tasks" / "ruler"
    out = {}
    for f in sorted(Path(ruler_dir).glob("*.yaml")):
        text = f.read_text(encoding="utf-8")
        task, gen = _TASK_RE.search(text), _DATASET_RE.search(text)
        if task and gen:
            out[task.group(1)] = (f, gen.group(1))
    return out


def write_cache_tasks(include_dir: Path, tasks: list[str], cache_dir: str, task_files: dict) -> None:
    """Wrapper task files (lm-eval's file, ``custom_dataset`` through the cache) and the cache module."""
    missing = [t for t in tasks if t not in task_files]
    if missing:
        raise SystemExit(f"lm-eval's RULER task files name no custom_dataset for {missing}")
    for t in tasks:
        path, _ = task_files[t]
        # JSON is YAML, but a !function tag is not JSON: two plain YAML lines
        (include_dir / f"{t}.yaml").write_text(f"include: {json.dumps(str(path))}\n"
                                               f"custom_dataset: !function surrogate_ruler_cache.{t}\n")
    shutil.copyfile(CACHE_MODULE, include_dir / "surrogate_ruler_cache.py")
    (include_dir / "surrogate_ruler_cache.json").write_text(json.dumps(
        {"cache_dir": str(Path(cache_dir).resolve()), "events": str((include_dir / CACHE_EVENTS).resolve()),
         "generators": {t: task_files[t][1] for t in tasks}}))


def cache_events(include_dir: Path) -> dict[str, dict]:
    """Each task's dataset-cache event of this run (hit, stored, uncached)."""
    p = include_dir / CACHE_EVENTS
    if not p.exists():
        return {}
    return {e["task"]: e for e in (json.loads(line) for line in p.read_text().splitlines() if line.strip())}


def sample_prompt(s: dict) -> tuple[str, int | None]:
    """(the context lm-eval sent, the task's max_gen_toks) of a logged generate_until sample."""
    args = s.get("arguments")
    if isinstance(args, dict):  # {"gen_args_0": {"arg_0": context, "arg_1": gen_kwargs}}
        first = next(iter(args.values()))
        ctx, kw = first.get("arg_0"), first.get("arg_1") or {}
    else:  # [[context, gen_kwargs]]
        ctx, kw = args[0][0], (args[0][1] if len(args[0]) > 1 else {}) or {}
    return ctx, kw.get("max_gen_toks")


def cut_tokens(n_tokens: int, max_gen_toks: int, max_length: int) -> int:
    """Tokens lm-eval cuts from the left of a prompt of ``n_tokens``: its API models keep one token of
    ``max_length`` back, then the task's answer budget, and send the last ``max_length - 1 - max_gen_toks``."""
    return max(0, n_tokens - (max_length - 1 - max_gen_toks))


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


def sample_rows(results_path: Path, tasks: list[str], length: int, count_tokens=None, max_length: int | None = None,
                default_gen_toks: int = 256) -> list[dict]:
    """One row per sample from lm-eval's samples files beside the results file; with ``count_tokens``
    (text -> tokens as lm-eval encodes it) each row says how many tokens lm-eval sent and cut."""
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
                row = {"task": task, "doc_id": s.get("doc_id"), "prompt_tokens": doc.get("length"),
                       "expected": doc.get("outputs"), "output": out, "score": s.get(str(length))}
                if count_tokens is not None:
                    ctx, gen = sample_prompt(s)
                    n = count_tokens(ctx)
                    row["context_tokens"] = n
                    row["tokens_cut"] = cut_tokens(n, gen or default_gen_toks, int(max_length))
                rows.append(row)
    return rows


def truncation(rows: list[dict]) -> dict:
    """Prompts lm-eval left-truncated, per task, and the most tokens cut from one."""
    by_task: dict[str, int] = {}
    for r in rows:
        by_task.setdefault(r["task"], 0)
        if r.get("tokens_cut"):
            by_task[r["task"]] += 1
    return {"by_task": by_task, "prompts": sum(by_task.values()),
            "max_tokens_cut": max((r.get("tokens_cut") or 0 for r in rows), default=0)}


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
        if spec.get("dataset_cache_dir"):
            write_cache_tasks(Path(inc), tasks, spec["dataset_cache_dir"], lm_eval_task_files())
        argv = lm_eval_argv(spec, inc)
        # -I and the output folder as cwd: nothing of the caller's checkout is importable or written to
        proc = subprocess.run([sys.executable, "-I", "-m", "lm_eval", *argv], env=env, capture_output=True, text=True,
                              cwd=spec["output_dir"])
        events = cache_events(Path(inc))
    if proc.returncode != 0:
        raise SystemExit(f"lm_eval exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    path = results_file(spec["output_dir"])
    results = json.loads(path.read_text(encoding="utf-8"))
    from transformers import AutoTokenizer  # lm-eval's tokenizer backend, loaded as lm-eval loads it

    tok = AutoTokenizer.from_pretrained(spec["tokenizer_dir"])
    rows = sample_rows(path, tasks, length, lambda text: len(tok(text, add_special_tokens=False).input_ids),
                       int(spec["max_length"]))
    return {"scorer": f"lm-eval=={version('lm-eval')}", "model": "local-completions (--apply_chat_template)",
            "results_file": str(path), "argv": argv, **summarize(results, tasks, length),
            "samples": rows, "truncation": truncation(rows),
            "dataset_cache": {t: {k: e[k] for k in ("cache", "key", "s") if k in e} for t, e in events.items()}}


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
