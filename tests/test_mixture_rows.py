"""Mixture rows in the shape axolotl's chat_template strategy hands to the Qwen2.5 template.

Expected values are written out by hand, not derived with the code under test.
"""

from surrogate_dagster.curation.mixtures import build_mixture, to_mixture_row

SYSTEM = "You are a function calling AI model. <tools>\n{\"name\": \"get_weather\"}\n</tools>"


def _tool_row() -> dict:
    return {
        "id": "r1", "source": "hermes_function_calling", "kind": "sft",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {"role": "assistant", "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                                             '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": '
                                             '{"city": "Oslo"}}\n</tool_call>'},
            {"role": "tool", "content": '<tool_response>\n{"temp": 21}\n</tool_response>\n'
                                        '<tool_response>\n{"temp": 4}\n</tool_response>'},
            {"role": "assistant", "content": "Paris 21, Oslo 4."},
        ],
    }


def test_sft_tool_turn_becomes_one_bare_tool_message_per_result():
    row = to_mixture_row(_tool_row())
    assert row["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                                         '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": '
                                         '{"city": "Oslo"}}\n</tool_call>'},
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "tool", "content": '{"temp": 4}'},
        {"role": "assistant", "content": "Paris 21, Oslo 4."},
    ]
    assert row["id"] == "r1" and row["source"] == "hermes_function_calling"


def test_dpo_prompt_tool_turns_unwrapped_answers_as_assistant_messages():
    src = _tool_row()
    dpo = {"id": "p1", "source": "when2call_pref", "kind": "dpo", "prompt": src["messages"][:4],
           "chosen": "Paris 21, Oslo 4.", "rejected": "I cannot check the weather."}
    row = to_mixture_row(dpo)
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert [m["content"] for m in row["messages"][3:]] == ['{"temp": 21}', '{"temp": 4}']
    assert row["chosen"] == {"role": "assistant", "content": "Paris 21, Oslo 4."}
    assert row["rejected"] == {"role": "assistant", "content": "I cannot check the weather."}


def test_no_mixture_message_keeps_a_tool_response_wrapper():
    build = build_mixture("tool_sft", "sft", {"hermes_function_calling": [_tool_row()]}, {})
    for row in build.rows:
        for m in row["messages"]:
            assert "<tool_response>" not in m["content"]
