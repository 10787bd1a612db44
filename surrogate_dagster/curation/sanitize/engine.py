"""The Sanitizer: run detectors, resolve overlaps, substitute consistent placeholders.

Idempotence is by construction: placeholders match no detector, spans touching a placeholder
are dropped, and when a pass changed the text the detectors run again on the result (at most
`max_rounds`), so `sanitize(sanitize(x).text)` finds nothing. A replacement can enable a new match
(a token glued to a redacted one, NER context): later rounds catch those, scanning only windows
around the new placeholders, since no detector looks further than ~64 characters for context.
A document with no finding costs one pass.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field

from .detectors import (Candidate, detect_assignments, detect_credentials_in_context, detect_high_entropy_strings,
                        detect_private_keys)
from .encoded import detect_base64
from .ner import DEFAULT_NER_MODEL, NERBackend, detect_ner, load_ner
from .patterns import CATEGORIES, RULES, Rule
from .pii import detect_emails, detect_ids, detect_ips, detect_phones
from .placeholders import PlaceholderAllocator, placeholder_spans
from .validators import shannon_entropy

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_CONTEXT_DETECTORS = (detect_private_keys, detect_assignments, detect_credentials_in_context,
                      detect_high_entropy_strings)
_PII_DETECTORS = (detect_emails, detect_phones, detect_ips, detect_ids)


@dataclass(frozen=True)
class SanitizerConfig:
    """What to detect and how to name placeholders.

    `ner_model`: a spec for `ner.load_ner` (`spacy:<pkg>` or `hf:<model>`), or None for no NER.
    `hmac_key_env`: NAME of an environment variable holding a key; when set, placeholders are
    keyed digests, identical across documents for the same value. The key is read once and never
    stored in results or logs.
    """

    categories: tuple[str, ...] = CATEGORIES
    ner_model: str | None = DEFAULT_NER_MODEL
    hmac_key_env: str | None = None
    scan_base64: bool = True
    max_rounds: int = 3


@dataclass(frozen=True)
class Finding:
    """One replaced span. Offsets are in the text the pass scanned (round 0: the input).
    The secret value itself is never kept."""

    category: str
    rule: str
    placeholder: str
    start: int
    end: int
    round: int = 0


@dataclass
class SanitizeResult:
    """Sanitized text, per-category counts (occurrences) and the findings."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.findings)


class Sanitizer:
    """Secrets + PII sanitizer. `sanitize(text) -> SanitizeResult`."""

    def __init__(self, config: SanitizerConfig | None = None, ner: NERBackend | None = None) -> None:
        self.config = config or SanitizerConfig()
        unknown = set(self.config.categories) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown sanitizer categories: {sorted(unknown)}")
        self._cats = frozenset(self.config.categories)
        self._rules: tuple[Rule, ...] = tuple(r for r in RULES if r.category in self._cats)
        self._keywords = frozenset(k for r in self._rules for k in r.keywords)
        self._key: bytes | None = None
        if self.config.hmac_key_env:
            raw = os.environ.get(self.config.hmac_key_env)
            if not raw:
                raise ValueError(f"environment variable {self.config.hmac_key_env} (placeholder HMAC key) is not set")
            self._key = raw.encode()
        wants_ner = bool(self._cats & {"person_names", "addresses"})
        self._ner = ner if ner is not None else (load_ner(self.config.ner_model)
                                                 if wants_ner and self.config.ner_model else None)

    # ------------------------------------------------------------------ detection
    def _scan_plain(self, text: str, depth: int = 0) -> list[Candidate]:
        """All non-NER candidates in `text` (no overlap resolution)."""
        lower = text.lower()
        if len(lower) != len(text):  # a few non-ASCII characters lower-case to two: keep offsets
            lower = text.translate(_ASCII_LOWER)
        cands: list[Candidate] = []
        present = {k for k in self._keywords if k in lower}  # one scan per distinct keyword
        for rule in self._rules:
            if rule.keywords and present.isdisjoint(rule.keywords):
                continue
            for m in rule.regex.finditer(lower if rule.on_lower else text):
                value = text[m.start(rule.group):m.end(rule.group)]
                if not value:
                    continue
                if rule.entropy and shannon_entropy(value) < rule.entropy:
                    continue
                if rule.validate is not None and not rule.validate(value):
                    continue
                cands.append(Candidate(m.start(rule.group), m.end(rule.group), rule.category, rule.tag, rule.id, 5))
        for det in _CONTEXT_DETECTORS + _PII_DETECTORS:
            cands.extend(c for c in det(text, lower) if c.category in self._cats)
        if self.config.scan_base64 and depth < 2:
            claimed = _resolve(cands)  # non-overlapping, sorted: one bisect answers "covered?"
            c_starts = [c.start for c in claimed]

            def covered(s: int, e: int) -> bool:
                i = bisect.bisect_left(c_starts, e)
                return i > 0 and claimed[i - 1].end > s

            cands.extend(detect_base64(text, covered, lambda t, d: _resolve(self._scan_plain(t, d)), depth))
        return cands

    def detect(self, text: str) -> list[Candidate]:
        """Non-overlapping candidates for `text`, placeholders excluded, sorted by start."""
        cands = self._scan_plain(text)
        if self._ner is not None:
            cands.extend(c for c in detect_ner(text, self._ner) if c.category in self._cats)
        ph = placeholder_spans(text)
        if ph:
            ph_starts = [s for s, _ in ph]

            def touches(c: Candidate) -> bool:
                i = bisect.bisect_right(ph_starts, c.end)
                return any(s < c.end and e > c.start for s, e in ph[max(0, i - 4):i])

            cands = [c for c in cands if not touches(c)]
        return _resolve(cands)

    def _detect_near(self, text: str, zones: list[tuple[int, int]]) -> list[Candidate]:
        """Candidates within `_ZONE` of the given spans, found by scanning `_WINDOW`-padded windows.

        Every detector decides from at most ~64 characters of context around a match (long-range
        structures force a full scan instead), so text farther than that from a replacement
        yields exactly what the previous round saw there: nothing left to find."""
        windows: list[list[int]] = []
        for s, e in zones:
            ws, we = max(0, s - _WINDOW), min(len(text), e + _WINDOW)
            if windows and ws <= windows[-1][1]:
                windows[-1][1] = max(windows[-1][1], we)
            else:
                windows.append([ws, we])
        zs = [s for s, _ in zones]
        out: list[Candidate] = []
        for ws, we in windows:
            for c in self.detect(text[ws:we]):
                c = c._replace(start=c.start + ws, end=c.end + ws)
                i = bisect.bisect_left(zs, c.end + _ZONE)
                if i > 0 and zones[i - 1][1] + _ZONE > c.start:
                    out.append(c)
        return _resolve(out)

    # ------------------------------------------------------------------ substitution
    def sanitize(self, text: str) -> SanitizeResult:
        """Replace every finding with its placeholder; see the module docstring for idempotence."""
        if not isinstance(text, str):
            raise TypeError(f"sanitize() needs str, got {type(text).__name__}")
        alloc = PlaceholderAllocator(text, self._key)
        counts = {c: 0 for c in self.config.categories}
        findings: list[Finding] = []
        cur = text
        zones: list[tuple[int, int]] | None = None  # None: scan everything
        for rnd in range(self.config.max_rounds):
            cands = self.detect(cur) if zones is None else self._detect_near(cur, zones)
            if not cands:
                break
            parts, pos, out_len, new_ph = [], 0, 0, []
            for c in cands:
                ph = alloc.get(c.tag, cur[c.start:c.end])
                parts.append(cur[pos:c.start])
                out_len += c.start - pos
                new_ph.append((out_len, out_len + len(ph)))
                parts.append(ph)
                out_len += len(ph)
                pos = c.end
                counts[c.category] += 1
                findings.append(Finding(c.category, c.rule, ph, c.start, c.end, rnd))
            parts.append(cur[pos:])
            cur = "".join(parts)
            # Later rounds only look near the new placeholders (module docstring), unless NER is on
            # (sentence-level context) or the text has long-range structures (PEM blocks, long
            # base64 runs) that a window could cut.
            zones = None if self._ner is not None or _long_range(cur) else new_ph
        return SanitizeResult(cur, counts, findings)


_WINDOW = 512   # context scanned around a new placeholder in later rounds
_ZONE = 64      # a later-round finding must come this close to a new placeholder
_NON_B64 = re.compile(r"[^A-Za-z0-9+/]+")


def _long_range(text: str) -> bool:
    """PEM/PuTTY blocks or base64 runs of >= 400 chars: structures a window could cut."""
    if "-----BEGIN" in text or "PuTTY-User-Key" in text:
        return True
    return len(text) >= 400 and max(map(len, _NON_B64.split(text))) >= 400


def _resolve(cands: list[Candidate]) -> list[Candidate]:
    """Greedy overlap resolution: higher priority, then longer span, wins; result sorted by start."""
    if len(cands) <= 1:
        return list(cands)
    chosen: list[Candidate] = []
    starts: list[int] = []
    for c in sorted(cands, key=lambda c: (-c.priority, -(c.end - c.start), c.start)):
        i = bisect.bisect_left(starts, c.start)
        if i > 0 and chosen[i - 1].end > c.start:
            continue
        if i < len(chosen) and chosen[i].start < c.end:
            continue
        starts.insert(i, c.start)
        chosen.insert(i, c)
    return chosen
