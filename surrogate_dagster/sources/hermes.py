"""Hermes tool-calling format: tool schemas, system prompt, tool calls and responses.

Every tool source is normalized to one wire format:

- system prompt: the canonical Hermes wording with the tools as JSON, one per line, inside
  ``<tools></tools>`` (:func:`hermes_system_prompt`);
- assistant call: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``, several blocks
  joined by ``\\n`` for parallel calls (:func:`format_tool_call`);
- tool result: role ``tool`` with ``<tool_response>\\n...\\n</tool_response>`` (:func:`format_tool_response`).

Chat-template decision (checked by tests/unit/training/test_tool_template_roundtrip.py against TRL's copy of the
real Qwen2.5 template): normalized rows keep tool calls as **text** in assistant content, and the
trainer renders them with :func:`to_template_messages`, which passes assistant content through
unchanged (no structured ``tool_calls``) and does not pass ``tools=`` (the system turn already lists
them). Why text and not structured ``tool_calls``:

1. The Qwen2.5 template renders a structured call as ``\\n<tool_call>\\n{"name": "<n>", "arguments":
   <tojson>}\\n</tool_call>`` after the content; our text is byte-identical to that for calls at the
   end of a turn, so nothing is gained, while text written *after* a call would be reordered.
2. Structured ``arguments`` dicts stored in Arrow get null-unified across rows, and
   the template would then render ``"key": null`` arguments the model never saw in the source.
3. Passing ``tools=`` would make the template prepend its own "# Tools" block to our system turn,
   listing every tool twice.

The one thing the template does to text: a ``tool`` message is wrapped in ``<tool_response>`` again
and grouped with its neighbours into one ``user`` turn. :func:`to_template_messages` therefore
unwraps our ``<tool_response>`` blocks (one template ``tool`` message per block), so the model sees
exactly one wrapper per result.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from typing import Any

from .adapters.limits import MAX_DEPTH, TooDeep, check_depth, loads_json

__all__ = [
    "HERMES_SYSTEM_TEMPLATE", "map_role", "normalize_json_schema", "normalize_tool", "normalize_tools",
    "hermes_system_prompt", "format_tool_call", "format_tool_calls", "parse_tool_calls",
    "rewrite_tool_calls", "format_tool_response", "parse_tool_responses", "toolcall_tag_to_hermes",
    "strip_template_tokens", "with_reasoning", "to_template_messages", "tag_blocks",
]

# --------------------------------------------------------------------------------------------- roles

_ROLE_MAP = {
    "system": "system",
    "user": "user", "human": "user",
    "assistant": "assistant", "gpt": "assistant", "ai": "assistant", "bot": "assistant",
    "model": "assistant",
    "tool": "tool", "function": "tool", "observation": "tool", "ipython": "tool",
}


def map_role(name: Any) -> str:
    """Map a source role name (``human``, ``gpt``, ``ai``, ``function``, ``HUMAN``...) to ChatML.

    Raises ValueError for anything unknown, so an adapter can quarantine the row as ``bad_role``.
    """
    if not isinstance(name, str) or name.strip().lower() not in _ROLE_MAP:
        raise ValueError(f"unknown role {name!r}")
    return _ROLE_MAP[name.strip().lower()]


# ------------------------------------------------------------------------------------ tool schemas

# Python / xLAM / BFCL type names -> JSON Schema. "any" maps to None: no "type" key (accepts anything).
_TYPE_MAP: dict[str, str | None] = {
    "object": "object", "dict": "object", "mapping": "object", "map": "object", "json": "object",
    "string": "string", "str": "string", "text": "string", "date": "string", "datetime": "string",
    "integer": "integer", "int": "integer", "long": "integer",
    "number": "number", "float": "number", "double": "number", "decimal": "number",
    "boolean": "boolean", "bool": "boolean",
    "array": "array", "list": "array", "tuple": "array", "set": "array", "sequence": "array",
    "null": "null", "none": "null", "nonetype": "null",
    "any": None, "typing.any": None,
}

# Keys of a JSON Schema node whose values are themselves schemas (or maps/lists of schemas).
_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "definitions", "$defs")
_SCHEMA_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _drop_none(value: Any, depth: int = 0) -> Any:
    """Recursively drop dict keys whose value is None (Arrow struct unification adds them).

    Raises TooDeep past ``MAX_DEPTH`` levels (as every recursive walker here does).
    """
    if depth > MAX_DEPTH and isinstance(value, (dict, list)):
        raise TooDeep("tool schema")
    if isinstance(value, dict):
        return {k: _drop_none(v, depth + 1) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v, depth + 1) for v in value]
    return value


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` outside brackets (``Dict[str, int], optional`` -> 2 parts)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def _parse_type_string(text: str) -> tuple[dict, bool]:
    """Turn a non-JSON-Schema type string into (schema fragment, optional?).

    Handles ``int``, ``List[int]``, ``Dict[str, Any]``, ``Optional[str]``, ``Union[int, str]``,
    ``int|str``, ``float, optional``, ``str, default='x'``, ``Literal['a', 'b']``.
    """
    parts = _split_top(text.strip(), ",")
    base, optional = parts[0], False
    for extra in parts[1:]:
        low = extra.lower()
        if low.startswith("default"):  # "str, default='en, us'": the rest is the default's text
            optional = True
            break
        if low == "optional":
            optional = True
        elif low:
            raise ValueError(f"unsupported parameter type {text!r}")
    frag, opt2 = _parse_type_expr(base)
    return frag, optional or opt2


def _parse_type_expr(expr: str, depth: int = 0) -> tuple[dict, bool]:
    """Parse one type expression (no trailing ``, optional``); nesting is bounded by MAX_DEPTH."""
    if depth > MAX_DEPTH:
        raise TooDeep("type string")
    expr = expr.strip()
    if "|" in expr and "[" not in expr:
        return _union([_parse_type_expr(p, depth + 1)[0] for p in expr.split("|")])
    m = re.fullmatch(r"([A-Za-z_.]+)\s*\[(.*)\]", expr, flags=re.S)
    if m:
        head, inner = m.group(1).lower().split(".")[-1], m.group(2)
        args = _split_top(inner, ",")
        if head == "optional":
            return _parse_type_expr(inner, depth + 1)[0], True
        if head == "union":
            frags = [_parse_type_expr(a, depth + 1)[0] for a in args if a.lower() not in ("none", "nonetype")]
            return _union(frags)[0], len(frags) < len(args)
        if head == "literal":
            try:
                values = [ast.literal_eval(a) for a in args]
            except (ValueError, SyntaxError) as exc:
                raise ValueError(f"unsupported Literal type {expr!r}") from exc
            return {"enum": values}, False
        mapped = _TYPE_MAP.get(head, "?")
        if mapped == "array":
            items = _parse_type_expr(args[0], depth + 1)[0] if args and args[0] else {}
            return ({"type": "array", "items": items} if items else {"type": "array"}), False
        if mapped == "object":
            if len(args) == 2 and args[1]:
                values = _parse_type_expr(args[1], depth + 1)[0]
                if values:
                    return {"type": "object", "additionalProperties": values}, False
            return {"type": "object"}, False
        raise ValueError(f"unsupported parameter type {expr!r}")
    mapped = _TYPE_MAP.get(expr.lower(), "?")
    if mapped == "?":
        raise ValueError(f"unsupported parameter type {expr!r}")
    return ({"type": mapped} if mapped else {}), False


def _union(frags: list[dict]) -> tuple[dict, bool]:
    """Combine type fragments into one schema (a ``type`` list when all are plain types)."""
    frags = [f for f in frags if f]
    if not frags:
        return {}, False
    if len(frags) == 1:
        return frags[0], False
    if all(set(f) == {"type"} and isinstance(f["type"], str) for f in frags):
        return {"type": list(dict.fromkeys(f["type"] for f in frags))}, False
    return {"anyOf": frags}, False


def _normalize_node(node: Any, depth: int = 0) -> tuple[Any, bool]:
    """Normalize one schema node; returns (node, optional-flag parsed from its type string).

    Raises TooDeep for schemas nested more than ``MAX_DEPTH`` nodes deep.
    """
    if not isinstance(node, dict):
        return node, False
    if depth > MAX_DEPTH:
        raise TooDeep("tool schema")
    out: dict[str, Any] = {}
    optional = False
    for key, value in node.items():
        if key == "type":
            if isinstance(value, str):
                frag, optional = _parse_type_string(value)
                out.update({k: v for k, v in frag.items() if k not in out})
            elif isinstance(value, list):
                types = []
                for t in value:
                    frag, _ = _parse_type_string(str(t))
                    if "type" not in frag:  # "any" inside a union makes the whole thing untyped
                        types = []
                        break
                    types.extend(frag["type"] if isinstance(frag["type"], list) else [frag["type"]])
                if types:
                    out["type"] = list(dict.fromkeys(types)) if len(set(types)) > 1 else types[0]
            else:
                raise ValueError(f"schema 'type' must be a string or list, got {value!r}")
        elif key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            out[key] = {}
            for pname, pschema in value.items():
                out[key][pname], _ = _normalize_node(pschema, depth + 1)
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [_normalize_node(v, depth + 1)[0] for v in value]
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _normalize_node(value, depth + 1)[0]
        elif key == "required" and isinstance(value, bool):
            out["__required_flag__"] = value  # xLAM-style per-parameter flag, lifted by the parent
        else:
            out[key] = value
    # Required-ness of each property: explicit per-param flags and "x, optional" types win over
    # what the parent listed, because both describe the same parameter more specifically.
    if isinstance(out.get("properties"), dict):
        required = [r for r in out.get("required", []) if isinstance(r, str)] \
            if isinstance(out.get("required"), list) else []
        for pname in list(out["properties"]):
            pschema = out["properties"][pname]
            if not isinstance(pschema, dict):
                raise ValueError(f"property {pname!r} is not a schema object")
            flag = pschema.pop("__required_flag__", None)
            opt = pschema.pop("__optional__", False)
            if flag is True and pname not in required:
                required.append(pname)
            if (flag is False or opt) and pname in required:
                required.remove(pname)
        if required or "required" in out:
            out["required"] = required
    if optional:
        out["__optional__"] = True
    return out, optional


def normalize_json_schema(schema: Any) -> dict:
    """Normalize a tool-parameter schema to JSON Schema.

    Drops ``None`` values recursively (Arrow null-unification), maps Python/xLAM type names
    (``dict``, ``str``, ``int``, ``float``, ``bool``, ``list``, ``List[int]``, ``float, optional``,
    ``any``...) to JSON Schema types, and keeps ``enum``/``default``/``description``. A type string
    marked optional removes the property from its parent's ``required``; a per-parameter
    ``"required": true`` adds it. Raises ValueError for a type it cannot map, and TooDeep (a
    ValueError too) for nesting beyond ``MAX_DEPTH``.
    """
    if isinstance(schema, str):
        schema = loads_json(schema, "tool schema")
    if not isinstance(schema, dict):
        raise ValueError(f"schema must be an object, got {type(schema).__name__}")
    out, _ = _normalize_node(_drop_none(schema))
    out.pop("__optional__", None)
    out.pop("__required_flag__", None)
    return out


def _is_json_schema_params(params: dict) -> bool:
    """True for ``{"type": "object"|"dict", "properties": ...}``, False for xLAM per-param dicts.

    xLAM has parameters literally named ``type`` or ``properties`` (whose values are dicts), so the
    test looks at value types, not just key names.
    """
    if isinstance(params.get("type"), (str, list)):
        return True
    props = params.get("properties")
    return "type" not in params and isinstance(props, dict) and not isinstance(props.get("type"), str)


def _xlam_params(params: dict) -> dict:
    """Convert xLAM ``{"p": {"type": "int", "description": ..., "default"?, "required"?}}``.

    A parameter is required when flagged ``"required": true``, or when it has no flag, no default
    and no ``optional`` marker (JSON Schema semantics: a parameter with a default can be omitted).
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, spec in params.items():
        if not isinstance(spec, dict):
            raise ValueError(f"parameter {pname!r} spec is not an object: {spec!r}")
        spec = dict(spec)
        flag = spec.pop("required", None)
        if isinstance(flag, str):  # "true"/"false" strings seen in scraped API specs
            flag = flag.strip().lower() == "true"
        node, optional = _normalize_node(spec, 1)
        node.pop("__optional__", None)
        node.pop("__required_flag__", None)
        properties[pname] = node
        if flag is True or (flag is None and not optional and "default" not in spec):
            required.append(pname)
    return {"type": "object", "properties": properties, "required": required}


def normalize_tool(tool: Any) -> dict:
    """Normalize one tool definition to ``{"type": "function", "function": {name, description,
    parameters}}`` with JSON Schema ``parameters`` (``{"type": "object", "properties", "required"}``).

    Accepts the OpenAI wrapper, bare ``{name, description, parameters}``, xLAM per-param dicts,
    When2Call's ``required`` next to ``parameters``, ToolMind's ``arguments`` and MCP's
    ``input_schema`` in place of ``parameters``, and JSON strings of any of these.
    """
    if isinstance(tool, str):
        tool = loads_json(tool, "tool")
    if not isinstance(tool, dict):
        raise ValueError(f"tool must be an object, got {type(tool).__name__}")
    tool = _drop_none(tool)
    inner = tool.get("function", tool)
    if isinstance(inner, str):
        inner = loads_json(inner, "tool function")
    if not isinstance(inner, dict):
        raise ValueError("tool 'function' must be an object")
    name = inner.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tool without a name: {json.dumps(inner)[:120]}")
    description = inner.get("description", "")
    if not isinstance(description, str):
        description = json.dumps(description, ensure_ascii=False)
    params: Any = {}
    for key in ("parameters", "arguments", "input_schema", "inputSchema"):
        if key in inner:
            params = inner[key]
            break
    if isinstance(params, str):
        params = loads_json(params, "tool parameters") if params.strip() else {}
    if not isinstance(params, dict):
        raise ValueError(f"tool {name!r}: parameters must be an object")
    if not params:
        schema: dict = {"type": "object", "properties": {}, "required": []}
    elif _is_json_schema_params(params):
        params = dict(params)
        if "required" not in params and isinstance(inner.get("required"), list):
            params["required"] = inner["required"]  # When2Call puts it next to "parameters"
        schema = normalize_json_schema(params)
        schema.setdefault("properties", {})
        schema.setdefault("required", [])
        if schema.get("type") != "object":
            raise ValueError(f"tool {name!r}: parameters type is {schema.get('type')!r}, not object")
    else:
        schema = _xlam_params(params)
        if isinstance(inner.get("required"), list):
            schema["required"] = [r for r in inner["required"] if r in schema["properties"]]
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


def normalize_tools(tools: Any) -> list[dict]:
    """Normalize a tool list (a list, a JSON string of a list, a list of JSON strings, one tool,
    or empty) to OpenAI-style tools with JSON Schema parameters. Raises ValueError on bad input."""
    if tools is None:
        return []
    if isinstance(tools, str):
        if not tools.strip():
            return []
        tools = loads_json(tools, "tools")
    if isinstance(tools, dict):
        tools = [tools]
    if not isinstance(tools, list):
        raise ValueError(f"tools must be a list, got {type(tools).__name__}")
    out = [normalize_tool(t) for t in tools]
    counts = Counter(t["function"]["name"] for t in out)
    if len(counts) != len(out):
        dups = sorted(n for n, c in counts.items() if c > 1)
        raise ValueError(f"duplicate tool names: {dups[:20]}{' ...' if len(dups) > 20 else ''}")
    return out


# --------------------------------------------------------------------------------- system prompt

# The Hermes function-calling system prompt (Hermes-2-Pro / Hermes-3 wording).
# The call example uses the {"name", "arguments"} key order that every assistant turn emits.
HERMES_SYSTEM_TEMPLATE = (
    "You are a function calling AI model. You are provided with function signatures within "
    "<tools></tools> XML tags. You may call one or more functions to assist with the user query. "
    "Don't make assumptions about what values to plug into functions. Here are the available tools: "
    "<tools>\n{tools}\n</tools>\n"
    "Use the following pydantic model json schema for each tool call you will make: "
    '{{"properties": {{"name": {{"title": "Name", "type": "string"}}, "arguments": {{"title": '
    '"Arguments", "type": "object"}}}}, "required": ["name", "arguments"], "title": "FunctionCall", '
    '"type": "object"}}\n'
    "For each function call return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags as follows:\n"
    '<tool_call>\n{{"name": <function-name>, "arguments": <args-dict>}}\n</tool_call>'
)


def hermes_system_prompt(tools: Any, extra: str = "") -> str:
    """The Hermes system prompt listing ``tools`` (normalized first) as JSON in ``<tools></tools>``.

    ``extra`` (a source's own instructions, e.g. an agent's task rules) is appended after a blank
    line so no source-specific guidance is lost when the tool list is rebuilt.
    """
    norm = normalize_tools(tools)
    listing = "\n".join(json.dumps(t, ensure_ascii=False) for t in norm)
    prompt = HERMES_SYSTEM_TEMPLATE.format(tools=listing)
    return f"{prompt}\n\n{extra.strip()}" if extra and extra.strip() else prompt


# ------------------------------------------------------------------------------------ tool calls

# Tagged blocks are found with str.find, never a lazy ``<tag>(.*?)</tag>`` regex: on text with
# many opening tags and no closing one, such a regex rescans the rest of the text from every
# opening tag (quadratic: seconds on 100 KB); the scan below reads the text once.


def tag_blocks(text: str, open_tag: str, close_tag: str) -> tuple[list[tuple[int, int, str]], str]:
    """The ``open_tag ... close_tag`` blocks of ``text``, in one left-to-right pass.

    Returns ``([(start, end, body), ...], rest)``: each block runs from an opening tag to the
    first closing tag after it (as ``<tag>(.*?)</tag>`` would match), and ``rest`` is the text
    outside the blocks (where a leftover tag means the tags are unbalanced).
    """
    blocks: list[tuple[int, int, str]] = []
    rest: list[str] = []
    pos = 0
    while True:
        start = text.find(open_tag, pos)
        if start < 0:
            break
        close = text.find(close_tag, start + len(open_tag))
        if close < 0:
            break
        end = close + len(close_tag)
        blocks.append((start, end, text[start + len(open_tag):close]))
        rest.append(text[pos:start])
        pos = end
    rest.append(text[pos:])
    return blocks, "".join(rest)


def _replace_blocks(text: str, blocks: list[tuple[int, int, str]], render) -> str:
    """``text`` with each block replaced by ``render(body)``."""
    out, pos = [], 0
    for start, end, body in blocks:
        out += [text[pos:start], render(body)]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _strict_json(value: Any, what: str) -> str:
    """Serialize as strict JSON (no NaN, no sets), raising ValueError with context."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not JSON-serializable: {exc}") from exc


def format_tool_call(name: str, arguments: Any) -> str:
    """One Hermes call block: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``.

    ``arguments`` may be a dict or a JSON string of one (OpenAI ``function.arguments``).
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tool call name must be a non-empty string, got {name!r}")
    if isinstance(arguments, str):
        try:
            arguments = loads_json(arguments, f"tool call {name!r} arguments") if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool call {name!r}: arguments string is not JSON: {exc}") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ValueError(f"tool call {name!r}: arguments must be an object, got {type(arguments).__name__}")
    body = _strict_json({"name": name, "arguments": arguments}, f"tool call {name!r}")
    return f"<tool_call>\n{body}\n</tool_call>"


def format_tool_calls(calls: list[dict]) -> str:
    """Several ``{"name", "arguments"}`` calls as parallel blocks joined by a newline."""
    return "\n".join(format_tool_call(c.get("name"), c.get("arguments")) for c in calls)


def _parse_call_body(body: str) -> dict:
    """Parse one call body: JSON first, then a Python literal (Hermes data has single quotes)."""
    body = body.strip()
    try:
        obj = loads_json(body, "tool call")
    except json.JSONDecodeError as json_exc:
        try:
            obj = ast.literal_eval(body)
        # TypeError: an unhashable literal key ({[1]: 2}); the others: not a literal, or too big
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
            raise ValueError(f"tool call body is neither JSON nor a Python literal: {json_exc}; {exc}: "
                             f"{body[:120]!r}") from exc
        check_depth(obj, "tool call")
    if not isinstance(obj, dict):
        raise ValueError(f"tool call body is a {type(obj).__name__}, not an object: {body[:120]!r}")
    extra = set(obj) - {"name", "arguments"}
    if extra:
        raise ValueError(f"tool call has unexpected keys {sorted(extra)}")
    name, arguments = obj.get("name"), obj.get("arguments", {})
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tool call without a name: {body[:120]!r}")
    if isinstance(arguments, str):  # an OpenAI-style JSON string inside the call
        try:
            arguments = loads_json(arguments, f"tool call {name!r} arguments")
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool call {name!r}: arguments string is not JSON") from exc
    if not isinstance(arguments, dict):
        raise ValueError(f"tool call {name!r}: arguments must be an object")
    # Round-trip through strict JSON so tuples become lists and sets/NaN are rejected.
    return {"name": name, "arguments": json.loads(_strict_json(arguments, f"tool call {name!r}"))}


def parse_tool_calls(text: str) -> list[dict]:
    """All ``<tool_call>`` blocks of ``text`` as ``[{"name", "arguments"}]``, in order.

    Bodies may be JSON or Python dict literals (``ast.literal_eval`` fallback, as the Hermes
    reference parser does). Raises ValueError on a malformed body or an unbalanced tag.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    blocks, rest = tag_blocks(text, "<tool_call>", "</tool_call>")
    calls = [_parse_call_body(body) for _, _, body in blocks]
    if "<tool_call>" in rest or "</tool_call>" in rest:
        raise ValueError("unbalanced <tool_call> tag")
    return calls


def rewrite_tool_calls(text: str) -> str:
    """Re-emit every ``<tool_call>`` block of ``text`` as strict JSON, keeping the text around it."""
    parse_tool_calls(text)  # validates tag balance and every body first
    blocks, _ = tag_blocks(text, "<tool_call>", "</tool_call>")
    return _replace_blocks(text, blocks, lambda body: format_tool_call(**_parse_call_body(body)))


def toolcall_tag_to_hermes(text: str) -> str:
    """Rewrite When2Call's ``<TOOLCALL>[{"name", "arguments"}, ...]</TOOLCALL>`` as Hermes blocks."""
    def repl(body: str) -> str:
        try:
            calls = loads_json(body, "<TOOLCALL> body")
        except json.JSONDecodeError as exc:
            raise ValueError(f"<TOOLCALL> body is not JSON: {body[:120]!r}") from exc
        if isinstance(calls, dict):
            calls = [calls]
        if not isinstance(calls, list) or not calls or not all(isinstance(c, dict) for c in calls):
            raise ValueError("<TOOLCALL> body must be a non-empty list of call objects")
        for c in calls:
            if set(c) - {"name", "arguments"}:
                raise ValueError(f"<TOOLCALL> call has unexpected keys {sorted(set(c) - {'name', 'arguments'})}")
        return format_tool_calls(calls)

    blocks, _ = tag_blocks(text, "<TOOLCALL>", "</TOOLCALL>")
    out = _replace_blocks(text, blocks, repl)
    if "<TOOLCALL>" in out or "</TOOLCALL>" in out:
        raise ValueError("unbalanced <TOOLCALL> tag")
    return out


def format_tool_response(content: Any) -> str:
    """Wrap one tool result: ``<tool_response>\\n...\\n</tool_response>`` (non-strings as JSON)."""
    if not isinstance(content, str):
        content = _strict_json(content, "tool response")
    return f"<tool_response>\n{content}\n</tool_response>"


def parse_tool_responses(text: str) -> list[str]:
    """The contents of the ``<tool_response>`` blocks in ``text`` (inverse of the wrapper): one
    newline after the opening tag and one before the closing tag belong to the wrapper."""
    blocks, _ = tag_blocks(text, "<tool_response>", "</tool_response>")
    bodies = []
    for _, _, body in blocks:
        body = body[1:] if body.startswith("\n") else body
        bodies.append(body[:-1] if body.endswith("\n") else body)
    return bodies


# ---------------------------------------------------------------------------- text clean-ups

_KIMI_TOOL_DECLARE = re.compile(r"<\|im_system\|>\s*tool_declare\s*<\|im_middle\|>.*?<\|im_end\|>", re.S)
_KIMI_ROLE_HEADER = re.compile(r"<\|im_(?:system|user|assistant)\|>[^<]*<\|im_middle\|>")
_SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_]+\|>")


def strip_template_tokens(text: str) -> str:
    """Remove model chat-template tokens left in data (Toucan's Kimi-K2 system messages).

    The whole ``<|im_system|>tool_declare<|im_middle|>[...]<|im_end|>`` block goes (the tool list
    is rebuilt from ``available_tools``), then role headers and any other ``<|token|>``.
    """
    # Only the text up to the last <|im_end|> can hold a whole declaration. Without that bound the
    # lazy ``.*?`` rescans the tail from every unterminated declaration (quadratic).
    cut = text.rfind("<|im_end|>")
    if cut >= 0:
        cut += len("<|im_end|>")
        text = _KIMI_TOOL_DECLARE.sub("", text[:cut]) + text[cut:]
    text = _KIMI_ROLE_HEADER.sub("", text)
    return _SPECIAL_TOKEN.sub("", text).strip()


def with_reasoning(reasoning: str | None, content: str) -> str:
    """Prefix ``content`` with a ``<think>`` block when a source ships reasoning separately."""
    if reasoning and reasoning.strip():
        body = f"<think>\n{reasoning.strip()}\n</think>"
        return f"{body}\n\n{content}" if content else body
    return content


# ------------------------------------------------------------------------------ template bridge

def to_template_messages(messages: list[dict]) -> list[dict]:
    """Normalized messages -> what to pass to a Qwen2.5-style ``apply_chat_template``.

    Assistant content (Hermes ``<tool_call>`` text) passes through unchanged; a ``tool`` message
    holding k ``<tool_response>`` blocks becomes k template ``tool`` messages with the bare
    contents, because the template adds the wrapper itself. See the module docstring for why.
    """
    out: list[dict] = []
    for m in messages:
        if m["role"] == "tool":
            bodies = parse_tool_responses(m["content"])
            if not bodies:
                raise ValueError("tool message without a <tool_response> block")
            out.extend({"role": "tool", "content": b} for b in bodies)
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out
