"""RULER scored by lm-eval: which tasks a profile runs and why the others do not, the gate a partial
run is held to, lm-eval's command line, and how its results JSON becomes the report (fractions to
percent, the group's mean as lm-eval aggregated it, the 13-task mean claimed only for all 13)."""

from __future__ import annotations

import json

import pytest
import yaml

from surrogate_dagster.evals.config import EvalsProfile, gating, load_eval_catalog, ruler_not_run, threshold
from surrogate_dagster.evals.harness import ruler
from surrogate_dagster.evals.harness import ruler_lm_eval_runner as runner
from surrogate_dagster.evals.harness.common import EvalReport
from surrogate_dagster.paths import ASSETS_DIR

CAT = load_eval_catalog()
OFFLINE_TASKS = ["niah_single_1", "niah_multikey_2", "niah_multikey_3", "ruler_vt", "ruler_cwe", "ruler_fwe"]


def test_the_catalog_runs_lm_evals_whole_ruler_group_online():
    for b in ("ruler_32k", "ruler_128k"):
        assert CAT.bench(b).tasks == list(ruler.RULER_TASKS) and CAT.bench(b).variant is None
        assert ruler_not_run(CAT.bench(b), EvalsProfile(offline=False), b) == {}
    assert threshold(CAT, EvalsProfile(offline=False), "ruler_32k") == (90, "runbook (assets/evals.yaml)")
    assert gating(CAT, EvalsProfile(offline=False), "ruler_32k")


def test_offline_leaves_out_the_tasks_whose_data_is_fetched_and_says_why():
    prof = EvalsProfile(offline=True, overrides={"ruler_32k": {"skip": {"ruler_vt": "tokenizer too coarse"}}})
    not_run = ruler_not_run(CAT.bench("ruler_32k"), prof, "ruler_32k")
    assert [t for t in ruler.RULER_TASKS if t not in not_run] == [t for t in OFFLINE_TASKS if t != "ruler_vt"]
    assert not_run["niah_single_2"].startswith("offline profile: ") and "paul_graham_essays" in not_run["niah_single_2"]
    assert "rajpurkar.github.io" in not_run["ruler_qa_squad"] and "Hub" in not_run["ruler_qa_hotpot"]
    assert not_run["ruler_vt"] == "profile override: tokenizer too coarse"
    # a partial run is held to the catalog's `partial` bar, informatively, never to the 13-task figure as such
    thr, src = threshold(CAT, prof, "ruler_32k")
    assert thr == 90 and "ruler-partial-task-mean" in src and "runs 5 of the 13 RULER tasks" in src
    assert not gating(CAT, prof, "ruler_32k")
    # a profile's labelled bar still gates
    prof2 = EvalsProfile(offline=True, thresholds={"ruler_32k": 50.0}, thresholds_label="local bar")
    assert threshold(CAT, prof2, "ruler_32k")[0] == 50.0 and gating(CAT, prof2, "ruler_32k")


def test_a_skip_naming_no_ruler_task_is_an_error():
    prof = EvalsProfile(offline=True, overrides={"ruler_32k": {"skip": {"ruler_vtt": "typo"}}})
    with pytest.raises(ValueError, match=r"ruler_32k.skip names tasks that are not RULER's: \['ruler_vtt'\]"):
        ruler_not_run(CAT.bench("ruler_32k"), prof, "ruler_32k")


def _load(tmp_path, raw):
    p = tmp_path / "evals.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_eval_catalog(p)


def test_catalog_refuses_unknown_tasks_a_threshold_without_partial_and_a_gating_partial(tmp_path):
    raw = yaml.safe_load((ASSETS_DIR / "evals.yaml").read_text())
    bad = json.loads(json.dumps(raw))
    bad["tier1"]["ruler_32k"]["tasks"].append("ruler_nope")
    with pytest.raises(ValueError, match="unknown task"):
        _load(tmp_path, bad)
    bad = json.loads(json.dumps(raw))
    del bad["tier1"]["ruler_32k"]["partial"]
    with pytest.raises(ValueError, match="needs `partial:`"):
        _load(tmp_path, bad)
    bad = json.loads(json.dumps(raw))
    bad["tier1"]["ruler_32k"]["partial"]["informative"] = False
    with pytest.raises(ValueError, match="mark it `informative: true`"):
        _load(tmp_path, bad)
    # a configured task list short of the 13 is a variant of the runbook's run: it must say so
    bad = json.loads(json.dumps(raw))
    bad["tier1"]["ruler_32k"]["tasks"].remove("ruler_qa_squad")
    with pytest.raises(ValueError, match=r"tier1.ruler_32k is a variant \(RULER without \['ruler_qa_squad'\]"):
        _load(tmp_path, bad)


def test_lm_eval_command_line_and_group():
    spec = {"base_url": "http://127.0.0.1:8000/", "served_name": "stage1", "tokenizer_dir": "/m/tok",
            "tasks": ["niah_single_1", "ruler_cwe"], "length": 2048, "limit": 3, "max_length": 4096,
            "num_concurrent": 4, "timeout_s": 60, "output_dir": "/out"}
    argv = runner.lm_eval_argv(spec, "/inc")
    args = dict(zip(argv[1::2], argv[2::2]))
    assert argv[:3] == ["run", "--model", "local-completions"] and "--apply_chat_template" in argv
    assert args["--tasks"] == "surrogate_ruler_2048" and args["--limit"] == "3" and args["--include_path"] == "/inc"
    assert json.loads(argv[argv.index("--metadata") + 1]) == {"max_seq_lengths": [2048]}
    margs = dict(kv.split("=", 1) for kv in argv[argv.index("--model_args") + 1].split(","))
    assert margs["base_url"] == "http://127.0.0.1:8000/v1/completions" and margs["model"] == "stage1"
    assert margs["tokenizer"] == "/m/tok" and margs["tokenized_requests"] == "True" and margs["max_length"] == "4096"
    assert runner.group_config(["niah_single_1", "ruler_cwe"], 2048)["aggregate_metric_list"] == [
        {"metric": "2048", "weight_by_size": False}]
    with pytest.raises(SystemExit, match="cannot carry"):
        runner.lm_eval_argv({**spec, "tokenizer_dir": "/a,b"}, "/inc")


def _results(per_task: dict[str, float], group: float, length: int = 2048) -> dict:
    m = f"{length},none"
    res = {t: {"alias": t, m: v, "4096,none": -1} for t, v in per_task.items()}
    return {"results": {**res, f"surrogate_ruler_{length}": {m: group}},
            "groups": {f"surrogate_ruler_{length}": {m: group}},
            "n-samples": {t: {"original": 500, "effective": 2} for t in per_task},
            "versions": {t: 1.0 for t in per_task}}


def test_summarize_reads_lm_evals_scores_and_refuses_a_missing_one():
    out = runner.summarize(_results({"niah_single_1": 0.5, "ruler_cwe": 0.25}, 0.375), ["niah_single_1", "ruler_cwe"],
                           2048)
    assert out["per_task"] == {"niah_single_1": 0.5, "ruler_cwe": 0.25} and out["group_mean"] == 0.375
    assert out["n_samples"] == {"niah_single_1": 2, "ruler_cwe": 2}
    with pytest.raises(SystemExit, match=r"no '2048,none' score for \['ruler_fwe'\]"):
        runner.summarize(_results({"niah_single_1": 0.5}, 0.5), ["niah_single_1", "ruler_fwe"], 2048)


def _res(per_task, group):
    return {"scorer": "lm-eval==0.4.13", "model": "local-completions (--apply_chat_template)",
            "results_file": "/o/m/results_x.json", "per_task": per_task, "group_mean": group,
            "n_samples": {t: 1 for t in per_task}, "task_versions": {},
            "samples": [{"task": t, "doc_id": 0, "score": v} for t, v in per_task.items()]}


def test_a_partial_report_never_claims_the_13_task_mean():
    tasks = ["niah_single_1", "ruler_cwe"]
    not_run = {t: "offline profile: x" for t in ruler.RULER_TASKS if t not in tasks}
    rep = ruler.report_from_result(_res({"niah_single_1": 0.5, "ruler_cwe": 0.25}, 0.375), tasks=tasks,
                                   not_run=not_run, length=2048, label="local", limit=1,
                                   timings={"generate_and_score_s": 2.0})
    assert rep.status == "ok" and rep.score == 37.5
    assert rep.metrics["score_by_task"] == {"niah_single_1": 50.0, "ruler_cwe": 25.0}
    assert rep.metrics["mean_13_tasks"] is None and rep.metrics["tasks_run"] == 2
    assert "NOT the 13-task mean" in rep.score_name and "2 of 13 tasks" in rep.variant
    assert rep.notes[0].startswith("scorer: lm-eval==0.4.13") and "ruler_qa_squad (offline profile: x)" in rep.notes[2]


def test_a_whole_report_is_the_13_task_mean():
    per = {t: 0.9 for t in ruler.RULER_TASKS}
    rep = ruler.report_from_result(_res(per, 0.9), tasks=list(ruler.RULER_TASKS), not_run={}, length=32768,
                                   label="32K", limit=None, timings={"generate_and_score_s": 1.0})
    assert rep.score == 90.0 and rep.metrics["mean_13_tasks"] == 90.0 and rep.score_name == ruler.SCORE_NAME_ALL
    assert rep.notes[2] == "not run: none"


def test_without_the_lm_eval_environment_the_report_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.delenv(ruler.ENV_VAR, raising=False)
    monkeypatch.setattr(ruler, "DEFAULT_PYTHON", tmp_path / "none" / "bin" / "python")
    rep = ruler.run(object(), tasks=["niah_single_1"], not_run={}, length=2048, label="x", samples_per_task=1,
                    timeout_s=10)
    assert isinstance(rep, EvalReport) and rep.status == "unavailable" and rep.score is None
    assert ".venv-ruler" in rep.reason and "make setup" in rep.reason
    monkeypatch.setattr(ruler, "DEFAULT_PYTHON", tmp_path)  # exists: the client is the next question
    rep = ruler.run(object(), tasks=["niah_single_1"], not_run={}, length=2048, label="x", samples_per_task=1,
                    timeout_s=10)
    assert rep.status == "unavailable" and "serves no model lm-eval can query" in rep.reason
    with pytest.raises(ValueError, match="unknown task"):
        ruler.run(object(), tasks=["vt"], not_run={}, length=2048, label="x", samples_per_task=1, timeout_s=10)
