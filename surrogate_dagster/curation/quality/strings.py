"""String-literal and size rules (OpenCoder's general code filters: ``frac_lines_long_string``,
``frac_chars_string_length``, ``frac_chars_long_word_length``, ``size_file_byte``,
``num_lines``), for code blocks; data blocks are exempt (a JSON block is all strings)."""

from __future__ import annotations

import re

from .rule_base import DATA_LANGUAGES, Rule, _line_list, _MinCharsRule, _MinLinesRule, _nonblank

# a single- or double-quoted literal on one line (escapes inside kept)
_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_WORD = re.compile(r"\S+")


class LongStringLines(_MinLinesRule):
    """Lines holding a string literal of over ``string_chars`` characters are over
    ``max_fraction`` of the block (OpenCoder: 0.2): text or data pasted into code."""

    name = "long_string_lines"
    defaults = {"max_fraction": 0.2, "string_chars": 120, "min_lines": 5}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        lines = _nonblank(text)
        limit = self.params["string_chars"]
        long = sum(1 for ln in lines if len(ln) > limit and any(len(m) - 2 > limit for m in _STRING.findall(ln)))
        return long / len(lines) if lines else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class StringCharsFraction(_MinCharsRule):
    """Characters inside string literals over ``max_fraction`` of the block (OpenCoder: 0.6):
    a resource table, not logic."""

    name = "string_chars_fraction"
    defaults = {"max_fraction": 0.6, "min_chars": 400}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        return sum(len(m) for m in _STRING.findall(text)) / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class LongWordChars(_MinCharsRule):
    """Characters in words (whitespace-separated) longer than ``word_chars`` over
    ``max_fraction`` of the block (OpenCoder: 0.4): minified or packed code."""

    name = "long_word_chars"
    # 80, not 40: a regular expression in a string is one 40-60 character word
    defaults = {"max_fraction": 0.4, "word_chars": 80, "min_chars": 200}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        limit = self.params["word_chars"]
        ws = _WORD.findall(text)
        total = sum(map(len, ws))
        return sum(len(w) for w in ws if len(w) > limit) / total if total else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class MaxChars(Rule):
    """A block over ``max_chars`` characters (OpenCoder: files over 3 MB): no answer teaches by
    a block that size."""

    name = "max_chars"
    defaults = {"max_chars": 100_000}

    def measure(self, text: str) -> float:
        return float(len(text))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_chars"]


class MaxLines(Rule):
    """A block over ``max_lines`` lines (OpenCoder: 100,000 per file)."""

    name = "max_lines"
    defaults = {"max_lines": 3000}

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["max_lines"]  # n lines need n - 1 newlines

    def measure(self, text: str) -> float:
        return float(len(_line_list(text)))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_lines"]


STRING_RULES: tuple[type[Rule], ...] = (MaxChars, MaxLines, LongStringLines, StringCharsFraction, LongWordChars)
