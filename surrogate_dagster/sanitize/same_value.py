"""Redaction by value: the other occurrences of a value already judged secret.

A rule decides at one position (a keyword before the value, a prefix, a container); the same
value often stands again where no rule could decide (`token = '...'` then `| '...'` on the next
line, a tool call's argument echoed in the tool's result). `KnownSecrets` holds the values the
detectors judged secret in a document or a row and finds every other occurrence of each, in
the forms a document carries them in:

- the value itself;
- JSON-escaped (once and twice: a value inside a tool call's `arguments` string) and
  percent-encoded (a password in a URL or a form body);
- base64 (standard and URL-safe, with or without padding) and hex of the value;
- a base64 or hex run whose decoded text holds the value (`user:secret` in a Basic header or a
  docker `auth` field) -- the runs the sanitizer's base64/hex scan already decodes.

Short values match only as a whole token (no letter or digit glued on either side), so a
six-character password does not hit inside a longer word; encoded forms always need their
alphabet's boundary. Values too likely to be ordinary text elsewhere are kept to the span their
rule matched: under `MIN_LEN` characters, digits-only under 10 (ports, numbers), and a single
word of letters under 12 (`production`: the word recurs far more often than the password).
"""
from __future__ import annotations

import base64
import bisect
import json
import re
from urllib.parse import quote, quote_plus

from .detectors import Candidate
from .encoded import B64_RUN, HEX_RUN, decode_hex_text
from .placeholders import placeholder_spans
from .validators import decode_b64_text

MIN_LEN = 6
_WHOLE_TOKEN_BELOW = 12  # raw/escaped forms shorter than this must not be glued to letters or digits
_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+")
_ALNUM = re.compile(r"[A-Za-z0-9]")
_B64_CH = re.compile(r"[A-Za-z0-9+/=_-]")
_HEX_CH = re.compile(r"[0-9A-Fa-f]")


def propagates(value: str) -> bool:
    """Whether other occurrences of `value` are redacted too (module docstring)."""
    v = value.strip()
    if len(v) < MIN_LEN or (v.isdigit() and len(v) < 10):
        return False
    return not (len(v) < 12 and _WORD.fullmatch(v))


def _forms(value: str) -> list[tuple[str, str]]:
    """(form, kind) pairs: kind `raw` (the value and its text escapes), `b64` or `hex`."""
    out = {value: "raw"}
    esc = json.dumps(value, ensure_ascii=False)[1:-1]
    out.setdefault(esc, "raw")
    out.setdefault(json.dumps(esc, ensure_ascii=False)[1:-1], "raw")
    out.setdefault(json.dumps(value)[1:-1], "raw")  # with \\uXXXX escapes
    out.setdefault(quote(value, safe=""), "raw")
    out.setdefault(quote_plus(value, safe=""), "raw")
    raw = value.encode("utf-8", "surrogatepass")
    for enc in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        out.setdefault(enc, "b64")
        out.setdefault(enc.rstrip("="), "b64")
    out.setdefault(raw.hex(), "hex")
    out.setdefault(raw.hex().upper(), "hex")
    return list(out.items())


class KnownSecrets:
    """The secret values of one document or row, and where else they occur."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[str, str, str]] = {}  # value -> (category, tag, value as found)
        self._form: dict[str, tuple[str, str]] = {}    # form -> (value, kind)
        self.version = 0  # grows with every value added (a row re-scans texts seen at an older one)

    def __bool__(self) -> bool:
        return bool(self._values)

    def add(self, value: str, category: str, tag: str) -> None:
        """Learn `value` (as the document holds it: a value matched inside an escaped JSON string
        is learnt unescaped as well, one and two levels, under the same placeholder)."""
        as_found = value
        if tag.endswith("CREDENTIALS") and ":" in value:
            # `user:password` (curl -u, Basic auth): the password alone is the secret elsewhere
            self.add(value.partition(":")[2].strip("\"'"), category, "SECRET_PASSWORD")
        for _ in range(3):
            if value not in self._values and propagates(value):
                self._values[value] = (category, tag, as_found)
                for form, kind in _forms(value):
                    self._form.setdefault(form, (value, kind))
                self.version += 1
            if "\\" not in value:
                return
            try:
                value = json.loads(f'"{value}"')
            except ValueError:
                return

    def _occurrences(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, form) of every form's occurrences, leftmost first, the longest form at a
        start, none overlapping an earlier one. One `str.find` scan per form (in C): a document
        holds a few dozen forms at most, and a big alternation would cost more to compile."""
        hits = []
        for form in self._form:
            i = text.find(form)
            while i >= 0:
                hits.append((i, i + len(form), form))
                i = text.find(form, i + 1)
        hits.sort(key=lambda h: (h[0], -h[1]))
        out, last = [], -1
        for h in hits:
            if h[0] >= last:
                out.append(h)
                last = h[1]
        return out

    def occurs_in(self, text: str) -> bool:
        """Whether any form of any known value (or a run decoding to one) may occur in `text`."""
        return bool(self._values) and (any(f in text for f in self._form)
                                       or any(True for _ in self._decoded_runs(text, [])))

    def candidates(self, text: str, taken: list[Candidate]) -> list[tuple[Candidate, str]]:
        """(candidate, the value its placeholder is allocated for) for every occurrence in `text` of a known value's form that neither
        overlaps `taken` (this round's findings) nor touches a placeholder."""
        if not self._values:
            return []
        spans = [(c.start, c.end) for c in taken] + placeholder_spans(text)
        blocked = _Spans(spans)
        found: list[tuple[Candidate, str]] = []
        for s, e, form in self._occurrences(text):
            value, kind = self._form[form]
            edge = _ALNUM if kind == "raw" else _B64_CH if kind == "b64" else _HEX_CH
            if kind != "raw" or e - s < _WHOLE_TOKEN_BELOW:
                if (s and edge.match(text, s - 1)) or edge.match(text, e):
                    continue
            if blocked.overlaps(s, e):
                continue
            category, tag, as_found = self._values[value]
            found.append((Candidate(s, e, category, tag, "same_value", 3), as_found))
        for s, e, value, enc in self._decoded_runs(text, spans + [(c.start, c.end) for c, _ in found]):
            category, tag, _ = self._values[value]
            run = text[s:e]
            found.append((Candidate(s, e, category, f"{enc}_{tag}", "same_value", 3), run))
        return found

    def _decoded_runs(self, text: str, blocked: list[tuple[int, int]]):
        """(start, end, value, encoding) for base64/hex runs whose decoded text holds a known value."""
        spans = _Spans(blocked)
        for rx, decode, enc in ((B64_RUN, decode_b64_text, "BASE64"), (HEX_RUN, decode_hex_text, "HEX")):
            for m in rx.finditer(text):
                if spans.overlaps(m.start(), m.end()) or m.group(0) in self._form:
                    continue
                decoded = decode(m.group(0))
                if decoded is None:
                    continue
                hit = next((v for v in self._values if v in decoded), None)
                if hit is not None:
                    yield m.start(), m.end(), hit, enc


class _Spans:
    """Sorted spans answering "does [s, e) overlap one?" with one bisect (prefix maximum of ends)."""

    def __init__(self, spans) -> None:
        spans = sorted(spans)
        self._starts = [a for a, _ in spans]
        self._max_end: list[int] = []
        top = -1
        for _, b in spans:
            top = max(top, b)
            self._max_end.append(top)

    def overlaps(self, s: int, e: int) -> bool:
        i = bisect.bisect_left(self._starts, e)
        return i > 0 and self._max_end[i - 1] > s
