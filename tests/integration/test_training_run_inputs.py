"""A stage trains on the mixture version it started from: a mixture pushed while the run is down
(killed, retried) does not change what the resumed run reads; the next run after it finished does.

The trainer is tests/support/training_fake_trainer.py (test_training_pipes.py), so this runs in seconds.
"""

from __future__ import annotations

import json

from tests.integration.test_training_pipes import env, failure_text, materialization, run_stage  # noqa: F401 (fixture)

from surrogate_dagster.curation.mixtures import MixtureBuild, write_mixture
from surrogate_dagster.training.refs import mixture_resolution
from surrogate_dagster.training.render import Resolution
from surrogate_dagster.training.run_inputs import inputs_at_start, mark_finished, record_start, started_key

V1_KEY = "mixtures/code_sft/v1/train.jsonl"
V2_KEY = "mixtures/code_sft/v2/train.jsonl"


def _push_v2(store):
    rows = [{"messages": [{"role": "user", "content": "bye"}, {"role": "assistant", "content": "def g(): pass"}]}]
    write_mixture(store, MixtureBuild.from_rows("code_sft", rows, {"test": 1}, {}, "v2"), "card")


def _md(result):
    return {k: getattr(v, "value", v) for k, v in materialization(result).metadata.items()}


def test_resumed_stage_reads_the_mixture_it_started_from(env):  # noqa: F811
    store = env["store"]
    first = run_stage(env, "crash_after_start")
    assert not first.success and "failed with code 3" in failure_text(first)
    started = json.loads(store.get_bytes(started_key("stage1")))
    assert started["finished"] is False
    assert started["inputs"]["code_sft_mixture"]["value"] == V1_KEY

    _push_v2(store)  # curation pushes a new mixture while stage 1 is down
    assert mixture_resolution(store, "code_sft_mixture").value == V2_KEY

    resumed = run_stage(env, "ok")
    assert resumed.success, failure_text(resumed)
    md = _md(resumed)
    assert md["datasets"] == {"code_sft_mixture": "v1"}
    assert md["dataset_keys"] == {"code_sft_mixture": V1_KEY}
    assert md["run_fingerprint"] == started["fingerprint"] == md["datasets_from_started_run"]
    summary = json.loads(store.get_bytes(f"training/stage1/{started['fingerprint']}/result.json"))
    assert summary["fingerprint"] == started["fingerprint"]
    assert json.loads(store.get_bytes(started_key("stage1")))["finished"] is True

    # The run finished: the next materialization trains on what `_latest` points at now.
    fresh = run_stage(env, "ok")
    assert fresh.success, failure_text(fresh)
    md = _md(fresh)
    assert md["datasets"] == {"code_sft_mixture": "v2"} and md["dataset_keys"] == {"code_sft_mixture": V2_KEY}
    assert md["datasets_from_started_run"] == "" and md["run_fingerprint"] != started["fingerprint"]


def test_without_an_unfinished_run_the_latest_mixture_is_read(env):  # noqa: F811
    assert run_stage(env, "ok").success
    _push_v2(env["store"])
    md = _md(run_stage(env, "ok"))
    assert md["datasets"] == {"code_sft_mixture": "v2"} and md["datasets_from_started_run"] == ""


# ------------------------------------------------------------------ the rule, without Dagster

BASE = Resolution("prefix", "models/base_model/b1/model", "b1")
MIX1 = Resolution("key", V1_KEY, "v1")
MIX2 = Resolution("key", V2_KEY, "v2")


def _store(tmp_path):
    from surrogate_dagster.storage import LocalObjectStore

    store = LocalObjectStore(tmp_path / "store", fsync=False)
    store.put_bytes(V1_KEY, b"{}\n")
    store.put_bytes(V2_KEY, b"{}\n")
    return store


def test_inputs_at_start_rules(tmp_path):
    store = _store(tmp_path)
    now = {"base_model": BASE, "code_sft_mixture": MIX2}
    assert inputs_at_start(store, "s", "h1", now, log=lambda m: None) == (now, None)  # no record
    record_start(store, "s", "fp1", "h1", {"base_model": BASE, "code_sft_mixture": MIX1})
    logs = []
    assert inputs_at_start(store, "s", "h1", now, log=logs.append) == (
        {"base_model": BASE, "code_sft_mixture": MIX1}, "fp1")
    assert "resuming run fp1 on the datasets it started from (code_sft_mixture@v1)" in logs[0]
    # another recipe, or another base model: a new run on the current data
    assert inputs_at_start(store, "s", "h2", now, log=lambda m: None) == (now, None)
    other_base = {**now, "base_model": Resolution("prefix", "models/base_model/b2/model", "b2")}
    assert inputs_at_start(store, "s", "h1", other_base, log=lambda m: None) == (other_base, None)
    # a finished run is never resumed
    mark_finished(store, "s", "other-fp")
    assert inputs_at_start(store, "s", "h1", now, log=lambda m: None)[1] == "fp1"
    mark_finished(store, "s", "fp1")
    assert inputs_at_start(store, "s", "h1", now, log=lambda m: None) == (now, None)
    # a recorded mixture that is gone from the store cannot be resumed
    record_start(store, "s", "fp3", "h1", {"base_model": BASE, "code_sft_mixture": Resolution("key", "gone", "v0")})
    logs = []
    assert inputs_at_start(store, "s", "h1", now, log=logs.append) == (now, None)
    assert "no longer in the store" in logs[0]


def test_mixture_pointer_is_read_once(tmp_path):
    """Key and data version come from one read of `_latest` (never one version's key with another's)."""
    store = _store(tmp_path)
    store.put_bytes("mixtures/code_sft/_latest.json", json.dumps({"key": V1_KEY, "data_version": "v1"}).encode())
    reads = []
    get = store.get_bytes

    def counting_get(key):
        reads.append(key)
        return get(key)

    store.get_bytes = counting_get
    assert mixture_resolution(store, "code_sft_mixture") == MIX1
    assert reads == ["mixtures/code_sft/_latest.json"]
