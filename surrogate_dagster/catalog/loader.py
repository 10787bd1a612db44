"""Load a YAML file into a pydantic model; a broken file names the file, the key and the expectation."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ..paths import ASSETS_DIR, PROFILES_DIR
from .models import Profile, SourcesCatalog

M = TypeVar("M", bound=BaseModel)

PROFILE_ENV = "SURROGATE_PROFILE"  # the one variable that selects the deployment profile
# libyaml's loader parses ~10x faster than the pure-Python one (definitions load parses dozens of
# YAML files); both build the same plain data from the same safe subset of YAML.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str):
    """`yaml.safe_load`, with libyaml when it is installed."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader


class CatalogError(ValueError):
    """A catalog or profile file that does not parse or validate."""


def _format_validation(path: Path, err: ValidationError) -> str:
    lines = [f"{path}: {err.error_count()} problem(s)"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        got_s = json.dumps(got, default=str)[:80] if got is not None else "nothing"
        lines.append(f"  at key '{key}': {e['msg']} (got {got_s})")
    return "\n".join(lines)


def read_yaml_mapping(path: Path) -> dict:
    """One YAML file's top-level mapping; CatalogError naming the file (and line) otherwise."""
    if not path.is_file():
        raise CatalogError(f"{path}: file not found")
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise CatalogError(f"{path}:{where} is not valid YAML: {getattr(e, 'problem', e)}") from e
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def load_yaml_model(path: str | Path, model: type[M]) -> M:
    """Parse and validate one YAML file, raising CatalogError with file, key and expectation."""
    path = Path(path)
    data = read_yaml_mapping(path)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise CatalogError(_format_validation(path, e)) from e


def load_sources(path: str | Path | None = None) -> SourcesCatalog:
    """The source catalog (assets/sources.yaml by default)."""
    return load_yaml_model(path or ASSETS_DIR / "sources.yaml", SourcesCatalog)


def profile_name() -> str:
    return os.environ.get(PROFILE_ENV, "local")


def _profile_path(ref: str, relative_to: Path | None = None) -> Path:
    if ref.endswith((".yaml", ".yml")):
        path = Path(ref)
        return path if path.is_absolute() or relative_to is None else relative_to / path
    return PROFILES_DIR / f"{ref}.yaml"


def merge_overlay(base: dict, overlay: dict) -> dict:
    """`overlay` over `base`: mappings merge key by key, anything else (lists, scalars) replaces, and
    ``null`` removes the key (the field falls back to its default), as in training.yaml's overrides."""
    out = dict(base)
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_overlay(out[key], value)
        else:
            out[key] = value
    return out


def profile_data(name_or_path: str | Path | None = None, _seen: tuple[Path, ...] = ()) -> dict:
    """A profile's YAML as a mapping, with ``extends: <profile>`` resolved (the named profile's
    mapping, this file merged over it)."""
    path = _profile_path(str(name_or_path or profile_name()))
    if path.resolve() in _seen:
        raise CatalogError(f"{path}: profiles extend each other in a loop: {[str(p) for p in _seen]}")
    data = read_yaml_mapping(path)
    base = data.pop("extends", None)
    if base is None:
        return data
    parent = profile_data(_profile_path(str(base), path.parent), (*_seen, path.resolve()))
    return merge_overlay(parent, data)


def load_profile(name_or_path: str | Path | None = None) -> Profile:
    """A deployment profile by name (resources/<name>.yaml) or path; SURROGATE_PROFILE picks it. A
    profile may start from another (``extends: production``) and name only what differs."""
    ref = str(name_or_path or profile_name())
    path = _profile_path(ref)
    data = profile_data(ref)
    try:
        return Profile.model_validate(data)
    except ValidationError as e:
        raise CatalogError(_format_validation(path, e)) from e


def config_hash(obj: BaseModel | dict) -> str:
    """A short stable hash of a config, used as code_version so edits mark assets stale."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
