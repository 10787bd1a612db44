"""The trainer's own merge of a DoRA adapter (surrogate_trainer.run.merge_stage, in .venv-trainer) equals the
PEFT adapter model (the serving rules and the in-process merges: tests/integration/test_training_serving.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.test_training_serving import tiny  # noqa: F401 (the fixture)

TRAINER_PY = Path(__file__).resolve().parents[2] / ".venv-trainer" / "bin" / "python"


@pytest.mark.skipif(not TRAINER_PY.exists(), reason="trainer environment (.venv-trainer) not installed")
def test_the_trainers_merge_of_a_dora_adapter_equals_the_peft_adapter_model(tiny, tmp_path):
    """surrogate_trainer.run.merge_stage (axolotl merge-lora) in the trainer env, on a DoRA adapter."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root / "trainer"), "AXOLOTL_DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
           "WANDB_MODE": "disabled"}
    proc = subprocess.run([str(TRAINER_PY), str(root / "tests" / "support" / "trainer_merge_probe.py"), str(tiny),
                           str(tmp_path / "work"), str(tmp_path / "out.json")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["adapter_effect"] > 1e-2 and out["tokenizer_saved"]
    assert out["max_abs_diff"] < 1e-4, out
