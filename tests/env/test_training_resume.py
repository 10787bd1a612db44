"""Preemption: kill the real trainer mid-run; the step retry (retries.TRAINER_RETRY) resumes it from its
last checkpoint in the same run, and a later run reuses the finished one. A checkpoint that lost
its optimizer.pt in between is not resumed: the retry starts from step 0 and says why.

Slow (real axolotl twice on CPU, about 2-4 minutes): `-m "not slow"` skips it. Needs .venv-trainer.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.test_training_pipes import attempt_failures, failure_text
from tests.support.training_support import TRAINER_PY, dpo_damaged_resume_scenario, dpo_resume_scenario, metadata

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not TRAINER_PY.exists(), reason="trainer environment (.venv-trainer) not installed")]


def test_killed_run_is_resumed_by_the_step_retry_and_finishes():
    sc = dpo_resume_scenario()
    # The first attempt was SIGKILLed right after its first checkpoint reached the object store.
    assert sc.kill_step == 2
    first_attempt, *later = attempt_failures(sc.first)
    assert "failed with code -9" in first_attempt and not later
    # The retry picked that checkpoint up: the step count continues, and the adapter exists.
    assert sc.first.success, failure_text(sc.first)
    md = metadata(sc.first)
    assert md["resumed_from_step"] == 2
    assert md["steps"] == 4
    assert md["resume_refused"] == []
    # A later run trains nothing: it reuses the finished run.
    assert sc.second.success, failure_text(sc.second)
    again = metadata(sc.second)
    assert again["reused_finished_run"] is True and again["run_fingerprint"] == md["run_fingerprint"]
    prefix = "training/stage2/" + md["run_fingerprint"]
    summary = json.loads(sc.store.get_bytes(prefix + "/result.json"))
    assert [p["step"] for p in summary["progress"]] == [3, 4]  # no step trained twice
    assert sc.store.exists(prefix + "/adapter/adapter_model.safetensors")
    assert not sc.store.exists(prefix + "/adapter/model.safetensors")  # axolotl's full-model save stays local
    assert sc.store.exists(prefix + "/merged/model.safetensors")
    # The merged policy carries the rope parameters it was trained under (YaRN x4).
    merged_config = json.loads(sc.store.get_bytes(prefix + "/merged/config.json"))
    assert merged_config["rope_parameters"]["rope_type"] == "yarn"
    assert merged_config["rope_parameters"]["factor"] == 4.0
    assert json.loads(sc.store.get_bytes(prefix + "/checkpoints/latest.json"))["step"] == 4
    # Focused-DPO ran under axolotl: a finite DPO loss near log 2 for a fresh adapter.
    assert 0.0 < md["final_loss"] < 1.0


def test_a_checkpoint_without_its_optimizer_is_not_resumed():
    sc = dpo_damaged_resume_scenario()
    assert sc.kill_step == 2
    assert sc.first.success, failure_text(sc.first)
    md = metadata(sc.first)
    # the only checkpoint lost optimizer.pt: no silent resume without optimizer state
    assert md["resumed_from_step"] == -1
    assert md["resume_refused"] == [{"checkpoint": "latest.json (checkpoint-2)",
                                     "reason": "listed file optimizer.pt is not in the store"}]
    assert md["steps"] == 4  # trained as recorded by the last checkpoint's trainer_state.json
    summary = json.loads(sc.store.get_bytes("training/stage2/" + md["run_fingerprint"] + "/result.json"))
    assert [p["step"] for p in summary["progress"]] == [1, 2, 3, 4]
