"""`make rehearse`: the production profile, end to end on this machine, with only its endpoints swapped.

    python -m surrogate_dagster.operations.rehearsal [--select ASSET ...] [--fail-fast]

Starts a local stand-in for every remote service production talks to, each speaking the protocol
the real client libraries use, on the ports ``resources/rehearsal.yaml`` names:

    Wasabi       moto's S3 behind a proxy that refuses what Wasabi refuses (storage/wasabi_standin.py)
    HF Hub       hub/local_server.py: the fixture datasets (fixtures/hub), tiny models under the
                 production repo ids (operations/rehearsal_models.py), pushes persisted on disk
    Anthropic    llm/local_server.py: the Messages API over the template stand-in model

then, from empty (a fresh Dagster instance, bucket, Hub push area and model cache):
1. prints every way the rehearsal profile differs from production (:data:`DIFFERENCES`; any other
   difference fails here and in tests/unit/operations/test_rehearsal_profile.py);
2. ``pin-revisions --all`` on a copy of the sources catalog against the local Hub (every
   offline-mirror pin resolved in one command), then the pre-flight check on that copy: all rows
   must pass before anything runs;
3. materializes the whole graph (``cli run`` in a child process: ``HF_ENDPOINT`` and the rehearsal
   credentials in its environment, nothing else changed);
4. loads every model pushed to the local Hub the way a user will (``AutoPeftModelForCausalLM`` for
   an adapter, ``AutoModelForCausalLM`` otherwise), through ``HF_ENDPOINT``;
5. writes ``var/rehearsal/report.md`` (differences, pre-flight table, run summary, pushes, timings).

The child processes' environment differs from production's in ``HF_ENDPOINT``, the rehearsal
credentials (random per rehearsal, only in that environment), an empty ``HF_HOME`` and
``HF_HUB_DISABLE_XET=1`` (the stand-in Hub takes uploads over LFS, not Xet).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..catalog import load_profile
from ..paths import ASSETS_DIR, REPO_ROOT, resolve_repo_path

ROOT = "var/rehearsal"
# Where the rehearsal profile may differ from production (fnmatch patterns over the flattened,
# resolved profiles), grouped by why. Nothing else may differ.
DIFFERENCES: dict[str, list[str]] = {
    "the profile itself": ["name", "description"],
    "endpoints and credentials (the local stand-ins)": [
        "object_store.endpoint_url", "object_store.access_key_env", "object_store.secret_key_env",
        "hub.endpoint", "hub.token_env", "phases.llm.base_url", "phases.llm.api_key_env"],
    "host: this box's paths and cores": [
        "phases.*.work_dir", "phases.*.benchmarks_dir", "phases.serving.vllm.log_dir", "phases.ops.dagster_home",
        "phases.ops.datatrove_executor.tasks", "phases.ops.datatrove_executor.workers",
        "phases.evals.sandbox_workers", "phases.synth.grader_workers", "phases.synth.concurrency",
        "phases.evals.inference.concurrency", "phases.training.env.OMP_NUM_THREADS"],
    "GPU-only backends on CPU (trainer CPU overrides; the transformers stand-in for vllm serve)": [
        "phases.training.executor", "phases.training.gpu_type", "phases.training.gpu_count",
        "phases.serving.vllm.command", "phases.serving.vllm.startup_timeout_s",
        "phases.serving.vllm.max_context", "phases.evals.inference.max_context"],
    "sizes: tiny models under the production ids, bounded subsets": [
        "phases.synth.target_count", "phases.synth.max_prompts_per_source", "phases.synth.max_new_tokens",
        "phases.synth.inject_pool", "phases.synth.max_pairs_per_prompt", "phases.evals.overrides.*"],
    "benchmark release files are not on the stand-in Hub (offline variants)": [
        "phases.evals.offline", "phases.curation.livecodebench_source"],
    "the Day-14 gate is reported, not enforced (a tiny random model cannot pass it)": [
        "phases.evals.smoke_gate", "phases.evals.smoke_gate_reason"],
}
S3_KEY_ENV, S3_SECRET_ENV = "REHEARSAL_S3_ACCESS_KEY", "REHEARSAL_S3_SECRET"
HF_TOKEN_ENV, LLM_KEY_ENV = "REHEARSAL_HF_TOKEN", "REHEARSAL_ANTHROPIC_KEY"


# ------------------------------------------------------------------------------ differences

def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; an empty mapping stays a leaf."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): value}


@dataclass(frozen=True)
class Difference:
    path: str
    production: Any
    rehearsal: Any
    reason: str | None  # None: not in DIFFERENCES


def profile_differences(production: str = "production", rehearsal: str = "rehearsal") -> list[Difference]:
    """Every flattened path where the two resolved profiles differ, with its documented reason."""
    prod = flatten(load_profile(production).model_dump(mode="json"))
    reh = flatten(load_profile(rehearsal).model_dump(mode="json"))
    out = []
    for path in sorted(set(prod) | set(reh)):
        if prod.get(path, "<absent>") == reh.get(path, "<absent>"):
            continue
        reason = next((why for why, pats in DIFFERENCES.items() if any(fnmatch.fnmatchcase(path, p) for p in pats)),
                      None)
        out.append(Difference(path, prod.get(path, "<absent>"), reh.get(path, "<absent>"), reason))
    return out


def render_differences(diffs: list[Difference]) -> str:
    lines = []
    for why in [*DIFFERENCES, None]:
        group = [d for d in diffs if d.reason == why]
        if not group:
            continue
        lines.append(f"{why or 'UNDOCUMENTED (not allowed)'}:")
        lines += [f"  {d.path}: {_short(d.production)} -> {_short(d.rehearsal)}" for d in group]
    return "\n".join(lines)


def _short(value: Any, width: int = 70) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 3] + "..."


# ---------------------------------------------------------------------------------- servers

def _port(url: str) -> int:
    port = urlsplit(url).port
    if port is None:
        raise ValueError(f"rehearsal endpoint {url!r} names no port")
    return port


@dataclass
class World:
    """The running stand-ins and the environment a child process needs to use them."""

    root: Path
    env: dict[str, str]
    hub: Any
    llm: Any
    s3_proxy: Any
    models: dict[str, str] = field(default_factory=dict)


@contextmanager
def stand_ins(profile_name: str = "rehearsal", root: str | Path = ROOT) -> Iterator[World]:
    """Start the three stand-ins on the profile's ports, from empty; stop them on exit."""
    from ..hub.local_server import HubServer, HubUser
    from ..llm.local_server import MessagesServer
    from ..storage.wasabi_standin import checksum_rejecting_proxy, moto_server
    from .rehearsal_models import build_rehearsal_models

    prof = load_profile(profile_name)
    base = resolve_repo_path(root)
    for sub in ("dagster_home", "mnt", "hub/pushes", "hf_home", "catalog"):
        shutil.rmtree(base / sub, ignore_errors=True)  # from empty (the built models are kept: a cache)
    models = build_rehearsal_models(base / "hub" / "models")
    hf_token, llm_key = f"hf_rehearsal_{secrets.token_hex(16)}", f"sk-ant-rehearsal-{secrets.token_hex(16)}"
    org = prof.hub.org
    llm_models = sorted(set((prof.phases.get("llm") or {}).get("models", {}).values()))
    user = HubUser("rehearsal", hf_token, is_pro=True, orgs={org: "admin"}, accepted={"bigcode/starpii"})
    env = {
        **os.environ,
        "SURROGATE_PROFILE": profile_name,
        "DAGSTER_HOME": str(base / "dagster_home"),
        "HF_ENDPOINT": prof.hub.endpoint or "",
        "HF_HOME": str(base / "hf_home"),  # an empty cache: every model is downloaded through the Hub
        "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0",
        # huggingface_hub uploads through Xet when hf_xet is installed; the stand-in speaks the Hub's
        # LFS protocol (which the Hub still serves), not Xet's
        "HF_HUB_DISABLE_XET": "1",
        HF_TOKEN_ENV: hf_token, LLM_KEY_ENV: llm_key,
        S3_KEY_ENV: f"rehearsal-{secrets.token_hex(8)}", S3_SECRET_ENV: secrets.token_hex(20),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }
    (base / "dagster_home").mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        moto_url = stack.enter_context(moto_server())
        proxy = stack.enter_context(checksum_rejecting_proxy(moto_url, port=_port(prof.object_store.endpoint_url)))
        _prepare_bucket(prof, env)
        hub = stack.enter_context(HubServer(REPO_ROOT / "fixtures" / "hub", [user], gated={"bigcode/starpii": "manual"},
                                            port=_port(prof.hub.endpoint),
                                            models_dir=base / "hub" / "models", push_dir=base / "hub" / "pushes",
                                            mirror_pins=True))
        llm = stack.enter_context(MessagesServer(api_key=llm_key, models=llm_models,
                                                 port=_port(prof.phases["llm"]["base_url"])))
        yield World(base, env, hub, llm, proxy, models)


def _prepare_bucket(prof, env: dict[str, str]) -> None:
    """What a deployer does once: create the bucket and apply the lifecycle rule (storage/s3_maintenance)."""
    import boto3
    from botocore.config import Config

    from ..storage.s3_maintenance import ensure_abort_incomplete_rule

    cfg = prof.object_store
    client = boto3.session.Session(aws_access_key_id=env[S3_KEY_ENV], aws_secret_access_key=env[S3_SECRET_ENV],
                                   region_name=cfg.region).client(
        "s3", endpoint_url=cfg.endpoint_url,
        config=Config(request_checksum_calculation="when_required", response_checksum_validation="when_required",
                      s3={"addressing_style": "path"}))
    client.create_bucket(Bucket=cfg.bucket)
    ensure_abort_incomplete_rule(client, cfg.bucket)


# ------------------------------------------------------------------------------------ steps

def _python() -> str:
    return sys.executable


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the rehearsal process dies (Linux), so a killed
    rehearsal leaves no run writing into the next one's fresh instance."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _child(world: World, args: list[str], log: Path, timeout: float | None = None) -> tuple[int, float]:
    """Run ``python -m surrogate_dagster.<args>`` in the rehearsal environment; its output goes to
    ``log`` and to this console."""
    t0 = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh:
        proc = subprocess.Popen([_python(), "-m", *args], cwd=REPO_ROOT, env=world.env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1,
                                preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            print(f"  {line.rstrip()}", flush=True)
        rc = proc.wait(timeout=timeout)
    return rc, time.monotonic() - t0


def pinned_catalog_copy(world: World) -> Path:
    """``assets/sources.yaml`` copied, then every pin re-resolved on the local Hub by pin-revisions --all."""
    path = world.root / "catalog" / "sources.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ASSETS_DIR / "sources.yaml", path)
    return path


def verify_pushes(token_env: str = HF_TOKEN_ENV, org: str | None = None) -> list[dict[str, Any]]:
    """Every model repo of the org on the Hub at ``HF_ENDPOINT``, loaded as a user would load it.
    Runs inside the rehearsal environment (``HF_ENDPOINT`` read at huggingface_hub's import)."""
    from huggingface_hub import HfApi

    org = org or load_profile().hub.org
    token = os.environ[token_env]
    api = HfApi(token=token)
    out = []
    for kind, listing in (("model", api.list_models(author=org)), ("dataset", api.list_datasets(author=org))):
        for info in listing:
            row: dict[str, Any] = {"kind": kind, "repo": info.id, "revision": info.sha}
            if kind == "model":
                files = set(api.list_repo_files(info.id, revision=info.sha))
                row["loaded_as"] = _load_model(info.id, info.sha, token, adapter="adapter_config.json" in files)
            out.append(row)
    return out


def _load_model(repo: str, revision: str, token: str, adapter: bool) -> str:
    if adapter:
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(repo, revision=revision, token=token)
        return f"AutoPeftModelForCausalLM (base {model.peft_config['default'].base_model_name_or_path})"
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(repo, revision=revision, token=token)
    return "AutoModelForCausalLM"


def rehearse(select: list[str] | None = None, fail_fast: bool = False, root: str | Path = ROOT) -> int:
    t_start = time.monotonic()
    diffs = profile_differences()
    print("rehearsal vs production, every difference:\n" + render_differences(diffs), flush=True)
    undocumented = [d for d in diffs if d.reason is None]
    if undocumented:
        print(f"FAIL: {len(undocumented)} undocumented difference(s) from production", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"differences": [d.__dict__ for d in diffs], "steps": {}}
    with stand_ins(root=root) as world:
        logs = world.root / "logs"
        print(f"stand-ins up: S3 {world.s3_proxy.endpoint_url} (moto behind the Wasabi proxy), Hub {world.hub.url} "
              f"({len(world.models)} models), Messages API {world.llm.url}", flush=True)
        catalog = pinned_catalog_copy(world)
        steps = [("pin-revisions --all", ["surrogate_dagster.cli", "pin-revisions", "--all", "--profile", "rehearsal",
                                          "--catalog", str(catalog)]),
                 ("preflight", ["surrogate_dagster.cli", "preflight", "--profile", "rehearsal", "--catalog", str(catalog)]),
                 ("run", ["surrogate_dagster.cli", "run", *(["--select", *select] if select else []),
                          *(["--fail-fast"] if fail_fast else [])]),
                 ("verify pushes", ["surrogate_dagster.operations.rehearsal", "verify-pushes",
                                    "--out", str(world.root / "pushes.json")])]
        rc = 0
        for name, args in steps:
            print(f"== {name}", flush=True)
            step_rc, secs = _child(world, args, logs / f"{name.split()[0]}.log")
            report["steps"][name] = {"rc": step_rc, "seconds": round(secs, 1)}
            print(f"== {name}: {'ok' if step_rc == 0 else f'FAILED (exit {step_rc})'} in {secs:.0f} s", flush=True)
            rc = rc or step_rc
            if step_rc != 0 and name != "run":  # a run with failed steps still pushed what it could: load it
                break
        pushes = world.root / "pushes.json"
        report["pushes"] = json.loads(pushes.read_text()) if pushes.exists() else []
        report["hub_requests"] = len(world.hub.requests)
        report["messages_requests"] = world.llm.n_requests
        report["s3_rejected_checksum_requests"] = len(world.s3_proxy.rejected)
        report["s3_forwarded_requests"] = world.s3_proxy.forwarded
    report["seconds"] = round(time.monotonic() - t_start, 1)
    report["passed"] = rc == 0
    (resolve_repo_path(root) / "report.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"rehearsal {'PASSED' if rc == 0 else 'FAILED'} in {report['seconds']:.0f} s; "
          f"{len(report['pushes'])} repos pushed and loaded; report: {resolve_repo_path(root) / 'report.json'}")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m surrogate_dagster.operations.rehearsal")
    sub = ap.add_subparsers(dest="cmd")
    ap.add_argument("--select", nargs="*", help="asset names to run (default: the whole graph)")
    ap.add_argument("--fail-fast", action="store_true", help="stop the run at the first failed step")
    v = sub.add_parser("verify-pushes", help="load every pushed model (inside the rehearsal environment)")
    v.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "verify-pushes":
        rows = verify_pushes()
        Path(args.out).write_text(json.dumps(rows, indent=2))
        for r in rows:
            print(f"{r['kind']:8} {r['repo']}@{(r['revision'] or '')[:12]} {r.get('loaded_as', '')}")
        return 0
    return rehearse(args.select, args.fail_fast)


if __name__ == "__main__":
    sys.exit(main())
