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
    for row in build.iter_rows():
        for m in row["messages"]:
            assert "<tool_response>" not in m["content"]


def test_a_mixture_is_built_one_source_at_a_time_and_left_on_disk():
    """build_mixture iterates each source once, in order, and keeps no rows: a source's generator
    starts only after the previous one is exhausted, and the rows come back from the build's file."""
    import gc
    import json as _json

    from surrogate_dagster.curation.mixtures import build_mixture, to_jsonl
    from surrogate_dagster.metadata import column_types

    live = []

    def source(name: str, n: int):
        live.append(name)
        assert live.count(name) == 1 and len(live) == 1, live  # no other source is being read
        for i in range(n):
            yield {"id": f"{name}-{i}", "source": name, "kind": "sft",
                   "messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}
        live.remove(name)

    build = build_mixture("code_sft", "sft", {"a": source("a", 3), "b": source("b", 2)}, {"b": 1})
    rows = list(build.iter_rows())
    assert build.n_rows == 3 + 1 and [r["id"] for r in rows] == ["a-0", "a-1", "a-2", "b-0"]
    assert build.by_source == {"a": 3, "b": 1} and build.capped == {"b": 1}
    assert build.path.read_bytes() == to_jsonl(rows)
    assert build.columns.result() == column_types(rows)
    assert all(_json.loads(line) for line in build.path.read_text().splitlines())
    path = build.path
    del build
    gc.collect()
    assert not path.exists()  # the file goes with the build
