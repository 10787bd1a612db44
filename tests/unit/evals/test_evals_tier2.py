"""SWE-bench Lite and GAIA wrappers: without Docker / credentials they say so (never a pass); the
pieces that run with them (patch extraction, the harness report, GAIA's answer matching) on known
inputs."""

from __future__ import annotations

import json

from surrogate_dagster.evals.gates import target_gate
from surrogate_dagster.evals.harness import gaia, swebench
from tests.support.scripted_model import ScriptedModel


def test_swebench_without_docker_is_unavailable_not_a_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker CLI on PATH
    ok, detail = swebench.docker_status()
    assert not ok and "not installed" in detail
    rep = swebench.run(ScriptedModel(lambda r: ""), offline=False, work_dir=tmp_path, swebench_python="python")
    assert rep.status == "unavailable" and rep.score is None and "Docker unavailable" in rep.reason
    gate = target_gate("swebench", {**rep.summary()}, 25)
    assert not gate.passed and "not a pass" in gate.description


def test_patch_extraction():
    diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert swebench.extract_patch(f"Here:\n<patch>\n{diff}</patch>\nthanks") == diff
    assert swebench.extract_patch(f"```diff\n{diff}```") == diff
    assert swebench.extract_patch(f"I changed it.\n{diff}") == diff
    assert swebench.extract_patch("no diff here") == ""


def test_harness_report_parsing(tmp_path):
    p = tmp_path / "m.run.json"
    p.write_text(json.dumps({"total_instances": 300, "submitted_ids": ["a", "b", "c"], "resolved_ids": ["b"],
                             "error_ids": ["c"]}))
    assert swebench.parse_harness_report(p) == {"resolved_ids": ["b"], "submitted_ids": ["a", "b", "c"],
                                                "total_instances": 300, "error_ids": ["c"]}


def test_gaia_needs_credentials(monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    rep = gaia.run(ScriptedModel(lambda r: ""), offline=False)
    assert rep.status == "unavailable" and "HF_TOKEN" in rep.reason
    assert gaia.run(ScriptedModel(lambda r: ""), offline=True).reason.startswith("offline")


def test_gaia_matching():
    assert gaia.quasi_exact_match("1,000", "1000") and gaia.quasi_exact_match("$17.5", "17.5")
    assert gaia.quasi_exact_match("Paris, london", "paris; London")
    assert gaia.quasi_exact_match("The Beatles.", "the beatles")
    assert not gaia.quasi_exact_match("3", "4") and not gaia.quasi_exact_match("a, b", "a, b, c")
    assert gaia.final_answer("thinking...\nFINAL ANSWER: 42") == "42"
