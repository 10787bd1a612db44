"""bfcl-eval's own generation and evaluation of a checkpoint served on an OpenAI-compatible endpoint:
the tiny model through the transformers stand-in, single-turn and multi-turn categories, the report's
score the leaderboard's formula over the categories that ran (skipped where .venv-bfcl is absent)."""

from __future__ import annotations

import pytest

from surrogate_dagster.evals.harness import bfcl, bfcl_official
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from surrogate_dagster.inference import ModelRef, TransformersInference
from surrogate_dagster.paths import resolve_repo_path

OFFICIAL = bfcl_official.official_python()
pytestmark = pytest.mark.skipif(OFFICIAL is None, reason=f"no bfcl-eval environment ({bfcl_official.DEFAULT_PYTHON})")
DATA = resolve_repo_path("{shared}/data/benchmarks/BFCL")


def test_bfcl_eval_generates_and_scores_the_served_tiny_model(tmp_path):
    client = TransformersInference(ModelRef("tiny", str(build_tiny_qwen2(tmp_path / "model"))), batch_size=1)
    rep = bfcl.run(client, DATA, categories=["simple_python", "irrelevance", "multi_turn_base"], max_per_category=1,
                   max_new_tokens=16, max_tokens_cap=16, not_run={"web_search_base": "needs the internet"}, work_dir=tmp_path / "work")
    m = rep.metrics
    assert m["scorer"] == m["generation"] == "bfcl-eval 2026.3.23"
    assert set(m["accuracy_by_category"]) == {"simple_python", "irrelevance", "multi_turn_base"}
    assert m["entries_by_category"] == {"simple_python": 1, "irrelevance": 1, "multi_turn_base": 1}
    assert [s["id"] for s in rep.samples] == ["simple_python_0", "irrelevance_0", "multi_turn_base_0"]
    # noise makes no call: irrelevance passes, the rest fail; the multi-turn prompt is past the tiny
    # model's 4096-token context, which bfcl-eval records as an inference error, a failure
    assert m["accuracy_by_category"] == {"simple_python": 0.0, "irrelevance": 100.0, "multi_turn_base": 0.0}
    assert "Error during inference" in rep.samples[2]["output"]
    # leaderboard weights 10 (non-live), 10 (irrelevance), 30 (multi-turn) renormalized over 50
    assert rep.score == pytest.approx((10 * 0.0 + 10 * 100.0 + 30 * 0.0) / 50)
    # bfcl-eval's own overall, the categories not run counted 0, is reported beside it and read from its csv
    assert m["bfcl_overall_csv"] == pytest.approx(m["bfcl_overall_missing_as_zero"], abs=0.01)
    assert any("web_search_base (needs the internet)" in n for n in rep.notes)
    assert any("max_tokens capped at 16" in n for n in rep.notes)
    assert "fallback" not in m
