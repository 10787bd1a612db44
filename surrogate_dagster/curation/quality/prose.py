"""Prose and whole-row rules: too little text, degenerate repetition, odd word lengths."""

from __future__ import annotations

from collections import Counter

from .rule_base import Rule, _spaces


class TooShort(Rule):
    """A row whose answers together have fewer than ``min_chars`` non-whitespace characters
    (tool calls count: a tool-call-only turn is a real answer; judged over all answers because
    an agent trace may have an empty turn between tool calls)."""

    name = "too_short"
    targets = ("row",)
    defaults = {"min_chars": 2}

    def measure(self, text: str) -> float:
        return float(len(text) - _spaces(text))

    def violates(self, value: float, text: str) -> bool:
        return value < self.params["min_chars"]

    def applies(self, text: str) -> bool:
        # with min_chars <= 2, a text whose stripped form has 2+ characters has 2 non-whitespace
        # characters (its first and last): it cannot fail
        return not (self.params["min_chars"] <= 2 and len(text.strip()) >= 2)


class RepeatedNgrams(Rule):
    """Share of prose words covered by word 5-grams that occur 3+ times, over ``max_fraction``
    in prose of at least ``min_words``: the loops of a degenerate generation."""

    name = "repeated_ngrams"
    targets = ("prose",)
    defaults = {"max_fraction": 0.5, "min_words": 60, "n": 5, "min_repeats": 3}

    def measure(self, text: str) -> float:
        words = text.lower().split()
        n = self.params["n"]
        if len(words) < n:
            return 0.0
        grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
        counts = Counter(grams)
        covered = [False] * len(words)
        for i, g in enumerate(grams):
            if counts[g] >= self.params["min_repeats"]:
                covered[i:i + n] = [True] * n
        return sum(covered) / len(words)

    def violates(self, value: float, text: str) -> bool:
        return len(text.split()) >= self.params["min_words"] and value > self.params["max_fraction"]

    def applies(self, text: str) -> bool:
        return len(text.split()) >= self.params["min_words"]


class MeanWordLength(Rule):
    """Prose whose mean word length is outside [min_mean, max_mean] (OpenCoder text rule: 3..10):
    character soup, base64 in prose, or lists of single letters."""

    name = "mean_word_length"
    targets = ("prose",)
    defaults = {"min_mean": 2.5, "max_mean": 12.0, "min_words": 30}

    def measure(self, text: str) -> float:
        words = text.split()
        return sum(len(w) for w in words) / len(words) if words else 0.0

    def violates(self, value: float, text: str) -> bool:
        if len(text.split()) < self.params["min_words"]:
            return False
        return not self.params["min_mean"] <= value <= self.params["max_mean"]
