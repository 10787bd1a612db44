"""Placeholders: one per distinct value, shaped so that no detector ever matches them again.

`<SECRET_AWS_ACCESS_KEY_1>`, `<EMAIL_2>`: angle brackets and an upper-case tag. Every detector
drops candidates that overlap a placeholder, and tags are digits + upper-case letters only
(entropy far under any floor), which is what makes sanitizing idempotent.

With a keyed salt (HMAC-SHA256 over tag and value, key read from an environment variable whose
NAME is configured, never the key itself) the suffix is a short digest instead of a counter, so
the same value gets the same placeholder across documents.
"""
from __future__ import annotations

import hashlib
import hmac
import re

PLACEHOLDER_RE = re.compile(r"<([A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*)_([0-9]{1,9}|[0-9a-f]{10})>")


def placeholder_spans(text: str) -> list[tuple[int, int]]:
    """Spans of placeholders already present in `text`."""
    if "<" not in text:
        return []
    return [m.span() for m in PLACEHOLDER_RE.finditer(text)]


class PlaceholderAllocator:
    """Hands out placeholders for one document: same (tag, value) -> same placeholder."""

    def __init__(self, text: str, key: bytes | None = None) -> None:
        self._key = key
        self._by_value: dict[tuple[str, str], str] = {}
        # Counters start past any placeholder already in the text, so that a later pass (or a
        # document sanitized upstream) never reuses a number for a different value.
        self._next: dict[str, int] = {}
        if key is None and "<" in text:
            for m in PLACEHOLDER_RE.finditer(text):
                if m.group(2).isdigit() and len(m.group(2)) < 10:
                    tag, n = m.group(1), int(m.group(2))
                    self._next[tag] = max(self._next.get(tag, 1), n + 1)

    def get(self, tag: str, value: str) -> str:
        """The placeholder for `value` under `tag` (an upper-case identifier)."""
        k = (tag, value)
        ph = self._by_value.get(k)
        if ph is None:
            if self._key is not None:
                digest = hmac.new(self._key, f"{tag}\x00{value}".encode(), hashlib.sha256).hexdigest()
                # 10 lowercase hex chars: 40 bits, collisions negligible at corpus scale.
                ph = f"<{tag}_{digest[:10]}>"
            else:
                n = self._next.get(tag, 1)
                self._next[tag] = n + 1
                ph = f"<{tag}_{n}>"
            self._by_value[k] = ph
        return ph
