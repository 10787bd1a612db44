"""The release recomputes every gate from the report summaries: stage 1 regresses against the base model."""

from surrogate_dagster.evals.assets import CATALOG
from surrogate_dagster.evals.config import TIER1, EvalsProfile
from surrogate_dagster.evals.release import release_gates


def _summary(score: float, revision: str) -> dict:
    return {"status": "ok", "score": score, "variant": "v", "version": "1", "n_items": 10,
            "checkpoint": {"revision": revision}}


def test_stage1_regression_gate_compares_with_the_base_model():
    first = CATALOG.checkpoints[0]
    assert CATALOG.previous(first) == CATALOG.baseline
    summaries = {(c, b): _summary(50.0, f"rev-{c}") for c in CATALOG.evaluated for b in TIER1}
    summaries[(CATALOG.baseline, TIER1[0])] = _summary(95.0, "rev-base")  # the base scored far higher
    revisions = {c: f"rev-{c}" for c in CATALOG.checkpoints}
    gates = {g.name: g for g in release_gates(CATALOG, EvalsProfile(offline=False), summaries, revisions)}
    regressed = gates[f"{first}/{TIER1[0]}: no_regression"]
    assert not regressed.passed and CATALOG.baseline in regressed.description
    assert gates[f"{first}/{TIER1[1]}: no_regression"].passed
    assert not any(name.startswith(f"{CATALOG.baseline}/") for name in gates)  # the base is not gated itself
