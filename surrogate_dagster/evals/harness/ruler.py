"""RULER as lm-evaluation-harness runs it: lm-eval's own RULER tasks, prompts and scoring, against the
checkpoint served on an OpenAI-compatible endpoint.

lm-eval (``lm-eval`` on PyPI, pinned in the Makefile) lives in its own environment (``make setup``
builds ``.venv-ruler``; ``SURROGATE_RULER_PYTHON`` names another interpreter that has it) and runs out
of process through :mod:`.ruler_lm_eval_runner`, pointed at the served model (:mod:`.served`: the
profile's ``vllm serve``, or the transformers stand-in started for the checkpoint). lm-eval generates
each task's samples at the target length, sized with the checkpoint's own tokenizer, renders the
chat template and scores with RULER's ``string_match_all`` / ``string_match_part``.

The score is lm-eval's ``ruler`` group figure: the unweighted mean over the tasks that ran, in
percent. When all 13 tasks ran it is the 13-task mean the runbook gates on (``metrics.mean_13_tasks``);
otherwise the report says it is the mean over fewer tasks, names every task not run and why
(``metrics.not_run``: data an offline profile cannot have, a profile's skip) and leaves
``mean_13_tasks`` empty, and the gate is the one ``assets/evals.yaml`` gives a partial run
(``config.threshold``). Without the environment, or for a client no server can stand in for, the
report is ``unavailable`` with the reason: the project has no RULER of its own to fall back on.

lm-eval's process gets a minimal environment (:func:`lm_eval_env`): no credential of the pipeline
reaches it, only the endpoint's key variable when the server needs one. On an offline profile the Hub
and ``datasets`` are offline and every HTTP(S) request that honours proxy variables (nltk's
``punkt_tab`` download at import of lm-eval's ``prepare_niah.py`` among them) goes to a closed local
port; the endpoint's host is exempt. ``cache_dir`` (the profile's work dir) holds what reports share:
the generated datasets (:mod:`.ruler_dataset_cache`), the Hub cache and nltk's data.

A prompt longer than the context less the task's answer budget is cut from the left by lm-eval,
silently (at ``length == max_context`` the chat template's tokens do not fit). The report keeps
lm-eval's figure, which is what lm-eval's own run at that length and context reports, and says how many
prompts were cut (``metrics.truncated_prompts``, a note, ``tokens_cut`` per sample): failing would leave
the runbook's 128K run on a 128K-context server without a figure, and a reader can tell the intact
samples from the cut ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlsplit

from ...paths import REPO_ROOT
from .common import EvalReport, Timer, unavailable

BENCHMARK = "ruler"
# lm-eval's `ruler` group (lm_eval/tasks/ruler/ruler.yaml), in its order
RULER_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
               "niah_multikey_3", "niah_multiquery", "niah_multivalue", "ruler_vt", "ruler_cwe", "ruler_fwe",
               "ruler_qa_squad", "ruler_qa_hotpot")
RUNNER = Path(__file__).with_name("ruler_lm_eval_runner.py")
ENV_VAR = "SURROGATE_RULER_PYTHON"
DEFAULT_PYTHON = REPO_ROOT / ".venv-ruler" / "bin" / "python"
SCORE_NAME_ALL = "lm-eval ruler group: mean over the 13 RULER tasks (string_match)"


# where an offline profile's stray HTTP(S) requests go: the discard port on loopback, refused at once
OFFLINE_PROXY = "http://127.0.0.1:9"
PASSTHROUGH_ENV = ("HF_ENDPOINT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                   "http_proxy", "https_proxy", "no_proxy")


class RulerRunError(RuntimeError):
    """lm-eval's run failed as a whole (it exited non-zero, or ran past its time)."""


def lm_eval_env(*, home: Path, cache_dir: Path, offline: bool, endpoint_host: str,
                endpoint_env: dict[str, str]) -> dict[str, str]:
    """The environment of lm-eval's process: PATH, a scratch HOME and TMPDIR, the locale, the shared
    caches, the endpoint's key variable (``endpoint_env``) and, online, the proxy/CA/Hub-endpoint
    variables that are set; offline, the Hub, ``datasets`` and ``transformers`` offline and proxies
    pointing at :data:`OFFLINE_PROXY` for every host but the endpoint's."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(home),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HF_HOME": str(cache_dir / "hf_home"),
           "NLTK_DATA": str(cache_dir / "nltk_data"), "TOKENIZERS_PARALLELISM": "false", **endpoint_env}
    if offline:
        local = ",".join(dict.fromkeys(["127.0.0.1", "localhost", "::1", endpoint_host]))
        env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "http_proxy": OFFLINE_PROXY, "https_proxy": OFFLINE_PROXY, "HTTP_PROXY": OFFLINE_PROXY,
                    "HTTPS_PROXY": OFFLINE_PROXY, "no_proxy": local, "NO_PROXY": local})
    else:
        env.update({k: os.environ[k] for k in PASSTHROUGH_ENV if os.environ.get(k)})
    return env


def lm_eval_python() -> Path | None:
    """The interpreter of the lm-eval environment, or None when there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env)
        if not p.exists():
            raise RulerRunError(f"{ENV_VAR}={env} does not exist")
        return p
    return DEFAULT_PYTHON if DEFAULT_PYTHON.exists() else None


def servable(client) -> bool:
    """Whether lm-eval can query ``client``'s model: a served one, or an in-process transformers model
    the stand-in server can serve (a test double cannot)."""
    from ...inference import TransformersInference, VLLMServerInference

    return isinstance(client, (VLLMServerInference, TransformersInference))


def variant_name(tasks: Sequence[str], length: int, label: str) -> str:
    which = "all 13 tasks" if set(tasks) == set(RULER_TASKS) else f"{len(tasks)} of 13 tasks"
    return f"RULER (lm-eval), {which} at {length} tokens ({label})"


def score_name(tasks: Sequence[str]) -> str:
    if set(tasks) == set(RULER_TASKS):
        return SCORE_NAME_ALL
    return (f"lm-eval ruler group aggregation over the {len(tasks)} tasks run (NOT the 13-task mean: "
            f"{13 - len(tasks)} not run)")


def report_from_result(res: dict, *, tasks: Sequence[str], not_run: dict[str, str], length: int, label: str,
                       limit: int | None, timings: dict[str, float], inference: dict | None = None) -> EvalReport:
    """The report of one lm-eval run (``res``: the runner's result.json): lm-eval's fractions in percent."""
    per_task = {t: round(100 * res["per_task"][t], 3) for t in tasks}
    mean = round(100 * res["group_mean"], 3)
    complete = set(tasks) == set(RULER_TASKS)
    samples = res["samples"]
    n = len(samples)
    notes = [f"scorer: {res['scorer']} ({res['model']}; lm-eval's RULER tasks, generation and scoring)",
             f"score: {score_name(tasks)}",
             "not run: " + ("; ".join(f"{t} ({why})" for t, why in not_run.items()) or "none")]
    if limit:
        notes.append(f"subset: first {limit} samples per task (lm-eval --limit)")
    cut = res.get("truncation") or {}
    if cut.get("prompts"):
        notes.append(f"left-truncated: {cut['prompts']} of {n} prompts were longer than the context less the answer "
                     f"budget and lm-eval cut up to {cut['max_tokens_cut']} tokens from their start (the chat "
                     f"template's tokens do not fit at this length); the score includes them: "
                     + ", ".join(f"{t} {k}" for t, k in cut["by_task"].items() if k))
    cache = res.get("dataset_cache") or {}
    if cache:
        notes.append("datasets: " + ", ".join(f"{t} {e['cache']}" for t, e in cache.items())
                     + " (lm-eval's generator output, reused per tokenizer, length and versions)")
    return EvalReport(
        benchmark=BENCHMARK, variant=variant_name(tasks, length, label),
        version=f"{res['scorer']} ruler, tasks {','.join(tasks)}", status="ok", score=mean,
        score_name=score_name(tasks), n_items=n, samples=samples,
        dataset={"source": "generated by lm-eval's RULER tasks at run time", "length": length, "tasks": list(tasks),
                 "samples_per_task": limit, "task_versions": res.get("task_versions", {})},
        metrics={"scorer": res["scorer"], "score_by_task": per_task, "samples_by_task": res.get("n_samples", {}),
                 "tasks_run": len(tasks), "mean_13_tasks": mean if complete else None,
                 "not_run": dict(not_run), "length": length, "label": label,
                 "truncated_prompts": {"count": cut.get("prompts", 0), "by_task": cut.get("by_task", {}),
                                       "max_tokens_cut": cut.get("max_tokens_cut", 0)},
                 "dataset_cache": {t: e["cache"] for t, e in cache.items()}, "inference": inference or {}},
        timings={**timings, "samples_per_s": round(n / timings["generate_and_score_s"], 3)
                 if n and timings.get("generate_and_score_s") else 0.0,
                 **({"datasets_s": round(sum(e.get("s", 0.0) for e in cache.values()), 3)} if cache else {})},
        notes=notes)


def run(client, *, tasks: Sequence[str], not_run: dict[str, str], length: int, label: str,
        samples_per_task: int | None, timeout_s: float, request_timeout_s: int = 600, concurrency: int = 1,
        work_dir: str | Path | None = None, cache_dir: str | Path | None = None, offline: bool = True,
        log: Callable[[str], None] | None = None) -> EvalReport:
    """lm-eval's RULER ``tasks`` at ``length`` tokens on ``client``'s checkpoint; ``not_run``: the RULER
    tasks left out, with why (named in the report). ``timeout_s``: the whole run; ``request_timeout_s``
    and ``concurrency``: each request's and how many at once (one against the stand-in this step starts).
    ``cache_dir``: what reports share (generated datasets, Hub cache); None: nothing is reused."""
    unknown = [t for t in [*tasks, *not_run] if t not in RULER_TASKS]
    if unknown:
        raise ValueError(f"RULER: unknown task(s) {unknown}; lm-eval's ruler group has {list(RULER_TASKS)}")
    variant = variant_name(tasks, length, label)
    if not tasks:
        return unavailable(BENCHMARK, variant, "no RULER task can run here: " + "; ".join(
            f"{t} ({why})" for t, why in not_run.items()), score_name(tasks))
    python = lm_eval_python()
    if python is None:
        return unavailable(BENCHMARK, variant, f"no lm-eval environment ({DEFAULT_PYTHON} absent, {ENV_VAR} unset): "
                                               "run `make setup` (builds .venv-ruler)", score_name(tasks))
    if not servable(client):
        return unavailable(BENCHMARK, variant, f"{type(client).__name__} serves no model lm-eval can query",
                           score_name(tasks))
    if length > client.max_context:
        raise ValueError(f"RULER {label}: length {length} exceeds the model's context {client.max_context}")
    from .served import KEY_ENV, openai_endpoint

    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="ruler_"))
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ruler_run_", dir=work) as tmp, \
            openai_endpoint(client, work_dir=work, log=log) as ep:
        shared = Path(cache_dir) if cache_dir else Path(tmp) / "cache"
        for d in ("hf_home", "nltk_data"):  # nltk downloads into the first NLTK_DATA folder that exists
            (shared / d).mkdir(parents=True, exist_ok=True)
        home = Path(tmp) / "home"
        home.mkdir()
        spec = {"base_url": ep.base_url, "api_key_env": KEY_ENV if ep.api_key else None,
                "served_name": ep.served_name, "tokenizer_dir": ep.tokenizer_dir, "tasks": list(tasks),
                "length": length, "limit": samples_per_task, "max_length": client.max_context,
                "num_concurrent": 1 if ep.managed_here else concurrency, "timeout_s": request_timeout_s,
                "output_dir": str(Path(tmp) / "lm_eval"),
                "dataset_cache_dir": str(shared / "datasets") if cache_dir else None}
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec))
        cmd = [str(python), "-I", str(RUNNER), "--spec", str(spec_path), "--out", str(out_path)]
        env = lm_eval_env(home=home, cache_dir=shared, offline=offline, endpoint_host=urlsplit(ep.base_url).hostname
                          or "127.0.0.1", endpoint_env=ep.child_env())
        with Timer() as tg:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise RulerRunError(
                    f"lm-eval's RULER run passed its {timeout_s:.0f} s budget (timeout_s) at length {length}: "
                    f"{len(tasks)} tasks x {samples_per_task or 'all'} samples, {spec['num_concurrent']} request(s) "
                    f"at once. Possible causes: the server is slower than the budget allows (raise timeout_s or "
                    f"concurrency); one of lm-eval 0.4.13's generators never ends (vt and cwe do when even their "
                    f"smallest haystack does not fit this length with this tokenizer)") from None
        if proc.returncode != 0 or not out_path.exists():
            raise RulerRunError(f"lm-eval's RULER run failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
        res = json.loads(out_path.read_text())
    rep = report_from_result(res, tasks=tasks, not_run=not_run, length=length, label=label, limit=samples_per_task,
                             timings={"generate_and_score_s": round(tg.s, 3)}, inference=client.describe())
    if ep.managed_here:
        rep.notes.append("served by the transformers stand-in for vllm serve, started for this report")
    if log:
        log(f"RULER {label}: {rep.score} ({res['scorer']}, {len(tasks)} of 13 tasks)")
    return rep
