"""Checks that guard a mixture's Hub push: the pure validators (curation/checks.py) on hand-written
rows, then the real mixture, check and push assets on planted curated rows: a bad mixture is built
and backed up, its blocking check fails, and nothing reaches the hub push directory."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterInstance, Failure, asset, materialize

from surrogate_dagster.curation import checks
from surrogate_dagster.curation.assets import (
    CURATION,
    CURATION_ASSETS,
    CURATION_CHECKS,
    MIXTURE_CHECKS,
    _members,
)
from surrogate_dagster.curation.mixtures import (
    MixtureBuild,
    read_latest,
    record_gate,
    unpassed_gates,
    write_mixture,
)
from surrogate_dagster.curation.stage_io import write_step
from surrogate_dagster.canary import CANARY_KEY, CanaryScanner, make_canaries
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.storage import LocalObjectStore


def _sft(i: int, source: str = "alpha", **over) -> dict:
    row = {"id": f"{source}-{i}", "source": source, "messages": [
        {"role": "system", "content": "You are a coder."},
        {"role": "user", "content": f"Write f{i}."},
        {"role": "assistant", "content": f"def f{i}(): return {i}"}]}
    return {**row, **over}


def _dpo(i: int, source: str = "alpha", chosen: str | None = None) -> dict:
    return {"id": f"{source}-{i}", "source": source, "messages": [{"role": "user", "content": f"fix {i}"}],
            "chosen": {"role": "assistant", "content": f"return {i}" if chosen is None else chosen},
            "rejected": {"role": "assistant", "content": f"return -{i}"}}


# --- validators ---------------------------------------------------------------------------------

def test_schema_accepts_both_kinds():
    assert checks.check_schema([_sft(1), _sft(2)], "sft").passed
    tool = _sft(3, messages=[{"role": "user", "content": "ls"},
                             {"role": "assistant", "content": "<tool_call>\n{}\n</tool_call>"},
                             {"role": "tool", "content": "a.py"}, {"role": "assistant", "content": "a.py"}])
    assert checks.check_schema([tool], "sft").passed
    assert checks.check_schema([_dpo(1)], "dpo").passed


@pytest.mark.parametrize("row, kind, problem", [
    ({k: v for k, v in _sft(1).items() if k != "source"}, "sft", "missing source"),
    (_sft(1, extra=1), "sft", "unexpected extra"),
    (_sft(1, id=""), "sft", "id is not"),
    (_sft(1, messages=[]), "sft", "messages is not"),
    (_sft(1, messages=[{"role": "narrator", "content": "x"}]), "sft", "role 'narrator'"),
    (_sft(1, messages=[{"role": "user", "content": None}]), "sft", "content is NoneType"),
    (_sft(1, messages=[{"role": "user", "content": "x", "name": "n"}]), "sft", "not role+content"),
    (_sft(1), "dpo", "missing chosen"),
    ({**_dpo(1), "chosen": {"role": "user", "content": "x"}}, "dpo", "not assistant"),
    ({**_dpo(1), "rejected": "return 1"}, "dpo", "rejected is str"),
    ("not a row", "sft", "not an object"),
])
def test_schema_rejects(row, kind, problem):
    out = checks.check_schema([_sft(0) if kind == "sft" else _dpo(0), row], kind)
    assert not out.passed and out.metadata["bad_rows"] == 1
    assert problem in out.metadata["examples"][0]["problem"], out.metadata


def test_turns():
    assert checks.check_turns([_sft(1)], "sft").passed
    no_reply = _sft(2, messages=[{"role": "user", "content": "hi"}])
    blank_reply = _sft(3, messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "  \n"}])
    out = checks.check_turns([_sft(1), no_reply, blank_reply], "sft")
    assert not out.passed and [e["row"] for e in out.metadata["examples"]] == ["alpha/alpha-2", "alpha/alpha-3"]
    assert checks.check_turns([_dpo(1)], "dpo").passed
    out = checks.check_turns([_dpo(1), _dpo(2, chosen=" ")], "dpo")
    assert not out.passed and out.metadata["examples"] == [{"row": "alpha/alpha-2", "problem": "chosen: empty answer"}]


# axolotl's DPO chat_template.default renders [dummy user, answer] under the Qwen2.5 template and keeps
# the text from the first str.find(answer); what it renders before the answer, written out by hand:
QWEN_DPO_PREFIX = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                   "<|im_end|>\n<|im_start|>user\n[[dummy_message]]<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("answer,cut_wrong", [
    ("def f():\n    return 1", False),
    ("4", False),
    ("Yes.", False),
    ("You are", True),                  # inside the default system prompt
    ("assistant", True),                # inside the role headers
    ("a", True),
    ("[[dummy_message]]", True),        # axolotl's own placeholder turn
    ("t.<|im_end|>", True),             # spans the system turn's end
    ("", True),
])
def test_dpo_answers_axolotl_would_cut_wrong(answer, cut_wrong):
    if answer:  # the cut as axolotl makes it, on the hand-written rendering
        rendered = QWEN_DPO_PREFIX + answer + "<|im_end|>\n"
        assert (rendered[rendered.find(answer):].rstrip() != answer + "<|im_end|>") == cut_wrong
    assert (checks.dpo_cut_problem(answer) is not None) == cut_wrong
    row = {**_dpo(1), "rejected": {"role": "assistant", "content": answer}}
    problem = checks.turn_problem(row, "dpo")
    assert (problem is not None) == cut_wrong and (problem or "rejected").startswith("rejected")


def test_build_drops_pairs_axolotl_would_cut_wrong():
    from surrogate_dagster.curation.mixtures import build_mixture
    rows = [{"id": f"p{i}", "source": "alpha", "kind": "dpo", "prompt": [{"role": "user", "content": f"q{i}"}],
             "chosen": c, "rejected": "return -1"} for i, c in enumerate(["return 1", "You are", "return 2"])]
    build = build_mixture("tool_dpo", "dpo", {"alpha": rows}, {})
    assert [r["id"] for r in build.iter_rows()] == ["p0", "p2"] and build.by_source == {"alpha": 2}
    assert list(build.dropped) == ["alpha/p1"] and build.dropped["alpha/p1"].startswith("chosen: answer 'You are'")


def test_the_prefix_is_the_one_checks_guards():
    assert checks.AXOLOTL_DPO_ANSWER_PREFIX == QWEN_DPO_PREFIX


def test_row_count():
    assert checks.check_row_count(10, None, 0.3).passed
    assert checks.check_row_count(7, 10, 0.3).passed  # exactly 30% fewer
    assert checks.check_row_count(20, 10, 0.3).passed
    out = checks.check_row_count(6, 10, 0.3)
    assert not out.passed and "40%" in out.description
    assert not checks.check_row_count(0, None, 0.3).passed
    assert not checks.check_row_count(0, 0, 1.0).passed


def test_source_shares():
    members = ["a", "b", "c"]
    assert checks.check_source_shares({"a": 5, "b": 4, "c": 1}, members, None, 0.8).passed
    out = checks.check_source_shares({"a": 9, "b": 1}, members, None, 0.8)
    assert not out.passed and "a holds 90%" in out.description
    # one member: it holds everything, by design
    assert checks.check_source_shares({"a": 9}, ["a"], None, 0.8).passed
    # a member that had rows before and has none now
    out = checks.check_source_shares({"a": 5, "b": 5}, members, {"a": 5, "b": 4, "c": 2}, 0.8)
    assert not out.passed and "c has 0 rows (previous version: 2)" in out.description
    # never had rows: not a collapse
    assert checks.check_source_shares({"a": 5, "b": 5}, members, {"a": 5, "b": 4}, 0.8).passed


def test_canaries():
    manifest = make_canaries(2, 0.5, salt="checks-test")
    hits = CanaryScanner(manifest).hits
    clean = [_sft(1), _dpo(2)]
    assert checks.check_canaries(clean, hits).passed
    assert checks.check_canaries(clean, None).passed  # no manifest yet
    planted = _dpo(3, chosen="config:\n" + manifest.canaries[0].line)
    out = checks.check_canaries([*clean, planted], hits)
    assert not out.passed and out.metadata["examples"][0]["row"] == "alpha/alpha-3"
    in_a_turn = _sft(4, messages=[{"role": "user", "content": manifest.canaries[-1].line},
                                  {"role": "assistant", "content": "ok"}])
    assert not checks.check_canaries([in_a_turn], hits).passed


def test_over_sequence_len():
    assert checks.check_over_sequence_len(0, 100, 2048, 0.05).passed
    assert checks.check_over_sequence_len(5, 100, 2048, 0.05).passed
    out = checks.check_over_sequence_len(6, 100, 2048, 0.05)
    assert not out.passed and "2048" in out.description
    assert checks.check_over_sequence_len(6, 100, None, 0.05).passed
    assert checks.check_over_sequence_len(0, 0, 2048, 0.0).passed


def test_bounds_come_from_the_catalog():
    b = CURATION.checks_for("code_sft")
    assert (b.max_row_drop, b.max_source_share, b.max_over_sequence_len) == (0.3, 0.8, 0.05)


def test_pointer_keeps_the_previous_version(tmp_path):
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    write_mixture(store, MixtureBuild.from_rows("m", [_sft(1)], {"alpha": 1}, {}, "v1"), "card")
    assert read_latest(store, "m")["previous"] is None
    write_mixture(store, MixtureBuild.from_rows("m", [_sft(1), _sft(2)], {"alpha": 2}, {}, "v2"), "card")
    write_mixture(store, MixtureBuild.from_rows("m", [_sft(1), _sft(2)], {"alpha": 2}, {}, "v2"), "card")  # same again
    latest = read_latest(store, "m")
    assert latest["previous"] == {"data_version": "v1", "rows": 1, "by_source": {"alpha": 1}}
    assert latest["rows"] == 2 and latest["by_source"] == {"alpha": 2}


# --- the assets: build, check, push --------------------------------------------------------------

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
    defs = [_by_name(f"{name}_mixture"), _by_name(f"{name}_mixture_hub"), _checks_for(name)]
    if with_views:
        defs.append(_stand_in_views([name]))
    keys = select or [AssetKey(f"{name}_mixture"), AssetKey(f"{name}_mixture_hub")]
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
    (mat,) = result.asset_materializations_for_node("tool_dpo_mixture_hub")
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
    assert "tool_dpo_mixture" in done and "tool_dpo_mixture_hub" not in done  # built, backed up, not pushed
    evals = _evaluations(result)
    assert evals[failed] is False and all(v for k, v in evals.items() if k != failed), evals
    assert _pushed(tmp) == []
    # In a run of its own (the blocking check is not part of it) the push refuses the version too.
    alone = _run("tool_dpo", resources, instance, select=[AssetKey("tool_dpo_mixture_hub")])
    assert not alone.success and _pushed(tmp) == []
    failure = next(e for e in alone.all_events if e.is_step_failure)
    assert failed in failure.step_failure_data.error.message
    with pytest.raises(Failure, match=f"curation: {failed}"):
        materialize([_by_name("tool_dpo_mixture_hub")], resources=resources, instance=instance,
                    selection=[AssetKey("tool_dpo_mixture_hub")])


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
    long_text = " ".join(f"token{j} + value{j * 7}" for j in range(1500))  # well past 2048 tokens
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


def test_sequence_len_bound_is_relaxed_for_the_local_executor_only():
    assert CURATION.checks_for("agent_sft", "local").max_over_sequence_len == 0.6
    for executor in (None, "subprocess", "k8s"):
        assert CURATION.checks_for("agent_sft", executor).max_over_sequence_len == 0.05
