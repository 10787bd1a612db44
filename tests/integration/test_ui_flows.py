"""The UI flows from the first run, against `dagster dev` (webserver + daemon) on a copy of the
code location: after a moved pin, then after an edited cap in assets/sources.yaml, exactly that
source's `source_rows` partition shows stale in Dagster's own staleness (the GraphQL
`staleStatus(partition:)` the partition list and the graph read), with no Observe click and no
run; `hf_revisions` carries one table of all sources. Also Dagster's own CLI through the project's
entry point: `dagster asset list` finds the code location and the instance without `-m`."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRunStatus, RunsFilter, materialize

from surrogate_dagster import cli
from surrogate_dagster.catalog import load_profile
from surrogate_dagster.operations.instance_home import LOCAL_HOME, NoInstanceHome, instance_home
from surrogate_dagster.paths import shared_dir
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.sources.assets import CATALOG, source_rows
from surrogate_dagster.sources.revisions import hf_revisions, record_revision_observations
from tests.support.ops_support import plant_change

REPO = Path(__file__).resolve().parents[2]
XLAM, W2C = "xlam_function_calling", "when2call_sft"
LOCATION = "surrogate_dagster.definitions"  # the location name workspace.yaml's python_module gives
PY = Path(sys.executable)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_location(dst: Path) -> Path:
    """The code location as the webserver loads it: package, catalog, profiles, fixtures (writable)."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for part in ("surrogate_dagster", "assets", "resources", "fixtures"):
        shutil.copytree(REPO / part, dst / part, ignore=skip)
    for f in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(REPO / f, dst / f)
    return dst


def _profile(tmp: Path, hub: Path) -> Path:
    """The local profile with every path it writes inside tmp, and the copied (writable) hub."""
    prof = yaml.safe_load((REPO / "resources" / "local.yaml").read_text())
    prof["object_store"]["root"] = str(tmp / "store")
    prof["hub"].update(mirror_dir=str(hub), push_dir=str(tmp / "pushes"))
    for section in (prof.get("phases") or {}).values():
        for k, v in list(section.items()):
            if k.endswith("_dir") and isinstance(v, str) and v.startswith("var/"):
                section[k] = str(tmp / v)
    path = tmp / "local.yaml"
    path.write_text(yaml.safe_dump(prof))
    return path


def _graphql(url: str, query: str) -> dict:
    req = urllib.request.Request(url + "/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        out = json.load(resp)
    assert not out.get("errors"), out["errors"]
    return out["data"]


def _stale(url: str, partitions: list[str]) -> dict[str, str]:
    """Dagster's stale status of each `source_rows` partition, as the UI asks for it."""
    fields = " ".join(f'p{i}: staleStatus(partition: "{p}")' for i, p in enumerate(partitions))
    node = _graphql(url, '{ assetNodeOrError(assetKey: {path: ["source_rows"]}) '
                         '{ __typename ... on AssetNode { %s } } }' % fields)["assetNodeOrError"]
    return {p: node.get(f"p{i}") for i, p in enumerate(partitions)}


def _until(fn, timeout: float, what: str):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, AssertionError, KeyError) as e:  # the location is (re)loading
            last = e
        time.sleep(2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def _edit_entry(sources_yaml: Path, source: str, key: str, value: str) -> None:
    """Replace `key:`'s value in one entry of the copied sources.yaml (a one-line reviewed edit)."""
    lines = sources_yaml.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == f"- name: {source}")
    for i in range(start + 1, len(lines)):
        if lines[i].lstrip().startswith("- name:"):
            break
        if lines[i].strip().startswith(f"{key}:"):
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = f"{indent}{key}: {value}\n"
            sources_yaml.write_text("".join(lines))
            return
    raise AssertionError(f"{source} has no {key} line")


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui_flows")
    loc = _copy_location(tmp / "location")
    hub = loc / "fixtures" / "hub"
    profile = _profile(tmp, hub)
    home = cli.ensure_instance_home(tmp / "dagster_home", set_env=False)
    # What `make run` leaves behind: every pin observed, then two sources mirrored after it.
    resources = {"object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
                 "hub": HubResource(mode="offline", mirror_dir=str(hub), push_dir=str(tmp / "pushes"), org="axentx")}
    with DagsterInstance.from_config(str(home)) as instance:
        record_revision_observations(instance, resources["hub"].get_client())
        for s in (XLAM, W2C):
            assert materialize([hf_revisions, source_rows], selection=[source_rows.key], partition_key=s,
                               resources=resources, instance=instance).success
    env = {**os.environ, "DAGSTER_HOME": str(home), "SURROGATE_PROFILE": str(profile),
           "SURROGATE_SHARED_DIR": str(shared_dir())}
    env.pop("DAGSTER_MODULE_NAME", None)
    port = _free_port()
    log = open(tmp / "dagster_dev.log", "w")
    proc = subprocess.Popen([str(PY.with_name("dagster")), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1",
                             "-p", str(port)], cwd=loc, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: proc.poll() is None and _stale(url, [XLAM])[XLAM], 240, "the code location to load")
        yield url, loc, hub, home
    finally:
        os.killpg(proc.pid, 15)  # dagster dev, its webserver, daemon and code servers
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


def _reload(url: str) -> None:
    data = _graphql(url, 'mutation { reloadRepositoryLocation(repositoryLocationName: "%s") { __typename } }'
                    % LOCATION)
    assert data["reloadRepositoryLocation"]["__typename"] == "WorkspaceLocationEntry"


def test_moved_pin_then_edited_cap_show_exactly_that_source_stale(ui):
    url, loc, hub, home = ui
    assert _stale(url, [XLAM, W2C]) == {XLAM: "FRESH", W2C: "FRESH"}

    # A moved pin: upstream published a commit, the reviewed edit points the entry at it.
    new_rev = plant_change(hub, XLAM)
    _edit_entry(loc / "assets" / "sources.yaml", XLAM, "revision", new_rev)
    _reload(url)
    t0 = time.monotonic()
    _until(lambda: _stale(url, [XLAM])[XLAM] == "STALE", 180, "xlam to show stale")
    print(f"\npin move shown stale {time.monotonic() - t0:.0f}s after the reload")
    assert _stale(url, [XLAM, W2C]) == {XLAM: "STALE", W2C: "FRESH"}

    # A cap edit: the entry's fingerprint moved, the pin did not.
    cap = CATALOG.by_name(W2C).cap
    _edit_entry(loc / "assets" / "sources.yaml", W2C, "cap", str(cap - 1))
    _reload(url)
    t0 = time.monotonic()
    _until(lambda: _stale(url, [W2C])[W2C] == "STALE", 180, "when2call_sft to show stale")
    print(f"cap edit shown stale {time.monotonic() - t0:.0f}s after the reload")
    other = next(s for s in CATALOG.names if s not in (XLAM, W2C))
    assert _stale(url, [XLAM, W2C]) == {XLAM: "STALE", W2C: "STALE"}

    with DagsterInstance.from_config(str(home)) as instance:
        # recorded by catalog_sync_sensor as runless observations: no run started (the two runs
        # are the fixture's mirrors), none failed
        assert not instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
        assert len(instance.get_runs()) == 2
        rec = instance.fetch_observations(AssetRecordsFilter(asset_key=AssetKey("hf_revisions"),
                                                             asset_partitions=[W2C]), limit=1).records[0]
        table = rec.event_log_entry.asset_observation.metadata["sources"].value.splitlines()
        assert len(table) == 2 + len(CATALOG.names)
        assert f"| {XLAM} | {new_rev[:12]} | {new_rev[:12]} | no |" in table
        assert any(line.startswith(f"| {other} |") for line in table)


def test_dagster_cli_finds_the_code_location_and_the_instance(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.pop("DAGSTER_MODULE_NAME", None)
    out = subprocess.run([str(PY), "-m", "surrogate_dagster.cli", "dagster", "asset", "list"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert {"source_rows", "normalized_rows", "regression_lineage_report"} <= set(out.stdout.split())
    assert (home / "dagster.yaml").read_text() == cli.INSTANCE_YAML  # the project's instance settings

    # a target named on the command line wins over an exported one (Dagster refuses both at once)
    named = subprocess.run([str(PY), "-m", "surrogate_dagster.cli", "dagster", "definitions", "validate", "-w",
                            "workspace.yaml"], cwd=REPO, env={**env, "DAGSTER_MODULE_NAME": LOCATION},
                           capture_output=True, text=True, timeout=300)
    assert named.returncode == 0, named.stderr[-2000:]

    exports = subprocess.run([str(PY), "-m", "surrogate_dagster.cli", "env"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=120).stdout
    assert f"export DAGSTER_HOME={home}" in exports.splitlines()
    assert f"export DAGSTER_MODULE_NAME={LOCATION}" in exports.splitlines()


def test_each_profile_names_its_instance(monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert instance_home(load_profile("local")) == LOCAL_HOME
    assert instance_home(load_profile("production")) == Path("/mnt/dagster_home")  # the host's disk, not a checkout
    with pytest.raises(NoInstanceHome, match="phases.ops.dagster_home"):
        instance_home(load_profile("cluster"))  # names none: the pods' DAGSTER_HOME, never var/dagster_home
    prod = load_profile("production")
    prod.phases.setdefault("ops", {})["dagster_home"] = "/srv/dagster_home"
    assert instance_home(prod) == Path("/srv/dagster_home")
    assert instance_home(prod, {"DAGSTER_HOME": "/elsewhere"}) == Path("/elsewhere")
