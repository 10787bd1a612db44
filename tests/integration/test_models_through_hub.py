"""Production's models load THROUGH a Hub: the local Hub server serves the rehearsal stand-ins
(operations/rehearsal_models.py) under production's repo ids, and the curation steps' own loaders
(``curation_sanitizer`` with ``hf:bigcode/starpii``, the ``stack-edu`` filter block) fetch them
into an empty cache with the rehearsal profile's hub settings, then tag and score rows. The Hub's
refusals (gated terms not accepted, no token, a rejected token, an unknown revision, an endpoint
nobody listens on) read as ModelFetchError messages without the token. The base model loads with
``AutoModelForCausalLM.from_pretrained`` at the production pin, HF_ENDPOINT being the only pointer
to the server (a fresh interpreter: transformers reads it at import)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from surrogate_dagster.catalog.loader import load_profile
from surrogate_dagster.curation.quality.edu_classifier import STACK_EDU_MODELS, StackEduClassifier
from surrogate_dagster.curation.resource import curation_resources
from surrogate_dagster.hub.local_server import HubServer, HubUser
from surrogate_dagster.hub.model_cache import ModelFetchError, ModelSource, fetch_model
from surrogate_dagster.operations.rehearsal_models import STARPII_ID, build_rehearsal_models
from surrogate_dagster.training.config import load_training_catalog

TOKEN = "hf_rehearsal_models_token_0123456789abcdef"
OTHER = "hf_rehearsal_models_no_terms_token_987654321"
STARPII = STARPII_ID
EDU_PY = STACK_EDU_MODELS["python"]
BASE = load_training_catalog().base_model


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The stand-ins behind a server; StarPII gated as on the Hub: `rehearsal` accepted its terms,
    `newcomer` did not."""
    tmp = tmp_path_factory.mktemp("models_hub")
    shas = build_rehearsal_models(tmp / "models")
    users = [HubUser("rehearsal", TOKEN, orgs={"axentx": "admin"}, accepted={STARPII}),
             HubUser("newcomer", OTHER)]
    with HubServer(None, users, gated={STARPII: "manual"}, models_dir=tmp / "models") as server:
        yield server, shas


@pytest.fixture
def online(monkeypatch):
    """The tests' guard against the real Hub (HF_HUB_OFFLINE, read by huggingface_hub at import)
    lifted for the local server these tests name explicitly."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    for var in ("HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


def rehearsal_source(server: HubServer, work_dir: Path) -> ModelSource:
    """The model source the rehearsal profile's curation resource gives, its endpoint moved to
    this server's port and its work dir to a temp dir."""
    profile = load_profile("rehearsal")
    curation = {**profile.phases["curation"], "work_dir": str(work_dir)}
    profile = profile.model_copy(update={"hub": profile.hub.model_copy(update={"endpoint": server.url}),
                                         "phases": {**profile.phases, "curation": curation}})
    return curation_resources(profile)["curation"].model_source()


def downloads(server: HubServer, repo_id: str, since: int = 0) -> list[str]:
    """Paths of the files of `repo_id` the server sent (GET resolve, 200) after request `since`."""
    return [p for m, p, s in server.requests[since:] if m == "GET" and s == 200 and p.startswith(f"/{repo_id}/resolve/")]


def test_starpii_loads_through_the_hub_into_an_empty_cache_and_tags(hub, online, monkeypatch, tmp_path):
    from surrogate_dagster.curation.assets import CURATION, curation_sanitizer

    server, shas = hub
    monkeypatch.setenv("REHEARSAL_HF_TOKEN", TOKEN)
    source = rehearsal_source(server, tmp_path / "work")
    assert source.token_env == "REHEARSAL_HF_TOKEN" and source.cache_dir == str(tmp_path / "work" / "hf-models")
    assert not Path(source.cache_dir).exists()
    before = len(server.requests)
    sanitizer = curation_sanitizer(tuple(CURATION.sanitize.categories), f"hf:{STARPII}", source)
    assert sanitizer.ner_backend.name == f"hf:{STARPII}"
    got = downloads(server, STARPII, before)
    assert any(p.endswith("/model.safetensors") for p in got) and any(p.endswith("/tokenizer.json") for p in got)
    assert all(f"/resolve/{shas[STARPII]}/" in p for p in got)  # main resolved once, files read at its sha
    snapshot = Path(source.cache_dir) / "models--bigcode--starpii" / "snapshots" / shas[STARPII]
    assert (snapshot / "config.json").is_file()
    assert json.loads((snapshot / "config.json").read_text())["id2label"]["9"] == "B-NAME"
    rows = ["Thanks, Ada Lovelace wrote this.", "Ship it to 221 Baker Street, London.", "def f(x):\n    return x"]
    assert sanitizer.ner_backend.tag(rows) == [[], [], []]  # the stand-in tags nothing ...
    out = [sanitizer.sanitize(r).text for r in rows]
    assert "Ada Lovelace" in out[0]  # ... so no name is redacted on its word
    assert "221 Baker Street" not in out[1]  # the street rule still applies
    assert out[2] == rows[2]
    # a second load finds every file in the cache: nothing is downloaded again
    again = len(server.requests)
    fetch_model(STARPII, None, source)
    assert downloads(server, STARPII, again) == []


def test_stack_edu_scorer_loads_through_the_hub_and_scores(hub, online, monkeypatch, tmp_path):
    from surrogate_dagster.curation.assets import _filter_blocks

    server, shas = hub
    monkeypatch.setenv("REHEARSAL_HF_TOKEN", TOKEN)
    source = rehearsal_source(server, tmp_path / "work")
    edu = _filter_blocks("stack-edu", 3.0, source)[2]
    assert isinstance(edu.scorer, StackEduClassifier)
    code = "def double(x):\n    # twice x\n    return x * 2\n\n\nprint(double(21))\n"
    rows = [{"kind": "sft", "messages": [{"role": "user", "content": "double"},
                                         {"role": "assistant", "content": f"```python\n{code}```"}]},
            {"kind": "sft", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]}]
    before = len(server.requests)
    assert edu.row_scores(rows) == [pytest.approx(3.5), None]
    assert [edu.decide(r) for r in rows] == [None, None]  # 3.5 >= production's threshold 3
    assert any(p.endswith("/model.safetensors") for p in downloads(server, EDU_PY, before))
    assert (Path(source.cache_dir) / f"models--{EDU_PY.replace('/', '--')}" / "snapshots" / shas[EDU_PY]).is_dir()


def test_gated_model_without_accepted_terms_says_where_to_accept(hub, online, monkeypatch, tmp_path):
    server, _ = hub
    source = ModelSource(endpoint=server.url, token_env="MODELS_HUB_TEST_TOKEN", cache_dir=str(tmp_path / "c"))
    monkeypatch.setenv("MODELS_HUB_TEST_TOKEN", OTHER)
    with pytest.raises(ModelFetchError) as info:
        fetch_model(STARPII, None, source)
    text = str(info.value)
    assert "has not accepted its terms" in text and f"https://huggingface.co/{STARPII}" in text
    assert OTHER not in text and OTHER not in repr(info.value.__cause__)
    monkeypatch.delenv("MODELS_HUB_TEST_TOKEN")
    with pytest.raises(ModelFetchError, match=r"\$MODELS_HUB_TEST_TOKEN is not set"):
        fetch_model(STARPII, None, source)


def test_rejected_token_unknown_revision_and_dead_endpoint(hub, online, monkeypatch, tmp_path):
    server, _ = hub
    source = ModelSource(endpoint=server.url, token_env="MODELS_HUB_TEST_TOKEN", cache_dir=str(tmp_path / "c"))
    bad = "hf_not_a_token_the_server_knows_0000"
    monkeypatch.setenv("MODELS_HUB_TEST_TOKEN", bad)
    with pytest.raises(ModelFetchError, match=r"token in \$MODELS_HUB_TEST_TOKEN was rejected") as info:
        fetch_model(EDU_PY, None, source)
    assert bad not in str(info.value)
    monkeypatch.setenv("MODELS_HUB_TEST_TOKEN", TOKEN)
    with pytest.raises(ModelFetchError, match="has no revision 'no-such-branch'"):
        fetch_model(EDU_PY, "no-such-branch", source)
    with socket.socket() as s:  # a port nobody listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = ModelSource(endpoint=f"http://127.0.0.1:{port}", token_env="MODELS_HUB_TEST_TOKEN",
                       cache_dir=str(tmp_path / "c"))
    with pytest.raises(ModelFetchError, match=f"cannot reach the Hub at http://127.0.0.1:{port}"):
        fetch_model(EDU_PY, None, dead)


def test_base_model_loads_at_the_production_pin_through_the_hub(hub, tmp_path):
    server, shas = hub
    assert shas[BASE.hf_id] == BASE.revision
    env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0",
           "HF_HOME": str(tmp_path / "hf_home"), "HF_TOKEN": TOKEN, "HF_HUB_DISABLE_TELEMETRY": "1"}
    code = textwrap.dedent(f"""
        import json
        from transformers import AutoModelForCausalLM, AutoTokenizer
        model = AutoModelForCausalLM.from_pretrained("{BASE.hf_id}", revision="{BASE.revision}")
        tok = AutoTokenizer.from_pretrained("{BASE.hf_id}", revision="{BASE.revision}")
        text = tok.apply_chat_template([{{"role": "user", "content": "hi"}}], tokenize=False,
                                       add_generation_prompt=True)
        print(json.dumps({{"type": type(model).__name__, "template": text}}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert TOKEN not in proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["type"] == "Qwen2ForCausalLM"
    assert out["template"].endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert any(p.startswith(f"/{BASE.hf_id}/resolve/{BASE.revision}/model.safetensors")
               for p in downloads(server, BASE.hf_id))
