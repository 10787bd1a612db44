"""Fuzz every registered adapter with malformed rows (hypothesis, derandomized).

Each adapter starts from a real row of its source's offline fixture (so the mutations reach deep
code paths, not just the first column check) and gets 1-3 mutations: a column replaced by or
spliced with hostile values (deep nesting, lone surrogates, 200 KB strings of unclosed tags,
wrong types, None), a nested value replaced, JSON-in-string columns re-encoded around a hostile
value, columns dropped. What comes out of the per-row guard that `normalize_source` uses must
be either a row meeting the normalized contract (and writable to Parquet) or a quarantine with
one of the adapter's own reasons: never an exception, an ``adapter_error:*`` or a timeout.
"""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from surrogate_dagster.catalog import load_sources
from surrogate_dagster.sources.adapters import dpo, registry, tools
from surrogate_dagster.sources.adapters.base import ROLES, AdapterContext, Quarantine
from surrogate_dagster.sources.hermes import parse_tool_calls, parse_tool_responses
from surrogate_dagster.storage.parquet_io import rows_to_parquet_bytes

# each example has a wall-clock deadline (hypothesis): run alone, after the parallel run
pytestmark = pytest.mark.timing

HUB = Path(__file__).resolve().parents[3] / "fixtures" / "hub" / "datasets"
ADAPTERS = registry()
# Sources whose rows carry Hermes tool calls: every call must parse and name a declared tool.
TOOL_ADAPTERS = set(tools.ADAPTERS) | {"hermes_agent_traces"} | {n for n in dpo.ADAPTERS if "when2call" in n}
COLUMNS = ("id", "source", "kind", "messages", "prompt", "chosen", "rejected", "tools", "meta")
EXAMPLES_PER_ADAPTER = 60


# ---------------------------------------------------------------------------------- templates

def _context(name: str, config: str, split: str) -> AdapterContext:
    ctx = AdapterContext(source=name, config=config, options={"split": split})
    ctx.helper_questions = lambda dataset, split, index: "Read n numbers and print their sum."
    return ctx


def _template(name: str) -> tuple[dict, str, str]:
    """A fixture row the adapter converts (else the first fixture row, else {}), with its config/split."""
    spec = next((s for s in load_sources().sources if s.adapter == name), None)
    first = None
    if spec is not None:
        for config in spec.configs:
            for split in spec.splits:
                path = HUB / spec.hf_id / config / f"{split}.jsonl"
                if not path.exists():
                    continue
                for line in path.read_text(encoding="utf-8").splitlines():
                    row = json.loads(line)
                    first = first or (row, config, split)
                    try:
                        ADAPTERS[name](copy.deepcopy(row), _context(name, config, split))
                    except Quarantine:
                        continue
                    return row, config, split
    return first or ({}, "default", "train")


TEMPLATES = {name: _template(name) for name in ADAPTERS}

# ---------------------------------------------------------------------------------- strategies

PIECES = [" \n", "\n", "<tool_call>", "</tool_call>", "<tool_call>{", "```", "```py\n", "<TOOLCALL>[",
          "</TOOLCALL>", "<tool_response>", "<tools>", "<|im_system|>tool_declare<|im_middle|>", "<|im_end|>",
          "\ud800", "\udfff", "{", "[", '{"a": ', "\\ud800", "\x00", "é😀", "'", '"', "\\", "List["]
TAGGED = ['<tool_call>{"name": "x", "arguments": {}}</tool_call>', "<tool_call>{[1]: 2}</tool_call>",
          "<tool_call>{'name': 'f', 'arguments': {'a': {1, 2}}}</tool_call>", "<tool_call>\n{oops\n</tool_call>",
          '<TOOLCALL>[{"name": "x", "arguments": {}}]</TOOLCALL>', "<TOOLCALL>[]</TOOLCALL>",
          "<tool_response>\nok\n</tool_response>", '<tools>[{"name": "x"}]</tools>', "```python\nx = 1\n```",
          '{"name": "x", "arguments": {}}', "diff --git a/x b/x\n--- a/x\n+++ b/x\n"]
KEYS = ["role", "content", "from", "value", "name", "arguments", "type", "properties", "required", "function",
        "tool_calls", "parameters", "text", "system_prompt", "function_call", "reasoning_content", "items"]


def _huge(piece: str, n: int) -> str:
    return (piece * (n // len(piece) + 1))[:n]


def _nest(depth: int, shape: str) -> Any:
    node: Any = {"type": "string"} if shape == "schema" else 1
    for _ in range(depth):
        node = ({"type": "object", "properties": {"a": node}} if shape == "schema"
                else {"a": node} if shape == "dict" else [node])
    return node


def _deep_text(depth: int, shape: str) -> str:
    return {"list": "[" * depth + "]" * depth, "dict": '{"a": ' * depth + "1" + "}" * depth,
            "type": "List[" * depth + "int" + "]" * depth, "call": "<tool_call>" * depth + "x" + "</tool_call>" * depth,
            "literal": "<tool_call>" + "(" * depth + ")" * depth + "</tool_call>"}[shape]


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value)
    except (RecursionError, ValueError, TypeError):
        return _deep_text(3000, "list")


surrogate_text = st.builds(lambda a, s, b: a + s + b, st.text(max_size=6),
                           st.sampled_from(["\ud800", "\udc00", "\udfff"]), st.text(max_size=6))
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | surrogate_text
           | st.sampled_from(TAGGED) | st.integers(4300, 6000).map(lambda n: "1" * n))
jsonish = st.recursive(scalars, lambda c: st.lists(c, max_size=4)
                       | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), c, max_size=4), max_leaves=12)
# Repeated, these make backtracking or rescanning parsers quadratic (seconds per 100 KB).
REPEATED = [" \n", "<tool_call>", "<tool_response>", "<TOOLCALL>", "<tools>", "<|im_system|>tool_declare<|im_middle|>",
            "```", "\ud800", "{", "List["]
huge = st.builds(_huge, st.sampled_from(REPEATED) | st.sampled_from(PIECES + TAGGED),
                 st.sampled_from([50_000, 100_000, 200_000]) | st.integers(1, 200_000))
deep = (st.builds(_nest, st.integers(60, 3000), st.sampled_from(["list", "dict", "schema"]))
        | st.builds(_deep_text, st.integers(60, 5000), st.sampled_from(["list", "dict", "type", "call", "literal"])))
hostile = st.one_of(huge, deep, scalars, jsonish, jsonish.map(_dumps),
                    st.lists(st.sampled_from(PIECES + TAGGED), max_size=8).map("".join))
splice = st.one_of(huge, st.sampled_from(PIECES + TAGGED), surrogate_text)


def _mutate(value: Any, data: st.DataObject, depth: int = 0) -> Any:
    """``value`` with one part changed: mostly descend (containers, JSON text) and splice hostile text
    into a real string, keeping the row near-valid so that deep code paths run; sometimes replace
    the part with a hostile value or drop a key. Low draws mean "descend": hypothesis favours them."""
    choice = data.draw(st.integers(0, 9))
    container = isinstance(value, (dict, list)) and bool(value)
    if depth < 6 and (choice < 6 or (container and choice < 9)):
        if isinstance(value, dict) and value:
            key = data.draw(st.sampled_from(sorted(value, key=str)))
            if data.draw(st.integers(0, 19)) == 19:
                return {k: v for k, v in value.items() if k != key}
            return {**value, key: _mutate(value[key], data, depth + 1)}
        if isinstance(value, list) and value:
            i = data.draw(st.integers(0, len(value) - 1))
            return value[:i] + [_mutate(value[i], data, depth + 1)] + value[i + 1:]
        if isinstance(value, str) and value[:1] in "[{":
            try:
                decoded = json.loads(value)
            except (ValueError, RecursionError):
                decoded = None
            if decoded is not None:
                mutated = _mutate(decoded, data, depth + 1)
                try:
                    return json.dumps(mutated, ensure_ascii=data.draw(st.booleans()))
                except RecursionError:  # a deep value: its JSON text is built without recursion
                    return _deep_text(3000, "list")
    if isinstance(value, str) and choice < 9:
        at = data.draw(st.integers(0, len(value)))
        return value[:at] + data.draw(splice) + value[at:]
    return data.draw(hostile)


# ----------------------------------------------------------------------------------- contract

def _no_none(value: Any) -> bool:
    if isinstance(value, dict):
        return all(v is not None and _no_none(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_none(v) for v in value)
    return True


def _check_turns(turns: list, key: str) -> None:
    for m in turns:
        assert set(m) == {"role", "content"} and m["role"] in ROLES and isinstance(m["content"], str), key
        if m["role"] == "tool":  # the template unwraps exactly one wrapper per result
            assert parse_tool_responses(m["content"]), f"{key}: tool turn without <tool_response>"


def check_contract(out: dict, name: str) -> None:
    """The normalized-row contract (adapters/base.py), for SFT and DPO rows alike."""
    assert tuple(out) == COLUMNS
    assert out["source"] == name and out["kind"] in ("sft", "dpo")
    assert isinstance(out["id"], str) and out["id"]
    assert isinstance(json.loads(out["meta"]), dict)
    declared: set[str] = set()
    if out["tools"]:
        for t in json.loads(out["tools"]):
            assert t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
            assert _no_none(t)  # Arrow-unified nulls never reach the prompt
            declared.add(t["function"]["name"])
    if out["kind"] == "sft":
        assert out["prompt"] == [] and out["chosen"] == out["rejected"] == ""
        _check_turns(out["messages"], "messages")
        assert any(m["role"] == "assistant" and m["content"].strip() for m in out["messages"])
        answers = [m["content"] for m in out["messages"] if m["role"] == "assistant"]
        context = out["messages"]
    else:
        assert out["messages"] == [] and out["prompt"]
        _check_turns(out["prompt"], "prompt")
        assert out["chosen"].strip() and out["rejected"].strip() and out["chosen"].strip() != out["rejected"].strip()
        answers = [out["chosen"], out["rejected"]]
        context = out["prompt"]
    if declared:
        system = context[0]
        assert system["role"] == "system"
        assert all('"name": ' + json.dumps(n, ensure_ascii=False) in system["content"] for n in declared)
    if name in TOOL_ADAPTERS:
        for text in answers:
            assert all(c["name"] in declared for c in parse_tool_calls(text))
    rows_to_parquet_bytes([out])  # Parquet accepts every string (no lone surrogates)


# -------------------------------------------------------------------------------------- fuzz

def mutated_row(name: str, data: st.DataObject) -> dict:
    row = copy.deepcopy(TEMPLATES[name][0])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        row = _mutate(row, data) if row else {data.draw(st.sampled_from(KEYS)): data.draw(hostile)}
        if not isinstance(row, dict):  # the guard only ever sees dict rows (Parquet records)
            row = {"value": row}
    return row


FUZZ = settings(max_examples=EXAMPLES_PER_ADAPTER, deadline=timedelta(seconds=3), derandomize=True,
                database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example, HealthCheck.filter_too_much])


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_adapter_survives_malformed_rows(name):
    from surrogate_dagster.sources.adapters.guard import convert_row

    _, config, split = TEMPLATES[name]

    @FUZZ
    @given(data=st.data())
    def run(data):
        row = mutated_row(name, data)
        try:
            out = convert_row(ADAPTERS[name], row, _context(name, config, split))
        except Quarantine as q:
            assert not q.reason.startswith(("adapter_error", "adapter_timeout", "adapter_")), f"{q.reason}: {q.detail}"
            return
        check_contract(out, name)

    run()


def test_every_adapter_module_is_fuzzed():
    """Every module of the adapters package with an ``ADAPTERS`` dict is in the registry fuzzed above."""
    import importlib
    import pkgutil

    from surrogate_dagster.sources import adapters as package

    found: set[str] = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= set(getattr(module, "ADAPTERS", {}))
    assert found and found == set(ADAPTERS)
    assert all(TEMPLATES[n][0] for n in ADAPTERS), "every adapter has a fixture row to mutate"
