"""transformers and peft load models from the local Hub with HF_ENDPOINT as the only pointer to it:
a tiny Qwen2 written in a models_dir (``<org>/<name>/revision.txt`` + files) loads by repo id and
sha, and a LoRA adapter pushed through the API loads on top of its base, another repo on the server.

The libraries read HF_ENDPOINT at import, so each client runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from surrogate_dagster.hub.local_server import HubServer, HubUser

TOKEN = "hf_local_transformers_token_0123456789abcdef"
BASE = "tiny-org/tiny-qwen2"
BASE_SHA = "ab" * 20
ADAPTER = "axentx/tiny-qwen2-lora"


def write_tiny_qwen2(models_dir: Path) -> Path:
    """A 2-layer Qwen2 with 16-wide hidden states, saved by save_pretrained at BASE, main = BASE_SHA."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    root = models_dir / BASE
    cfg = Qwen2Config(vocab_size=128, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).save_pretrained(root)
    (root / "revision.txt").write_text(BASE_SHA + "\n")
    return root


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hub")
    write_tiny_qwen2(tmp / "models")
    users = [HubUser("alice", TOKEN, orgs={"axentx": "admin", "tiny-org": "admin"})]
    with HubServer(None, users, models_dir=tmp / "models", push_dir=tmp / "push") as server:
        yield server, tmp


def run_client(server: HubServer, tmp: Path, code: str) -> dict:
    """Run ``code`` in a fresh interpreter pointed at the server; it prints one JSON line last."""
    env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp / "hf_home"),
           "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": TOKEN, "TRANSFORMERS_OFFLINE": "0",
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert TOKEN not in proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_auto_classes_load_a_tiny_qwen2_by_repo_id_and_sha(hub):
    server, tmp = hub
    out = run_client(server, tmp, f"""
        import json, torch
        from transformers import AutoConfig, AutoModelForCausalLM
        cfg = AutoConfig.from_pretrained("{BASE}", revision="{BASE_SHA}")
        model = AutoModelForCausalLM.from_pretrained("{BASE}", revision="{BASE_SHA}")
        local = AutoModelForCausalLM.from_pretrained("{tmp / 'models' / BASE}")
        same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), local.state_dict().values()))
        print(json.dumps({{"type": type(model).__name__, "hidden": cfg.hidden_size, "layers": cfg.num_hidden_layers,
                          "same": same, "n": len(model.state_dict())}}))
    """)
    assert out == {"type": "Qwen2ForCausalLM", "hidden": 16, "layers": 2, "same": True, "n": out["n"]}
    assert out["n"] > 0
    paths = [p for _, p, status in server.requests if status == 200]
    assert any(p.startswith(f"/{BASE}/resolve/{BASE_SHA}/model.safetensors") for p in paths)


def test_unknown_revision_of_a_model_fails_with_revision_not_found(hub):
    server, tmp = hub
    out = run_client(server, tmp, f"""
        import json
        from huggingface_hub.errors import RevisionNotFoundError
        from transformers import AutoConfig
        try:
            AutoConfig.from_pretrained("{BASE}", revision="{'cd' * 20}")
            print(json.dumps({{"raised": None}}))
        except Exception as e:
            cause = e
            while cause is not None and not isinstance(cause, RevisionNotFoundError):
                cause = cause.__cause__ or cause.__context__
            print(json.dumps({{"raised": type(e).__name__, "revision_not_found": cause is not None,
                              "message": str(e)[:300]}}))
    """)
    assert out["raised"] is not None and ("revision" in out["message"].lower() or out["revision_not_found"])


def test_peft_adapter_pushed_through_the_api_loads_on_its_base_from_the_server(hub):
    server, tmp = hub
    out = run_client(server, tmp, f"""
        import json, tempfile, torch
        from huggingface_hub import HfApi
        from peft import AutoPeftModelForCausalLM, LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        base = AutoModelForCausalLM.from_pretrained("{BASE}", revision="{BASE_SHA}")
        x = torch.tensor([[1, 2, 3, 4]])
        with torch.no_grad():
            plain = base(x).logits
        torch.manual_seed(1)
        lora = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"],
                                               init_lora_weights=False))
        with torch.no_grad():
            want = lora(x).logits
        api = HfApi()
        api.create_repo("{ADAPTER}", private=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as d:
            lora.save_pretrained(d)
            cfg = json.load(open(d + "/adapter_config.json"))
            info = api.upload_folder(repo_id="{ADAPTER}", folder_path=d, commit_message="adapter")
        loaded = AutoPeftModelForCausalLM.from_pretrained("{ADAPTER}", revision=info.oid)
        with torch.no_grad():
            got = loaded(x).logits
        print(json.dumps({{"base": cfg["base_model_name_or_path"], "close": bool(torch.allclose(want, got, atol=1e-5)),
                          "adapter_matters": bool(not torch.allclose(plain, got, atol=1e-5)),
                          "sha": info.oid, "private": api.model_info("{ADAPTER}").private}}))
    """)
    assert out["base"] == BASE
    assert out["close"] is True and out["adapter_matters"] is True
    assert out["private"] is True
    assert out["sha"] == server.sha(ADAPTER, "model")
    assert (tmp / "push" / "models" / ADAPTER / "adapter_model.safetensors").is_file()
