"""`python -m surrogate_dagster.cli run`: materialize the whole asset graph on the active profile.

Runs every asset, partition by partition, in dependency order, on a persistent Dagster instance
under var/dagster_home, so `make ui` afterwards shows every materialization with its metadata.
A failed partition is reported and its downstream partitions are skipped; the rest keeps going.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .paths import REPO_ROOT

DAGSTER_HOME = REPO_ROOT / "var" / "dagster_home"


def ensure_instance_home(home: Path = DAGSTER_HOME) -> Path:
    """A Dagster instance directory with concurrency pools configured (one GPU run at a time)."""
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(
            "telemetry:\n  enabled: false\n"
            "concurrency:\n  pools:\n    default_limit: 1\n"
        )
    os.environ.setdefault("DAGSTER_HOME", str(home))
    return home


def _ordered_asset_defs(defs):
    """Executable asset definitions in topological order of their keys."""
    graph = defs.resolve_asset_graph()
    order = graph.toposorted_asset_keys
    by_key = {}
    for ad in defs.assets or []:
        for k in getattr(ad, "keys", ()):
            by_key[k] = ad
    return [(k, by_key[k]) for k in order if k in by_key], graph


def run_all(select: list[str] | None = None, fail_fast: bool = False, log_level: str = "WARNING") -> int:
    ensure_instance_home()
    from dagster import DagsterInstance, materialize

    from . import definitions

    defs = definitions.defs
    all_assets = list(defs.assets or [])
    instance = DagsterInstance.get()
    ordered, graph = _ordered_asset_defs(defs)
    failed: set[tuple[str, str | None]] = set()
    failed_keys: set = set()
    t_all = time.monotonic()
    for key, ad in ordered:
        name = key.to_user_string()
        if select and name not in select:
            continue
        pdef = ad.partitions_def
        pkeys = pdef.get_partition_keys(dynamic_partitions_store=instance) if pdef else [None]
        upstream_failed = {k for k in graph.get(key).parent_keys} & failed_keys
        for pk in pkeys:
            label = f"{name}[{pk}]" if pk else name
            if upstream_failed and any((u.to_user_string(), pk) in failed or (u.to_user_string(), None) in failed
                                       for u in upstream_failed):
                print(f"  skip  {label}: an upstream partition failed", flush=True)
                failed.add((name, pk))
                failed_keys.add(key)
                continue
            t0 = time.monotonic()
            result = materialize(all_assets, selection=[key], partition_key=pk, instance=instance,
                                 resources=defs.resources, raise_on_error=False,
                                 run_config={"loggers": {"console": {"config": {"log_level": log_level}}}})
            dt = time.monotonic() - t0
            if result.success:
                print(f"  ok    {label} ({dt:.1f}s)", flush=True)
            else:
                failed.add((name, pk))
                failed_keys.add(key)
                errs = [e.message for e in result.all_events if e.is_failure]
                print(f"  FAIL  {label} ({dt:.1f}s): {errs[-1] if errs else 'see the run in the UI'}",
                      flush=True)
                if fail_fast:
                    return 1
    print(f"\nmaterialized the graph in {time.monotonic() - t_all:.0f}s; "
          f"{len(failed)} partition(s) failed or skipped")
    print(f"object store: {REPO_ROOT / 'var' / 'object_store'} (local profile)")
    print(f"Dagster instance: {os.environ['DAGSTER_HOME']}")
    print("open the UI with `make ui` (dagster dev on http://127.0.0.1:3000), then Assets -> Lineage")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="surrogate_dagster")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="materialize the whole graph on the active profile")
    r.add_argument("--select", nargs="*", help="asset names to run (default: all)")
    r.add_argument("--fail-fast", action="store_true")
    r.add_argument("--log-level", default="WARNING", help="Dagster console log level (INFO shows counts)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return run_all(args.select, args.fail_fast, args.log_level)
    return 2


if __name__ == "__main__":
    sys.exit(main())
