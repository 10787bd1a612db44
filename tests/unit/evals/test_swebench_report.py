"""SWE-bench Lite's report logic without an agent or Docker: where the harness's interpreter is
found, the harness's run id, when a run is not scored (set-up failures, the harness erroring on every
instance, a missing fixture), and the informative bar of a max_items subset. The scaffold and the
harness are replaced by functions returning what they would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surrogate_dagster.evals.config import EvalsProfile, gating, load_eval_catalog, threshold
from surrogate_dagster.evals.harness import swebench, swebench_fixture
from surrogate_dagster.evals.harness.swe_agent import ScaffoldRun, ScaffoldSettings
from surrogate_dagster.inference import ModelRef
from surrogate_dagster.paths import REPO_ROOT

DIFF = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


class ServedClient:
    """What the report reads of a served client (the scaffold, replaced here, is what queries it)."""

    ref = ModelRef("stage2_5_checkpoint", "/models/stage2_5", revision="rev1")

    def describe(self) -> dict:
        return {"backend": "vllm-server"}


@pytest.fixture(autouse=True)
def _servable(monkeypatch):
    monkeypatch.setattr(swebench, "servable", lambda client: isinstance(client, ServedClient))


def _client(tmp_path) -> ServedClient:
    return ServedClient()


def _relative_to_repo(path: Path) -> str:
    import os

    rel = os.path.relpath(path, REPO_ROOT)
    assert not Path(rel).is_absolute()
    return rel


def test_a_relative_swebench_python_is_the_repositorys_whatever_the_cwd(tmp_path, monkeypatch):
    py = tmp_path / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.touch()
    rel = _relative_to_repo(py)
    monkeypatch.chdir(tmp_path / "venv")  # neither the repository nor where the path would resolve from here
    found = swebench.harness_python(rel)
    assert found.is_absolute() and found.resolve() == py.resolve()
    assert swebench.harness_blockers(offline=False, swebench_python=rel, docker=(True, "d")) == []
    missing = swebench.harness_blockers(offline=False, swebench_python=".venv-none/bin/python", docker=(True, "d"))
    assert missing == [f"the swebench environment {REPO_ROOT / '.venv-none/bin/python'} does not exist "
                       "(make gpu-host on a host with Docker)"]


def test_the_harness_run_id_changes_with_the_predictions():
    a = swebench.harness_run_id("m", "rev1", b'{"instance_id": "a", "model_patch": ""}\n')
    b = swebench.harness_run_id("m", "rev1", b'{"instance_id": "a", "model_patch": "diff"}\n')
    assert a != b and a.startswith("m-rev1-") and b.startswith("m-rev1-")
    assert a == swebench.harness_run_id("m", "rev1", b'{"instance_id": "a", "model_patch": ""}\n')
    assert swebench.harness_run_id("m", None, b"").startswith("m-rev-")


def _fake_run(tmp_path, rows: list[dict], patches: dict[str, str]) -> ScaffoldRun:
    pred = tmp_path / "predictions.jsonl"
    preds = [{"instance_id": r["instance_id"], "model_name_or_path": "stage2_5_checkpoint",
              "model_patch": patches.get(r["instance_id"], "")} for r in rows]
    pred.write_text("".join(json.dumps(p) + "\n" for p in preds))
    detail = {"litellm": "1", "agent": "A", "agent_config": "swebench_backticks.yaml", "model_class": "x.M",
              "environment": "x.BubblewrapEnvironment"}
    return ScaffoldRun(scaffold="mini-swe-agent 2.4.6", detail=detail, instances=rows, predictions=preds,
                       predictions_path=pred)


@pytest.fixture
def harness_here(tmp_path, monkeypatch):
    """A working Docker and swebench environment; the harness's runs recorded; its report as set."""
    import datasets

    py = tmp_path / "swebench" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.touch()
    ids = ["a__a-1", "a__a-2", "b__b-3"]
    monkeypatch.setattr(swebench, "docker_status", lambda: (True, "Docker server test"))
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split: [
        {"instance_id": i, "repo": i.split("-")[0].replace("__", "/"), "problem_statement": "p", "base_commit": "c"}
        for i in ids])
    state = {"calls": [], "report": {}}

    def fake_harness(cmd, cwd, **kw):
        state["calls"].append(cmd)
        run_id = cmd[cmd.index("--run_id") + 1]
        Path(cwd, f"stage2_5_checkpoint.{run_id}.json").write_text(json.dumps(state["report"]))

        class Done:
            returncode, stderr = 0, ""
        return Done()

    monkeypatch.setattr(swebench.subprocess, "run", fake_harness)
    return {"python": str(py), "ids": ids, "state": state}


def _run(tmp_path, monkeypatch, harness_here, rows, patches, max_items=None):
    (tmp_path / "work").mkdir(exist_ok=True)
    monkeypatch.setattr(swebench, "_scaffold", lambda *a, **k: _fake_run(tmp_path, rows, patches))
    return swebench.run(_client(tmp_path), offline=False, work_dir=tmp_path / "work",
                        swebench_python=harness_here["python"], settings=ScaffoldSettings(),
                        agent_python=harness_here["python"], max_items=max_items)


def _rows(ids, statuses):
    return [{"instance_id": i, "exit_status": s, "model_calls": 3, "commands_run": 2, "patch_chars": 10}
            for i, s in zip(ids, statuses)]


def test_a_scored_run_is_ok_and_its_harness_run_id_is_the_predictions(tmp_path, monkeypatch, harness_here):
    ids = harness_here["ids"]
    harness_here["state"]["report"] = {"resolved_ids": [ids[0]], "submitted_ids": ids, "error_ids": []}
    rep = _run(tmp_path, monkeypatch, harness_here, _rows(ids, ["Submitted"] * 3), {ids[0]: DIFF, ids[1]: DIFF})
    assert rep.status == "ok" and rep.score == pytest.approx(100 / 3, abs=0.01)
    (cmd,) = harness_here["state"]["calls"]
    assert Path(cmd[0]).is_absolute()
    first = cmd[cmd.index("--run_id") + 1]
    rep = _run(tmp_path, monkeypatch, harness_here, _rows(ids, ["Submitted"] * 3), {ids[0]: DIFF})
    second = harness_here["state"]["calls"][1][harness_here["state"]["calls"][1].index("--run_id") + 1]
    assert first != second  # other patches: the harness keeps no earlier instance result for them


def test_a_connection_failure_on_some_instances_is_not_scored(tmp_path, monkeypatch, harness_here):
    ids = harness_here["ids"]
    rows = _rows(ids, ["Submitted", "APIConnectionError", "CheckoutError"])
    rep = _run(tmp_path, monkeypatch, harness_here, rows, {ids[0]: DIFF})
    assert rep.status == "unavailable" and rep.score is None
    assert "2 of 3 instances failed to set up" in rep.reason
    assert "a__a-2 (APIConnectionError)" in rep.reason and "b__b-3 (CheckoutError)" in rep.reason
    assert rep.metrics["instances_attempted"] == 3 and harness_here["state"]["calls"] == []


def test_a_harness_that_errors_on_every_instance_is_not_a_zero(tmp_path, monkeypatch, harness_here):
    ids = harness_here["ids"]
    harness_here["state"]["report"] = {"resolved_ids": [], "submitted_ids": ids, "error_ids": [ids[0], ids[1]]}
    rep = _run(tmp_path, monkeypatch, harness_here, _rows(ids, ["Submitted"] * 3), {ids[0]: DIFF, ids[1]: DIFF})
    assert rep.status == "unavailable" and rep.score is None
    assert "errored on every instance with a patch (2" in rep.reason
    # one instance scored: the run is scored, its errors counted
    harness_here["state"]["report"] = {"resolved_ids": [ids[1]], "submitted_ids": ids, "error_ids": [ids[0]]}
    rep = _run(tmp_path, monkeypatch, harness_here, _rows(ids, ["Submitted"] * 3), {ids[0]: DIFF, ids[1]: DIFF})
    assert rep.status == "ok" and rep.metrics["errors"] == 1


def test_a_max_items_subset_says_so_and_is_held_to_the_informative_partial_bar(tmp_path, monkeypatch, harness_here):
    ids = harness_here["ids"]
    harness_here["state"]["report"] = {"resolved_ids": [ids[0]], "submitted_ids": ids[:2], "error_ids": []}
    rep = _run(tmp_path, monkeypatch, harness_here, _rows(ids[:2], ["Submitted"] * 2), {ids[0]: DIFF}, max_items=2)
    assert rep.status == "ok" and "first 2 of 300" in rep.variant
    assert any("not SWE-bench Lite's 300" in n and "informative" in n for n in rep.notes)
    cat = load_eval_catalog()
    whole = EvalsProfile(offline=False)
    subset = EvalsProfile(offline=False, overrides={"swebench_lite": {"max_items": 25}})
    assert gating(cat, whole, "swebench_lite") and threshold(cat, whole, "swebench_lite")[0] == 25
    thr, src = threshold(cat, subset, "swebench_lite")
    assert thr == 25 and "swebench-lite-subset" in src and "first 25 of the 300 instances" in src
    assert not gating(cat, subset, "swebench_lite")


def test_the_catalog_refuses_a_swebench_threshold_without_an_informative_partial(tmp_path):
    import yaml

    from surrogate_dagster.paths import ASSETS_DIR

    raw = yaml.safe_load((ASSETS_DIR / "evals.yaml").read_text())
    raw["tier2"]["swebench_lite"]["partial"]["informative"] = False
    p = tmp_path / "evals.yaml"
    p.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="mark it `informative: true`"):
        load_eval_catalog(p)
    del raw["tier2"]["swebench_lite"]["partial"]
    p.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="needs `partial:`"):
        load_eval_catalog(p)


def test_a_missing_fixture_makes_the_report_unavailable_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(swebench_fixture, "FIXTURE_DIR", tmp_path / "no-fixtures" / "mini_stats")
    py = tmp_path / "python"
    py.touch()
    rep = swebench.fixture_report(_client(tmp_path), ["Docker unavailable (test)"], settings=ScaffoldSettings(),
                                  agent_python=py, work_dir=tmp_path / "work", log=None)
    assert rep.status == "unavailable" and rep.reason == "Docker unavailable (test)"
    assert rep.notes == [f"scaffold not run: the shipped fixture instance {tmp_path / 'no-fixtures' / 'mini_stats'} "
                         "lacks ['instance.json', 'repo'] (fixtures/swebench is not in this copy)"]
    monkeypatch.setattr(swebench_fixture, "FIXTURE_DIR", REPO_ROOT / "fixtures" / "swebench" / "mini_stats")
    assert swebench_fixture.fixture_missing() is None  # the shipped one is complete
