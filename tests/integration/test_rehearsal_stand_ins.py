"""The rehearsal's stand-ins, as `make rehearse` starts them: the pre-flight check on the rehearsal
profile is all green against them, every gated/auth path answers as the Hub does, and the S3 stand-in
refuses what Wasabi refuses. (`make rehearse` itself, the whole graph, runs in CI after the tests.)"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from surrogate_dagster.operations.rehearsal import (HF_TOKEN_ENV, S3_KEY_ENV, S3_SECRET_ENV, pinned_catalog_copy,
                                                   stand_ins)
from surrogate_dagster.paths import REPO_ROOT
from surrogate_dagster.training.config import load_training_catalog


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The rehearsal profile on free ports (the real one names 9301-9303), its stand-ins up."""
    tmp = tmp_path_factory.mktemp("rehearsal")
    s3, hub, llm = _free_port(), _free_port(), _free_port()
    profile = tmp / "rehearsal-test.yaml"
    profile.write_text(f"extends: rehearsal\nname: rehearsal-test\n"
                       f"object_store: {{endpoint_url: 'http://127.0.0.1:{s3}'}}\n"
                       f"hub: {{endpoint: 'http://127.0.0.1:{hub}'}}\n"
                       f"phases: {{llm: {{base_url: 'http://127.0.0.1:{llm}'}}}}\n")
    with stand_ins(str(profile), root=tmp / "root") as w:
        yield w, profile


def _cli(world, *args: str) -> subprocess.CompletedProcess:
    w, _ = world
    return subprocess.run([sys.executable, "-m", "surrogate_dagster.cli", *args], cwd=REPO_ROOT, env=w.env,
                          capture_output=True, text=True, timeout=600)


def test_pins_resolved_by_pin_revisions_then_preflight_is_all_green(world):
    w, profile = world
    catalog = pinned_catalog_copy(w)
    before = _cli(world, "preflight", "--profile", str(profile), "--catalog", str(catalog), "--skip", "gpu")
    assert before.returncode != 0 and "offline-mirror" in before.stdout  # the marked pins, as on the Hub
    pinned = _cli(world, "pin-revisions", "--all", "--profile", str(profile), "--catalog", str(catalog))
    assert pinned.returncode == 0, pinned.stdout[-2000:] + pinned.stderr[-2000:]
    assert "offline-mirror pin" not in catalog.read_text()
    out = _cli(world, "preflight", "--profile", str(profile), "--catalog", str(catalog))
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " 0 FAIL" in out.stdout and "hub.pin" in out.stdout and "s3.lifecycle" in out.stdout
    w, _ = world
    assert w.env[HF_TOKEN_ENV] not in out.stdout + out.stderr  # names only, never values


def test_a_bad_token_fails_preflight_naming_the_variable(world):
    w, profile = world
    bad = dict(w.env, **{HF_TOKEN_ENV: "hf_not_a_token_the_hub_knows_0000"})
    out = subprocess.run([sys.executable, "-m", "surrogate_dagster.cli", "preflight", "--profile", str(profile),
                          "--skip", "gpu"], cwd=REPO_ROOT, env=bad, capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    assert "FAIL" in out.stdout and HF_TOKEN_ENV in out.stdout
    assert "hf_not_a_token_the_hub_knows_0000" not in out.stdout + out.stderr


def test_the_s3_stand_in_refuses_checksum_headers_like_wasabi(world):
    w, _ = world
    session = boto3.session.Session(aws_access_key_id=w.env[S3_KEY_ENV], aws_secret_access_key=w.env[S3_SECRET_ENV],
                                    region_name="us-east-1")
    url = w.s3_proxy.endpoint_url
    default = session.client("s3", endpoint_url=url, config=Config(s3={"addressing_style": "path"}))
    with pytest.raises(ClientError, match="InvalidArgument|Unsupported"):
        default.put_object(Bucket="axentx-surrogate-1-data", Key="probe", Body=b"x")  # boto3's CRC32 default
    wasabi_safe = session.client("s3", endpoint_url=url, config=Config(
        request_checksum_calculation="when_required", response_checksum_validation="when_required",
        s3={"addressing_style": "path"}))
    wasabi_safe.put_object(Bucket="axentx-surrogate-1-data", Key="probe", Body=b"x")
    assert wasabi_safe.get_object(Bucket="axentx-surrogate-1-data", Key="probe")["Body"].read() == b"x"


def test_the_stand_in_hub_serves_the_production_model_ids(world):
    w, _ = world
    assert "bigcode/starpii" in w.models
    base = load_training_catalog().base_model
    assert w.models[base.hf_id] == base.revision  # the production pin resolves on the stand-in


def test_verify_pushes_loads_what_was_pushed_as_a_user_would(world, tmp_path):
    """`make rehearse`'s last step: every model of the org on the stand-in Hub, loaded through HF_ENDPOINT."""
    w, _ = world
    base = w.root / "hub" / "models" / load_training_catalog().base_model.hf_id
    push = subprocess.run([sys.executable, "-c", (
        "import os, sys; from huggingface_hub import HfApi; api = HfApi(token=os.environ[sys.argv[1]]); "
        "api.create_repo('axentx/verify-probe', private=True, exist_ok=True); "
        "api.upload_folder(repo_id='axentx/verify-probe', folder_path=sys.argv[2], "
        "ignore_patterns=['revision.txt', '@*'])"), HF_TOKEN_ENV, str(base)],
        cwd=REPO_ROOT, env=w.env, capture_output=True, text=True, timeout=300)
    assert push.returncode == 0, push.stderr[-3000:]
    out = tmp_path / "pushes.json"
    verify = subprocess.run([sys.executable, "-m", "surrogate_dagster.operations.rehearsal", "verify-pushes",
                             "--out", str(out)], cwd=REPO_ROOT, env=w.env, capture_output=True, text=True,
                            timeout=300)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-3000:]
    rows = {r["repo"]: r for r in json.loads(out.read_text())}
    assert rows["axentx/verify-probe"]["loaded_as"] == "AutoModelForCausalLM"
    assert rows["axentx/verify-probe"]["revision"] == w.hub.sha("axentx/verify-probe", "model")
