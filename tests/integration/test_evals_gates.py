"""Gates in Dagster (the rules: tests/unit/evals/test_evals_gate_rules.py). A report below its threshold blocks the release in the same run
(blocking ``release_gate`` check, judging the benchmark of that run); each benchmark keeps its own
verdict in the partitioned checks; the release run on its own re-checks every gate and explains,
counting benchmarks not run yet as pending; with every gate passing it promotes and pushes a model
card listing every score (outcome.md and knowledge_index.md: test_release_outcome.py)."""

from __future__ import annotations

import json

import pytest
from dagster import AssetCheckKey, AssetCheckSeverity, AssetKey, DagsterInstance, materialize

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.evals import assets as A
from surrogate_dagster.evals.config import TIER1, TIER2, EvalsProfile, evals_profile, load_eval_catalog
from surrogate_dagster.evals.harness.common import EvalReport, unavailable
from surrogate_dagster.evals.reports import write_report
from surrogate_dagster.evals.resources import EvalSettings, dir_revision
from tests.support.evals_release import release_env, write_passing_reports


def test_profiles_validate_and_production_keeps_the_runbook_targets():
    local, prod = evals_profile(load_profile("local")), evals_profile(load_profile("production"))
    assert local.offline and not prod.offline and prod.inference.backend == "vllm_server"
    assert prod.thresholds == {} and prod.overrides == {}
    cat = load_eval_catalog()
    assert [cat.bench(b).threshold for b in ("humaneval_plus", "mbpp_plus", "livecodebench", "bfcl", "ruler_32k",
                                             "swebench_lite")] == [84, 75, 42, 70, 90, 25]
    assert cat.regression.tolerance == 0.05 and cat.release.hub_repo == "surrogate-1-coder-7b-v2-mvp"
    with pytest.raises(ValueError, match="unknown benchmark"):
        EvalsProfile.model_validate({"offline": True, "overrides": {"humaneval": {"max_items": 1}}})
    with pytest.raises(ValueError, match="thresholds_label"):
        EvalsProfile.model_validate({"offline": True, "thresholds": {"bfcl": 1}})


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gates")
    # RULER (the quickest report) has an informative bar in the catalog; the profile's override gates
    model, res = release_env(tmp, thresholds={"ruler_32k": 93.0})
    return tmp, model, res


def _release_gate_check():
    return next(c for c in A.EVAL_CHECKS if any(k.name == "release_gate" and k.asset_key.path[-1] == "stage2_5_eval_report"
                                                for k in c.check_keys))


def test_report_below_threshold_blocks_release_in_the_same_run(env):
    tmp, model, res = env
    rel_report = A.CHECKPOINT_REPORTS[-1]
    (tmp / "dagster_home").mkdir(exist_ok=True)
    inst = DagsterInstance.local_temp(str(tmp / "dagster_home"))  # persistent: the UI query reads it from a code server
    run = materialize([rel_report, _release_gate_check(), A.mvp_release], partition_key="ruler_32k", resources=res,
                      instance=inst, raise_on_error=False)
    assert not run.success
    assert run.asset_materializations_for_node("stage2_5_eval_report")  # the report itself is stored
    assert not run.asset_materializations_for_node("mvp_release")  # blocked in this run
    evals = {e.event_specific_data.check_name: e.event_specific_data
             for e in run.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}
    # held to the profile's gating bar (the catalog's 90 for a RULER run over fewer than 13 tasks is informative)
    assert not evals["meets_target"].passed and "< target 93" in evals["meets_target"].description
    assert evals["meets_target"].metadata["threshold_source"].value.startswith("profile (test: a gating bar)")
    assert not evals["release_gate"].passed
    # the blocking gate judges the benchmark this run computed: the others are not counted as failed
    assert evals["release_gate"].description.startswith("ruler_32k: meets_target (score")
    assert "of 1" not in evals["release_gate"].description and "humaneval" not in evals["release_gate"].description
    # numbers are named per benchmark, so a check's plot never mixes benchmarks
    assert evals["meets_target"].metadata["ruler_32k/threshold"].value == 93.0
    assert "threshold" not in evals["meets_target"].metadata and evals["meets_target"].partition == "ruler_32k"
    meta = run.asset_materializations_for_node("stage2_5_eval_report")[0].metadata
    assert meta["variant"].value.startswith("RULER (lm-eval), 1 of 13 tasks") and "test" in meta["variant"].value
    # a later benchmark (no target: passes) leaves ruler_32k's verdict failed in the Checks tab
    later = materialize([rel_report, _release_gate_check()], partition_key="ruler_128k", resources=res,
                        instance=inst, raise_on_error=False)
    meta_128k = later.asset_materializations_for_node("stage2_5_eval_report")[0].metadata["variant"].value
    assert later.success  # no target, and stage 2's report is not computed yet: pending, which does not block
    pending = next(e for e in later.get_asset_check_evaluations() if e.check_name == "release_gate")
    assert pending.severity == AssetCheckSeverity.WARN and "no_regression (pending: stage2_checkpoint" in pending.description
    infos = inst.event_log_storage.get_asset_check_partition_info(
        [AssetCheckKey(AssetKey("stage2_5_eval_report"), n) for n in ("meets_target", "release_gate")])
    status = {(i.check_key.name, i.partition_key): i.latest_execution_status.value for i in infos}
    assert status == {("meets_target", "ruler_32k"): "FAILED", ("meets_target", "ruler_128k"): "SUCCEEDED",
                      ("release_gate", "ruler_32k"): "FAILED", ("release_gate", "ruler_128k"): "FAILED"}
    # what the UI reads (Dagster's GraphQL, the code location loaded by a code server): one status per benchmark
    assert _ui_check_partitions(inst, tmp)["meets_target"] == {"failedPartitions": ["ruler_32k"],
                                                             "succeededPartitions": ["ruler_128k"]}
    # on its own, the release re-checks the gates, pushes nothing and says why
    alone = materialize([A.mvp_release], resources=res, instance=inst)
    m = alone.asset_materializations_for_node("mvp_release")[0].metadata
    assert m["promoted"].value is False
    assert "stage2_5_checkpoint/ruler_32k: meets_target" in m["why_not_promoted"].value
    assert not (tmp / "pushes" / "models").exists()
    # the benchmarks not run yet are pending, not failed: the one failure is ruler_32k's target
    assert m["failed_gates"].value == 1 and m["pending_gates"].value > 0
    assert m["benchmarks_failed"].value == 1 and "| ruler_32k | tier1 |" in m["scoreboard"].value
    assert "| humaneval_plus | tier1 | - | >= 84 | **pending** |" in m["scoreboard"].value
    # ruler_128k has no target, but stage 2's report it is compared with is not computed yet
    row = next(r for r in m["scoreboard"].value.splitlines() if r.startswith("| ruler_128k | tier1 |"))
    assert row.endswith("| - | **pending** | " + meta_128k + " |")
    check = alone.get_asset_check_evaluations()[0]
    assert check.check_name == "all_gates_passed" and not check.passed and check.severity == AssetCheckSeverity.ERROR
    assert check.description.startswith(f"not promoted: 1 failed, {m['pending_gates'].value} pending (not run yet)")
    # the release's verdict is attributed to the release checkpoint the catalog names
    assert check.metadata["checkpoint"].value == A.CATALOG.release.checkpoint == "stage2_5_checkpoint"


def _ui_check_partitions(instance, tmp) -> dict[str, dict]:
    """{check: its partition statuses} of stage2_5_eval_report's checks, as the UI's Checks tab queries them."""
    from pathlib import Path

    from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

    import surrogate_dagster

    root = Path(surrogate_dagster.__file__).resolve().parents[1]
    workspace = tmp / "workspace.yaml"
    workspace.write_text("load_from:\n  - python_module:\n      module_name: surrogate_dagster.definitions\n"
                         f"      working_directory: {root}\n")
    query = """query { assetNodeOrError(assetKey: {path: ["stage2_5_eval_report"]}) { ... on AssetNode {
      assetChecksOrError { ... on AssetChecks { checks { name partitionStatuses {
        ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } } } } } } } }"""
    with define_out_of_process_context(str(workspace), None, instance) as ctx:
        data = execute_dagster_graphql(ctx, query).data
    return {c["name"]: {k: sorted(v) for k, v in (c["partitionStatuses"] or {}).items()}
            for c in data["assetNodeOrError"]["assetChecksOrError"]["checks"]}


def test_release_promotes_when_every_gate_passes(env):
    tmp, model, res = env
    store = res["object_store"].get_store()
    write_passing_reports(store, model)
    ckpt = {"name": "x", "revision": dir_revision(model)}
    run = materialize([A.mvp_release], resources=res, instance=DagsterInstance.ephemeral())
    m = run.asset_materializations_for_node("mvp_release")[0].metadata
    assert m["promoted"].value is True and m["failed_gates"].value == 0
    repo = tmp / "pushes" / "models" / "axentx" / "surrogate-1-coder-7b-v2-mvp"
    card = (repo / "README.md").read_text()
    assert "| humaneval_plus | 95.00 | 84" in card and "| swebench_lite | 100.00 | 25" in card
    assert "## Lineage" in card and json.loads((repo / "eval_results.json").read_text())
    # loadable at the root, the way a user loads the release
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert not (repo / "policy").exists()
    AutoModelForCausalLM.from_pretrained(repo) and AutoTokenizer.from_pretrained(repo)
    # one checkpoint regressing more than 5% blocks the promotion
    write_report(store, "stage1_6_checkpoint", "bfcl",
                 EvalReport("bfcl", "bfcl test variant", "1", "ok", 80.0, "x", n_items=10, samples=[{"i": 1}]), ckpt)
    m = materialize([A.mvp_release], resources=res,
                    instance=DagsterInstance.ephemeral()).asset_materializations_for_node("mvp_release")[0].metadata
    assert m["promoted"].value is False and "stage1_6_checkpoint/bfcl: no_regression" in m["why_not_promoted"].value


def test_scoreboard_table_and_plot(env):
    tmp, model, res = env
    run = materialize([A.eval_scoreboard], resources=res, instance=DagsterInstance.ephemeral())
    m = run.asset_materializations_for_node("eval_scoreboard")[0].metadata
    table = m["tier1_scores"].value
    assert "| stage1_checkpoint |" in table and "| **target** | >= 84" in table
    assert m["scores_plot"].value.startswith("**Eval scores by checkpoint, one line per benchmark")
    assert "(data:image/png;base64," in m["scores_plot"].value
    # the release checkpoint's scores as numbers, one per benchmark (written by the promotion test)
    assert m["humaneval_plus/score"].value == 95.0 and m["swebench_lite/score"].value == 100.0


def test_definitions_load_with_the_schedule(env):
    import datetime

    from dagster import Definitions, build_schedule_context

    from surrogate_dagster.evals import EVAL_ASSETS, EVAL_CHECKS, eval_resources
    from surrogate_dagster.operations.schedules import monthly_tier2_schedule, tier2_eval_job
    from surrogate_dagster.synth.resource import synth_resources

    tmp, model, res = env
    prof = load_profile("local")
    defs = Definitions(assets=EVAL_ASSETS, asset_checks=EVAL_CHECKS, jobs=[tier2_eval_job], schedules=[monthly_tier2_schedule],
                       resources={**res, **eval_resources(prof), "llm": synth_resources(prof)["llm"]})
    Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"stage1_eval_report", "stage2_5_eval_report", "tier2_eval_report", "eval_scoreboard", "mvp_release",
            "devsecops_eval_tasks", "eval_canaries"} <= keys
    repo = defs.get_repository_def()
    ctx = build_schedule_context(scheduled_execution_time=datetime.datetime(2026, 12, 1, 4), repository_def=repo,
                                 instance=DagsterInstance.ephemeral())
    reqs = repo.get_schedule_def("monthly_tier2_evals").evaluate_tick(ctx).run_requests
    assert [r.partition_key for r in reqs] == list(TIER2) and reqs[0].run_key == "tier2-2026-12-swebench_lite"
    job = defs.resolve_job_def("tier2_evals")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} == {"tier2_eval_report"}
