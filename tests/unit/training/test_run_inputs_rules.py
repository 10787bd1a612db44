"""What a training run records at its start and reads back: the inputs-at-start rules, the mixture pointer
read once (through the Pipes stand-in trainer: tests/integration/test_training_run_inputs.py)."""

from __future__ import annotations

import json

from tests.integration.test_training_pipes import env, failure_text, materialization, run_stage  # noqa: F401 (fixture)

from surrogate_dagster.training.refs import mixture_resolution
from surrogate_dagster.training.render import Resolution
from surrogate_dagster.training.run_inputs import inputs_at_start, mark_finished, record_start


V1_KEY = "mixtures/code_sft/v1/train.jsonl"


V2_KEY = "mixtures/code_sft/v2/train.jsonl"


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
