"""Typed models of ``assets/synth.yaml``: its top level, ``traces`` and ``exec_pairs`` sections.

Every section refuses unknown keys, so a misspelt key is an error instead of a silent default.
Dagster-free, and importing nothing else of the synth package, so the modules that read the
catalog (scenarios.py, config.py, exec_pairs.py) can all use it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictInt, field_validator

from ..catalog.models import Money, Strict

# Every role the synthesis code asks for (scenarios.py, orchestrator.py, validate_traces.py).
ROLES = ("planner", "subagent", "simulator", "scenario_writer", "judge", "judge_2")


class PriceCfg(Strict):
    """US dollars per million tokens."""

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False,
                                      description="5-minute cache write; null: 1.25x input")
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="cache hit; null: 0.1x input")


def positive_max_tokens(v: dict[str, int]) -> dict[str, int]:
    """Output caps per role, each at least one token."""
    bad = {k: n for k, n in v.items() if n < 1}
    if bad:
        raise ValueError(f"max_tokens must be positive: {bad}")
    return v


def known_roles(v: dict[str, Any]) -> dict[str, Any]:
    """A role the synthesis code never asks for is a typo (``planer``), not an extra setting."""
    unknown = sorted(set(v) - set(ROLES))
    if unknown:
        raise ValueError(f"unknown role(s) {unknown}; roles: {list(ROLES)}")
    return v


class TracesCatalog(Strict):
    """The ``traces`` section of assets/synth.yaml (checked further by scenarios.load_synth_config)."""

    max_attempts_per_scenario: StrictInt = Field(ge=1)
    max_fresh_scenarios_per_batch: StrictInt = Field(ge=0)
    measured_tokens_per_trace: dict[str, dict[str, float]]


class DifficultyCfg(Strict):
    """How prompts are ranked (assets/synth.yaml ``exec_pairs.difficulty`` states the rule)."""

    tests_for_max: StrictInt = Field(10, ge=1)
    chars_for_max: StrictInt = Field(2000, ge=1)
    never_passed: float = Field(0.5, ge=0, le=1)


class IacScannerCfg(Strict):
    tool: str = "checkov"
    checks: dict[str, list[str]] = Field(default_factory=dict)


class IoTestsCfg(Strict):
    """How stdin/stdout and call-based cases are run (``exec_pairs.io_tests``)."""

    max_cases: StrictInt = Field(10, ge=1)
    case_timeout_s: float = Field(4.0, gt=0)


class PromptSourceCfg(Strict):
    """One source of prompts with tests (``exec_pairs.sources.<curated source>``)."""

    cap: StrictInt = Field(ge=1)
    tests: Literal["unit_tests", "testcase", "helper_input_output", "rstar_testcase"]
    # helper_input_output: the helper mirrors (assets/sources.yaml helpers) holding input_output;
    # rstar_testcase: the mirror holding rStar's seed_testcase rows
    mirrors: list[str] = Field(default_factory=list)


class ExecPairsCatalog(Strict):
    """The ``exec_pairs`` section of assets/synth.yaml."""

    max_prompts: StrictInt = Field(ge=1)
    sources: dict[str, PromptSourceCfg] = Field(default_factory=dict)
    io_tests: IoTestsCfg = IoTestsCfg()
    difficulty: DifficultyCfg = DifficultyCfg()
    max_pairs_per_prompt: StrictInt = Field(ge=1)
    min_margin: float = Field(gt=0, le=1)
    drop_same_code: bool = True
    iac_scanner: IacScannerCfg = IacScannerCfg()


class SynthCatalog(Strict):
    """The whole of assets/synth.yaml (the seeds' items are checked by scenarios.load_synth_config)."""

    target_count: StrictInt = Field(ge=1)
    per_request: StrictInt = Field(ge=1)
    dedup_jaccard: float = Field(gt=0, le=1)
    batch_size: StrictInt = Field(ge=1)
    max_planner_turns: StrictInt = Field(ge=1)
    budget_usd: Money
    models: dict[str, str]
    max_tokens: dict[str, StrictInt]
    prices_per_mtok: dict[str, PriceCfg]
    seeds: list[dict[str, Any]]
    exec_pairs: ExecPairsCatalog
    traces: TracesCatalog

    @field_validator("models", "max_tokens")
    @classmethod
    def _roles(cls, v: dict[str, Any]) -> dict[str, Any]:
        return known_roles(v)

    @field_validator("max_tokens")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        return positive_max_tokens(v)
