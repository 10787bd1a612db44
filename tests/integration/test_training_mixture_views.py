"""The `mixture_views` asset: every trained mixture through the base model's tokenizer, in the object store.

Five small mixtures (SFT rows with tool turns, DPO pairs) and the local tiny base built from them;
the asset is materialized with temp-dir resources, then again (the views are read back, not rebuilt).
"""

from __future__ import annotations

import json

import pytest
from dagster import materialize

from surrogate_dagster.curation.mixtures import MixtureBuild, write_mixture
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.training.base_model import build_tiny_base
from surrogate_dagster.training.config import load_training_catalog
from surrogate_dagster.training.mixture_views import build_mixture_views_asset, trained_mixtures

CATALOG = load_training_catalog()
MIXTURES = ["code_sft_mixture", "tool_sft_mixture", "agent_sft_mixture", "code_dpo_mixture", "tool_dpo_mixture"]


def _sft(source: str, j: int) -> dict:
    return {"id": f"{source}-{j}", "source": source, "messages": [
        {"role": "user", "content": f"Run the tests of module {j}." + " Please." * j},
        {"role": "assistant", "content": '<tool_call>\n{"name": "run", "arguments": {"n": %d}}\n</tool_call>' % j},
        {"role": "tool", "content": f"{j} passed"},
        {"role": "assistant", "content": f"All {j} tests pass."}]}


def _dpo(source: str, j: int) -> dict:
    return {"id": f"{source}-{j}", "source": source, "messages": [{"role": "user", "content": f"fix bug {j}"}],
            "chosen": {"role": "assistant", "content": f"return {j}"},
            "rejected": {"role": "assistant", "content": f"return -{j}" + " # wrong" * j}}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    root = tmp_path_factory.mktemp("views")
    store = LocalObjectStore(root / "store", fsync=False)
    for i, asset in enumerate(MIXTURES):
        make = _dpo if "dpo" in asset else _sft
        rows = [make(src, j) for src, n in (("alpha", 12), ("beta", 5)) for j in range(n)]
        by_source = {"alpha": 12, "beta": 5}
        write_mixture(store, MixtureBuild.from_rows(asset.removesuffix("_mixture"), rows, by_source, {}, f"v{i}"), "card")
    build_tiny_base(store, CATALOG)
    (root / "mirror").mkdir()
    resources = {
        "object_store": ObjectStoreResource(kind="local", root=str(root / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(root / "mirror"), push_dir=str(root / "pushes"), org="t"),
    }
    asset_def = build_mixture_views_asset("local", "tiny", CATALOG)
    first = materialize([asset_def], resources=resources)
    second = materialize([asset_def], resources=resources)
    return store, first, second


def _materialization(result):
    (mat,) = result.asset_materializations_for_node("mixture_views")
    return mat


def test_the_stages_train_the_five_mixtures_at_the_local_sequence_len():
    found = trained_mixtures(CATALOG, "local")
    assert [m.asset for m in found] == MIXTURES
    assert {m.sequence_len for m in found} == {CATALOG.executor_overrides["local"]["sequence_len"]} == {16384}
    assert {m.asset: m.sequence_len for m in trained_mixtures(CATALOG, "subprocess")}["tool_dpo_mixture"] == 8192


def test_views_are_stored_and_described(scenario):
    from transformers import AutoTokenizer

    store, first, _ = scenario
    meta = {k: getattr(v, "value", v) for k, v in _materialization(first).metadata.items()}
    pointer = json.loads(store.get_bytes("models/base_model/_latest.json"))
    tok_dir = store.root / pointer["prefix"]
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    for asset in MIXTURES:
        table = meta[f"{asset}/token_lengths"]
        assert table.startswith("| source | rows | p50 | p95 | max | tokens | over 16384 |")
        assert "| alpha | 12 |" in table and "| beta | 5 |" in table
        assert meta[f"{asset}/lengths_plot"].startswith(f"**{asset}: token lengths per source")
        assert "(data:image/png;base64," in meta[f"{asset}/lengths_plot"]
        # the lengths as numbers too (the Plots tab trends them)
        assert meta[f"{asset}/rows"] == 17 and 0 < meta[f"{asset}/tokens_p50"] <= meta[f"{asset}/tokens_p95"] \
            <= meta[f"{asset}/tokens_max"]
        assert "### alpha" in meta[f"{asset}/first_rows"] and "### beta" in meta[f"{asset}/first_rows"]
        keys = store.list(f"views/mixtures/{asset}/")
        assert {k.rsplit("/", 1)[1] for k in keys} == {"view.json", "view.md", "lengths.png"}
        assert meta[f"{asset}/view_uri"].endswith("/view.md")
    # SFT: the whole conversation with the tool turn, as the tokenizer's own template renders it.
    sft_first = meta["tool_sft_mixture/first_rows"]
    assert "<|im_start|>user\n<tool_response>\n0 passed\n</tool_response><|im_end|>" in sft_first
    rows = [_sft(src, j) for src, n in (("alpha", 12), ("beta", 5)) for j in range(n)]
    expected = sum(len(tokenizer.apply_chat_template(r["messages"], tokenize=True, return_dict=True)["input_ids"])
                   for r in rows)
    assert meta["tool_sft_mixture/total_tokens"] == expected
    assert meta["total_tokens"]["tool_sft_mixture"] == expected
    # DPO: both sides shown, each after the same prompt.
    dpo_first = meta["code_dpo_mixture/first_rows"]
    assert "prompt + chosen" in dpo_first and "assistant\nreturn 0<|im_end|>" in dpo_first
    assert "prompt + rejected" in dpo_first and "assistant\nreturn -0<|im_end|>" in dpo_first
    assert meta["summary"].count("\n") == 1 + len(MIXTURES)


def test_a_second_materialization_reads_the_views_back(scenario):
    store, first, second = scenario
    a, b = _materialization(first), _materialization(second)
    assert a.tags["dagster/data_version"] == b.tags["dagster/data_version"]
    assert a.metadata["summary"] == b.metadata["summary"]
    assert len(store.list("views/mixtures/code_sft_mixture/")) == 3
