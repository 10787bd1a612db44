"""Stage file + executor -> the axolotl config one run trains with. Pure: no Dagster, no axolotl.

A stage file (assets/stages/*.yaml) is the recipe. Rendering changes three kinds of keys only:

- wiring: ``asset://`` references become local paths in the trainer's work dir (filled from the
  object store) or, for the production base model, the Hub id plus the pinned revision; plus the
  run's output/checkpoint keys (output_dir, save_steps, ...);
- executor overrides (training.yaml ``executor_overrides``), restricted to OVERRIDABLE keys:
  device, precision, kernels and scale. A recipe key (learning rate, LoRA shape, loss, data)
  cannot differ between executors: rendering refuses it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .config import StageSpec, TrainingCatalog

ASSET_REF = "asset://"
WORK = "{work}"  # the trainer's work dir (surrogate_trainer.protocol.WORK_PLACEHOLDER)

# Keys an executor may change: where and how fast it runs, never what it learns.
OVERRIDABLE = frozenset({
    "adapter", "load_in_4bit", "load_in_8bit", "bf16", "fp16", "tf32", "attn_implementation",
    "plugins", "liger_rope", "liger_rms_norm", "liger_glu_activation", "liger_fused_linear_cross_entropy",
    "lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "gradient_checkpointing", "sample_packing",
    "pad_to_sequence_len", "sequence_len", "micro_batch_size", "gradient_accumulation_steps",
    "max_steps", "save_steps", "logging_steps", "optimizer", "dataloader_num_workers",
    "dataset_num_proc", "torch_compile", "warmup_steps",
})
# Precision changes an executor may make to `adapter`: QLoRA's 4-bit base is a GPU memory trick.
ADAPTER_SWAPS = {("qlora", "lora")}
# "Continue the same LoRA" / "a LoRA of the same settings": equal across every stage.
LORA_SHAPE = ("lora_r", "lora_alpha", "lora_dropout", "peft_use_dora", "lora_target_modules")
# Wiring keys rendering sets itself; a stage file must not set them.
WIRING = ("output_dir", "dataset_prepared_path", "save_strategy", "save_total_limit",
          "resume_from_checkpoint", "auto_resume_from_checkpoints", "revision_of_model",
          "base_model_config", "tokenizer_config", "hub_model_id", "hub_strategy", "push_to_hub")


class RenderError(ValueError):
    """A stage file or override that would change the recipe, or a reference that cannot resolve."""


@dataclass(frozen=True)
class Resolution:
    """Where an ``asset://`` reference points for this run."""

    kind: str  # "key" (one object), "prefix" (a directory tree) or "hub" (Hub id + revision)
    value: str
    data_version: str
    revision: str | None = None


@dataclass
class RenderedStage:
    config: dict[str, Any]
    inputs: list[dict[str, str]]
    refs: dict[str, str]  # reference -> its data version (lineage)
    expected_reference: str | None
    config_hash: str
    fingerprint: str
    upstream_assets: list[str] = field(default_factory=list)


def stable_hash(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:n]


def ref_name(value: Any) -> str | None:
    """``asset://stage1_checkpoint/adapter`` -> ``stage1_checkpoint/adapter``; None if not a reference."""
    return value[len(ASSET_REF):] if isinstance(value, str) and value.startswith(ASSET_REF) else None


def stage_refs(cfg: dict[str, Any]) -> list[str]:
    """Every asset reference of a stage file, in order: base_model, lora_model_dir, datasets."""
    refs = [ref_name(cfg.get("base_model")), ref_name(cfg.get("lora_model_dir"))]
    refs += [ref_name(ds.get("path")) for ds in cfg.get("datasets") or []]
    return [r for r in refs if r]


def upstream_assets(cfg: dict[str, Any]) -> list[str]:
    """The asset keys a stage depends on (the part before '/')."""
    return sorted({r.split("/", 1)[0] for r in stage_refs(cfg)})


def apply_overrides(cfg: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Top-level replace (None deletes) of OVERRIDABLE keys only."""
    out = copy.deepcopy(cfg)
    for key, value in overrides.items():
        if key not in OVERRIDABLE:
            raise RenderError(f"executor override {key!r} would change the recipe; overridable: {sorted(OVERRIDABLE)}")
        if key == "adapter" and cfg.get("adapter") != value and (cfg.get("adapter"), value) not in ADAPTER_SWAPS:
            raise RenderError(f"executor override adapter {cfg.get('adapter')} -> {value} changes the method")
        if key == "adapter" and cfg.get("adapter") is None:
            continue  # full fine-tuning stays full fine-tuning
        if value is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


def check_lora_shape(catalog: TrainingCatalog) -> None:
    """Every stage trains a LoRA of the first stage's shape (the runbook's 'same r=64, all-linear, DoRA')."""
    first = catalog.stages[0].load_config()
    want = {k: first.get(k) for k in LORA_SHAPE}
    for stage in catalog.stages[1:]:
        got = {k: stage.load_config().get(k) for k in LORA_SHAPE}
        if got != want:
            diff = {k: (want[k], got[k]) for k in LORA_SHAPE if got[k] != want[k]}
            raise RenderError(f"{stage.config}: LoRA settings differ from {catalog.stages[0].config}: {diff}")


def config_hash(stage: StageSpec, catalog: TrainingCatalog, executor: str) -> str:
    """What decides the trained weights besides the data: stage file, overrides, checkpointing, base pin."""
    return stable_hash({
        "stage": stage.load_config(),
        "overrides": catalog.executor_overrides.get(executor, {}),
        "executor": executor,
        "checkpoint_every_steps": catalog.checkpoint_every_steps,
        "base_model": catalog.base_model.model_dump(),
        "merge": stores_merged(stage, catalog, executor),
    })


def stores_merged(stage: StageSpec, catalog: TrainingCatalog, executor: str) -> bool:
    """Whether the run stores a merged policy: the stage asks for it (the next stage's base), or
    the adapter it trains cannot be served as a LoRA module (serving.py; DoRA, for one)."""
    from .serving import decide, expected_adapter_config

    cfg = apply_overrides(stage.load_config(), catalog.executor_overrides.get(executor, {}))
    return stage.merge or decide(expected_adapter_config(cfg)).form == "merged"


def _local_dest(ref: str) -> str:
    return f"inputs/{ref.replace('/', '_')}"


def render_stage(stage: StageSpec, catalog: TrainingCatalog, executor: str,
                 resolve: dict[str, Resolution]) -> RenderedStage:
    """Render one stage for one executor, with every ``asset://`` reference resolved by ``resolve``."""
    raw = stage.load_config()
    bad = [k for k in WIRING if k in raw]
    if bad:
        raise RenderError(f"{stage.config}: {bad} are set by the pipeline, not the stage file")
    if raw.get("rl") and raw.get("lora_model_dir"):
        raise RenderError(f"{stage.config}: a DPO stage cannot continue an adapter (axolotl 0.19 ignores "
                          "lora_model_dir for DPO); use the previous stage's merged policy as base_model")
    cfg = apply_overrides(raw, catalog.executor_overrides.get(executor, {}))
    inputs: list[dict[str, str]] = []
    refs: dict[str, str] = {}

    def place(ref: str) -> Resolution:
        if ref not in resolve:
            raise RenderError(f"{stage.config}: reference asset://{ref} is not resolved")
        res = resolve[ref]
        refs[ref] = res.data_version
        return res

    for key in ("base_model", "lora_model_dir"):
        ref = ref_name(cfg.get(key))
        if not ref:
            if key == "base_model":
                raise RenderError(f"{stage.config}: base_model must be an asset:// reference")
            continue
        res = place(ref)
        if res.kind == "hub":
            cfg[key] = res.value
            if key == "base_model" and res.revision:
                cfg["revision_of_model"] = res.revision
        elif res.kind == "prefix":
            cfg[key] = f"{WORK}/{_local_dest(ref)}"
            inputs.append({"prefix": res.value, "dest": _local_dest(ref)})
        else:
            raise RenderError(f"asset://{ref} must resolve to a model directory or a Hub id, got {res.kind}")
    for i, ds in enumerate(cfg.get("datasets") or []):
        ref = ref_name(ds.get("path"))
        if not ref:
            raise RenderError(f"{stage.config}: datasets[{i}].path must be an asset:// reference")
        res = place(ref)
        if res.kind != "key":
            raise RenderError(f"asset://{ref} must resolve to one JSONL object, got {res.kind}")
        dest = f"data/{ref.replace('/', '_')}.jsonl"
        ds["path"], ds["ds_type"] = f"{WORK}/{dest}", "json"
        inputs.append({"key": res.value, "dest": dest})

    save_steps = cfg.get("save_steps") or catalog.checkpoint_every_steps
    cfg.update({
        "output_dir": f"{WORK}/output",
        "dataset_prepared_path": f"{WORK}/prepared",
        "save_strategy": "steps",
        "save_steps": save_steps,
        "save_total_limit": catalog.keep_checkpoints,
        "auto_resume_from_checkpoints": False,  # the trainer resumes explicitly, from the object store
    })
    chash = config_hash(stage, catalog, executor)
    expected_reference = cfg["base_model"] if cfg.get("rl") else None
    return RenderedStage(
        config=cfg, inputs=inputs, refs=refs, expected_reference=expected_reference, config_hash=chash,
        fingerprint=stable_hash({"config": chash, "refs": refs}),
        upstream_assets=upstream_assets(raw),
    )
