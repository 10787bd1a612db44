"""The managed inference server (inference/server.py) through the evals' resource, with the
transformers stand-in for `vllm serve` (inference/standin_server.py) over the tiny random Qwen2 and
a LoRA adapter: started by the step, ready on /health + /v1/models, greedy results identical to
in-process transformers, stopped with its whole process group on success, failure and interrupt;
a server that dies on start is reported with its scrubbed log tail; external servers are reused
and never stopped; the profiles build the vllm serve command with the stages' adapter rank."""


import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest
from dagster import AssetExecutionContext, asset, materialize

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.evals.resources import EvalSettings, eval_resources
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from surrogate_dagster.inference import GenRequest, ModelRef, TransformersInference
from surrogate_dagster.inference.config import ServingSection
from surrogate_dagster.inference.resource import InferenceServerResource, inference_resources
from surrogate_dagster.inference.server import ManagedServer, ServerSpec, ServerStartError
from tests.support.smoke_gate import gated_instance

STANDIN = [sys.executable, "-m", "surrogate_dagster.inference.standin_server"]
MSG = ({"role": "user", "content": "Write def add(a, b)"},)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _gone(pgid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny"), max_positions=256)


@pytest.fixture(scope="module")
def adapter(tiny, tmp_path_factory):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny),
                                LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "o_proj"]))
    torch.manual_seed(1)
    for name, p in peft_model.named_parameters():
        if "lora_B" in name:  # B starts at zero (a no-op adapter): make it change the outputs
            torch.nn.init.normal_(p, std=2.0)
    out = tmp_path_factory.mktemp("adapter") / "adapter"
    peft_model.save_pretrained(out)
    return out


def _vllm_section(tmp_path: Path, **kw) -> dict:
    return {"backend": "vllm_server",
            "vllm": {"command": STANDIN, "port": _free_port(), "max_context": 256, "startup_timeout_s": 90,
                     "stop_timeout_s": 10, "log_dir": str(tmp_path / "serving"), **kw}}


def _spec(tmp_path: Path, **kw) -> ServerSpec:
    return ServingSection.model_validate(_vllm_section(tmp_path, **kw)).vllm.spec()


def test_profiles_select_the_backend_and_plumb_the_rank(tiny):
    local, prod = load_profile("local"), load_profile("production")
    assert not inference_resources(local)["inference_server"].managed
    assert inference_resources(prod)["inference_server"].managed
    ev = eval_resources(prod)["evals"]
    assert ev.serving().managed and ev.profile().inference.backend == "vllm_server"
    ref = EvalSettings(offline=True, model_dirs={"ckpt": str(tiny)}, serving_json=ev.serving_json).model_ref(None, "ckpt")
    assert ref.max_lora_rank == 64
    assert eval_resources(local)["evals"].serving().backend == "transformers"


# ------------------------------------------------------------------ start / generate / stop
def test_the_step_starts_the_server_generates_and_stops_it(tiny, adapter, tmp_path):
    """Dagster runs the asset; the resource starts the stand-in for the checkpoint (base + LoRA,
    served by name), generation matches in-process transformers token for token, and the step's
    resource teardown leaves no process behind, for a failing step too."""
    section = _vllm_section(tmp_path)
    ref = ModelRef("stage1_checkpoint", str(tiny), adapter_dir=str(adapter), max_lora_rank=8)
    reqs = [GenRequest(messages=MSG, max_new_tokens=12), GenRequest(raw_prompt="def add(a, b):", max_new_tokens=8)]
    seen: dict = {}

    @asset
    def served(context: AssetExecutionContext, evals: EvalSettings) -> None:
        client = evals.client(ref)
        seen["pid"] = evals.running_server.pid
        seen["texts"] = [r.text for r in client.generate(reqs)]
        seen["served_name"] = client.served_name
        base_url = evals.running_server.base_url
        seen["models"] = [m["id"] for m in httpx.get(f"{base_url}/v1/models").json()["data"]]
        chat = httpx.post(f"{base_url}/v1/chat/completions", json={
            "model": "stage1_checkpoint", "messages": list(MSG), "max_tokens": 12, "temperature": 0}).json()
        seen["chat"] = chat["choices"][0]["message"]["content"]
        assert evals.client(ref) is not None and evals.running_server.pid == seen["pid"]  # same checkpoint: reused
        if context.run.tags.get("fail"):
            raise RuntimeError("the step fails after the server started")

    evals = EvalSettings(serving_json=json.dumps(section),
                         **{"offline": True, "inference": {"backend": "vllm_server"}})
    res = materialize([served], resources={"evals": evals})
    assert res.success
    assert not _group_alive(seen["pid"])
    local = TransformersInference(ref, batch_size=1)
    assert seen["texts"] == [r.text for r in local.generate(reqs)]
    assert seen["chat"] == seen["texts"][0]
    assert seen["served_name"] == "stage1_checkpoint" and seen["models"] == [str(tiny), "stage1_checkpoint"]
    log = next((tmp_path / "serving").glob("*.log")).read_text()
    assert "GET /health" in log and "POST /v1/completions" in log

    seen.clear()
    res = materialize([served], resources={"evals": evals}, tags={"fail": "1"}, raise_on_error=False)
    assert not res.success and seen["pid"]
    assert not _group_alive(seen["pid"])


def test_interrupt_kills_the_whole_process_group(tiny, tmp_path):
    """vLLM forks engine workers: a child the server started must die with it (KeyboardInterrupt)."""
    cmd = ["bash", "-c", 'sleep 300 & exec "$@"', "serve", *STANDIN]
    spec = _spec(tmp_path, command=cmd)
    srv = ManagedServer(spec, ModelRef("tiny", str(tiny)), log=lambda s: None)
    with pytest.raises(KeyboardInterrupt):
        with srv:
            pgid = srv.pid
            assert _group_alive(pgid)
            raise KeyboardInterrupt
    assert _gone(pgid), "a process of the server's group survived stop()"


def test_a_server_that_dies_on_start_gives_its_scrubbed_log_tail(tmp_path, monkeypatch):
    secret = "hf_" + "q" * 30 + "Zx9"
    monkeypatch.setenv("HF_TOKEN", secret)
    missing = tmp_path / f"no-such-model-{secret}"
    spec = _spec(tmp_path)
    srv = ManagedServer(spec, ModelRef("broken", str(missing)), log=lambda s: None)
    with pytest.raises(ServerStartError) as info:
        srv.start()
    msg = str(info.value)
    assert "exited with status" in msg and "last 40 log lines" in msg
    assert "Traceback" in msg or "Error" in msg  # the server's own explanation is in the tail
    assert secret not in msg and secret not in srv.log_file.read_text()
    assert srv.pid is None and _gone(srv.last_pid)


def test_a_server_that_never_gets_ready_times_out_and_is_killed(tmp_path):
    # answers nothing on the port: a hung start-up
    spec = _spec(tmp_path, command=[sys.executable, "-c", "import time; time.sleep(120)"], startup_timeout_s=2)
    srv = ManagedServer(spec, ModelRef("hung", "/nowhere"), log=lambda s: None, poll_s=0.2)
    with pytest.raises(ServerStartError, match="not ready after 2s"):
        srv.start()
    assert srv.last_pid and srv.pid is None
    assert _gone(srv.last_pid)


def test_external_url_is_reused_and_never_stopped(tiny, tmp_path):
    spec = _spec(tmp_path)
    ref = ModelRef("tiny", str(tiny))
    with ManagedServer(spec, ref, log=lambda s: None) as owner:
        ext = ServingSection.model_validate({"backend": "vllm_server",
                                             "vllm": {"external_url": owner.base_url, "startup_timeout_s": 5}})
        res = InferenceServerResource(serving_json=ext.model_dump_json())
        srv = res.server_for(ref)
        assert srv.base_url == owner.base_url and srv.pid is None
        res.stop_server()
        assert _group_alive(owner.pid)  # not ours to stop
        with pytest.raises(ServerStartError, match="does not serve 'other'"):
            res.server_for(ModelRef("other", "/x", adapter_dir="/a"))
        # the port is taken: a second managed server says so instead of failing obscurely
        with pytest.raises(ServerStartError, match="already in use"):
            ManagedServer(spec, ref, log=lambda s: None).start()
    assert _gone(owner.last_pid)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX process groups")
def test_a_server_ignoring_sigterm_is_killed(tmp_path):
    """stop() escalates to SIGKILL after stop_timeout_s (a wedged engine)."""
    script = ("import signal, time, http.server, sys\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "port = int(sys.argv[sys.argv.index('--port') + 1])\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        body = b'{\"data\": [{\"id\": \"/m\"}]}' if self.path == '/v1/models' else b''\n"
              "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
              "        self.wfile.write(body)\n"
              "http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()\n")
    spec = _spec(tmp_path, command=[sys.executable, "-c", script], stop_timeout_s=1)
    lines: list[str] = []
    with ManagedServer(spec, ModelRef("m", "/m"), log=lines.append) as srv:
        pgid = srv.pid
    assert _gone(pgid)
    assert any("SIGKILL" in line for line in lines)


def test_exec_graded_pairs_samples_from_the_managed_server(tmp_path, monkeypatch):
    """synth's exec_graded_pairs with backend vllm_server and a managed serving section: the step
    starts the server for the checkpoint, samples n per prompt through it, and stops it."""
    from tests.integration.test_synth_assets import _curated, llm_resource, resources

    from surrogate_dagster.synth import exec_pairs
    from surrogate_dagster.synth.assets import exec_graded_pairs
    from surrogate_dagster.synth.resource import SynthSettings

    _curated(tmp_path)
    model = build_tiny_qwen2(tmp_path / "model", max_positions=512)
    seen: dict = {}
    real = exec_pairs.make_sampler

    def sampler(ref, cfg):
        seen["cfg"] = cfg
        return real(ref, cfg)

    monkeypatch.setattr(exec_pairs, "make_sampler", sampler)
    res = resources(tmp_path, llm_resource("local"), model_dir=str(model), max_devsecops_prompts=1,
                    backend="vllm_server", base_url="http://127.0.0.1:9", max_new_tokens=16, samples_per_prompt=2)
    section = _vllm_section(tmp_path, max_context=512)
    res["synth"] = SynthSettings(**{**res["synth"].model_dump(), "serving_json": json.dumps(section)})
    result = materialize([exec_graded_pairs], resources=res, instance=gated_instance())
    assert result.success
    port = section["vllm"]["port"]
    assert seen["cfg"].base_url == f"http://127.0.0.1:{port}" and seen["cfg"].served_name == str(model)
    log = next((tmp_path / "serving").glob("*.log")).read_text()
    assert log.count("POST /v1/completions") == 3  # one request (n=2) per prompt with tests
    with socket.socket() as s:  # stopped: the port is free again
        s.bind(("127.0.0.1", port))
