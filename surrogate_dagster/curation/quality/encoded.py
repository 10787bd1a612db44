"""Encoded-data rules: base64/hex/escape runs, ``0x`` literals and long words inside strings."""

from __future__ import annotations

import functools
import re
from typing import Iterator

from .rule_base import _lower, _MinCharsRule


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


_B64_RUN = b"a" * 64


class EncodedData(_MinCharsRule):
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

    def _runs(self, text: str) -> tuple[int, ...]:
        return _encoded_runs(text)

    @classmethod
    def _runs_uncached(cls, text: str) -> tuple[int, ...]:
        # Each pattern has a cheap necessary condition; most blocks meet none of them.
        b64, hexes, escapes = cls._PATTERNS
        runs: list[int] = []
        raw = text.encode("utf-8", "surrogatepass")
        if _B64_RUN in raw.translate(cls._B64_TABLE):
            runs += [len(m.group(0)) for m in b64.finditer(text)]
        backslash = "\\" in text  # one fast single-character scan before the two escape screens
        # "0x" in the text needs "0x" in the lower-cased text (memoized: HexWords, the placeholder
        # screen and the edu scorer ask for it too), which is mostly absent
        zero_x = ("0x" in _lower(text) and "0x" in text) if text.isascii() else "0x" in text
        if zero_x or (backslash and "\\x" in text):
            runs += [len(m.group(0)) for m in hexes.finditer(text)]
        if backslash and "\\u" in text:
            runs += [len(m.group(0)) for m in escapes.finditer(text)]
        return tuple(runs)

    def measure(self, text: str) -> float:
        return sum(self._runs(text)) / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        # the longest run: ``_runs`` is memoized on the text, so this is measure's scan
        if len(text) < self.params["min_chars"]:
            return False
        return value > self.params["max_fraction"] or any(r > self.params["max_run_chars"] for r in self._runs(text))


@functools.lru_cache(maxsize=8)
def _encoded_runs(text: str) -> tuple[int, ...]:
    # measure and violates ask about the same block one after the other
    return EncodedData._runs_uncached(text)


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
