"""Shared fixtures: a temp-dir local profile (object store, hub pushes, work dir), the regex sanitizer.

Every test is marked with its tier, the first folder under tests/ (unit, integration, env), so
``-m unit`` selects the same tests as ``tests/unit``. Under pytest-xdist's ``--dist loadfile`` (the
Makefile's ``test``) each file runs whole on one worker, its module fixtures built once, and the
files of one SHARED_GROUPS group run on one worker, one after the other."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests never talk to the real hub, even if a developer's shell is configured for it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("SURROGATE_RETRY_DELAY_SCALE", "0")  # step retries without the backoff sleeps

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "env")
# Files that run on one worker, one after the other: each of the Ray files starts a local cluster of
# 2 CPUs; the training reference and resume tests share one memoized axolotl run (per process).
SHARED_GROUPS = {
    "integration/test_executor_seam.py": "ray",
    "integration/test_ops_executors.py": "ray",
    "env/test_training_reference.py": "dpo_resume_scenario",
    "env/test_training_resume.py": "dpo_resume_scenario",
}


def pytest_collection_modifyitems(config, items):
    """Mark each test with the tier folder it lies in. Tests marked timing must be unit tests: the
    Makefile runs them alone from tests/unit."""
    for item in items:
        rel = Path(str(item.path)).resolve().relative_to(TESTS)
        if rel.parts[0] in TIERS:
            item.add_marker(rel.parts[0])
        if item.get_closest_marker("timing") is not None and rel.parts[0] != "unit":
            raise pytest.UsageError(f"{item.nodeid}: a timing test outside tests/unit is run by no make target")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile``, xdist's file scheduling with the SHARED_GROUPS files as one work unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileGroupScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_GROUPS.get(path.removeprefix("tests/"), path)

    return FileGroupScheduling(config, log)


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
