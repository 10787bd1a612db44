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


def test_request_timeout_and_concurrency_are_settings_of_each_length():
    b32, b128 = CAT.bench("ruler_32k"), CAT.bench("ruler_128k")
    assert (b32.request_timeout_s, b32.concurrency) == (1800, 32)
    assert (b128.request_timeout_s, b128.concurrency) == (3600, 8)
    assert b128.request_timeout_s < b128.timeout_s


def test_catalog_refuses_a_request_timeout_past_the_whole_runs(tmp_path):
    raw = yaml.safe_load((ASSETS_DIR / "evals.yaml").read_text())
    raw["tier1"]["ruler_128k"]["request_timeout_s"] = raw["tier1"]["ruler_128k"]["timeout_s"]
    with pytest.raises(ValueError, match="request_timeout_s 43200 must be below the whole run's timeout_s 43200"):
        _load(tmp_path, raw)
    raw["tier1"]["ruler_128k"]["request_timeout_s"] = 60
    raw["tier1"]["ruler_128k"]["concurrency"] = 0
    with pytest.raises(ValueError, match="concurrency"):
        _load(tmp_path, raw)


SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-x", "HF_TOKEN": "hf_x", "WASABI_SECRET": "w", "AWS_SECRET_ACCESS_KEY": "a",
           "SURROGATE_STORE_URL": "s3://b"}


def test_lm_eval_gets_a_minimal_environment(monkeypatch, tmp_path):
    for k, v in {**SECRETS, "HF_ENDPOINT": "http://hub.local", "https_proxy": "http://corp:3128"}.items():
        monkeypatch.setenv(k, v)
    env = ruler.lm_eval_env(home=tmp_path / "h", cache_dir=tmp_path / "c", offline=False, endpoint_host="gpu-host",
                            endpoint_env={"SURROGATE_HARNESS_API_KEY": "k"})
    assert not set(SECRETS) & set(env)
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path / "h") and env["LANG"] == "C.UTF-8"
    assert env["HF_HOME"] == str(tmp_path / "c" / "hf_home") and env["NLTK_DATA"] == str(tmp_path / "c" / "nltk_data")
    assert env["SURROGATE_HARNESS_API_KEY"] == "k"
    # online: the Hub endpoint and proxies the operator set reach lm-eval, nothing is forced offline
    assert env["HF_ENDPOINT"] == "http://hub.local" and env["https_proxy"] == "http://corp:3128"
    assert "HF_HUB_OFFLINE" not in env and "HF_DATASETS_OFFLINE" not in env
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "HF_HOME", "NLTK_DATA", "TOKENIZERS_PARALLELISM",
                        "SURROGATE_HARNESS_API_KEY", *ruler.PASSTHROUGH_ENV}


def test_offline_lm_eval_cannot_reach_the_network(monkeypatch, tmp_path):
    monkeypatch.setenv("https_proxy", "http://corp:3128")
    env = ruler.lm_eval_env(home=tmp_path, cache_dir=tmp_path, offline=True, endpoint_host="10.0.0.5", endpoint_env={})
    assert env["HF_HUB_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"
    # nltk's punkt_tab download (urllib) and any other proxied request go to a closed local port ...
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        assert env[k] == ruler.OFFLINE_PROXY
    # ... except the endpoint's host and loopback
    assert env["no_proxy"] == env["NO_PROXY"] == "127.0.0.1,localhost,::1,10.0.0.5"
    assert "SURROGATE_HARNESS_API_KEY" not in env


class _Client:
    max_context = 4096
    concurrency = 64

    def describe(self):
        return {}


def test_the_run_passes_settings_and_a_clean_environment_and_words_a_timeout_as_one_cause(monkeypatch, tmp_path):
    import subprocess
    from contextlib import contextmanager

    from surrogate_dagster.evals.harness import served

    @contextmanager
    def endpoint(client, *, work_dir, log=None):
        yield served.Endpoint(base_url="http://10.0.0.5:8000", served_name="s", tokenizer_dir="/tok", api_key="key",
                              managed_here=False)

    seen = {}

    def fake_run(cmd, **kw):
        seen["spec"] = json.loads(open(cmd[cmd.index("--spec") + 1]).read())
        seen["env"] = kw["env"]
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])

    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(ruler, "DEFAULT_PYTHON", tmp_path)
    monkeypatch.delenv(ruler.ENV_VAR, raising=False)
    monkeypatch.setattr(ruler, "servable", lambda c: True)
    monkeypatch.setattr(served, "openai_endpoint", endpoint)
    monkeypatch.setattr(ruler.subprocess, "run", fake_run)
    with pytest.raises(ruler.RulerRunError) as e:
        ruler.run(_Client(), tasks=["niah_single_1", "ruler_cwe"], not_run={}, length=4096, label="x",
                  samples_per_task=2, timeout_s=30, request_timeout_s=20, concurrency=3, work_dir=tmp_path / "w",
                  cache_dir=tmp_path / "c", offline=True)
    msg = str(e.value)
    assert "passed its 30 s budget" in msg and "Possible causes" in msg and "3 request(s) at once" in msg
    assert "one of lm-eval 0.4.13's generators never ends" in msg and "loop forever" not in msg
    spec = seen["spec"]
    assert spec["timeout_s"] == 20 and spec["num_concurrent"] == 3 and spec["max_length"] == 4096
    assert spec["dataset_cache_dir"] == str(tmp_path / "c" / "datasets") and spec["api_key_env"] == served.KEY_ENV
    env = seen["env"]
    assert not set(SECRETS) & set(env) and env[served.KEY_ENV] == "key" and env["HF_HUB_OFFLINE"] == "1"
    assert "10.0.0.5" in env["no_proxy"].split(",")
    # the shared caches exist before lm-eval starts: nltk downloads only into an existing NLTK_DATA folder
    assert env["NLTK_DATA"] == str(tmp_path / "c" / "nltk_data") and (tmp_path / "c" / "nltk_data").is_dir()
    assert (tmp_path / "c" / "hf_home").is_dir()


def test_cut_prompts_and_the_dataset_cache_are_in_the_report():
    tasks = ["niah_single_1", "ruler_cwe"]
    res = {**_res({"niah_single_1": 0.5, "ruler_cwe": 0.25}, 0.375),
           "truncation": {"by_task": {"niah_single_1": 1, "ruler_cwe": 0}, "prompts": 1, "max_tokens_cut": 31},
           "dataset_cache": {"niah_single_1": {"cache": "hit", "key": "k", "s": 0.1},
                             "ruler_cwe": {"cache": "stored", "key": "k2", "s": 5.0}}}
    rep = ruler.report_from_result(res, tasks=tasks, not_run={}, length=131072, label="128K", limit=1,
                                   timings={"generate_and_score_s": 2.0})
    assert rep.metrics["truncated_prompts"] == {"count": 1, "by_task": {"niah_single_1": 1, "ruler_cwe": 0},
                                                "max_tokens_cut": 31}
    assert rep.metrics["dataset_cache"] == {"niah_single_1": "hit", "ruler_cwe": "stored"}
    assert rep.timings["datasets_s"] == 5.1
    assert "lm_eval_results_file" not in rep.metrics
    note = next(n for n in rep.notes if n.startswith("left-truncated"))
    assert "1 of 2 prompts" in note and "up to 31 tokens" in note and "niah_single_1 1" in note
    assert "ruler_cwe" not in note
    clean = ruler.report_from_result(_res({"niah_single_1": 0.5, "ruler_cwe": 0.25}, 0.375), tasks=tasks, not_run={},
                                     length=2048, label="x", limit=1, timings={})
    assert clean.metrics["truncated_prompts"]["count"] == 0 and not any("left-truncated" in n for n in clean.notes)


def test_lm_eval_cuts_past_its_context_less_one_and_the_answer_budget():
    assert runner.cut_tokens(1900, 128, 2048) == 0 and runner.cut_tokens(1919, 128, 2048) == 0
    assert runner.cut_tokens(1920, 128, 2048) == 1 and runner.cut_tokens(131072 + 20, 128, 131072) == 149
    ctx = {"arguments": {"gen_args_0": {"arg_0": "prompt", "arg_1": {"max_gen_toks": 50}}}}
    assert runner.sample_prompt(ctx) == ("prompt", 50)
    assert runner.sample_prompt({"arguments": [["p", {"max_gen_toks": 30}]]}) == ("p", 30)
    rows = [{"task": "a", "tokens_cut": 0}, {"task": "a", "tokens_cut": 4}, {"task": "b", "tokens_cut": 9}]
    assert runner.truncation(rows) == {"by_task": {"a": 1, "b": 1}, "prompts": 2, "max_tokens_cut": 9}


def test_wrapper_tasks_include_lm_evals_file_and_route_its_dataset_through_the_cache(tmp_path):
    lm = tmp_path / "lm_ruler"
    lm.mkdir()
    (lm / "cwe.yaml").write_text("include: niah_single_1.yaml\ntask: ruler_cwe\n"
                                 "custom_dataset: !function cwe_utils.get_cw_dataset\n")
    (lm / "niah_single_1.yaml").write_text("tag:\n  - longcxt\ntask: niah_single_1\n"
                                           "custom_dataset: !function niah_utils.niah_single_1\n")
    (lm / "ruler.yaml").write_text("group: ruler\ntask: []\n")
    files = runner.lm_eval_task_files(lm)
    assert files == {"ruler_cwe": (lm / "cwe.yaml", "cwe_utils.get_cw_dataset"),
                     "niah_single_1": (lm / "niah_single_1.yaml", "niah_utils.niah_single_1")}
    inc = tmp_path / "inc"
    inc.mkdir()
    runner.write_cache_tasks(inc, ["ruler_cwe"], str(tmp_path / "cache"), files)
    assert (inc / "ruler_cwe.yaml").read_text() == (f'include: "{lm / "cwe.yaml"}"\n'
                                                    "custom_dataset: !function surrogate_ruler_cache.ruler_cwe\n")
    cfg = json.loads((inc / "surrogate_ruler_cache.json").read_text())
    assert cfg["generators"] == {"ruler_cwe": "cwe_utils.get_cw_dataset"}
    assert cfg["cache_dir"] == str((tmp_path / "cache").resolve())
    assert (inc / "surrogate_ruler_cache.py").read_text() == runner.CACHE_MODULE.read_text()
    with pytest.raises(SystemExit, match=r"no custom_dataset for \['ruler_vt'\]"):
        runner.write_cache_tasks(inc, ["ruler_vt"], str(tmp_path / "cache"), files)
