"""Render converted tool conversations through the real Qwen2.5 chat template and parse them back.

The template is TRL's copy of Qwen2.5's (``trl/chat_templates/qwen2_5.jinja``: it is the
one ``assistant_only_loss`` needs), rendered with transformers' own jinja renderer (no tokenizer).
For every tool source and the agent source with tool calls, the calls a model sees in the rendered
text must be exactly the calls of the *native* row (names and arguments, in order), extracted here
independently of the adapters. Messages are rendered as a training mixture holds them
(``to_mixture_row``: Hermes call text in assistant turns, one bare ``tool`` message per result; see
hermes.py's docstring), and a strict ``json.loads`` parser stands in for the inference-side Hermes
parser (no literal_eval). How axolotl itself reads the mixtures: tests/env/test_axolotl_reader.py.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import trl
from transformers.utils.chat_template_utils import render_jinja_template

from surrogate_dagster.curation.mixtures import to_mixture_row
from surrogate_dagster.sources.hermes import parse_tool_calls, parse_tool_responses
from tests.unit.sources.test_adapters_tool_agent import EXPECTED, OK, rows_of, run

TEMPLATES = Path(trl.__file__).resolve().parent / "chat_templates"
QWEN = (TEMPLATES / "qwen2_5.jinja").read_text()
QWEN_TRAINING = (TEMPLATES / "qwen2_5_training.jinja").read_text()

STRICT_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
ASSISTANT_TURN = re.compile(r"<\|im_start\|>assistant\n?(.*?)<\|im_end\|>", re.S)


def _args(value):
    return json.loads(value) if isinstance(value, str) else value


def _hermes_bodies(text: str) -> list[dict]:
    out = []
    for body in re.findall(r"<tool_call>(.*?)</tool_call>", text, re.S):
        try:
            obj = json.loads(body)
        except json.JSONDecodeError:
            obj = ast.literal_eval(body.strip())
        out.append({"name": obj["name"], "arguments": json.loads(json.dumps(_args(obj.get("arguments", {}))))})
    return out


def _openai_calls(messages: list[dict], drop_null_args: bool = False) -> list[dict]:
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                args = _args(c["function"]["arguments"])
                if drop_null_args:
                    args = {k: v for k, v in args.items() if v is not None}
                out.append({"name": c["function"]["name"], "arguments": args})
    return out


def native_calls(source: str, row: dict) -> list[dict]:
    """The calls of a native row, read straight from its upstream encoding."""
    if source in ("hermes_function_calling", "hermes_agent_traces"):
        return [c for t in row["conversations"] if t["from"] == "gpt" for c in _hermes_bodies(t["value"])]
    if source == "xlam_function_calling":
        return json.loads(row["answers"])
    if source == "toucan_kimi_k2":
        return [{"name": m["function_call"]["name"], "arguments": json.loads(m["function_call"]["arguments"])}
                for m in json.loads(row["messages"]) if m.get("function_call")]
    if source == "when2call_sft":
        return [c for m in row["messages"] if m["role"] == "assistant"
                for body in re.findall(r"<TOOLCALL>(.*?)</TOOLCALL>", m["content"], re.S) for c in json.loads(body)]
    if source == "toolmind":
        return _openai_calls(row["conversations"], drop_null_args=True)  # Arrow's null keys are not arguments
    if source in ("nemotron_swe", "swe_gym_openhands"):
        return _openai_calls(row["messages"])
    raise KeyError(source)


def mixture_messages(row: dict) -> list[dict]:
    """A normalized row's messages as its training mixture holds them."""
    return to_mixture_row(row)["messages"]


def render(messages: list[dict], template: str = QWEN, with_mask: bool = False):
    rendered, spans = render_jinja_template(conversations=[messages], chat_template=template,
                                            return_assistant_tokens_mask=with_mask)
    return (rendered[0], spans[0]) if with_mask else rendered[0]


def parse_rendered(text: str) -> list[dict]:
    """What an inference-side Hermes parser reads from the assistant turns: strict JSON only."""
    calls = []
    for turn in ASSISTANT_TURN.findall(text):
        for body in STRICT_CALL.findall(turn):
            obj = json.loads(body)
            assert list(obj) == ["name", "arguments"]
            calls.append(obj)
    return calls


SOURCES = ["hermes_function_calling", "xlam_function_calling", "toucan_kimi_k2", "when2call_sft", "toolmind",
           "nemotron_swe", "swe_gym_openhands", "hermes_agent_traces"]
CASES = [(s, part, i) for s in SOURCES for part, exps in EXPECTED[s][1].items()
         for i, e in enumerate(exps) if e == OK]


def test_every_tool_source_is_covered():
    assert set(SOURCES) == {s for s in EXPECTED if s not in ("nebius_swe_agent", "swe_gym", "orca_agentinstruct")}
    assert len(CASES) >= 25


@pytest.mark.parametrize("source, part, index", CASES, ids=[f"{c[0]}:{c[1]}:{c[2] + 1}" for c in CASES])
def test_rendered_calls_parse_back_to_the_native_calls(source, part, index):
    row = rows_of(EXPECTED[source][0], part)[index]
    out = run(source, row, part.split("/")[0])
    messages = mixture_messages(out)
    text = render(messages)
    assert parse_rendered(text) == native_calls(source, row)
    # The system turn (which lists the tools) is rendered once, verbatim; no second "# Tools" block.
    assert "# Tools" not in text
    if out["tools"]:
        assert text.startswith("<|im_start|>system\n" + out["messages"][0]["content"] + "<|im_end|>\n")
        assert text.count("<tools>\n") == 1
    # Each tool result is wrapped exactly once, inside a user turn.
    n_results = sum(len(parse_tool_responses(m["content"])) for m in out["messages"] if m["role"] == "tool")
    assert text.count("<tool_response>\n") == n_results and "<tool_response>\n<tool_response>" not in text


@pytest.mark.parametrize("source, part, index", CASES, ids=[f"{c[0]}:{c[1]}:{c[2] + 1}" for c in CASES])
def test_calls_are_inside_the_trained_spans(source, part, index):
    """With TRL's training twin of the template, every call is in an assistant (loss) span and no
    tool result is."""
    row = rows_of(EXPECTED[source][0], part)[index]
    out = run(source, row, part.split("/")[0])
    text, spans = render(mixture_messages(out), QWEN_TRAINING, with_mask=True)
    assert text == render(mixture_messages(out))  # the twin renders the same text
    trained = [text[a:b] for a, b in spans]
    calls = [json.loads(body) for span in trained for body in STRICT_CALL.findall(span)]
    assert calls == native_calls(source, row)
    assert not any("<tool_response>" in span for span in trained)


def test_text_calls_render_like_structured_tool_calls():
    """Why text is safe: for calls at the end of a turn, the template's structured rendering is
    byte-identical to our Hermes text, so the model sees the same thing either way."""
    checked = 0
    for source, part, index in CASES:
        out = run(source, rows_of(EXPECTED[source][0], part)[index], part.split("/")[0])
        text_msgs = mixture_messages(out)
        structured = []
        for m in text_msgs:
            calls = parse_tool_calls(m["content"]) if m["role"] == "assistant" else []
            head = m["content"].split("<tool_call>", 1)[0].rstrip("\n")
            if calls and not m["content"].rstrip().endswith("</tool_call>"):
                break  # text after a call: structured rendering would reorder it
            structured.append({**m, "content": head,
                               "tool_calls": [{"type": "function", "function": c} for c in calls]} if calls else m)
        else:
            assert render(structured) == render(text_msgs), (source, part, index)
            checked += 1
    assert checked == len(CASES)


def test_normalized_tool_turns_would_double_wrap():
    """Why the mixture unwraps tool turns: normalized rows rendered as they are double-wrap results."""
    source, part, index = next(c for c in CASES if c[0] == "swe_gym_openhands")
    out = run(source, rows_of(EXPECTED[source][0], part)[index])
    assert "<tool_response>\n<tool_response>" in render(out["messages"])
