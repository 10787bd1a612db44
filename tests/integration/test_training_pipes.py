"""The checkpoint asset over Dagster Pipes: a complete run, and every way a trainer can die early.

The trainer is tests/support/training_fake_trainer.py (same protocol and store client as the real one), so
these run in seconds; the real axolotl trainer is exercised by test_training_resume.py and make run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from dagster import DagsterEventType, materialize

from surrogate_dagster.curation.mixtures import MixtureBuild, write_mixture
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.retries import TRAINER_RETRY
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.training.assets import CATALOG, build_stage_asset
from surrogate_dagster.training.executor import TrainerExecutorResource
from surrogate_dagster.training.render import config_hash

FAKE = Path(__file__).resolve().parents[1] / "support" / "training_fake_trainer.py"
STAGE = CATALOG.stage("stage1")


@pytest.fixture
def env(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "def f(): pass"}]}]
    write_mixture(store, MixtureBuild.from_rows("code_sft", rows, {"test": 1}, {}, "v1"), "card")
    store.put_bytes("models/base_model/b1/model/config.json", b"{}")
    store.put_bytes("models/base_model/_latest.json",
                    json.dumps({"prefix": "models/base_model/b1/model", "data_version": "b1"}).encode())
    (tmp_path / "mirror").mkdir()
    return {"tmp": tmp_path, "store": store}


def run_stage(env, mode: str, **trainer_kw):
    resources = {
        "object_store": ObjectStoreResource(kind="local", root=str(env["tmp"] / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(env["tmp"] / "mirror"),
                           push_dir=str(env["tmp"] / "pushes"), org="axentx"),
        "trainer": TrainerExecutorResource(executor="local", command=[sys.executable, str(FAKE)],
                                           work_dir=str(env["tmp"] / "work"), env={"FAKE_TRAINER_MODE": mode},
                                           **trainer_kw),
    }
    asset_def = build_stage_asset(STAGE, "local", "tiny")
    return materialize([asset_def], resources=resources, raise_on_error=False)


def failure_text(result) -> str:
    parts = []
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            err = event.step_failure_data.error
            while err is not None:
                parts.append(err.message)
                err = err.cause
    return "\n".join(parts)


def materialization(result):
    mats = result.asset_materializations_for_node(STAGE.asset)
    assert len(mats) == 1
    return mats[0]


def test_complete_run_materializes_with_lineage_metadata(env):
    result = run_stage(env, "ok")
    assert result.success, failure_text(result)
    mat = materialization(result)
    md = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    assert md["config_hash"] == config_hash(STAGE, CATALOG, "local")
    assert md["base_model"] == "base_model" and md["base_model_revision"] == "b1"
    assert md["reference_model"] == "n/a (SFT)"
    assert md["datasets"] == {"code_sft_mixture": "v1"}
    assert md["steps"] == 3 and md["tokens_per_s"] == 50.0 and md["wall_s"] == 7.2
    assert md["gpu_hours"] == 0 and md["gpu_type"] == "cpu" and "cost_usd" not in md
    assert md["artifact_uri"].startswith("file://") and md["artifact_uri"].endswith("/adapter")
    assert md["loss_curve"].startswith("![plot](data:image/png;base64,")
    assert md["checkpoints_uploaded"] == 1 and md["reused_finished_run"] is False
    assert mat.tags["dagster/data_version"] == md["run_fingerprint"]
    # The Hub push (offline mirror): private, adapter + a card with the lineage.
    repo = env["tmp"] / "pushes/models/axentx/surrogate-1-coder-7b-v2-sft"
    assert md["hub_uri"].startswith("hf-offline://models/axentx/surrogate-1-coder-7b-v2-sft@")
    assert (repo / "private").read_text().strip() == "true"
    # stage 1 is DoRA: served merged (training/serving.py), the adapter beside it under adapter/
    assert md["served_as"] == "merged"
    assert (repo / "config.json").is_file()
    assert (repo / "adapter" / "adapter_model.safetensors").read_bytes() == b"fake adapter weights"
    adapter_cfg = json.loads((repo / "adapter" / "adapter_config.json").read_text())
    assert adapter_cfg["base_model_name_or_path"] == "axentx/surrogate-1-tiny-base"
    card = (repo / "README.md").read_text()
    assert "code_sft_mixture` @ `v1`" in card and md["config_hash"] in card and "base_model@b1" in card
    pointer = json.loads(env["store"].get_bytes("training/stage1/_latest.json"))
    assert pointer["data_version"] == md["run_fingerprint"]
    # Re-materializing with the same inputs reuses the finished run: the trainer is not started
    # (this "trainer" would exit without a word).
    again = run_stage(env, "exit_before_pipes")
    assert again.success, failure_text(again)
    md2 = {k: getattr(v, "value", v) for k, v in materialization(again).metadata.items()}
    assert md2["reused_finished_run"] is True and md2["run_fingerprint"] == md["run_fingerprint"]
    assert md2["hub_uri"] == md["hub_uri"]


def attempt_failures(result) -> list[str]:
    """The error chain of every failed attempt of the step (retried ones included), in order."""
    out = []
    for event in result.all_events:
        if event.event_type in (DagsterEventType.STEP_FAILURE, DagsterEventType.STEP_UP_FOR_RETRY):
            err, parts = event.event_specific_data.error, []
            while err is not None:
                parts.append(err.message)
                err = err.cause
            out.append("\n".join(parts))
    return out


@pytest.mark.parametrize("mode, expected", [
    ("exit_before_pipes", "sent no Pipes message"),
    ("crash_after_start", "failed with code 3"),
    ("sigkill_mid", "failed with code -9"),
    ("silent_success", "without reporting its artifact (last step reported: 1)"),
])
def test_a_trainer_that_dies_early_fails_the_asset(env, mode, expected):
    result = run_stage(env, mode)
    assert not result.success
    failures = attempt_failures(result)
    assert len(failures) == TRAINER_RETRY.max_retries + 1  # the step retry met the same death
    assert all(expected in f for f in failures), failures
    assert not result.asset_materializations_for_node(STAGE.asset)
    assert not env["store"].exists("training/stage1/_latest.json")  # downstream sees nothing new


def test_a_finished_run_that_sent_no_materialization_is_reused_by_the_step_retry(env):
    result = run_stage(env, "artifact_no_materialization")
    first, *later = attempt_failures(result)
    assert "expected one explicit materialization" in first and not later
    # the trainer finished and uploaded its artifact: the retry picks that run up, it does not retrain
    assert result.success
    md = {k: getattr(v, "value", v) for k, v in materialization(result).metadata.items()}
    assert md["reused_finished_run"] is True


def test_finished_runs_are_retrained_when_reuse_is_off(env):
    assert run_stage(env, "ok").success
    result = run_stage(env, "silent_success", reuse_finished_runs=False)
    assert not result.success and "without reporting its artifact" in failure_text(result)
