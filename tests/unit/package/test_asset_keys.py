"""Asset-key constants name assets of the definitions, and the cross-phase dependencies use them."""

from __future__ import annotations

import pytest
from dagster import AssetKey

from surrogate_dagster.catalog import keys


def key_constants() -> dict[str, str]:
    """Every asset name catalog/keys.py holds (its upper-case string constants)."""
    return {n: v for n, v in vars(keys).items() if n.isupper() and isinstance(v, str)}


def defined(graph) -> set[AssetKey]:
    """Keys of assets the definitions define (materialized or observed); a dependency on a key no
    asset defines also puts that key in the graph, as a stub that cannot run."""
    return set(graph.executable_asset_keys)


@pytest.fixture(scope="module")
def graph():
    from surrogate_dagster.definitions import defs

    return defs.resolve_asset_graph()


def test_every_key_constant_names_an_asset(graph):
    from surrogate_dagster.operations.cost_ledger import COST_LEDGER
    from surrogate_dagster.sources.revisions import HF_REVISIONS, SOURCE_ROWS
    from surrogate_dagster.synth.assets import CHECKPOINT_KEY
    from surrogate_dagster.training.assets import BASE_MODEL

    constants = {n: AssetKey(v) for n, v in key_constants().items()}
    assert set(constants) == {"EVAL_CANARIES", "MIXTURE_VIEWS", "SMOKE_GATE", "SMOKE_GATED_STAGE", "AGENT_CHECKPOINT"}
    constants |= {"HF_REVISIONS": HF_REVISIONS, "SOURCE_ROWS": SOURCE_ROWS, "CHECKPOINT_KEY": CHECKPOINT_KEY,
                  "BASE_MODEL": BASE_MODEL, "COST_LEDGER": COST_LEDGER}
    missing = {n: k.to_user_string() for n, k in constants.items() if k not in defined(graph)}
    assert not missing, f"key constants naming no asset of the definitions: {missing}"


def test_the_smoke_gate_is_the_evals_catalogs(graph):
    from surrogate_dagster.evals.assets import CATALOG, SMOKE_GATED
    from surrogate_dagster.evals.checks import SMOKE_CHECK

    assert CATALOG.smoke_gate.asset == keys.SMOKE_GATE
    assert any(c.asset_key == AssetKey(keys.SMOKE_GATE) and c.name == SMOKE_CHECK for c in graph.asset_check_keys)
    assert SMOKE_GATED == [keys.SMOKE_GATED_STAGE, "exec_graded_pairs"]


def test_cross_phase_dependencies_use_the_constants(graph):
    def parents(asset: str) -> set[AssetKey]:
        return set(graph.get(AssetKey(asset)).parent_keys) & defined(graph)

    assert {AssetKey("normalized_rows"), AssetKey(keys.EVAL_CANARIES)} <= parents("sanitized_rows")
    assert AssetKey(keys.MIXTURE_VIEWS) in parents("code_sft_hub")
    assert AssetKey(keys.SMOKE_GATE) in parents(keys.SMOKE_GATED_STAGE)
    assert {AssetKey(keys.AGENT_CHECKPOINT), AssetKey(keys.SMOKE_GATE), AssetKey("curated_rows")} <= parents(
        "exec_graded_pairs")
    assert AssetKey("hf_revisions") in parents("source_rows")
    assert AssetKey("tier2_eval_report") in parents("mvp_release")


def test_each_mixture_push_is_named_whole_in_the_zoomed_out_graph(graph):
    """The graph's zoomed-out nodes show 18 characters of a name (longer ones are cut in the
    middle), so the five Hub pushes are told apart there only if their names fit."""
    from surrogate_dagster.curation.assets import CURATION
    from surrogate_dagster.curation.mixtures import hub_asset_name

    pushes = [hub_asset_name(m) for m in CURATION.mixtures]
    assert len(set(pushes)) == len(pushes) == 5
    assert all(AssetKey(p) in defined(graph) for p in pushes)
    assert [p for p in pushes if len(p) > 18] == []
