"""Evals group: per-checkpoint Tier-1 reports, Tier-2 reports, their inputs, the scoreboard and the release.

Partitioning (Dagster allows two dimensions at most): one asset per checkpoint
(``stage1_eval_report`` ... ``stage2_5_eval_report``), each partitioned by Tier-1 benchmark, rather
than one checkpoint x benchmark asset. Why: each report asset then depends on exactly its own
checkpoint asset (a multi-partitioned asset would have to depend on all five), so the lineage graph
reads "stage2_checkpoint -> stage2_eval_report", retraining one stage marks only that stage's
reports stale, and each asset's partition grid shows that checkpoint's benchmarks. Each report also
depends on the previous checkpoint's report of the same benchmark (its regression baseline). The
untrained base model is checkpoint 0 (``base_model_eval_report``, runbook Day 13 "Don't regress
base"): stage 1's regression gate compares with it. The Tier-2 benchmarks run on the release
checkpoint (``tier2_eval_report``), monthly by schedule.

``stage1_6_smoke_gate`` (the catalog's ``smoke_gate``) reads stage 1.6's Tier-1 reports and carries
the blocking check that stage 2 and the execution-graded pair sampling wait for (runbook Day 14).

Every report's samples live in the object store; metadata carries the summary (score, variant,
version, counts, throughput) and the gates run as checks of the same materialization (checks.py).
"""


import hashlib
import json
import secrets
from typing import Any

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
)

from ..canary import CANARY_KEY
from ..catalog.code_version import function_code_version
from ..catalog.loader import config_hash
from ..metadata import counts_table
from ..catalog.keys import SMOKE_GATED_STAGE
from ..curation.assets import curated_rows
from ..resources import ObjectStoreResource
from ..runtime.host_pools import holds_pool_slot
from ..storage.checkpoints import download_tree
from ..storage.layout import DEVSECOPS_TASKS, SCOREBOARD, pointer, step_pointer, step_sources
from ..synth.assets import exec_graded_pairs
from ..synth.resource import LLMResource
from .checks import SMOKE_CHECK, build_checks, current_revision, gate_result, gate_specs, smoke_gate_result, \
    smoke_gate_spec, smoke_gates
from .config import TIER1, TIER2, gating, load_eval_catalog, threshold
from .gates import regression_gate, target_gate
from .reports import collect, read_summary, scores_plot, scores_table, write_report
from .resources import EvalSettings

CATALOG = load_eval_catalog()  # validated at import: a broken evals.yaml fails definitions loading
EVALS_CONFIG = config_hash(CATALOG)


def _code_version(function: str) -> str:
    """evals.yaml plus the definitions the asset `function` of this module (or factory) reaches."""
    return function_code_version(__name__, function, config=EVALS_CONFIG)
tier1_partitions = StaticPartitionsDefinition(list(TIER1))
tier2_partitions = StaticPartitionsDefinition(list(TIER2))
DEVSECOPS_LATEST = pointer(DEVSECOPS_TASKS)


def report_asset_name(checkpoint: str) -> str:
    return f"{checkpoint.removesuffix('_checkpoint')}_eval_report"


def checkpoint_info(ref) -> dict[str, Any]:
    return {"name": ref.name, "revision": ref.revision, "model_dir": ref.model_dir,
            "adapter_dir": ref.adapter_dir or "", "model_revision": ref.model_revision or ""}


def report_metadata(summary: dict, threshold_value: float | None, threshold_source: str) -> dict[str, Any]:
    """Only the summary (PITFALLS: big reports stay in the object store)."""
    t = summary.get("timings") or {}
    md: dict[str, Any] = {
        "status": summary["status"],
        "score": summary["score"] if summary["score"] is not None else -1.0,
        "score_name": summary.get("score_name", ""),
        "target": threshold_value if threshold_value is not None else "none",
        "target_source": threshold_source,
        "variant": summary["variant"],
        "version": summary.get("version", ""),
        "items": summary.get("n_items", 0),
        "checkpoint_revision": (summary.get("checkpoint") or {}).get("revision", ""),
        "samples_per_s": t.get("samples_per_s", 0.0),
        "timings": MetadataValue.json(t),
        "metrics": MetadataValue.json({k: v for k, v in (summary.get("metrics") or {}).items()}),
        "dataset": MetadataValue.json(summary.get("dataset") or {}),
        "samples": summary.get("samples_uri", ""),
        "notes": MetadataValue.md("\n".join(f"- {n}" for n in summary.get("notes") or []) or "none"),
    }
    if summary.get("reason"):
        md["not_evaluated_because"] = summary["reason"]
    bench = summary.get("benchmark")
    cfg = CATALOG.bench(bench) if bench in (*TIER1, *TIER2) else None
    if cfg is not None and cfg.variant is not None:
        # the runbook's figure is for the runbook's run; say which bar this variant is held to and why
        md["runbook_variant"] = cfg.variant.name
        md["runbook_differs"] = cfg.variant.differs
        md["target_reason"] = cfg.variant.reason
    return md


def model_ref(evals: EvalSettings, store, name: str):
    """The model a report evaluates: a checkpoint's served policy, or the baseline (the pinned Hub
    base in production, the local tiny base copied from the object store)."""
    if name != CATALOG.baseline or name in evals.model_dirs:
        return evals.model_ref(store, name)
    from ..training.config import load_training_catalog
    from ..training.refs import base_model_resolution
    from ..inference import ModelRef

    base = base_model_resolution(store, load_training_catalog(), evals.base_source)
    if base.kind == "hub":
        return ModelRef(name=name, model_dir=base.value, revision=base.data_version, model_revision=base.revision)
    dest = evals.profile().work_path("checkpoints", name, base.data_version)
    download_tree(store, base.value, dest)
    return ModelRef(name=name, model_dir=str(dest), revision=base.data_version)


def build_checkpoint_report_asset(checkpoint: str, previous: str | None):
    """``<stage>_eval_report``: one Tier-1 benchmark (partition) on one checkpoint (or the baseline)."""
    name = report_asset_name(checkpoint)
    is_release = checkpoint == CATALOG.release.checkpoint
    deps = [AssetDep(AssetKey(checkpoint))] + ([AssetDep(AssetKey(report_asset_name(previous)))] if previous else [])

    @asset(name=name, group_name="evals", partitions_def=tier1_partitions, deps=deps, pool="gpu",
           code_version=_code_version("build_checkpoint_report_asset"), kinds={"pytorch"}, check_specs=gate_specs(name, tier1_partitions),
           description=f"Tier-1 report of {checkpoint}, one benchmark per partition (samples in the object store)")
    @holds_pool_slot
    def _report(context: AssetExecutionContext, object_store: ObjectStoreResource,
                evals: EvalSettings) -> MaterializeResult:
        from .runner import EvalEnv, run_tier1

        bench = context.partition_key
        store = object_store.get_store()
        prof = evals.profile()
        ref = model_ref(evals, store, checkpoint)
        client = evals.client(ref)
        report = run_tier1(bench, client, EvalEnv(CATALOG, prof, store, log=context.log.info))
        summary = write_report(store, checkpoint, bench, report, checkpoint_info(ref))
        thr, src = threshold(CATALOG, prof, bench)
        tg = target_gate(f"{checkpoint}/{bench}", summary, thr, src, blocking=gating(CATALOG, prof, bench))
        prev = read_summary(store, previous, bench) if previous else None
        rg = regression_gate(f"{checkpoint}/{bench}", summary, prev, tolerance=CATALOG.regression.tolerance,
                             mode=CATALOG.regression.mode, previous_checkpoint=previous)
        return MaterializeResult(
            data_version=DataVersion(f"{ref.revision}:{summary['samples_sha256'][:12]}"),
            metadata={**report_metadata(summary, thr, src), "target_gating": tg.blocking},
            check_results=[gate_result("meets_target", tg, error=is_release, bench=bench),
                           gate_result("no_regression", rg, True, bench=bench)])

    return _report


# The baseline first: checkpoint 0 of every Tier-1 benchmark.
CHECKPOINT_REPORTS = [build_checkpoint_report_asset(c, CATALOG.previous(c)) for c in CATALOG.evaluated]
BASELINE_REPORT = CHECKPOINT_REPORTS[0]
# What waits for the smoke gate (their deps name it: training/assets.py, synth/assets.py).
SMOKE_GATED = [SMOKE_GATED_STAGE, exec_graded_pairs.key.to_user_string()]


def build_smoke_gate_asset():
    sg = CATALOG.smoke_gate

    @asset(name=sg.asset, group_name="evals", code_version=_code_version("build_smoke_gate_asset"), kinds={"json"},
           deps=[AssetDep(AssetKey(report_asset_name(sg.checkpoint)), partition_mapping=AllPartitionMapping()),
                 AssetDep(BASELINE_REPORT, partition_mapping=AllPartitionMapping())],
           check_specs=[smoke_gate_spec(CATALOG, SMOKE_GATED)],
           description=f"Runbook Day 14: {', '.join(SMOKE_GATED)} start only when {sg.checkpoint}'s Tier-1 smoke "
                       f"tests pass (blocking check {SMOKE_CHECK})")
    def _gate(context: AssetExecutionContext, object_store: ObjectStoreResource,
              evals: EvalSettings) -> MaterializeResult:
        store = object_store.get_store()
        prof = evals.profile()
        summaries = collect(store, [CATALOG.baseline, sg.checkpoint], list(TIER1))
        revision = current_revision(store, evals, CATALOG, sg.checkpoint)
        gates = smoke_gates(CATALOG, prof, summaries, revision)
        check, meta = smoke_gate_result(gates, prof.smoke_gate, prof.smoke_gate_reason)
        if not check.passed:
            (context.log.error if prof.smoke_gate == "enforce" else context.log.warning)(check.description)
        # The gate's data version is what it decided on: a re-scored report or a new mode changes it.
        seen = sorted((c, b, (s.get("checkpoint") or {}).get("revision"), s.get("samples_sha256"))
                      for (c, b), s in summaries.items())
        version = hashlib.sha256(json.dumps([seen, prof.smoke_gate, check.passed]).encode()).hexdigest()[:16]
        return MaterializeResult(data_version=DataVersion(version),
                                 metadata={**meta, "checkpoint": sg.checkpoint,
                                           "checkpoint_revision": revision or "never trained",
                                           "gates_for": ", ".join(SMOKE_GATED)},
                                 check_results=[check])

    return _gate


stage1_6_smoke_gate = build_smoke_gate_asset()


@asset(group_name="evals", code_version=_code_version("eval_canaries"), kinds={"json"})
def eval_canaries(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """Unique fake secrets to plant in raw rows before sanitizing (kept stable once made)."""
    from ..canary import CanaryManifest, make_canaries

    cfg = CATALOG.tier2.noleak
    store = object_store.get_store()
    reused = False
    if store.exists(CANARY_KEY):
        old = CanaryManifest.from_json(store.get_bytes(CANARY_KEY))
        reused = old.rate == cfg.canary_rate and len(old.canaries) == cfg.canaries_per_kind * 5
    if not reused:
        # a new random salt: the canaries appear nowhere but in the rows they are planted in
        store.put_bytes(CANARY_KEY, make_canaries(cfg.canaries_per_kind, cfg.canary_rate,
                                                  salt=secrets.token_hex(16)).to_json())
    m = CanaryManifest.from_json(store.get_bytes(CANARY_KEY))
    kinds: dict[str, int] = {}
    for c in m.canaries:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    return MaterializeResult(data_version=DataVersion(m.salt[:12]), metadata={
        "canaries": len(m.canaries), "rate": m.rate, "by_kind": MetadataValue.md(counts_table(kinds, "kind", "canaries")),
        "reused_existing": reused, "uri": store.uri(CANARY_KEY),
        "how_to_plant": "shadow = canary.shadow_audit_rows(rows, manifest), sanitized beside the real rows"})


@asset(group_name="evals", code_version=_code_version("devsecops_eval_tasks"), pool="llm", kinds={"anthropic", "json"})
@holds_pool_slot
def devsecops_eval_tasks(context: AssetExecutionContext, object_store: ObjectStoreResource, llm: LLMResource,
                         evals: EvalSettings) -> MaterializeResult:
    """The 280-task DevSecOps eval: the hand-written seed expanded by the LLM, every task validator-checked."""
    from ..llm.ledger import record_batch_spend
    from ..paths import ASSETS_DIR
    from ..synth.graders import Grader
    from .harness import devsecops

    store = object_store.get_store()
    prof = evals.profile()
    cfg = CATALOG.tier2.devsecops
    o = prof.overrides.get("devsecops")
    target = (o.target_total if o and o.target_total else None) or cfg.target_total
    seed = devsecops.load_seed(ASSETS_DIR / cfg.seed)
    attempt = f"{context.run_id}/{context.retry_number}"
    client = llm.make_client(cache_store=store, spend_batch="evals/devsecops_tasks", spend_attempt=attempt)
    try:
        tasks, stats = devsecops.expand(client, Grader(trust_unsealed=devsecops.TRUST_UNSEALED), seed,
                                        target_total=target, log=context.log.info)
    finally:
        record_batch_spend(store, "evals/devsecops_tasks", attempt, client.ledger.summary())
    data = devsecops.tasks_to_json(tasks)
    key = f"{DEVSECOPS_TASKS}/tasks-{hashlib.sha256(data).hexdigest()[:16]}.json"
    info = store.put_bytes(key, data, "application/json")
    store.put_bytes(DEVSECOPS_LATEST, json.dumps({"key": key, "sha256": info.sha256, "stats": stats}).encode())
    return MaterializeResult(data_version=DataVersion(info.sha256[:16]), metadata={
        "tasks": len(tasks), "target": target, "shortfall": stats["shortfall"], "seed_tasks": stats["seed"],
        "by_category": MetadataValue.md(counts_table(stats["kept"], "category", "tasks")),
        "rejected_by_reason": MetadataValue.md(counts_table(stats["rejected"])),
        "llm_requests": stats["llm_requests"], "llm_backend": client.backend,
        "llm_cost_usd": round(client.ledger.summary()["batch_usd"], 4), "uri": store.uri(key)})


def _curated_rows(store) -> tuple[list[dict], int | None, list[dict]]:
    """Every source's latest curated rows, the canaries the curation reported planting into its
    shadow audit copies (None if no sanitized step recorded the count), and the canaries that
    survived sanitizing there."""
    from ..curation.stage_io import read_step

    rows, planted, audit_hits = [], None, []
    for s in step_sources(store, "curated"):
        rows += read_step(store, "curated", s)[1]
        skey = step_pointer("sanitized", s)
        if store.exists(skey):
            summary = json.loads(store.get_bytes(skey)).get("summary") or {}
            n = summary.get("canaries_planted")
            if n is not None:
                planted = (planted or 0) + int(n)
            audit_hits += [{**h, "source": s} for h in (summary.get("canary_audit") or {}).get("hits", [])]
    return rows, planted, audit_hits


def _run_tier2(bench: str, context, store, evals: EvalSettings, client) -> Any:
    from ..curation.text import row_text
    from .harness import devsecops, gaia, noleak, swebench
    from .harness.common import unavailable

    prof = evals.profile()
    cfg = CATALOG.bench(bench)
    o = prof.overrides.get(bench)
    max_items = o.max_items if o else None
    max_new = (o.max_new_tokens if o and o.max_new_tokens else None) or cfg.max_new_tokens
    if bench == "swebench_lite":
        from .harness.swe_agent import ScaffoldSettings

        sc = cfg.scaffold
        settings = ScaffoldSettings(agent_config=sc.agent_config, step_limit=(o.step_limit if o else None) or sc.step_limit,
                                    cost_limit=sc.cost_limit, command_timeout_s=sc.command_timeout_s,
                                    wall_time_limit_s=sc.wall_time_limit_s, max_tokens=max_new,
                                    temperature=sc.temperature, workers=sc.workers, model_retries=sc.model_retries,
                                    environment=sc.environment)
        return swebench.run(client, offline=prof.offline, work_dir=prof.work_path("swebench", client.ref.name),
                            swebench_python=prof.swebench_python, settings=settings,
                            agent_python=prof.swe_agent_python, max_items=max_items,
                            max_workers=cfg.harness_workers, log=context.log.info)
    if bench == "gaia_level1":
        return gaia.run(client, offline=prof.offline, token_env=prof.hf_token_env, max_items=max_items,
                        max_new_tokens=max_new)
    if bench == "devsecops":
        from ..synth.graders import Grader

        if not store.exists(DEVSECOPS_LATEST):
            return unavailable(bench, "DevSecOps eval", "devsecops_eval_tasks has not been materialized")
        latest = json.loads(store.get_bytes(DEVSECOPS_LATEST))
        tasks = devsecops.tasks_from_json(store.get_bytes(latest["key"]))
        tasks = devsecops.stratified(tasks, max_items) if max_items else tasks
        return devsecops.run(client, Grader(trust_unsealed=devsecops.TRUST_UNSEALED), tasks, max_new_tokens=max_new,
                             expansion=latest["stats"])
    # noleak
    from ..canary import CanaryManifest, CanaryScanner, scan_rows
    from ..sanitize import SECRET_CATEGORIES, Sanitizer, SanitizerConfig

    if not store.exists(CANARY_KEY):
        return unavailable(bench, "no-leak check", "eval_canaries has not been materialized")
    manifest = CanaryManifest.from_json(store.get_bytes(CANARY_KEY))
    rows, planted, audit_hits = _curated_rows(store)
    if not rows:
        return unavailable(bench, "no-leak check", "no curated rows yet: nothing to sample prompts from or scan")
    from .runner import sample_prompts

    sanitizer = Sanitizer(SanitizerConfig(categories=SECRET_CATEGORIES, ner_model=None))
    prompts = sample_prompts(rows, max_items or cfg.prompts, cfg.seed)
    scanner = CanaryScanner(manifest)
    curated = scan_rows(rows, scanner, row_text)
    curated["hits"] += audit_hits
    return noleak.run(client, prompts=prompts, manifest=manifest, upstream_planted=planted,
                      secret_findings=lambda t: sanitizer.sanitize(t).counts,
                      curated=curated,
                      replay=noleak.sanitizer_replay(rows[:50], manifest, lambda t: sanitizer.sanitize(t).text),
                      max_new_tokens=max_new)


@asset(group_name="evals", partitions_def=tier2_partitions, pool="gpu", code_version=_code_version("tier2_eval_report"), kinds={"pytorch"},
       deps=[AssetDep(AssetKey(CATALOG.release.checkpoint)), AssetDep(devsecops_eval_tasks), AssetDep(eval_canaries),
             AssetDep(curated_rows, partition_mapping=AllPartitionMapping())],
       check_specs=gate_specs("tier2_eval_report", tier2_partitions, with_regression=False))
@holds_pool_slot
def tier2_eval_report(context: AssetExecutionContext, object_store: ObjectStoreResource,
                      evals: EvalSettings) -> MaterializeResult:
    """Tier-2 report of the release checkpoint (monthly): SWE-bench Lite, DevSecOps, GAIA L1, no-leak."""
    bench = context.partition_key
    store = object_store.get_store()
    ckpt = CATALOG.release.checkpoint
    ref = evals.model_ref(store, ckpt)
    client = evals.client(ref)
    report = _run_tier2(bench, context, store, evals, client)
    summary = write_report(store, ckpt, bench, report, checkpoint_info(ref))
    thr, src = threshold(CATALOG, evals.profile(), bench)
    tg = target_gate(f"{ckpt}/{bench}", summary, thr, src, blocking=gating(CATALOG, evals.profile(), bench))
    return MaterializeResult(data_version=DataVersion(f"{ref.revision}:{summary['samples_sha256'][:12]}"),
                             metadata={**report_metadata(summary, thr, src), "target_gating": tg.blocking},
                             check_results=[gate_result("meets_target", tg, error=thr is not None, bench=bench)])


@asset(group_name="evals", code_version=_code_version("eval_scoreboard"), kinds={"markdown"},
       deps=[AssetDep(a, partition_mapping=AllPartitionMapping()) for a in CHECKPOINT_REPORTS]
       + [AssetDep(tier2_eval_report, partition_mapping=AllPartitionMapping())])
def eval_scoreboard(context: AssetExecutionContext, object_store: ObjectStoreResource,
                    evals: EvalSettings) -> MaterializeResult:
    """Scores across checkpoints: a table and a plot (the report a person reads)."""
    store = object_store.get_store()
    prof = evals.profile()
    benches = list(TIER1) + list(TIER2)
    summaries = collect(store, CATALOG.evaluated, benches)
    thr = {b: threshold(CATALOG, prof, b)[0] for b in benches}
    table = scores_table(summaries, CATALOG.evaluated, list(TIER1), thr)
    t2 = scores_table({k: v for k, v in summaries.items() if k[1] in TIER2}, [CATALOG.release.checkpoint],
                      list(TIER2), thr)
    plot = scores_plot(summaries, CATALOG.evaluated, list(TIER1), thr)
    data = {f"{c}/{b}": {"score": s.get("score"), "status": s.get("status"), "variant": s.get("variant"),
                         "revision": (s.get("checkpoint") or {}).get("revision")} for (c, b), s in summaries.items()}
    store.put_bytes(SCOREBOARD, json.dumps(data, indent=1).encode())
    md: dict[str, Any] = {"tier1_scores": MetadataValue.md(table), "tier2_scores": MetadataValue.md(t2),
                          "reports": len(summaries), "scores": MetadataValue.json(data),
                          "uri": store.uri(SCOREBOARD)}
    if plot:
        md["scores_plot"] = MetadataValue.md(plot)
    # The release checkpoint's scores as numbers, one entry per benchmark: the Plots tab trends each.
    for (c, b), s in summaries.items():
        if c == CATALOG.release.checkpoint and s.get("status") == "ok" and s.get("score") is not None:
            md[f"{b}/score"] = MetadataValue.float(float(s["score"]))
    return MaterializeResult(metadata=md)


def _release_assets():
    from .release import build_release_asset

    return build_release_asset(CATALOG, [report_asset_name(c) for c in CATALOG.checkpoints], tier2_eval_report.key)


mvp_release = _release_assets()
EVAL_ASSETS = [*CHECKPOINT_REPORTS, stage1_6_smoke_gate, eval_canaries, devsecops_eval_tasks, tier2_eval_report, eval_scoreboard, mvp_release]
EVAL_CHECKS = build_checks(CATALOG, report_asset_name, tier1_partitions, tier2_partitions)
