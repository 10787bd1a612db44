"""Unit tests for surrogate_dagster/sources/hermes.py (the Hermes tool format helpers)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from surrogate_dagster.sources import hermes as H

SHARED = Path(os.environ.get("SURROGATE_SHARED_DIR", Path(__file__).resolve().parents[3].parent / "shared"))


# ------------------------------------------------------------------------------- schemas

@pytest.mark.parametrize("given, expected", [
    ("dict", {"type": "object"}), ("str", {"type": "string"}), ("int", {"type": "integer"}),
    ("float", {"type": "number"}), ("bool", {"type": "boolean"}), ("list", {"type": "array"}),
    ("tuple", {"type": "array"}), ("string", {"type": "string"}), ("integer", {"type": "integer"}),
    ("List[int]", {"type": "array", "items": {"type": "integer"}}),
    ("list[str]", {"type": "array", "items": {"type": "string"}}),
    ("List[List[float]]", {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
    ("Dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("Dict[str, Any]", {"type": "object"}),
    ("Union[int, float]", {"type": ["integer", "number"]}),
    ("int|str", {"type": ["integer", "string"]}),
    ("Literal['a', 'b']", {"enum": ["a", "b"]}),
    ("any", {}), ("Any", {}),
])
def test_type_names_map_to_json_schema(given, expected):
    schema = H.normalize_json_schema({"type": "object", "properties": {"p": {"type": given}}})
    assert schema["properties"]["p"] == expected


@pytest.mark.parametrize("given, base", [
    ("float, optional", "number"), ("Optional[str]", "string"), ("str, default='en, us'", "string"),
    ("List[int], optional", "array"), ("Union[int, None]", "integer"),
])
def test_optional_type_strings_are_not_required(given, base):
    schema = H.normalize_json_schema({"type": "dict", "properties": {"p": {"type": given}, "q": {"type": "int"}},
                                      "required": ["p", "q"]})
    assert schema["type"] == "object"
    assert schema["properties"]["p"]["type"] == base
    assert schema["required"] == ["q"]


def test_schema_drops_nulls_and_keeps_enum_default_description():
    schema = H.normalize_json_schema({
        "type": "object", "required": None,
        "properties": {"mode": {"type": "str", "enum": ["a", "b"], "default": "a", "description": "d", "items": None},
                       "ghost": None,
                       "nested": {"type": "dict", "properties": {"x": {"type": "List[int]", "enum": None}}}}})
    assert schema == {"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "description": "d"},
        "nested": {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "integer"}}}}}}


@pytest.mark.parametrize("bad", ["frobnicate", "List[frob]", "int, whatever", "Literal[foo()]"])
def test_unknown_types_raise(bad):
    with pytest.raises(ValueError, match="unsupported"):
        H.normalize_json_schema({"type": "object", "properties": {"p": {"type": bad}}})


def test_schema_from_json_string_and_type_list():
    s = H.normalize_json_schema('{"type": "object", "properties": {"v": {"type": ["int", "null"]}}}')
    assert s["properties"]["v"]["type"] == ["integer", "null"]


# ------------------------------------------------------------------------------- tools

OPENAI = {"type": "function", "function": {"name": "f", "description": "d",
                                           "parameters": {"type": "object", "properties": {"a": {"type": "string"}},
                                                          "required": ["a"]}}}
EXPECTED_F = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {
    "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}


@pytest.mark.parametrize("given", [
    OPENAI,
    OPENAI["function"],                                                              # bare
    {"name": "f", "description": "d", "parameters": {"a": {"type": "str"}}},         # xLAM
    {"name": "f", "description": "d", "parameters": {"a": {"type": "str", "required": True}}},
    {"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {"a": {"type": "str"}}},
     "required": ["a"]},                                                             # When2Call
    {"type": "function", "function": {"name": "f", "description": "d", "parameters": None,
                                      "arguments": OPENAI["function"]["parameters"]}},  # ToolMind + Arrow
    {"name": "f", "description": "d", "input_schema": OPENAI["function"]["parameters"]},  # MCP
    json.dumps(OPENAI),
])
def test_normalize_tool_accepts_every_source_style(given):
    assert H.normalize_tools([given]) == [EXPECTED_F]


def test_normalize_tools_is_idempotent_on_fixture_tools():
    hub = Path(__file__).resolve().parents[3] / "fixtures/hub/datasets"
    raw = [json.loads(line)["tools"] for line in
           (hub / "Salesforce/xlam-function-calling-60k/default/train.jsonl").read_text().splitlines()[:5]]
    raw.append(json.loads((SHARED / "data/samples/SWE-Gym__OpenHands-Sampled-Trajectories.jsonl")
                          .read_text().splitlines()[0])["tools"])
    for tools in raw:
        once = H.normalize_tools(tools)
        assert H.normalize_tools(once) == once


def test_string_required_flags():
    p = H.normalize_tool({"name": "f", "parameters": {"a": {"type": "str", "required": "true"},
                                                      "b": {"type": "str", "required": "False"}}})
    assert p["function"]["parameters"]["required"] == ["a"]


def test_normalize_tools_containers():
    assert H.normalize_tools(json.dumps([OPENAI])) == [EXPECTED_F]
    assert H.normalize_tools([json.dumps(OPENAI["function"])]) == [EXPECTED_F]   # When2Call test style
    assert H.normalize_tools(OPENAI) == [EXPECTED_F]
    assert H.normalize_tools("") == [] and H.normalize_tools(None) == [] and H.normalize_tools("[]") == []


def test_xlam_param_named_type_and_defaults():
    tool = {"name": "live_giveaways_by_type", "description": "x", "parameters": {
        "type": {"description": "kind", "type": "str", "default": "game"},
        "n": {"description": "count", "type": "int"},
        "lang": {"description": "l", "type": "str, optional"},
        "flagged": {"type": "str", "default": "x", "required": True}}}
    params = H.normalize_tool(tool)["function"]["parameters"]
    assert params["properties"]["type"] == {"description": "kind", "type": "string", "default": "game"}
    assert params["required"] == ["n", "flagged"]  # a default or "optional" makes a parameter optional


def test_xlam_bfcl_card_example_becomes_bfcl_schema():
    tool = {"name": "math_toolkit.sum_of_multiples", "description": "Find the sum of all multiples.",
            "parameters": {"lower_limit": {"type": "int", "description": "lo", "required": True},
                           "multiples": {"type": "List[int]", "description": "m", "required": True}}}
    p = H.normalize_tool(tool)["function"]["parameters"]
    assert p == {"type": "object", "properties": {
        "lower_limit": {"type": "integer", "description": "lo"},
        "multiples": {"type": "array", "items": {"type": "integer"}, "description": "m"}},
        "required": ["lower_limit", "multiples"]}


def test_swe_gym_null_unified_tools_are_cleaned():
    row = json.loads((SHARED / "data/samples/SWE-Gym__OpenHands-Sampled-Trajectories.jsonl").read_text().splitlines()[0])
    assert row["tools"][0]["function"]["parameters"]["properties"]["file_text"] is None  # the gotcha is real
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in H.normalize_tools(row["tools"])}
    assert set(tools) == {"execute_bash", "str_replace_editor", "finish"}
    assert "file_text" not in tools["execute_bash"]["properties"]
    assert "enum" not in tools["execute_bash"]["properties"]["command"]
    assert "null" not in json.dumps(tools)
    assert tools["str_replace_editor"]["properties"]["command"]["enum"][0] == "view"


@pytest.mark.parametrize("bad, match", [
    ({"description": "no name"}, "name"),
    ({"name": "f", "parameters": [1, 2]}, "object"),
    ({"name": "f", "parameters": {"type": "string"}}, "not object"),
    ({"name": "f", "parameters": {"a": "int"}}, "spec"),
])
def test_bad_tools_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        H.normalize_tool(bad)


def test_duplicate_tool_names_raise():
    with pytest.raises(ValueError, match="duplicate"):
        H.normalize_tools([OPENAI, OPENAI])


def test_system_prompt_lists_tools_as_json_once():
    prompt = H.hermes_system_prompt([OPENAI["function"]], extra="Be brief.")
    assert prompt.startswith("You are a function calling AI model.")
    body = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert [json.loads(line) for line in body.splitlines()] == [EXPECTED_F]
    assert prompt.endswith("\n\nBe brief.")
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-dict>}\n</tool_call>' in prompt


# ------------------------------------------------------------------------------- calls

def test_format_and_parse_roundtrip():
    text = H.format_tool_call("get", {"q": "é", "n": [1, 2]})
    assert text == '<tool_call>\n{"name": "get", "arguments": {"q": "é", "n": [1, 2]}}\n</tool_call>'
    assert H.parse_tool_calls("pre\n" + text + "\n" + H.format_tool_call("h", "{}")) == [
        {"name": "get", "arguments": {"q": "é", "n": [1, 2]}}, {"name": "h", "arguments": {}}]


def test_parse_python_literal_and_string_arguments():
    text = "<tool_call>\n{'arguments': {'symbol': 'TSLA', 'r': (1, 2), 'ok': True}, 'name': 'f'}\n</tool_call>"
    assert H.parse_tool_calls(text) == [{"name": "f", "arguments": {"symbol": "TSLA", "r": [1, 2], "ok": True}}]
    text = '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    assert H.parse_tool_calls(text) == [{"name": "f", "arguments": {"a": 1}}]
    assert H.rewrite_tool_calls("Sure.\n<tool_call>\n{'name': 'f', 'arguments': {}}\n</tool_call>") == \
        'Sure.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'


@pytest.mark.parametrize("garbage", [
    "<tool_call>\n{oops\n</tool_call>",
    "<tool_call>[1, 2]</tool_call>",
    "<tool_call>{\"name\": \"f\", \"arguments\": {}}",
    "</tool_call>",
    "<tool_call>{\"arguments\": {}}</tool_call>",
    "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
    "<tool_call>{\"name\": \"f\", \"arguments\": \"a=1\"}</tool_call>",
    "<tool_call>{\"name\": \"f\", \"arguments\": {}, \"id\": 3}</tool_call>",
    "<tool_call>{'name': 'f', 'arguments': {'s': {1, 2}}}</tool_call>",
    "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": NaN}}</tool_call>",
])
def test_garbage_calls_raise_value_error(garbage):
    with pytest.raises(ValueError):
        H.parse_tool_calls(garbage)


@pytest.mark.parametrize("name, args", [("", {}), (None, {}), ("f", [1]), ("f", "not json")])
def test_format_tool_call_rejects_bad_input(name, args):
    with pytest.raises(ValueError):
        H.format_tool_call(name, args)


def test_toolcall_tag_rewrite():
    text = 'ok <TOOLCALL>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]</TOOLCALL>'
    out = H.toolcall_tag_to_hermes(text)
    assert out.startswith("ok <tool_call>\n")
    assert H.parse_tool_calls(out) == [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]
    assert H.toolcall_tag_to_hermes("plain text") == "plain text"
    for bad in ['<TOOLCALL>[{"name": "a"</TOOLCALL>', "<TOOLCALL>[]</TOOLCALL>", '<TOOLCALL>["{}"]</TOOLCALL>',
                '<TOOLCALL>[{"name": "a", "arguments": {}}]', '<TOOLCALL>[{"name": "a", "foo": 1}]</TOOLCALL>']:
        with pytest.raises(ValueError):
            H.toolcall_tag_to_hermes(bad)


def test_tool_responses():
    assert H.format_tool_response({"a": 1}) == '<tool_response>\n{"a": 1}\n</tool_response>'
    two = H.format_tool_response("x\ny") + "\n" + H.format_tool_response("z")
    assert H.parse_tool_responses(two) == ["x\ny", "z"]


def test_strip_kimi_template_tokens():
    text = ('<|im_system|>tool_declare<|im_middle|>[{"type": "function"}]<|im_end|>'
            '<|im_system|>system<|im_middle|>You are helpful.<|im_end|>')
    assert H.strip_template_tokens(text) == "You are helpful."
    assert H.strip_template_tokens("<|im_system|>tool_declare<|im_middle|>[]<|im_end|>") == ""


@pytest.mark.parametrize("given, expected", [
    ("human", "user"), ("HUMAN", "user"), ("gpt", "assistant"), ("ai", "assistant"), ("ASSISTANT", "assistant"),
    ("function", "tool"), ("tool", "tool"), ("system", "system"), ("user", "user"), ("observation", "tool"),
])
def test_role_mapping(given, expected):
    assert H.map_role(given) == expected


@pytest.mark.parametrize("bad", ["narrator", "", None, 3])
def test_unknown_roles_raise(bad):
    with pytest.raises(ValueError, match="unknown role"):
        H.map_role(bad)


def test_with_reasoning():
    assert H.with_reasoning("think", "answer") == "<think>\nthink\n</think>\n\nanswer"
    assert H.with_reasoning(None, "answer") == "answer"
    assert H.with_reasoning("t", "") == "<think>\nt\n</think>"


def test_to_template_messages_unwraps_each_response():
    msgs = [{"role": "user", "content": "u"},
            {"role": "assistant", "content": H.format_tool_call("f", {})},
            {"role": "tool", "content": H.format_tool_response("a") + "\n" + H.format_tool_response("b")}]
    out = H.to_template_messages(msgs)
    assert out[1] == msgs[1]
    assert out[2:] == [{"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}]
    with pytest.raises(ValueError):
        H.to_template_messages([{"role": "tool", "content": "bare"}])
