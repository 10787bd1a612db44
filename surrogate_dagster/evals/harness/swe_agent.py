"""The SWE-bench agent scaffold, out of process: mini-swe-agent in its own environment
(``.venv-swe-agent``, built by ``make setup``), driven through :mod:`.swe_agent_runner` as a
subprocess against an OpenAI-compatible endpoint (:mod:`.served`).

The runner's process gets a minimal environment (``PATH``, a scratch ``HOME``, the locale): the
agent's commands inherit it, so nothing of the pipeline's own environment (store and API
credentials) can reach a command's output or a trajectory. The endpoint's key goes to the runner
on stdin, never in an environment: a command could read ``/proc/<runner pid>/environ`` (under
``LocalEnvironment``), but not the pipe the runner has read and closed.

Pure parts (:func:`prediction_rows`, :func:`predictions_jsonl`, :func:`read_predictions`,
:func:`scaffold_figures`) hold the predictions file to SWE-bench's format and summarize a run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from ...paths import resolve_repo_path
from .served import Endpoint

RUNNER = Path(__file__).with_name("swe_agent_runner.py")
PREDICTION_KEYS = ("instance_id", "model_name_or_path", "model_patch")
INSTANCE_KEYS = ("instance_id", "repo", "problem_statement", "base_commit", "repo_source")
# exit statuses that say the run's set-up failed (no server, no checkout), not the model
SETUP_FAILURES = frozenset({"CheckoutError", "APIConnectionError", "AuthenticationError", "NotFoundError",
                            "ServiceUnavailableError", "PermissionDeniedError"})


class ScaffoldError(RuntimeError):
    """The scaffold's run failed as a whole (its process, or every instance's set-up)."""


@dataclass(frozen=True)
class ScaffoldSettings:
    """How the agent runs (assets/evals.yaml ``tier2.swebench_lite.scaffold``, a profile's overrides)."""

    agent_config: str = "swebench_backticks.yaml"
    step_limit: int = 250
    cost_limit: float = 0.0
    command_timeout_s: int = 60
    wall_time_limit_s: int = 0
    max_tokens: int | None = None
    temperature: float | None = 0.0
    workers: int = 1
    model_retries: int = 3
    environment: str = "bubblewrap"  # where the agent's commands run (swe_agent_runner.ENVIRONMENTS)
    timeout_s: int = 24 * 3600


@dataclass
class ScaffoldRun:
    scaffold: str              # "mini-swe-agent 2.4.6"
    detail: dict               # versions, agent / model / environment classes, the agent config
    instances: list[dict]      # per instance: exit_status, model_calls, commands_run, patch_chars, ...
    predictions: list[dict]    # SWE-bench's rows
    predictions_path: Path


def bubblewrap_status(timeout_s: float = 20.0) -> tuple[bool, str]:
    """(usable, detail): ``bwrap`` is on PATH and runs ``true`` with the namespaces the scaffold
    asks for (its own user, network and pid namespaces: :data:`.swe_agent_runner.BUBBLEWRAP_EXTRA_ARGS`)."""
    from .swe_agent_runner import BUBBLEWRAP_EXTRA_ARGS

    exe = shutil.which("bwrap")
    if not exe:
        return False, "bwrap is not on PATH (the bubblewrap package: scripts/install_system_deps.sh)"
    try:
        r = subprocess.run([exe, "--unshare-user-try", *BUBBLEWRAP_EXTRA_ARGS, "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"bwrap ... true ran past {timeout_s:g}s"
    if r.returncode != 0:
        return False, f"bwrap cannot create its namespaces here (exit {r.returncode}): {r.stderr.strip()[:200]}"
    return True, exe


def scaffold_python(configured: str | None) -> Path | None:
    """The scaffold environment's interpreter (``phases.evals.swe_agent_python``), or None if absent."""
    if not configured:
        return None
    p = resolve_repo_path(configured)
    return p if p.exists() else None


def prediction_rows(model_name: str, patches: Iterable[tuple[str, str]]) -> list[dict]:
    """SWE-bench's prediction rows for (instance_id, patch) pairs; a patch is "" or a diff ending in a newline."""
    rows, seen = [], set()
    for iid, patch in patches:
        if not iid or iid in seen:
            raise ValueError(f"prediction instance_id {iid!r}: empty or repeated")
        if patch and not (patch.startswith("diff --git") and patch.endswith("\n")):
            raise ValueError(f"{iid}: model_patch is not a git diff ending in a newline: {patch[:60]!r}")
        seen.add(iid)
        rows.append({"instance_id": iid, "model_name_or_path": model_name, "model_patch": patch})
    return rows


def predictions_jsonl(rows: list[dict]) -> str:
    """The predictions file ``swebench.harness.run_evaluation --predictions_path`` reads (JSON Lines)."""
    return "".join(json.dumps({k: r[k] for k in PREDICTION_KEYS}) + "\n" for r in rows)


def read_predictions(path: Path) -> list[dict]:
    """Rows of a predictions file, each checked for SWE-bench's three keys."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = [k for k in PREDICTION_KEYS if not isinstance(row.get(k), str)]
        if missing:
            raise ValueError(f"{path}:{n}: prediction without {missing}")
        rows.append(row)
    return prediction_rows(rows[0]["model_name_or_path"] if rows else "", [(r["instance_id"], r["model_patch"])
                                                                         for r in rows])


def scaffold_figures(instances: list[dict]) -> dict:
    """What the scaffold did: instances attempted, patches produced, model calls, exit statuses."""
    calls = [int(r.get("model_calls") or 0) for r in instances]
    return {"instances_attempted": len(instances),
            "patches_produced": sum(1 for r in instances if r.get("patch_chars")),
            "submitted": sum(1 for r in instances if r.get("exit_status") == "Submitted"),
            "model_calls": sum(calls), "max_model_calls": max(calls, default=0),
            "commands_run": sum(int(r.get("commands_run") or 0) for r in instances),
            "exit_statuses": dict(sorted(Counter(str(r.get("exit_status")) for r in instances).items()))}


def run_scaffold(endpoint: Endpoint, instances: list[dict], settings: ScaffoldSettings, *, python: Path,
                 work_dir: Path, model_name: str) -> ScaffoldRun:
    """mini-swe-agent over ``instances`` (rows with :data:`INSTANCE_KEYS`) against ``endpoint``."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    for inst in instances:
        missing = [k for k in INSTANCE_KEYS if k != "repo" and not inst.get(k)]
        if missing:
            raise ValueError(f"SWE-bench instance {inst.get('instance_id')!r}: missing {missing}")
    s = asdict(settings)
    spec = {"instances": [{k: inst.get(k) for k in INSTANCE_KEYS} for inst in instances],
            "work_dir": str(work_dir / "agent"), "base_url": endpoint.base_url,
            "served_name": endpoint.served_name,
            "model_name_or_path": model_name, **{k: s[k] for k in s if k != "timeout_s"}}
    spec_path, out_path = work_dir / "spec.json", work_dir / "result.json"
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    home = work_dir / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "TMPDIR": str(work_dir)}
    try:
        proc = subprocess.run([str(python), "-I", str(RUNNER), "--spec", str(spec_path), "--out", str(out_path)],
                              input=(endpoint.api_key or "") + "\n", capture_output=True, text=True, env=env,
                              timeout=settings.timeout_s)
    except subprocess.TimeoutExpired as e:
        raise ScaffoldError(f"mini-swe-agent ran past {settings.timeout_s}s") from e
    if proc.returncode != 0 or not out_path.exists():
        raise ScaffoldError(f"mini-swe-agent runner failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
    res = json.loads(out_path.read_text())
    rows = res["instances"]
    if rows and all(r["exit_status"] in SETUP_FAILURES for r in rows):
        raise ScaffoldError("every instance failed to set up: " + "; ".join(
            f"{r['instance_id']}: {r['exit_status']} {r.get('error') or ''}"[:300] for r in rows[:3]))
    preds = read_predictions(Path(res["predictions"]))
    detail = {k: res[k] for k in ("litellm", "agent", "agent_config", "model_class", "environment")}
    return ScaffoldRun(scaffold=res["scaffold"], detail=detail, instances=rows, predictions=preds,
                       predictions_path=Path(res["predictions"]))
