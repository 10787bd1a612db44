"""The release's scoreboard, outcome.md and knowledge_index.md, built from gates, summaries and lineage
(materialized and read back: tests/integration/test_release_outcome.py)."""

from surrogate_dagster.evals.gates import currency_gate, regression_gate, target_gate
from surrogate_dagster.evals.outcome import knowledge_index_markdown, outcome_markdown, scoreboard_markdown, \
    scoreboard_rows

REL = "stage2_5_checkpoint"


def S(score, status="ok", **kw):
    return {"score": score, "status": status, "variant": f"v-{score}", "version": "1", "n_items": 10,
            "checkpoint": {"revision": "r1"}, **kw}


def _board():
    summaries = {(REL, "humaneval_plus"): S(90.0), (REL, "bfcl"): S(10.0), (REL, "ruler_128k"): S(5.0),
                 ("stage2_checkpoint", "ruler_128k"): S(50.0)}
    gates = [target_gate(f"{REL}/humaneval_plus: meets_target", summaries[(REL, "humaneval_plus")], 84),
             currency_gate(f"{REL}/humaneval_plus: current", summaries[(REL, "humaneval_plus")], "r1"),
             target_gate(f"{REL}/bfcl: meets_target", summaries[(REL, "bfcl")], 80),
             target_gate(f"{REL}/mbpp_plus: meets_target", None, 75),
             target_gate(f"{REL}/ruler_128k: meets_target", summaries[(REL, "ruler_128k")], None),
             regression_gate(f"{REL}/ruler_128k: no_regression", summaries[(REL, "ruler_128k")],
                             summaries[("stage2_checkpoint", "ruler_128k")], tolerance=0.05, mode="relative",
                             previous_checkpoint="stage2_checkpoint"),
             target_gate(f"{REL}/gaia_level1: meets_target", None, None)]
    benches = [("tier1", b) for b in ("humaneval_plus", "mbpp_plus", "bfcl", "ruler_128k")] + [("tier2", "gaia_level1")]
    return scoreboard_rows(REL, benches, summaries, gates), gates


def test_scoreboard_has_one_verdict_per_benchmark():
    rows, _ = _board()
    verdicts = {r["benchmark"]: r["verdict"] for r in rows}
    # a regression on a benchmark with no target still fails it; a missing report is pending
    assert verdicts == {"humaneval_plus": "pass", "mbpp_plus": "pending", "bfcl": "FAIL", "ruler_128k": "FAIL",
                        "gaia_level1": "no target"}
    md = scoreboard_markdown(rows)
    assert "| humaneval_plus | tier1 | 90.00 | >= 84 | **pass** | v-90.0 |" in md
    assert "| mbpp_plus | tier1 | - | >= 75 | **pending** | - |" in md
    assert "| ruler_128k | tier1 | 5.00 | - | **FAIL** | v-5.0 |" in md


def test_outcome_and_index_say_what_was_released_and_where():
    rows, gates = _board()
    lineage = {"stages": {"stage2_checkpoint": {"run": "fp1", "prefix": "training/stage2/fp1", "hub_repo": "dpo"}},
               "mixtures": {"code_sft": {"data_version": "m1", "rows": 7}}, "sources": {"src_a": ["rev1"]}}
    md = outcome_markdown(repo_id="org/mvp", checkpoint=REL, revision="r1", promoted=False, hub_uri=None, gates=gates,
                          rows=rows, lineage=lineage, pins={"src_a": {"hf_id": "a/b", "revision": "rev1"},
                                                            "src_b": {"hf_id": "c/d", "revision": "rev2"}},
                          costs=None, generated_at="T")
    assert "**NOT PROMOTED: 2 failed, 1 pending (not run yet), 4 passed of 7 gates**" in md
    assert f"- `{REL}/bfcl: meets_target`: score 10.0 < target 80" in md
    assert f"- `{REL}/mbpp_plus: meets_target`: pending: not run yet" in md
    assert "| src_a | a/b | rev1 | rev1 |" in md and "| src_b | c/d | rev2 | not mirrored |" in md
    assert "| code_sft | m1 | 7 |" in md and "| stage2_checkpoint | fp1 | training/stage2/fp1 | dpo |" in md
    assert "the cost ledger (`cost_ledger`) has not been materialized" in md
    index = knowledge_index_markdown(
        repo_id="org/mvp", checkpoint=REL, revision="r1", promoted=False, hub_uri=None, repo_files=[],
        store_files={"outcome.md": "file:///s/outcome.md"}, lineage=lineage, stage_hub={}, mixture_hub={},
        mixture_store={"code_sft": "file:///s/train.jsonl"},
        reports={(REL, "bfcl"): {**S(10.0), "summary_uri": "file:///s/sum.json", "samples_uri": "file:///s/x.gz"}},
        scoreboard_uri=None)
    assert "| release model repo | org/mvp | not pushed |" in index
    assert "| stage2_checkpoint | training/stage2/fp1 | fp1 | dpo (not pushed) |" in index
    assert "| code_sft | file:///s/train.jsonl | m1 | not pushed |" in index
    assert f"| {REL} | bfcl | file:///s/sum.json | file:///s/x.gz | r1 |" in index
