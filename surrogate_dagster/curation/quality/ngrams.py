"""Word n-gram repetition rules (OpenCoder's "from text" filters, after RedPajama-V2's
``frac_chars_top_{2,3,4}gram`` and ``frac_chars_dupe_{5..10}grams``).

Words are the text's whitespace-separated tokens, lower-cased, with punctuation at their ends
stripped (so ``foo(bar)`` and ``foo(bar),`` are one word). The share is of the characters of
all words:

- top n-gram: the characters of the most frequent n-gram times its count (RedPajama);
- duplicate n-grams: the characters of the words covered by any n-gram that occurs more than
  once (each word counted once).

OpenCoder applied them to whole files; on an answer's code block they need ``min_words`` (300)
words before they fire: on 1,318 known-good benchmark solutions a 100-word floor flagged 10
(an ``elif`` ladder, a docstring repeating its phrase), 300 none
(benchmarks/quality_classifier_agreement.py).
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from .rule_base import DATA_LANGUAGES, Rule, _recent_texts_memo

_STRIP = "()[]{}<>,;:.!?\"'`"


@_recent_texts_memo
def words(text: str) -> tuple[str, ...]:
    """The lower-cased words of ``text`` with surrounding punctuation stripped (empty ones out)."""
    return tuple(w for w in (t.strip(_STRIP) for t in text.lower().split()) if w)


class _NgramRule(Rule):
    n: ClassVar[int] = 2
    default_skip_languages = DATA_LANGUAGES

    def applies(self, text: str) -> bool:
        return len(text) >= 2 * self.params["min_words"] - 1  # each word but the last: >= 1 char and a space

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"]


class TopNgramChars(_NgramRule):
    """The most frequent word n-gram covers over ``max_fraction`` of the word characters."""

    def measure(self, text: str) -> float:
        ws = words(text)
        if len(ws) < max(self.params["min_words"], self.n):
            return 0.0
        grams = Counter(zip(*(ws[i:] for i in range(self.n))))
        gram, count = grams.most_common(1)[0]
        if count < 2:
            return 0.0
        total = sum(map(len, ws))
        return sum(map(len, gram)) * count / total


class DupeNgramChars(_NgramRule):
    """Words covered by a repeated n-gram hold over ``max_fraction`` of the word characters."""

    def measure(self, text: str) -> float:
        ws = words(text)
        n = self.n
        if len(ws) < max(self.params["min_words"], n):
            return 0.0
        grams = list(zip(*(ws[i:] for i in range(n))))
        counts = Counter(grams)
        covered = bytearray(len(ws))
        for i, g in enumerate(grams):
            if counts[g] > 1:
                covered[i:i + n] = b"\x01" * n
        total = sum(map(len, ws))
        return sum(len(w) for w, c in zip(ws, covered) if c) / total


# OpenCoder's thresholds: top 2/3/4-gram 0.20/0.18/0.16; duplicate 5-gram 0.80, 6-9 0.70, 10 0.60
_TOP = {2: 0.20, 3: 0.18, 4: 0.16}
_DUPE = {5: 0.80, 6: 0.70, 7: 0.70, 8: 0.70, 9: 0.70, 10: 0.60}


def _top(n: int, limit: float) -> type[Rule]:
    return type(f"Top{n}gramChars", (TopNgramChars,), {
        "name": f"top_{n}gram_chars", "n": n, "defaults": {"max_fraction": limit, "min_words": 300},
        "__doc__": f"The most frequent word {n}-gram covers over ``max_fraction`` (OpenCoder: {limit}) of "
                   f"the word characters of a block of at least ``min_words`` words: a repeated phrase."})


def _dupe(n: int, limit: float) -> type[Rule]:
    return type(f"Dupe{n}gramChars", (DupeNgramChars,), {
        "name": f"dupe_{n}gram_chars", "n": n, "defaults": {"max_fraction": limit, "min_words": 300},
        "__doc__": f"Words inside repeated {n}-grams hold over ``max_fraction`` (OpenCoder: {limit}) of the "
                   f"word characters of a block of at least ``min_words`` words: copy-pasted code."})


NGRAM_RULES: tuple[type[Rule], ...] = (*(_top(n, v) for n, v in _TOP.items()),
                                       *(_dupe(n, v) for n, v in _DUPE.items()))
