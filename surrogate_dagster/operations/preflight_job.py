"""The `preflight` job: one op that runs every pre-flight check (operations/preflight.py) on a
profile and fails, listing every problem, when any check fails. The table is in the op's log and
its output metadata either way."""


from dagster import Config, Failure, MetadataValue, OpExecutionContext, Output, job, op
from typing import Optional

from pydantic import Field

from ..catalog.loader import load_profile
from .preflight import problems, render_table, run_preflight


class PreflightConfig(Config):
    profile: Optional[str] = Field(default=None, description="profile name or YAML path (default: SURROGATE_PROFILE)")
    skip: list[str] = Field(default_factory=list, description="check groups to skip: hf, pins, s3, anthropic, gpu")
    catalog: Optional[str] = Field(default=None, description="the sources file (default: assets/sources.yaml)")


@op(description="read-only checks of the HF token and pins, the bucket, the Anthropic models and the GPU host")
def preflight_checks(context: OpExecutionContext, config: PreflightConfig) -> Output[int]:
    profile = load_profile(config.profile)
    rows = run_preflight(profile, skip=config.skip, sources_path=config.catalog)
    table = render_table(rows)
    context.log.info(f"pre-flight, profile {profile.name}\n{table}")
    bad = problems(rows)
    meta = {"profile": profile.name, "failed": len(bad), "table": MetadataValue.md(f"```\n{table}\n```")}
    if bad:
        raise Failure(description=f"{len(bad)} pre-flight check(s) failed:\n"
                      + "\n".join(f"- {r.check} {r.target}: {r.detail}" for r in bad), metadata=meta)
    return Output(len(rows), metadata=meta)  # the number of checks run


@job(description="the runbook's pre-flight checklist (`python -m surrogate_dagster.cli preflight`)")
def preflight():
    preflight_checks()


preflight_job = preflight
