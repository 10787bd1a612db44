"""A stage trains on the mixture version it started from: a mixture pushed while the run is down
(killed, retried) does not change what the resumed run reads; the next run after it finished does.

The trainer is tests/support/training_fake_trainer.py (test_training_pipes.py), so this runs in seconds.
The record-and-read rules alone: tests/unit/training/test_run_inputs_rules.py.
"""

from __future__ import annotations

import json

from tests.integration.test_training_pipes import env, failure_text, materialization, run_stage  # noqa: F401 (fixture)

from surrogate_dagster.curation.mixtures import MixtureBuild, write_mixture
from surrogate_dagster.training.refs import mixture_resolution
from surrogate_dagster.training.run_inputs import started_key
from tests.unit.training.test_run_inputs_rules import V1_KEY, V2_KEY


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
