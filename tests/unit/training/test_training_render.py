"""Pure rendering of stage files per executor, the catalog, the profiles and the k8s pod spec."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.training import runs
from surrogate_dagster.training.config import load_training_catalog, training_profile
from surrogate_dagster.training.executor import TrainerExecutorResource
from surrogate_dagster.training.render import (
    OVERRIDABLE,
    RenderError,
    Resolution,
    apply_overrides,
    check_lora_shape,
    config_hash,
    render_stage,
    stage_refs,
    upstream_assets,
)

ROOT = Path(__file__).resolve().parents[3]
CATALOG = load_training_catalog()
MIXTURES = ["code_sft_mixture", "tool_sft_mixture", "agent_sft_mixture", "code_dpo_mixture", "tool_dpo_mixture"]


def resolutions(base: str = "prefix") -> dict[str, Resolution]:
    out = {m: Resolution("key", f"mixtures/{m}/v1/train.jsonl", f"{m}-v1") for m in MIXTURES}
    out["base_model"] = (Resolution("hub", "Qwen/Qwen2.5-Coder-7B-Instruct", CATALOG.base_model.revision,
                                    revision=CATALOG.base_model.revision)
                         if base == "hub" else Resolution("prefix", "models/base_model/abc/model", "abc"))
    for s in CATALOG.stages:
        out[f"{s.asset}/adapter"] = Resolution("prefix", f"training/{s.name}/fp/adapter", f"{s.name}-fp")
        out[f"{s.asset}/merged"] = Resolution("prefix", f"training/{s.name}/fp/merged", f"{s.name}-fp")
    return out


def test_catalog_has_the_runbook_stages_in_order():
    assert [s.name for s in CATALOG.stages] == ["stage1", "stage1_5", "stage1_6", "stage2", "stage2_5"]
    assert [s.hub_repo for s in CATALOG.stages] == [
        "surrogate-1-coder-7b-v2-sft", "surrogate-1-coder-7b-v2-toolsft", "surrogate-1-coder-7b-v2-agent",
        # the last stage is a candidate: mvp_release promotes it to ...-v2-mvp after every gate passed
        "surrogate-1-coder-7b-v2-dpo", "surrogate-1-coder-7b-v2-mvp-candidate"]
    check_lora_shape(CATALOG)


def test_tiny_base_reads_no_mixture_built_from_a_checkpoint():
    # code_dpo_mixture holds pairs sampled from stage1_6_checkpoint (synth): a cycle otherwise.
    assert "code_dpo_mixture" not in CATALOG.base_model.tiny.tokenizer_mixtures
    assert "code_sft_mixture" in CATALOG.base_model.tiny.tokenizer_mixtures


def test_each_stage_depends_on_its_mixture_and_the_previous_checkpoint():
    deps = {s.name: upstream_assets(s.load_config()) for s in CATALOG.stages}
    assert deps == {
        "stage1": ["base_model", "code_sft_mixture"],
        "stage1_5": ["base_model", "stage1_checkpoint", "tool_sft_mixture"],
        "stage1_6": ["agent_sft_mixture", "base_model", "stage1_5_checkpoint"],
        "stage2": ["code_dpo_mixture", "stage1_6_checkpoint"],
        "stage2_5": ["stage2_checkpoint", "tool_dpo_mixture"],
    }
    # SFT stages continue the previous adapter; DPO stages start from the previous MERGED policy.
    refs = {s.name: stage_refs(s.load_config()) for s in CATALOG.stages}
    assert "stage1_checkpoint/adapter" in refs["stage1_5"]
    assert refs["stage2"][0] == "stage1_6_checkpoint/merged"
    assert refs["stage2_5"][0] == "stage2_checkpoint/merged"


def _diff_keys(a: dict, b: dict) -> set[str]:
    return {k for k in set(a) | set(b) if a.get(k) != b.get(k)}


@pytest.mark.parametrize("stage", CATALOG.stages, ids=lambda s: s.name)
def test_executors_differ_only_in_overridable_keys(stage):
    rendered = {ex: render_stage(stage, CATALOG, ex, resolutions()).config for ex in ("local", "subprocess", "k8s")}
    assert _diff_keys(rendered["subprocess"], rendered["k8s"]) == set()
    changed = _diff_keys(rendered["local"], rendered["subprocess"])
    assert changed and changed <= OVERRIDABLE
    for key in ("learning_rate", "lora_r", "lora_alpha", "peft_use_dora", "lora_target_modules", "datasets",
                "num_epochs", "lr_scheduler", "rl", "dpo_loss_type", "model_config"):
        assert rendered["local"].get(key) == rendered["k8s"].get(key), key
    local = rendered["local"]
    assert local["lora_mlp_kernel"] is False and local["bf16"] is False and "load_in_4bit" not in local
    assert local["plugins"] == ["surrogate_trainer.plugin.SurrogatePlugin"]
    assert not any(k.startswith("liger_") for k in local)


def test_overrides_cannot_touch_the_recipe():
    cfg = CATALOG.stage("stage2").load_config()
    for key, value in [("learning_rate", 1e-3), ("lora_r", 8), ("dpo_loss_type", ["sigmoid"]),
                       ("focused_dpo_weight", 1.0), ("datasets", [])]:
        with pytest.raises(RenderError, match="recipe"):
            apply_overrides(cfg, {key: value})
    with pytest.raises(RenderError, match="method"):
        apply_overrides(CATALOG.stage("stage1").load_config(), {"adapter": "full"})
    assert "bf16" not in apply_overrides(cfg, {"bf16": None})  # null deletes


def test_wiring_and_references_resolve():
    r = render_stage(CATALOG.stage("stage1_5"), CATALOG, "local", resolutions())
    assert r.config["base_model"] == "{work}/inputs/base_model"
    assert r.config["lora_model_dir"] == "{work}/inputs/stage1_checkpoint_adapter"
    assert r.config["datasets"][0]["path"] == "{work}/data/tool_sft_mixture.jsonl"
    assert r.config["datasets"][0]["ds_type"] == "json"
    assert {"prefix": "training/stage1/fp/adapter", "dest": "inputs/stage1_checkpoint_adapter"} in r.inputs
    assert r.config["save_steps"] == 2 and r.config["output_dir"] == "{work}/output"
    assert r.expected_reference is None
    prod = render_stage(CATALOG.stage("stage1"), CATALOG, "k8s", resolutions("hub"))
    assert prod.config["base_model"] == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert prod.config["revision_of_model"] == CATALOG.base_model.revision
    assert prod.config["save_steps"] == CATALOG.checkpoint_every_steps
    assert not any(i["dest"].startswith("inputs/base_model") for i in prod.inputs)


def test_dpo_reference_is_the_previous_merged_policy():
    for name, prev in [("stage2", "stage1_6_checkpoint"), ("stage2_5", "stage2_checkpoint")]:
        r = render_stage(CATALOG.stage(name), CATALOG, "k8s", resolutions("hub"))
        assert r.config["base_model"] == f"{{work}}/inputs/{prev}_merged"
        assert r.expected_reference == r.config["base_model"]
        assert "lora_model_dir" not in r.config
        assert r.refs[f"{prev}/merged"].startswith(prev.replace("_checkpoint", ""))
    assert CATALOG.stage("stage1_6").merge and CATALOG.stage("stage2").merge


def _catalog_with(tmp_path, stage_name: str, edit) -> object:
    raw = yaml.safe_load((ROOT / "assets/training.yaml").read_text())
    for s in raw["stages"]:
        cfg = yaml.safe_load((ROOT / "assets" / s["config"]).read_text())
        if s["name"] == stage_name:
            edit(cfg)
        path = tmp_path / f"{s['name']}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        s["config"] = str(path)  # absolute: ASSETS_DIR / abs == abs
    (tmp_path / "training.yaml").write_text(yaml.safe_dump(raw))
    return load_training_catalog(tmp_path / "training.yaml")


def test_refusals(tmp_path):
    drift = _catalog_with(tmp_path, "stage1_5", lambda c: c.update(lora_r=16))
    with pytest.raises(RenderError, match="LoRA settings differ"):
        check_lora_shape(drift)
    cont = _catalog_with(tmp_path, "stage2", lambda c: c.update(lora_model_dir="asset://stage1_6_checkpoint/adapter"))
    with pytest.raises(RenderError, match="cannot continue an adapter"):
        render_stage(cont.stage("stage2"), cont, "local", resolutions())
    wired = _catalog_with(tmp_path, "stage1", lambda c: c.update(hub_model_id="axentx/x"))
    with pytest.raises(RenderError, match="set by the pipeline"):
        render_stage(wired.stage("stage1"), wired, "local", resolutions())
    missing = resolutions()
    del missing["code_sft_mixture"]
    with pytest.raises(RenderError, match="not resolved"):
        render_stage(CATALOG.stage("stage1"), CATALOG, "local", missing)


def test_config_hash_is_the_recipe_and_fingerprint_adds_data():
    stage = CATALOG.stage("stage1")
    a = render_stage(stage, CATALOG, "local", resolutions())
    res = resolutions()
    res["code_sft_mixture"] = Resolution("key", "mixtures/x/v2/train.jsonl", "code-v2")
    b = render_stage(stage, CATALOG, "local", res)
    assert a.config_hash == b.config_hash == config_hash(stage, CATALOG, "local")
    assert a.fingerprint != b.fingerprint
    assert config_hash(stage, CATALOG, "local") != config_hash(stage, CATALOG, "k8s")


def test_pipeline_message_names_match_the_trainer_protocol():
    spec = importlib.util.spec_from_file_location("tp", ROOT / "trainer/surrogate_trainer/protocol.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tp"] = mod  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(mod)
    assert runs.MESSAGE_TYPES == mod.MESSAGE_TYPES
    assert mod.WORK_PLACEHOLDER == "{work}"


def test_profiles_and_k8s_pod_spec():
    local = training_profile(load_profile("local"))
    assert (local.executor, local.base_model, local.gpu_count) == ("local", "tiny", 0)
    host = training_profile(load_profile("production"))  # the one GPU host: a subprocess on its GPU
    assert (host.executor, host.base_model, host.gpu_count) == ("subprocess", "hub", 1)
    assert host.python == ".venv-trainer/bin/python" and host.k8s is None
    prod = training_profile(load_profile("cluster"))
    assert prod.executor == "k8s" and prod.gpu_count >= 1
    trainer = TrainerExecutorResource.from_profile(prod)
    from dagster_k8s.pipes import build_pod_body

    body = build_pod_body("stage1-run", prod.k8s.image, trainer.trainer_command(), {"DAGSTER_PIPES_CONTEXT": "x"},
                          None, trainer.pod_spec())
    container = body.spec.containers[0]
    assert container.image == prod.k8s.image
    assert container.command == ["python", "-m", "surrogate_trainer.run"]
    assert container.resources.limits["nvidia.com/gpu"] == "1"
    assert body.spec.node_selector == prod.k8s.node_selector
    assert body.spec.restart_policy == "Never"
    secret_vars = {e.name: e.value_from.secret_key_ref.name for e in container.env if e.value_from}
    assert secret_vars == {"HF_TOKEN": "surrogate-secrets", "WASABI_ACCESS_KEY": "surrogate-secrets",
                           "WASABI_SECRET": "surrogate-secrets"}
    assert {m.mount_path for m in container.volume_mounts} == {"/workspace", "/dev/shm"}
    assert trainer.run_work_dir("stage1", "abc") == "/workspace/training/stage1/abc"
