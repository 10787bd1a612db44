"""OpenCoder-style heuristic quality rules: one named rule per class, each with its own count.

The rules follow the OpenCoder paper's code filters (arXiv 2411.04905, appendix: line lengths,
character composition, auto-generated markers, encoded data, hex words, placeholder comments,
duplicated lines), re-implemented here and re-thresholded where needed: OpenCoder filtered whole
*files* for pre-training, while these rules judge *answers* whose code blocks are often 3-20 lines.
So size rules need a minimum line count before they fire, a data block (JSON, YAML, console
output, unidentified untagged blocks) is exempt from the composition rules, and some OpenCoder
rules are left out on purpose: "< 10 lines" (snippets are short), "starts with <?xml" (a pom.xml
in an answer is useful), "assert lines > 40%" (an answer that writes tests is useful).
Thresholds were checked against 1,318 known-good Python solutions (MBPP, HumanEval, LeetCode):
0.2% would be dropped (see benchmarks/quality_classifier_agreement.py).

Each rule: ``name``, ``defaults`` (thresholds; any can be overridden from config), ``targets``
("code": every fenced block; "prose": the answer outside fences; "answer": each whole answer;
"row": all answers of the row joined),
``measure(text) -> float`` and ``check(text, language=None) -> None | "quality_<name>"``.
``HeuristicFilter`` chains the enabled rules over a row's answers (SFT assistant turns, DPO chosen).

Speed without changing a value: character classes are counted with ``bytes.translate`` on ASCII
text, slow scans are skipped when a cheap necessary condition fails (no ``0x`` for hex words, no
64-character base64 run, none of a pattern's literals, text under a rule's size floor:
``Rule.applies``), and the answer's blocks come from the shared ``code_blocks.answer_parts``
memo. Rules whose ``check`` is overridden decide exactly as ``measure`` + ``violates`` would, but
share one block's line split, non-blank lines and character counts (small memos keyed on the
text), test a bound before a full measure (mean line length within both limits, no line longer
than the text), and look only where a match can start (string literals at quote characters,
comment patterns on lines whose first character can open one). tests/test_quality.py checks
every measure against its plain definition and every ``check`` against ``Rule.check``.
"""

from __future__ import annotations

import functools
import re
from itertools import repeat
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator

from ..code_blocks import answer_parts, answer_texts

# Blocks that hold data or program output rather than code: exempt from composition rules.
# HeuristicFilter passes "unknown" for untagged blocks it could not identify: those are most often
# program output ("Output:\n```\n[1, 2, 3]\n```"), so they are exempt too.
DATA_LANGUAGES = frozenset({"json", "jsonc", "yaml", "toml", "csv", "text", "console", "diff",
                            "xml", "ini", "pycon", "sql", "markdown", "html", "latex", "mermaid",
                            "unknown"})

_SPACE_BUT_NEWLINE = re.compile(r"[^\S\n]+")  # \s is str.isspace, as str.split() uses
_INDENT = re.compile(r"^[ \t]+", re.M)  # "^" with re.M: text start and after each "\n"
_COMMENT_LINE = re.compile(r"^\s*(#(?!include|define|if|pragma|!)|//|/\*|\*(?!\*)|--|<!--|;|%)")
_COMMENT_START_CHARS = "#/*-<;%"  # the first character (after whitespace) of every match


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _recent_texts_memo(func: Callable[[str], Any]) -> Callable[[str], Any]:
    """Memoize ``func`` over the last 1024 texts of at most 20,000 characters: enough to carry a
    chunk's blocks from the heuristics to the edu scorer (filter_stage), while a few huge texts
    cannot pin much memory (longer ones are computed every time)."""
    cached = functools.lru_cache(maxsize=1024)(func)

    @functools.wraps(func)
    def memo(text: str) -> Any:
        return cached(text) if len(text) <= 20_000 else func(text)

    memo.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return memo


@_recent_texts_memo
def _nonblank(text: str) -> tuple[str, ...]:
    # Several rules, and then the edu scorer, ask for the same block's non-blank lines; the memo
    # answers the repeats (str hashes are cached on the object, so a lookup costs no rescan).
    return tuple(filter(str.strip, _line_list(text)))


@functools.lru_cache(maxsize=8)
def _line_list(text: str) -> tuple[str, ...]:
    # ``text.split("\n")``, shared by the rules that look at one block in a row
    return tuple(text.split("\n"))


def _ascii_members(predicate: Callable[[str], bool]) -> bytes:
    return bytes(i for i in range(128) if predicate(chr(i)))


_SPACE_BYTES = _ascii_members(str.isspace)   # includes \x1c-\x1f, as str.isspace does
_ALPHA_BYTES = _ascii_members(str.isalpha)
_DIGIT_BYTES = _ascii_members(str.isdigit)
# ASCII byte -> b"s" (whitespace), b"a" (letter), b"d" (digit) or b"o": three classes in one pass
_CLASS_TABLE = bytes(0x73 if i in _SPACE_BYTES else 0x61 if i in _ALPHA_BYTES else 0x64 if i in _DIGIT_BYTES
                     else 0x6F for i in range(256))


def _count(text: str, predicate: Callable[[str], bool], ascii_members: bytes) -> int:
    """How many characters of ``text`` satisfy ``predicate`` (``str.isspace`` and friends).

    ASCII text is counted with ``bytes.translate`` (C speed); the member bytes are derived from
    the predicate itself, so both paths agree by construction.
    """
    if text.isascii():
        raw = text.encode("ascii")
        return len(raw) - len(raw.translate(None, ascii_members))
    return sum(map(predicate, text))


@functools.lru_cache(maxsize=8)
def _class_counts(text: str) -> tuple[int, int, int]:
    """(whitespace, letters, digits) in ``text``: what ``_count`` gives for each, in one pass
    over the ASCII bytes (shared by the composition rules, which look at the same block)."""
    if text.isascii():
        classes = text.encode("ascii").translate(_CLASS_TABLE)
        return classes.count(b"s"), classes.count(b"a"), classes.count(b"d")
    return (sum(map(str.isspace, text)), sum(map(str.isalpha, text)), sum(map(str.isdigit, text)))


def lacks_literals(text: str, literals: tuple[str, ...]) -> bool:
    """True only when an IGNORECASE pattern each of whose matches contains one of ``literals``
    (lower case) cannot match ``text``: a cheap screen before a slow case-insensitive scan.

    Decided only for ASCII text, where IGNORECASE is exactly lower-casing (Unicode case folds
    like U+017F "long s" cannot occur); for other text it answers False (scan it).
    """
    if not text.isascii():
        return False
    low = _lower(text)
    for lit in literals:
        if lit in low:
            return False
    return True


@_recent_texts_memo
def _lower(text: str) -> str:
    # the heuristics and the edu scorer screen the same blocks for several patterns (a chunk's
    # worth of recent texts: filter_stage runs each block over a chunk of rows in turn)
    return text.lower()


def _spaces(text: str) -> int:
    return _count(text, str.isspace, _SPACE_BYTES)


_SPACE_BUT_NEWLINE_BYTES = _SPACE_BYTES.replace(b"\n", b"")


def _drop_spaces_keep_newlines(text: str) -> str:
    """``text`` without its whitespace characters other than newlines."""
    if text.isascii():
        return text.encode("ascii").translate(None, _SPACE_BUT_NEWLINE_BYTES).decode("ascii")
    return _SPACE_BUT_NEWLINE.sub("", text)


class Rule:
    """Shared plumbing: parameter merge/validation and the drop reason. Subclasses define
    ``name``, ``defaults``, ``targets``, ``measure`` and ``violates``."""

    name: ClassVar[str] = ""
    targets: ClassVar[tuple[str, ...]] = ("code",)
    defaults: ClassVar[dict[str, Any]] = {}
    default_skip_languages: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, **params: Any) -> None:
        unknown = set(params) - set(self.defaults) - {"enabled", "skip_languages"}
        if unknown:
            raise ValueError(f"rule {self.name!r}: unknown parameters {sorted(unknown)}; "
                             f"known: {sorted(self.defaults)}")
        self.params = {**self.defaults, **params}
        self.enabled = bool(self.params.pop("enabled", True))
        self.skip_languages = frozenset(self.params.pop("skip_languages", self.default_skip_languages))
        self._reason = f"quality_{self.name}"

    @property
    def reason(self) -> str:
        return f"quality_{self.name}"

    def measure(self, text: str) -> float:  # pragma: no cover - every rule overrides
        raise NotImplementedError

    def violates(self, value: float, text: str) -> bool:  # pragma: no cover
        raise NotImplementedError

    def applies(self, text: str) -> bool:
        """A cheap necessary condition of ``violates`` (a size floor), tested before ``measure``
        so that a block too small to fail is never measured."""
        return True

    def check(self, text: str, language: str | None = None) -> str | None:
        """None (keep) or ``quality_<name>`` (drop) for one text."""
        if language is not None and language in self.skip_languages:
            return None
        if not self.applies(text):
            return None
        return self._reason if self.violates(self.measure(text), text) else None


class _MinCharsRule(Rule):
    """A rule whose ``violates`` requires ``len(text) >= min_chars``."""

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["min_chars"]


class _MinLinesRule(Rule):
    """A rule whose ``violates`` requires at least ``min_lines`` non-blank lines."""

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]


class MaxLineLength(Rule):
    """A line longer than ``max_chars``: minified code or inlined data (OpenCoder: 1000)."""

    name = "max_line_length"
    defaults = {"max_chars": 1000}

    def measure(self, text: str) -> float:
        return float(max(map(len, _lines(text))))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_chars"]

    def check(self, text: str, language: str | None = None) -> str | None:
        if language is not None and language in self.skip_languages:
            return None
        # no line is longer than the text
        if len(text) <= self.params["max_chars"]:
            return None
        return self._reason if float(max(map(len, _line_list(text)))) > self.params["max_chars"] else None


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
        n = len(_nonblank(text))
        return ((n >= self.params["min_lines_for_max"] and value > self.params["max_mean"])
                or (n >= self.params["min_lines_for_min"] and value < self.params["min_mean"]))

    def check(self, text: str, language: str | None = None) -> str | None:
        if language is not None and language in self.skip_languages:
            return None
        value = self.measure(text)
        # within both bounds: no line count can make it fail (the common case, no line split)
        if not (value > self.params["max_mean"] or value < self.params["min_mean"]):
            return None
        return self._reason if self.violates(value, text) else None


class AlphaFraction(_MinCharsRule):
    """Too few alphabetic characters among non-whitespace ones: tables of numbers or symbols
    (OpenCoder: < 0.5 for files; 0.35 here because the 1st percentile of 1,318 known-good Python
    solutions is already 0.51 and symbol-heavy C/C++ snippets run lower)."""

    name = "alpha_fraction"
    defaults = {"min_fraction": 0.35, "min_chars": 80}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        visible = len(text) - _spaces(text)
        # a letter is never whitespace, so letters among visible characters = all letters
        return _count(text, str.isalpha, _ALPHA_BYTES) / visible if visible else 1.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value < self.params["min_fraction"]

    def check(self, text: str, language: str | None = None) -> str | None:
        if (language is not None and language in self.skip_languages) or len(text) < self.params["min_chars"]:
            return None
        spaces, alpha, _ = _class_counts(text)  # the same counts as measure's
        visible = len(text) - spaces
        value = alpha / visible if visible else 1.0
        return self._reason if value < self.params["min_fraction"] else None


class DigitFraction(_MinCharsRule):
    """Too many digits: embedded numeric data rather than logic (OpenCoder: > 0.2)."""

    name = "digit_fraction"
    defaults = {"max_fraction": 0.2, "min_chars": 80}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        return _count(text, str.isdigit, _DIGIT_BYTES) / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value > self.params["max_fraction"]

    def check(self, text: str, language: str | None = None) -> str | None:
        if (language is not None and language in self.skip_languages) or len(text) < self.params["min_chars"]:
            return None
        value = _class_counts(text)[2] / len(text) if text else 0.0
        return self._reason if value > self.params["max_fraction"] else None


class WhitespaceFraction(_MinCharsRule):
    """Whitespace after each line's indentation over ``max_fraction``: padded or broken formatting
    (OpenCoder: > 0.5 of all characters). Leading indentation is not counted, because nested
    Python is legitimately half indentation (2.5% of MBPP/HumanEval solutions exceed 0.5)."""

    name = "whitespace_fraction"
    defaults = {"max_fraction": 0.5, "min_chars": 80}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        body = _INDENT.sub("", text)  # each line without its leading spaces and tabs
        return _spaces(body) / len(body) if body else 0.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value > self.params["max_fraction"]

    def check(self, text: str, language: str | None = None) -> str | None:
        if (language is not None and language in self.skip_languages) or len(text) < self.params["min_chars"]:
            return None
        # measure without building the body: the indentation removed is all spaces and tabs, so
        # the body has ``indent`` fewer characters and fewer whitespace characters than the text
        lines = _line_list(text)
        indent = len(text) - (len(lines) - 1) - sum(map(len, map(str.lstrip, lines, repeat(" \t"))))
        size = len(text) - indent
        value = (_class_counts(text)[0] - indent) / size if size else 0.0
        return self._reason if value > self.params["max_fraction"] else None


class AutoGenerated(Rule):
    """An auto-generated file header in the first lines ("Code generated ... DO NOT EDIT",
    "auto-generated by protoc"). Unlike OpenCoder, a bare "generate" does not count: answers
    define functions like ``generate_report``."""

    name = "autogenerated"
    defaults = {"head_chars": 400}
    _MARKERS = re.compile(
        r"auto[- ]?generated|automatically generated|generated automatically|"
        r"this (file|code|class) (is|was|has been) (auto[- ]?)?generated|do not (edit|modify)\b|"
        r"@generated\b|generated by (the )?(protoc|protocol buffer compiler|swagger|openapi|"
        r"sqlc|mockgen|stringer|thrift|jooq|django|alembic|antlr|bison|yacc|cython|pyuic|"
        r"wsdl|xsd|go generate|apollo|graphql-codegen|prisma)\b", re.IGNORECASE)

    _LITERALS = ("generated", "do not ")  # every alternative above contains one of them

    def measure(self, text: str) -> float:
        head = text.lstrip()[: self.params["head_chars"]]
        if lacks_literals(head, self._LITERALS):
            return 0.0
        return 1.0 if self._MARKERS.search(head) else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > 0


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


_B64_RUN = b"a" * 64


class EncodedData(Rule):
    """Base64 runs, hex byte lists or ``\\uXXXX`` runs: one longer than ``max_run_chars`` or all
    together over ``max_fraction`` of the block (embedded binaries, fonts, keys)."""

    name = "encoded_data"
    defaults = {"max_run_chars": 1024, "max_fraction": 0.5, "min_chars": 64}
    _PATTERNS = (
        re.compile(r"[A-Za-z0-9+/]{64,}={0,2}"),
        re.compile(r"(?:(?:0x|\\x)[0-9a-fA-F]{2}[,\s]*){16,}"),
        re.compile(r"(?:\\u[0-9a-fA-F]{4}){8,}"),
    )

    # bytes of the base64 alphabet -> b"a", every other byte -> b" " (UTF-8 bytes of non-ASCII
    # characters are >= 0x80, outside the alphabet, so runs are neither joined nor split)
    _B64_TABLE = bytes(0x61 if chr(i) in _B64_ALPHABET else 0x20 for i in range(256))

    def _runs(self, text: str) -> list[int]:
        # Each pattern has a cheap necessary condition; most blocks meet none of them.
        b64, hexes, escapes = self._PATTERNS
        runs: list[int] = []
        raw = text.encode("utf-8", "surrogatepass")
        if _B64_RUN in raw.translate(self._B64_TABLE):
            runs += [len(m.group(0)) for m in b64.finditer(text)]
        backslash = "\\" in text  # one fast single-character scan before the two escape screens
        # "0x" in the text needs "0x" in the lower-cased text (memoized: HexWords, the placeholder
        # screen and the edu scorer ask for it too), which is mostly absent
        zero_x = ("0x" in _lower(text) and "0x" in text) if text.isascii() else "0x" in text
        if zero_x or (backslash and "\\x" in text):
            runs += [len(m.group(0)) for m in hexes.finditer(text)]
        if backslash and "\\u" in text:
            runs += [len(m.group(0)) for m in escapes.finditer(text)]
        return runs

    def measure(self, text: str) -> float:
        return sum(self._runs(text)) / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return self._violates_runs(self._runs(text), text) if len(text) >= self.params["min_chars"] else False

    def _violates_runs(self, runs: list[int], text: str) -> bool:
        value = sum(runs) / len(text) if text else 0.0
        return value > self.params["max_fraction"] or any(r > self.params["max_run_chars"] for r in runs)

    def check(self, text: str, language: str | None = None) -> str | None:
        # one scan for both the fraction and the longest run (measure + violates would scan twice)
        if (language is not None and language in self.skip_languages) or len(text) < self.params["min_chars"]:
            return None
        return self.reason if self._violates_runs(self._runs(text), text) else None


class HexWords(_MinCharsRule):
    """Characters inside ``0x..`` literals over ``max_fraction`` (lookup tables, firmware dumps;
    OpenCoder: > 0.4)."""

    name = "hex_words"
    defaults = {"max_fraction": 0.4, "min_chars": 80}
    _HEX = re.compile(r"\b0[xX][0-9a-fA-F]+\b")

    def measure(self, text: str) -> float:
        # every match starts with "0x" or "0X"; on ASCII text that is "0x" in the lower-cased
        # text, which the placeholder screen and the edu scorer ask for anyway (memoized)
        if ("0x" not in _lower(text)) if text.isascii() else ("0x" not in text and "0X" not in text):
            return 0.0
        return sum(len(m) for m in self._HEX.findall(text)) / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value > self.params["max_fraction"]


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


@functools.lru_cache(maxsize=8)
def _long_run(word_chars: int) -> re.Pattern[str]:
    return re.compile(r"\S{%d,}" % (word_chars + 1))


def _string_literals(pattern: re.Pattern[str], text: str) -> Iterator[str]:
    """The contents of ``pattern.finditer(text)`` (LongStringWords._STRING: every match starts
    with a quote), trying a match only where a quote is instead of at every character."""
    pos, n = 0, len(text)
    while True:
        dq, sq = text.find('"', pos), text.find("'", pos)
        q = min(dq, sq) if dq >= 0 and sq >= 0 else max(dq, sq)
        if q < 0:
            return
        m = pattern.match(text, q)
        if m is None:
            pos = q + 1
            continue
        yield next(g for g in m.groups() if g is not None)
        pos = m.end()  # finditer resumes where a (never empty) match ends
        if pos >= n:
            return


class LongStringWords(_MinCharsRule):
    """Characters of >20-char words inside string literals (URLs excepted) over ``max_fraction``
    of the block: blobs pasted into strings (OpenCoder: > 0.4)."""

    name = "long_string_words"
    defaults = {"max_fraction": 0.4, "min_chars": 80, "word_chars": 20}
    _STRING = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'|"([^"\n]*)"|\'([^\'\n]*)\'', re.DOTALL)

    def measure(self, text: str) -> float:
        if not text:
            return 0.0
        # a long word inside a literal is a run of > word_chars non-space characters of the text
        if not _long_run(self.params["word_chars"]).search(text):
            return 0.0
        long_chars = 0
        for literal in _string_literals(self._STRING, text):
            long_chars += sum(len(w) for w in literal.split()
                              if len(w) > self.params["word_chars"] and "://" not in w)
        return long_chars / len(text)

    def violates(self, value: float, text: str) -> bool:
        return len(text) >= self.params["min_chars"] and value > self.params["max_fraction"]


_PHRASE_LITERALS = ("here", " of ", "implement", "...")


class PlaceholderComments(Rule):
    """Comment lines that leave the work undone ("TODO", "FIXME", "your code here",
    "rest of the code") over ``max_fraction`` of lines (OpenCoder: > 0.01, i.e. nearly any):
    an answer that teaches the model to stop early."""

    name = "placeholder_comments"
    defaults = {"max_fraction": 0.01}
    _PHRASES = re.compile(
        r"your (code|logic|implementation) (goes )?here|(rest|remainder) of (the|your) "
        r"(code|implementation)|implement (this|me)\b|\.\.\. ?(existing|other|more|remaining) "
        r"(code|methods|logic)|add (your|more) (code|logic) here", re.IGNORECASE)
    _PHRASES_LOWER = re.compile(_PHRASES.pattern.lower())  # case-sensitive twin for lower-cased ASCII
    _MARKERS = re.compile(r"\b(TODO|FIXME|XXX)\b")   # upper case only: "todo" is a common noun
    _INLINE = re.compile(r"(?:^|\s)(#|//|/\*|--)")

    @classmethod
    def _may_match(cls, text: str) -> bool:
        """False only when neither pattern can match anywhere in ``text`` (memoized: the edu
        scorer's penalty asks again about the blocks the heuristics just screened)."""
        return _placeholder_may_match(text)

    @classmethod
    def _may_match_uncached(cls, text: str) -> bool:
        if "TODO" in text or "FIXME" in text or "XXX" in text:
            return True
        if lacks_literals(text, _PHRASE_LITERALS):  # every phrase alternative holds one of them
            return False
        if text.isascii():  # IGNORECASE is lower-casing on ASCII text (see lacks_literals)
            return cls._PHRASES_LOWER.search(_lower(text)) is not None
        return cls._PHRASES.search(text) is not None

    @staticmethod
    def _comment_part(line: str) -> str:
        if _COMMENT_LINE.match(line):
            return line
        m = PlaceholderComments._INLINE.search(line)
        return line[m.end():] if m else ""

    def measure(self, text: str) -> float:
        # A hit needs a marker or phrase inside one line's comment part; neither pattern can span
        # a newline and the text around a comment part never changes a word boundary, so a text
        # with no match anywhere has no hit (the common case, decided in two scans).
        if not self._may_match(text):
            return 0.0
        lines = _nonblank(text)
        if not lines:
            return 0.0
        hits = 0
        for ln in lines:
            comment = self._comment_part(ln)
            if comment and (self._MARKERS.search(comment) or self._PHRASES.search(comment)):
                hits += 1
        return hits / len(lines)

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"]


@_recent_texts_memo
def _placeholder_may_match(text: str) -> bool:
    return PlaceholderComments._may_match_uncached(text)


class CommentFraction(_MinLinesRule):
    """Comment lines over ``max_fraction`` of a block of at least ``min_lines``: commented-out
    code or prose dressed as code (OpenCoder: > 0.8 of characters)."""

    name = "comment_fraction"
    defaults = {"max_fraction": 0.8, "min_lines": 5}
    default_skip_languages = DATA_LANGUAGES

    def measure(self, text: str) -> float:
        lines = _nonblank(text)
        return sum(1 for ln in lines if _COMMENT_LINE.match(ln)) / len(lines) if lines else 0.0

    def violates(self, value: float, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"] and value > self.params["max_fraction"]

    def check(self, text: str, language: str | None = None) -> str | None:
        if language is not None and language in self.skip_languages:
            return None
        lines = _nonblank(text)
        if len(lines) < self.params["min_lines"]:
            return None
        if not lines:
            return self._reason if 0.0 > self.params["max_fraction"] else None
        # measure's count, matching only lines whose first non-space character can start a match
        # (``\\s`` and str.lstrip skip the same characters)
        hits = sum(1 for ln in lines if ln.lstrip()[0] in _COMMENT_START_CHARS and _COMMENT_LINE.match(ln))
        return self._reason if hits / len(lines) > self.params["max_fraction"] else None


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

    def check(self, text: str, language: str | None = None) -> str | None:
        if language is not None and language in self.skip_languages:
            return None
        # the stripped text's first and last characters are two non-whitespace characters
        if self.params["min_chars"] <= 2 and len(text.strip()) >= 2:
            return None
        return self._reason if self.measure(text) < self.params["min_chars"] else None


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

    def check(self, text: str, language: str | None = None) -> str | None:
        if language is not None and language in self.skip_languages:
            return None
        if len(text.split()) < self.params["min_words"]:  # violates' first condition, before measuring
            return None
        return self._reason if self.measure(text) > self.params["max_fraction"] else None


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

    def check(self, text: str, language: str | None = None) -> str | None:
        if language is not None and language in self.skip_languages:
            return None
        words = text.split()  # one split for violates' word count and the measure
        if len(words) < self.params["min_words"]:
            return None
        value = sum(len(w) for w in words) / len(words) if words else 0.0
        return None if self.params["min_mean"] <= value <= self.params["max_mean"] else self._reason


RULES: tuple[type[Rule], ...] = (
    TooShort, ReplacementChars, MaxLineLength, MeanLineLength, AlphaFraction, DigitFraction,
    WhitespaceFraction, AutoGenerated, EncodedData, HexWords, DuplicateLines, LongStringWords,
    PlaceholderComments, CommentFraction, RepeatedNgrams, MeanWordLength,
)
RULES_BY_NAME: dict[str, type[Rule]] = {r.name: r for r in RULES}


@dataclass
class HeuristicStats:
    """``dropped``: rows by the first failing rule (adds up to rows dropped); ``flagged``: rows
    each rule would drop on its own (what a threshold change would affect)."""

    rows_checked: int = 0
    dropped: Counter = field(default_factory=Counter)
    flagged: Counter = field(default_factory=Counter)

    def merge(self, other: "HeuristicStats") -> "HeuristicStats":
        self.rows_checked += other.rows_checked
        self.dropped.update(other.dropped)
        self.flagged.update(other.flagged)
        return self

    def as_metadata(self) -> dict:
        return {"rows_checked": self.rows_checked, "rows_dropped": sum(self.dropped.values()),
                "dropped_by_rule": dict(sorted(self.dropped.items())),
                "flagged_by_rule": dict(sorted(self.flagged.items()))}


class HeuristicFilter:
    """All enabled rules over a row. ``config`` maps rule name -> parameter overrides, e.g.
    ``{"max_line_length": {"max_chars": 2000}, "placeholder_comments": {"enabled": False}}``."""

    def __init__(self, config: dict[str, dict[str, Any]] | None = None) -> None:
        config = config or {}
        unknown = set(config) - set(RULES_BY_NAME)
        if unknown:
            raise ValueError(f"unknown quality rules {sorted(unknown)}; known: {sorted(RULES_BY_NAME)}")
        rules = [cls(**(config.get(cls.name) or {})) for cls in RULES]
        self.rules = [r for r in rules if r.enabled]
        # per target, once: (rule index, bound check) of the rules that look at it
        def by_target(target: str) -> list[tuple[int, Callable[..., str | None]]]:
            return [(i, r.check) for i, r in enumerate(self.rules) if target in r.targets]

        self._row_rules, self._answer_rules = by_target("row"), by_target("answer")
        self._prose_rules, self._code_rules = by_target("prose"), by_target("code")
        self._reasons = [r.reason for r in self.rules]

    def violations(self, row: dict) -> list[str]:
        """Every rule that fails on the row, in rule order (deduplicated)."""
        found: set[int] = set()   # indices into self.rules
        answers = answer_texts(row)
        if self._row_rules:
            joined = "\n".join(answers)
            found.update(i for i, check in self._row_rules if check(joined))
        # A rule is found when its check fails on any of its texts; checks are pure, so the
        # texts can be visited target by target (a found rule is not checked again).
        for answer in answers:
            parts = answer_parts(answer)  # shared with AST validity and the edu scorer
            for i, check in self._answer_rules:
                if i not in found and check(answer):
                    found.add(i)
            prose = parts.prose
            if prose.strip():
                for i, check in self._prose_rules:
                    if i not in found and check(prose):
                        found.add(i)
            for b in parts.blocks:
                code, lang = b.code, b.language or "unknown"
                for i, check in self._code_rules:
                    if i not in found and check(code, lang):
                        found.add(i)
        return [self._reasons[i] for i in sorted(found)]

    def check_row(self, row: dict, stats: HeuristicStats | None = None) -> str | None:
        """None (keep) or the first failing rule's ``quality_<name>``; all failures are counted
        in ``stats.flagged``."""
        hits = self.violations(row)
        if stats is not None:
            stats.rows_checked += 1
            stats.flagged.update(hits)
            if hits:
                stats.dropped[hits[0]] += 1
        return hits[0] if hits else None
