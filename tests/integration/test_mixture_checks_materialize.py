"""Mixture checks on materialized mixtures: clean ones pushed and backed up, bad DPO or SFT rows, a collapsed
source and the token-length gate block the push, the mixture views' sequence-length bound
(the check functions: tests/unit/curation/test_mixture_checks.py)."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterInstance, Failure, asset, materialize

from surrogate_dagster.curation.assets import CURATION_ASSETS, CURATION_CHECKS, MIXTURE_CHECKS, _members
from surrogate_dagster.curation.mixtures import (
    MixtureBuild,
    read_latest,
    record_gate,
    unpassed_gates,
    write_mixture,
)
from surrogate_dagster.curation.stage_io import write_step
from surrogate_dagster.canary import CANARY_KEY, make_canaries
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.storage import LocalObjectStore

from tests.unit.curation.test_mixture_checks import _dpo, _sft


def _by_name(name: str):
    return next(a for a in CURATION_ASSETS if a.key.to_user_string() == name)


def _checks_for(name: str):
    return next(c for c in CURATION_CHECKS if AssetKey(f"{name}_mixture") in {k.asset_key for k in c.check_keys})


def _stand_in_views(names):
    """Stands in for the training group's `mixture_views`: records a passing token-length gate."""
    @asset(name="mixture_views", deps=[AssetKey(f"{n}_mixture") for n in names])
    def mixture_views(object_store: ObjectStoreResource) -> None:
        store = object_store.get_store()
        for n in names:
            record_gate(store, n, read_latest(store, n)["data_version"], "token_lengths",
                        {"rows_within_sequence_len": {"passed": True, "description": "stand-in"}})

    return mixture_views


def _curated(i: int, source: str, kind: str, assistant: str | None = None, chosen: str | None = None) -> dict:
    """A curated row as the per-source steps store it."""
    base = {"id": f"{source}-{i}", "source": source, "kind": kind, "tools": "", "meta": "{}"}
    if kind == "dpo":
        return {**base, "prompt": [{"role": "user", "content": f"fix bug {i} in {source}"}],
                "chosen": f"return {i}" if chosen is None else chosen, "rejected": f"return -{i}", "messages": []}
    turns = [{"role": "user", "content": f"Write function {i} of {source}."}]
    if assistant != "":
        turns.append({"role": "assistant", "content": assistant or f"def f{i}(): return {i}"})
    return {**base, "prompt": [], "chosen": "", "rejected": "", "messages": turns}


def _plant(store, name: str, rows_by_member: dict[str, list[dict]]) -> None:
    for s, rows in rows_by_member.items():
        store.put_bytes(f"raw/{s}/_latest.json", json.dumps({"revision": "r1"}).encode())
        version = f"v{len(rows)}-{abs(hash(json.dumps(rows))) % 10**8}"
        write_step(store, "filtered", s, version, rows)
        write_step(store, "curated", s, version, rows)


@pytest.fixture
def env(tmp_path):
    (tmp_path / "mirror").mkdir()
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    resources = {"object_store": ObjectStoreResource(kind="local", root=str(tmp_path / "store")),
                 "hub": HubResource(mode="offline", mirror_dir=str(tmp_path / "mirror"),
                                    push_dir=str(tmp_path / "pushes"), org="t")}
    return tmp_path, store, resources, DagsterInstance.ephemeral()


def _run(name: str, resources, instance, with_views: bool = True, select=None):
    defs = [_by_name(f"{name}_mixture"), _by_name(f"{name}_hub"), _checks_for(name)]
    if with_views:
        defs.append(_stand_in_views([name]))
    keys = select or [AssetKey(f"{name}_mixture"), AssetKey(f"{name}_hub")]
    if with_views and select is None:
        keys.append(AssetKey("mixture_views"))
    return materialize(defs, selection=keys, resources=resources, instance=instance, raise_on_error=False)


def _evaluations(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def _pushed(tmp) -> list:
    return sorted(p for p in (tmp / "pushes").rglob("*") if p.is_file()) if (tmp / "pushes").exists() else []


def _dpo_rows(n: int, **over) -> dict[str, list[dict]]:
    return {"when2call_pref": [_curated(i, "when2call_pref", "dpo") for i in range(n)]}


def test_a_clean_mixture_is_checked_then_pushed_as_backed_up(env):
    tmp, store, resources, instance = env
    _plant(store, "tool_dpo", _dpo_rows(6))
    result = _run("tool_dpo", resources, instance)
    assert result.success
    assert _evaluations(result) == {c: True for c in MIXTURE_CHECKS}
    latest = read_latest(store, "tool_dpo")
    pushed = tmp / "pushes" / "datasets" / "t" / "surrogate-1-v2-tool-dpo"
    assert (pushed / "data" / "train.jsonl").read_bytes() == store.get_bytes(latest["key"])
    prefix = latest["key"].removesuffix("train.jsonl")
    assert (pushed / "README.md").read_bytes() == store.get_bytes(prefix + "README.md")
    (mat,) = result.asset_materializations_for_node("tool_dpo_hub")
    assert mat.metadata["hub_uri"].value.startswith("hf-offline://datasets/t/surrogate-1-v2-tool-dpo")
    assert unpassed_gates(store, "tool_dpo", latest["data_version"]) == {}


@pytest.mark.parametrize("plant, failed", [
    ("empty_chosen", "trainable_rows"),
    ("canary", "no_canaries"),
])
def test_a_bad_dpo_mixture_blocks_its_push(env, plant, failed):
    tmp, store, resources, instance = env
    rows = _dpo_rows(6)
    if plant == "empty_chosen":
        rows["when2call_pref"][2] = _curated(2, "when2call_pref", "dpo", chosen="")
    else:
        manifest = make_canaries(2, 0.5, salt="push-test")
        store.put_bytes(CANARY_KEY, manifest.to_json())
        rows["when2call_pref"][4] = _curated(4, "when2call_pref", "dpo",
                                             chosen="export " + manifest.canaries[0].line)
    _plant(store, "tool_dpo", rows)
    result = _run("tool_dpo", resources, instance)
    assert not result.success
    done = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "tool_dpo_mixture" in done and "tool_dpo_hub" not in done  # built, backed up, not pushed
    evals = _evaluations(result)
    assert evals[failed] is False and all(v for k, v in evals.items() if k != failed), evals
    assert _pushed(tmp) == []
    # In a run of its own (the blocking check is not part of it) the push refuses the version too.
    alone = _run("tool_dpo", resources, instance, select=[AssetKey("tool_dpo_hub")])
    assert not alone.success and _pushed(tmp) == []
    failure = next(e for e in alone.all_events if e.is_step_failure)
    assert failed in failure.step_failure_data.error.message
    with pytest.raises(Failure, match=f"curation: {failed}"):
        materialize([_by_name("tool_dpo_hub")], resources=resources, instance=instance,
                    selection=[AssetKey("tool_dpo_hub")])


def test_an_sft_row_without_an_assistant_turn_blocks_the_push(env):
    tmp, store, resources, instance = env
    members = _members("code_sft")
    rows = {s: [_curated(i, s, "sft") for i in range(3)] for s in members}
    rows[members[0]][1] = _curated(1, members[0], "sft", assistant="")
    _plant(store, "code_sft", rows)
    result = _run("code_sft", resources, instance)
    assert not result.success and _pushed(tmp) == []
    evals = _evaluations(result)
    assert evals["trainable_rows"] is False and evals["schema"] and evals["source_shares"], evals


def test_a_collapsed_source_blocks_the_next_push(env):
    """A new version that lost a member's rows (and most of the mixture) is not pushed."""
    tmp, store, resources, instance = env
    members = _members("code_dpo")
    rows = {s: [_curated(i, s, "dpo") for i in range(4)] for s in members}
    synth = {"exec_graded_pairs": [_curated(i, "exec_graded_pairs", "dpo") for i in range(2)]}
    for s, r in synth.items():
        write_step(store, "curated_synth", s, "s1", r)
    _plant(store, "code_dpo", rows)
    assert _run("code_dpo", resources, instance).success
    first = sorted(_pushed(tmp))
    assert first
    _plant(store, "code_dpo", {members[0]: rows[members[0]], members[1]: []})
    result = _run("code_dpo", resources, instance)
    evals = _evaluations(result)
    assert evals["row_count"] is False and evals["source_shares"] is False, evals
    latest = read_latest(store, "code_dpo")
    assert latest["previous"]["rows"] == 10 and latest["rows"] == 6
    # the hub still holds the first version
    pushed = tmp / "pushes" / "datasets" / "t" / "surrogate-1-v2-dpo-codeexec" / "data" / "train.jsonl"
    assert len(pushed.read_text().splitlines()) == 10


def test_the_push_waits_for_the_token_length_gate(env):
    """Without mixture_views' verdict on this version the push refuses, even with passing checks."""
    tmp, store, resources, instance = env
    _plant(store, "tool_dpo", _dpo_rows(5))
    result = _run("tool_dpo", resources, instance, with_views=False)
    assert not result.success and _pushed(tmp) == []
    assert all(_evaluations(result).values())
    version = read_latest(store, "tool_dpo")["data_version"]
    assert unpassed_gates(store, "tool_dpo", version) == {"token_lengths": "not run on this version"}


def test_mixture_views_blocks_a_mixture_with_too_many_rows_over_sequence_len(tmp_path):
    """The token-length check on `mixture_views` (the training group holds the tokenizer): a
    mixture whose long rows pass its bound fails the check and its `token_lengths` gate."""
    from surrogate_dagster.training.base_model import build_tiny_base
    from surrogate_dagster.training.config import load_training_catalog
    from surrogate_dagster.training.mixture_views import LENGTH_CHECK, build_mixture_views_asset

    catalog = load_training_catalog()
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    long_text = " ".join(f"token{j} + value{j * 7}" for j in range(6000))  # well past the CPU recipe's 16384 tokens
    for name in ("code_sft", "tool_sft", "agent_sft", "code_dpo", "tool_dpo"):
        if name.endswith("dpo"):
            rows = [_dpo(i) for i in range(10)]
            if name == "tool_dpo":  # 2 of 10 rows over the stage's sequence_len: 20% > 5%
                rows[3]["chosen"]["content"] = rows[7]["chosen"]["content"] = long_text
        else:
            rows = [_sft(i) for i in range(10)]
        write_mixture(store, MixtureBuild.from_rows(name, rows, {"alpha": 10}, {}, f"{name}-v1"), "card")
    build_tiny_base(store, catalog)
    (tmp_path / "mirror").mkdir()
    resources = {"object_store": ObjectStoreResource(kind="local", root=str(tmp_path / "store")),
                 "hub": HubResource(mode="offline", mirror_dir=str(tmp_path / "mirror"),
                                    push_dir=str(tmp_path / "pushes"), org="t")}
    result = materialize([build_mixture_views_asset("local", "tiny", catalog)], resources=resources,
                         raise_on_error=False)
    (ev,) = result.get_asset_check_evaluations()
    assert ev.check_name == LENGTH_CHECK and not ev.passed and "tool_dpo_mixture" in ev.description
    assert ev.metadata["mixtures"].value["tool_dpo_mixture"]["over_sequence_len"] == 2
    assert set(unpassed_gates(store, "tool_dpo", "tool_dpo-v1", ["token_lengths"])) == {"token_lengths"}
    assert unpassed_gates(store, "code_sft", "code_sft-v1", ["token_lengths"]) == {}
