"""Informative thresholds: a bar that is not the runbook's figure on the runbook's quantity is shown and
recorded but never gates: not the release, not the Day-14 smoke gate, not a check's severity. The catalog
refuses a gating variant threshold that is not the runbook's figure."""

from __future__ import annotations

import pytest
import yaml
from dagster import AssetCheckSeverity

from surrogate_dagster.evals.checks import gate_result, smoke_gate_result, smoke_gates
from surrogate_dagster.evals.config import TIER1, TIER2, EvalsProfile, gating, load_eval_catalog
from surrogate_dagster.evals.gates import decide, tally, tally_line, target_gate
from surrogate_dagster.evals.outcome import scoreboard_markdown, scoreboard_rows
from surrogate_dagster.evals.release import release_gates
from surrogate_dagster.paths import ASSETS_DIR

# The runbook's gate list (Day 13 targets, Success Definition), by benchmark, on the runbook's quantity.
RUNBOOK_FIGURES = {"humaneval_plus": 84, "mbpp_plus": 75, "livecodebench": 42, "bfcl": 70, "ruler_32k": 90,
                   "swebench_lite": 25, "noleak": 100}


def S(score, revision="r", **kw):
    return {"score": score, "status": "ok", "variant": "v", "version": "1", "n_items": 10, "score_name": "x",
            "checkpoint": {"revision": revision}, **kw}


def _raw() -> dict:
    return yaml.safe_load((ASSETS_DIR / "evals.yaml").read_text())


def _load(tmp_path, raw):
    p = tmp_path / "evals.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_eval_catalog(p)


def test_every_gating_threshold_is_the_runbooks_figure():
    cat = load_eval_catalog()
    prof = EvalsProfile(offline=False)
    for b in (*TIER1, *TIER2):
        bench = cat.bench(b)
        assert bench.threshold == RUNBOOK_FIGURES.get(b), b  # the runbook's figure, or none where it sets none
        thr = bench.variant.threshold if bench.variant else bench.threshold
        if thr is not None and gating(cat, prof, b):
            assert thr == RUNBOOK_FIGURES[b], b


def test_an_invented_variant_threshold_must_be_informative(tmp_path):
    raw = _raw()
    raw["tier1"]["livecodebench"]["variant"]["threshold"] = 40  # not the runbook's 42
    raw["tier1"]["livecodebench"]["variant"].pop("informative", None)
    with pytest.raises(ValueError, match="not the runbook's figure.*informative"):
        _load(tmp_path, raw)
    raw["tier1"]["livecodebench"]["variant"]["informative"] = True
    cat = _load(tmp_path, raw)
    assert not gating(cat, EvalsProfile(offline=False), "livecodebench")


def test_a_profile_override_gates():
    cat = load_eval_catalog()
    prof = EvalsProfile(offline=True, thresholds={"bfcl": 5.0}, thresholds_label="local bar")
    assert gating(cat, prof, "bfcl")


def test_an_informative_miss_never_blocks_and_is_counted_apart():
    gating_ok = target_gate("a", S(90.0), 84)
    info_miss = target_gate("b", S(10.0), 80, blocking=False)
    assert not info_miss.passed and not info_miss.blocking
    assert info_miss.description.startswith("informative (not gating): score 10.0 < target 80")
    assert info_miss.metadata["gating"] is False
    assert decide([gating_ok, info_miss]) == (True, [])
    assert tally([gating_ok, info_miss]) == {"passed": 1, "failed": 0, "pending": 0, "informative": 1}
    assert tally_line([gating_ok, info_miss]) == "0 failed, 1 informative not met (not gating), 1 passed of 2 gates"
    # the same score against a gating target blocks
    assert decide([gating_ok, target_gate("b", S(10.0), 80)])[0] is False


def test_an_informative_miss_is_a_warning_check_even_on_the_release():
    res = gate_result("meets_target", target_gate("b", S(10.0), 80, blocking=False), error=True, bench="bfcl")
    assert not res.passed and res.severity == AssetCheckSeverity.WARN
    res = gate_result("meets_target", target_gate("b", S(10.0), 80), error=True, bench="bfcl")
    assert res.severity == AssetCheckSeverity.ERROR


def _informative_catalog(tmp_path):
    """The shipped catalog with humaneval_plus's figure turned into an informative variant bar."""
    raw = _raw()
    raw["tier1"]["humaneval_plus"]["variant"] = {"name": "he-x", "differs": "x", "threshold": 99,
                                                 "reason": "a test bar", "informative": True}
    return _load(tmp_path, raw)


def test_smoke_gate_and_release_ignore_an_informative_miss(tmp_path):
    cat = _informative_catalog(tmp_path)
    prof = EvalsProfile(offline=True)
    # every benchmark meets the runbook's figures; humaneval_plus misses only the informative 99
    scores = {b: 100.0 for b in (*TIER1, *TIER2)}
    scores["humaneval_plus"] = 90.0
    summaries = {(c, b): S(scores[b], revision=f"rev-{c}") for c in cat.evaluated for b in (*TIER1, *TIER2)}
    smoke = smoke_gates(cat, prof, summaries, f"rev-{cat.smoke_gate.checkpoint}")
    check, meta = smoke_gate_result(smoke, "enforce", None)
    assert check.passed and meta["smoke_tests_passed"] and meta["failed_gates"] == 0
    assert "1 informative not met" in check.description
    revisions = {c: f"rev-{c}" for c in cat.checkpoints}
    gates = release_gates(cat, prof, summaries, revisions)
    promote, failed = decide(gates)
    assert promote and failed == []
    miss = [g for g in gates if not g.passed]
    assert [g.name for g in miss] == [f"{cat.release.checkpoint}/humaneval_plus: meets_target"]
    rows = scoreboard_rows(cat.release.checkpoint, [("tier1", b) for b in TIER1], summaries, gates)
    he = next(r for r in rows if r["benchmark"] == "humaneval_plus")
    assert he["verdict"] == "informative" and he["target"] == 99
    assert "| humaneval_plus | tier1 | 90.00 | >= 99 (informative) | **informative** |" in scoreboard_markdown(rows)
    # the same miss with the bar gating: the smoke gate fails and nothing is promoted
    raw = _raw()
    raw["tier1"]["humaneval_plus"]["threshold"] = 99
    strict = _load(tmp_path, raw)
    assert not smoke_gate_result(smoke_gates(strict, prof, summaries, f"rev-{strict.smoke_gate.checkpoint}"),
                                 "enforce", None)[0].passed
    assert decide(release_gates(strict, prof, summaries, revisions))[0] is False

