"""The code location: every asset, check, job, schedule and sensor, with the active profile's resources.

Select the profile with SURROGATE_PROFILE (default `local`, see resources/*.yaml).
"""

import warnings

from dagster import BetaWarning, Definitions, in_process_executor

# observable_source_asset (hf_revisions) is beta in Dagster 1.13; we pin Dagster exactly.
warnings.filterwarnings("ignore", category=BetaWarning)

from .catalog import load_profile
from .curation.assets import CURATION_ASSETS, CURATION_CHECKS
from .curation.resource import curation_resources
from .evals import EVAL_ASSETS, EVAL_CHECKS, eval_resources
from .operations import OPS_ASSETS, OPS_CHECKS, OPS_JOBS, ops_resources, ops_schedules, ops_sensors
from .operations.profile_check import check_profile
from .operations.sensors import with_recuration_condition
from .resources import resources_for_profile
from .runtime.k8s import k8s_executor
from .sources.assets import helper_rows, normalized_rows, source_rows
from .synth.assets import SYNTH_ASSETS, synth_resources
from .training import training_assets, training_resources
from .training.mixture_views import mixture_views_asset

# Every phase section validated before anything is built: one message with every problem.
PROFILE = check_profile(load_profile())


def build_resources(profile) -> dict:
    """Every resource of a profile, keyed as the assets' parameters name them: the shared ones
    (object store, hub) and each phase's, each built from its validated profile section."""
    return {**resources_for_profile(profile), **curation_resources(profile), **synth_resources(profile),
            **training_resources(profile), **eval_resources(profile), **ops_resources(profile)}


# the sources and curation assets re-run declaratively when a source's revision changes
ASSETS = with_recuration_condition([
    source_rows, helper_rows, normalized_rows, *CURATION_ASSETS, *SYNTH_ASSETS, *training_assets(PROFILE),
    mixture_views_asset(PROFILE), *EVAL_ASSETS, *OPS_ASSETS])

defs = Definitions(
    assets=ASSETS,
    # the cluster profile: one pod per step, the steps that serve a checkpoint in the GPU image
    # (runtime/k8s.py); the local profile: every step of a UI-launched run in the run's own process
    # (the multiprocess default starts a fresh interpreter per step: 4-8 s of imports each on a
    # 2-core box, a one-source chain 24 s instead of 10 s); elsewhere Dagster's default executor
    executor=k8s_executor(PROFILE, ASSETS) or (in_process_executor if PROFILE.name == "local" else None),
    asset_checks=[*CURATION_CHECKS, *EVAL_CHECKS, *OPS_CHECKS],
    jobs=OPS_JOBS,
    schedules=ops_schedules(PROFILE),
    sensors=ops_sensors(PROFILE),
    resources=build_resources(PROFILE),
)
