"""The synthesis volume projection prices a token profile, and the traces section is validated
(the volume runs: tests/integration/test_synth_volume.py)."""

from __future__ import annotations

import math

import pytest
import yaml

from surrogate_dagster.paths import ASSETS_DIR
from surrogate_dagster.synth.config import synth_catalog
from surrogate_dagster.synth.projection import CALL_KINDS, measure_profile, project
from surrogate_dagster.synth.scenarios import load_synth_config


CAT = synth_catalog()


def test_projection_prices_a_token_profile():
    profile = {"planner": {"calls": 2, "batched_calls": 0, "input_tokens": 1000, "output_tokens": 500,
                           "cache_creation_input_tokens": 100, "cache_read_input_tokens": 4000},
               "judge": {"calls": 1, "batched_calls": 1, "input_tokens": 2000, "output_tokens": 50,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
    models = {"planner": "claude-opus-5-5", "judge": "claude-opus-5-5"}
    p = project(profile, models=models, prices=CAT["prices_per_mtok"], budget_usd=200, spent_usd=20)
    # Opus 5.5's list prices: $4 in, $20 out, its own cache prices $5 (write) and $0.20 (read)
    planner = (1000 * 4 + 100 * 5.0 + 4000 * 0.2 + 500 * 20) / 1e6
    judge = 0.5 * (2000 * 4 + 50 * 20) / 1e6
    assert p["by_kind"]["planner"]["usd_per_trace"] == pytest.approx(planner, abs=1e-6)
    assert p["by_kind"]["judge"]["usd_per_trace"] == pytest.approx(judge, abs=1e-6)
    assert p["projected_cost_per_trace_usd"] == pytest.approx(planner + judge, abs=1e-6)
    assert p["traces_the_budget_buys"] == math.floor(180 / (planner + judge))
    assert measure_profile({"judge": {"calls": 10, "batched_calls": 10, "input_tokens": 500}}, 5)["judge"] == {
        "calls": 2.0, "batched_calls": 2.0, "input_tokens": 100.0, "output_tokens": 0.0,
        "cache_creation_input_tokens": 0.0, "cache_read_input_tokens": 0.0}
    with pytest.raises(ValueError, match="no accepted trace"):
        measure_profile({}, 0)
    # the catalog's measured profile covers every call kind and prices to a positive projection
    cat = project(CAT["traces"]["measured_tokens_per_trace"], models=CAT["models"], prices=CAT["prices_per_mtok"],
                  budget_usd=CAT["budget_usd"])
    assert set(cat["by_kind"]) == set(CALL_KINDS) and cat["traces_the_budget_buys"] >= 500


def test_traces_section_is_validated(tmp_path):
    raw = yaml.safe_load((ASSETS_DIR / "synth.yaml").read_text())
    raw["traces"]["measured_tokens_per_trace"].pop("judge_2")
    bad = tmp_path / "synth.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="every call kind"):
        load_synth_config(bad)
    raw = yaml.safe_load((ASSETS_DIR / "synth.yaml").read_text())
    raw["traces"]["max_attempts_per_scenario"] = 0
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="max_attempts_per_scenario"):
        load_synth_config(bad)
