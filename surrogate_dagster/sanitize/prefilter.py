"""The keyword prefilter: which of a fixed set of lower-case literals occur in a text, in one scan.

The engine builds one `KeywordScan` over the keywords of every rule and every detector that
declares some, and runs a rule or detector only when one of its keywords is present.
"""
from __future__ import annotations

import re


class KeywordScan:
    """Which of a fixed set of (lower-case) keywords occur in a text: `{k for k in keywords if k
    in text}`, without one substring scan per keyword (~100 per document).

    A trie-shaped alternation finds, at every position where one of its keywords starts, the
    longest one there (`findall`: non-overlapping, leftmost). An occurrence it skips lies inside
    a reported match (so it is a substring of that keyword: `_inside`, known present) or starts
    inside one and runs past its end (`_straddle`: checked with `in`, a handful at most).
    `re` pays for every position whose character starts some keyword; the few keywords starting
    with the most frequent letters of English and code (`_SCANNED_FIRST`) cost less as plain
    `in` scans, so they stay out of the trie.
    """

    _SCANNED_FIRST = frozenset("eotnrl")

    def __init__(self, keywords) -> None:
        kws = frozenset(keywords)
        trie = [k for k in kws if k[0] not in self._SCANNED_FIRST]
        self._scanned = tuple(sorted(kws.difference(trie)))
        self._regex = re.compile(trie_pattern(trie)) if trie else None
        self._inside = {m: frozenset(k for k in kws if k in m) for m in trie}
        self._straddle = {m: frozenset(k for k in kws for j in range(1, len(m))
                                       if len(k) > len(m) - j and k.startswith(m[j:])) for m in trie}
        self._cache: dict[frozenset[str], tuple[frozenset[str], frozenset[str]]] = {}

    def present(self, text: str) -> frozenset[str] | set[str]:
        inside, maybe = frozenset(), frozenset()
        if self._regex is not None:
            found = frozenset(self._regex.findall(text))
            known = self._cache.get(found)
            if known is None:  # few distinct `found` sets occur: cache their closure
                inside = frozenset().union(*(self._inside[m] for m in found))
                maybe = frozenset().union(*(self._straddle[m] for m in found)) - inside
                known = self._cache[found] = (inside, maybe)
                if len(self._cache) > 4096:
                    self._cache.clear()
            inside, maybe = known
        extra = [k for k in self._scanned if k in text]
        if not maybe and not extra:
            return inside
        return inside.union(extra, [k for k in maybe if k in text])


def trie_pattern(words) -> str:
    """An alternation of `words` shaped as a trie (one branch per next character, so `re` tests
    few alternatives per position); at each node the longer continuations come before the end,
    so a match is the longest word starting there."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            alts.append("")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return build(trie)
