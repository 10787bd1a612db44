"""The SWE-bench agent scaffold for real: mini-swe-agent (.venv-swe-agent) on the shipped fixture
instance, driven by a scripted OpenAI-compatible server that answers with the bash commands of a
fix. The prediction's patch, applied to a fresh checkout with the instance's test patch, turns the
FAIL_TO_PASS test green (it fails without it): the agent's commands really edited the work tree.
Then the tier-2 report on the tiny model: unavailable (no Docker) with the scaffold's figures.
Skipped where .venv-swe-agent is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from surrogate_dagster.evals.harness import swebench
from surrogate_dagster.evals.harness.served import Endpoint
from surrogate_dagster.evals.harness.swe_agent import ScaffoldSettings, run_scaffold, scaffold_python
from surrogate_dagster.evals.harness.swebench_fixture import build_fixture_repo
from surrogate_dagster.paths import REPO_ROOT
from tests.support.scripted_openai import scripted_chat_server

PYTHON = scaffold_python(".venv-swe-agent/bin/python")
pytestmark = pytest.mark.skipif(PYTHON is None, reason="no mini-swe-agent environment (.venv-swe-agent: make setup)")

FIXED_STATS = '''"""Descriptive statistics over plain sequences of numbers."""


def mean(values):
    """The arithmetic mean of a non-empty sequence of numbers."""
    values = list(values)
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values):
    """The median of a non-empty sequence of numbers."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median() of an empty sequence")
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
'''


def action(thought: str, command: str) -> str:
    """An answer in the text-based format of mini-swe-agent's swebench_backticks config."""
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


FIX_SCRIPT = [
    action("Read the function the issue names.", "cat ministats/stats.py"),
    action("Average the two middle values for even lengths.",
           f"cat > ministats/stats.py <<'PYEOF'\n{FIXED_STATS}PYEOF"),
    action("Make the patch file.", "git diff -- ministats/stats.py > patch.txt"),
    action("Submit.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"),
]


def _git(repo, *args, stdin=None):
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, check=True)


def _fail_to_pass(repo, instance) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *instance["FAIL_TO_PASS"],
                           *instance["PASS_TO_PASS"]], cwd=repo, capture_output=True, text=True)


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("swe_agent")
    instance = build_fixture_repo(tmp / "fixture_repo")
    with scripted_chat_server(FIX_SCRIPT, api_key="sk-scripted-key") as srv:
        ep = Endpoint(base_url=srv.base_url, served_name="scripted-policy", tokenizer_dir="", api_key="sk-scripted-key",
                      managed_here=False)
        run = run_scaffold(ep, [instance], ScaffoldSettings(step_limit=10, command_timeout_s=30, max_tokens=256,
                                                            model_retries=1),
                           python=PYTHON, work_dir=tmp / "work", model_name="stage2_5_checkpoint")
        requests = list(srv.requests)
    return tmp, instance, run, requests, srv.unauthorized


def test_the_scaffold_drives_real_edits_that_fix_the_fail_to_pass_test(scripted_run):
    tmp, instance, run, requests, unauthorized = scripted_run
    (row,) = run.instances
    assert row["exit_status"] == "Submitted" and row["model_calls"] == 4 and row["commands_run"] == 3
    (pred,) = run.predictions
    assert pred["instance_id"] == instance["instance_id"] and pred["model_name_or_path"] == "stage2_5_checkpoint"
    patch = pred["model_patch"]
    assert patch.startswith("diff --git a/ministats/stats.py b/ministats/stats.py") and "patch.txt" not in patch
    # a fresh checkout at the base commit, SWE-bench's order: the model's patch, then the test patch
    fresh = tmp / "fresh"
    subprocess.run(["git", "clone", "-q", instance["repo_source"], str(fresh)], check=True)
    _git(fresh, "checkout", "-q", instance["base_commit"])
    _git(fresh, "apply", "-", stdin=instance["test_patch"])
    before = _fail_to_pass(fresh, instance)
    assert before.returncode != 0 and "test_median_even_length" in before.stdout
    _git(fresh, "apply", "--check", "-", stdin=patch)
    _git(fresh, "apply", "-", stdin=patch)
    after = _fail_to_pass(fresh, instance)
    assert after.returncode == 0, after.stdout[-1500:]
    # the agent's prompts are mini-swe-agent's SWE-bench ones, in the checkout rather than /testbed
    first = requests[0]
    assert first["model"] == "scripted-policy" and first["temperature"] == 0.0 and first["max_tokens"] == 256
    assert "Consider the following PR description" in first["messages"][1]["content"]
    assert "median() returns the wrong value" in first["messages"][1]["content"]
    assert "/testbed" not in json.dumps(first["messages"]) and unauthorized == 0
    # the command's output reached the model: the second request carries the file the first printed
    assert "return ordered[mid]" in requests[1]["messages"][-1]["content"]


def test_trajectory_is_mini_swe_agents_own_and_keeps_no_key(scripted_run):
    tmp, instance, run, requests, _ = scripted_run
    traj_path = run.instances[0]["trajectory"]
    text = open(traj_path).read()
    traj = json.loads(text)
    assert traj["trajectory_format"] == "mini-swe-agent-1.1" and traj["info"]["mini_version"] == "2.4.6"
    assert traj["info"]["exit_status"] == "Submitted" and traj["info"]["model_patch"] == run.predictions[0]["model_patch"]
    assert traj["info"]["submission"].startswith("diff --git")  # what the agent cat-ed: the same fix
    assert traj["info"]["config"]["agent"]["step_limit"] == 10 and traj["info"]["config"]["agent"]["cost_limit"] == 0
    assert "sk-scripted-key" not in text
    assert run.scaffold == "mini-swe-agent 2.4.6" and run.detail["agent_config"] == "swebench_backticks.yaml"


@pytest.mark.parametrize("environment, sees_host", [("bubblewrap", False), ("local", True)])
def test_the_step_limit_stops_an_agent_and_bubblewrap_hides_the_host(tmp_path, environment, sees_host):
    instance = build_fixture_repo(tmp_path / "fixture_repo")
    secret = tmp_path / "host_file.txt"  # beside the work dir, outside the checkout
    secret.write_text("HOST-ONLY-CONTENT\n")
    with scripted_chat_server([]) as srv:
        port = srv.base_url.rsplit(":", 1)[1]
        # the host's file, a server on the host's loopback (this very one), a host process (this test's)
        probe = (f"cat {secret}; bash -c 'echo > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo HOST-SERVER-REACHED; "
                 f"test -e /proc/{os.getpid()}/cmdline && echo HOST-PID-VISIBLE; echo PROBED")
        srv.answers = [action("Look around.", probe)] * 10
        ep = Endpoint(base_url=srv.base_url, served_name="scripted", tokenizer_dir="", api_key=None, managed_here=False)
        run = run_scaffold(ep, [instance], ScaffoldSettings(step_limit=2, model_retries=1, environment=environment),
                           python=PYTHON, work_dir=tmp_path / "work", model_name="m")
        assert len(srv.requests) == 2
        seen = srv.requests[1]["messages"][-1]["content"]
    (row,) = run.instances
    assert row["exit_status"] == "LimitsExceeded" and row["model_calls"] == 2 and row["patch_chars"] == 0
    assert run.predictions == [{"instance_id": instance["instance_id"], "model_name_or_path": "m", "model_patch": ""}]
    assert "PROBED" in seen
    for shown in ("HOST-ONLY-CONTENT", "HOST-SERVER-REACHED", "HOST-PID-VISIBLE"):
        assert (shown in seen) is sees_host, (shown, seen)
    if not sees_host:
        assert "No such file or directory" in seen and run.detail["environment"].endswith("BubblewrapEnvironment")


LEAK_KEY = "sk-leak-7f3a9c0d21"


@pytest.mark.parametrize("environment", ["bubblewrap", "local"])
def test_the_endpoint_key_is_in_no_environment_a_command_can_read(tmp_path, environment):
    instance = build_fixture_repo(tmp_path / "fixture_repo")
    # the runner's environ ($PPID under a plain subprocess), its parent's, and every process's environ
    # and command line the command can see (/proc/<pid>/environ is what the process was started with:
    # a variable removed from os.environ later is still there)
    snoop = ("tr '\\0' '\\n' < /proc/$PPID/environ; "
             "grep -a -o 'sk-leak-[0-9a-f]*' /proc/$(awk '{print $4}' /proc/$PPID/stat)/environ; "
             "grep -h -a -o 'sk-leak-[0-9a-f]*' /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | sort -u; "
             "echo SNOOPED")
    with scripted_chat_server([action("Read what the parents hold.", snoop)] * 3, api_key=LEAK_KEY) as srv:
        ep = Endpoint(base_url=srv.base_url, served_name="scripted", tokenizer_dir="", api_key=LEAK_KEY,
                      managed_here=False)
        run = run_scaffold(ep, [instance], ScaffoldSettings(step_limit=2, model_retries=1, environment=environment),
                           python=PYTHON, work_dir=tmp_path / "work", model_name="m")
        requests, unauthorized = list(srv.requests), srv.unauthorized
    assert unauthorized == 0 and len(requests) == 2  # the key reached the server, as the Authorization header
    assert "SNOOPED" in requests[1]["messages"][-1]["content"]
    if environment == "local":  # the runner's environ was read: the one the key used to travel in
        assert f"HOME={tmp_path / 'work' / 'home'}" in requests[1]["messages"][-1]["content"]
    assert LEAK_KEY not in json.dumps(requests)
    assert LEAK_KEY not in open(run.instances[0]["trajectory"]).read()
    assert not [p for p in (tmp_path / "work").rglob("*") if p.is_file() and LEAK_KEY.encode() in p.read_bytes()]


def test_an_environment_that_cannot_run_a_command_fails_the_run_before_any_instance(tmp_path, monkeypatch):
    from surrogate_dagster.evals.harness.swe_agent import ScaffoldError

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    instance = build_fixture_repo(tmp_path / "fixture_repo")
    with scripted_chat_server([action("Look.", "ls")] * 3) as srv:
        ep = Endpoint(base_url=srv.base_url, served_name="scripted", tokenizer_dir="", api_key=None, managed_here=False)
        with pytest.raises(ScaffoldError, match=r"the bubblewrap environment cannot run a command \(`true` returned 1\)"
                                                r".*uid map: Permission denied"):
            run_scaffold(ep, [instance], ScaffoldSettings(step_limit=2, model_retries=1), python=PYTHON,
                         work_dir=tmp_path / "work", model_name="m")
        assert srv.requests == []


def test_tier2_report_on_the_tiny_model_is_unavailable_with_the_scaffold_figures(tmp_path):
    from dagster import DagsterInstance, materialize

    from surrogate_dagster.evals import assets as A
    from surrogate_dagster.evals.reports import read_samples, read_summary
    from surrogate_dagster.evals.resources import EvalSettings
    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
    from tests.support.evals_release import release_env

    _, res = release_env(tmp_path)
    # mini-swe-agent's SWE-bench prompt is ~4,400 tokens of the tiny tokenizer: a longer context than the default 4096
    model = build_tiny_qwen2(tmp_path / "long_model", max_positions=16384)
    res["evals"] = EvalSettings(offline=True, work_dir=str(tmp_path / "work"),
                                model_dirs={A.CATALOG.release.checkpoint: str(model)},
                                overrides={"swebench_lite": {"step_limit": 2, "max_new_tokens": 16}})
    run = materialize([A.tier2_eval_report], partition_key="swebench_lite", resources=res,
                      instance=DagsterInstance.ephemeral(), raise_on_error=False)
    md = run.asset_materializations_for_node("tier2_eval_report")[0].metadata
    assert md["status"].value == "unavailable" and md["score"].value == -1.0
    assert "Docker unavailable" in md["not_evaluated_because"].value
    m = md["metrics"].value
    assert m["scaffold"] == "mini-swe-agent 2.4.6" and m["instances_attempted"] == 1
    # the tiny model's noise holds no action: two format errors, then the step limit
    assert m["model_calls"] == 2 and m["exit_statuses"] == {"LimitsExceeded": 1} and m["patches_produced"] == 0
    assert "step limit 2" in md["notes"].value
    assert "resolved" not in m  # no resolved share without the harness
    assert "patches by mini-swe-agent 2.4.6" in md["notes"].value
    store = res["object_store"].get_store()
    summary = read_summary(store, A.CATALOG.release.checkpoint, "swebench_lite")
    (sample,) = read_samples(store, summary)
    assert sample["instance_id"] == "fixture__ministats-1" and "resolved" not in sample
    # the gate on the harness's share fails: not evaluated is not a pass
    assert not run.get_asset_check_evaluations()[0].passed


FAKE_HARNESS = r'''#!/bin/sh
# stands in for `python -m swebench.harness.run_evaluation`: keeps its arguments and the predictions
# it was given, and reports resolved every instance whose patch is not empty
[ "$1 $2" = "-m swebench.harness.run_evaluation" ] || exit 3
shift 2
while [ $# -gt 0 ]; do
  case "$1" in --predictions_path) PRED="$2";; --run_id) RUN="$2";; esac; shift 2
done
cp "$PRED" seen_predictions.jsonl
exec "%(python)s" - "$PRED" "$RUN" <<'PY'
import json, sys
rows = [json.loads(x) for x in open(sys.argv[1])]
model = rows[0]["model_name_or_path"]
json.dump({"total_instances": 300, "submitted_ids": [r["instance_id"] for r in rows],
           "resolved_ids": [r["instance_id"] for r in rows if r["model_patch"]], "error_ids": []},
          open(f"{model}.{sys.argv[2]}.json", "w"))
PY
'''


def test_with_docker_the_agents_predictions_go_to_the_harness_and_its_resolved_share_is_the_score(tmp_path,
                                                                                                   monkeypatch):
    import datasets

    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
    from surrogate_dagster.inference import ModelRef, VLLMServerInference

    instance = build_fixture_repo(tmp_path / "fixture_repo")
    row = {k: instance[k] for k in ("instance_id", "repo", "problem_statement", "base_commit")}
    other = {**row, "instance_id": "fixture__ministats-2"}
    monkeypatch.setattr(swebench, "docker_status", lambda: (True, "Docker server test"))
    monkeypatch.setattr(swebench, "repo_source", lambda repo: instance["repo_source"])
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split: [row, other])
    harness = tmp_path / "swebench_python"
    harness.write_text(FAKE_HARNESS % {"python": sys.executable})
    harness.chmod(0o755)
    # instance 1 gets the fix (4 answers), instance 2 only answers without an action: three format
    # errors in a row end it (mini-swe-agent's max_consecutive_format_errors)
    with scripted_chat_server(FIX_SCRIPT, after="no action here") as srv:
        client = VLLMServerInference(ModelRef("stage2_5_checkpoint", str(build_tiny_qwen2(tmp_path / "model")),
                                              revision="rev1"), base_url=srv.base_url, served_name="policy")
        # relative to the repository, as a profile writes it (production: .venv-swebench/bin/python), and the
        # process's cwd elsewhere: the harness runs with cwd=work_dir, so only a resolved path finds it
        monkeypatch.chdir(tmp_path)
        rel = os.path.relpath(harness, REPO_ROOT)
        rep = swebench.run(client, offline=False, work_dir=tmp_path / "work", swebench_python=rel,
                           settings=ScaffoldSettings(step_limit=5, model_retries=1), agent_python=str(PYTHON))
    assert rep.status == "ok" and rep.score == 50.0 and rep.n_items == 2
    seen = [json.loads(x) for x in (tmp_path / "work" / "seen_predictions.jsonl").read_text().splitlines()]
    assert [s["instance_id"] for s in seen] == ["fixture__ministats-1", "fixture__ministats-2"]
    assert seen[0]["model_patch"].startswith("diff --git a/ministats/stats.py") and seen[1]["model_patch"] == ""
    assert [s["resolved"] for s in rep.samples] == [True, False]
    m = rep.metrics
    assert m["resolved"] == 1 and m["patches_produced"] == 1 and m["empty_patches"] == 1
    assert m["exit_statuses"] == {"RepeatedFormatError": 1, "Submitted": 1} and m["scaffold"] == "mini-swe-agent 2.4.6"
    assert any(n.startswith("patches by mini-swe-agent 2.4.6") for n in rep.notes)


def test_a_repository_that_cannot_be_checked_out_fails_the_run_naming_it(tmp_path):
    from surrogate_dagster.evals.harness.swe_agent import ScaffoldError

    instance = {**build_fixture_repo(tmp_path / "fixture_repo"), "repo_source": str(tmp_path / "no-such-repo")}
    with scripted_chat_server([]) as srv:
        ep = Endpoint(base_url=srv.base_url, served_name="scripted", tokenizer_dir="", api_key=None, managed_here=False)
        with pytest.raises(ScaffoldError, match=r"every instance failed to set up: fixture__ministats-1: CheckoutError"
                                                r".*no-such-repo"):
            run_scaffold(ep, [instance], ScaffoldSettings(step_limit=2), python=PYTHON, work_dir=tmp_path / "work",
                         model_name="m")
        assert srv.requests == []  # no model call for an instance without a checkout
