"""DPO adapters: native preference rows -> normalized ``prompt/chosen/rejected`` rows.

Tool-calling pairs (When2Call) hold both answers to the rule SFT tool rows follow: every call is
well formed (``bad_tool_call``) and names a tool the prompt declares (``undeclared_tool``).
"""

from __future__ import annotations

from typing import Any, Callable

from ..hermes import hermes_system_prompt, normalize_tools, toolcall_tag_to_hermes
from .base import AdapterContext, Quarantine, content_id, dpo_row
from .limits import TooDeep
from .code_sft import fence_language, text_field
from .tools import calls_in

# --- Vezora/Code-Preference-Pairs -----------------------------------------------------------------


def adapt_code_preference_pairs(row: dict, ctx: AdapterContext) -> dict:
    """input -> accepted (correct) vs rejected (same code with an injected bug)."""
    user = text_field(row, "input", "empty_question")
    chosen = text_field(row, "accepted", "empty_answer")
    rejected = text_field(row, "rejected", "empty_answer")
    meta = {"language": fence_language(chosen, rejected, user)}
    if row.get("id") is not None:  # extra columns are unconfirmed (SOURCES §5.1); keep an id if any
        meta["id"] = row["id"]
    return dpo_row(ctx, row.get("id") or content_id(user, chosen, rejected),
                   [{"role": "user", "content": user}], chosen, rejected,
                   meta={k: v for k, v in meta.items() if v is not None})


# --- argilla/distilabel-capybara-dpo-7k-binarized -------------------------------------------------

_CAPY_ROLES = ("system", "user", "assistant")


def _capy_turns(value: Any, key: str) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise Quarantine("wrong_type", f"{key}: {type(value).__name__}")
    turns = []
    for i, t in enumerate(value):
        if not isinstance(t, dict) or t.get("role") not in _CAPY_ROLES or not isinstance(t.get("content"), str):
            raise Quarantine("bad_turn", f"{key}[{i}]")
        turns.append({"role": t["role"], "content": t["content"]})
    if turns[-1]["role"] != "assistant":
        raise Quarantine("last_turn_not_assistant", key)
    return turns


def _rating(row: dict, key: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Quarantine("wrong_type", f"{key}: {value!r}")
    return value


def adapt_capybara_dpo(row: dict, ctx: AdapterContext) -> dict:
    """Multi-turn: the shared history is the prompt, the last assistant turns are compared."""
    chosen = _capy_turns(row.get("chosen"), "chosen")
    rejected = _capy_turns(row.get("rejected"), "rejected")
    if chosen[:-1] != rejected[:-1]:
        raise Quarantine("prompt_mismatch", f"{len(chosen) - 1} vs {len(rejected) - 1} prompt turns")
    r_chosen, r_rejected = _rating(row, "rating_chosen"), _rating(row, "rating_rejected")
    if not r_chosen > r_rejected:
        raise Quarantine("rating_not_better", f"{r_chosen} <= {r_rejected}")
    prompt = chosen[:-1]
    meta = {"origin": row.get("source"), "rating_chosen": r_chosen, "rating_rejected": r_rejected,
            "chosen_model": row.get("chosen_model"), "rejected_model": row.get("rejected_model"),
            "prompt_turns": len(prompt), "user_turns": sum(m["role"] == "user" for m in prompt),
            "language": fence_language(chosen[-1]["content"])}
    return dpo_row(ctx, content_id(prompt, chosen[-1]["content"], rejected[-1]["content"]), prompt,
                   chosen[-1]["content"], rejected[-1]["content"],
                   meta={k: v for k, v in meta.items() if v is not None})


# --- nvidia/When2Call train_pref ------------------------------------------------------------------


def _when2call_answer(value: Any, key: str) -> tuple[str, str]:
    """(Hermes text, "tool_call"|"text") of a ``{role: assistant, content}`` response."""
    if not isinstance(value, dict) or value.get("role", "assistant") != "assistant":
        raise Quarantine("wrong_type", f"{key}: expected an assistant message")
    content = value.get("content")
    if not isinstance(content, str):
        raise Quarantine("non_text_answer", key)
    try:
        text = toolcall_tag_to_hermes(content)
    except TooDeep:
        raise
    except ValueError as exc:
        raise Quarantine("malformed_toolcall", f"{key}: {exc}") from exc
    return text, "tool_call" if text != content else "text"


def adapt_when2call_pref(row: dict, ctx: AdapterContext) -> dict:
    """tools (xLAM-style) -> Hermes system prompt; one user turn; responses with Hermes calls."""
    try:
        tools = normalize_tools(row.get("tools"))
    except TooDeep:
        raise
    except (ValueError, TypeError) as exc:
        raise Quarantine("bad_tool_schema", str(exc)[:200]) from exc
    messages = row.get("messages")
    if (not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict)
            or messages[0].get("role") != "user" or not isinstance(messages[0].get("content"), str)):
        raise Quarantine("bad_prompt_turn", "expected exactly one user message")
    chosen, chosen_kind = _when2call_answer(row.get("chosen_response"), "chosen_response")
    rejected, rejected_kind = _when2call_answer(row.get("rejected_response"), "rejected_response")
    # A pair whose answers call tools the prompt never offered would teach (or reward) inventing
    # tools; the rejected side too, since DPO trains on its tokens as much as on the chosen ones.
    declared = {t["function"]["name"] for t in tools}
    calls_in(chosen, declared, "chosen_response")
    calls_in(rejected, declared, "rejected_response")
    prompt = [{"role": "user", "content": messages[0]["content"]}]
    if tools:  # no tools offered: no function-calling system prompt to show either
        prompt.insert(0, {"role": "system", "content": hermes_system_prompt(tools)})
    meta = {"chosen_kind": chosen_kind, "rejected_kind": rejected_kind, "n_tools": len(tools),
            "chosen_reward": row.get("chosen_reward"), "rejected_reward": row.get("rejected_reward")}
    return dpo_row(ctx, content_id(row.get("tools"), prompt[-1], chosen, rejected), prompt, chosen, rejected,
                   tools=tools, meta={k: v for k, v in meta.items() if v is not None})


ADAPTERS: dict[str, Callable[[dict, AdapterContext], dict]] = {
    "code_preference_pairs": adapt_code_preference_pairs,
    "capybara_dpo": adapt_capybara_dpo,
    "when2call_pref": adapt_when2call_pref,
}
