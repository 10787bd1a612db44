"""Where a profile's Dagster instance lives (DAGSTER_HOME), and the environment that points
Dagster's own CLI at this code location.

Each profile names its instance: `phases.ops.dagster_home` (relative paths are relative to the
repository root). DAGSTER_HOME, when set, wins. Without either, the local profile uses
`var/dagster_home` (what `make run` and `make ui` share); any other profile is refused, so a
production run never records its run history in a checkout's `var/` folder, and never on a
throwaway instance nobody sees again.

`dagster_cli_env` adds what `dagster asset list/materialize` need to find the code location
without `-m`: Dagster's CLI reads `DAGSTER_MODULE_NAME` and `DAGSTER_WORKING_DIRECTORY`, which
are taken from `[tool.dagster]` in pyproject.toml (those commands do not read that file).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from ..paths import REPO_ROOT

DAGSTER_HOME_KEY = "dagster_home"  # phases.ops.<key> in a profile
LOCAL_PROFILE = "local"
LOCAL_HOME = REPO_ROOT / "var" / "dagster_home"
PYPROJECT = REPO_ROOT / "pyproject.toml"


class NoInstanceHome(RuntimeError):
    """The profile names no Dagster instance and DAGSTER_HOME is not set."""


def profile_home(profile) -> Path | None:
    """The instance folder the profile names (`phases.ops.dagster_home`), absolute; None if none."""
    value = (profile.phases.get("ops") or {}).get(DAGSTER_HOME_KEY)
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError(f"profile {profile.name}: phases.ops.{DAGSTER_HOME_KEY} must be a path, got {value!r}")
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else REPO_ROOT / path


def instance_home(profile=None, environ=None) -> Path:
    """DAGSTER_HOME if set, else the profile's instance folder, else var/dagster_home for the local
    profile; :class:`NoInstanceHome` for another profile that names none."""
    env = os.environ if environ is None else environ
    if env.get("DAGSTER_HOME"):
        return Path(env["DAGSTER_HOME"])
    if profile is None:
        from ..catalog import load_profile

        profile = load_profile()
    home = profile_home(profile)
    if home is not None:
        return home
    if profile.name == LOCAL_PROFILE:
        return LOCAL_HOME
    raise NoInstanceHome(f"profile {profile.name!r} names no Dagster instance: set phases.ops.{DAGSTER_HOME_KEY} "
                         "in its YAML (a persistent folder of that host) or DAGSTER_HOME")


def code_location() -> dict[str, str]:
    """`[tool.dagster]` of pyproject.toml (module_name, code_location_name)."""
    with open(PYPROJECT, "rb") as fh:
        return dict(tomllib.load(fh).get("tool", {}).get("dagster", {}))


def dagster_cli_env(profile=None, environ=None) -> dict[str, str]:
    """DAGSTER_HOME and the code location (module, working directory) for Dagster's own CLI."""
    return {"DAGSTER_HOME": str(instance_home(profile, environ)),
            "DAGSTER_MODULE_NAME": code_location()["module_name"],
            "DAGSTER_WORKING_DIRECTORY": str(REPO_ROOT)}
