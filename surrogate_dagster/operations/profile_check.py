"""Every section of a profile validated by the model of the phase that reads it, all problems at once.

`load_profile` types the profile's own keys and `phases.ops`; each phase validates its section
when it builds its resources, one phase at a time, and some sections only when their feature
runs (`phases.k8s` on a Kubernetes deployment, `phases.preflight` in the pre-flight check). This
module runs every section's validation together, so a profile is refused before any work with
one message holding every ``<file>: phases.<section>.<key>: <reason>`` line.
"""

from __future__ import annotations

from collections.abc import Callable

from ..catalog.loader import CatalogError, profile_source
from ..catalog.models import Profile
from ..paths import ASSETS_DIR


def _checks(profile: Profile) -> list[tuple[str, Callable[[], object]]]:
    from ..curation.config import CurationProfile
    from ..catalog.loader import validate_phase
    from ..evals.config import evals_profile
    from ..inference.config import serving_section
    from ..runtime.executors import executor_settings
    from ..runtime.k8s import k8s_settings
    from ..synth.config import resolve_llm, resolve_synth
    from ..synth.scenarios import load_synth_config
    from ..training.config import training_profile
    from .costs import CostConfig
    from .preflight import preflight_config
    from .schedules import recuration_enabled

    src = profile_source(profile)
    phases = profile.phases
    synth_catalog = load_synth_config(ASSETS_DIR / "synth.yaml")
    return [
        ("curation", lambda: validate_phase(profile, "curation", CurationProfile)),
        ("llm", lambda: resolve_llm(phases.get("llm"), synth_catalog, src)),
        ("synth", lambda: resolve_synth(phases.get("synth"), synth_catalog, src)),
        ("training", lambda: training_profile(profile)),
        ("serving", lambda: serving_section(phases, profile.name, src)),
        ("evals", lambda: evals_profile(profile)),
        ("k8s", lambda: k8s_settings(profile)),
        ("preflight", lambda: preflight_config(profile)),
        ("ops.datatrove_executor", lambda: executor_settings(profile)),
        ("ops", lambda: CostConfig.from_profile_section(phases.get("ops"))),
        ("ops.scheduled_recuration", lambda: recuration_enabled(profile)),
    ]


def profile_problems(profile: Profile) -> list[str]:
    """One line per problem of every phase section, each naming the profile file and the key."""
    src = profile_source(profile)
    lines: list[str] = []
    for section, check in _checks(profile):
        try:
            check()
        except CatalogError as e:
            lines += str(e).splitlines()
        except (ValueError, TypeError) as e:  # readers that check by hand: name the file and section
            text = str(e)
            lines += [text if text.startswith(src) else f"{src}: phases.{section}: {text}"]
    return lines


def check_profile(profile: Profile) -> Profile:
    """``profile``, or CatalogError with :func:`profile_problems` when there are any."""
    if problems := profile_problems(profile):
        raise CatalogError("\n".join(problems))
    return profile
