"""SWE-bench Lite as the leaderboards run it: an agent scaffold makes the patches, the official
``swebench`` harness scores them.

Patches: mini-swe-agent (:mod:`.swe_agent`, run out of process in ``.venv-swe-agent``), its
``DefaultAgent`` with its own SWE-bench prompts (``swebench_backticks.yaml``), drives the served
checkpoint (:mod:`.served`: the profile's ``vllm serve``, or the transformers stand-in started for
it) in a checkout of each instance's repository at its base commit, up to the configured step
limit, with no cost limit; the prediction is the work tree's ``git diff``. Score: the predictions
go to ``python -m swebench.harness.run_evaluation`` (``swebench_python``, the environment with
``swebench`` installed), which runs every instance's tests in Docker; the score is the share of
instances it reports resolved.

The harness's ``--run_id`` carries the predictions' digest (:func:`harness_run_id`): it keeps
per-instance results under ``logs/run_evaluation/<run_id>/`` in the work dir and skips instances
that have one, so other patches always get a run of their own.

Where that cannot run (no Docker daemon, offline: the shared copy lacks the rows' test fields, no
swebench environment) the scaffold still runs, on the shipped fixture instance
(:mod:`.swebench_fixture`), and the report is ``unavailable`` with every reason; the scaffold's
figures (instances attempted, patches produced, model calls, exit statuses) are in its metrics.
A run that broke is ``unavailable`` too, naming the instances: any instance that failed to set up
(no checkout, the server unreachable: :data:`.swe_agent.SETUP_FAILURES`), or the harness erroring
on every instance with a patch. It never carries a resolved rate the harness did not compute. A
profile's ``max_items`` runs the first N instances: the report says so, and the gate is the
catalog's informative ``partial:`` bar, not the runbook's 25 on all 300.

How it differs from the leaderboard's mini-swe-agent run: the agent's shell is a checkout on this
host inside bubblewrap (mini-swe-agent's ``BubblewrapEnvironment``: the checkout read-write, the
system's /usr, /bin, /lib, /lib64, /etc read-only, a private /tmp, no network and no host process:
:mod:`.swe_agent_runner`), not the instance's SWE-bench Docker image (the repository's
dependencies are not installed, so the agent cannot run its tests there); decoding is greedy with
a per-call token budget; the patch is ``git diff`` of tracked files, not the text the agent submits
(both are in the trajectory).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from ...inference import InferenceClient
from ...paths import resolve_repo_path
from .common import EvalReport, Timer, pct
from .swe_agent import (SETUP_FAILURES, ScaffoldRun, ScaffoldSettings, run_scaffold, scaffold_figures,
                        scaffold_python)

BENCHMARK = "swebench_lite"
VARIANT = "SWE-bench Lite (test, 300): mini-swe-agent patches, the swebench harness's resolved share"
SCORE_NAME = "% resolved"


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


def parse_harness_report(path: Path) -> dict:
    """The harness' summary JSON -> resolved / submitted ids and counts."""
    d = json.loads(Path(path).read_text())
    resolved = d.get("resolved_ids") or d.get("resolved_instances_ids") or []
    if isinstance(d.get("resolved_instances"), int) and not resolved:
        raise ValueError(f"{path}: report has counts but no resolved ids")
    return {"resolved_ids": sorted(resolved), "submitted_ids": sorted(d.get("submitted_ids") or []),
            "total_instances": d.get("total_instances"), "error_ids": sorted(d.get("error_ids") or [])}


def harness_python(configured: str | None) -> Path | None:
    """The swebench environment's interpreter (``phases.evals.swebench_python``: a path, relative to
    the repository unless absolute, or a bare command name on PATH), or None if absent."""
    if not configured:
        return None
    if "/" not in configured:
        found = shutil.which(configured)
        return Path(found) if found else None
    p = resolve_repo_path(configured)
    return p if p.exists() else None


def harness_run_id(model_name: str, revision: str | None, predictions: bytes) -> str:
    """The harness's ``--run_id``: the model, its revision and the predictions' digest. The harness
    keeps per-instance results under logs/run_evaluation/<run_id>/ and skips instances that have one,
    so a run id shared by other predictions would score the old patches."""
    return f"{model_name}-{revision or 'rev'}-{hashlib.sha256(predictions).hexdigest()[:16]}"


def harness_blockers(*, offline: bool, swebench_python: str | None, docker: tuple[bool, str]) -> list[str]:
    """Why the official harness cannot score here (empty: it can)."""
    out = []
    if not docker[0]:
        out.append(f"Docker unavailable ({docker[1]}): SWE-bench's harness runs every instance's tests in a "
                   "container, so nothing was scored")
    if offline:
        out.append("offline: the harness needs the HF dataset rows with test_patch / FAIL_TO_PASS / PASS_TO_PASS; "
                   "the shared copy has only problem statements and gold patches")
    if not swebench_python:
        out.append("no swebench environment configured (phases.evals.swebench_python)")
    elif harness_python(swebench_python) is None:
        where = resolve_repo_path(swebench_python) if "/" in swebench_python else f"{swebench_python} on PATH"
        out.append(f"the swebench environment {where} does not exist (make gpu-host on a host with Docker)")
    return out


def repo_source(repo: str) -> str:
    """Where a dataset row's repository (``owner/name``) is cloned from."""
    return f"https://github.com/{repo}.git"


def servable(client: InferenceClient) -> bool:
    """Whether the scaffold can query ``client``'s model over HTTP (a served or stand-in-servable one)."""
    from ...inference import TransformersInference, VLLMServerInference

    return isinstance(client, (VLLMServerInference, TransformersInference))


def _scaffold(client: InferenceClient, instances: list[dict], settings: ScaffoldSettings, python: Path,
              work_dir: Path, log: Callable[[str], None] | None) -> ScaffoldRun:
    from .served import openai_endpoint

    with openai_endpoint(client, work_dir=work_dir, log=log) as ep:
        return run_scaffold(ep, instances, settings, python=python, work_dir=work_dir, model_name=client.ref.name)


def _scaffold_notes(run: ScaffoldRun, settings: ScaffoldSettings) -> list[str]:
    return [f"patches by {run.scaffold} ({run.detail['agent']}, config {run.detail['agent_config']}, "
            f"{run.detail['model_class'].rsplit('.', 1)[-1]} via litellm {run.detail['litellm']}, "
            f"{run.detail['environment'].rsplit('.', 1)[-1]}: a checkout at the base commit on this host)",
            f"step limit {settings.step_limit}, cost limit {settings.cost_limit or 'none'}, "
            f"temperature {settings.temperature}, max_tokens per call {settings.max_tokens or 'server default'}",
            "model_patch: git diff of the work tree against the base commit (tracked files)"]


def _samples(run: ScaffoldRun, resolved: set[str] | None = None) -> list[dict]:
    patches = {p["instance_id"]: p["model_patch"] for p in run.predictions}
    return [{**r, "model_patch": patches.get(r["instance_id"], ""),
             **({} if resolved is None else {"resolved": r["instance_id"] in resolved})} for r in run.instances]


def fixture_report(client: InferenceClient, reasons: list[str], *, settings: ScaffoldSettings,
                   agent_python: Path | None, work_dir: Path, log: Callable[[str], None] | None) -> EvalReport:
    """``unavailable`` (``reasons``), with the scaffold run on the shipped fixture instance where it can run."""
    from .swebench_fixture import build_fixture_repo, fixture_missing

    reason = "; ".join(reasons)
    base = EvalReport(benchmark=BENCHMARK, variant=VARIANT, version="", status="unavailable", score=None,
                      score_name=SCORE_NAME, reason=reason)
    if agent_python is None:
        base.notes = ["scaffold not run: no mini-swe-agent environment (.venv-swe-agent: make setup; "
                      "phases.evals.swe_agent_python)"]
        return base
    if not servable(client):
        base.notes = [f"scaffold not run: {type(client).__name__} serves no model the scaffold can query"]
        return base
    missing = fixture_missing()
    if missing:
        base.notes = [f"scaffold not run: {missing}"]
        return base
    instance = build_fixture_repo(work_dir / "fixture_repo")
    with Timer() as t:
        run = _scaffold(client, [instance], settings, agent_python, work_dir / "fixture_run", log)
    figures = scaffold_figures(run.instances)
    if log:
        log(f"SWE-bench Lite unavailable ({reason}); scaffold on the fixture instance: {figures}")
    base.samples = _samples(run)
    base.dataset = {"source": "fixtures/swebench/mini_stats (shipped fixture instance)",
                    "instance": instance["instance_id"], "base_commit": instance["base_commit"]}
    base.metrics = {"scaffold": run.scaffold, **run.detail, **figures,
                    "scaffold_instances": "the shipped fixture instance",
                    "inference": client.describe()}
    base.timings = {"scaffold_s": round(t.s, 3)}
    base.notes = ["not scored: the scaffold ran on the shipped fixture instance only; no resolved share is "
                  "computed without the official harness", *_scaffold_notes(run, settings)]
    return base


def run(client: InferenceClient, *, offline: bool, work_dir: Path, swebench_python: str | None,
        settings: ScaffoldSettings, agent_python: str | None, dataset_name: str = "princeton-nlp/SWE-bench_Lite",
        split: str = "test", max_items: int | None = None, max_workers: int = 4, timeout_s: int = 4 * 3600,
        log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint, or say plainly why it cannot be scored here (module docstring)."""
    work_dir = Path(work_dir)
    python = scaffold_python(agent_python)
    harness = harness_python(swebench_python)
    docker = docker_status()
    blockers = harness_blockers(offline=offline, swebench_python=swebench_python, docker=docker)
    if python is None and not blockers:
        blockers = [f"no mini-swe-agent environment ({agent_python}: make setup): no patches to score"]
    if blockers or not servable(client):
        if not blockers:
            blockers = [f"{type(client).__name__} serves no model the scaffold can query"]
        return fixture_report(client, blockers, settings=settings, agent_python=python, work_dir=work_dir, log=log)
    from datasets import load_dataset

    rows = list(load_dataset(dataset_name, split=split))
    rows = rows[:max_items] if max_items else rows
    instances = [{"instance_id": r["instance_id"], "repo": r["repo"], "problem_statement": r["problem_statement"],
                  "base_commit": r["base_commit"], "repo_source": repo_source(r["repo"])} for r in rows]
    with Timer() as tg:
        run_ = _scaffold(client, instances, settings, python, work_dir / "scaffold", log)
    figures = scaffold_figures(run_.instances)
    setup_failed = sorted(r["instance_id"] for r in run_.instances if r.get("exit_status") in SETUP_FAILURES)
    if setup_failed:
        return _broken(run_, figures, client, settings, max_items, dataset_name, split,
                       f"{len(setup_failed)} of {len(run_.instances)} instances failed to set up (no checkout, or "
                       f"the server unreachable), so a resolved share over the rest is not SWE-bench Lite's: "
                       + ", ".join(f"{i} ({_status(run_, i)})" for i in setup_failed[:20]))
    model_name = client.ref.name
    run_id = harness_run_id(model_name, client.ref.revision, run_.predictions_path.read_bytes())
    with Timer() as ts:
        proc = subprocess.run([str(harness), "-m", "swebench.harness.run_evaluation", "--dataset_name", dataset_name,
                               "--split", split, "--predictions_path", str(run_.predictions_path), "--max_workers",
                               str(max_workers), "--run_id", run_id], cwd=work_dir, capture_output=True, text=True,
                              timeout=timeout_s)
    report_path = work_dir / f"{model_name}.{run_id}.json"
    if proc.returncode != 0 or not report_path.exists():
        raise RuntimeError(f"swebench harness failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    rep = parse_harness_report(report_path)
    patched = {p["instance_id"] for p in run_.predictions if p["model_patch"]}
    if patched and set(rep["error_ids"]) >= patched:
        return _broken(run_, figures, client, settings, max_items, dataset_name, split,
                       f"the swebench harness errored on every instance with a patch ({len(patched)}; see "
                       f"logs/run_evaluation/{run_id}/): nothing was scored")
    resolved = set(rep["resolved_ids"])
    samples = _samples(run_, resolved)
    n = len(samples)
    return EvalReport(benchmark=BENCHMARK, variant=_variant(max_items), version=f"{dataset_name}:{split}", status="ok",
                      score=pct(len(resolved), n), score_name=SCORE_NAME, n_items=n, samples=samples,
                      dataset={"source": dataset_name, "split": split},
                      metrics={"resolved": len(resolved), "errors": len(rep["error_ids"]), "docker": docker[1],
                               "scaffold": run_.scaffold, **run_.detail, **figures,
                               "empty_patches": n - figures["patches_produced"], "inference": client.describe()},
                      timings={"scaffold_s": round(tg.s, 3), "score_s": round(ts.s, 3),
                               "samples_per_s": round(n / (tg.s + ts.s), 4) if n else 0.0},
                      notes=_scaffold_notes(run_, settings) + _subset_notes(max_items))


def _variant(max_items: int | None) -> str:
    return VARIANT.replace("(test, 300)", f"(test, first {max_items} of 300)") if max_items else VARIANT


def _subset_notes(max_items: int | None) -> list[str]:
    if not max_items:
        return []
    return [f"subset: the first {max_items} instances of the test split (max_items), not SWE-bench Lite's 300: "
            "held to the `partial:` bar of assets/evals.yaml (informative, never gating)"]


def _status(run_: ScaffoldRun, iid: str) -> str:
    return next(str(r.get("exit_status")) for r in run_.instances if r["instance_id"] == iid)


def _broken(run_: ScaffoldRun, figures: dict, client: InferenceClient, settings: ScaffoldSettings,
            max_items: int | None, dataset_name: str, split: str, reason: str) -> EvalReport:
    """``unavailable``: the run broke (set-up or connection failures, the harness erroring throughout)."""
    return EvalReport(benchmark=BENCHMARK, variant=_variant(max_items), version=f"{dataset_name}:{split}",
                      status="unavailable",
                      score=None, score_name=SCORE_NAME, reason=reason, samples=_samples(run_),
                      dataset={"source": dataset_name, "split": split},
                      metrics={"scaffold": run_.scaffold, **run_.detail, **figures, "inference": client.describe()},
                      notes=_scaffold_notes(run_, settings) + _subset_notes(max_items))
