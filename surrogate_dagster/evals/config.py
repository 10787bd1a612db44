"""Typed models of assets/evals.yaml (what is evaluated, the targets) and of a profile's
``phases.evals`` section (where and how: online or offline data, inference backend, local sizes).
Unknown keys are errors; a broken file fails definitions loading with the file, key and expectation.

A benchmark's ``threshold`` is the runbook's figure and applies only to the benchmark run as the
runbook defines it. A Tier-1 benchmark configured differently (another BFCL version or scorer, an
LCB date window) is a variant: it must declare ``variant:`` with its own threshold and the reason,
and the gates use that threshold (``threshold()``). A variant without its own threshold fails catalog
loading, so the runbook's figure is never compared with something else. RULER's figure is the mean
over its 13 tasks; a profile that cannot run all of them (an offline profile without the tasks whose
data is fetched, a profile's skip) runs its ``partial:`` variant, chosen per profile
(``ruler_not_run``) because which tasks run depends on the profile.

A threshold that is not the runbook's figure on the runbook's quantity (a bar this project chose for
a variant, before any model was measured on it) is ``informative: true``: it is shown beside the
score and recorded as a gate, but it does not gate (the release, the smoke gate and the checks'
severities ignore it) until it is calibrated on the base model's report. A variant's gating
threshold must equal the runbook's figure, with the reason it is the same quantity.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictInt, model_validator

from ..catalog.loader import load_yaml_model, validate_phase
from ..catalog.models import Profile, Strict
from ..paths import ASSETS_DIR, resolve_repo_path

TIER1 = ("humaneval_plus", "mbpp_plus", "livecodebench", "bfcl", "ruler_32k", "ruler_128k")
TIER2 = ("swebench_lite", "devsecops", "gaia_level1", "noleak")




class Variant(Strict):
    """What this project runs instead of the runbook's definition, and the bar it is held to."""

    name: str = Field(min_length=1, description="short id of the variant, e.g. bfcl-ast-11-single-turn-v4")
    differs: str = Field(min_length=1, description="how it differs from the runbook's run")
    # Required (no default): a variant never falls back to the runbook's figure. null = no target.
    threshold: float | None = Field(description="the variant's own gate: score >= threshold (percent)")
    reason: str = Field(min_length=1, description="why this threshold for this variant")
    informative: bool = Field(default=False, description="shown, never gating: not the runbook's figure on "
                                                         "the runbook's quantity (calibrate on the base model)")


class Bench(Strict):
    threshold: float | None = Field(default=None, description="the runbook's figure: score >= threshold (percent), "
                                                              "for the benchmark as the runbook runs it")
    variant: Variant | None = None
    informative: bool = Field(default=False, description="the threshold is shown, never gating")
    max_new_tokens: StrictInt = Field(default=512, gt=0)

    @model_validator(mode="after")
    def _invented_thresholds_are_informative(self) -> "Bench":
        v = self.variant
        if v is not None and v.threshold is not None and not v.informative and v.threshold != self.threshold:
            raise ValueError(f"variant {v.name}: threshold {v.threshold} is not the runbook's figure "
                             f"({self.threshold}); a bar the project chose gates nothing: mark it `informative: true`")
        return self


class MbppBench(Bench):
    offline_file: str


class LcbBench(Bench):
    release: str
    files: list[str]
    revision: str = "main"
    cutoff: date
    standin_file: str
    timeout_s: float = 6.0


class BfclBench(Bench):
    categories: list[str] = Field(description="bfcl-eval category names run here")
    not_run: dict[str, str] = Field(default_factory=dict, description="leaderboard categories not run: why")

    @model_validator(mode="after")
    def _every_leaderboard_category_accounted_for(self) -> "BfclBench":
        from .harness.bfcl_overall import SHOWN_NOT_SCORED, leaves

        both = set(self.categories) & set(self.not_run)
        if both:
            raise ValueError(f"bfcl: {sorted(both)} both run and not run")
        missing = [c for c in [*leaves(), *SHOWN_NOT_SCORED] if c not in self.categories and c not in self.not_run]
        if missing:
            raise ValueError(f"bfcl: leaderboard categories neither run nor listed in not_run (with why): {missing}")
        return self


class RulerBench(Bench):
    """lm-eval's RULER tasks at one length; the score is the mean over the tasks run (evals/harness/ruler.py)."""

    length: StrictInt = Field(gt=0)
    tasks: list[str] = Field(min_length=1, description="lm-eval RULER task names run (the ruler group: 13)")
    online_only: dict[str, str] = Field(default_factory=dict, description="tasks whose data lm-eval fetches "
                                                                          "at run time (not run offline): why")
    partial: Variant | None = Field(default=None, description="the bar of a run over fewer than the 13 tasks")
    samples_per_task: StrictInt = Field(default=25, gt=0, description="lm-eval --limit per task")
    timeout_s: StrictInt = Field(default=21600, gt=0, description="the whole lm-eval run's time budget")
    request_timeout_s: StrictInt = Field(default=1800, gt=0, description="one request's budget, queueing on the "
                                                                         "server included (lm-eval's timeout)")
    concurrency: StrictInt = Field(default=8, gt=0, description="requests in flight at once (lm-eval's "
                                                                "num_concurrent); one against a stand-in")

    @model_validator(mode="after")
    def _tasks_are_lm_evals(self) -> "RulerBench":
        from .harness.ruler import RULER_TASKS

        unknown = [t for t in [*self.tasks, *self.online_only] if t not in RULER_TASKS]
        if unknown:
            raise ValueError(f"ruler: unknown task(s) {unknown}; lm-eval's ruler group has {list(RULER_TASKS)}")
        if self.threshold is not None and self.partial is None:
            raise ValueError("ruler: a threshold on the 13-task mean needs `partial:` (the bar of a run over "
                             "fewer tasks), so a partial mean is never held to the 13-task figure silently")
        if self.request_timeout_s >= self.timeout_s:
            raise ValueError(f"ruler: request_timeout_s {self.request_timeout_s} must be below the whole run's "
                             f"timeout_s {self.timeout_s}")
        p = self.partial
        if p is not None and p.threshold is not None and not p.informative:
            raise ValueError(f"ruler partial variant {p.name}: a mean over fewer than 13 tasks is not the runbook's "
                             "quantity; its threshold gates nothing: mark it `informative: true`")
        return self


class DevsecopsBench(Bench):
    seed: str
    target_total: StrictInt = Field(default=280, gt=0)


class SweAgentScaffold(Strict):
    """The agent scaffold that makes SWE-bench patches (mini-swe-agent, evals/harness/swe_agent.py)."""

    agent_config: str = Field(default="swebench_backticks.yaml",
                              description="one of mini-swe-agent's own config files (its prompts and templates)")
    step_limit: StrictInt = Field(gt=0, description="model calls per instance before the agent stops")
    cost_limit: float = Field(default=0.0, ge=0, description="USD per instance; 0: none (a served model has no price)")
    command_timeout_s: StrictInt = Field(default=60, gt=0, description="per bash command")
    wall_time_limit_s: StrictInt = Field(default=0, ge=0, description="per instance; 0: none")
    temperature: float | None = Field(default=0.0, ge=0, description="null: the server's default")
    workers: StrictInt = Field(default=1, gt=0, description="instances run at once")
    model_retries: StrictInt = Field(default=3, gt=0, description="attempts per model call (mini-swe-agent's retry)")
    environment: Literal["bubblewrap", "local"] = Field(
        default="bubblewrap", description="where the agent's commands run: mini-swe-agent's BubblewrapEnvironment "
                                          "(the checkout only) or LocalEnvironment (a plain subprocess)")


class SwebenchBench(Bench):
    scaffold: SweAgentScaffold
    harness_workers: StrictInt = Field(default=4, gt=0, description="swebench run_evaluation --max_workers")
    partial: Variant | None = Field(default=None, description="the bar of a run over a subset of the 300 "
                                                              "instances (a profile's max_items)")

    @model_validator(mode="after")
    def _subset_never_gates(self) -> "SwebenchBench":
        if self.threshold is not None and self.partial is None:
            raise ValueError("swebench_lite: a threshold on the 300-instance share needs `partial:` (the bar of a "
                             "max_items subset), so a subset's share is never held to the whole figure silently")
        p = self.partial
        if p is not None and p.threshold is not None and not p.informative:
            raise ValueError(f"swebench_lite partial variant {p.name}: a share over a subset of the 300 instances "
                             "is not the runbook's quantity; its threshold gates nothing: mark it `informative: true`")
        return self


class NoleakBench(Bench):
    prompts: StrictInt = Field(default=100, gt=0)
    canaries_per_kind: StrictInt = Field(default=4, gt=0)
    canary_rate: float = Field(default=0.01, gt=0, le=1)
    seed: StrictInt = 0


def runbook_mismatch(name: str, bench: Bench) -> str | None:
    """How the configured run differs from the runbook's definition of the benchmark (None: it is
    the runbook's run). The harness facts here are fixed in code: BFCL is bfcl-eval's generation and
    evaluation, the leaderboard's overall over the categories run (evals/harness/bfcl.py). RULER is
    lm-eval's ruler group; a configured task list short of its 13 tasks is a variant (a profile that runs
    fewer is handled per profile: ``ruler_not_run``)."""
    if isinstance(bench, BfclBench):
        if bench.not_run:
            return (f"BFCL v4 leaderboard overall without {sorted(bench.not_run)} (weights renormalized), "
                    "not over every category of `--test-category all`")
        return None
    if isinstance(bench, LcbBench):
        return f"only {bench.release} problems released on/after {bench.cutoff}, not the whole release"
    if isinstance(bench, RulerBench):
        from .harness.ruler import RULER_TASKS

        missing = [t for t in RULER_TASKS if t not in bench.tasks]
        return f"RULER without {missing}, not lm-eval's whole ruler group" if missing else None
    return None


class Tier1(Strict):
    humaneval_plus: Bench
    mbpp_plus: MbppBench
    livecodebench: LcbBench
    bfcl: BfclBench
    ruler_32k: RulerBench
    ruler_128k: RulerBench

    @model_validator(mode="after")
    def _variants_have_own_thresholds(self) -> "Tier1":
        for name in TIER1:
            bench = getattr(self, name)
            why = runbook_mismatch(name, bench)
            if why and bench.variant is None:
                raise ValueError(
                    f"tier1.{name} is a variant ({why}): the runbook's figure ({bench.threshold}) applies only to "
                    f"the runbook's run; declare `variant:` with name, differs, its own threshold and the reason")
        return self


class Tier2(Strict):
    swebench_lite: SwebenchBench
    devsecops: DevsecopsBench
    gaia_level1: Bench
    noleak: NoleakBench


class Release(Strict):
    checkpoint: str
    hub_repo: str


class Regression(Strict):
    tolerance: float = Field(gt=0, lt=1)
    mode: Literal["relative", "points"] = "relative"


class SmokeGate(Strict):
    """Runbook Day 14: "If smoke tests pass -> proceed to Stage 2"."""

    checkpoint: str = Field(description="the checkpoint whose Tier-1 smoke tests gate what follows")
    asset: str = Field(description="the gate asset; the assets it gates list it in their deps")


class EvalCatalog(Strict):
    baseline: str = Field(default="base_model", description="the untrained base model asset: checkpoint 0 of "
                                                              "every Tier-1 benchmark (\"don't regress base\")")
    checkpoints: list[str]
    release: Release
    smoke_gate: SmokeGate
    regression: Regression
    tier1: Tier1
    tier2: Tier2

    @model_validator(mode="after")
    def _release_is_a_checkpoint(self) -> "EvalCatalog":
        if self.release.checkpoint not in self.checkpoints:
            raise ValueError(f"release.checkpoint {self.release.checkpoint!r} is not in checkpoints")
        if len(set(self.checkpoints)) != len(self.checkpoints):
            raise ValueError("checkpoints must be unique")
        if self.baseline in self.checkpoints:
            raise ValueError(f"baseline {self.baseline!r} is evaluated as checkpoint 0; do not list it in checkpoints")
        if self.smoke_gate.checkpoint not in self.checkpoints:
            raise ValueError(f"smoke_gate.checkpoint {self.smoke_gate.checkpoint!r} is not in checkpoints")
        return self

    @property
    def evaluated(self) -> list[str]:
        """Every model with Tier-1 reports: the baseline, then the checkpoints in training order."""
        return [self.baseline, *self.checkpoints]

    def previous(self, checkpoint: str) -> str | None:
        """The model a checkpoint's regression gate compares with (the baseline for the first)."""
        seq = self.evaluated
        i = seq.index(checkpoint)
        return seq[i - 1] if i else None

    def bench(self, name: str) -> Bench:
        if name in TIER1:
            return getattr(self.tier1, name)
        if name in TIER2:
            return getattr(self.tier2, name)
        raise KeyError(f"unknown benchmark {name!r}")


# ---------------------------------------------------------------- the profile's phases.evals

class InferenceSection(Strict):
    backend: Literal["transformers", "vllm_server", "vllm_offline"] = "transformers"
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: StrictInt = Field(default=16, gt=0)
    max_context: StrictInt | None = None
    threads: StrictInt | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: StrictInt = 32
    # backend vllm_server: base_url names a server run elsewhere; without it the profile's
    # phases.serving runs one per step (evals/resources.py checks that one of them is set)


class BenchOverride(Strict):
    """Smaller runs for a small machine; each one is named in the report's notes."""

    max_items: StrictInt | None = Field(default=None, gt=0)
    max_new_tokens: StrictInt | None = Field(default=None, gt=0)
    length: StrictInt | None = Field(default=None, gt=0)
    length_label: str | None = None
    samples_per_task: StrictInt | None = Field(default=None, gt=0)
    timeout_s: StrictInt | None = Field(default=None, gt=0)
    max_per_category: StrictInt | None = Field(default=None, gt=0)
    cutoff: date | None = None
    step_limit: StrictInt | None = Field(default=None, gt=0, description="SWE-bench: the agent's step limit")
    target_total: StrictInt | None = Field(default=None, gt=0)
    skip: dict[str, str] = Field(default_factory=dict, description="categories/tasks this profile leaves out: why")


class EvalsProfile(Strict):
    """``phases.evals`` of a deployment profile."""

    offline: bool = Field(description="offline variants: shared benchmark copies, LCB stand-in, no GAIA/SWE-bench")
    benchmarks_dir: str = "{shared}/data/benchmarks"
    work_dir: str = "var/work/evals"
    inference: InferenceSection = InferenceSection()
    overrides: dict[str, BenchOverride] = Field(default_factory=dict)
    thresholds: dict[str, float | None] = Field(default_factory=dict)
    thresholds_label: str | None = Field(default=None, description="required with thresholds: why they differ")
    smoke_gate: Literal["enforce", "report_only"] = Field(
        default="enforce", description="enforce: a failing smoke gate blocks what it gates (the runbook); "
                                       "report_only: it is recorded as failed and overridden")
    smoke_gate_reason: str | None = Field(default=None, description="required with report_only: why the profile "
                                                                    "overrides the runbook's gate")
    sandbox_workers: StrictInt = Field(default=2, gt=0)
    swebench_python: str | None = None
    swe_agent_python: str | None = Field(default=".venv-swe-agent/bin/python",
                                         description="the mini-swe-agent environment's interpreter (make setup)")
    hf_token_env: str = "HF_TOKEN"

    @model_validator(mode="after")
    def _known(self) -> "EvalsProfile":
        for key in [*self.overrides, *self.thresholds]:
            if key not in TIER1 + TIER2:
                raise ValueError(f"unknown benchmark {key!r}; known: {list(TIER1 + TIER2)}")
        if self.thresholds and not self.thresholds_label:
            raise ValueError("thresholds override the runbook's targets: say why in thresholds_label")
        if self.smoke_gate == "report_only" and not self.smoke_gate_reason:
            raise ValueError("smoke_gate: report_only overrides the runbook's Day-14 gate: say why in smoke_gate_reason")
        return self

    def benchmarks_path(self) -> Path:
        return resolve_repo_path(self.benchmarks_dir)

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p


def load_eval_catalog(path: str | Path | None = None) -> EvalCatalog:
    return load_yaml_model(path or ASSETS_DIR / "evals.yaml", EvalCatalog)


def evals_profile(profile: Profile) -> EvalsProfile:
    """The profile's ``phases.evals`` (validated); absent -> offline defaults."""
    raw: dict[str, Any] = profile.phases.get("evals") or {"offline": True}
    return validate_phase(profile, "evals", EvalsProfile, raw)


def ruler_not_run(bench: RulerBench, prof: EvalsProfile, name: str) -> dict[str, str]:
    """The RULER tasks this profile does not run, with why: not configured, data fetched at run time
    on an offline profile, the profile's skip (``name``: the benchmark, for the override)."""
    from .harness.ruler import RULER_TASKS

    o = prof.overrides.get(name)
    skip = dict(o.skip) if o else {}
    unknown = [t for t in skip if t not in RULER_TASKS]
    if unknown:
        raise ValueError(f"profile override {name}.skip names tasks that are not RULER's: {unknown}")
    out = {}
    for t in RULER_TASKS:
        if t not in bench.tasks:
            out[t] = "not in assets/evals.yaml's task list"
        elif prof.offline and t in bench.online_only:
            out[t] = f"offline profile: {bench.online_only[t]}"
        elif t in skip:
            out[t] = f"profile override: {skip[t]}"
    return out


def swebench_subset(prof: EvalsProfile, name: str = "swebench_lite") -> int | None:
    """The profile's ``max_items`` for SWE-bench Lite: a subset of the 300 instances (None: all)."""
    o = prof.overrides.get(name)
    return o.max_items if o and o.max_items else None


def _variant_in_force(catalog: EvalCatalog, prof: EvalsProfile, bench: str) -> Variant | None:
    b = catalog.bench(bench)
    if isinstance(b, RulerBench) and b.partial is not None and ruler_not_run(b, prof, bench):
        return b.partial
    if isinstance(b, SwebenchBench) and b.partial is not None and swebench_subset(prof, bench):
        return b.partial
    return b.variant


def threshold(catalog: EvalCatalog, prof: EvalsProfile, bench: str) -> tuple[float | None, str]:
    """(threshold, where it comes from): the profile's override if any; else the variant's own
    threshold when the benchmark runs as a variant (RULER on fewer than its 13 tasks: ``partial``);
    else the runbook's figure."""
    if bench in prof.thresholds:
        return prof.thresholds[bench], f"profile ({prof.thresholds_label})"
    b = catalog.bench(bench)
    v = _variant_in_force(catalog, prof, bench)
    if v is not None and v is not b.variant and isinstance(b, SwebenchBench):
        return v.threshold, (f"variant {v.name} (assets/evals.yaml: this profile runs the first "
                             f"{swebench_subset(prof, bench)} of the 300 instances (max_items); the runbook's "
                             f"figure {b.threshold} is for the whole test split)")
    if v is not None and v is not b.variant:
        return v.threshold, (f"variant {v.name} (assets/evals.yaml: this profile runs "
                             f"{13 - len(ruler_not_run(b, prof, bench))} of the 13 RULER tasks; the runbook's "
                             f"figure {b.threshold} is for the 13-task mean)")
    if b.variant is not None:
        return b.variant.threshold, (f"variant {b.variant.name} (assets/evals.yaml; the runbook's figure "
                                     f"{b.threshold} is for the runbook's run)")
    return b.threshold, "runbook (assets/evals.yaml)"


def gating(catalog: EvalCatalog, prof: EvalsProfile, bench: str) -> bool:
    """Whether ``bench``'s target gate blocks (release, smoke gate): False for an ``informative``
    threshold. A profile's labelled override gates: the profile states it as its bar."""
    if bench in prof.thresholds:
        return True
    b = catalog.bench(bench)
    v = _variant_in_force(catalog, prof, bench)
    return not (v.informative if v is not None else b.informative)
