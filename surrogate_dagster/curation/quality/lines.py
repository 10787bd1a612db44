"""Line-shape rules: line lengths, repeated lines and comment-only blocks (OpenCoder's code filters,
re-thresholded for answer snippets: see ``heuristics``)."""

from __future__ import annotations

from collections import Counter

from .rule_base import (
    _COMMENT_LINE,
    _COMMENT_START_CHARS,
    _SPACE_BUT_NEWLINE_BYTES,
    DATA_LANGUAGES,
    Rule,
    _drop_spaces_keep_newlines,
    _line_list,
    _MinLinesRule,
    _nonblank,
)


class MaxLineLength(Rule):
    """A line longer than ``max_chars``: minified code or inlined data (OpenCoder: 1000)."""

    name = "max_line_length"
    defaults = {"max_chars": 1000}

    def applies(self, text: str) -> bool:
        return len(text) > self.params["max_chars"]  # no line is longer than the text

    def measure(self, text: str) -> float:
        return float(max(map(len, _line_list(text))))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_chars"]


class MeanLineLength(Rule):
    """Mean line length outside [min_mean, max_mean] (OpenCoder: 5..100). Each bound needs a
    minimum number of lines: one long line is ``max_line_length``'s business (a long shell
    command is fine), and a 2-line ``x = 1`` block is not "too short per line"."""

    name = "mean_line_length"
    defaults = {"max_mean": 100.0, "min_mean": 5.0, "min_lines_for_max": 3, "min_lines_for_min": 10}

    def measure(self, text: str) -> float:
        body = text.strip("\n")
        n_lines = body.count("\n") + 1
        # the lines' lengths add up to the body minus the newlines between them
        return (len(body) - (n_lines - 1)) / n_lines

    def violates(self, value: float, text: str) -> bool:
        too_long, too_short = value > self.params["max_mean"], value < self.params["min_mean"]
        if not (too_long or too_short):  # within both bounds (the common case): no line count needed
            return False
        n = len(_nonblank(text))
        return ((too_long and n >= self.params["min_lines_for_max"])
                or (too_short and n >= self.params["min_lines_for_min"]))


class DuplicateLines(_MinLinesRule):
    """Share of lines that occur more than once (whitespace-insensitive; 1-2 character lines
    like ``}`` ignored) over ``max_fraction`` in a block of at least ``min_lines`` lines:
    copy-paste code and generation loops (OpenCoder: > 0.7)."""

    name = "duplicate_lines"
    targets = ("code", "prose")
    defaults = {"max_fraction": 0.6, "min_lines": 10}

    def measure(self, text: str) -> float:
        # every line without any whitespace; blank lines become "" and drop out with the short ones
        if text.isascii():  # the same lines as bytes (equal as bytes exactly when equal as text)
            squeezed = text.encode("ascii").translate(None, _SPACE_BUT_NEWLINE_BYTES).split(b"\n")
        else:
            squeezed = _drop_spaces_keep_newlines(text).split("\n")
        if len(set(squeezed)) == len(squeezed):  # no line repeats: neither do the kept ones
            return 0.0
        lines = [ln for ln in squeezed if len(ln) > 2]
        if not lines:
            return 0.0
        if len(set(lines)) == len(lines):  # no line repeats: the sum below is 0
            return 0.0
        counts = Counter(lines)
        return sum(c for c in counts.values() if c > 1) / len(lines)

    def violates(self, value: float, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"] and value > self.params["max_fraction"]


class CommentFraction(_MinLinesRule):
    """Comment lines over ``max_fraction`` of a block of at least ``min_lines``: commented-out
    code or prose dressed as code (OpenCoder: > 0.8 of characters)."""

    name = "comment_fraction"
    defaults = {"max_fraction": 0.8, "min_lines": 5}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        lines = _nonblank(text)
        if not lines:
            return 0.0
        # the pattern is tried only on lines whose first non-space character can start a match
        # (``\s`` and str.lstrip skip the same characters; a non-blank line has one)
        hits = sum(1 for ln in lines if ln.lstrip()[0] in _COMMENT_START_CHARS and _COMMENT_LINE.match(ln))
        return hits / len(lines)

    def violates(self, value: float, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"] and value > self.params["max_fraction"]
