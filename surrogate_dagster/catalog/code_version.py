"""Code versions that follow the code: an asset's config sections plus the definitions that compute it.

`function_code_version(module, function, ...)` is what an asset passes as `code_version`. The
code part is derived, never listed: `code_reach.reach` follows every name the asset's function
(or the factory that builds a family of assets) uses, through this package's modules, and each
module's reached definitions are hashed in parsed form, so comment and layout edits leave the
version alone while a change to any definition the asset reaches moves it. The config part is
the configuration the function reads: given `sections_of=(name, model)`, only the attributes of
that module-level object the reached code reads are hashed (`CURATION.sanitize` for the sanitize
step), or the whole object where some reached code passes it on whole.

A version is self-describing, `cfg=<hash>;<module>=<hash>;...`, so every materialization records
(in its `dagster/code_version` tag) which module versions produced it, and the regression
lineage report names the modules that changed between two checkpoints (`parse_code_version`,
`changed_modules`).

`build_info()` is the package version and git commit of the running code (env
`SURROGATE_GIT_COMMIT` in images, else `git rev-parse HEAD`, else "unknown"; never raises).
"""

from __future__ import annotations

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


def _config_part(config: BaseModel | dict | str | None) -> str:
    if config is None:
        return "none"
    return config if isinstance(config, str) else config_hash(config)


def _section_dump(model: BaseModel | dict, reads: set[str] | None) -> object:
    data = model.model_dump(mode="json") if isinstance(model, BaseModel) else dict(model)
    return data if reads is None else {k: data.get(k) for k in sorted(reads)}


# Reach results, keyed by the raw bytes of every package file (hashing them takes milliseconds,
# parsing them about a second at every definitions load). Kept beside the bytecode; a cache that
# cannot be read or written (a read-only image) only costs the parse.
REACH_CACHE = PACKAGE_DIR / "__pycache__" / "code_reach_cache.json"


@functools.lru_cache(maxsize=None)
def _package_bytes_hash(root: Path) -> str:
    h = hashlib.sha256(sys.version.encode())
    for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _load_reach_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_reach_cache(path: Path, cache: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass


@functools.lru_cache(maxsize=None)
def _reach_digests(root: Path, entries: tuple[tuple[str, str], ...], config_objects: frozenset[tuple[str, str]],
                   local_names: frozenset[str] = frozenset()) -> tuple[dict[str, str], dict, dict[str, set[str]]]:
    """({module: digest}, {config object: attributes read or None}, {local name: attributes read})
    of the definitions reached from `entries`, served from REACH_CACHE when no package file changed."""
    from .code_reach import reach

    use_cache = root == PACKAGE_DIR
    state = _package_bytes_hash(root) if use_cache else ""
    key = json.dumps([entries, sorted(config_objects), sorted(local_names)])
    cache = _load_reach_cache(REACH_CACHE) if use_cache else {}
    hit = cache.get("entries", {}).get(key) if cache.get("package") == state else None
    if hit is not None and "locals" in hit:
        reads = {tuple(k.split(":", 1)): (None if v is None else set(v)) for k, v in hit["reads"].items()}
        return hit["digests"], reads, {k: set(v) for k, v in hit["locals"].items()}
    nodes, reads, local_reads = {}, {}, {n: set() for n in local_names}
    for module, name in entries:
        r = reach(root, PACKAGE, module, name, config_objects, local_names)
        nodes.update(r.nodes)
        for k, v in r.config_reads.items():
            reads[k] = None if (v is None or reads.get(k, set()) is None) else reads.get(k, set()) | v
        for k, v in r.local_reads.items():
            local_reads[k] |= v
    digests = type(r)(nodes=nodes, config_reads=reads).module_digests()
    if use_cache:
        if cache.get("package") != state:
            cache.clear()
            cache.update({"package": state, "entries": {}})
        cache["entries"][key] = {"digests": digests,
                                 "reads": {":".join(k): (None if v is None else sorted(v)) for k, v in reads.items()},
                                 "locals": {k: sorted(v) for k, v in local_reads.items()}}
        _save_reach_cache(REACH_CACHE, cache)
    return digests, reads, local_reads


def _relative(module: str) -> str:
    return module[len(PACKAGE) + 1:] if module.startswith(PACKAGE + ".") else module


def reached_modules(module: str, *functions: str, root: Path = PACKAGE_DIR) -> dict[str, str]:
    """{module: hash of the definitions it holds that `functions` of `module` reach}."""
    entries = tuple((_relative(module), f) for f in functions)
    return {m: h[:HASH_CHARS] for m, h in _reach_digests(root, entries, frozenset())[0].items()}


def profile_settings_read(model: BaseModel, reads: set[str]) -> dict[str, object]:
    """The settings of a profile section that the reached code reads and that decide outputs:
    `model`'s fields among `reads`, less those its class lists in ``OUTPUT_NEUTRAL`` (work
    folders, worker counts: where and how fast, never what)."""
    neutral = set(getattr(type(model), "OUTPUT_NEUTRAL", ()))
    data = model.model_dump(mode="json")
    return {k: data[k] for k in sorted(reads) if k in type(model).model_fields and k not in neutral}


def function_code_version(module: str, *functions: str, config: BaseModel | dict | str | None = None,
                          sections_of: str | None = None, profile_section: tuple[str, BaseModel] | None = None,
                          root: Path = PACKAGE_DIR) -> str:
    """`cfg=<hash>;<module>=<hash>;...` of the asset computed by `functions` of `module` (their
    dotted module, `__name__` from the caller). `config` is hashed as given; `sections_of=
    name` adds the sections of the module-level config object `name` (defined in or imported by
    `module`, and bound there before the call) that the reached code reads. The object is named,
    not passed, so the call itself is no use of the whole object. `profile_section=(name, model)`
    adds the settings of the profile section `model` that the reached code reads on the name
    `name` (the asset's resource parameter, `curation`), as `profile_settings_read` selects them:
    editing the profile's `edu_threshold` moves the version of the assets that read it alone."""
    from .code_reach import _lookup

    mod = _relative(module)
    entries = tuple((mod, f) for f in functions)
    origin = None
    if sections_of is not None:
        origin = _lookup(root, PACKAGE, mod, sections_of, set())
        if origin is None:
            raise KeyError(f"{module}: no config object {sections_of!r}")
    local_names = frozenset({profile_section[0]}) if profile_section else frozenset()
    digests, reads, local_reads = _reach_digests(root, entries, frozenset({origin}) if origin else frozenset(),
                                                 local_names)
    cfg = _config_part(config)
    if origin is not None:
        cfg = config_hash({"config": cfg, "sections": _section_dump(getattr(sys.modules[module], sections_of), reads.get(origin, set()))})
    if profile_section is not None:
        settings = profile_settings_read(profile_section[1], local_reads[profile_section[0]])
        if settings:  # an asset that reads no such setting keeps the version it had without one
            cfg = config_hash({"config": cfg, "profile": settings})
    parts = [f"cfg={cfg[:HASH_CHARS]}"] + [f"{m}={h[:HASH_CHARS]}" for m, h in digests.items()]
    return ";".join(parts)


def config_sections_read(module: str, *functions: str, name: str, root: Path = PACKAGE_DIR) -> set[str] | None:
    """The attributes of config object `name` that `functions` of `module` reach (None: whole)."""
    from .code_reach import _lookup

    mod = _relative(module)
    origin = _lookup(root, PACKAGE, mod, name, set())
    _, reads, _ = _reach_digests(root, tuple((mod, f) for f in functions), frozenset({origin}))
    return reads.get(origin, set())


def parse_code_version(version: str | None) -> dict[str, str]:
    """{part: hash} of a version `function_code_version` wrote ("cfg" is the config); {} for any other."""
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


def code_metadata(code_version: str) -> dict[str, object]:
    """Definition metadata for an asset: the module hashes its code version is made of, the
    package version and git commit of the loaded code."""
    from dagster import MetadataValue

    info = build_info()
    modules = {k: v for k, v in parse_code_version(code_version).items() if k != "cfg"}
    return {"code_modules": MetadataValue.json(modules),
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
