"""What every heuristic rule shares: the ``Rule`` block, the text targets it reads, and the
character-class counts and per-text memos the rules (and the edu scorer) reuse.

A rule is one curation block (``curation.blocks``): ``decide(row)`` drops the row with
``quality_<name>`` when the rule fails on any of the row's texts it targets:

- ``"code"``: every fenced block of every answer (with its language, ``"unknown"`` when
  untagged and unguessed: most often program output);
- ``"prose"``: each answer outside its fences (when not blank);
- ``"answer"``: each whole answer;
- ``"row"``: all answers of the row joined by newlines.

The answers are ``code_blocks.answer_texts`` (SFT assistant turns, DPO ``chosen``) and their
parts come from the shared ``code_blocks.answer_parts`` memo. A rule's logic is written once:
``measure(text) -> float`` and ``violates(value, text) -> bool``, after ``applies(text)``, a
cheap necessary condition of ``violates`` (a size floor) that spares a measure on texts too small
to fail. Speed comes from inside the measures (character classes counted with
``bytes.translate`` on ASCII text, memoized line splits), never from a second copy of a rule.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, ClassVar, Iterator

from ..code_blocks import answer_parts, answer_texts

# Blocks that hold data or program output rather than code: exempt from composition rules.
# Untagged blocks whose language could not be guessed are passed as "unknown": those are most often
# program output ("Output:\n```\n[1, 2, 3]\n```"), so they are exempt too.
DATA_LANGUAGES = frozenset({"json", "jsonc", "yaml", "toml", "csv", "text", "console", "diff",
                            "xml", "ini", "pycon", "sql", "markdown", "html", "latex", "mermaid",
                            "unknown"})

_SPACE_BUT_NEWLINE = re.compile(r"[^\S\n]+")  # \s is str.isspace, as str.split() uses
_INDENT = re.compile(r"^[ \t]+", re.M)  # "^" with re.M: text start and after each "\n"
_COMMENT_LINE = re.compile(r"^\s*(#(?!include|define|if|pragma|!)|//|/\*|\*(?!\*)|--|<!--|;|%)")
_COMMENT_START_CHARS = "#/*-<;%"  # the first character (after whitespace) of every match


def _recent_texts_memo(func: Callable[[str], Any]) -> Callable[[str], Any]:
    """Memoize ``func`` over the last 1024 texts of at most 20,000 characters: enough to carry a
    chunk's blocks from the heuristics to the edu scorer (a chunk is decided block by block),
    while a few huge texts cannot pin much memory (longer ones are computed every time)."""
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
    # worth of recent texts: the pool executor runs each block over a chunk of rows in turn)
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
    """One heuristic rule as a curation block. Subclasses define ``name``, ``defaults``,
    ``targets``, ``measure`` and ``violates`` (and ``applies`` where a size floor exists)."""

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
        self.reason = f"quality_{self.name}"

    def measure(self, text: str) -> float:  # pragma: no cover - every rule overrides
        raise NotImplementedError

    def violates(self, value: float, text: str) -> bool:  # pragma: no cover
        raise NotImplementedError

    def applies(self, text: str) -> bool:
        """A cheap necessary condition of ``violates`` (a size floor), tested before ``measure``
        so that a text too small to fail is never measured."""
        return True

    def check(self, text: str, language: str | None = None) -> str | None:
        """None (keep) or ``quality_<name>`` (drop) for one text of the rule's targets."""
        if language is not None and language in self.skip_languages:
            return None
        if not self.applies(text):
            return None
        return self.reason if self.violates(self.measure(text), text) else None

    def decide(self, row: dict) -> str | None:
        """None (keep) or ``quality_<name>`` when the rule fails on any of the row's targets."""
        for text, language in row_targets(row, self.targets):
            if self.check(text, language):
                return self.reason
        return None


def row_targets(row: dict, targets: tuple[str, ...]) -> Iterator[tuple[str, str | None]]:
    """(text, language) for each of the row's texts a rule with ``targets`` reads (module
    docstring); the language is None except for code blocks."""
    answers = answer_texts(row)
    if "row" in targets:
        yield "\n".join(answers), None
    if not ("answer" in targets or "prose" in targets or "code" in targets):
        return
    for answer in answers:
        if "answer" in targets:
            yield answer, None
        if "prose" in targets or "code" in targets:
            parts = answer_parts(answer)
            if "prose" in targets and parts.prose.strip():
                yield parts.prose, None
            if "code" in targets:
                for b in parts.blocks:
                    yield b.code, b.language or "unknown"


class _MinCharsRule(Rule):
    """A rule whose ``violates`` requires ``len(text) >= min_chars``."""

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["min_chars"]


class _MinLinesRule(Rule):
    """A rule whose ``violates`` requires at least ``min_lines`` non-blank lines."""

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]
