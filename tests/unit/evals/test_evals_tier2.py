"""SWE-bench Lite and GAIA wrappers: without Docker / credentials they say so (never a pass); the
pieces that run with them (the harness report, GAIA's answer matching) on known inputs."""

from __future__ import annotations

import json
import sys

from surrogate_dagster.evals.gates import target_gate
from surrogate_dagster.evals.harness import gaia, swebench
from surrogate_dagster.evals.harness.swe_agent import ScaffoldSettings
from tests.support.scripted_model import ScriptedModel


def test_swebench_without_docker_is_unavailable_not_a_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker CLI on PATH
    ok, detail = swebench.docker_status()
    assert not ok and "not installed" in detail
    rep = swebench.run(ScriptedModel(lambda r: ""), offline=False, work_dir=tmp_path, swebench_python="python",
                       settings=ScaffoldSettings(step_limit=3), agent_python=".venv-swe-agent/bin/python")
    assert rep.status == "unavailable" and rep.score is None and "Docker unavailable" in rep.reason
    assert rep.samples == [] and "resolved" not in rep.metrics
    assert any(n.startswith("scaffold not run") for n in rep.notes)  # a test double serves no HTTP model
    gate = target_gate("swebench", {**rep.summary()}, 25)
    assert not gate.passed and "not a pass" in gate.description


def test_harness_blockers_name_every_missing_piece(tmp_path):
    down = (False, "no Docker daemon reachable")
    assert swebench.harness_blockers(offline=False, swebench_python=None, docker=(True, "Docker 27")) == [
        "no swebench environment configured (phases.evals.swebench_python)"]
    got = swebench.harness_blockers(offline=True, swebench_python=str(tmp_path / "nope"), docker=down)
    assert [b.split(" ")[0] for b in got] == ["Docker", "offline:", "the"] and "nope" in got[2]
    assert swebench.harness_blockers(offline=False, swebench_python=sys.executable, docker=(True, "Docker 27")) == []


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
