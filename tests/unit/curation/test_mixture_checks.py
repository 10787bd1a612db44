"""Checks that guard a mixture's Hub push: the validators (curation/checks.py) on hand-written rows
(the real mixture, check and push assets on planted curated rows:
tests/integration/test_mixture_checks_materialize.py)."""

from __future__ import annotations

import pytest

from surrogate_dagster.curation import checks
from surrogate_dagster.curation.assets import CURATION
from surrogate_dagster.curation.mixtures import MixtureBuild, read_latest, write_mixture
from surrogate_dagster.canary import CanaryScanner, make_canaries
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


def test_sequence_len_bound_is_relaxed_for_the_local_executor_only():
    assert CURATION.checks_for("agent_sft", "local").max_over_sequence_len == 0.6
    for executor in (None, "subprocess", "k8s"):
        assert CURATION.checks_for("agent_sft", executor).max_over_sequence_len == 0.05
