"""`python -m surrogate_dagster.cli run`: materialize the whole asset graph on the active profile.

Runs every asset, partition by partition, in dependency order, on the profile's persistent Dagster
instance (DAGSTER_HOME, else the profile's `phases.ops.dagster_home`, else var/dagster_home for the
local profile: operations/instance_home.py), so `make ui` afterwards shows every materialization
with its metadata. `ui` starts `dagster dev` on the same instance, and `dagster ARGS...` runs
Dagster's own CLI on it with the code location of pyproject's `[tool.dagster]`
(`python -m surrogate_dagster.cli dagster asset list`); `env` prints the same settings as shell
exports, for a shell in which the bare `dagster asset ...` commands should find them.
A failed partition is reported and its downstream partitions are skipped; the rest keeps going.
Before the first run, runs left STARTED by a process that died are marked failed and their pool
slots freed (runtime/run_recovery.py); SIGINT/SIGTERM stop the command after the current run, or at
once when that run waits for a pool slot (runtime/run_interrupts.py).

The terminal gets one line per run (its time and each asset's counts from the materialization
metadata), the gates that failed, and a failed step's error in full. Everything else the process
and its subprocesses write (Dagster's console log, the trainer's axolotl output, the servers,
warnings, progress bars) goes to var/logs/run-<time>.log and to each run's compute logs in the UI
(runtime/console.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import time
from pathlib import Path

from .paths import REPO_ROOT

DAGSTER_HOME = REPO_ROOT / "var" / "dagster_home"  # the local profile's instance (instance_home.LOCAL_HOME)


INSTANCE_YAML = """\
# Written by surrogate_dagster.cli (rewritten while this line is here; delete it to keep edits).
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1      # every pool (llm, gpu, cross_source) runs one step at a time
    granularity: op       # enforced per step, also for the CLI's in-process runs
# Read by the daemon `make ui` starts. With the local (default) run launcher it fails runs that
# never start and frees slots of ended runs; a run whose process died is found by `make run`'s
# recovery (surrogate_dagster/runtime/run_recovery.py), which checks the recorded pid.
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 30
  free_slots_after_run_end_seconds: 60
# The daemon takes the UI's queued runs every second (Dagster's default is 5): the wait before a
# Materialize click's run worker starts is part of what the UI costs over `make run`.
run_queue:
  dequeue_interval_seconds: 1
"""
# What earlier versions of this command wrote: upgraded in place (no user edits to keep).
_OLD_INSTANCE_YAMLS = ("telemetry:\n  enabled: false\nconcurrency:\n  pools:\n    default_limit: 1\n",)


def ensure_instance_home(home: Path | None = None, set_env: bool = True) -> Path:
    """A Dagster instance directory whose dagster.yaml is :data:`INSTANCE_YAML` (pools, run
    monitoring); a dagster.yaml someone edited (marker line removed) is left as it is. Without
    `home`: the active profile's instance (DAGSTER_HOME when set, operations/instance_home.py)."""
    if home is None:
        from .operations.instance_home import instance_home

        home = instance_home()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    current = cfg.read_text() if cfg.exists() else None
    if current != INSTANCE_YAML and (current is None or current in _OLD_INSTANCE_YAMLS
                                     or current.startswith(INSTANCE_YAML.splitlines()[0])):
        cfg.write_text(INSTANCE_YAML)
    if set_env:
        os.environ.setdefault("DAGSTER_HOME", str(home))
    return home


ON_DEMAND = {"regression_lineage_report"}


def _ordered_asset_defs(defs):
    """Executable asset definitions in topological order of their keys."""
    graph = defs.resolve_asset_graph()
    order = graph.toposorted_asset_keys
    by_key = {}
    for ad in defs.assets or []:
        for k in getattr(ad, "keys", ()):
            by_key[k] = ad
    # Observable source assets (hf_revisions) are observed by their own job/schedule, and the
    # regression report runs when a gate fails (its sensor), not here. The ops group (the cost
    # ledger) sums what everything else spent, so it goes last.
    keys = [k for k in order if k in by_key and graph.get(k).is_materializable
            and k.to_user_string() not in ON_DEMAND]
    keys.sort(key=lambda k: graph.get(k).group_name == "ops")  # stable: keeps topological order
    return [(k, by_key[k]) for k in keys], graph


def _quiet_datatrove() -> None:
    """datatrove logs every bucket at INFO through loguru; keep the runner's output readable."""
    try:
        from loguru import logger
    except ImportError:
        return
    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def _groups(ordered, graph):
    """Consecutive assets sharing a partitions definition run together, one run per partition.

    An asset joins the current group only if every parent is already done or in the group, so
    each run sees its upstream partitions materialized.
    """
    groups: list[tuple[object, list]] = []
    done: set = set()
    for key, ad in ordered:
        pdef = ad.partitions_def
        parents = set(graph.get(key).parent_keys)
        if groups and groups[-1][0] == pdef and parents <= done | set(groups[-1][1]):
            groups[-1][1].append(key)
        else:
            if groups:
                done |= set(groups[-1][1])
            groups.append((pdef, [key]))
    return groups


class _ExpectedGateFailures(logging.Filter):
    """Drops the console records of a step that failed only because a blocking asset check failed
    (``DagsterAssetCheckFailedError``), and the run-failure line of such a run.

    Dagster raises that error in the step on purpose (it is how a blocking check stops downstream
    assets) and logs it as a step failure at ERROR, stack trace included. On the local profile the
    tiny model fails the runbook's gates by design, so `make run` prints one line per failed gate
    from the run's check evaluations (:func:`_failed_gate_lines`) instead. Matched on the error's
    class name in the message: the console logger receives the formatted text. Any other error
    keeps its full record.
    """

    CHECK_ERROR = "DagsterAssetCheckFailedError"

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        msg = record.getMessage()
        if self.CHECK_ERROR in msg:
            self.seen = True
            return False
        # the run's summary line ("Steps failed: [...]"): the CLI prints its own per run
        return not (self.seen and "RUN_FAILURE" in msg)


def _gate_quiet_console_logger():
    """Dagster's colored console logger (same config: log_level, name) with
    :class:`_ExpectedGateFailures` on it; one logger, and so one filter, per run."""
    from dagster import colored_console_logger, logger

    @logger(config_schema=colored_console_logger.config_schema,
            description="console logger; blocking check failures are reported by the CLI in one line")
    def console(init_context):
        log = colored_console_logger.logger_fn(init_context)
        log.addFilter(_ExpectedGateFailures())
        return log

    return console


def _materialize(assets, keys, partition_key, instance, resources, run_config, tags):
    """`dagster.materialize(..., raise_on_error=False)` with the gate-quiet console logger: the
    same ephemeral asset job, defined here because `materialize` takes no loggers."""
    from dagster import Definitions, define_asset_job

    defs = Definitions(jobs=[define_asset_job("__cli_asset_job", selection=keys)], assets=assets,
                       resources=resources, loggers={"console": _gate_quiet_console_logger()})
    return defs.resolve_job_def("__cli_asset_job").execute_in_process(
        run_config=run_config, instance=instance, partition_key=partition_key, raise_on_error=False, tags=tags)


def _failed_gate_lines(result, width: int = 300, severity: str = "ERROR") -> list[str]:
    """One line per blocking check that failed at ``severity`` in the run: the gate and its
    description (the checks put the value and the threshold there, e.g. "score 0.0 < target 0.6").
    A blocking gate the profile overrides (report_only) fails at WARN and blocks nothing."""
    from dagster import AssetCheckSeverity

    lines = []
    for ev in result.get_asset_check_evaluations():
        if ev.passed or not ev.blocking or ev.severity != AssetCheckSeverity[severity]:
            continue
        desc = " ".join((ev.description or "failed").split())
        desc = desc if len(desc) <= width else desc[:width - 1] + "\u2026"
        lines.append(f"{ev.asset_key.to_user_string()}.{ev.check_name}: {desc}")
    return lines


def owner_tags() -> dict[str, str]:
    """This process's pid and host, on every run it starts (read by run recovery)."""
    from .runtime.run_recovery import owner_tags as tags

    return tags()


def _observe_revisions(defs, instance, log_level: str, say=print) -> set[str]:
    """Ask the hub for each source's current revision first, so a source whose upstream changed
    shows as stale below (the weekly schedule and the sensor do the same in a deployment)."""
    hub = (defs.resources or {}).get("hub")
    if "observe_hf_revisions" not in {j.name for j in defs.jobs or []} or hub is None:
        return set()  # a code location without the ops group
    from .sources.revisions import record_revision_observations

    # The observations are recorded as runless events rather than through the observe job: one
    # in-process run per partition cost ~1.3 s of run bookkeeping each (22 sources: ~28 s of a
    # no-change `make run`), while the lookups themselves take milliseconds.
    rep = record_revision_observations(instance, hub.get_client())
    n = len(rep.observed) + len(rep.failed)
    say(f"[hf_revisions] observed {len(rep.observed)}/{n} sources in {rep.seconds:.1f}s"
        + (f"; FAILED: {', '.join(f'{k} ({v})' for k, v in sorted(rep.failed.items()))}" if rep.failed else ""))
    from .sources.revisions import changed_sources, mirrored_revisions, observed_revisions

    # A revision that differs from the one last mirrored re-mirrors that source (the sensor's rule).
    changed = set(changed_sources({p: rev for p, (rev, _) in observed_revisions(instance).items()},
                                  mirrored_revisions(instance)))
    if changed:
        say(f"  upstream revision changed: {', '.join(sorted(changed))}")
    return changed


def _needs_run(graph, instance, keys, pdef) -> set:
    """Partitions of a group where some asset is missing or stale (code, data or upstream changed)."""
    from .runtime.planning import stale_plan

    plan = stale_plan(graph, instance, keys)
    out: set = set()
    for parts in plan.values():
        out |= parts
    return out


def recover_instance(instance, say=None) -> list:
    """Before any run: runs whose process died (SIGKILL, OOM) are marked failed and their pool
    slots freed, so a step in the same pool does not wait for them forever."""
    from .runtime.run_recovery import recover_dead_runs

    return recover_dead_runs(instance, log=say or (lambda line: print(line, flush=True)))


def run_log_path() -> Path:
    """This invocation's log file: everything written to stdout/stderr but the CLI's own lines."""
    return REPO_ROOT / "var" / "logs" / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _store_location(store) -> str:
    """Where the profile's object store is, as a person would look for it (no credentials)."""
    from .paths import resolve_repo_path

    if store.kind == "local":
        return str(resolve_repo_path(store.root))
    return f"s3://{store.bucket}/{store.prefix or ''} at {store.endpoint_url or 'AWS S3'}"


def run_all(select: list[str] | None = None, fail_fast: bool = False, log_level: str = "WARNING",
            everything: bool = False) -> int:
    ensure_instance_home()
    from .catalog import load_profile
    from .runtime.host_paths import HostPathError, prepare_host_paths

    try:  # every folder the profile names exists (benchmarks filled, verified) before a step writes
        prepare_host_paths(load_profile())
    except HostPathError as exc:
        print(exc, file=sys.stderr)
        return 2
    from dagster import DagsterInstance

    from .runtime.run_interrupts import InterruptGuard

    from .runtime.console import RunConsole

    instance = DagsterInstance.get()
    with RunConsole(run_log_path()) as console:
        say = console.say
        say(f"log: {console.log_path} (tool output and Dagster's console log; the UI has each run's)")
        recover_instance(instance, say)
        # SIGINT/SIGTERM stop after the current run, or at once when it waits on a pool slot.
        with InterruptGuard(instance, log=say) as guard:
            code = _run_all(instance, guard, select, fail_fast, log_level, everything, say, console.log_path)
    return 128 + guard.requested if guard.requested else code


def _run_all(instance, guard, select: list[str] | None, fail_fast: bool, log_level: str,
             everything: bool, say, log_path: Path) -> int:
    from . import definitions
    from .runtime.console import counts_line, failure_text

    _quiet_datatrove()

    defs = definitions.defs
    # Checks ride along with the assets they target (gates run in the same run as their report).
    all_assets = [*(defs.assets or []), *(defs.asset_checks or [])]
    ordered, graph = _ordered_asset_defs(defs)
    if select:
        ordered = [(k, ad) for k, ad in ordered if k.to_user_string() in select]
    changed = _observe_revisions(defs, instance, log_level, say)
    failed: dict = {}  # asset key -> set of failed partition keys (None = unpartitioned)
    n_runs = n_failed = 0
    gates_failed: list[str] = []
    gates_overridden: list[str] = []  # blocking gates the profile reports without enforcing
    t_all = time.monotonic()
    run_config = {"loggers": {"console": {"config": {"log_level": log_level}}}}
    for pdef, keys in _groups(ordered, graph):
        names = ", ".join(k.to_user_string() for k in keys)
        pkeys = pdef.get_partition_keys(dynamic_partitions_store=instance) if pdef else [None]
        say(f"[{names}] {len(pkeys)} partition(s)" if pdef else f"[{names}]")
        todo = set(pkeys) if everything else _needs_run(graph, instance, keys, pdef)
        if any(k.to_user_string() == "source_rows" for k in keys):
            todo |= changed
        fresh = [pk for pk in pkeys if pk not in todo]
        if fresh:
            say(f"  fresh {len(fresh)} partition(s): nothing changed upstream, not re-run")
        for pk in [p for p in pkeys if p in todo]:
            if guard.requested:
                say(f"  stop: interrupted; {n_runs} run(s) done")
                return 1
            label = pk or "-"
            bad_parents = [p for k in keys for p in graph.get(k).parent_keys
                           if p in failed and (pk in failed[p] or None in failed[p] or
                                               graph.get(p).partitions_def != pdef)]
            if bad_parents:
                say(f"  skip  {label}: upstream {bad_parents[0].to_user_string()} failed")
                for k in keys:
                    failed.setdefault(k, set()).add(pk)
                n_failed += 1
                continue
            t0 = time.monotonic()
            result = _materialize(all_assets, keys, pk, instance, defs.resources, run_config, owner_tags())
            n_runs += 1
            dt = time.monotonic() - t0
            if result.success:
                say(f"  ok    {label} ({dt:.1f}s)  {counts_line(result)}")
                for line in _failed_gate_lines(result, severity="WARN"):
                    gates_overridden.append(line)
                    say(f"        gate  not enforced: {line}")
                continue
            # Steps of one run are independent unless linked: attribute the failure per asset.
            done = {e.asset_key for e in result.get_asset_materialization_events()}
            bad = [k for k in keys if k not in done]
            errs = [e.message for e in result.all_events if e.is_failure]
            gate_lines = _failed_gate_lines(result)
            if not bad:
                # Every asset materialized; what failed is a blocking gate (an asset check). On the
                # tiny local model the runbook's targets fail: that is the honest result, reported
                # by the release asset, not a broken pipeline.
                gates_failed.append(f"{label}: {gate_lines[0] if gate_lines else errs[-1] if errs else 'a gate failed'}")
                say(f"  ok    {label} ({dt:.1f}s), GATE FAILED (see the release asset)  {counts_line(result)}")
                for line in gate_lines:
                    say(f"        gate  {line}")
                continue
            n_failed += 1
            for k in bad:
                failed.setdefault(k, set()).add(pk)
            say(f"  FAIL  {label} ({dt:.1f}s) [{', '.join(k.to_user_string() for k in bad)}]: "
                f"{errs[-1] if errs else 'see the run in the UI'}")
            for line in gate_lines:
                say(f"        gate  {line}")
            for line in failure_text(result):
                say(f"        {line}")
            say(f"        full log: {log_path} (run {result.run_id} in the UI)")
            if fail_fast:
                return 1
    say(f"\n{n_runs} runs in {time.monotonic() - t_all:.0f}s; {n_failed} failed or skipped; "
        f"{len(gates_failed)} run(s) with a failed gate; {len(gates_overridden)} failed gate(s) "
        f"overridden by the profile")
    from .catalog import load_profile

    profile = load_profile()
    say(f"object store: {_store_location(profile.object_store)} ({profile.name} profile)")
    say(f"Dagster instance: {os.environ['DAGSTER_HOME']}")
    say(f"log: {log_path}")
    say("open the UI with `make ui` (dagster dev on http://127.0.0.1:3000), then Assets -> Lineage")
    return 1 if n_failed else 0


def pin_revisions(names: list[str] | None, ref: str, catalog: str | None, offline_pins: bool = False,
                  profile_name: str | None = None) -> int:
    """Pin catalog entries to the commit `ref` resolves to on the active profile's hub."""
    from .catalog import load_profile
    from .catalog.pins import offline_mirror_pins, pin_sources
    from .hub import make_hub
    from .paths import ASSETS_DIR

    profile = load_profile(profile_name)
    path = Path(catalog) if catalog else ASSETS_DIR / "sources.yaml"
    if offline_pins:  # every offline-mirror pin, re-resolved on the profile's hub in one go
        names = sorted(set(names or []) | set(offline_mirror_pins(path.read_text(encoding="utf-8"))))
        if not names:
            print(f"{path}: no offline-mirror pin left")
            return 0
        if profile.hub.mode == "offline":
            print(f"profile {profile.name!r} reads an offline mirror: its shas are not Hub commits; "
                  "pass --profile with an online hub", file=sys.stderr)
            return 2
    changes = pin_sources(path, make_hub(profile.hub), names, ref, offline=profile.hub.mode == "offline")
    for c in changes:
        print(f"{c.name}: {c.hf_id} {c.ref} -> {c.new} (was {c.old or 'unset'})")
    if not changes:
        print(f"{path}: every entry is pinned already (name one with --source to move its pin)")
    return 0


def preflight(profile: str | None, skip: list[str], catalog: str | None) -> int:
    """Print the pre-flight table for a profile (operations/preflight.py); 1 when any check fails."""
    from .catalog import load_profile
    from .operations.preflight import exit_code, render_table, run_preflight

    prof = load_profile(profile)
    groups = [g.strip() for item in skip for g in item.split(",") if g.strip()]
    rows = run_preflight(prof, skip=groups, sources_path=catalog)
    print(f"pre-flight, profile {prof.name}")
    print(render_table(rows))
    return exit_code(rows)


# Options by which a Dagster command is told its code location already (then none is added).
_TARGET_FLAGS = ("-w", "--workspace", "-m", "--module-name", "-f", "--python-file", "--package-name",
                 "--autoload-defs-module-name", "--grpc-port", "--grpc-socket")


def dagster_env(args: list[str] | None = None) -> dict[str, str]:
    """The environment of a Dagster command on this project: the profile's instance (created with
    :data:`INSTANCE_YAML`) and, unless `args` name a target, the code location of pyproject."""
    from .operations.instance_home import dagster_cli_env

    env = dagster_cli_env()
    ensure_instance_home(Path(env["DAGSTER_HOME"]), set_env=False)
    if args is not None and any(a.split("=", 1)[0] in _TARGET_FLAGS for a in args):
        env.pop("DAGSTER_MODULE_NAME")
        env.pop("DAGSTER_WORKING_DIRECTORY")
    return env


def run_dagster(args: list[str]) -> int:
    """Dagster's CLI (`dagster ARGS...` of this venv) with :func:`dagster_env`; replaces this process."""
    exe = str(Path(sys.executable).with_name("dagster"))
    env = dagster_env(args)
    if "DAGSTER_MODULE_NAME" not in env:
        # the args name the target: an exported module (`env`) would make Dagster refuse both
        os.environ.pop("DAGSTER_MODULE_NAME", None)
        os.environ.pop("DAGSTER_WORKING_DIRECTORY", None)
    os.environ.update(env)
    sys.stdout.flush()
    os.execv(exe, [exe, *args])
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    from .operations.instance_home import NoInstanceHome

    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except NoInstanceHome as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if argv[:1] == ["why-regressed"]:  # the regression lineage report (operations/lineage_report.py)
        from .operations.lineage_report import main as why_regressed

        return why_regressed(argv[1:])
    if argv[:1] == ["dagster"]:  # everything after it is Dagster's (argparse would eat its options)
        return run_dagster(argv[1:])
    if argv[:1] == ["ui"]:
        return run_dagster(["dev", "-w", str(REPO_ROOT / "workspace.yaml"), *(argv[1:] or ["-h", "127.0.0.1", "-p", "3000"])])
    ap = argparse.ArgumentParser(prog="surrogate_dagster")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="materialize the whole graph on the active profile")
    r.add_argument("--select", nargs="*", help="asset names to run (default: all)")
    r.add_argument("--fail-fast", action="store_true")
    r.add_argument("--log-level", default="WARNING", help="level of Dagster's console log, which goes to the run's log file (var/logs)")
    r.add_argument("--all", action="store_true", help="re-run fresh partitions too (default: only stale/missing)")
    p = sub.add_parser("pin-revisions", help="pin sources.yaml entries to the commit a branch points at now")
    p.add_argument("--source", action="append", dest="sources",
                   help="entry to (re)pin; repeatable (default: every unpinned entry)")
    p.add_argument("--ref", default="main", help="branch or refs/... to resolve (default: main)")
    p.add_argument("--catalog", help="the sources file (default: assets/sources.yaml)")
    p.add_argument("--all", action="store_true", dest="offline_pins",
                   help="every entry still marked 'offline-mirror pin' (needs a profile with an online hub)")
    p.add_argument("--profile", help="profile whose hub resolves the refs (default: SURROGATE_PROFILE or local)")
    f = sub.add_parser("preflight", help="read-only checks of a profile's accounts, pins, bucket, models and GPU host")
    f.add_argument("--profile", help="profile name or YAML path (default: SURROGATE_PROFILE or local)")
    f.add_argument("--skip", action="append", default=[], metavar="GROUP",
                   help="skip a check group: hf, pins, s3, anthropic, gpu (repeatable or comma-separated)")
    f.add_argument("--catalog", help="the sources file (default: assets/sources.yaml)")
    sub.add_parser("dagster", help="Dagster's own CLI on this project's instance and code location "
                                   "(`dagster asset list`, `dagster asset materialize --select ...`)")
    sub.add_parser("why-regressed", help="compare two checkpoints' lineages, causes ranked "
                                         "(--checkpoint-b ASSET@latest --checkpoint-a ASSET@previous)")
    sub.add_parser("ui", help="`dagster dev` on this project's instance (default -h 127.0.0.1 -p 3000)")
    sub.add_parser("env", help="print DAGSTER_HOME and the code location as shell exports "
                               "(eval \"$(python -m surrogate_dagster.cli env)\")")
    args = ap.parse_args(argv)
    if args.cmd == "env":
        for k, v in dagster_env().items():
            print(f"export {k}={shlex.quote(v)}")
        return 0
    if args.cmd == "preflight":
        return preflight(args.profile, args.skip, args.catalog)
    if args.cmd == "run":
        try:
            return run_all(args.select, args.fail_fast, args.log_level, args.all)
        except KeyboardInterrupt:
            print("\ninterrupted", file=sys.stderr)
            return 130
    if args.cmd == "pin-revisions":
        return pin_revisions(args.sources, args.ref, args.catalog, args.offline_pins, args.profile)
    return 2


if __name__ == "__main__":
    sys.exit(main())
