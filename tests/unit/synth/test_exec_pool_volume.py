"""The execution-graded pool at the runbook's volume (Days 15-16: ~5K hard prompts with tests,
4 samples each, 20K-50K pairs), from the per-source row counts assets/synth.yaml cites, and the
code-DPO mixture's share rule at that volume."""

from __future__ import annotations

import pytest

from surrogate_dagster.catalog.loader import load_sources
from surrogate_dagster.curation import checks
from surrogate_dagster.curation.assets import CURATION
from surrogate_dagster.synth.exec_pairs import exec_pairs_catalog, project_pool
from surrogate_dagster.synth.graders import load_devsecops_tasks

CAT = exec_pairs_catalog()
SOURCES = {s.name: s for s in load_sources().sources}
MIRRORED_CONFIGS = len(SOURCES["opc_sft_stage2"].configs)


def available_rows() -> dict[str, int]:
    """Rows with tests per source at the catalog's mirror caps (the counts in assets/synth.yaml):
    every OpenCodeInstruct row carries unit_tests; opc-sft-stage2's cap is interleaved over its
    configs and only educational_instruct has a testcase; OCR-2: the share of its ~10,000 Python
    rows on TACO/APPS problems is unconfirmed, so the smallest share that fills the pool (1,250);
    rStar-Coder's seed_testcase is not mirrored (0)."""
    return {"opencodeinstruct": SOURCES["opencodeinstruct"].cap,
            "opc_sft_stage2": SOURCES["opc_sft_stage2"].cap // MIRRORED_CONFIGS,
            "opencodereasoning_2": 1250, "rstar_coder": 0}


def test_caps_and_counts_are_the_catalogs():
    assert (SOURCES["opencodeinstruct"].cap, SOURCES["opc_sft_stage2"].cap, MIRRORED_CONFIGS) == (10000, 5000, 4)
    assert SOURCES["opencodereasoning_2"].cap == 20000 and SOURCES["opencodereasoning_2"].splits == ["python", "cpp"]
    assert {n: s.cap for n, s in CAT.sources.items()} == {"opencodeinstruct": 2500, "opc_sft_stage2": 1250,
                                                           "opencodereasoning_2": 2500, "rstar_coder": 1250}


def test_the_pool_reaches_5k_prompts_and_20k_pairs():
    seeds = len(load_devsecops_tasks())
    p = project_pool(available_rows(), CAT, devsecops=seeds)
    # 2,500 + 1,250 + 1,250 + 0 = 5,000 prompts; (5,000 + 12 seeds) x 4 pairs = 20,048
    assert p["per_source"] == {"opencodeinstruct": 2500, "opc_sft_stage2": 1250, "opencodereasoning_2": 1250,
                               "rstar_coder": 0}
    assert (p["pool"], p["prompts"], p["shortfall"], seeds) == (5000, 5000, 0, 12)
    assert p["pairs_ceiling"] == (5000 + 12) * 4 == 20048
    # the two assert sources alone (the pool before this change) stop at 3,750 prompts, 15,048 pairs
    old = project_pool({k: v for k, v in available_rows().items() if k in ("opencodeinstruct", "opc_sft_stage2")},
                       CAT, devsecops=seeds)
    assert (old["prompts"], old["shortfall"], old["pairs_ceiling"]) == (3750, 1250, 15048)
    # a source missing from the catalog has no cap: refused
    with pytest.raises(KeyError):
        project_pool({"ling_coder_sft": 10}, CAT)


def _shares(exec_pairs: int) -> checks.CheckOutcome:
    cfg = CURATION.mixtures["code_dpo"]
    members = [*cfg.sources, *cfg.synth]
    by_source = {"code_preference_pairs": SOURCES["code_preference_pairs"].cap,  # 55,000
                 "capybara_dpo": SOURCES["capybara_dpo"].cap,  # 7,000
                 "exec_graded_pairs": exec_pairs}
    return checks.check_source_shares(by_source, members, None, CURATION.checks_for("code_dpo").max_source_share)


def test_the_code_dpo_share_rule_passes_at_production_volume_and_catches_dominance():
    assert CURATION.checks_for("code_dpo").max_source_share == 0.8
    at_volume = _shares(20048)  # Vezora 55,000 of 82,048 rows: 67%
    assert at_volume.passed and at_volume.metadata["shares"]["code_preference_pairs"] == pytest.approx(0.6703, abs=1e-4)
    # Vezora dominates when the exec-graded set falls short: 55,000 / 0.8 - 62,000 = 6,750 is the
    # floor (shares are compared rounded to 4 places): 6,700 pairs leave Vezora at 80.06%
    assert _shares(6750).passed and not _shares(6700).passed
    starved = _shares(0)
    assert not starved.passed and "code_preference_pairs holds 89%" in starved.description
    # and the exec-graded set may not crowd out the preference sources either
    assert not _shares(250000).passed
