"""Pre-flight rehearsed against local servers: the local Hub (fixtures/hub), moto S3 and the local
Messages API, driven by the real huggingface_hub, boto3 and anthropic clients. The rehearsal is
all green with `--skip gpu`; each provoked failure shows as its own FAIL row while every other row
keeps its rehearsal status."""

from __future__ import annotations

import shutil
from pathlib import Path

import huggingface_hub.constants
import pytest
import yaml

from surrogate_dagster.catalog.pins import pin_sources
from surrogate_dagster.cli import main as cli_main
from surrogate_dagster.hub.client import OnlineHub
from surrogate_dagster.hub.local_server import HubServer, HubUser
from surrogate_dagster.llm.local_server import MessagesServer
from surrogate_dagster.operations.preflight import (FAIL, OK, SKIP, Row, exit_code, gpu_rows, render_table,
                                                     run_preflight)
from surrogate_dagster.paths import ASSETS_DIR, REPO_ROOT
from surrogate_dagster.storage.s3_maintenance import ensure_abort_incomplete_rule
from tests.support.s3_server import TEST_ACCESS_KEY_ENV, TEST_SECRET_KEY_ENV, moto_s3_server

HF_ENV, LLM_ENV = "SURROGATE_TEST_HF_TOKEN", "SURROGATE_TEST_ANTHROPIC_KEY"
ALICE = "hf_alice_rehearsal_token_0123456789abcdef"    # accepted the gated repo's terms
BOB = "hf_bob_rehearsal_token_0123456789abcdef"        # has not
LLM_KEY = "sk-ant-rehearsal-key-0123456789abcdef0123"
GATED = "Salesforce/xlam-function-calling-60k"
MODELS = ["claude-opus-5-5", "claude-sonnet-5-5"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    users = [HubUser("alice", ALICE, is_pro=True, orgs={"axentx": "admin"}, accepted={GATED}),
             HubUser("bob", BOB, is_pro=True, orgs={"axentx": "write"})]
    with HubServer(REPO_ROOT / "fixtures" / "hub", users, gated={GATED: "manual"}) as hub, \
            MessagesServer(api_key=LLM_KEY, models=MODELS) as llm, moto_s3_server() as s3:
        bucket = s3.create_bucket("axentx-rehearsal")
        ensure_abort_incomplete_rule(s3.raw_client(), bucket)
        tmp = tmp_path_factory.mktemp("preflight")
        yield {"hub": hub, "llm": llm, "s3": s3, "bucket": bucket, "tmp": tmp}


@pytest.fixture
def env(servers, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # conftest sets offline
    monkeypatch.setenv("HF_ENDPOINT", servers["hub"].url)
    monkeypatch.setenv(HF_ENV, ALICE)
    monkeypatch.setenv(LLM_ENV, LLM_KEY)
    return servers


@pytest.fixture
def pinned_catalog(env, tmp_path):
    """assets/sources.yaml pinned to the local Hub's commits by pin-revisions' own code."""
    path = tmp_path / "sources.yaml"
    shutil.copyfile(ASSETS_DIR / "sources.yaml", path)
    text = path.read_text()
    names = [e["name"] for sec in ("sources", "helpers") for e in yaml.safe_load(text)[sec]]
    pin_sources(path, OnlineHub("axentx", HF_ENV), names, "main", offline=False)
    assert "offline-mirror pin" not in path.read_text()
    return path


def write_profile(servers, tmp_path, bucket=None, llm=None) -> Path:
    prof = {
        "name": "rehearsal",
        "object_store": {"kind": "s3", "bucket": bucket or servers["bucket"], "endpoint_url": servers["s3"].endpoint_url,
                         "region": "us-east-1", "access_key_env": TEST_ACCESS_KEY_ENV,
                         "secret_key_env": TEST_SECRET_KEY_ENV},
        "hub": {"mode": "online", "token_env": HF_ENV, "org": "axentx"},
        "phases": {"llm": {"base_url": servers["llm"].url, "api_key_env": LLM_ENV, "budget_usd": 200, **(llm or {})},
                   "training": {"executor": "k8s", "gpu_count": 1, "work_dir": str(tmp_path)},
                   "serving": {"backend": "vllm_server", "vllm": {"command": ["/opt/vllm/bin/vllm", "serve"]}}},
    }
    path = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}.yaml"
    path.write_text(yaml.safe_dump(prof))
    return path


def preflight(capsys, profile: Path, catalog: Path, *skip: str) -> tuple[int, str, list[Row]]:
    """The rows of one pre-flight run, its table and exit code (printed, for -s)."""
    from surrogate_dagster.catalog import load_profile

    rows = run_preflight(load_profile(profile), skip=skip, sources_path=catalog)
    out = render_table(rows)
    print(out)
    for secret in (ALICE, BOB, LLM_KEY):
        assert secret not in out
    return exit_code(rows), out, rows


def green_catalog(profile: Path) -> Path:
    """The pinned catalog (pinned_catalog) written beside the test's profiles."""
    return profile.parent / "sources.yaml"


def statuses(rows):
    return {(r.check, r.target): r.status for r in rows}


def assert_only(rows, green, failed: set[str], skipped: set[str] = frozenset()):
    """Rows of the `failed` checks FAIL, of `skipped` skip; every other row as in the green run."""
    got, want = statuses(rows), statuses(green)
    assert set(got) == set(want)
    for key, status in got.items():
        if key[0] in failed:
            assert status == FAIL, key
        elif key[0] in skipped:
            assert status == SKIP, key
        else:
            assert status == want[key], key
    assert {k[0] for k, s in got.items() if s == FAIL} == failed


@pytest.fixture
def green(env, pinned_catalog, tmp_path, capsys):
    profile = write_profile(env, tmp_path)
    rc, out, rows = preflight(capsys, profile, pinned_catalog, "gpu")
    return rc, out, rows, profile


def test_rehearsal_all_green(green, capsys):
    rc, out, rows, profile = green
    assert rc == 0, out
    code = cli_main(["preflight", "--profile", str(profile), "--catalog", str(green_catalog(profile)),
                     "--skip", "gpu"])
    printed = capsys.readouterr().out
    print(printed)
    assert code == 0 and "0 FAIL" in printed and ALICE not in printed and LLM_KEY not in printed
    assert not [r for r in rows if r.status == FAIL]
    checks = {r.check for r in rows if r.status == OK}
    assert {"hf.token", "hf.org_write", "hf.plan", "hub.pin", "hub.gated_terms", "s3.bucket", "s3.lifecycle",
            "anthropic.key", "anthropic.model", "llm.budget"} <= checks
    assert [r.target for r in rows if r.check == "hub.gated_terms"] == [GATED]
    assert sum(r.check == "hub.pin" for r in rows) == 26
    assert all(r.status == SKIP for r in rows if r.check.startswith("gpu."))


def test_offline_mirror_pins_fail_with_the_fix(green, capsys):
    _, _, rows_green, profile = green
    rc, out, rows = preflight(capsys, profile, ASSETS_DIR / "sources.yaml", "gpu")
    assert rc == 1
    pins = [r for r in rows if r.check == "hub.pin"]
    assert pins and all(r.status == FAIL and "pin-revisions" in r.detail for r in pins)
    assert any("offline-mirror pin" in r.detail for r in pins)
    others = [r for r in rows if r.check not in ("hub.pin", "hub.gated_terms")]
    assert all(r.status != FAIL for r in others)


def test_bad_hf_token(green, capsys, monkeypatch):
    _, _, rows_green, profile = green
    monkeypatch.setenv(HF_ENV, "hf_not_a_real_token_for_this_hub_0123456789")
    rc, out, rows = preflight(capsys, profile, green_catalog(profile), "gpu")
    assert rc == 1 and "hf_not_a_real_token" not in out
    assert_only(rows, rows_green, failed={"hf.token"}, skipped={"hf.org_write", "hf.plan", "hub.gated_terms"})
    assert "Invalid user token" in next(r.detail for r in rows if r.check == "hf.token")


def test_missing_bucket(green, env, capsys, tmp_path):
    _, _, rows_green, _ = green
    profile = write_profile(env, tmp_path, bucket="axentx-no-such-bucket")
    rc, out, rows = preflight(capsys, profile, green_catalog(profile), "gpu")
    assert rc == 1
    got = {r.check: r for r in rows}
    assert got["s3.bucket"].status == FAIL and "no such bucket" in got["s3.bucket"].detail
    assert got["s3.lifecycle"].status == SKIP
    assert {r.check for r in rows if r.status == FAIL} == {"s3.bucket"}
    assert [r.status for r in rows if not r.check.startswith("s3.")] == \
        [r.status for r in rows_green if not r.check.startswith("s3.")]


def test_gated_terms_not_accepted(green, capsys, monkeypatch):
    _, _, rows_green, profile = green
    monkeypatch.setenv(HF_ENV, BOB)
    rc, out, rows = preflight(capsys, profile, green_catalog(profile), "gpu")
    assert rc == 1
    assert_only(rows, rows_green, failed={"hub.gated_terms"})
    row = next(r for r in rows if r.check == "hub.gated_terms")
    assert row.target == GATED and "has not accepted the terms" in row.detail


def test_unknown_anthropic_model(green, env, capsys, tmp_path):
    _, _, rows_green, _ = green
    llm = {"models": {"planner": "claude-opus-9-nonexistent"},
           "prices_per_mtok": {"claude-opus-9-nonexistent": {"input": 1.0, "output": 1.0}}}
    profile = write_profile(env, tmp_path, llm=llm)
    rc, out, rows = preflight(capsys, profile, green_catalog(profile), "gpu")
    assert rc == 1
    bad = [r for r in rows if r.status == FAIL]
    assert [(r.check, r.target) for r in bad] == [("anthropic.model", "claude-opus-9-nonexistent")]
    assert "planner" in bad[0].detail
    assert all(r.status == OK for r in rows if r.check == "anthropic.model" and r is not bad[0])
    assert [r.status for r in rows if not r.check.startswith("anthropic.")] == \
        [r.status for r in rows_green if not r.check.startswith("anthropic.")]


def test_wrong_anthropic_key(green, capsys, monkeypatch):
    _, _, rows_green, profile = green
    monkeypatch.setenv(LLM_ENV, "sk-ant-wrong-key-0123456789abcdef012345")
    rc, out, rows = preflight(capsys, profile, green_catalog(profile), "gpu")
    assert rc == 1 and "sk-ant-wrong" not in out
    assert_only(rows, rows_green, failed={"anthropic.key"}, skipped={"anthropic.model"})


def test_gpu_checks_fail_honestly_without_a_gpu_host(env, tmp_path):
    from surrogate_dagster.catalog import load_profile

    if shutil.which("nvidia-smi"):
        pytest.skip("this host has nvidia-smi")
    rows = {r.check: r for r in gpu_rows(load_profile(write_profile(env, tmp_path)))}
    assert rows["gpu.cuda"].status == FAIL and "nvidia-smi" in rows["gpu.cuda"].detail
    assert rows["gpu.vllm"].status == FAIL and "/opt/vllm/bin/vllm" in rows["gpu.vllm"].target
    assert set(rows) == {"gpu.cuda", "gpu.vllm", "gpu.axolotl", "gpu.disk"}


def test_preflight_job_fails_listing_every_problem(green, env, monkeypatch):
    from surrogate_dagster.operations import OPS_JOBS

    _, _, _, profile = green
    job = next(j for j in OPS_JOBS if j.name == "preflight")
    cfg = {"profile": str(profile), "skip": ["gpu"], "catalog": str(green_catalog(profile))}
    ok = job.execute_in_process(run_config={"ops": {"preflight_checks": {"config": cfg}}})
    assert ok.success
    monkeypatch.setenv(HF_ENV, BOB)
    bad_llm = write_profile(env, profile.parent, llm={"models": {"judge": "claude-unknown-1"},
                                                      "prices_per_mtok": {"claude-unknown-1": {"input": 1, "output": 1}}})
    res = job.execute_in_process(run_config={"ops": {"preflight_checks": {"config": {**cfg, "profile": str(bad_llm)}}}},
                                 raise_on_error=False)
    assert not res.success
    failure = next(e for e in res.all_events if e.is_step_failure).step_failure_data.user_failure_data
    assert "2 pre-flight check(s) failed" in failure.description
    assert GATED in failure.description and "claude-unknown-1" in failure.description
    assert BOB not in failure.description



def test_pin_revisions_all_re_pins_every_offline_mirror_pin_on_the_hub(env, tmp_path, capsys):
    """`pin-revisions --all` against the local Hub: every entry marked offline-mirror gets the
    Hub's commit in one command, and the pins preflight then checks all resolve."""
    from surrogate_dagster.catalog.pins import offline_mirror_pins

    path = tmp_path / "sources.yaml"
    shutil.copyfile(ASSETS_DIR / "sources.yaml", path)
    marked = offline_mirror_pins(path.read_text())
    assert marked
    profile = write_profile(env, tmp_path)
    assert cli_main(["pin-revisions", "--all", "--catalog", str(path), "--profile", str(profile)]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in marked)
    assert offline_mirror_pins(path.read_text()) == []
    from surrogate_dagster.catalog import load_profile

    rows = [r for r in run_preflight(load_profile(str(profile)), skip={"gpu", "s3", "anthropic", "hf"},
                                     sources_path=path)
            if r.check == "hub.pin" and any(r.target.startswith(n + " ") for n in marked)]
    assert len(rows) == len(marked) and {r.status for r in rows} == {OK}, [r for r in rows if r.status != OK]
