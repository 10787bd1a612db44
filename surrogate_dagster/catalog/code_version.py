"""Code versions that follow the code: an asset's config hash plus the source of the modules that compute it.

`CODE_MODULES` names, per asset (or asset family), the modules of this package whose source decides
its output. A name is a dotted path under `surrogate_dagster`: a module file (`curation.decontam`)
or a package, which stands for every `.py` file below it (`sanitize`). Source is hashed
after parsing (`ast.dump`), so comment and formatting edits leave the version alone while any
change to code or docstrings moves it. Files are read from this package's own directory, never
imported, so a version costs a few file reads at definitions load.

`asset_code_version(asset, config)` is what an asset passes as `code_version`; it is
self-describing, `cfg=<hash>;<module>=<hash>;...`, so every materialization records (in its
`dagster/code_version` tag) which module versions produced it, and the regression lineage report
can name the modules that changed between two checkpoints (`parse_code_version`,
`changed_modules`). Assets not in the registry are versioned by their config alone.

`build_info()` is the package version and git commit of the running code (env
`SURROGATE_GIT_COMMIT` in images, else `git rev-parse HEAD`, else "unknown"; never raises).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from .loader import config_hash

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PACKAGE = PACKAGE_DIR.name
GIT_COMMIT_ENV = "SURROGATE_GIT_COMMIT"
HASH_CHARS = 10

_MIRROR = ("sources.mirror", "sources.filters", "sources.sampling", "hub")
_NORMALIZE = ("sources.normalize", "sources.adapters", "sources.hermes", "sources.ocr2_questions")
_EVALS = ("evals.harness", "evals.runner", "inference.client", "evals.gates", "evals.checkpoints", "canary")
_TRAINING = ("training.render", "training.serving", "training.stage_run", "training.run_inputs")
_MIXTURES = ("curation.mixtures", "curation.synth_rows")

# asset (or family, see `modules_for`) -> modules whose source decides its output. Orchestration
# modules (the `assets.py` files) are left out: they hold every asset of a group, so hashing them
# would mark the whole group stale on any edit.
CODE_MODULES: dict[str, tuple[str, ...]] = {
    "source_rows": _MIRROR,
    "helper_rows": _MIRROR,
    "normalized_rows": _NORMALIZE,
    "sanitized_rows": ("sanitize", "curation.stage_io"),
    "filtered_rows": ("curation.quality", "curation.ast_validity", "curation.code_blocks", "curation.blocks",
                      "curation.executor",
                      "curation.stage_io"),
    "minhash_signatures": ("curation.minhash", "curation.minhash_kernels", "curation.minhash_numpy",
                           "curation.text"),
    "dedup_decisions": ("curation.dedup_sharded", "curation.exact_dedup", "curation.minhash", "curation.text"),
    "benchmark_ngram_index": ("curation.decontam", "curation.benchmark_refs", "curation.lcb_online"),
    "curated_rows": ("curation.decontam", "curation.text", "curation.stage_io"),
    "mixture": _MIXTURES,
    "curated_synth": ("curation.synth_rows", "sanitize", "curation.decontam", "curation.exact_dedup",
                      "curation.minhash"),
    "eval": _EVALS,
    "checkpoint": _TRAINING,
}


def modules_for(asset: str) -> tuple[str, ...]:
    """The registry entry of an asset: its own name, else its family (`*_mixture`, `*_checkpoint`,
    `*_eval_report` / other evals assets via "eval", `curated_*` synth sets); () when none."""
    if asset in CODE_MODULES:
        return CODE_MODULES[asset]
    if asset.endswith("_mixture"):
        return CODE_MODULES["mixture"]
    if asset.endswith("_checkpoint"):
        return CODE_MODULES["checkpoint"]
    if asset.startswith("curated_"):
        return CODE_MODULES["curated_synth"]
    if "eval" in asset:
        return CODE_MODULES["eval"]
    return ()


def _files(module: str, root: Path) -> list[Path]:
    rel = Path(*module.split("."))
    if (root / rel).is_dir():
        return sorted(p for p in (root / rel).rglob("*.py") if "__pycache__" not in p.parts)
    if (root / rel).with_suffix(".py").is_file():
        return [(root / rel).with_suffix(".py")]
    raise KeyError(f"code module {module!r}: no {rel}.py or package {rel}/ under {root}")


# Parsed-source digests, keyed by the raw bytes' hash (and the Python version, whose `ast.dump`
# output may differ): dumping the parsed trees of ~90 files costs ~1 s at every definitions load,
# hashing their bytes a few ms. Kept beside the bytecode; a cache that cannot be read or written
# (a read-only image) only costs the parse.
DIGEST_CACHE = PACKAGE_DIR / "__pycache__" / "code_version_digests.json"
_PY = "py{}.{}".format(*sys.version_info[:2])


@functools.lru_cache(maxsize=None)
def _digest_cache(path: Path = DIGEST_CACHE) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}


def _save_digest_cache(cache: dict[str, str], path: Path = DIGEST_CACHE) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass


def _parsed_digest(raw: bytes, filename: str) -> str:
    try:  # parsed form: comments and layout do not change what the code computes
        text = ast.dump(ast.parse(raw, filename=filename)).encode()
    except SyntaxError:
        text = raw
    return hashlib.sha256(text).hexdigest()


def _source_digest(path: Path, cache: dict[str, str] | None = None) -> str:
    raw = path.read_bytes()
    if cache is None:
        return _parsed_digest(raw, str(path))
    key = f"{_PY}:{hashlib.sha256(raw).hexdigest()}"
    if key not in cache:
        cache[key] = _parsed_digest(raw, str(path))
    return cache[key]


@functools.lru_cache(maxsize=None)
def module_hash(module: str, root: Path = PACKAGE_DIR) -> str:
    """A short hash of a module's (or a package's every file's) parsed source."""
    cache = _digest_cache() if root == PACKAGE_DIR else None
    known = len(cache) if cache is not None else 0
    h = hashlib.sha256()
    for path in _files(module, root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + _source_digest(path, cache).encode() + b"\0")
    if cache is not None and len(cache) != known:
        _save_digest_cache(cache)
    return h.hexdigest()[:HASH_CHARS]


def module_hashes(modules: Iterable[str], root: Path = PACKAGE_DIR) -> dict[str, str]:
    """{module: hash} for the given module names, sorted by name."""
    return {m: module_hash(m, root) for m in sorted(set(modules))}


def asset_code_version(asset: str, config: BaseModel | dict | str | None = None,
                       modules: Iterable[str] | None = None) -> str:
    """`cfg=<config hash>;<module>=<hash>;...` for an asset: its config (a model, a dict, or an
    already computed hash) and the modules of `CODE_MODULES` (or `modules`) that compute it."""
    if config is None:
        cfg = "none"
    elif isinstance(config, str):
        cfg = config
    else:
        cfg = config_hash(config)
    parts = [f"cfg={cfg[:HASH_CHARS]}"]
    parts += [f"{m}={h}" for m, h in module_hashes(modules if modules is not None else modules_for(asset)).items()]
    return ";".join(parts)


def parse_code_version(version: str | None) -> dict[str, str]:
    """{part: hash} of a version `asset_code_version` wrote ("cfg" is the config); {} for any other."""
    if not version or "=" not in version:
        return {}
    out = {}
    for part in version.split(";"):
        name, sep, value = part.partition("=")
        if not sep:
            return {}
        out[name] = value
    return out


def changed_modules(a: str | None, b: str | None) -> list[str]:
    """The parts (module names, "cfg" for the config) whose hash differs between two versions,
    including parts only one of them has; [] when either is not self-describing."""
    pa, pb = parse_code_version(a), parse_code_version(b)
    if not pa or not pb:
        return []
    return sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))


@functools.lru_cache(maxsize=1)
def build_info() -> dict[str, str]:
    """{"package_version", "git_commit"} of the running code; "unknown" where neither is known."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            pkg = version(PACKAGE)
        except PackageNotFoundError:
            pkg = version(PACKAGE.replace("_", "-"))
    except Exception:  # noqa: BLE001 - metadata must never break definitions loading
        pkg = "unknown"
    commit = os.environ.get(GIT_COMMIT_ENV, "").strip()
    if not commit:
        try:
            res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PACKAGE_DIR, capture_output=True,
                                 text=True, timeout=5, check=False)
            commit = res.stdout.strip() if res.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            commit = ""
    return {"package_version": pkg, "git_commit": commit or "unknown"}


def code_metadata(asset: str) -> dict[str, object]:
    """Definition metadata for an asset: the module hashes its code version is made of, the
    package version and git commit of the loaded code."""
    from dagster import MetadataValue

    info = build_info()
    return {"code_modules": MetadataValue.json(module_hashes(modules_for(asset))),
            "code_package_version": info["package_version"], "code_git_commit": info["git_commit"]}


# Per-partition versions. A partitioned asset whose partitions each follow their own config section
# (a source's cap, filters, adapter in assets/sources.yaml) keeps those sections out of its code
# version, which would otherwise move for every partition on any one edit. Instead its definition
# metadata maps each partition to the hash of its own section (PARTITION_VERSIONS_KEY), each
# materialization records the hash it was built with (PARTITION_VERSION_KEY), and the stale plan
# (runtime/planning.py) marks a partition stale when the two differ: editing one source's cap
# re-runs that source alone.
PARTITION_VERSIONS_KEY = "partition_versions"
PARTITION_VERSION_KEY = "partition_version"


def partition_config_version(spec: BaseModel, exclude: Iterable[str] = ("revision",)) -> str:
    """The hash of one partition's config section; the pin is left out by default, since it reaches
    the partition as its observed data version (sources/revisions.py)."""
    return config_hash(spec.model_dump(mode="json", exclude=set(exclude)))


def partition_config_versions(specs: Iterable[BaseModel], exclude: Iterable[str] = ("revision",)) -> dict[str, str]:
    """{partition name: partition_config_version} for config sections that have a `name`."""
    return {spec.name: partition_config_version(spec, exclude) for spec in specs}
