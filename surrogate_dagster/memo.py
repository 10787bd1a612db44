"""A small FIFO memo bounded in entries and in characters of the texts it keys on.

Curation stages look at the same texts more than once in a row: AST validity, the heuristics and
the edu scorer share the fence scan and tree-sitter parses of an answer
(``code_blocks.PARTS_MEMO``, ``ast_validity.PARSE_MEMO``), and the sanitizer's NER tags a chunk's
prose in one batched call before it sanitizes text by text (``sanitize.ner.TAG_CACHE``). FIFO
(not LRU) is enough for those access patterns. No Dagster imports here.

Eviction is ``OrderedDict.popitem(last=False)``, O(1). Not ``next(iter(dict))`` on a plain
dict, which is O(deleted entries) in CPython: a dict only compacts on resize, so after many front
deletions each ``next`` walks thousands of dead slots (what that cost the sanitize step:
docs/BENCHMARKS.md).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable


class BoundedMemo:
    """Values keyed on texts, holding at most ``max_entries`` and ``max_chars`` characters of keyed
    text; texts over ``max_text_chars`` are never stored, so one huge text cannot pin memory.
    Safe to fill from several threads (the lock guards insertion and eviction)."""

    def __init__(self, max_entries: int = 4096, max_chars: int = 32_000_000,
                 max_text_chars: int = 1_000_000) -> None:
        self.max_entries, self.max_chars, self.max_text_chars = max_entries, max_chars, max_text_chars
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def peek(self, key: Hashable) -> Any | None:
        """The stored value for ``key``, or None (counts a hit or a miss)."""
        entry = self._data.get(key)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry[0]

    def put(self, key: Hashable, value: Any, chars: int) -> None:
        """Store ``value`` for ``key`` (a text of ``chars`` characters) unless already there."""
        if chars > self.max_text_chars:
            return
        with self._lock:
            if key not in self._data:
                self._data[key] = (value, chars)
                self._chars += chars
            while self._data and (len(self._data) > self.max_entries or self._chars > self.max_chars):
                self._chars -= self._data.popitem(last=False)[1][1]

    def get(self, key: Hashable, chars: int, compute: Callable[[], Any]) -> Any:
        """The memoized value for ``key`` (a text of ``chars`` characters), computing it once."""
        value = self.peek(key)
        if value is None:
            value = compute()
            self.put(key, value, chars)
        return value

    def clear(self) -> None:
        """Forget everything (tests; or to release memory after a partition)."""
        with self._lock:
            self._data.clear()
            self._chars = 0
            self.hits = self.misses = 0
