"""Pydantic models of the catalog and profile YAML files. Unknown keys are errors (typos bite)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, StrictBool, StrictInt, field_validator,
                      model_validator)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# A git ref as the Hub takes it: a commit sha, a branch ("main"), or refs/... (refs/pr/5).
_REVISION = re.compile(r"^([0-9a-f]{40}|[A-Za-z0-9][\w.-]*(/[\w.-]+)*)$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
PIN_COMMAND = "python -m surrogate_dagster.cli pin-revisions --source {name}"


def is_pinned(revision: str) -> bool:
    """True for a 40-hex commit sha; a branch or refs/... name moves under the pipeline."""
    return bool(_SHA.match(revision))


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _not_bool(v: Any) -> Any:
    # pydantic reads `true` as 1.0 for a float; a budget of "true" is a mistake, not $1.
    if isinstance(v, bool):
        raise ValueError("must be an amount in US dollars, not true/false")
    return v


# A budget in US dollars: a finite number above zero (`.inf` would mean no budget at all).
Money = Annotated[float, BeforeValidator(_not_bool), Field(gt=0, allow_inf_nan=False)]


# ---------------------------------------------------------------- sources.yaml

class RowFilter(Strict):
    """A keep-rule applied while mirroring: rows failing it are not mirrored (counted by rule)."""

    column: str
    op: Literal[">=", ">", "<=", "<", "==", "!=", "in", "truthy"]
    value: Any = None
    # Upstream types are inconsistent (OpenCodeInstruct's score is "1" in some shards, 1.0 in
    # others), so a filter may coerce before comparing; an uncoercible value is quarantined.
    coerce: Literal["float", "int", "str", "bool", "lower"] | None = None
    # Some rules hold for one config only (rStar's `is_passed` exists in seed_sft alone).
    configs: list[str] | None = None

    @property
    def name(self) -> str:
        return f"{self.column}{self.op}{self.value}" if self.op != "truthy" else f"{self.column}"


class SourceSpec(Strict):
    """One upstream dataset as the runbook uses it."""

    name: str = Field(description="partition key, snake_case")
    family: Literal["code_sft", "tool", "agent", "dpo", "helper"]
    hf_id: str
    configs: list[str] = Field(default_factory=lambda: ["default"])
    splits: list[str] = Field(default_factory=lambda: ["train"])
    # A 40-hex commit in the catalog file (SourcesCatalog refuses anything else); "main" is the
    # default only for specs built in code (tests, ad-hoc mirrors).
    revision: str = "main"
    cap: StrictInt | None = Field(default=None, gt=0, description="the runbook's row cap (a ceiling)")
    filters: list[RowFilter] = Field(default_factory=list)
    # Sampling under the cap (sources/sampling.py). `group_by` names the problem: the first
    # non-empty of these native columns; with it, the cap is spread round-robin over problems
    # instead of taking the first rows of the file.
    group_by: list[str] | None = Field(default=None, min_length=1)
    sample_seed: StrictInt = 0
    sample_pool: StrictInt | None = Field(default=None, gt=0,
                                    description="rows passing the filters to choose from (default: all)")
    adapter: str | None = None
    columns: list[str] | None = Field(default=None, description="project columns when mirroring")
    license: str | None = None
    notes: str = ""

    @field_validator("name")
    @classmethod
    def _snake(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be snake_case: lowercase letters, digits and _")
        return v

    @field_validator("hf_id")
    @classmethod
    def _hf_id(cls, v: str) -> str:
        if v.count("/") != 1 or not all(v.split("/")):
            raise ValueError("must be '<org>/<name>'")
        return v

    @field_validator("revision")
    @classmethod
    def _rev(cls, v: str) -> str:
        if not _REVISION.match(v):
            raise ValueError("must be a 40-hex commit sha or a ref name (main, refs/pr/5)")
        return v

    @model_validator(mode="after")
    def _adapter_needed(self) -> "SourceSpec":
        if self.family != "helper" and not self.adapter:
            raise ValueError(f"source {self.name}: non-helper sources need an adapter")
        return self


class SourcesCatalog(Strict):
    sources: list[SourceSpec]
    helpers: list[SourceSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> "SourcesCatalog":
        seen: set[str] = set()
        for s in [*self.sources, *self.helpers]:
            if s.name in seen:
                raise ValueError(f"duplicate source name {s.name!r}")
            seen.add(s.name)
        for h in self.helpers:
            if h.family != "helper":
                raise ValueError(f"helper {h.name!r} must have family: helper")
        # A moving ref lets upstream change what a partition holds between two runs with no edit
        # here; a pin makes every content change a one-line reviewed diff of this file.
        moving = [s for s in [*self.sources, *self.helpers] if not is_pinned(s.revision)]
        if moving:
            lines = [f"source {s.name!r} ({s.hf_id}): revision {s.revision!r} is a moving ref, "
                     f"not a 40-hex commit sha; pin it with `{PIN_COMMAND.format(name=s.name)}`"
                     for s in moving]
            raise ValueError("; ".join(lines))
        return self

    def by_name(self, name: str) -> SourceSpec:
        for s in [*self.sources, *self.helpers]:
            if s.name == name:
                return s
        raise KeyError(f"no source named {name!r} in the catalog")

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sources]


# ---------------------------------------------------------------- resources/*.yaml

class LocalStoreConfig(Strict):
    kind: Literal["local"]
    root: str


class S3StoreConfig(Strict):
    kind: Literal["s3"]
    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str = "us-east-1"
    access_key_env: str = "WASABI_ACCESS_KEY"
    secret_key_env: str = "WASABI_SECRET"
    max_attempts: StrictInt = 8


class HubConfig(Strict):
    """`offline` reads a local mirror laid out like the Hub; `online` streams from the HF Hub."""

    mode: Literal["offline", "online"]
    mirror_dir: str | None = None
    token_env: str = "HF_TOKEN"
    org: str = Field(description="where pushed datasets and models go")
    endpoint: str | None = Field(default=None, description="online: the Hub's URL (null: huggingface.co or "
                                                           "HF_ENDPOINT); a rehearsal points it at a local server")
    push_dir: str | None = Field(default=None, description="offline: where pushes land")

    @model_validator(mode="after")
    def _offline_dirs(self) -> "HubConfig":
        if self.mode == "offline" and not (self.mirror_dir and self.push_dir):
            raise ValueError("offline hub needs mirror_dir and push_dir")
        return self


# The sections a profile's `phases` may hold, each read by its phase (or layer).
PHASE_SECTIONS = ("curation", "llm", "synth", "ops", "training", "serving", "evals", "k8s", "preflight")


class OpsSection(Strict):
    """``phases.ops``: the keys its readers take (validated at load, so a misspelt ``dagster_hom``
    is refused instead of falling back to the default). The nested ``datatrove_executor``,
    ``costs`` and ``budget`` mappings are checked by their readers (runtime/executors.py,
    operations/costs.py), which know each executor kind's and the ledger's keys."""

    dagster_home: str | None = Field(None, description="the Dagster instance folder make run, make ui and the CLI share")
    scheduled_recuration: StrictBool = False
    datatrove_executor: dict[str, Any] | None = None
    costs: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None


class Profile(Strict):
    """A deployment profile. Sections for later phases are free-form until their phase types them."""

    name: str
    description: str = ""
    object_store: LocalStoreConfig | S3StoreConfig = Field(discriminator="kind")
    hub: HubConfig
    # Phase sections, each validated by the phase that reads it; the names are checked here, so a
    # misspelt section (`servng`) is an error, not a silent fall-back to the defaults.
    phases: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # The file it was loaded from (catalog.loader.load_profile), named by phase-section errors.
    _source: str = PrivateAttr("")

    @field_validator("phases")
    @classmethod
    def _known_sections(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        import difflib

        unknown = sorted(set(v) - set(PHASE_SECTIONS))
        if unknown:
            hints = [f"{u!r} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(u, PHASE_SECTIONS, 1))
                     else repr(u) for u in unknown]
            raise ValueError(f"unknown phases section(s) {', '.join(hints)}; known: {', '.join(PHASE_SECTIONS)}")
        return v
