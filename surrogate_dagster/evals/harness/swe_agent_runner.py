"""mini-swe-agent on SWE-bench instances against a served model; run by the scaffold environment's Python.

    <.venv-swe-agent>/bin/python -I swe_agent_runner.py --spec spec.json --out result.json < key

(stdin: the endpoint's key on one line, an empty line for none.)

Imports only the standard library and ``minisweagent`` (and, through it, litellm): it runs in the
separate environment where mini-swe-agent's pins live, never this project's package. ``spec.json``:

    {"instances": [{"instance_id", "repo", "problem_statement", "base_commit",
                    "repo_source"}],   # a git URL or path the base commit can be fetched from
     "work_dir": dir,                  # checkouts/, repos/ (fetch caches), trajectories/, predictions.jsonl
     "base_url": "http://host:port",   # the OpenAI-compatible server (without /v1)
     "served_name": str,               # the model name requests use
     "model_name_or_path": str,        # predictions' model_name_or_path
     "agent_config": "swebench_backticks.yaml",  # one of mini-swe-agent's own config files
     "step_limit": int, "cost_limit": float, "wall_time_limit_s": int, "command_timeout_s": int,
     "max_tokens": int | null, "temperature": float | null, "model_retries": int, "workers": int,
     "environment": "bubblewrap" | "local"}

What runs is mini-swe-agent's: its ``DefaultAgent`` with the agent and model settings of
``agent_config`` (the text-based SWE-bench prompts: one ```mswea_bash_command``` block per answer,
so any chat-completions server serves it, no tool-call parser), ``LitellmTextbasedModel`` pointed
at ``base_url`` (litellm's ``openai/`` provider) and one of its environments: every command runs in a
subprocess of this one, in a checkout of the instance's repository at its base commit, either
inside bubblewrap (``BubblewrapEnvironment`` with its own mounts: the checkout read-write, the
system's /usr, /bin, /lib, /lib64, /etc read-only, a private /tmp, /proc and /dev; plus, here, its
own network namespace with only a loopback of its own, its own pid namespace, and a sandbox that
dies with this process: :data:`BUBBLEWRAP_EXTRA_ARGS`) or as a plain subprocess
(``LocalEnvironment``: the host as this process sees it). Before any instance, one command
(``true``) is run in the chosen environment; if it fails (bubblewrap missing, user namespaces
blocked) the runner exits naming why rather than letting every command of every instance fail.
The model's calls come from this process, never from inside the sandbox. The only code added
here: the checkout (each repository cloned once into
a fetch cache; each instance gets a depth-1 fetch of its base commit, no remote, no later history),
the ``/testbed`` of the config's prompts replaced by the checkout's path (the leaderboard's agent
works in the instance's Docker image at /testbed), the key read from stdin (so it is in no
process's environment, ``/proc/<pid>/environ``, that a command could read; stdin is then
/dev/null) and handed to litellm per call rather than stored in the model's config (which the
trajectory records), and the patch: ``git diff
<base_commit>`` of the work tree (tracked files; what the agent created but never added is not
part of it).

Offline by construction: litellm's bundled price map (``LITELLM_LOCAL_MODEL_COST_MAP``,
``LITELLM_OFFLINE_MODE``), cost tracking that tolerates a model litellm has no price for
(``MSWEA_COST_TRACKING=ignore_errors``), mini-swe-agent's global config folder inside ``work_dir``
(it would read a user's ``.env``) and its start-up banner off.

Outputs: ``<work_dir>/predictions.jsonl`` (SWE-bench's format: ``instance_id``,
``model_name_or_path``, ``model_patch``), ``<work_dir>/trajectories/<instance_id>.traj.json``
(mini-swe-agent's own trajectory file) and ``result.json``: versions, and per instance its exit
status, model calls, commands run, patch size and error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

SCAFFOLD = "mini-swe-agent"
PREDICTIONS = "predictions.jsonl"


class CheckoutError(RuntimeError):
    """The instance's repository could not be checked out at its base commit."""


def offline_environment(work_dir: Path, model_retries: int) -> dict[str, str]:
    """The variables mini-swe-agent and litellm read at import: no downloads, no banner, no user config."""
    return {"MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(work_dir / "mswea-config"),
            "MSWEA_COST_TRACKING": "ignore_errors", "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(model_retries),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1",
            "DO_NOT_TRACK": "1"}


def _git(*args: str, cwd: Path | None = None, timeout: float = 1800) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise CheckoutError(f"git {' '.join(args[:3])} failed: {r.stderr.strip()[-400:]}")
    return r.stdout


def cache_dir(work: Path, inst: dict) -> Path:
    """The fetch cache of an instance's repository (one per ``repo``)."""
    return work / "repos" / (inst.get("repo") or inst["instance_id"]).replace("/", "__")


def prepare_cache(source: str, commits: list[str], cache: Path) -> None:
    """A bare clone of ``source`` at ``cache`` that holds every commit of ``commits`` (fetched again if not)."""
    if not (cache / "HEAD").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "-q", "--bare", source, str(cache))
        _git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=cache)
    if any(subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"], cwd=cache, capture_output=True).returncode
           for c in commits):
        _git("fetch", "-q", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", cwd=cache)


def checkout(cache: Path, base_commit: str, dest: Path) -> None:
    """``dest``: a repository holding only ``base_commit`` (depth 1, no remote), work tree at it,
    fetched from the prepared cache: the checkout has no later history to read."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    _git("init", "-q", cwd=dest)
    _git("fetch", "-q", "--depth", "1", f"file://{cache.resolve()}", base_commit, cwd=dest)
    _git("-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD", cwd=dest)
    head = _git("rev-parse", "HEAD", cwd=dest).strip()
    if head != base_commit:
        raise CheckoutError(f"checked out {head}, not the base commit {base_commit}")


def work_tree_patch(repo: Path, base_commit: str) -> str:
    """The work tree's changes to tracked files against ``base_commit``, as a unified diff with
    a/ b/ prefixes whatever the user's git config says ("" when nothing changed)."""
    return _git("-c", "core.quotepath=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
                "diff", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", base_commit,
                cwd=repo, timeout=120)


def agent_settings(spec: dict, cwd: Path) -> tuple[dict, dict, dict]:
    """(agent, model, environment) settings: ``agent_config`` with the spec's limits, the prompts'
    /testbed replaced by ``cwd``."""
    from minisweagent.config import get_config_from_spec

    cfg = get_config_from_spec(spec["agent_config"])
    agent = {k: v for k, v in cfg["agent"].items()}
    for key in ("system_template", "instance_template"):
        agent[key] = agent[key].replace("/testbed", str(cwd))
    agent.update(step_limit=int(spec["step_limit"]), cost_limit=float(spec["cost_limit"]),
                 wall_time_limit_seconds=int(spec.get("wall_time_limit_s") or 0))
    model = {k: v for k, v in cfg["model"].items() if k not in ("model_name", "model_class")}
    kwargs = dict(model.get("model_kwargs") or {})
    kwargs["api_base"] = spec["base_url"].rstrip("/") + "/v1"
    if spec.get("max_tokens"):
        kwargs["max_tokens"] = int(spec["max_tokens"])
    if spec.get("temperature") is not None:
        kwargs["temperature"] = float(spec["temperature"])
    model.update(model_name=f"openai/{spec['served_name']}", model_kwargs=kwargs, cost_tracking="ignore_errors")
    env = {"env": dict((cfg.get("environment") or {}).get("env") or {}), "timeout": int(spec["command_timeout_s"])}
    return agent, model, env


def make_model(model_cfg: dict, api_key: str):
    """mini-swe-agent's text-based litellm model; the key goes to each call, not into its config."""
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    class ServedModel(LitellmTextbasedModel):
        def _query(self, messages, **kwargs):
            return super()._query(messages, api_key=api_key, **kwargs)

    return ServedModel(**model_cfg)


def commands_run(messages: list[dict]) -> int:
    """Commands the environment executed: observation messages carry their return code."""
    return sum(1 for m in messages if "returncode" in (m.get("extra") or {}))


ENVIRONMENTS = {"bubblewrap": "minisweagent.environments.extra.bubblewrap.BubblewrapEnvironment",
                "local": "minisweagent.environments.local.LocalEnvironment"}
# after mini-swe-agent's own wrapper_args: no network (a private loopback only: no upstream fetch, no
# host service), no view of the host's processes, and no sandbox that outlives this runner
BUBBLEWRAP_EXTRA_ARGS = ("--unshare-net", "--unshare-pid", "--die-with-parent")


def bubblewrap_args() -> list[str]:
    """mini-swe-agent's default bubblewrap arguments followed by :data:`BUBBLEWRAP_EXTRA_ARGS`."""
    from minisweagent.environments.extra.bubblewrap import BubblewrapEnvironmentConfig

    return [*BubblewrapEnvironmentConfig.model_fields["wrapper_args"].default, *BUBBLEWRAP_EXTRA_ARGS]


def make_environment(kind: str, cwd: Path, env_cfg: dict):
    """mini-swe-agent's environment ``kind`` (:data:`ENVIRONMENTS`) working in ``cwd``."""
    import importlib

    module, name = ENVIRONMENTS[kind].rsplit(".", 1)
    extra = {"wrapper_args": bubblewrap_args()} if kind == "bubblewrap" else {}
    return getattr(importlib.import_module(module), name)(cwd=str(cwd), **env_cfg, **extra)


def probe_environment(kind: str, work: Path) -> None:
    """Run ``true`` in the environment ``kind``; exit naming why if it cannot run a command."""
    probe = work / "environment-probe"
    probe.mkdir(parents=True, exist_ok=True)
    out = make_environment(kind, probe, {"timeout": 60}).execute({"command": "true"})
    if out.get("returncode") != 0:
        raise SystemExit(f"the {kind} environment cannot run a command (`true` returned {out.get('returncode')}): "
                         f"{(out.get('output') or '').strip()[-400:]} {out.get('exception_info') or ''}".strip())


def run_instance(inst: dict, spec: dict, api_key: str, work: Path, cache_error: str | None) -> dict:
    """One instance: checkout, agent run, patch, trajectory; never raises for the instance's own failure."""
    from minisweagent.agents.default import DefaultAgent

    iid = inst["instance_id"]
    repo = work / "checkouts" / iid
    traj = work / "trajectories" / f"{iid}.traj.json"
    row = {"instance_id": iid, "exit_status": None, "model_calls": 0, "commands_run": 0, "model_patch": "",
           "submission_chars": 0, "error": None, "trajectory": str(traj)}
    t0 = time.monotonic()
    try:
        if cache_error:
            raise CheckoutError(cache_error)
        checkout(cache_dir(work, inst), inst["base_commit"], repo)
    except (CheckoutError, subprocess.TimeoutExpired) as e:
        row.update(exit_status="CheckoutError", error=str(e)[:500], wall_s=round(time.monotonic() - t0, 3))
        return row
    agent_cfg, model_cfg, env_cfg = agent_settings(spec, repo)
    agent = DefaultAgent(make_model(model_cfg, api_key), make_environment(spec["environment"], repo, env_cfg),
                         output_path=traj, **agent_cfg)
    submission = ""
    try:
        info = agent.run(inst["problem_statement"])
        row["exit_status"] = info.get("exit_status") or "unknown"
        submission = info.get("submission") or ""
    except Exception as e:  # noqa: BLE001 - recorded per instance, as mini-swe-agent's batch runner does
        row.update(exit_status=type(e).__name__, error=str(e)[:500])
    try:
        row["model_patch"] = work_tree_patch(repo, inst["base_commit"])
    except (CheckoutError, subprocess.TimeoutExpired) as e:
        row["error"] = (row["error"] or "") + f" patch: {e}"[:300]
    row.update(model_calls=agent.n_calls, commands_run=commands_run(agent.messages),
               submission_chars=len(submission), wall_s=round(time.monotonic() - t0, 3))
    agent.save(traj, {"info": {"exit_status": row["exit_status"], "submission": submission,
                               "model_patch": row["model_patch"]}, "instance_id": iid})
    shutil.rmtree(repo, ignore_errors=True)
    return row


def read_key(stream) -> str:
    """The endpoint's key: the first line of ``stream`` ("EMPTY" for none, as litellm wants one);
    fd 0 is then /dev/null, so no command the agent runs reads the rest of the pipe."""
    key = stream.readline().rstrip("\n")
    stream.close()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return key or "EMPTY"


def run(spec: dict) -> dict:
    work = Path(spec["work_dir"]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(offline_environment(work, int(spec.get("model_retries", 3))))
    api_key = read_key(sys.stdin)
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    if spec["environment"] not in ENVIRONMENTS:
        raise SystemExit(f"environment {spec['environment']!r}: expected one of {sorted(ENVIRONMENTS)}")
    probe_environment(spec["environment"], work)
    instances = list(spec["instances"])
    # each repository cloned once, before the instances run in parallel
    cache_errors: dict[str, str] = {}
    for cache in dict.fromkeys(cache_dir(work, i) for i in instances):
        mine = [i for i in instances if cache_dir(work, i) == cache]
        try:
            prepare_cache(mine[0]["repo_source"], [i["base_commit"] for i in mine], cache)
        except (CheckoutError, subprocess.TimeoutExpired) as e:
            cache_errors[str(cache)] = f"{mine[0]['repo_source']}: {e}"
    with ThreadPoolExecutor(max_workers=max(1, int(spec.get("workers", 1)))) as pool:
        rows = list(pool.map(lambda i: run_instance(i, spec, api_key, work, cache_errors.get(str(cache_dir(work, i)))),
                             instances))
    preds = [{"instance_id": r["instance_id"], "model_name_or_path": spec["model_name_or_path"],
              "model_patch": r["model_patch"]} for r in rows]
    (work / PREDICTIONS).write_text("".join(json.dumps(p) + "\n" for p in preds))
    return {"scaffold": f"{SCAFFOLD} {version(SCAFFOLD)}", "litellm": version("litellm"),
            "agent": "minisweagent.agents.default.DefaultAgent", "agent_config": spec["agent_config"],
            "model_class": "minisweagent.models.litellm_textbased_model.LitellmTextbasedModel",
            "environment": ENVIRONMENTS[spec["environment"]],
            "predictions": str(work / PREDICTIONS),
            "instances": [{k: v for k, v in r.items() if k != "model_patch"} | {"patch_chars": len(r["model_patch"])}
                          for r in rows]}


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
