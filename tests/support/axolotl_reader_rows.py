"""One short normalized row per source of each training mixture, and the mixture rows made from them.

The rows have the shape each source's adapter (surrogate_dagster/sources/adapters) or synth step
emits: built with the same ``sft_row``/``dpo_row`` constructors, Hermes system prompts from
``hermes_system_prompt``, tool calls as Hermes ``<tool_call>`` text and tool results as
``<tool_response>``-wrapped ``tool`` turns. ``mixture_rows`` passes them through ``to_mixture_row``,
exactly as ``build_mixture`` does; tests/fixtures/reader/<mixture>.jsonl holds the result and
tests/env/test_axolotl_reader.py checks the two agree.

    .venv/bin/python tests/support/axolotl_reader_rows.py    # rewrites tests/fixtures/reader/*.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

from surrogate_dagster.curation.mixtures import default_system_prompt, to_jsonl, to_mixture_row
from surrogate_dagster.sources.adapters.base import AdapterContext, dpo_row, sft_row
from surrogate_dagster.sources.hermes import format_tool_response, hermes_system_prompt

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reader"
MIXTURES = ("code_sft", "tool_sft", "agent_sft", "code_dpo", "tool_dpo")


def _tool(name: str, props: dict[str, str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": "", "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


def _sft(source: str, row_id: str, messages: list[dict], tools: list | None = None) -> dict:
    return sft_row(AdapterContext(source=source), row_id, messages, tools=tools)


def _sys(tools: list[dict], extra: str = "") -> dict:
    return {"role": "system", "content": hermes_system_prompt(tools, extra=extra)}


def _u(text: str) -> dict:
    return {"role": "user", "content": text}


def _a(text: str) -> dict:
    return {"role": "assistant", "content": text}


def _t(result: str) -> dict:
    return {"role": "tool", "content": format_tool_response(result)}


def code_sft() -> list[dict]:
    return [
        _sft("rstar_coder", "rstar-1", [
            _u("Read n; print YES if 3 divides n."),
            _a("<think>\nCheck n % 3.\n</think>\n\n"
               "```python\nn = int(input())\nprint(\"YES\" if n % 3 == 0 else \"NO\")\n```")]),
        _sft("opencodereasoning_2", "ocr2-1", [
            _u("Can w kilos split into two even parts?"),
            _a("<think>\nOkay, w must be even and above 2.\n</think>\n\n"
               "```python\nw = int(input())\nprint(\"YES\" if w % 2 == 0 and w > 2 else \"NO\")\n```")]),
        _sft("opencodeinstruct", "oci-1", [
            _u("Implement `second_largest(nums)`."),
            _a("```python\ndef second_largest(nums):\n    d = sorted(set(nums))\n"
               "    return d[-2] if len(d) > 1 else None\n```")]),
        # Ling-Coder carries its own system turn and several rounds: each assistant turn is trained.
        _sft("ling_coder_sft", "ling-1", [
            {"role": "system", "content": "You are a careful Python programmer."},
            _u("Write `is_palindrome(s)`."),
            _a("```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```"),
            _u("Ignore case too."),
            _a("```python\ndef is_palindrome(s):\n    s = s.lower()\n    return s == s[::-1]\n```")]),
        _sft("opc_sft_stage1", "opc1-1", [
            _u("请用 Python 反转列表。"),
            _a("```python\ndef reverse(xs):\n    return xs[::-1]\n```")]),
        _sft("opc_sft_stage2", "opc2-1", [
            _u("Write a python function to find the maximum of a list."),
            _a("Here is the code to solve this problem: \n```python\ndef max_of(xs):\n    return max(xs)\n```")]),
        _sft("self_oss_instruct", "oss-1", [
            _u("Write `add(a, b)`."),
            _a("[Reasoning]\nAdd the two numbers.\n\n"
               "[Implementation]\n```python\ndef add(a, b):\n    return a + b\n```")]),
        _sft("codefeedback_filtered", "cf-1", [
            _u("Merge two sorted lists in Python."),
            _a("Use heapq:\n\n```python\nimport heapq\nmerged = list(heapq.merge([1, 3], [2, 4]))\n```")]),
    ]


def tool_sft() -> list[dict]:
    stock = [_tool("get_stock_price", {"symbol": "string"})]
    add = [_tool("add", {"a": "integer", "b": "integer"})]
    search = [_tool("search", {"query": "string"})]
    weather = [_tool("get_weather", {"city": "string"})]
    flights = [_tool("search_flights", {"origin": "string", "destination": "string"})]
    bash = [_tool("execute_bash", {"command": "string"}), _tool("finish", {})]
    editor = [_tool("str_replace_editor", {"command": "string", "path": "string"}), _tool("finish", {})]
    return [
        _sft("hermes_function_calling", "hfc-1", [
            _sys(stock), _u("Price of TSLA?"),
            _a('<tool_call>\n{"name": "get_stock_price", "arguments": {"symbol": "TSLA"}}\n</tool_call>'),
            _t('{"price": 251.3}'),
            _a("TSLA trades at 251.3.")], tools=stock),
        # xLAM: parallel calls, no results.
        _sft("xlam_function_calling", "xlam-1", [
            _sys(add), _u("Add 1 and 2, and 3 and 4."),
            _a('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
               '<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call>')], tools=add),
        # Toucan: parallel calls, then one tool turn per result.
        _sft("toucan_kimi_k2", "toucan-1", [
            _sys(search), _u("Find Anthropic and OpenAI."),
            _a('<tool_call>\n{"name": "search", "arguments": {"query": "Anthropic"}}\n</tool_call>\n'
               '<tool_call>\n{"name": "search", "arguments": {"query": "OpenAI"}}\n</tool_call>'),
            _t('{"url": "anthropic.com"}'), _t('{"url": "openai.com"}'),
            _a("anthropic.com and openai.com.")], tools=search),
        # When2Call: the right answer is no call at all.
        _sft("when2call_sft", "w2c-1", [
            _sys(weather), _u("Trending topics in NYC today?"),
            _a("I can't look that up with the available tools.")], tools=weather),
        _sft("toolmind", "tm-1", [
            _sys(flights), _u("A flight from SFO to JFK?"),
            _a('<think>\nSearch first.\n</think>\n'
               '<tool_call>\n{"name": "search_flights", "arguments": {"origin": "SFO", "destination": "JFK"}}\n'
               '</tool_call>'),
            _t('{"flights": [{"id": "UA123", "price": 289}]}'),
            _a("UA123 at $289.")], tools=flights),
        _sft("nemotron_swe", "nswe-1", [
            _sys(bash), _u("<uploaded_files>\n/testbed\n</uploaded_files>\nFix the failing test."),
            _a('Run the tests first.\n'
               '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "pytest -q"}}\n</tool_call>'),
            _t("1 passed in 0.01s"),
            _a('Done.\n<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>')], tools=bash),
        # OpenHands: multi-line results, a user nudge between assistant turns.
        _sft("swe_gym_openhands", "oh-1", [
            _sys(editor), _u("<uploaded_files>\n/workspace/repo\n</uploaded_files>\nFix the bug."),
            _a('<tool_call>\n{"name": "str_replace_editor", "arguments": '
               '{"command": "view", "path": "/workspace/repo/a.py"}}\n</tool_call>'),
            _t("     1\tx = 1\n     2\ty = 2"),
            _a("The file is fine."),
            _u("Please continue working on the task."),
            _a('<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>')], tools=editor),
    ]


def agent_sft() -> list[dict]:
    terminal = [_tool("terminal", {"command": "string"})]
    spawn = [_tool("spawn_subagent", {"role": "string", "prompt": "string"})]
    hermes_agent_system = (
        "You are a function calling AI model. You are provided with function signatures within <tools> </tools> "
        "XML tags. Here are the available tools:\n<tools>\n" + json.dumps(terminal) + "\n</tools>")
    return [
        _sft("hermes_agent_traces", "hat-1", [
            {"role": "system", "content": hermes_agent_system}, _u("Count the Python files in ~/p."),
            _a('<think>\nList them.\n</think>\n'
               '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls ~/p/*.py | wc -l"}}\n</tool_call>'),
            _t('{"output": "42\\n", "exit_code": 0}'),
            _a("There are 42 Python files.")], tools=terminal),
        # SWE-agent: observations come back as user turns, commands in fenced blocks.
        _sft("nebius_swe_agent", "neb-1", [
            {"role": "system", "content": "SETTING: You are an autonomous programmer."},
            _u("ISSUE:\nSyntaxError in image.py"),
            _a("Let's find the file.\n```\nfind_file \"image.py\"\n```"),
            _u("Found 1 matches for \"image.py\".\n(Open file: n/a)\nbash-$"),
            _a("Fixed the import.\n```\nsubmit\n```")]),
        _sft("swe_gym", "sg-1", [
            _u("Repository: python/mypy\n\n<issue>\nslots false positive\n</issue>"),
            _a("```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n```")]),
        _sft("orca_agentinstruct", "orca-1", [
            _u("RR 0.59, control risk 40%: expected risk?"),
            _a("0.59 x 40% = 23.6%.")]),
        # The synthesized orchestrator traces: the planner spawns subagents in parallel.
        _sft("synth_orchestrator", "synth-1", [
            _sys(spawn, extra="Decision rules:\n- If task has 3+ independent steps -> spawn subagents"),
            _u("Lint and test the repo."),
            _a('Two independent steps.\n'
               '<tool_call>\n{"name": "spawn_subagent", "arguments": {"role": "linter", "prompt": "Run ruff."}}\n'
               '</tool_call>\n'
               '<tool_call>\n{"name": "spawn_subagent", "arguments": {"role": "tester", "prompt": "Run pytest."}}\n'
               '</tool_call>'),
            _t('{"subagent_id": "s1", "status": "done", "result": "clean"}'),
            _t('{"subagent_id": "s2", "status": "done", "result": "3 passed"}'),
            _a("Lint is clean and 3 tests pass.")], tools=spawn),
    ]


def code_dpo() -> list[dict]:
    return [
        dpo_row(AdapterContext(source="code_preference_pairs"), "cpp-1",
                [_u("Write `is_prime(n)`.")],
                "```python\ndef is_prime(n):\n"
                "    return n > 1 and all(n % i for i in range(2, int(n ** 0.5) + 1))\n```",
                "```python\ndef is_prime(n):\n    return all(n % i for i in range(2, n))\n```"),
        # Capybara: multi-turn prompts (an earlier assistant turn is context, not a trained span).
        dpo_row(AdapterContext(source="capybara_dpo"), "capy-1",
                [_u("What is 2 + 2?"), _a("4."), _u("And in Python?")],
                "```python\nprint(2 + 2)\n```",
                "It is 4."),
        dpo_row(AdapterContext(source="exec_graded_pairs"), "egp-1",
                [_u("Write `double(x)`.")],
                "def double(x):\n    return 2 * x",
                "def double(x):\n    return x + x + 1"),
    ]


def tool_dpo() -> list[dict]:
    domain = [_tool("get_company_by_domain", {"domain": "string"})]
    call = '<tool_call>\n{"name": "get_company_by_domain", "arguments": {"domain": "apple.com"}}\n</tool_call>'
    ctx = AdapterContext(source="when2call_pref", config="train_pref")
    return [
        dpo_row(ctx, "w2cp-1", [_sys(domain), _u("Fetch company details.")],
                "Which company domain?", call, tools=domain),
        dpo_row(ctx, "w2cp-2", [_sys(domain), _u("Details for apple.com?")],
                call, "I cannot do that.", tools=domain),
    ]


NORMALIZED = {"code_sft": code_sft, "tool_sft": tool_sft, "agent_sft": agent_sft,
              "code_dpo": code_dpo, "tool_dpo": tool_dpo}


def normalized_rows(mixture: str) -> list[dict]:
    return NORMALIZED[mixture]()


def mixture_rows(mixture: str) -> list[dict]:
    """The mixture rows ``build_mixture`` writes for these normalized rows."""
    return [to_mixture_row(r, default_system_prompt(mixture)) for r in normalized_rows(mixture)]


def fixture_path(mixture: str) -> Path:
    return FIXTURES / f"{mixture}.jsonl"


def write_fixtures() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for mixture in MIXTURES:
        fixture_path(mixture).write_bytes(to_jsonl(mixture_rows(mixture)))


if __name__ == "__main__":
    write_fixtures()
