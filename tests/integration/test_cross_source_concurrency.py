"""Two runs of the cross-source dedup at once, on one machine's work dir, decide what one run
alone decides: as direct calls in two processes, and as two Dagster CLI materializations on one
instance (where the `cross_source` pool's host slot makes the second wait for the first)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from surrogate_dagster.sources.assets import CATALOG
from tests.support.cross_source_data import build_inputs

ROOT = Path(__file__).resolve().parents[2]
DIRECT = """
import sys
from dagster import build_asset_context
from surrogate_dagster.curation.assets import dedup_decisions
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.resources import ObjectStoreResource
r = dedup_decisions(build_asset_context(), object_store=ObjectStoreResource(kind="local", root=sys.argv[1]),
                    curation=CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2, work_dir=sys.argv[2]))
print("VERSION", r.data_version.value)
"""


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore", **extra}


def _decisions(store: Path) -> tuple[str, bytes]:
    latest = json.loads((store / "curation" / "dedup" / "_latest.json").read_text())
    return latest["version"], (store / latest["key"]).read_bytes()


def _direct(store: Path, work: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DIRECT, str(store), str(work)], cwd=ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The inputs, and the decisions of one run alone (own store copy, own work dir)."""
    root = tmp_path_factory.mktemp("cross-source")
    build_inputs(root)
    solo_store = root / "solo-store"
    shutil.copytree(root / "store", solo_store)
    p = _direct(solo_store, root / "solo-work")
    out = p.communicate(timeout=600)[0]
    assert p.returncode == 0, out
    return root, _decisions(solo_store)


def test_the_planted_duplicates_are_found(inputs) -> None:
    _, (_, solo) = inputs
    decisions = json.loads(solo)
    names = list(CATALOG.names)
    exact = {k: v for k, v in decisions.items() if v["reason"] == "exact_duplicate"}
    near = {k: v for k, v in decisions.items() if v["reason"] == "near_duplicate"}
    # by construction (cross_source_data.planted_rows): one exact copy per source after the first,
    # one near copy per source after the second; the earlier source's row is kept
    assert len(exact) == len(names) - 1 and len(near) == len(names) - 2 and len(decisions) == 2 * len(names) - 3
    assert exact[f"{names[1]}\t{names[1]}-12"]["kept"] == [names[0], f"{names[0]}-0"]
    assert near[f"{names[2]}\t{names[2]}-13"]["kept"] == [names[0], f"{names[0]}-1"]


def test_two_processes_at_once_decide_as_one_alone(inputs) -> None:
    root, (solo_version, solo) = inputs
    for attempt in range(3):
        work = root / f"direct-work-{attempt}"  # empty: both restore every signature folder at once
        stores = [root / f"direct-{attempt}-{k}" for k in range(2)]
        for s in stores:
            shutil.copytree(root / "store", s)
        ps = [_direct(s, work) for s in stores]
        outs = [p.communicate(timeout=600)[0] for p in ps]
        assert [p.returncode for p in ps] == [0, 0], outs
        assert [_decisions(s) for s in stores] == [(solo_version, solo)] * 2
        assert not any((work / "scratch").iterdir())  # each removed its own scratch


def test_two_cli_materializations_at_once_take_turns_and_match_solo(inputs) -> None:
    from dagster import AssetKey, DagsterInstance

    from surrogate_dagster.cli import ensure_instance_home

    root, (solo_version, solo) = inputs
    home = ensure_instance_home(root / "dagster_home", set_env=False)
    instance = DagsterInstance.from_config(str(home))  # storage created here, before the two CLIs
    work = root / "cli-work"
    stores = [root / f"cli-store-{k}" for k in range(2)]
    ps = []
    for s in stores:
        shutil.copytree(root / "store", s)
        ps.append(subprocess.Popen(
            [str(Path(sys.executable).parent / "dagster"), "asset", "materialize", "-f",
             "tests/support/cross_source_location.py", "--select", "dedup_decisions"],
            cwd=ROOT, env=_env(DAGSTER_HOME=str(home), CROSS_SOURCE_TEST_ROOT=str(root),
                               CROSS_SOURCE_STORE=str(s), CROSS_SOURCE_WORK_DIR=str(work)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=900)[0] for p in ps]
    assert [p.returncode for p in ps] == [0, 0], [o[-3000:] for o in outs]
    assert [_decisions(s) for s in stores] == [(solo_version, solo)] * 2
    mats = instance.fetch_materializations(AssetKey("dedup_decisions"), limit=10).records
    assert sorted(m.asset_materialization.tags["dagster/data_version"] for m in mats) == [solo_version] * 2
    # one step ran at a time: the second took the pool's host slot after the first released it
    # (Dagster's own slot claim is not atomic on SQLite, so both steps may start; see
    # runtime/host_pools.py)
    spans = []
    for run in instance.get_runs():
        said = {m: e.timestamp for e in instance.all_logs(run.run_id) if e.dagster_event is None
                for m in ("taken", "released") if f"pool cross_source: host slot 0 {m}" in e.user_message}
        assert set(said) == {"taken", "released"}, run.run_id
        spans.append([said["taken"], said["released"]])
    first, second = sorted(spans)
    assert first[1] <= second[0]
