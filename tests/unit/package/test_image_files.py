"""The container images' files (docker/): every file a Dockerfile COPYs exists and is let through its
.dockerignore, the names are the ones resources/production.yaml and docs/SCALE_OUT.md use, the code
image installs the graders' system packages, vllm is pinned (hadolint and the PyPI resolves:
tests/env/test_images.py)."""

import fnmatch
import re
import shlex
from pathlib import Path

import pytest
import yaml


REPO = Path(__file__).resolve().parents[3]


DOCKERFILES = {"dagster": REPO / "docker" / "dagster" / "Dockerfile", "gpu": REPO / "docker" / "gpu" / "Dockerfile"}


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
    from surrogate_dagster.catalog import load_profile

    prof = load_profile("cluster").phases  # the images are the cluster profile's
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
