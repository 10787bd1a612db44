"""One checkpoint asset's materialization: render, launch the trainer, check, push, describe.

Re-materializing a stage whose trainer was killed resumes it: the run's store prefix is named by
its fingerprint (rendered config + input data versions), the trainer uploads a checkpoint every
``save_steps`` under it, and a new trainer run with the same fingerprint starts from the latest one.
The datasets of an unfinished run are the ones recorded when it started (run_inputs.py), so a
mixture pushed in between neither changes the fingerprint nor what the resumed run trains on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from ..storage import ObjectStore
from ..storage.checkpoints import write_checkpoint
from ..storage.layout import stage_run_prefix
from .card import model_card
from .config import StageSpec, TrainingCatalog
from .refs import resolve_stage
from .render import LORA_SHAPE, RenderedStage, config_hash, ref_name, render_stage, stores_merged
from .run_inputs import inputs_at_start, mark_finished, record_start
from .runs import TrainerReport, loss_curve_png, read_run
from .serving import decide

TRAINER_ENV = {"AXOLOTL_DO_NOT_TRACK": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false",
               "HF_HUB_DISABLE_TELEMETRY": "1"}
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


@dataclass
class StageOutcome:
    metadata: dict[str, Any]
    data_version: str
    summary: dict[str, Any]
    report: TrainerReport | None


def run_spec(stage: StageSpec, catalog: TrainingCatalog, rendered: RenderedStage, trainer,
             store_config: dict[str, Any], offline: bool) -> dict[str, Any]:
    """The Pipes extras of one run (surrogate_trainer.protocol.RunSpec)."""
    prefix = stage_run_prefix(stage.name, rendered.fingerprint)
    return {
        "stage": stage.name,
        "fingerprint": rendered.fingerprint,
        "work_dir": trainer.run_work_dir(stage.name, rendered.fingerprint),
        "store": store_config,
        "axolotl_config": rendered.config,
        "inputs": rendered.inputs,
        "checkpoint_prefix": f"{prefix}/checkpoints",
        "output_prefix": prefix,
        "merge": stores_merged(stage, catalog, trainer.executor),
        "keep_checkpoints": catalog.keep_checkpoints,
        "expected_reference": rendered.expected_reference,
        "extra_env": {**TRAINER_ENV, **(OFFLINE_ENV if offline else {})},
    }


def _push_stage(stage: StageSpec, catalog: TrainingCatalog, store: ObjectStore, hub_client, base_res,
                adapter_prefix: str, merged_prefix: str | None, extra: dict[str, bytes],
                message: str) -> str:
    """Push the stage's repo (publish.py: merged at the root when stored, adapter on a loadable base)."""
    import tempfile
    from pathlib import Path

    from .publish import download, policy_files, push_tiny_base, stage_base_repo

    # On this (pipeline) machine: the trainer's work dir may be in another pod.
    with tempfile.TemporaryDirectory(prefix="surrogate-push-") as tmp:
        work = Path(tmp)
        if base_res.kind != "hub" and ref_name(stage.load_config()["base_model"]) == "base_model":
            push_tiny_base(hub_client, store, base_res, work)
        base_repo, base_revision = stage_base_repo(catalog, stage, getattr(hub_client, "org", ""), base_res)
        adapter = download(store, adapter_prefix, work / "adapter")
        merged = download(store, merged_prefix, work / "merged") if merged_prefix else None
        files = {**policy_files(adapter, merged, base_repo, base_revision), **extra}
        return hub_client.push_files("model", stage.hub_repo, files, message)


def _ref_label(ref: str, version: str, hub_revision: str | None = None) -> str:
    return f"{ref}@{hub_revision or version}"


def materialize_stage(context, stage: StageSpec, catalog: TrainingCatalog, store: ObjectStore,
                      store_config: dict[str, Any], hub_client, hub_offline: bool, trainer,
                      base_source: str) -> StageOutcome:
    """Train (or reuse) one stage and return its asset metadata; raises on any failure."""
    resolutions, started_run = inputs_at_start(
        store, stage.name, config_hash(stage, catalog, trainer.executor),
        resolve_stage(store, catalog, stage, base_source), log=context.log.info)
    rendered = render_stage(stage, catalog, trainer.executor, resolutions)
    extras = run_spec(stage, catalog, rendered, trainer, store_config, offline=hub_offline)
    prefix = extras["output_prefix"]
    result_key = f"{prefix}/result.json"

    report = None
    reused = trainer.reuse_finished_runs and store.exists(result_key)
    if reused:
        context.log.info(f"{stage.name}: run {rendered.fingerprint} already finished; reusing {result_key}")
    else:
        record_start(store, stage.name, rendered.fingerprint, rendered.config_hash, resolutions)
        invocation = trainer.launch(context, extras)
        report = read_run(invocation.get_custom_messages(),
                          invocation.get_results(implicit_materializations=False))
    if not store.exists(result_key):
        raise RuntimeError(f"{stage.name}: the trainer reported success but {result_key} is not in the store")
    summary = json.loads(store.get_bytes(result_key))
    if summary.get("fingerprint") != rendered.fingerprint:
        raise RuntimeError(f"{result_key} belongs to run {summary.get('fingerprint')}, not {rendered.fingerprint}")
    adapter_prefix = summary["adapter_prefix"]
    adapter_keys = store.list(adapter_prefix + "/")
    if not any(k.endswith("/adapter_model.safetensors") for k in adapter_keys):
        raise RuntimeError(f"{stage.name}: no adapter_model.safetensors under {adapter_prefix}/")
    if extras["merge"] and not summary.get("merged_prefix"):
        raise RuntimeError(f"{stage.name}: merge was requested but the run stored no merged policy")
    # The adapter the run wrote is the one served: it must agree with what the merge was planned on.
    serving = decide(json.loads(store.get_bytes(f"{adapter_prefix}/adapter_config.json")))
    if serving.form == "merged" and not summary.get("merged_prefix"):
        raise RuntimeError(f"{stage.name}: the adapter cannot be served as a LoRA module ({serving.reason}) "
                           "and the run stored no merged policy")

    base_ref = ref_name(stage.load_config()["base_model"])
    base_res = resolutions[base_ref]
    datasets = {r: v for r, v in rendered.refs.items() if r.split("/")[0].endswith("_mixture")}
    reference = None
    if rendered.config.get("rl"):
        reference = _ref_label(base_ref, base_res.data_version)
        recorded = (summary.get("reference") or {}).get("model")
        expected = rendered.expected_reference.replace("{work}", extras["work_dir"])
        if recorded is None or recorded != expected:
            raise RuntimeError(f"{stage.name}: the trainer used {recorded} as DPO reference, expected {expected}")

    refused = summary.get("resume_refused") or []
    for r in refused:  # the trainer logged these too; the run's own log should say them as well
        context.log.warning(f"{stage.name}: did not resume from {r['checkpoint']}: {r['reason']}")
    progress = report.progress if report else summary.get("progress", [])
    gpu_hours = summary["wall_s"] / 3600 * trainer.gpu_count
    artifact_uri = store.uri(f"{adapter_prefix}/adapter_model.safetensors").rsplit("/", 1)[0]
    merged_uri = (store.uri(f"{summary['merged_prefix']}/config.json").rsplit("/", 1)[0]
                  if summary.get("merged_prefix") else None)

    hub_uri = None
    hub_key = f"{prefix}/hub.json"
    if trainer.push_to_hub:
        if reused and store.exists(hub_key):
            hub_uri = json.loads(store.get_bytes(hub_key))["uri"]
        else:
            lora = {k: rendered.config.get(k) for k in ("adapter", *LORA_SHAPE)}
            if rendered.config.get("rl"):
                lora.update({"rl": rendered.config["rl"], "dpo_loss_type": rendered.config.get("dpo_loss_type"),
                             "focused_dpo_weight": rendered.config.get("focused_dpo_weight"),
                             "beta": (rendered.config.get("trl") or {}).get("beta")})
            card = model_card(
                repo_id=f"{getattr(hub_client, 'org', '')}/{stage.hub_repo}", title=stage.title, stage=stage.name,
                base_model=base_res.value if base_res.kind == "hub" else _ref_label(base_ref, base_res.data_version),
                base_revision=base_res.revision, reference_model=reference,
                datasets=datasets, config_hash=rendered.config_hash, fingerprint=rendered.fingerprint,
                summary=summary, lora=lora, loss=[f"{p['step']}: {p['loss']:.4f}" for p in progress
                                                  if p.get("loss") is not None],
                artifact_uri=artifact_uri, merged_uri=merged_uri)
            hub_uri = _push_stage(stage, catalog, store, hub_client, base_res, adapter_prefix,
                                  summary.get("merged_prefix"), {
                                      "README.md": card.encode(),
                                      "surrogate_training.yaml": yaml.safe_dump(
                                          {"stage": stage.name, "config_hash": rendered.config_hash,
                                           "fingerprint": rendered.fingerprint, "inputs": rendered.refs,
                                           "axolotl_config": rendered.config}, sort_keys=False).encode()},
                                  f"{stage.title}: run {rendered.fingerprint}")
            store.put_bytes(hub_key, json.dumps({"uri": hub_uri}).encode())

    write_checkpoint(store, stage.name, prefix, rendered.fingerprint, bool(summary.get("merged_prefix")))
    mark_finished(store, stage.name, rendered.fingerprint)

    metadata: dict[str, Any] = {
        "config_hash": rendered.config_hash,
        "run_fingerprint": rendered.fingerprint,
        "executor": trainer.executor,
        "base_model": base_res.value if base_res.kind == "hub" else base_ref,
        "base_model_revision": base_res.revision or base_res.data_version,
        "reference_model": reference or "n/a (SFT)",
        "datasets": datasets,
        "dataset_keys": {r: res.value for r, res in resolutions.items() if res.kind == "key"},
        # the unfinished run whose recorded datasets this one reused ("" = read the _latest pointers)
        "datasets_from_started_run": started_run or "",
        "inputs": rendered.refs,
        "steps": summary.get("global_step"),
        "resumed_from_step": summary.get("resumed_from_step") if summary.get("resumed_from_step") is not None else -1,
        # checkpoints passed over as damaged, newest first: [] when the resume (or fresh start) was clean
        "resume_refused": refused,
        "final_loss": summary.get("final_loss"),
        "tokens_per_s": summary.get("tokens_per_s"),
        "tokens": summary.get("tokens"),
        "wall_s": summary.get("wall_s"),
        "train_s": summary.get("train_s"),
        "gpu_hours": gpu_hours,
        "gpu_type": trainer.gpu_type,  # priced once, by the cost ledger (profile phases.ops.costs)
        "device": summary.get("device"),
        "artifact_uri": artifact_uri,
        "merged_policy_uri": merged_uri or "none",
        "served_as": "merged" if merged_uri else "adapter",
        "serving_reason": serving.reason,
        "hub_uri": hub_uri or "not pushed",
        "checkpoints_uploaded": len(report.checkpoints) if report else -1,
        "reused_finished_run": reused,
    }
    probe = summary.get("reference_probe")
    if probe:
        metadata["reference_probe_logps"] = {"chosen": probe["ref_chosen_logp"], "rejected": probe["ref_rejected_logp"]}
    plot = loss_curve_png(progress, f"{stage.name} train loss")
    if plot:
        metadata["loss_curve"] = plot
    return StageOutcome(metadata={k: v for k, v in metadata.items() if v is not None},
                        data_version=rendered.fingerprint, summary=summary, report=report)
