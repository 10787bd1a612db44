"""The contract every source adapter follows: one native row in, one normalized row out.

An adapter is a plain function ``adapt(row: dict, ctx: AdapterContext) -> dict``. It raises
``Quarantine(reason, detail)`` when the row cannot be converted; the caller stores the row in the
quarantine table with that reason, so nothing is silently dropped. normalize calls adapters through
adapters/guard.py, which also quarantines whatever else an adapter raises, a row over the time
budget or nested too deep, and output that breaks the contract below. No Dagster imports here.

A normalized row always has every key below, so a partition is one Arrow schema:

- ``id``: stable id of the row within its source (from the native id, else a content hash)
- ``source``: the catalog name of the source (the partition key)
- ``kind``: ``"sft"`` (uses ``messages``) or ``"dpo"`` (uses ``prompt``/``chosen``/``rejected``)
- ``messages``: ChatML turns ``[{"role": system|user|assistant|tool, "content": str}]``; tool calls
  are Hermes text inside assistant content; ``[]`` for DPO rows
- ``prompt``: ChatML turns before the compared answer (DPO); ``[]`` for SFT rows
- ``chosen`` / ``rejected``: the compared assistant answers as text (DPO); ``""`` for SFT rows
- ``tools``: JSON string of the normalized tool list (OpenAI-style, JSON Schema params), or ``""``
- ``meta``: JSON string with provenance that curation may use (language, config, native ids, ...)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

ROLES = ("system", "user", "assistant", "tool")
NORMALIZED_COLUMNS = ("id", "source", "kind", "messages", "prompt", "chosen", "rejected", "tools", "meta")


class Quarantine(Exception):
    """A row that cannot be converted; ``reason`` is a short stable code counted in metadata."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class CatalogError(ValueError):
    """The catalog asks an adapter for something it does not handle (an unknown config).

    Not a property of one row: it fails the whole partition, loudly, instead of quarantining
    every row of it.
    """


@dataclass
class AdapterContext:
    """What an adapter may know beyond the row itself."""

    source: str
    config: str = "default"
    # (dataset, split, index) -> problem text; used by OpenCodeReasoning-2 to rebuild its "-" questions
    helper_questions: Callable[[str, str, int], str | None] = field(default=lambda d, s, i: None)
    options: dict[str, Any] = field(default_factory=dict)


def content_id(*parts: Any) -> str:
    """A stable id from row content, for sources without a native id.

    Text with a lone UTF-16 surrogate (``"\\ud800"``) has no UTF-8 form to hash: the row is
    quarantined as ``lone_surrogate`` (see adapters/guard.py for why such rows are not repaired).
    """
    h = hashlib.sha256()
    for p in parts:
        text = json.dumps(p, sort_keys=True, ensure_ascii=False, default=str)
        try:
            h.update(text.encode())
        except UnicodeEncodeError as exc:
            raise Quarantine("lone_surrogate", f"{exc.object[exc.start:exc.end]!a} in the id's content") from None
        h.update(b"\x00")
    return h.hexdigest()[:24]


def _id_or_hash(row_id: Any, *content: Any) -> str:
    """The native id as text; an empty one (``""`` upstream) falls back to a content hash."""
    text = "" if row_id is None else str(row_id)
    return text if text.strip() else content_id(*content)


def sft_row(ctx: AdapterContext, row_id: str, messages: list[dict], tools: list | None = None,
            meta: dict | None = None) -> dict:
    """Build a normalized SFT row, validating roles and contents."""
    clean = []
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in ROLES:
            raise Quarantine("bad_role", f"turn {i}: {role!r}")
        if not isinstance(content, str):
            raise Quarantine("non_text_content", f"turn {i}: {type(content).__name__}")
        clean.append({"role": role, "content": content})
    if not any(m["role"] == "assistant" and m["content"].strip() for m in clean):
        raise Quarantine("no_assistant_turn")
    if not any(m["role"] == "user" and m["content"].strip() for m in clean):
        raise Quarantine("no_user_turn")
    return {
        "id": _id_or_hash(row_id, clean), "source": ctx.source, "kind": "sft", "messages": clean,
        "prompt": [], "chosen": "", "rejected": "",
        "tools": json.dumps(tools, ensure_ascii=False) if tools else "",
        "meta": json.dumps({"config": ctx.config, **(meta or {})}, ensure_ascii=False, default=str),
    }


def dpo_row(ctx: AdapterContext, row_id: str, prompt: list[dict], chosen: str, rejected: str,
            tools: list | None = None, meta: dict | None = None) -> dict:
    """Build a normalized DPO row; identical or empty answers are quarantined."""
    for i, m in enumerate(prompt):
        if m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise Quarantine("bad_prompt_turn", f"turn {i}")
    if not prompt or not any(m["role"] == "user" for m in prompt):
        raise Quarantine("no_user_turn")
    if not isinstance(chosen, str) or not isinstance(rejected, str):
        raise Quarantine("non_text_answer")
    if not chosen.strip() or not rejected.strip():
        raise Quarantine("empty_answer")
    if chosen.strip() == rejected.strip():
        raise Quarantine("chosen_equals_rejected")
    return {
        "id": _id_or_hash(row_id, prompt, chosen, rejected), "source": ctx.source, "kind": "dpo", "messages": [],
        "prompt": [{"role": m["role"], "content": m["content"]} for m in prompt],
        "chosen": chosen, "rejected": rejected,
        "tools": json.dumps(tools, ensure_ascii=False) if tools else "",
        "meta": json.dumps({"config": ctx.config, **(meta or {})}, ensure_ascii=False, default=str),
    }
