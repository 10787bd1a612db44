"""The text views of a normalized row that curation blocks look at."""

from __future__ import annotations

from ..sources.hermes import parse_tool_responses


def row_text(row: dict) -> str:
    """Every turn of the row (SFT: all messages; DPO: prompt, chosen and rejected), newline-joined."""
    if row.get("kind") == "dpo":
        parts = [m["content"] for m in row.get("prompt") or []]
        parts += [row.get("chosen") or "", row.get("rejected") or ""]
    else:
        parts = [m["content"] for m in row.get("messages") or []]
    return "\n".join(p for p in parts if p)


def _turn_text(m: dict) -> str:
    """A turn as dedup compares it: tool results without their ``<tool_response>`` wrappers (the
    wrapper is the same in every row and only adds shared shingles)."""
    if m["role"] == "tool":
        bodies = parse_tool_responses(m["content"])
        return "\n".join(bodies) if bodies else m["content"]
    return m["content"]


def dedup_text(row: dict) -> str:
    """What makes a row distinct, for exact and near dedup: its user, assistant and tool turns
    (DPO: the prompt's turns, chosen and rejected). System turns are left out: tool sources share
    one Hermes system prompt per tool set, long enough to make rows with different requests look
    like near duplicates (Jaccard 0.6-0.7 on whole rows against 0.0-0.03 without it)."""
    turns = row.get("prompt") if row.get("kind") == "dpo" else row.get("messages")
    parts = [_turn_text(m) for m in turns or [] if m["role"] != "system"]
    if row.get("kind") == "dpo":
        parts += [row.get("chosen") or "", row.get("rejected") or ""]
    return "\n".join(p for p in parts if p)


def prompt_text(row: dict) -> str:
    """What the user asked: user turns (SFT) or the prompt's user turns (DPO)."""
    turns = row.get("prompt") if row.get("kind") == "dpo" else row.get("messages")
    return "\n".join(m["content"] for m in turns or [] if m["role"] == "user")


def response_text(row: dict) -> str:
    """What the model is trained to say: assistant turns (SFT) or chosen + rejected (DPO)."""
    if row.get("kind") == "dpo":
        return "\n".join(p for p in (row.get("chosen") or "", row.get("rejected") or "") if p)
    return "\n".join(m["content"] for m in row.get("messages") or [] if m["role"] == "assistant")


def trained_response_text(row: dict) -> str:
    """Only what the model is pushed towards: assistant turns (SFT) or chosen (DPO)."""
    if row.get("kind") == "dpo":
        return row.get("chosen") or ""
    return response_text(row)


def row_texts(row: dict) -> list[str]:
    """The text fields `map_row_text` applies its function to, in the same order."""
    texts = [m["content"] for m in row.get("messages") or []]
    texts += [m["content"] for m in row.get("prompt") or []]
    return texts + [row[k] for k in ("chosen", "rejected") if row.get(k)]


def map_row_text(row: dict, fn) -> dict:
    """A copy of the row with `fn` applied to every text field (used by the sanitizer)."""
    out = dict(row)
    out["messages"] = [{"role": m["role"], "content": fn(m["content"])} for m in row.get("messages") or []]
    out["prompt"] = [{"role": m["role"], "content": fn(m["content"])} for m in row.get("prompt") or []]
    out["chosen"] = fn(row.get("chosen") or "") if row.get("chosen") else row.get("chosen", "")
    out["rejected"] = fn(row.get("rejected") or "") if row.get("rejected") else row.get("rejected", "")
    return out
