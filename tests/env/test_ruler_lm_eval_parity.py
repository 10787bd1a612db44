"""Parity of the RULER report with lm-eval's own run: lm-eval's RULER tasks that need no download
(noise and needle haystacks, common words), twice through the pipeline (``evals/harness/ruler.py`` ->
``.venv-ruler``) with one dataset cache (the first report generates and stores each task's samples,
the second, another checkpoint with the same tokenizer, loads them) and once by lm-eval's unmodified
command line as its README runs it, against the same scripted OpenAI-compatible endpoint. Both reports
must send exactly the prompts lm-eval's own run sends, and their per-task scores, mean and every
sample's score must equal what lm-eval wrote in its results JSON and samples files (skipped where
.venv-ruler is absent). The runner's count of the prompts lm-eval left-truncates must match what the
endpoint received.

The endpoint answers deterministically per prompt: it echoes the prompt (which holds every expected
string, a full score) when the prompt's SHA-256 is even, and a wrong answer otherwise, so the scores
are neither all 0 nor all 100 and depend on exactly which prompts lm-eval built and sent.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import mean

import pytest

from surrogate_dagster.evals.harness import ruler
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from surrogate_dagster.inference import ModelRef, VLLMServerInference

PYTHON = ruler.lm_eval_python()
pytestmark = pytest.mark.skipif(PYTHON is None, reason=f"no lm-eval environment ({ruler.DEFAULT_PYTHON})")
TASKS = ["niah_single_1", "niah_multikey_2", "ruler_cwe"]
LENGTH, LIMIT, SERVED = 2048, 4, "scripted-ruler"


@contextmanager
def echo_or_miss_server(tokenizer_dir: Path):
    """/v1/completions over token-id prompts: the decoded prompt back for an even SHA-256, else a miss."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    seen: list[str] = []
    lengths: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            prompts = body["prompt"] if isinstance(body["prompt"][0], list) else [body["prompt"]]
            choices = []
            for i, ids in enumerate(prompts):
                assert body["model"] == SERVED and all(isinstance(t, int) for t in ids)
                digest = hashlib.sha256(json.dumps(ids).encode()).digest()
                seen.append(digest.hex())
                lengths.append(len(ids))
                text = tok.decode(ids) if digest[0] % 2 == 0 else " I could not find it."
                choices.append({"index": i, "text": text, "finish_reason": "stop"})
            data = json.dumps({"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion",
                               "created": int(time.time()), "model": SERVED, "choices": choices,
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen, lengths
    finally:
        httpd.shutdown()
        httpd.server_close()


def lm_eval_cli(base_url: str, tokenizer_dir: Path, out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """lm-eval's own run of TASKS (its command line, its tasks, no group of ours): results and samples."""
    margs = (f"base_url={base_url}/v1/completions,model={SERVED},tokenizer={tokenizer_dir},"
             f"tokenizer_backend=huggingface,tokenized_requests=True,max_length=4096")
    cmd = [str(PYTHON), "-m", "lm_eval", "run", "--model", "local-completions", "--model_args", margs,
           "--tasks", ",".join(TASKS), "--apply_chat_template", "--metadata", json.dumps({"max_seq_lengths": [LENGTH]}),
           "--limit", str(LIMIT), "--output_path", str(out), "--log_samples"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (results_file,) = out.rglob("results_*.json")
    samples = {t: [json.loads(line) for f in results_file.parent.glob(f"samples_{t}_*.jsonl")
                   for line in f.read_text().splitlines() if line.strip()] for t in TASKS}
    return json.loads(results_file.read_text()), samples


def test_the_ruler_report_equals_lm_evals_own_results(tmp_path):
    model = build_tiny_qwen2(tmp_path / "model")
    other = build_tiny_qwen2(tmp_path / "model2", seed=1)  # another checkpoint, the same tokenizer
    cache = tmp_path / "cache"
    n = LIMIT * len(TASKS)
    with echo_or_miss_server(model) as (base_url, seen, _):
        reps = []
        for m in (model, other):
            client = VLLMServerInference(ModelRef("tiny", str(m)), base_url=base_url, served_name=SERVED,
                                         max_context=4096, concurrency=1)
            reps.append(ruler.run(client, tasks=TASKS, not_run={"ruler_vt": "test"}, length=LENGTH, label="parity",
                                  samples_per_task=LIMIT, timeout_s=900, work_dir=tmp_path / "work",
                                  cache_dir=cache, offline=True))
        pipeline_prompts = list(seen)
        results, samples = lm_eval_cli(base_url, model, tmp_path / "cli")
    first, second = reps
    assert first.metrics["dataset_cache"] == {t: "stored" for t in TASKS}
    assert second.metrics["dataset_cache"] == {t: "hit" for t in TASKS}
    assert len(list((cache / "datasets").rglob("*.jsonl.gz"))) == len(TASKS)
    # lm-eval's own run sent exactly the prompts of each report, in the same order
    cli_prompts = seen[2 * n:]
    assert len(cli_prompts) == n and pipeline_prompts[:n] == cli_prompts and pipeline_prompts[n:] == cli_prompts
    metric = f"{LENGTH},none"
    theirs = {t: round(100 * results["results"][t][metric], 3) for t in TASKS}
    cli = {(t, int(s["doc_id"])): s[str(LENGTH)] for t in TASKS for s in samples[t]}
    # the scripted endpoint makes the scores depend on the prompts: both hits and misses occur
    assert {0.0, 1.0} <= set(cli.values())
    for rep in reps:
        assert rep.status == "ok" and rep.metrics["scorer"] == "lm-eval==0.4.13"
        assert rep.metrics["score_by_task"] == theirs
        # the ruler group's aggregation: the unweighted mean over the tasks
        assert rep.score == pytest.approx(mean(theirs.values()), abs=1e-3)
        assert {(s["task"], int(s["doc_id"])): s["score"] for s in rep.samples} == cli
        assert rep.metrics["mean_13_tasks"] is None and "NOT the 13-task mean" in rep.score_name
        assert rep.metrics["truncated_prompts"]["count"] == 0 and "lm_eval_results_file" not in rep.metrics


def test_the_runner_counts_the_prompts_lm_eval_cuts(tmp_path):
    """lm-eval cuts a prompt past max_length less the task's answer budget without saying so: the
    runner's count must match the prompts the endpoint received at exactly the cut length."""
    model = build_tiny_qwen2(tmp_path / "model")
    max_length = 1900  # the tiny tokenizer's prompts at 2048 are 1260-1914 tokens after the chat template
    with echo_or_miss_server(model) as (base_url, _, lengths):
        spec = {"base_url": base_url, "api_key_env": None, "served_name": SERVED, "tokenizer_dir": str(model),
                "tasks": TASKS, "length": LENGTH, "limit": LIMIT, "max_length": max_length, "num_concurrent": 1,
                "timeout_s": 60, "output_dir": str(tmp_path / "out"), "dataset_cache_dir": None}
        (tmp_path / "spec.json").write_text(json.dumps(spec))
        proc = subprocess.run([str(PYTHON), "-I", str(ruler.RUNNER), "--spec", str(tmp_path / "spec.json"),
                               "--out", str(tmp_path / "result.json")], capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((tmp_path / "result.json").read_text())
    budget = {"niah_single_1": 128, "niah_multikey_2": 128, "ruler_cwe": 120}
    rows = res["samples"]
    kept = {t: max_length - 1 - b for t, b in budget.items()}  # lm-eval's API models hold one token back
    assert sorted(lengths) == sorted(min(r["context_tokens"], kept[r["task"]]) for r in rows)
    cut = [r for r in rows if r["tokens_cut"]]
    assert cut and all(r["tokens_cut"] == r["context_tokens"] - kept[r["task"]] for r in cut)
    assert res["truncation"]["prompts"] == len(cut)
    assert res["truncation"]["by_task"] == {t: sum(1 for r in cut if r["task"] == t) for t in TASKS}
    assert res["truncation"]["max_tokens_cut"] == max(r["tokens_cut"] for r in cut)
