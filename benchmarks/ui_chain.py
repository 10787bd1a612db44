"""One source's chain launched from the UI against the same chain in `make run`, seconds and ratio.

    .venv/bin/python benchmarks/ui_chain.py [--sources xlam_function_calling when2call_sft] [--rounds 2]

The chain is the run `make run` makes per source partition (source_rows, normalized_rows,
sanitized_rows, filtered_rows, minhash_signatures, with the checks that ride along). On a temp
copy of the local profile's paths (nothing written to the repository's var/):

1. baseline, `make run`'s way: the run executed in process by the CLI (cli._materialize, after
   the code location is loaded once), per source and round; the first run of the process also
   pays one-time loads (the NER model, numba kernels), so cold and warm runs are printed apart;
2. the UI's way: `make ui` (`cli ui`: dagster dev, webserver + daemon, the queued run coordinator)
   with the same instance; each run launched through the GraphQL mutation the Materialize button
   sends (launchRun on the asset job, the partition as tag), timed from the launch to the run's
   SUCCESS as recorded by the instance; the run record's times split it into waiting (queue and
   run-worker start) and executing.

Prints per run seconds and the ratio UI / CLI over the warm runs (the target: <= 1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHAIN = ["source_rows", "normalized_rows", "sanitized_rows", "filtered_rows", "minhash_signatures"]
PREREQUISITES = ["eval_canaries", "helper_rows"]  # parents of the chain outside it
LOCATION = "surrogate_dagster.definitions"  # the location name workspace.yaml gives


def local_profile_in(tmp: Path) -> Path:
    """The local profile with every path it writes inside tmp."""
    prof = yaml.safe_load((REPO / "resources" / "local.yaml").read_text())
    prof["object_store"]["root"] = str(tmp / "store")
    prof["hub"].update(mirror_dir=str(REPO / "fixtures" / "hub"), push_dir=str(tmp / "pushes"))
    for section in (prof.get("phases") or {}).values():
        for k, v in list(section.items()):
            if k.endswith("_dir") and isinstance(v, str) and v.startswith("var/"):
                section[k] = str(tmp / v)
    path = tmp / "local.yaml"
    path.write_text(yaml.safe_dump(prof))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    req = urllib.request.Request(url + "/graphql", data=json.dumps({"query": query, "variables": variables or {}}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        out = json.load(resp)
    if out.get("errors"):
        raise RuntimeError(f"GraphQL errors: {out['errors']}")
    return out["data"]


LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on InvalidSubsetError { message } ... on RunConfigValidationInvalid { errors { message } } } }"""


def launch_from_ui(url: str, partition: str) -> str:
    params = {"selector": {"repositoryLocationName": LOCATION, "repositoryName": "__repository__",
                           "jobName": "__ASSET_JOB", "assetSelection": [{"path": [k]} for k in CHAIN]},
              "mode": "default", "runConfigData": "{}",
              "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]}}
    out = graphql(url, LAUNCH, {"p": params})["launchRun"]
    if out["__typename"] != "LaunchRunSuccess":
        raise RuntimeError(f"launchRun: {out}")
    return out["run"]["runId"]


def wait_until(fn, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            out = fn()
            if out:
                return out
        except OSError:
            pass  # the webserver is still starting
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", nargs="+", default=["xlam_function_calling", "when2call_sft"])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ui-chain-"))
    os.environ["SURROGATE_PROFILE"] = str(local_profile_in(tmp))
    from dagster import DagsterInstance, DagsterRunStatus

    from surrogate_dagster import cli

    home = cli.ensure_instance_home(tmp / "dagster_home", set_env=False)
    os.environ["DAGSTER_HOME"] = str(home)
    from surrogate_dagster import definitions
    from surrogate_dagster.sources.revisions import record_revision_observations

    defs = definitions.defs
    all_assets = [*(defs.assets or []), *(defs.asset_checks or [])]
    graph = defs.resolve_asset_graph()
    from dagster import AssetKey

    keys = [AssetKey(k) for k in CHAIN]
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    cli_times: list[tuple[str, int, float]] = []
    with DagsterInstance.get() as instance:
        record_revision_observations(instance, defs.resources["hub"].get_client())
        print("prerequisites (not timed): " + ", ".join(PREREQUISITES), flush=True)
        for name in PREREQUISITES:
            pdef = graph.get(AssetKey(name)).partitions_def
            for pk in (pdef.get_partition_keys() if pdef else [None]):
                if not cli._materialize(all_assets, [AssetKey(name)], pk, instance, defs.resources, run_config,
                                        cli.owner_tags()).success:
                    raise SystemExit(f"prerequisite {name}[{pk}] failed")
        for rnd in range(args.rounds):
            for src in args.sources:
                t0 = time.monotonic()
                ok = cli._materialize(all_assets, keys, src, instance, defs.resources, run_config,
                                      cli.owner_tags()).success
                dt = time.monotonic() - t0
                if not ok:
                    raise SystemExit(f"CLI run of {src} failed")
                cli_times.append((src, rnd, dt))
                print(f"cli  {src:28s} round {rnd}: {dt:6.1f} s", flush=True)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp / "dagster_dev.log", "w")
    env = {**os.environ}
    env.pop("DAGSTER_MODULE_NAME", None)
    t_start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "surrogate_dagster.cli", "ui", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ui_times: list[tuple[str, int, float, float, float]] = []
    try:
        wait_until(lambda: proc.poll() is None and graphql(
            url, '{ assetNodeOrError(assetKey: {path: ["source_rows"]}) { __typename } }'
        )["assetNodeOrError"]["__typename"] == "AssetNode", 300, "the code location to load")
        print(f"make ui answered in {time.monotonic() - t_start:.0f} s (not part of the figures)", flush=True)
        with DagsterInstance.get() as instance:
            for rnd in range(args.rounds):
                for src in args.sources:
                    t0 = time.monotonic()
                    run_id = launch_from_ui(url, src)
                    run = wait_until(lambda: (r := instance.get_run_by_id(run_id)) and r.is_finished and r, 600,
                                     f"run {run_id}")
                    dt = time.monotonic() - t0
                    if run.status != DagsterRunStatus.SUCCESS:
                        raise SystemExit(f"UI run of {src} ended {run.status.value}; log: {tmp / 'dagster_dev.log'}")
                    stats = instance.get_run_stats(run_id)
                    waiting = (stats.start_time or 0) - (instance.get_run_record_by_id(run_id).create_timestamp.timestamp())
                    executing = (stats.end_time or 0) - (stats.start_time or 0)
                    ui_times.append((src, rnd, dt, waiting, executing))
                    print(f"ui   {src:28s} round {rnd}: {dt:6.1f} s (waiting {waiting:.1f}, executing {executing:.1f})",
                          flush=True)
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()

    warm_cli = [t for s, r, t in cli_times if (s, r) != (args.sources[0], 0)]
    warm_ui = [t for s, r, t, _, _ in ui_times if (s, r) != (args.sources[0], 0)]
    cli_med, ui_med = statistics.median(warm_cli), statistics.median(warm_ui)
    print(f"\nmedian over warm runs: cli {cli_med:.1f} s, ui {ui_med:.1f} s, ratio ui/cli {ui_med / cli_med:.2f} "
          f"(target <= 1.5); first runs: cli {cli_times[0][2]:.1f} s, ui {ui_times[0][2]:.1f} s")
    print(f"ui waiting (queue + run worker start), median {statistics.median(w for *_, w, _ in ui_times):.1f} s; "
          f"executing {statistics.median(e for *_, e in ui_times):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
