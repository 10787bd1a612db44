"""The runner: profile overrides are applied and named in the report; expected outputs are cached
in the object store and only missing tasks are computed; reports round-trip through the store."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.evals.config import EvalsProfile, load_eval_catalog
from surrogate_dagster.evals.harness import humaneval_plus
from surrogate_dagster.evals.harness.evalplus_core import load_problems
from surrogate_dagster.evals.reports import read_samples, read_summary, write_report
from surrogate_dagster.evals.runner import EvalEnv, run_tier1
from surrogate_dagster.storage import LocalObjectStore
from tests.support.scripted_model import ScriptedModel


@pytest.fixture()
def env(tmp_path):
    prof = EvalsProfile.model_validate({"offline": True, "work_dir": str(tmp_path / "work"), "overrides": {
        "bfcl": {"max_per_category": 1}, "livecodebench": {"max_items": 2, "cutoff": "2024-01-01"}}})
    logs: list[str] = []
    return EvalEnv(load_eval_catalog(), prof, LocalObjectStore(tmp_path / "store"), log=logs.append), logs


def test_overrides_are_applied_and_named(env):
    e, _ = env
    rep = run_tier1("bfcl", ScriptedModel(lambda r: "no call"), e)
    # a test double cannot be served to bfcl-eval: the project's checker on the 11 single-turn Python
    # categories, labelled as the fallback
    assert rep.n_items == 11 and "'max_per_category': 1" in rep.notes[0]
    assert rep.metrics["fallback"].startswith("ScriptedModel serves no model")
    rep = run_tier1("livecodebench", ScriptedModel(lambda r: "pass"), e)
    assert rep.n_items == 2 and rep.metrics["cutoff"] == "2024-01-01" and "NOT LiveCodeBench" in rep.variant
    with pytest.raises(ValueError, match="not a Tier-1"):
        run_tier1("noleak", ScriptedModel(lambda r: ""), e)


def test_groundtruth_cache_computes_only_missing_tasks(env):
    e, logs = env
    path, info = humaneval_plus.prepare_offline(e.sandbox, e.prof.work_path("he"))
    probs = load_problems("humaneval", str(path))
    get = e.groundtruth("humaneval")
    first = get({t: probs[t] for t in ("HumanEval/0", "HumanEval/1")}, info["converted_sha256"])
    again = get({t: probs[t] for t in ("HumanEval/0", "HumanEval/1", "HumanEval/2")}, info["converted_sha256"])
    assert first["HumanEval/0"] == again["HumanEval/0"] and set(again) == {"HumanEval/0", "HumanEval/1", "HumanEval/2"}
    assert [m.split(":")[1].strip() for m in logs if "computing" in m] == [
        "computing expected outputs of 2 canonical solutions (once)",
        "computing expected outputs of 1 canonical solutions (once)"]


def test_reports_round_trip(env):
    e, _ = env
    rep = run_tier1("bfcl", ScriptedModel(lambda r: "no call"), e)
    s = write_report(e.store, "stage1_checkpoint", "bfcl", rep, {"revision": "abc"})
    assert read_summary(e.store, "stage1_checkpoint", "bfcl") == json.loads(json.dumps(s, default=str))
    assert len(read_samples(e.store, s)) == rep.n_items and "samples" not in s
