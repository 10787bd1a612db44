"""Hostile rows: each fault class ends as a quarantine row with a reason, never a failed partition.

Classes: an adapter raising anything (``adapter_error:<Type>``), nesting deeper than the limit
(``too_deep``), lone UTF-16 surrogates (``lone_surrogate``), quadratic-time parsing (must stay
linear), a DPO answer calling a tool the prompt does not declare (``undeclared_tool``), and an
adapter running past the per-row time budget (``adapter_timeout``).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest

from surrogate_dagster.catalog.models import SourceSpec
from surrogate_dagster.hub import OfflineHub
from surrogate_dagster.sources import hermes as H
from surrogate_dagster.sources import normalize as N
from surrogate_dagster.sources.adapters import code_sft, dpo
from surrogate_dagster.sources.adapters.base import AdapterContext, Quarantine, content_id
from surrogate_dagster.sources.mirror import mirror_source
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.parquet_io import parquet_bytes_to_rows

HUB = Path(__file__).resolve().parents[3] / "fixtures" / "hub" / "datasets"
REV = "e" * 40


def fixture_row(repo: str, part: str, i: int = 0) -> dict:
    lines = (HUB / repo / f"{part}.jsonl").read_text().splitlines()
    return json.loads(lines[i])


def mirrored(tmp_path, spec: SourceSpec, rows: list[dict]) -> LocalObjectStore:
    """An object store holding `rows` mirrored as source `spec` (default config, train split)."""
    repo = tmp_path / "hub" / "datasets" / "org" / "ds"
    (repo / "default").mkdir(parents=True)
    (repo / "default" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (repo / "revision.txt").write_text(REV)
    store = LocalObjectStore(tmp_path / "store")
    mirror_source(spec, OfflineHub(tmp_path / "hub", tmp_path / "push", "org"), store, log=lambda m: None)
    return store


def spec(adapter: str, family: str) -> SourceSpec:
    return SourceSpec(name=adapter, family=family, hf_id="org/ds", adapter=adapter)


def quarantine_rows(store: LocalObjectStore, report) -> list[dict]:
    return parquet_bytes_to_rows(store.get_bytes(report.quarantine_key))


def deep_list_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_schema(depth: int) -> dict:
    node: dict = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"a": node}}
    return node


# ----------------------------------------------------------------------- crashes -> quarantine

def test_deep_schema_is_too_deep():
    with pytest.raises(Quarantine) as q:
        H.normalize_json_schema(deep_schema(5000))
    assert q.value.reason == "too_deep"
    with pytest.raises(Quarantine) as q:
        H.normalize_json_schema({"type": "object", "properties": {"x": {"type": "List[" * 3000 + "int" + "]" * 3000}}})
    assert q.value.reason == "too_deep"
    # well within the limit: unchanged behaviour
    assert H.normalize_json_schema(deep_schema(20))["properties"]["a"]["type"] == "object"


def test_too_deep_is_still_a_value_error_for_other_callers():
    # The eval harness and trace validator catch ValueError for malformed model output.
    with pytest.raises(ValueError):
        H.parse_tool_calls('<tool_call>{"name": "f", "arguments": ' + '{"a": ' * 3000 + "1" + "}" * 3000
                           + "}</tool_call>")


def test_unhashable_literal_key_is_a_bad_call_not_a_type_error():
    with pytest.raises(ValueError):
        H.parse_tool_calls("<tool_call>{[1]: 2}</tool_call>")


def test_lone_surrogate_in_content_id_is_quarantined():
    with pytest.raises(Quarantine) as q:
        content_id("ok", {"x": "\ud800"})
    assert q.value.reason == "lone_surrogate"
    assert content_id("é", "😀") == content_id("é", "😀")  # valid text hashes as before


def test_one_partition_of_crashing_rows_survives(tmp_path):
    good = fixture_row("NousResearch/hermes-function-calling-v1", "func_calling_singleturn/train")
    literal = json.loads(json.dumps(good))
    literal["id"] = "literal"
    literal["conversations"][2]["value"] = "<tool_call>{[1]: 2}</tool_call>"
    deep = {**good, "id": "deep", "tools": deep_list_json(5000)}
    tl = json.loads(good["tools"])
    tl[0]["function"]["description"] = "broken \ud800 text"
    surrogate = {**good, "id": "surrogate", "tools": json.dumps(tl)}  # ASCII JSON escape: mirrors fine
    store = mirrored(tmp_path, spec("hermes_function_calling", "tool"), [good, literal, deep, surrogate])
    rep = N.normalize_source(spec("hermes_function_calling", "tool"), store, log=lambda m: None)
    assert rep.rows_out == 1
    assert rep.quarantined == {"bad_tool_call": 1, "too_deep": 1, "lone_surrogate": 1}
    q = {json.loads(r["row_json"])["id"]: r for r in quarantine_rows(store, rep)}
    assert set(q) == {"literal", "deep", "surrogate"}
    assert json.loads(q["deep"]["row_json"])["tools"] == deep_list_json(5000)  # the raw row is kept


def test_any_adapter_exception_becomes_a_typed_quarantine(tmp_path, monkeypatch):
    real = code_sft.adapt_codefeedback_filtered

    def flaky(row, ctx):
        if row["query"].startswith("KeyError"):
            return {}["missing"]
        if row["query"].startswith("Zero"):
            return 1 / 0
        if row["query"].startswith("Long"):
            raise RuntimeError("x" * 5000)
        return real(row, ctx)

    monkeypatch.setattr(N, "registry", lambda: {"codefeedback_filtered": flaky})
    rows = [{"query": q, "answer": "Use `sorted(xs)`.", "lang": "python"}
            for q in ("How do I sort?", "KeyError please", "Zero division", "Long message")]
    src = spec("codefeedback_filtered", "code_sft")
    store = mirrored(tmp_path, src, rows)
    rep = N.normalize_source(src, store, log=lambda m: None)
    assert rep.rows_out == 1
    assert rep.quarantined == {"adapter_error:KeyError": 1, "adapter_error:ZeroDivisionError": 1,
                               "adapter_error:RuntimeError": 1}
    by_reason = {r["reason"]: r for r in quarantine_rows(store, rep)}
    assert "'missing'" in by_reason["adapter_error:KeyError"]["detail"]
    assert len(by_reason["adapter_error:RuntimeError"]["detail"]) <= 500
    assert json.loads(by_reason["adapter_error:ZeroDivisionError"]["row_json"])["query"] == "Zero division"


def test_catalog_errors_still_fail_the_partition(tmp_path):
    # A config the adapter does not know is a catalog mistake, not a bad row.
    src = spec("opc_sft_stage1", "code_sft")
    store = mirrored(tmp_path, src, [{"instruction": "Sort a list.", "output": "Use sorted().", "id": 1}])
    with pytest.raises(ValueError, match="config"):
        N.normalize_source(src, store, log=lambda m: None)


# ------------------------------------------------------------------------------ linear time

def _best_time(fn, text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            fn(text)
        except (ValueError, Quarantine):
            pass
        best = min(best, time.perf_counter() - t0)
    return best


def _agent_system_prompt(text: str) -> None:
    row = fixture_row("lambda/hermes-agent-reasoning-traces", "kimi/train")
    row["conversations"][0]["value"] = text
    from surrogate_dagster.sources.adapters import agent
    agent.hermes_agent_traces(row, AdapterContext(source="hermes_agent_traces", config="kimi"))


HOSTILE_TEXT = {
    "fence_language": (lambda t: code_sft.fence_language(t), " \n"),
    "parse_tool_calls": (H.parse_tool_calls, "<tool_call>"),
    "rewrite_tool_calls": (H.rewrite_tool_calls, "<tool_call>{}"),
    "parse_tool_responses": (H.parse_tool_responses, "<tool_response>"),
    "toolcall_tag_to_hermes": (H.toolcall_tag_to_hermes, "<TOOLCALL>"),
    "strip_template_tokens": (H.strip_template_tokens, "<|im_system|>tool_declare<|im_middle|>"),
    "tools_block": (_agent_system_prompt, "<tools>"),
}


@pytest.mark.timeout(120)
@pytest.mark.timing
@pytest.mark.parametrize("name", list(HOSTILE_TEXT))
def test_adversarial_text_parses_in_linear_time(name):
    fn, piece = HOSTILE_TEXT[name]
    small = piece * (50_000 // len(piece))
    big = piece * (200_000 // len(piece))
    t_small, t_big = _best_time(fn, small), _best_time(fn, big)
    # Complexity, not speed: 4x the input may cost ~4x (8x allowed for noise), never ~16x; the
    # absolute bound is generous (benchmarks own speed targets).
    assert t_big < 0.5, f"{name}: {t_big:.3f}s on 200 KB"
    assert t_big < 8 * t_small + 0.02, f"{name}: {t_small:.4f}s on 50 KB vs {t_big:.4f}s on 200 KB"


@pytest.mark.timing
def test_many_duplicate_tool_names_are_reported_in_linear_time():
    many = [{"name": f"t{i % 20_000}"} for i in range(40_000)]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="duplicate"):
        H.normalize_tools(many)
    assert time.perf_counter() - t0 < 2.0


# ------------------------------------------------------------------------ surrogates / garbage

def test_surrogate_decoded_from_a_json_column_never_reaches_parquet(tmp_path):
    good = fixture_row("nvidia/OpenCodeInstruct", "default/train")
    bad = {**good, "id": "bad", "unit_tests": json.dumps(["assert f('\ud800') is None"])}
    src = spec("opencodeinstruct", "code_sft")
    store = mirrored(tmp_path, src, [good, bad])
    rep = N.normalize_source(src, store, log=lambda m: None)
    assert rep.rows_out == 1 and rep.quarantined == {"lone_surrogate": 1}
    row_json = quarantine_rows(store, rep)[0]["row_json"]
    assert json.loads(row_json)["unit_tests"] == bad["unit_tests"]  # kept losslessly


def _when2call(chosen: str, rejected: str, with_tools: bool = True) -> dict:
    row = fixture_row("nvidia/When2Call", "train_pref/train", 1)
    if not with_tools:
        row["tools"] = []
    row["chosen_response"] = {"role": "assistant", "content": chosen}
    row["rejected_response"] = {"role": "assistant", "content": rejected}
    return row


def _call(name: str) -> str:
    return f'<TOOLCALL>[{{"name": "{name}", "arguments": {{"domain": "stripe.com"}}}}]</TOOLCALL>'


@pytest.mark.parametrize("chosen, rejected, with_tools", [
    (_call("delete_everything"), "I can't.", True),
    ("I can't.", _call("delete_everything"), True),
    (_call("get_company_by_domain"), "I can't.", False),
    ('<tool_call>\n{"name": "delete_everything", "arguments": {}}\n</tool_call>', "I can't.", True),
])
def test_dpo_answer_calling_an_undeclared_tool_is_quarantined(chosen, rejected, with_tools):
    ctx = AdapterContext(source="when2call_pref", config="train_pref")
    with pytest.raises(Quarantine) as q:
        dpo.adapt_when2call_pref(_when2call(chosen, rejected, with_tools), ctx)
    assert q.value.reason == "undeclared_tool"
    ok = dpo.adapt_when2call_pref(_when2call(_call("get_company_by_domain"), "I can't."), ctx)
    assert ok["kind"] == "dpo" and "<tool_call>" in ok["chosen"]


def test_dpo_answer_with_a_malformed_call_is_quarantined():
    ctx = AdapterContext(source="when2call_pref", config="train_pref")
    with pytest.raises(Quarantine) as q:
        dpo.adapt_when2call_pref(_when2call("<tool_call>{oops</tool_call>", "I can't."), ctx)
    assert q.value.reason in ("bad_tool_call", "malformed_toolcall")


# ------------------------------------------------------------------------------ time budget

def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.mark.timing
def test_slow_adapter_is_cut_off_at_the_row_budget(tmp_path, monkeypatch):
    real = code_sft.adapt_codefeedback_filtered

    def slow(row, ctx):
        if row["query"].startswith("slow"):
            _busy(4.0)
        return real(row, ctx)

    monkeypatch.setattr(N, "registry", lambda: {"codefeedback_filtered": slow})
    src = spec("codefeedback_filtered", "code_sft")
    store = mirrored(tmp_path, src, [{"query": q, "answer": "Use `sorted(xs)`."} for q in ("fast one", "slow one")])
    t0 = time.monotonic()
    rep = N.normalize_source(src, store, log=lambda m: None)
    assert rep.rows_out == 1 and rep.quarantined == {"adapter_timeout": 1}
    assert time.monotonic() - t0 < 3.5  # interrupted near the 1 s budget, not run to the end


@pytest.mark.timing
def test_budget_is_measured_where_no_alarm_can_be_used():
    from surrogate_dagster.sources.adapters.guard import convert_row

    def sleepy(row, ctx):
        time.sleep(0.3)
        return code_sft.adapt_codefeedback_filtered(row, ctx)

    result: dict = {}

    def worker():
        try:
            convert_row(sleepy, {"query": "q?", "answer": "a"}, AdapterContext(source="s"), budget_s=0.1)
        except Quarantine as q:
            result["reason"] = q.reason

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert result == {"reason": "adapter_timeout"}


def test_an_outer_alarm_survives_the_row_budget():
    from surrogate_dagster.sources.adapters.guard import convert_row

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        out = convert_row(code_sft.adapt_codefeedback_filtered, {"query": "q?", "answer": "a"},
                          AdapterContext(source="s"))
        assert out["kind"] == "sft"
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25.0 < remaining <= 30.0
        assert signal.getsignal(signal.SIGALRM) is not None and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)



def test_tool_turns_are_wrapped_or_refused():
    # A tool turn must hold <tool_response> blocks: the chat-template bridge refuses anything else.
    from surrogate_dagster.sources.adapters import agent, tools
    from surrogate_dagster.sources.hermes import to_template_messages

    row = fixture_row("nvidia/When2Call", "train_sft/train")
    row["messages"] = [*row["messages"][:1], {"role": "tool", "content": "42"}, *row["messages"][1:]]
    out = tools.when2call_sft(row, AdapterContext(source="when2call_sft", config="train_sft"))
    assert to_template_messages(out["messages"])  # renders
    nebius = fixture_row("nebius/SWE-agent-trajectories", "default/train")
    nebius["trajectory"][1]["role"] = "function"
    with pytest.raises(Quarantine) as q:
        agent.nebius_swe_agent(nebius, AdapterContext(source="nebius_swe_agent"))
    assert q.value.reason == "bad_role"
