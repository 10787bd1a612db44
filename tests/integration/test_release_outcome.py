"""The release writes outcome.md and knowledge_index.md, from its lineage and its scoreboard: into its
store folder on every attempt, and into the pushed model repo when it promotes (the gates
themselves: test_evals_gates.py). Read back after a local materialization of ``mvp_release``."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, AssetMaterialization, DagsterInstance, materialize

from surrogate_dagster.catalog.loader import load_sources
from surrogate_dagster.evals import assets as A
from surrogate_dagster.evals.config import TIER1, TIER2
from surrogate_dagster.evals.reports import summary_key
from surrogate_dagster.evals.resources import dir_revision
from surrogate_dagster.storage.checkpoints import write_checkpoint
from surrogate_dagster.storage.layout import mixture_pointer, mixture_version_prefix, pointer, release_folder
from tests.support.evals_release import release_env, write_passing_reports

REPO = A.CATALOG.release.hub_repo


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("release_outcome")
    model, res = release_env(tmp)
    store = res["object_store"].get_store()
    write_passing_reports(store, model)
    # lineage the release reads: a mixture backed up to the store, a stage run that pushed to the hub
    prefix = mixture_version_prefix("code_sft", "mixv1")
    store.put_bytes(prefix + "train.jsonl", b'{"messages": []}\n')
    store.put_bytes(mixture_pointer("code_sft"), json.dumps(
        {"key": prefix + "train.jsonl", "data_version": "mixv1", "rows": 1, "by_source": {"x": 1}}).encode())
    write_checkpoint(store, "stage2", "training/stage2/fp-abc", "fp-abc", merged=False)
    store.put_bytes("training/stage2/fp-abc/hub.json",
                    json.dumps({"uri": "hf-offline://models/axentx/surrogate-1-coder-7b-v2-dpo@123"}).encode())
    inst = DagsterInstance.ephemeral()
    # the cost ledger and a mixture push, as their assets record them
    inst.report_runless_asset_event(AssetMaterialization(
        "cost_ledger", metadata={"cash_usd": 12.5, "gpu_hours": 3.25, "budget_level": "ok", "per_asset": "x"}))
    inst.report_runless_asset_event(AssetMaterialization(
        "code_sft_hub", metadata={"hub_uri": "hf-offline://datasets/axentx/code-sft@777"}))
    return tmp, model, res, store, inst


def _store_docs(store) -> tuple[dict, str, str]:
    latest = json.loads(store.get_bytes(pointer(release_folder(REPO))))
    return latest, store.get_bytes(latest["outcome"]).decode(), store.get_bytes(latest["knowledge_index"]).decode()


def test_promoted_release_writes_outcome_and_index_to_the_store_and_the_repo(env):
    tmp, model, res, store, inst = env
    run = materialize([A.mvp_release], resources=res, instance=inst)
    m = run.asset_materializations_for_node("mvp_release")[0].metadata
    assert m["promoted"].value is True
    table = {r.data["benchmark"]: r.data for r in m["scoreboard_table"].records}
    assert table["humaneval_plus"] == {"benchmark": "humaneval_plus", "tier": "tier1", "score": 95.0, "target": 84.0,
                                       "verdict": "pass", "variant": "humaneval_plus test variant"}
    assert table["gaia_level1"]["score"] is None and table["gaia_level1"]["verdict"] == "no target"
    revision = dir_revision(model)
    latest, outcome, index = _store_docs(store)
    assert latest["promoted"] is True and latest["revision"] == revision
    assert latest["outcome"] == f"{release_folder(REPO)}/{revision}/outcome.md"
    assert m["outcome"].value == store.uri(latest["outcome"])
    # what was released, from the checkpoint and the gates
    assert f"- checkpoint: `{A.CATALOG.release.checkpoint}` at revision `{revision}`" in outcome
    assert "**PROMOTED: every gate passed" in outcome and f"- pushed: {m['hub_uri'].value}" in outcome
    # the scoreboard: each benchmark's score, target, verdict and variant
    assert "| humaneval_plus | tier1 | 95.00 | >= 84 | **pass** | humaneval_plus test variant |" in outcome
    assert "| bfcl | tier1 | 95.00 | >= 70 | **pass** | bfcl test variant |" in outcome  # the variant's own target
    # an informative bar is shown, never gating
    assert "| ruler_32k | tier1 | 95.00 | >= 90 (informative) | **informative** |" in outcome
    assert "| ruler_128k | tier1 | 95.00 | - | **no target** |" in outcome
    assert "| gaia_level1 | tier2 | n/a | - | **no target** |" in outcome
    assert "- **gaia_level1** not evaluated: no HF token" in outcome
    assert outcome.count("| tier1 |") == len(TIER1) and outcome.count("| tier2 |") == len(TIER2)
    # lineage: sources with their pins, mixtures, stages; and the costs of the ledger
    src = load_sources().sources[0]
    assert f"| {src.name} | {src.hf_id} | {src.revision} | not mirrored |" in outcome
    assert "| code_sft | mixv1 | 1 |" in outcome
    assert "| stage2_checkpoint | fp-abc | training/stage2/fp-abc | surrogate-1-coder-7b-v2-dpo |" in outcome
    assert "| cash_usd | 12.5 |" in outcome and "| budget_level | ok |" in outcome and "per_asset" not in outcome
    # the index: every artifact and where it lives
    assert f"| release model repo | axentx/{REPO} | {m['hub_uri'].value} |" in index
    for f, role in (("README.md", "model card"), ("eval_results.json", "every report's score"),
                    ("release.json", "every gate's verdict"), ("outcome.md", "the release outcome"),
                    ("knowledge_index.md", "this index"), ("config.json", "policy")):
        assert f"| repo file `{f}` ({role}) | axentx/{REPO} | pushed |" in index
    assert f"| `outcome.md` (store copy) | {store.uri(latest['outcome'])} | {revision} |" in index
    assert "| stage2_checkpoint | training/stage2/fp-abc | fp-abc | " \
           "hf-offline://models/axentx/surrogate-1-coder-7b-v2-dpo@123 |" in index
    assert f"| code_sft | {store.uri(prefix_key())} | mixv1 | hf-offline://datasets/axentx/code-sft@777 |" in index
    ck = A.CATALOG.release.checkpoint
    assert f"| {ck} | swebench_lite | {store.uri(summary_key(ck, 'swebench_lite'))} |" in index
    assert index.count(f"| {A.CATALOG.baseline} | ") == len(TIER1)
    # the same two documents in the pushed repo (naming "this repository": its revision is the push)
    repo = tmp / "pushes" / "models" / "axentx" / REPO
    pushed_outcome = (repo / "outcome.md").read_text()
    assert "- pushed: this repository" in pushed_outcome
    assert pushed_outcome.split("- written:")[0].replace("this repository", m["hub_uri"].value) == \
        outcome.split("- written:")[0]
    assert "| humaneval_plus | tier1 | 95.00 | >= 84 | **pass** |" in pushed_outcome
    assert "| repo file `outcome.md` (the release outcome) |" in (repo / "knowledge_index.md").read_text()


def prefix_key() -> str:
    return mixture_version_prefix("code_sft", "mixv1") + "train.jsonl"


def test_release_not_promoted_still_writes_its_outcome(env):
    tmp, model, res, store, inst = env
    ck = A.CATALOG.release.checkpoint
    # a missing report is pending: the release is not promoted, nothing is counted as failed
    store.delete(summary_key(ck, "mbpp_plus"))
    repo = tmp / "pushes" / "models" / "axentx" / REPO
    before = (repo / "revision.txt").read_text() if repo.exists() else None
    run = materialize([A.mvp_release], resources=res, instance=inst)
    m = run.asset_materializations_for_node("mvp_release")[0].metadata
    assert m["promoted"].value is False and m["failed_gates"].value == 0 and m["pending_gates"].value > 0
    latest, outcome, index = _store_docs(store)
    assert latest["promoted"] is False and latest["hub_uri"] is None
    assert f"**NOT PROMOTED: 0 failed, {m['pending_gates'].value} pending (not run yet)" in outcome
    assert "| mbpp_plus | tier1 | - | >= 75 | **pending** | - |" in outcome
    assert f"`{ck}/mbpp_plus: meets_target`: pending: not run yet" in outcome
    assert "- pushed: nothing (the gates did not pass)" in outcome
    assert "not promoted: nothing was pushed to the release repo" in index and "| repo file" not in index
    # the repo keeps the promoted release's documents: nothing was pushed
    assert ((repo / "revision.txt").read_text() if repo.exists() else None) == before
    check = run.get_asset_check_evaluations()[0]
    assert not check.passed and check.severity.value == "WARN" and "0 failed" in check.description
