"""Tool-use adapters: native rows of the tool family -> ChatML with Hermes tool calls.

Every adapter here emits: a system turn from :func:`hermes_system_prompt` (tools normalized to
OpenAI style with JSON Schema parameters), assistant turns whose calls are strict-JSON
``<tool_call>`` blocks, and ``tool`` turns wrapped in ``<tool_response>``. The row's ``tools`` field
holds the same normalized list. Each adapter's docstring gives its source's schema.

Quarantine reasons used here (stable codes, counted by the normalized asset):
``bad_json`` (a JSON-in-string column does not parse), ``bad_tools`` (a tool schema cannot be
normalized), ``bad_tool_call`` (a call body is not an object with a name and object arguments),
``undeclared_tool`` (a call names a tool the row does not declare), ``bad_role``, ``too_deep``
(nesting beyond limits.MAX_DEPTH),
``empty_conversation``, ``no_tool_call`` (a tool-call source row without any call),
``when2call_bare_tool_call`` (the upstream cannot_answer bug, see :func:`when2call_sft`), plus the
generic ones of ``sft_row``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..hermes import (format_tool_call, format_tool_response, hermes_system_prompt, map_role,
                      normalize_tools, parse_tool_calls, parse_tool_responses, rewrite_tool_calls,
                      strip_template_tokens, tag_blocks, toolcall_tag_to_hermes, with_reasoning)
from .base import AdapterContext, Quarantine, content_id, sft_row
from .limits import MAX_DEPTH, TooDeep, loads_json

# ------------------------------------------------------------------------------ shared helpers


def loads_column(value: Any, column: str) -> Any:
    """``json.loads`` a JSON-in-string column (already-parsed values pass through)."""
    if not isinstance(value, str):
        return value
    try:
        return loads_json(value, column)
    except json.JSONDecodeError as exc:
        raise Quarantine("bad_json", f"{column}: {exc}") from exc


def tools_of(raw: Any) -> list[dict]:
    """Normalized tools, or ``bad_tools``."""
    try:
        return normalize_tools(raw)
    except TooDeep:
        raise
    except (ValueError, TypeError) as exc:
        raise Quarantine("bad_tools", str(exc)[:200]) from exc


def text_of(content: Any, where: str) -> str:
    """Message content as text: ``None`` -> "", OpenAI text parts joined; anything else quarantines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text") or "") for p in content)
    raise Quarantine("non_text_content", f"{where}: {type(content).__name__}")


def call_block(name: Any, arguments: Any, where: str) -> str:
    """One Hermes block from a structured call; JSON-string arguments are parsed (``bad_tool_call``)."""
    try:
        return format_tool_call(name, arguments)
    except TooDeep:
        raise
    except ValueError as exc:
        raise Quarantine("bad_tool_call", f"{where}: {exc}") from exc


def join_parts(*parts: str) -> str:
    """Join non-empty message parts (text, then calls) with one newline, as the template does."""
    return "\n".join(p for p in (x.strip("\n") for x in parts) if p.strip())


def calls_in(text: str, declared: set[str], where: str) -> list[dict]:
    """The Hermes calls in one answer, each naming a declared tool.

    ``bad_tool_call`` for a malformed body or unbalanced tag, ``undeclared_tool`` for a call of a
    tool outside ``declared``. Used for SFT assistant turns and DPO answers alike.
    """
    try:
        calls = parse_tool_calls(text)
    except TooDeep:
        raise
    except ValueError as exc:
        raise Quarantine("bad_tool_call", f"{where}: {exc}") from exc
    for c in calls:
        if c["name"] not in declared:
            raise Quarantine("undeclared_tool", f"{where}: {c['name']!r}")
    return calls


def finish(ctx: AdapterContext, row_id: Any, messages: list[dict], tools: list[dict],
           meta: dict | None = None, *, require_call: bool = False) -> dict:
    """Validate every assistant tool call (parse + declared) and build the SFT row.

    ``row_id=None`` (sources without a native id) hashes the *normalized* tools and messages, so
    the id does not depend on how Arrow happened to null-unify the native row.
    """
    if not messages:
        raise Quarantine("empty_conversation")
    declared = {t["function"]["name"] for t in tools}
    n_calls = 0
    for i, m in enumerate(messages):
        if m.get("role") != "assistant" or not isinstance(m.get("content"), str):
            continue
        n_calls += len(calls_in(m["content"], declared, f"turn {i}"))
    if require_call and n_calls == 0:
        raise Quarantine("no_tool_call")
    if row_id is None:
        row_id = content_id(tools, messages)
    return sft_row(ctx, str(row_id), messages, tools=tools, meta={**(meta or {}), "n_tool_calls": n_calls})


def system_turn(tools: list[dict], extra: str = "") -> dict:
    """The Hermes system turn for ``tools`` (plus a source's own instructions)."""
    return {"role": "system", "content": hermes_system_prompt(tools, extra=extra)}


def role_of(name: Any, where: str) -> str:
    """ChatML role or ``bad_role``."""
    try:
        return map_role(name)
    except ValueError as exc:
        raise Quarantine("bad_role", f"{where}: {exc}") from exc


def tool_turn(content: str) -> dict:
    """A ``tool`` turn; content already wrapped in ``<tool_response>`` is kept as is."""
    if parse_tool_responses(content):
        return {"role": "tool", "content": content.strip()}
    return {"role": "tool", "content": format_tool_response(content)}


def sharegpt_messages(turns: Any, tools: list[dict], *, keep_system: str = "rebuild") -> list[dict]:
    """ShareGPT ``[{from, value}]`` -> ChatML with strict-JSON ``<tool_call>`` blocks.

    ``keep_system``: ``"rebuild"`` replaces a system turn that lists tools (``<tools>``) with the
    Hermes prompt built from ``tools`` (hermes-fc embeds them as Python literals); ``"verbatim"``
    keeps it when its ``<tools>`` block is JSON naming exactly the row's tools (lambda's agent
    prompt, whose extra instructions a rebuild would lose), else rebuilds.
    """
    if not isinstance(turns, list) or not turns:
        raise Quarantine("empty_conversation")
    out: list[dict] = []
    for i, t in enumerate(turns):
        if not isinstance(t, dict):
            raise Quarantine("bad_turn", f"turn {i}: {type(t).__name__}")
        role = role_of(t.get("from", t.get("role")), f"turn {i}")
        value = text_of(t.get("value", t.get("content")), f"turn {i}")
        if role == "system":
            if i != 0:
                raise Quarantine("late_system_turn", f"turn {i}")
            if tools and "<tools>" in value:
                if keep_system == "verbatim" and _tools_block_matches(value, tools):
                    out.append({"role": "system", "content": value})
                else:
                    out.append(system_turn(tools))
            elif tools:
                out.append(system_turn(tools, extra=value))
            elif value.strip():
                out.append({"role": "system", "content": value})
        elif role == "assistant":
            try:
                out.append({"role": "assistant", "content": rewrite_tool_calls(value)})
            except ValueError as exc:
                raise Quarantine("bad_tool_call", f"turn {i}: {exc}") from exc
        elif role == "tool":
            out.append(tool_turn(value))
        else:
            out.append({"role": role, "content": value})
    if tools and (not out or out[0]["role"] != "system"):
        out.insert(0, system_turn(tools))
    return out


def _tools_block_matches(system: str, tools: list[dict]) -> bool:
    """True when the system prompt's ``<tools>`` listing is JSON (a list, or one tool per line) and
    names exactly the row's tools. Prompts often say "within <tools> </tools> XML tags" before the
    real block, so empty spans are skipped."""
    blocks, _ = tag_blocks(system, "<tools>", "</tools>")
    bodies = [b.strip() for _, _, b in blocks if b.strip()]
    if len(bodies) != 1:
        return False
    try:
        listed = loads_json(bodies[0], "<tools> block")
    except TooDeep:
        return False
    except json.JSONDecodeError:
        try:
            listed = [loads_json(line, "<tools> block") for line in bodies[0].splitlines() if line.strip()]
        except (json.JSONDecodeError, TooDeep):
            return False
    listed = listed if isinstance(listed, list) else [listed]
    try:
        names = {t["function"]["name"] for t in normalize_tools(listed)}
    except (ValueError, TypeError):
        return False
    return names == {t["function"]["name"] for t in tools}


def openai_messages(msgs: Any, tools: list[dict], *, strip_prefix: str = "") -> list[dict]:
    """OpenAI chat messages (``tool_calls`` with string or object ``arguments``; legacy
    ``function_call``; ``reasoning_content``) -> ChatML with Hermes text.

    A source system prompt is kept after the Hermes tool listing. ``strip_prefix`` is removed from
    the start of tool results (OpenHands' ``OBSERVATION:\\n``, redundant inside ``<tool_response>``).
    """
    if not isinstance(msgs, list) or not msgs:
        raise Quarantine("empty_conversation")
    out: list[dict] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise Quarantine("bad_turn", f"turn {i}: {type(m).__name__}")
        role = role_of(m.get("role"), f"turn {i}")
        content = text_of(m.get("content"), f"turn {i}")
        if role == "system":
            if out:
                raise Quarantine("late_system_turn", f"turn {i}")
            out.append(system_turn(tools, extra=content) if tools else {"role": "system", "content": content})
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            if not isinstance(calls, list):
                raise Quarantine("bad_tool_call", f"turn {i}: tool_calls is a {type(calls).__name__}")
            calls = list(calls)
            if m.get("function_call"):
                calls.append({"function": m["function_call"]})
            blocks = []
            for j, c in enumerate(calls):
                fn = c.get("function", c) if isinstance(c, dict) else None
                if not isinstance(fn, dict):
                    raise Quarantine("bad_tool_call", f"turn {i} call {j}: not an object")
                blocks.append(call_block(fn.get("name"), fn.get("arguments"), f"turn {i} call {j}"))
            body = join_parts(with_reasoning(m.get("reasoning_content"), content), *blocks)
            out.append({"role": "assistant", "content": body})
        elif role == "tool":
            if strip_prefix and content.startswith(strip_prefix):
                content = content[len(strip_prefix):]
            out.append({"role": "tool", "content": format_tool_response(content)})
        else:
            out.append({"role": role, "content": content})
    if tools and out[0]["role"] != "system":
        out.insert(0, system_turn(tools))
    return out


def _drop_null_args(value: Any, depth: int = 0) -> Any:
    """Drop ``None``-valued argument keys (Arrow null-unifies argument structs across rows)."""
    if depth > MAX_DEPTH and isinstance(value, (dict, list)):
        raise TooDeep("call arguments")
    if isinstance(value, dict):
        return {k: _drop_null_args(v, depth + 1) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_null_args(v, depth + 1) for v in value]
    return value


# ------------------------------------------------------------------------------------ adapters


def hermes_function_calling(row: dict, ctx: AdapterContext) -> dict:
    """NousResearch/hermes-function-calling-v1 (func_calling_singleturn, func_calling, glaive).

    ShareGPT turns; ``tools`` is a JSON string; the embedded system prompt lists the tools as a
    Python literal, so it is rebuilt from ``tools``; single-quoted dict calls are re-emitted as JSON.
    """
    tools = tools_of(loads_column(row.get("tools"), "tools"))
    messages = sharegpt_messages(row.get("conversations"), tools, keep_system="rebuild")
    meta = {k: row.get(k) for k in ("category", "subcategory", "task")}
    return finish(ctx, row.get("id") or None, messages, tools, meta)


def xlam_function_calling(row: dict, ctx: AdapterContext) -> dict:
    """Salesforce/xlam-function-calling-60k: query / tools / answers (JSON strings).

    One assistant turn with one ``<tool_call>`` per answer (parallel calls); the sample ends on the
    call. xLAM per-parameter schemas (``"int"``, ``"List[int]"``, ``"str, optional"``) are converted.
    """
    tools = tools_of(loads_column(row.get("tools"), "tools"))
    answers = loads_column(row.get("answers"), "answers")
    query = row.get("query")
    if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
        raise Quarantine("bad_json", "answers is not a list of objects")
    blocks = [call_block(a.get("name"), a.get("arguments"), f"answer {j}") for j, a in enumerate(answers)]
    messages = [system_turn(tools), {"role": "user", "content": text_of(query, "query")},
                {"role": "assistant", "content": "\n".join(blocks)}]
    return finish(ctx, row.get("id"), messages, tools,
                  {"native_id": row.get("id")}, require_call=True)


def toucan_kimi_k2(row: dict, ctx: AdapterContext) -> dict:
    """Agent-Ark/Toucan-1.5M, Kimi-K2 config: every column is a JSON string.

    The Kimi system message (``<|im_system|>tool_declare...``) is dropped and rebuilt from
    ``available_tools``; runs of assistant ``function_call`` messages (parallel calls) merge into one
    turn; ``function`` results become ``tool`` turns; ``reasoning_content`` becomes a ``<think>``
    block (``ctx.options["reasoning"] = "drop"`` removes it).
    """
    tools = tools_of(loads_column(row.get("available_tools"), "available_tools"))
    msgs = loads_column(row.get("messages"), "messages")
    if not isinstance(msgs, list) or not msgs:
        raise Quarantine("empty_conversation")
    keep_reasoning = ctx.options.get("reasoning", "keep") != "drop"
    out: list[dict] = [system_turn(tools)]
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise Quarantine("bad_turn", f"turn {i}")
        role = role_of(m.get("role"), f"turn {i}")
        content = text_of(m.get("content"), f"turn {i}")
        if role == "system":
            # Only template tokens and the tool declaration, both rebuilt above; anything else
            # would be Kimi's own identity text, which must not be trained into this model.
            leftover = strip_template_tokens(content)
            if leftover and out[1:]:
                raise Quarantine("late_system_turn", f"turn {i}")
            continue
        if role == "assistant":
            part = with_reasoning(m.get("reasoning_content") if keep_reasoning else None, content)
            fc = m.get("function_call")
            if fc:
                if not isinstance(fc, dict):
                    raise Quarantine("bad_tool_call", f"turn {i}: function_call is not an object")
                part = join_parts(part, call_block(fc.get("name"), fc.get("arguments"), f"turn {i}"))
            if out[-1]["role"] == "assistant" and (fc or not _has_calls(out[-1]["content"], f"turn {i}")):
                out[-1]["content"] = join_parts(out[-1]["content"], part)  # merge the parallel run
            else:
                out.append({"role": "assistant", "content": part})
        elif role == "tool":
            out.append({"role": "tool", "content": format_tool_response(content)})
        else:
            out.append({"role": role, "content": content})
    target = row.get("target_tools")
    quality = loads_column(row.get("response_quality_assessment") or "null", "response_quality_assessment")
    meta = {"uuid": row.get("uuid"), "subset_name": row.get("subset_name"),
            "target_tools": [t.strip() for t in target.split(",") if t.strip()] if isinstance(target, str) else [],
            "response_overall_score": quality.get("overall_score") if isinstance(quality, dict) else None}
    return finish(ctx, row.get("uuid") or None, out, tools, meta)


def _has_calls(text: str, where: str) -> bool:
    """Whether ``text`` holds a Hermes call (``bad_tool_call`` when it holds a malformed one)."""
    try:
        return bool(parse_tool_calls(text))
    except TooDeep:
        raise
    except ValueError as exc:
        raise Quarantine("bad_tool_call", f"{where}: {exc}") from exc


def when2call_sft(row: dict, ctx: AdapterContext) -> dict:
    """nvidia/When2Call, config train_sft: ``<TOOLCALL>[...]</TOOLCALL>`` -> Hermes blocks.

    Upstream's SFT converter writes ``answers["tool_call"]`` as the assistant text of
    ``cannot_answer`` rows (convert_raw_train_data_to_sft.py @ ecc8d42): a bare call object with no
    ``<TOOLCALL>`` tag, for a question the tools cannot answer. The refusal text is not in the row,
    so such rows are **quarantined** (``when2call_bare_tool_call``), never trained as calls.
    """
    tools = tools_of(row.get("tools"))
    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Quarantine("empty_conversation")
    out: list[dict] = [system_turn(tools)]
    for i, m in enumerate(msgs):
        role = role_of(m.get("role") if isinstance(m, dict) else None, f"turn {i}")
        raw = m.get("content")
        if role == "assistant" and _is_bare_call(raw):
            raise Quarantine("when2call_bare_tool_call", f"turn {i}")
        content = text_of(raw, f"turn {i}")
        if role == "assistant":
            try:
                content = toolcall_tag_to_hermes(content)
            except TooDeep:
                raise
            except ValueError as exc:
                raise Quarantine("bad_tool_call", f"turn {i}: {exc}") from exc
        elif role == "tool":
            out.append(tool_turn(content))  # results wrapped like every other tool source
            continue
        out.append({"role": role, "content": content})
    calls = any(_has_calls(m["content"], f"turn {i}") for i, m in enumerate(out) if m["role"] == "assistant")
    meta = {"answer_kind": "tool_call" if calls else "text"}
    return finish(ctx, None, out, tools, meta)


def _is_bare_call(content: Any) -> bool:
    """A call object (dict, or JSON text of one / a list of them) outside any ``<TOOLCALL>`` tag."""
    if isinstance(content, dict):
        return "name" in content
    if not isinstance(content, str) or "<TOOLCALL>" in content:
        return False
    text = content.strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        obj = loads_json(text, "assistant content")
    except (json.JSONDecodeError, TooDeep):
        return False
    objs = obj if isinstance(obj, list) else [obj]
    return bool(objs) and all(isinstance(o, dict) and "name" in o for o in objs)


def toolmind(row: dict, ctx: AdapterContext) -> dict:
    """Nanbeige/ToolMind: OpenAI-like ``conversations`` whose ``tool_calls`` arguments are objects.

    Arguments come back from Arrow with ``None`` for every key another row's call used, so
    ``None``-valued arguments are dropped (a null argument is indistinguishable from an absent one);
    a tool schema may say ``arguments`` instead of ``parameters``.
    """
    tools = tools_of(row.get("tools"))
    convs = row.get("conversations")
    if isinstance(convs, list):
        convs = [_toolmind_turn(m) for m in convs]
    return finish(ctx, row.get("id"), openai_messages(convs, tools), tools)


def _toolmind_turn(m: Any) -> Any:
    """Drop Arrow's null argument keys from one message's object-valued call arguments; anything
    malformed is left for :func:`openai_messages` to quarantine."""
    if not isinstance(m, dict) or not isinstance(m.get("tool_calls"), list):
        return m
    calls = []
    for c in m["tool_calls"]:
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("arguments"), dict):
            c = {**c, "function": {**fn, "arguments": _drop_null_args(fn["arguments"])}}
        calls.append(c)
    return {**m, "tool_calls": calls}


def nemotron_swe(row: dict, ctx: AdapterContext) -> dict:
    """nvidia/Nemotron-SWE-v1, split r2e_gym: OpenAI messages + tools; ``arguments`` may be a JSON
    string or an object (both handled)."""
    tools = tools_of(loads_column(row.get("tools"), "tools"))
    msgs = loads_column(row.get("messages"), "messages")
    if isinstance(msgs, list):
        msgs = [_toolmind_turn(m) for m in msgs]
    meta = {"repo": row.get("repo"), "uuid": row.get("uuid")}
    return finish(ctx, row.get("uuid"), openai_messages(msgs, tools), tools,
                  {k: v for k, v in meta.items() if v is not None})


def swe_gym_openhands(row: dict, ctx: AdapterContext) -> dict:
    """SWE-Gym/OpenHands-Sampled-Trajectories, split train.raw (mirror keeps ``resolved``).

    Null-unified ``tools``; ``tool_calls`` with JSON-string arguments next to a null or empty
    ``content``; tool results start with ``OBSERVATION:\\n`` (dropped inside ``<tool_response>``).
    """
    tools = tools_of(row.get("tools"))
    messages = openai_messages(row.get("messages"), tools, strip_prefix="OBSERVATION:\n")
    result = row.get("test_result")
    report = result.get("report") if isinstance(result, dict) else None
    report = report if isinstance(report, dict) else {}
    meta = {"instance_id": row.get("instance_id"), "run_id": row.get("run_id"),
            "resolved": row.get("resolved"), "report_resolved": report.get("resolved")}
    return finish(ctx, f"{row.get('instance_id')}/{row.get('run_id')}", messages, tools, meta)


ADAPTERS = {
    "hermes_function_calling": hermes_function_calling,
    "xlam_function_calling": xlam_function_calling,
    "toucan_kimi_k2": toucan_kimi_k2,
    "when2call_sft": when2call_sft,
    "toolmind": toolmind,
    "nemotron_swe": nemotron_swe,
    "swe_gym_openhands": swe_gym_openhands,
}


def iter_calls(messages: Iterable[dict]) -> list[dict]:
    """All tool calls of a normalized conversation, in order (used by tests and curation)."""
    return [c for m in messages if m["role"] == "assistant" for c in parse_tool_calls(m["content"])]
