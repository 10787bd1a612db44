"""Load a YAML file into a pydantic model; a broken file names the file, the key and the expectation.

Every catalog, profile and stage file is read by :func:`read_yaml_mapping` (a key repeated in one
mapping is refused, a syntax error names the file and line) and validated by
:func:`validate_mapping` (one ``<file>: <dotted.key>: <reason>`` line per problem).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ..paths import ASSETS_DIR, PROFILES_DIR
from ..scrub import register_secret_envs
from .models import OpsSection, Profile, SourcesCatalog

M = TypeVar("M", bound=BaseModel)

PROFILE_ENV = "SURROGATE_PROFILE"  # the one variable that selects the deployment profile


class CatalogError(ValueError):
    """A catalog or profile file that does not parse or validate."""


# libyaml's parser is ~10x faster than the pure-Python one (definitions load parses dozens of
# YAML files); both build the same plain data from the same safe subset of YAML.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SafeLoader(_BaseLoader):
    """The safe loader, refusing a key repeated in one mapping (at any depth).

    Plain YAML keeps the last of two equal keys, so a second ``sources:`` or ``cap:`` would
    silently replace the first; here it is a ``ConstructorError`` at the repeated key's line.
    Keys brought in by a ``<<`` merge may still be overridden, as YAML's merge intends.
    """

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base constructor reports it
                    continue
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice (first at line {first + 1})",
                        key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, source: str | Path | None = None):
    """`yaml.safe_load` with libyaml when it is installed, refusing repeated keys. With ``source``
    (the file the text came from), errors are a CatalogError naming it."""
    try:
        return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        if source is None:
            raise
        raise CatalogError(yaml_error_message(source, e)) from e


def yaml_error_message(source: str | Path, err: yaml.YAMLError) -> str:
    """``<file>:<line>: <problem>`` for a YAMLError (the parser's own stream name replaced)."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if isinstance(err, yaml.constructor.ConstructorError) and "appears twice" in problem:
        return f"{source}:{mark.line + 1}: {problem}"
    where = f"{mark.line + 1}: not valid YAML at line {mark.line + 1}, column {mark.column + 1}" if mark \
        else " not valid YAML"
    context = getattr(err, "context", None)
    return f"{source}:{where}: {problem}" + (f" ({context})" if context else "")


def validation_problems(source: str | Path, err: ValidationError, prefix: str = "") -> list[str]:
    """One ``<file>: <dotted.key>: <reason>`` line per problem of a ValidationError; ``prefix`` is
    the dotted place of the validated mapping in its file (``phases.llm``)."""
    lines = []
    for e in err.errors():
        parts = [prefix] if prefix else []
        parts += [str(p) for p in e["loc"]]
        key = ".".join(parts) or "<root>"
        got = e.get("input")
        got_s = json.dumps(got, default=str)[:80] if got is not None else "nothing"
        reason = e["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {key}: {reason} (got {got_s})")
    return lines


def validation_error(source: str | Path, err: ValidationError, prefix: str = "") -> CatalogError:
    """A CatalogError whose message is :func:`validation_problems`, one line each."""
    return CatalogError("\n".join(validation_problems(source, err, prefix)))


def validate_mapping(model: type[M], data: object, source: str | Path, prefix: str = "") -> M:
    """``model.model_validate(data)``, a failure raised as :func:`validation_error`."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise validation_error(source, e, prefix) from e


def read_yaml_mapping(path: Path) -> dict:
    """One YAML file's top-level mapping; CatalogError naming the file (and line) otherwise."""
    path = Path(path)
    if not path.is_file():
        raise CatalogError(f"{path}: file not found")
    data = parse_yaml(path.read_text(encoding="utf-8"), source=path)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def load_yaml_model(path: str | Path, model: type[M]) -> M:
    """Parse and validate one YAML file, raising CatalogError with file, key and expectation."""
    path = Path(path)
    return validate_mapping(model, read_yaml_mapping(path), path)


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
    profile = validate_mapping(Profile, profile_data(ref), path)
    profile._source = str(path)
    # The sections read by several layers are checked here, at load; each phase validates its own
    # section with its model when it builds its resources (`validate_phase`).
    validate_phase(profile, "ops", OpsSection)
    # The variables this profile reads credentials from: their values are scrubbed from every
    # log line, exception and stored error text.
    store = profile.object_store
    register_secret_envs(profile.hub.token_env, getattr(store, "access_key_env", None),
                         getattr(store, "secret_key_env", None),
                         (profile.phases.get("llm") or {}).get("api_key_env"))
    return profile


def profile_source(profile: Profile) -> str:
    """The file a profile was loaded from, for error messages (``profile <name>`` when it was
    built in code)."""
    return profile._source or f"profile {profile.name}"


def validate_phase(profile: Profile, section: str, model: type[M], data: object = None) -> M:
    """``phases.<section>`` of a profile (or ``data`` in its place) validated by ``model``; each
    problem a line ``<profile file>: phases.<section>.<key>: <reason>``."""
    raw = profile.phases.get(section) if data is None else data
    return validate_mapping(model, raw or {}, profile_source(profile), f"phases.{section}")


def config_hash(obj: BaseModel | dict) -> str:
    """A short stable hash of a config, used as code_version so edits mark assets stale."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
