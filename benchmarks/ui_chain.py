"""One source's chain launched from the UI against the same chain in `make run`, seconds and ratio.

    .venv/bin/python benchmarks/ui_chain.py [--sources xlam_function_calling when2call_sft hermes_function_calling]

The chain is the run `make run` makes per source partition (source_rows, normalized_rows,
sanitized_rows, filtered_rows, minhash_signatures, with the checks that ride along). Both ways do
the same work: each source is materialized once per way, on its own copy of a temp local profile
(store and instance copied after the untimed prerequisites), so no run finds another's outputs or
in-process memos (nothing written to the repository's var/):

1. baseline, `make run`'s way: the runs executed in one process by the CLI (cli._materialize, after
   the code location is loaded once). The first source also pays the process's one-time loads
   (the NER model, numba kernels); `make run` pays those once for all sources, so the baseline
   figure is the median over the other sources;
2. `make run` started for one source: a fresh interpreter that loads the code location and runs
   the chain in process, as `make run` does after a pin move or a cap edit changed that source
   alone (on a third copy), timed from its start to its exit;
3. the UI's way: `make ui` (`cli ui`: dagster dev, webserver + daemon, the queued run coordinator)
   on the copy; each run launched through the GraphQL mutation the Materialize button sends
   (launchRun on the asset job, the partition as tag), timed from the launch to the run's SUCCESS
   as recorded by the instance; the run record's times split it into waiting (queue, run-worker
   start, code load) and executing.

Prints per run seconds and the ratios UI / in-process CLI and UI / one-source CLI process over the
same sources (the target: <= 1.5). A UI run is a fresh run-worker process (Dagster's run launcher
spawns one per run), so its floor is the one-source process's, plus the queue.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import shutil
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


def materialize_prerequisites(defs, instance, all_assets, run_config) -> None:
    from dagster import AssetKey

    from surrogate_dagster import cli
    from surrogate_dagster.sources.revisions import record_revision_observations

    record_revision_observations(instance, defs.resources["hub"].get_client())
    graph = defs.resolve_asset_graph()
    print("prerequisites (not timed): " + ", ".join(PREREQUISITES), flush=True)
    for name in PREREQUISITES:
        pdef = graph.get(AssetKey(name)).partitions_def
        for pk in (pdef.get_partition_keys() if pdef else [None]):
            if not cli._materialize(all_assets, [AssetKey(name)], pk, instance, defs.resources, run_config,
                                    cli.owner_tags()).success:
                raise SystemExit(f"prerequisite {name}[{pk}] failed")


def one_source_process(source: str) -> int:
    """The chain for one source in this fresh process (the profile and instance from the environment)."""
    from dagster import AssetKey, DagsterInstance

    from surrogate_dagster import cli, definitions

    defs = definitions.defs
    all_assets = [*(defs.assets or []), *(defs.asset_checks or [])]
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with DagsterInstance.get() as instance:
        ok = cli._materialize(all_assets, [AssetKey(k) for k in CHAIN], source, instance, defs.resources, run_config,
                              cli.owner_tags()).success
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", nargs="+", default=["xlam_function_calling", "when2call_sft", "hermes_function_calling"])
    ap.add_argument("--one-source-process", metavar="SOURCE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one_source_process:
        return one_source_process(args.one_source_process)
    if len(args.sources) < 2:
        ap.error("give at least two sources: the first one's CLI run pays the process's one-time loads")

    tmp = Path(tempfile.mkdtemp(prefix="ui-chain-"))
    cli_dir, ui_dir = tmp / "cli", tmp / "ui"
    cli_dir.mkdir()
    os.environ["SURROGATE_PROFILE"] = str(local_profile_in(cli_dir))
    from dagster import AssetKey, DagsterInstance, DagsterRunStatus

    from surrogate_dagster import cli

    home = cli.ensure_instance_home(cli_dir / "dagster_home", set_env=False)
    os.environ["DAGSTER_HOME"] = str(home)
    from surrogate_dagster import definitions

    defs = definitions.defs
    all_assets = [*(defs.assets or []), *(defs.asset_checks or [])]
    keys = [AssetKey(k) for k in CHAIN]
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with DagsterInstance.get() as instance:
        materialize_prerequisites(defs, instance, all_assets, run_config)
    # The UI's copy: same prerequisites, none of the chain's outputs.
    shutil.copytree(cli_dir, ui_dir)
    ui_profile = local_profile_in(ui_dir)
    proc_dir = tmp / "process"
    shutil.copytree(cli_dir, proc_dir)
    proc_env = {**os.environ, "SURROGATE_PROFILE": str(local_profile_in(proc_dir)),
                "DAGSTER_HOME": str(proc_dir / "dagster_home")}

    cli_times: dict[str, float] = {}
    with DagsterInstance.get() as instance:
        for src in args.sources:
            t0 = time.monotonic()
            ok = cli._materialize(all_assets, keys, src, instance, defs.resources, run_config,
                                  cli.owner_tags()).success
            cli_times[src] = time.monotonic() - t0
            if not ok:
                raise SystemExit(f"CLI run of {src} failed")
            print(f"cli  {src:28s}: {cli_times[src]:6.1f} s", flush=True)

    proc_times: dict[str, float] = {}
    for src in args.sources:
        t0 = time.monotonic()
        rc = subprocess.run([sys.executable, __file__, "--one-source-process", src], cwd=REPO, env=proc_env).returncode
        proc_times[src] = time.monotonic() - t0
        if rc:
            raise SystemExit(f"one-source process for {src} exited {rc}")
        print(f"proc {src:28s}: {proc_times[src]:6.1f} s", flush=True)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp / "dagster_dev.log", "w")
    env = {**os.environ, "SURROGATE_PROFILE": str(ui_profile), "DAGSTER_HOME": str(ui_dir / "dagster_home")}
    env.pop("DAGSTER_MODULE_NAME", None)
    t_start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "surrogate_dagster.cli", "ui", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ui_times: dict[str, tuple[float, float, float]] = {}
    try:
        wait_until(lambda: proc.poll() is None and graphql(
            url, '{ assetNodeOrError(assetKey: {path: ["source_rows"]}) { __typename } }'
        )["assetNodeOrError"]["__typename"] == "AssetNode", 300, "the code location to load")
        print(f"make ui answered in {time.monotonic() - t_start:.0f} s (not part of the figures)", flush=True)
        with DagsterInstance.from_config(str(ui_dir / "dagster_home")) as instance:
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
                ui_times[src] = (dt, waiting, executing)
                print(f"ui   {src:28s}: {dt:6.1f} s (waiting {waiting:.1f}, executing {executing:.1f})", flush=True)
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()

    rest = args.sources[1:]
    cli_med = statistics.median(cli_times[s] for s in rest)
    ui_med = statistics.median(ui_times[s][0] for s in rest)
    proc_med = statistics.median(proc_times[s] for s in args.sources)
    ui_all = statistics.median(ui_times[s][0] for s in args.sources)
    print(f"\nmedian over {', '.join(rest)}: cli in process {cli_med:.1f} s, ui {ui_med:.1f} s, "
          f"ratio ui/cli {ui_med / cli_med:.2f} (target <= 1.5)")
    print(f"median over all sources: one-source process {proc_med:.1f} s, ui {ui_all:.1f} s, "
          f"ratio ui/process {ui_all / proc_med:.2f} (target <= 1.5)")
    print(f"first source ({args.sources[0]}, the CLI process's one-time loads): cli {cli_times[args.sources[0]]:.1f} s, "
          f"ui {ui_times[args.sources[0]][0]:.1f} s")
    print(f"ui waiting (queue, run worker start, code load), median {statistics.median(w for _, w, _ in ui_times.values()):.1f} s; "
          f"executing {statistics.median(e for *_, e in ui_times.values()):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
