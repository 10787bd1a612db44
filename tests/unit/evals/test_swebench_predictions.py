"""The SWE-bench scaffold's pure parts: the predictions file in swebench's format, the scaffold's
figures, and the runner's offline settings and command count (no subprocess, no agent)."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.evals.harness import swe_agent_runner
from surrogate_dagster.evals.harness.swe_agent import (prediction_rows, predictions_jsonl, read_predictions,
                                                       scaffold_figures)

DIFF = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def test_predictions_file_has_swebenchs_three_keys_per_line(tmp_path):
    rows = prediction_rows("stage2_5_checkpoint", [("astropy__astropy-12907", DIFF), ("django__django-11099", "")])
    text = predictions_jsonl(rows)
    lines = [json.loads(x) for x in text.splitlines()]
    assert lines == [{"instance_id": "astropy__astropy-12907", "model_name_or_path": "stage2_5_checkpoint",
                      "model_patch": DIFF},
                     {"instance_id": "django__django-11099", "model_name_or_path": "stage2_5_checkpoint",
                      "model_patch": ""}]
    p = tmp_path / "predictions.jsonl"
    p.write_text(text)
    assert read_predictions(p) == rows


@pytest.mark.parametrize("patches, match", [
    ([("a", DIFF), ("a", DIFF)], "repeated"),
    ([("", DIFF)], "empty"),
    ([("a", "I fixed it")], "not a git diff"),
    ([("a", DIFF.rstrip("\n"))], "ending in a newline"),
])
def test_bad_predictions_are_refused(patches, match):
    with pytest.raises(ValueError, match=match):
        prediction_rows("m", patches)


def test_a_predictions_line_without_a_key_names_the_line(tmp_path):
    p = tmp_path / "predictions.jsonl"
    p.write_text(json.dumps({"instance_id": "a", "model_name_or_path": "m", "model_patch": ""}) + "\n"
                 + json.dumps({"instance_id": "b", "model_patch": ""}) + "\n")
    with pytest.raises(ValueError, match=r"predictions.jsonl:2: prediction without \['model_name_or_path'\]"):
        read_predictions(p)


def test_scaffold_figures_count_what_the_agent_did():
    rows = [{"instance_id": "a", "exit_status": "Submitted", "model_calls": 12, "commands_run": 11, "patch_chars": 300},
            {"instance_id": "b", "exit_status": "LimitsExceeded", "model_calls": 250, "commands_run": 240,
             "patch_chars": 0},
            {"instance_id": "c", "exit_status": "Submitted", "model_calls": 3, "commands_run": 2, "patch_chars": 0}]
    assert scaffold_figures(rows) == {"instances_attempted": 3, "patches_produced": 1, "submitted": 2,
                                      "model_calls": 265, "max_model_calls": 250, "commands_run": 253,
                                      "exit_statuses": {"LimitsExceeded": 1, "Submitted": 2}}
    assert scaffold_figures([])["instances_attempted"] == 0


def test_runner_runs_offline_and_counts_executed_commands(tmp_path):
    env = swe_agent_runner.offline_environment(tmp_path, 2)
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True" and env["LITELLM_OFFLINE_MODE"] == "true"
    assert env["MSWEA_COST_TRACKING"] == "ignore_errors" and env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] == "2"
    assert env["MSWEA_GLOBAL_CONFIG_DIR"].startswith(str(tmp_path))  # never a user's ~/.config .env
    messages = [{"role": "system"}, {"role": "user"}, {"role": "assistant"},
                {"role": "user", "extra": {"returncode": 0, "raw_output": ""}},
                {"role": "assistant"}, {"role": "user", "extra": {"interrupt_type": "FormatError"}},
                {"role": "exit", "extra": {"exit_status": "Submitted"}}]
    assert swe_agent_runner.commands_run(messages) == 1
