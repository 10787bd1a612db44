"""The release: promote the MVP (runbook: "Tag axentx/surrogate-1-coder-7b-v2-mvp as official MVP")
only when every gate passed; otherwise say exactly which gates failed and push nothing.

Gates re-checked here from the stored reports (Dagster's blocking checks only stop downstream assets
inside one run, PITFALLS): on the release checkpoint every Tier-1 and Tier-2 target; on every
checkpoint the regression gate against the one before; and every report must be current (computed
on the checkpoint revision that exists now). Promotion pushes a model card listing every score,
the datasets with their versions and the lineage, plus ``eval_results.json`` and the policy at the
repo root, as it is served (training/publish.py): a merged model loads with
``AutoModelForCausalLM.from_pretrained(repo)``, an adapter with ``AutoPeftModelForCausalLM``, its
base named by a loadable repo id.

Every attempt, promoted or not, writes ``outcome.md`` (the checkpoint, its lineage, the scoreboard,
the gate verdict, the costs) and ``knowledge_index.md`` (every artifact and where it lives) under
``releases/<repo>/<revision>/`` in the object store (outcome.py builds them); a promotion pushes
both into the model repo too. The ``all_gates_passed`` check is the release gate over every
benchmark, evaluated once, after all reports: its metadata holds the per-benchmark scoreboard, and a
benchmark not run yet is pending there (the check fails at WARN: nothing is promoted on a missing
report), never a failure (ERROR).
"""


import json
import time
from typing import Any

from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
)

from ..curation.mixtures import hub_asset_name
from ..resources import HubResource, ObjectStoreResource
from ..storage.checkpoints import read_checkpoint
from ..storage.layout import MIXTURES, SCOREBOARD, child_pointers, pointer, raw_revisions, release_folder
from .config import TIER1, TIER2, EvalCatalog, gating, threshold
from .gates import Gate, currency_gate, decide, regression_gate, tally, target_gate
from .outcome import knowledge_index_markdown, outcome_markdown, scoreboard_markdown, scoreboard_rows, verdict_line
from .reports import collect, summary_key
from .resources import EvalSettings, dir_revision


def release_gates(catalog: EvalCatalog, prof: Any, summaries: dict, revisions: dict[str, str | None]) -> list[Gate]:
    """Every gate the release needs, recomputed from the report summaries."""
    gates: list[Gate] = []
    rel = catalog.release.checkpoint
    for ckpt in catalog.checkpoints:
        prev = catalog.previous(ckpt)  # the base model for stage 1
        for b in TIER1:
            cur = summaries.get((ckpt, b))
            gates.append(currency_gate(f"{ckpt}/{b}: current", cur, revisions.get(ckpt)))
            gates.append(regression_gate(f"{ckpt}/{b}: no_regression", cur, summaries.get((prev, b)) if prev else None,
                                         tolerance=catalog.regression.tolerance, mode=catalog.regression.mode,
                                         previous_checkpoint=prev))
            if ckpt == rel:
                thr, src = threshold(catalog, prof, b)
                gates.append(target_gate(f"{ckpt}/{b}: meets_target", cur, thr, src,
                                         blocking=gating(catalog, prof, b)))
    for b in TIER2:
        cur = summaries.get((rel, b))
        thr, src = threshold(catalog, prof, b)
        gates.append(currency_gate(f"{rel}/{b}: current", cur, revisions.get(rel)))
        gates.append(target_gate(f"{rel}/{b}: meets_target", cur, thr, src, blocking=gating(catalog, prof, b)))
    return gates


def _lineage(store: Any, catalog: EvalCatalog) -> dict[str, Any]:
    """Stages (run fingerprints), mixtures (data versions) and source mirrors (HF revisions)."""
    out: dict[str, Any] = {"stages": {}, "mixtures": {}, "sources": {}}
    try:
        from ..training.config import load_training_catalog

        for s in load_training_catalog().stages:
            ckpt = read_checkpoint(store, s.name)
            if ckpt is not None:
                out["stages"][s.asset] = {"run": ckpt.data_version, "prefix": ckpt.output_prefix,
                                          "hub_repo": s.hub_repo}
    except FileNotFoundError:
        pass
    for name, key in child_pointers(store, MIXTURES).items():
        p = json.loads(store.get_bytes(key))
        out["mixtures"][name] = {"data_version": p.get("data_version"), "rows": p.get("rows")}
    out["sources"] = raw_revisions(store)
    return out


def model_card(repo_id: str, catalog: EvalCatalog, summaries: dict, gates: list[Gate], lineage: dict) -> str:
    rel = catalog.release.checkpoint
    lines = [f"# {repo_id}", "", "Surrogate-1 v2 MVP: Qwen2.5-Coder-7B post-trained in five stages (runbook Phase A).",
             f"Released by the `mvp_release` asset: every gate passed ({len(gates)} gates).", "",
             "## Scores (release checkpoint)", "", "| benchmark | score | target | variant |", "|---|---:|---:|---|"]
    for b in (*TIER1, *TIER2):
        s = summaries.get((rel, b)) or {}
        g = next((g for g in gates if g.name == f"{rel}/{b}: meets_target"), None)
        thr = (g.metadata.get("threshold") if g else None)
        score = "n/a" if s.get("status") != "ok" else f"{s['score']:.2f}"
        lines.append(f"| {b} | {score} | {'-' if thr is None else thr} | {s.get('variant', '-')} |")
    lines += ["", "## Scores across checkpoints", "", "| checkpoint | " + " | ".join(TIER1) + " |",
              "|---|" + "---:|" * len(TIER1)]
    for c in catalog.checkpoints:
        cells = [(lambda s: "-" if not s or s.get("status") != "ok" else f"{s['score']:.1f}")(summaries.get((c, b)))
                 for b in TIER1]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += ["", "## Lineage", "", "```json", json.dumps(lineage, indent=1, default=list), "```", ""]
    return "\n".join(lines)


def release_policy_files(ref: Any, client: Any, store: Any, base_source: str) -> dict[str, Any]:
    """The served form at the repo root: the merged model, or the adapter on a loadable base."""
    from pathlib import Path

    from ..training.publish import adapter_files, stage_base_repo, tree_files

    if not ref.adapter_dir:
        return tree_files(Path(ref.model_dir))
    from ..training.config import load_training_catalog
    from ..training.refs import base_model_resolution

    if ref.model_revision is not None:  # the pinned Hub base: model_dir is its id
        return adapter_files(Path(ref.adapter_dir), ref.model_dir, ref.model_revision)
    catalog = load_training_catalog()
    repo, revision = stage_base_repo(catalog, catalog.stage(ref.name), getattr(client, "org", ""),
                                     base_model_resolution(store, catalog, base_source))
    return adapter_files(Path(ref.adapter_dir), repo, revision)


def source_pins() -> dict[str, dict[str, str]]:
    """{source or helper: {hf_id, revision}} as pinned in assets/sources.yaml."""
    from ..catalog.loader import load_sources

    cat = load_sources()
    return {e.name: {"hf_id": e.hf_id, "revision": e.revision or "unpinned"} for e in [*cat.sources, *cat.helpers]}


def _latest_metadata(instance: Any, asset: str) -> dict[str, Any] | None:
    """The latest materialization's metadata of `asset` as plain values, or None if never materialized."""
    ev = instance.get_latest_materialization_event(AssetKey(asset))
    if ev is None or ev.asset_materialization is None:
        return None
    return {k: getattr(v, "value", v) for k, v in ev.asset_materialization.metadata.items()}


def ledger_costs(instance: Any) -> dict[str, Any] | None:
    """The cost ledger's totals and budget verdict (numbers and short text), or None if not materialized."""
    meta = _latest_metadata(instance, "cost_ledger")
    if meta is None:
        return None
    return {k: v for k, v in meta.items()
            if isinstance(v, (int, float, bool)) or (k.startswith("budget_") and isinstance(v, str))}


def stage_hub_uris(store: Any, lineage: dict) -> dict[str, str]:
    """{stage asset: the hub URI its run pushed}, from each run's hub.json."""
    out = {}
    for asset_name, s in lineage.get("stages", {}).items():
        key = f"{s.get('prefix')}/hub.json"
        if s.get("prefix") and store.exists(key):
            out[asset_name] = json.loads(store.get_bytes(key)).get("uri")
    return out


def release_documents(*, repo_id: str, catalog: EvalCatalog, revision: str | None, promoted: bool,
                      hub_uri: str | None, gates: list[Gate], rows: list[dict], lineage: dict, store: Any,
                      summaries: dict, costs: dict | None, mixture_hub: dict[str, str], repo_files: list[str],
                      store_files: dict[str, str]) -> dict[str, bytes]:
    """``outcome.md`` and ``knowledge_index.md`` for one attempt."""
    reports = {k: {**v, "summary_uri": store.uri(summary_key(*k))} for k, v in summaries.items()}
    mixture_store = {m: store.uri(json.loads(store.get_bytes(key))["key"])
                     for m, key in child_pointers(store, MIXTURES).items()}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    outcome = outcome_markdown(repo_id=repo_id, checkpoint=catalog.release.checkpoint, revision=revision,
                               promoted=promoted, hub_uri=hub_uri, gates=gates, rows=rows, lineage=lineage,
                               pins=source_pins(), costs=costs, generated_at=stamp)
    index = knowledge_index_markdown(
        repo_id=repo_id, checkpoint=catalog.release.checkpoint, revision=revision, promoted=promoted,
        hub_uri=hub_uri, repo_files=repo_files, store_files=store_files, lineage=lineage,
        stage_hub=stage_hub_uris(store, lineage), mixture_hub=mixture_hub, mixture_store=mixture_store,
        reports=reports, scoreboard_uri=store.uri(SCOREBOARD) if store.exists(SCOREBOARD) else None)
    return {"outcome.md": outcome.encode(), "knowledge_index.md": index.encode()}


def scoreboard_table(rows: list[dict]) -> Any:
    """The per-benchmark scoreboard as a Dagster table value (typed columns, one record per benchmark)."""
    from dagster import TableColumn, TableRecord, TableSchema

    schema = TableSchema(columns=[TableColumn("benchmark"), TableColumn("tier"), TableColumn("score", "float"),
                                  TableColumn("target", "float"), TableColumn("verdict"), TableColumn("variant")])
    records = [TableRecord({"benchmark": r["benchmark"], "tier": r["tier"],
                            "score": float(r["score"]) if r["score"] is not None else None,
                            "target": float(r["target"]) if r["target"] is not None else None,
                            "verdict": r["verdict"], "variant": r["variant"]}) for r in rows]
    return MetadataValue.table(records, schema=schema)


def build_release_asset(catalog: EvalCatalog, report_assets: list[str], tier2_report: AssetKey):
    rel_report = report_assets[catalog.checkpoints.index(catalog.release.checkpoint)]
    deps = [AssetDep(AssetKey(a), partition_mapping=AllPartitionMapping()) for a in report_assets]
    deps.append(AssetDep(tier2_report, partition_mapping=AllPartitionMapping()))
    benches = [("tier1", b) for b in TIER1] + [("tier2", b) for b in TIER2]

    @asset(name="mvp_release", group_name="evals", deps=deps, kinds={"huggingface"},
           check_specs=[AssetCheckSpec("all_gates_passed", asset="mvp_release",
                                       description=f"the release gate over every benchmark: "
                                                   f"{catalog.release.checkpoint} passed every gate and was promoted "
                                                   "(a benchmark not run yet is pending, at WARN)")],
           description=f"Promotes {catalog.release.checkpoint} to {catalog.release.hub_repo} when every gate passed "
                       f"(depends on {rel_report} and {tier2_report.to_user_string()}); writes outcome.md and "
                       "knowledge_index.md")
    def mvp_release(context: AssetExecutionContext, object_store: ObjectStoreResource, hub: HubResource,
                    evals: EvalSettings) -> MaterializeResult:
        from .checkpoints import checkpoint_revision

        store = object_store.get_store()
        prof = evals.profile()
        rel = catalog.release.checkpoint
        summaries = collect(store, catalog.evaluated, [*TIER1, *TIER2])
        revisions = {c: dir_revision(evals.model_dirs[c]) if c in evals.model_dirs else checkpoint_revision(store, c)
                     for c in catalog.checkpoints}
        revision = revisions.get(rel)
        gates = release_gates(catalog, prof, summaries, revisions)
        promote, failed = decide(gates)
        counts = tally(gates)
        rows = scoreboard_rows(rel, benches, summaries, gates)
        board = scoreboard_markdown(rows)
        table = "\n".join(f"- `{g.name}`: {g.description}" for g in failed) or "none"
        repo_id = f"{hub.org}/{catalog.release.hub_repo}"
        lineage = _lineage(store, catalog)
        costs = ledger_costs(context.instance)
        mixture_hub = {m: meta["hub_uri"] for m in child_pointers(store, MIXTURES)
                       if (meta := _latest_metadata(context.instance, hub_asset_name(m))) and meta.get("hub_uri")}
        folder = f"{release_folder(catalog.release.hub_repo)}/{revision or 'never-trained'}"
        store_files = {n: store.uri(f"{folder}/{n}") for n in ("outcome.md", "knowledge_index.md")}
        docs_args = dict(repo_id=repo_id, catalog=catalog, revision=revision, promoted=promote, gates=gates,
                         rows=rows, lineage=lineage, store=store, summaries=summaries, costs=costs,
                         mixture_hub=mixture_hub, store_files=store_files)
        meta: dict[str, Any] = {"promoted": promote, "verdict": verdict_line(promote, gates),
                                "gates": MetadataValue.int(len(gates)), "failed_gates": MetadataValue.int(counts["failed"]),
                                "pending_gates": MetadataValue.int(counts["pending"]),
                                "passed_gates": MetadataValue.int(counts["passed"]),
                                "benchmarks_failed": MetadataValue.int(sum(r["verdict"] == "FAIL" for r in rows)),
                                "benchmarks_pending": MetadataValue.int(sum(r["verdict"] == "pending" for r in rows)),
                                "scoreboard": MetadataValue.md(board),
                                # the same rows as a table value: the UI scrolls it instead of cutting it off
                                "scoreboard_table": scoreboard_table(rows),
                                "why_not_promoted": MetadataValue.md(table), "repo": catalog.release.hub_repo,
                                "checkpoint": rel, "checkpoint_revision": revision or "never trained"}
        hub_uri = None
        if promote:
            client = hub.get_client()
            results = {f"{c}/{b}": {k: s.get(k) for k in ("score", "score_name", "variant", "version", "n_items")}
                       for (c, b), s in summaries.items()}
            files = {"README.md": model_card(repo_id, catalog, summaries, gates, lineage).encode(),
                     "eval_results.json": json.dumps(results, indent=1).encode(),
                     "release.json": json.dumps({"checkpoint": rel, "revision": revision,
                                                 "gates": [g.as_dict() for g in gates]}, indent=1, default=str).encode()}
            ref = evals.model_ref(store, rel)
            files.update(release_policy_files(ref, client, store, evals.base_source))
            names = sorted([*files, "outcome.md", "knowledge_index.md"])
            files.update(release_documents(hub_uri=None, repo_files=names, **docs_args))
            hub_uri = client.push_files("model", catalog.release.hub_repo, files, f"Release {rel} @ {revision}")
            meta.update({"hub_uri": hub_uri, "files_pushed": len(files)})
            context.log.info(f"promoted {rel} to {hub_uri}")
        else:
            names = []
            context.log.warning(verdict_line(promote, gates))
        # The store copies name the pushed revision, known only after the push.
        docs = release_documents(hub_uri=hub_uri, repo_files=names, **docs_args)
        for name, data in docs.items():
            store.put_bytes(f"{folder}/{name}", data, "text/markdown")
        store.put_bytes(pointer(release_folder(catalog.release.hub_repo)), json.dumps(
            {"checkpoint": rel, "revision": revision, "promoted": promote, "hub_uri": hub_uri,
             **{n.split(".")[0]: f"{folder}/{n}" for n in docs}}).encode(), "application/json")
        meta.update({"outcome": MetadataValue.url(store_files["outcome.md"]),
                     "knowledge_index": MetadataValue.url(store_files["knowledge_index.md"])})
        description = "promoted" if promote else (
            f"not promoted: {counts['failed']} failed, {counts['pending']} pending (not run yet) of {len(gates)} "
            "gates; failed: " + ("; ".join(g.name for g in failed if not g.pending)[:600] or "none")
            + ("; pending: " + "; ".join(g.name for g in failed if g.pending)[:400] if counts["pending"] else ""))
        return MaterializeResult(metadata=meta, check_results=[AssetCheckResult(
            check_name="all_gates_passed", passed=promote,
            severity=AssetCheckSeverity.ERROR if counts["failed"] or promote else AssetCheckSeverity.WARN,
            # the checkpoint the release judged, for the regression report (not the nearest ancestor)
            metadata={"checkpoint": rel, "scoreboard": MetadataValue.md(board),
                      "failed_gates": MetadataValue.int(counts["failed"]),
                      "pending_gates": MetadataValue.int(counts["pending"])},
            description=description[:2000])])

    return mvp_release
