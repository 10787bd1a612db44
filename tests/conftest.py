"""Shared fixtures: a temp-dir local profile (object store, hub pushes, work dir), the regex sanitizer.

Every test is marked with its tier, the first folder under tests/ (unit, integration, env), so
``-m unit`` selects the same tests as ``tests/unit``. Under pytest-xdist (the Makefile's ``test``:
``--dist loadfile``, each file whole on one worker, its module fixtures built once) the tests of the
files in MACHINE_LOCKS hold a lock file while they run, so two of them never overlap."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

# Tests never talk to the real hub, even if a developer's shell is configured for it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("SURROGATE_RETRY_DELAY_SCALE", "0")  # step retries without the backoff sleeps

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "env")
# Files whose tests must not overlap with each other's, by the lock they share: each starts a local
# Ray cluster of 2 CPUs.
MACHINE_LOCKS = {
    "integration/test_executor_seam.py": "ray",
    "integration/test_ops_executors.py": "ray",
}


def pytest_collection_modifyitems(config, items):
    """Mark each test with the tier folder it lies in, and with its machine lock if its file has one."""
    for item in items:
        rel = Path(str(item.path)).resolve().relative_to(TESTS)
        if rel.parts[0] in TIERS:
            item.add_marker(rel.parts[0])
        if rel.as_posix() in MACHINE_LOCKS:
            item.add_marker(pytest.mark.machine_lock(MACHINE_LOCKS[rel.as_posix()]))


@pytest.fixture(autouse=True)
def _machine_lock(request, tmp_path_factory):
    """Hold the test's machine lock (``machine_lock`` mark) while it runs: a POSIX lock (lockf) on a
    file in the folder above this run's basetemp, which every xdist worker of the run shares. Unlike
    an flock, a fork of the holder (a worker pool the test starts and leaves running) does not keep it."""
    mark = request.node.get_closest_marker("machine_lock")
    if mark is None:
        yield
        return
    with open(tmp_path_factory.getbasetemp().parent / f"{mark.args[0]}.lock", "w") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        yield


@pytest.fixture
def local_resources(tmp_path):
    """Resources of the local profile with every writable path under tmp_path."""
    from surrogate_dagster.curation.resource import CurationSettings
    from surrogate_dagster.paths import FIXTURES_DIR
    from surrogate_dagster.resources import HubResource, ObjectStoreResource

    return {
        "object_store": ObjectStoreResource(kind="local", root=str(tmp_path / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(FIXTURES_DIR / "hub"),
                           push_dir=str(tmp_path / "pushes"), org="test"),
        "curation": CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                     work_dir=str(tmp_path / "work")),
    }


@pytest.fixture(scope="session")
def regex_sanitizer():
    """The sanitizer with every regex detector and no NER model (the secrets rules' tests)."""
    from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig

    return Sanitizer(SanitizerConfig(ner_model=None))
