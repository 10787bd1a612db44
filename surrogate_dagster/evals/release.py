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
"""


import json
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

from ..resources import HubResource, ObjectStoreResource
from ..storage.checkpoints import read_checkpoint
from ..storage.layout import MIXTURES, child_pointers, raw_revisions
from .config import TIER1, TIER2, EvalCatalog, threshold
from .gates import Gate, currency_gate, decide, regression_gate, target_gate
from .reports import collect
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
                gates.append(target_gate(f"{ckpt}/{b}: meets_target", cur, thr, src))
    for b in TIER2:
        cur = summaries.get((rel, b))
        thr, src = threshold(catalog, prof, b)
        gates.append(currency_gate(f"{rel}/{b}: current", cur, revisions.get(rel)))
        gates.append(target_gate(f"{rel}/{b}: meets_target", cur, thr, src))
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


def build_release_asset(catalog: EvalCatalog, report_assets: list[str], tier2_report: AssetKey):
    rel_report = report_assets[catalog.checkpoints.index(catalog.release.checkpoint)]
    deps = [AssetDep(AssetKey(a), partition_mapping=AllPartitionMapping()) for a in report_assets]
    deps.append(AssetDep(tier2_report, partition_mapping=AllPartitionMapping()))

    @asset(name="mvp_release", group_name="evals", deps=deps, kinds={"huggingface"},
           check_specs=[AssetCheckSpec("all_gates_passed", asset="mvp_release",
                                       description="the release checkpoint passed every gate and was promoted")],
           description=f"Promotes {catalog.release.checkpoint} to {catalog.release.hub_repo} when every gate passed "
                       f"(depends on {rel_report} and {tier2_report.to_user_string()})")
    def mvp_release(context: AssetExecutionContext, object_store: ObjectStoreResource, hub: HubResource,
                    evals: EvalSettings) -> MaterializeResult:
        from .checkpoints import checkpoint_revision

        store = object_store.get_store()
        prof = evals.profile()
        summaries = collect(store, catalog.evaluated, [*TIER1, *TIER2])
        revisions = {c: dir_revision(evals.model_dirs[c]) if c in evals.model_dirs else checkpoint_revision(store, c)
                     for c in catalog.checkpoints}
        gates = release_gates(catalog, prof, summaries, revisions)
        promote, failed = decide(gates)
        table = "\n".join(f"- `{g.name}`: {g.description}" for g in failed) or "none"
        meta: dict[str, Any] = {"promoted": promote, "gates": len(gates), "failed_gates": len(failed),
                                "why_not_promoted": MetadataValue.md(table), "repo": catalog.release.hub_repo,
                                "checkpoint": catalog.release.checkpoint,
                                "checkpoint_revision": revisions.get(catalog.release.checkpoint) or "never trained"}
        if promote:
            client = hub.get_client()
            repo_id = f"{hub.org}/{catalog.release.hub_repo}"
            lineage = _lineage(store, catalog)
            results = {f"{c}/{b}": {k: s.get(k) for k in ("score", "score_name", "variant", "version", "n_items")}
                       for (c, b), s in summaries.items()}
            files = {"README.md": model_card(repo_id, catalog, summaries, gates, lineage).encode(),
                     "eval_results.json": json.dumps(results, indent=1).encode(),
                     "release.json": json.dumps({"checkpoint": catalog.release.checkpoint,
                                                 "revision": revisions.get(catalog.release.checkpoint),
                                                 "gates": [g.as_dict() for g in gates]}, indent=1, default=str).encode()}
            ref = evals.model_ref(store, catalog.release.checkpoint)
            files.update(release_policy_files(ref, client, store, evals.base_source))
            uri = client.push_files("model", catalog.release.hub_repo, files,
                                    f"Release {catalog.release.checkpoint} @ {revisions.get(catalog.release.checkpoint)}")
            meta.update({"hub_uri": uri, "files_pushed": len(files)})
            context.log.info(f"promoted {catalog.release.checkpoint} to {uri}")
        else:
            context.log.warning(f"not promoted: {len(failed)} gate(s) failed")
        return MaterializeResult(metadata=meta, check_results=[AssetCheckResult(
            check_name="all_gates_passed", passed=promote, severity=AssetCheckSeverity.ERROR,
            # the checkpoint the release judged, for the regression report (not the nearest ancestor)
            metadata={"checkpoint": catalog.release.checkpoint},
            description="promoted" if promote else f"{len(failed)} gate(s) failed: "
                                                    + "; ".join(g.name for g in failed[:8]))])

    return mvp_release
