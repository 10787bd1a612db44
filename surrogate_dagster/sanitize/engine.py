"""The Sanitizer: run detectors, resolve overlaps, substitute consistent placeholders.

Idempotence is by construction: placeholders match no detector, spans touching a placeholder
are dropped, and when a pass changed the text the detectors run again on the result (at most
`max_rounds`), so `sanitize(sanitize(x).text)` finds nothing. A replacement can enable a new match
(a token glued to a redacted one, a context word moved closer, NER context): later rounds catch
those by re-running the context-sensitive detectors over the lines around each replacement
(elsewhere their context is unchanged) and every detector in windows
around placeholders glued to token characters or cut by a dropped overlapping candidate (no
detector reads more than ~64 characters of context; a window that would cut a PEM block, and NER,
force a full rescan). A document with no finding costs one pass.

Redaction is by value, not by position (`same_value`): once a span is judged a secret (the secret
categories), every other occurrence of the same value in the document -- and in every other text
of the same row, through `sanitize_row` -- is replaced with the same placeholder, and so are the
value's encoded forms (JSON-escaped, percent-encoded, base64, hex, and base64/hex runs whose
decoded text holds the value). A secret next to a keyword is often repeated a line later with no
keyword at all (`token = '...'` then `| '...'`), or in a tool result after the tool call that
carried it; redacting only the occurrence a rule matched would leave it in clear text there.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field, replace
from typing import Sequence

from .detectors import (Candidate, detect_assignments, detect_credentials_in_context, detect_high_entropy_strings,
                        detect_private_keys)
from .cli import detect_cli_credentials
from .code_args import detect_credential_arguments
from .config import detect_config_pairs
from .encoded import HEX_RUN, detect_base64, detect_hex, may_hold_base64
from .formats import detect_file_formats
from .mac import detect_macs
from .ner import DEFAULT_NER_MODEL, NERBackend, detect_ner, load_ner
from .patterns import CATEGORIES, PII_CATEGORIES, RULES, SECRET_CATEGORIES, Rule
from .pii import detect_emails, detect_ids, detect_ips, detect_phones
from .placeholders import PlaceholderAllocator, placeholder_spans
from .prefilter import KeywordScan
from .keyword_tokens import detect_keyword_tokens, detect_prefix_shaped, detect_url_path_tokens
from .random_values import detect_random_values
from .same_value import KnownSecrets
from .stated import detect_stated_credentials
from .validators import has_token_run, shannon_entropy
from .vendors import VENDOR_RULES, detect_generic_prefixed
from .wallets import detect_wallets

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_CONTEXT_DETECTORS = (detect_private_keys, detect_assignments, detect_credentials_in_context,
                      detect_high_entropy_strings, detect_cli_credentials, detect_generic_prefixed,
                      detect_config_pairs, detect_file_formats, detect_random_values, detect_credential_arguments,
                      detect_keyword_tokens, detect_prefix_shaped, detect_url_path_tokens, detect_stated_credentials)
_PII_DETECTORS = (detect_emails, detect_phones, detect_ips, detect_ids, detect_wallets, detect_macs)
# the core provider rules, then the wider vendor catalogue (rule order breaks ties in `_resolve`)
_ALL_RULES: tuple[Rule, ...] = RULES + VENDOR_RULES
_SECRET_SET = frozenset(SECRET_CATEGORIES)
# Detectors whose decision reads context at a distance (a keyword up to 60 characters before, a
# service word up to 40 characters before a token,
# `version`/`public` look-behinds, `-H "` before a header): a replacement elsewhere can change it.
_CONTEXT_SENSITIVE = (detect_phones, detect_ids, detect_ips, detect_high_entropy_strings,
                      detect_credentials_in_context, detect_cli_credentials, detect_wallets, detect_keyword_tokens)


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
        # every category the regex detectors can yield is wanted: no per-candidate filter
        self._all_regex_cats = self._cats.issuperset(SECRET_CATEGORIES + PII_CATEGORIES)
        self._rules: tuple[Rule, ...] = tuple(r for r in _ALL_RULES if r.category in self._cats)
        self._keywords = KeywordScan(k for r in self._rules for k in r.keywords)
        # rule indices per keyword: the rules to run are those with a keyword present, in order
        self._rules_by_kw: dict[str, tuple[int, ...]] = {}
        for i, r in enumerate(self._rules):
            for k in r.keywords:
                self._rules_by_kw[k] = self._rules_by_kw.get(k, ()) + (i,)
        self._always = tuple(i for i, r in enumerate(self._rules) if not r.keywords)
        self._key: bytes | None = None
        if self.config.hmac_key_env:
            raw = os.environ.get(self.config.hmac_key_env)
            if not raw:
                raise ValueError(f"environment variable {self.config.hmac_key_env} (placeholder HMAC key) is not set")
            self._key = raw.encode()
        wants_ner = bool(self._cats & {"person_names", "addresses"})
        self._ner = ner if ner is not None else (load_ner(self.config.ner_model)
                                                 if wants_ner and self.config.ner_model else None)

    @property
    def ner_backend(self) -> NERBackend | None:
        """The NER model in use (None without one); `stage.sanitize_rows` batches its calls."""
        return self._ner

    # ------------------------------------------------------------------ detection
    def _scan_plain(self, text: str, depth: int = 0) -> list[Candidate]:
        """All non-NER candidates in `text` (no overlap resolution)."""
        lower = _lower(text)  # same offsets as text, even for the few chars that lower-case to two
        cands: list[Candidate] = []
        run = set(self._always)
        present = self._keywords.present(lower)
        for k in present:
            run.update(self._rules_by_kw.get(k, ()))
        long_run = has_token_run(text, 20)
        for i in sorted(run):  # rule order: it breaks ties in `_resolve`
            rule = self._rules[i]
            if rule.long_run and not long_run:
                continue
            if rule.requires_regex is not None and rule.requires_regex.search(text) is None:
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
            found = det(text, lower)
            if self._all_regex_cats:
                cands.extend(found)
            else:
                cands.extend(c for c in found if c.category in self._cats)
        if "<" in text and _FORM_FIELD_HINT.search(lower):
            cands = [c for c in cands if not _public_form_value(text, c)]
        if self.config.scan_base64 and depth < 2 and may_hold_base64(text):
            claimed = _resolve(cands)  # non-overlapping, sorted: one bisect answers "covered?"
            c_starts = [c.start for c in claimed]

            def covered(s: int, e: int) -> bool:
                i = bisect.bisect_left(c_starts, e)
                return i > 0 and claimed[i - 1].end > s

            cands.extend(detect_base64(text, covered, lambda t, d: _resolve(self._scan_plain(t, d)), depth))
            if HEX_RUN.search(text):  # (a hex run of 24+ is also a base64 run of 20+: the gate above holds)
                cands.extend(detect_hex(text, covered, lambda t, d: _resolve(self._scan_plain(t, d)), depth))
        return cands

    def _context_near(self, text: str, changed: list[tuple[int, int]]) -> list[Candidate]:
        """The context-sensitive detectors over the lines around `changed` spans (the placeholders
        the last round wrote). Elsewhere every detector's context is what round 0 saw, so round 0
        already decided there. A window reaches `_CONTEXT_REACH` characters past each span, then
        on to the line ends (at most `_LINE_CAP` further); a candidate near an edge that is not a
        line boundary is dropped (a cut token there can look like a whole one) -- it lies more
        than `_MARGIN` characters from any change, so round 0 decided it."""
        windows: list[list[int]] = []
        n = len(text)
        for ps, pe in changed:
            a, b = max(0, ps - _CONTEXT_REACH), min(n, pe + _CONTEXT_REACH)
            ws = text.rfind("\n", max(0, a - _LINE_CAP), a) + 1 if a else 0
            if ws == 0 and a - _LINE_CAP > 0:
                ws = a - _LINE_CAP
            we = text.find("\n", b, b + _LINE_CAP) if b < n else n
            if we < 0:
                we = min(n, b + _LINE_CAP)
            if windows and ws <= windows[-1][1]:
                windows[-1][1] = max(windows[-1][1], we)
            else:
                windows.append([ws, we])
        out: list[Candidate] = []
        for ws, we in windows:
            win = text[ws:we]
            lower = _lower(win)
            soft_s = ws > 0 and text[ws - 1] != "\n"
            soft_e = we < n and text[we] != "\n"
            for det in _CONTEXT_SENSITIVE:
                for c in det(win, lower):
                    if c.category not in self._cats:
                        continue
                    if (soft_s and c.start < _MARGIN) or (soft_e and c.end > len(win) - _MARGIN):
                        continue
                    out.append(c._replace(start=c.start + ws, end=c.end + ws))
        return out

    def _raw(self, text: str, context_only: bool = False, changed: list[tuple[int, int]] | None = None) -> list[Candidate]:
        """Unresolved candidates, minus any touching an existing placeholder. `context_only`: only
        the context-sensitive detectors, around `changed` spans when given."""
        if context_only:
            if changed is not None:
                cands = self._context_near(text, changed)
            else:
                lower = _lower(text)
                cands = [c for det in _CONTEXT_SENSITIVE for c in det(text, lower) if c.category in self._cats]
        else:
            cands = self._scan_plain(text)
            if self._ner is not None:
                cands.extend(c for c in detect_ner(text, self._ner) if c.category in self._cats)
        ph = placeholder_spans(text)
        if ph:
            ph_starts = [s for s, _ in ph]

            def touches(c: Candidate) -> bool:
                i = bisect.bisect_left(ph_starts, c.end)
                return i > 0 and ph[i - 1][1] > c.start

            cands = [c for c in cands if not touches(c)]
        return cands

    def detect(self, text: str) -> list[Candidate]:
        """Non-overlapping candidates for `text`, placeholders excluded, sorted by start."""
        return _resolve(self._raw(text))

    def _detect_later_round(self, text: str, hot: list[tuple[int, int]],
                            changed: list[tuple[int, int]] | None = None) -> list[Candidate]:
        """What a replacement can newly expose (see the module docstring): the context-sensitive
        detectors over the whole text, and every detector around `hot` placeholders (those glued
        to token characters, or cut through by a dropped overlapping candidate). Around each,
        the zone is the whitespace-free run the placeholder sits in, and the scanned window adds
        `_MARGIN` characters of context on both sides."""
        cands = self._raw(text, context_only=True, changed=changed)
        if hot:
            zones: list[tuple[int, int]] = []
            for ps, pe in hot:
                rs = _RUN_BACK.search(text, max(0, ps - 1024), ps).start()
                re_ = _RUN_FWD.match(text, pe).end()
                # glue acts inside the whitespace-free run; whitespace-spanning detectors (phones,
                # ids, IPs) are in the context pass above. Tokens cut at a window edge are
                # separated from the zone by whitespace, so they cannot reach into it.
                zones.append((rs, re_))
            windows: list[list[int]] = []
            for zs, ze in zones:
                ws, we = max(0, zs - _MARGIN), min(len(text), ze + _MARGIN)
                if windows and ws <= windows[-1][1]:
                    windows[-1][1] = max(windows[-1][1], we)
                else:
                    windows.append([ws, we])
            if any(_cuts_block(text, ws, we) for ws, we in windows):
                return _resolve(self._raw(text))  # a window would cut a PEM block: scan it all
            z_starts = [zs for zs, _ in zones]
            for ws, we in windows:
                for c in self._raw(text[ws:we]):
                    c = c._replace(start=c.start + ws, end=c.end + ws)
                    i = bisect.bisect_left(z_starts, c.end)
                    if i > 0 and max(ze for _, ze in zones[max(0, i - 4):i]) > c.start:
                        cands.append(c)
        return _resolve(cands)

    # ------------------------------------------------------------------ substitution
    def sanitize(self, text: str) -> SanitizeResult:
        """Replace every finding, and every other occurrence of a secret value found, with its
        placeholder; see the module docstring for idempotence."""
        if not isinstance(text, str):
            raise TypeError(f"sanitize() needs str, got {type(text).__name__}")
        return self._sanitize(text, PlaceholderAllocator(text, self._key), KnownSecrets())

    def sanitize_row(self, texts: Sequence[str]) -> list[SanitizeResult]:
        """Sanitize the texts of one row (its turns, tool calls and results) as one document for
        redaction by value: a secret found in any text is replaced in every text, with the same
        placeholder for the same value across the row. One result per text, in order."""
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"sanitize_row() needs str texts, got {type(t).__name__}")
        alloc = PlaceholderAllocator("\n".join(texts), self._key)
        known = KnownSecrets()
        results: list[SanitizeResult] = []
        seen_at: list[int] = []
        for t in texts:
            results.append(self._sanitize(t, alloc, known))
            seen_at.append(known.version)
        for i, res in enumerate(results):
            # a text scanned before a later text taught a value: its output may still hold it
            if seen_at[i] < known.version and known.occurs_in(res.text):
                again = self._sanitize(res.text, alloc, known)
                for k, v in again.counts.items():
                    res.counts[k] = res.counts.get(k, 0) + v
                res.findings.extend(replace(f, round=f.round + self.config.max_rounds) for f in again.findings)
                res.text = again.text
        return results

    def _sanitize(self, text: str, alloc: PlaceholderAllocator, known: KnownSecrets) -> SanitizeResult:
        counts = {c: 0 for c in self.config.categories}
        findings: list[Finding] = []
        cur = text
        hot: list[tuple[int, int]] | None = None  # None: full scan
        for rnd in range(self.config.max_rounds):
            if hot is None:
                raw = self._raw(cur)
                cands = _resolve(raw)
            else:
                raw = cands = self._detect_later_round(cur, hot, changed)
            for c in cands:
                if c.category in _SECRET_SET:
                    known.add(cur[c.start:c.end], c.category, c.tag)
            value_of: dict[tuple[int, int], str] = {}
            if known:
                extra = known.candidates(cur, cands)
                if extra:
                    value_of = {(c.start, c.end): v for c, v in extra}
                    cands = sorted(list(cands) + [c for c, _ in extra], key=lambda c: c.start)
            if not cands:
                break
            dropped = sorted({(c.start, c.end) for c in raw} - {(c.start, c.end) for c in cands})
            parts, pos, out_len, hot, changed = [], 0, 0, [], []
            for c in cands:
                ph = alloc.get(c.tag, value_of.get((c.start, c.end)) or cur[c.start:c.end])
                parts.append(cur[pos:c.start])
                out_len += c.start - pos
                # a token that ends right before this span or starts right after it had its
                # boundary check decided by the span's edge characters, which are now `<`/`>`
                glued = ((c.start > 0 and _GLUE_BEFORE.search(cur, max(0, c.start - 17), c.start) is not None)
                         or _GLUE_AFTER.match(cur, c.end) is not None)
                # a dropped candidate overlapping this span leaves a fragment next to it
                cut = any(ds < c.end and de > c.start for ds, de in dropped)
                if glued or cut:
                    hot.append((out_len, out_len + len(ph)))
                parts.append(ph)
                changed.append((out_len, out_len + len(ph)))
                out_len += len(ph)
                pos = c.end
                counts[c.category] += 1
                findings.append(Finding(c.category, c.rule, ph, c.start, c.end, rnd))
            parts.append(cur[pos:])
            cur = "".join(parts)
            if self._ner is not None:
                hot = None  # NER context is sentence-wide: full rescan
        return SanitizeResult(cur, counts, findings)


# Anti-forgery tokens in HTML forms and meta tags are per-session nonces a page hands every
# visitor (Rails `authenticity_token`, Django `csrfmiddlewaretoken`, ASP.NET
# `__RequestVerificationToken`, `<meta name="csrf-token">`): public, not credentials
_FORM_FIELD_HINT = re.compile(r"authenticity_token|csrf|xsrf|requestverificationtoken")
_FORM_FIELD_TAG = re.compile(
    r"""<(?:input|meta)\b[^<>]*?\bname\s*=\s*["']?(?:authenticity_token|[\w-]*csrf[\w-]*|[\w-]*xsrf[\w-]*|"""
    r"""__RequestVerificationToken)["']?[^<>]*>""", re.I)


def _public_form_value(text: str, c: Candidate) -> bool:
    """Whether candidate `c` is the value of an anti-forgery form field or meta tag."""
    lt = text.rfind("<", max(0, c.start - 400), c.start)
    if lt < 0:
        return False
    m = _FORM_FIELD_TAG.match(text, lt)
    return m is not None and m.end() >= c.end


def _lower(text: str) -> str:
    lower = text.lower()
    return lower if len(lower) == len(text) else text.translate(_ASCII_LOWER)


# (a letter, digit or `_` touching the span; or punctuation that ends a token, `=` of base64 and
# JWTs, only after a long token run; `.`/`-`/`+`/`(` after the span only if a token follows)
_GLUE_BEFORE = re.compile(r"(?:[A-Za-z0-9_]|[A-Za-z0-9+/_.-]{16}[=.~+/!%)-])\Z")
_GLUE_AFTER = re.compile(r"[A-Za-z0-9_]|[+(.-][A-Za-z0-9]")
_MARGIN = 64    # context scanned on each side of a hot zone in later rounds (key names, prefixes)
_CONTEXT_REACH = 2 * _MARGIN  # later rounds rescan this far around each replacement, then to the line ends
_LINE_CAP = 512  # ... but no further than this past the reach on a long line
_RUN_BACK = re.compile(r"\S{0,1024}\Z")
_RUN_FWD = re.compile(r"\S{0,1024}")


def _cuts_block(text: str, ws: int, we: int) -> bool:
    """Whether [ws, we) may cut a multi-line structure: a PEM block without both its BEGIN and
    END lines inside, or a PuTTY key file."""
    win = text[ws:we]
    return "PuTTY-User-Key" in win or win.count("-----BEGIN") != win.count("-----END")


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
