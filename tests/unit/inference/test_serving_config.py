"""The serving section of the profiles: the vllm serve command with the stages' adapter rank, bad sections
named by key, the transformers backend without a server (the managed server itself:
tests/integration/test_vllm_server.py)."""

import json
from pathlib import Path

import pytest
import yaml

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.inference import ModelRef
from surrogate_dagster.inference.config import ServingSection, serving_section
from surrogate_dagster.inference.resource import InferenceServerResource
from surrogate_dagster.inference.server import serve_command


REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------ command line from the profiles
def test_production_profile_builds_the_vllm_serve_command():
    prof = load_profile("production")
    sec = serving_section(prof.phases, prof.name)
    assert sec.managed and sec.vllm.external_url is None
    ref = ModelRef("stage1_checkpoint", "Qwen/Qwen2.5-Coder-7B-Instruct", adapter_dir="/mnt/ckpt/adapter",
                   model_revision="abc123")
    cmd = serve_command(sec.vllm.spec(), ref)
    assert cmd[:3] == [".venv-vllm/bin/vllm", "serve", "Qwen/Qwen2.5-Coder-7B-Instruct"]  # the host's vLLM env
    cluster = serving_section(load_profile("cluster").phases, "cluster")
    assert serve_command(cluster.vllm.spec(), ref)[0] == "/opt/vllm/bin/vllm"  # the GPU image's
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert flags["--port"] == "8000" and flags["--max-model-len"] == "131072"
    assert flags["--gpu-memory-utilization"] == "0.9" and flags["--revision"] == "abc123"
    i = cmd.index("--enable-lora")
    assert cmd[i + 1:i + 5] == ["--max-lora-rank", "64", "--lora-modules", "stage1_checkpoint=/mnt/ckpt/adapter"]
    assert json.loads(cmd[cmd.index("--hf-overrides") + 1])["rope_scaling"]["factor"] == 4.0
    base_only = serve_command(sec.vllm.spec(), ModelRef("base_model", "/mnt/base"))
    assert "--enable-lora" not in base_only and "--lora-modules" not in base_only
    # a checkpoint that carries its own rank is served with it
    assert "128" in serve_command(sec.vllm.spec(), ModelRef("x", "/b", adapter_dir="/a", max_lora_rank=128))


def test_profile_lora_rank_covers_every_stage_adapter():
    rank = serving_section(load_profile("production").phases).vllm.max_lora_rank
    stages = sorted((REPO / "assets" / "stages").glob("*.yaml"))
    assert stages
    for f in stages:
        r = yaml.safe_load(f.read_text()).get("lora_r")
        assert r is None or r <= rank, f"{f.name}: lora_r {r} > phases.serving.vllm.max_lora_rank {rank}"


def test_bad_serving_sections_fail_with_the_key():
    with pytest.raises(ValueError, match="phases.serving"):
        serving_section({"serving": {"backend": "vllm_server", "vllm": {"max_lora_rnk": 8}}}, "p")
    with pytest.raises(ValueError, match="command"):
        serving_section({"serving": {"backend": "vllm_server", "vllm": {"command": []}}}, "p")
    assert ServingSection.model_validate({"vllm": {"command": "vllm serve"}}).vllm.command == ["vllm", "serve"]


def test_transformers_backend_has_no_server():
    res = InferenceServerResource()
    assert not res.managed
    with pytest.raises(ValueError, match="no inference server"):
        res.server_for(ModelRef("x", "/x"))
