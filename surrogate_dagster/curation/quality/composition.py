"""Character-composition rules: letters, digits, whitespace and U+FFFD shares of a text."""

from __future__ import annotations

from itertools import repeat

from .rule_base import DATA_LANGUAGES, Rule, _class_counts, _line_list, _MinCharsRule


class AlphaFraction(_MinCharsRule):
    """Too few alphabetic characters among non-whitespace ones: tables of numbers or symbols
    (OpenCoder: < 0.5 for files; 0.35 here because the 1st percentile of 1,318 known-good Python
    solutions is already 0.51 and symbol-heavy C/C++ snippets run lower)."""

    name = "alpha_fraction"
    defaults = {"min_fraction": 0.35, "min_chars": 80}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        spaces, alpha, _ = _class_counts(text)
        visible = len(text) - spaces
        # a letter is never whitespace, so letters among visible characters = all letters
        return alpha / visible if visible else 1.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value < self.params["min_fraction"]


class DigitFraction(_MinCharsRule):
    """Too many digits: embedded numeric data rather than logic (OpenCoder: > 0.2)."""

    name = "digit_fraction"
    defaults = {"max_fraction": 0.2, "min_chars": 80}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        return _class_counts(text)[2] / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value > self.params["max_fraction"]


class WhitespaceFraction(_MinCharsRule):
    """Whitespace after each line's indentation over ``max_fraction``: padded or broken formatting
    (OpenCoder: > 0.5 of all characters). Leading indentation is not counted, because nested
    Python is legitimately half indentation (2.5% of MBPP/HumanEval solutions exceed 0.5)."""

    name = "whitespace_fraction"
    defaults = {"max_fraction": 0.5, "min_chars": 80}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        # whitespace of the text with each line's leading spaces and tabs removed, over its length,
        # without building it: the indentation is all whitespace, so the body has ``indent`` fewer
        # characters and fewer whitespace characters than the text
        lines = _line_list(text)
        indent = len(text) - (len(lines) - 1) - sum(map(len, map(str.lstrip, lines, repeat(" \t"))))
        size = len(text) - indent
        return (_class_counts(text)[0] - indent) / size if size else 0.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value > self.params["max_fraction"]


class ReplacementChars(Rule):
    """U+FFFD replacement characters over ``max_fraction``: text that went through a broken
    decode (OpenCoder: > 0.01)."""

    name = "replacement_chars"
    targets = ("answer",)
    defaults = {"max_fraction": 0.01}

    def measure(self, text: str) -> float:
        return text.count("\ufffd") / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"]
