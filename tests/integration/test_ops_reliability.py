"""Reliability: the run worker is killed in the middle of a partition; the retry finishes it with no
partial objects and no duplicate rows; a second pass with nothing changed plans nothing."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, materialize

from surrogate_dagster.runtime.planning import execute_plan, stale_plan
from surrogate_dagster.resources import HubResource
from surrogate_dagster.sources import mirror
from surrogate_dagster.sources.assets import helper_rows, normalized_rows, source_rows
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.object_store import MANIFEST_SUFFIX, TMP_PREFIX
from surrogate_dagster.storage.parquet_io import parquet_bytes_to_rows
from tests.support.ops_support import hub_copy, make_resources

SOURCE = "xlam_function_calling"


class SlowHub(HubResource):
    """The offline hub, throttled so the test can kill the run worker mid-partition."""

    delay_s: float = 0.0

    def get_client(self):
        from surrogate_dagster.hub import OfflineHub

        client, delay = OfflineHub(self.mirror_dir, self.push_dir, self.org), self.delay_s
        rows = client.iter_rows

        def slow(*a, **k):
            for row in rows(*a, **k):
                time.sleep(delay)
                yield row
        client.iter_rows = slow
        return client


def _child(home: str, tmp: str, hub: str) -> None:
    """The run worker: materialize one partition slowly, small Parquet parts."""
    mirror.PART_ROWS = 2
    res = make_resources(Path(tmp), Path(hub))
    res["hub"] = SlowHub(mode="offline", mirror_dir=hub, push_dir=f"{tmp}/pushes", org="test", delay_s=0.4)
    with DagsterInstance.from_config(home) as instance:
        materialize([source_rows], partition_key=SOURCE, resources=res, instance=instance)


def test_killed_worker_retry_leaves_no_partial_objects(tmp_path):
    hub = hub_copy(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); " \
           f"from tests.integration.test_ops_reliability import _child; _child({str(home)!r}, {str(tmp_path)!r}, {str(hub)!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    raw = tmp_path / "store" / "raw" / SOURCE
    deadline = time.monotonic() + 90
    while not list(raw.rglob("part-00001.parquet")) and time.monotonic() < deadline:
        assert proc.poll() is None, "the run finished before it could be killed"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the run worker dies mid-partition (OOM, node loss)
    proc.wait()
    store = LocalObjectStore(tmp_path / "store")
    assert not any(k.endswith("_SUCCESS.json") for k in store.list(f"raw/{SOURCE}/"))  # never marked done

    with DagsterInstance.from_config(str(home)) as instance:
        [run] = instance.get_runs()
        assert run.status == DagsterRunStatus.STARTED
        instance.report_run_failed(run)  # what run monitoring does when it finds the worker gone
        # the retry (run_retries re-executes the failed run, tagged with its parent)
        tags = {"dagster/parent_run_id": run.run_id, "dagster/root_run_id": run.run_id, "dagster/retry_number": "1"}
        res = materialize([source_rows], partition_key=SOURCE, instance=instance, tags=tags,
                          resources=make_resources(tmp_path, hub))
        assert res.success
        meta = res.asset_materializations_for_node("source_rows")[0].metadata
    marker = next(k for k in store.list(f"raw/{SOURCE}/") if k.endswith("_SUCCESS.json"))
    done = __import__("json").loads(store.get_bytes(marker))
    allowed = set(done["parts"]) | {marker, f"raw/{SOURCE}/_latest.json", done["prefix"] + "quarantine.parquet"}
    assert set(store.list(f"raw/{SOURCE}/")) <= allowed  # nothing left over from the killed attempt
    # A temp file the killed writer was staging when it died is invisible to readers and younger
    # than the sweep's grace (a live writer's would look the same); the sweep of a dead writer's
    # files removes it and nothing else.
    committed = set(store.list(f"raw/{SOURCE}/"))
    store.sweep_temp_files(older_than_s=0)
    assert not [p for p in raw.rglob("*") if p.name.startswith(TMP_PREFIX)]
    assert set(store.list(f"raw/{SOURCE}/")) == committed
    for p in raw.rglob("*"):  # every file on disk is a committed object or its manifest
        if p.is_file() and not p.name.endswith(MANIFEST_SUFFIX):
            assert p.with_name(p.name + MANIFEST_SUFFIX).is_file(), p
    rows = [r for k in done["parts"] for r in parquet_bytes_to_rows(store.get_bytes(k))]
    keys = [(r["_config"], r["_split"], r["_index"]) for r in rows]
    assert len(keys) == len(set(keys)) == meta["rows"].value  # no duplicate rows


def test_second_pass_with_nothing_changed_plans_nothing(tmp_path):
    hub = hub_copy(tmp_path)
    res = make_resources(tmp_path, hub)
    assets = [source_rows, helper_rows, normalized_rows]
    instance = DagsterInstance.ephemeral()
    from dagster import Definitions

    defs = Definitions(assets=assets, resources=res)
    graph = defs.resolve_asset_graph()
    for a in (source_rows, normalized_rows):
        assert materialize(assets, selection=[a.key], partition_key=SOURCE, resources=res, instance=instance).success
    for h in ("taco", "apps", "code_contests", "codeforces"):
        materialize(assets, selection=[helper_rows.key], partition_key=h, resources=res, instance=instance,
                    raise_on_error=False)
    plan = stale_plan(graph, instance, [source_rows.key, normalized_rows.key])
    assert SOURCE not in plan.get(source_rows.key, set()) and SOURCE not in plan.get(normalized_rows.key, set())
    before = instance.get_runs_count()
    todo = {k: ({p for p in ps if p == SOURCE}) for k, ps in plan.items()}
    assert execute_plan(defs, instance, {k: v for k, v in todo.items() if v}) == {}
    assert instance.get_runs_count() == before
