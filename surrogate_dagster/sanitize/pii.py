"""PII detectors for categories 7-10: emails, phone numbers, public IPs, payment and national ids.

Each regex only proposes; a validator decides (RFC 2606 domains, digit counts and context for
phones, `ipaddress` for IPs, Luhn / mod-97 / SSA rules for ids). Code is full of numbers, so a
bare digit run is never enough on its own.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import EMAILS, IDS, IPS, PHONES
from .validators import card_ok, iban_ok, public_ip, ssn_ok

# Regexes here start with a literal or a character class and check the character before the match
# with a fixed-width look-behind placed after the first character: a leading look-behind would
# make Python's `re` try the whole pattern at every position (measured 5-10x slower).
_EMAIL_DOMAIN = re.compile(r"@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                           r"(?:[A-Za-z]{2,24}|xn--[A-Za-z0-9-]{2,59}))(?![A-Za-z0-9-]|\.[A-Za-z0-9])")
_EMAIL_LOCAL = re.compile(r"[A-Za-z0-9._%+-]{1,64}\Z")
# RFC 2606 / 6761 reserved names and asset-name look-alikes (icon@2x.png)
_RESERVED_DOMAIN = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost|local)$")
_FILE_TLDS = frozenset("png jpg jpeg gif svg webp ico bmp js mjs ts tsx jsx css scss py rb go rs java kt md txt "
                       "json yaml yml xml html htm pdf zip gz tar so dll exe wasm map lock".split())
_SSH_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "ssh.dev.azure.com", "vs-ssh.visualstudio.com")


def detect_emails(text: str, lower: str) -> Iterator[Candidate]:
    """Email addresses, except reserved example domains, git-over-ssh users and asset names."""
    if "@" not in text:
        return
    for m in _EMAIL_DOMAIN.finditer(text):
        lm = _EMAIL_LOCAL.search(text, max(0, m.start() - 64), m.start())
        if lm is None:
            continue
        ls = lm.start()
        while ls < m.start() and not text[ls].isalnum():
            ls += 1  # the local part starts with a letter or digit
        if ls == m.start() or (ls == lm.start() and ls > 0 and text[ls - 1] in "._%+-"):
            continue
        local, domain = text[ls:m.start()], m.group(1).lower()
        if _RESERVED_DOMAIN.search(domain) or domain.rsplit(".", 1)[-1] in _FILE_TLDS:
            continue
        if local == "git" and domain in _SSH_HOSTS:
            continue
        yield Candidate(ls, m.end(), EMAILS, "EMAIL", "email", 2)


_PHONE = re.compile(
    r"[+(\d](?<![\w+.\-/:#][+(\d])"
    r"(?:(?<=\+)\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{1,15}|(?<=\()\d{1,4}\)[ .\-]?\d{1,15}|(?<=\d)\d{0,14})"
    r"(?:[ .\-]\d{1,8}){0,5}(?![\w\-]|\.\d|:\d)")
_NANP = re.compile(r"^(?:\+?1[ .\-]?)?(?:\(\d{3}\)[ .\-]?|\d{3}[ .\-])\d{3}[ .\-]\d{4}$")
_PHONE_CONTEXT = re.compile(r"(?i)(?:phone|tel\b|tel:|telephone|mobile|cell|fax|call|whatsapp|sms|contact|number|"
                            r"n[uú]mero|telefon|handy)")
_DATEISH = re.compile(r"^\d{4}[\-./]\d{1,2}[\-./]\d{1,2}$|^\d{1,2}[\-./]\d{1,2}[\-./]\d{2,4}$")


# Cheap necessary conditions (`_Gate`s), tested before the detectors' own regexes: most
# documents fail them. `re` looks for a character class such as `\d` at ~10 ns per character
# (it enters the matcher at each candidate) but for a literal at ~1 ns, so on ASCII text a gate
# searches the text's "shape" instead: its bytes with digits mapped to `0` and A-Z to `A`,
# everything else kept, where the gate's pattern starts with a literal. `bytes.translate` is a
# plain table lookup, far cheaper than `str.translate`; one shape per document serves every gate.
_SHAPE = bytes(ord("0") if 48 <= b <= 57 else ord("A") if 65 <= b <= 90 else b for b in range(256))
_last_shape: tuple[str | None, bytes | None] = (None, None)


def _shape(text: str) -> bytes | None:
    r"""`text`'s bytes with digits -> `0` and A-Z -> `A` (same offsets); None for non-ASCII text,
    whose `\d` also matches other scripts' digits. Memoized for the last text: phones and ids
    share it."""
    global _last_shape
    last = _last_shape
    if last[0] is text:
        return last[1]
    shape = text.encode("ascii").translate(_SHAPE) if text.isascii() else None
    _last_shape = (text, shape)
    return shape


class _Gate:
    r"""Whether `pattern` occurs in a text. `pattern` may use `\d` and `[A-Z]`; its other
    characters and classes must be ASCII and hold no digit or upper-case letter (they match the
    shape alike)."""

    def __init__(self, pattern: str) -> None:
        self._on_text = re.compile(pattern)
        self._on_shape = re.compile(pattern.replace(r"\d", "0").replace("[A-Z]", "A").encode("ascii"))

    def __call__(self, text: str) -> bool:
        shape = _shape(text)
        if shape is None:
            return self._on_text.search(text) is not None
        return self._on_shape.search(shape) is not None


_D3 = _Gate(r"\d\d\d")
# every phone match holds >= 7 digits separated only by `+( ).-` characters
_PHONE_GATE = _Gate(r"\d(?:[ .()\-]*\d){6}")


def detect_phones(text: str, lower: str) -> Iterator[Candidate]:
    """International numbers (+CC, 8-15 digits), NANP-formatted numbers, and other formatted
    numbers (7-15 digits, separators) only next to a phone-ish word."""
    if not _PHONE_GATE(text):
        return
    if not _D3(text) and not any(map(str.isdigit, text[:2048])):
        return
    for m in _PHONE.finditer(text):
        s = m.group(0)
        n = sum(map(str.isdigit, s))
        if n < 7 or n > 15 or _DATEISH.match(s):
            continue
        digits = re.sub(r"\D", "", s)
        has_area = "(" in s
        if s[0] == "+":
            ok = n >= 8 and (" " in s or "-" in s or n >= 10 or has_area)
        elif _NANP.match(s):
            ok = True
        else:
            seps = re.findall(r"[ .\-]", s)
            context = _PHONE_CONTEXT.search(text, max(0, m.start() - 40), m.start())
            formatted = bool(seps) or has_area
            # bare digit runs only when long enough to be a full national number (CN: 11)
            ok = context is not None and "." not in seps and (formatted or 10 <= n <= 15)
        if ok and len(set(digits)) > 2:
            yield Candidate(m.start(), m.end(), PHONES, "PHONE", "phone", 1)


_IPV4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\w|\.\w)")
_IPV6 = re.compile(r"[0-9A-Fa-f:](?<![\w:.][0-9A-Fa-f:])[0-9A-Fa-f]{0,3}:[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*(?:%[\w.]+)?(?![\w:])")
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|version|ver|release)[\s=:\"'@-]{0,3}\Z")
# necessary for _IPV4; starting at the literal `.` lets `re` skip to the dots
_IPV4_GATE = re.compile(r"\.(?<=\d\.)\d{1,3}\.\d{1,3}\.\d")
# `[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:` occurs iff this does (one hex digit
# before the first `:` is enough); starting at the literal `:` lets `re` skip to the colons
_IPV6_GATE = re.compile(r":(?<=[0-9A-Fa-f]:)[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:")


def detect_ips(text: str, lower: str) -> Iterator[Candidate]:
    """Public IPv4/IPv6 addresses; private, loopback, link-local, documentation ranges and
    well-known resolvers are left alone, as are version-number look-alikes (`v1.2.3.4`)."""
    if "." in text and _IPV4_GATE.search(text) is not None:
        for m in _IPV4.finditer(text):
            if _VERSION_BEFORE.search(text, max(0, m.start() - 10), m.start()):
                continue
            if public_ip(m.group(0)):
                yield Candidate(m.start(), m.end(), IPS, "IP", "ipv4", 2)
    if "::" in text or _IPV6_GATE.search(text) is not None:
        for m in _IPV6.finditer(text):
            s = m.group(0).rstrip(".")
            if s.count(":") < 2 or not any(c.isdigit() for c in s) or len(s) < 6 or s.endswith("::"):
                continue  # `800::/5`-style network prefixes are ranges, not hosts
            if public_ip(s):
                yield Candidate(m.start(), m.start() + len(s), IPS, "IP", "ipv6", 2)


_CARD = re.compile(r"\d(?<![\w\-.]\d)(\d{3}([ \-])\d{4}\2\d{4}\2\d{1,4}(?:\2\d{1,3})?"
                   r"|\d{3}([ \-])\d{6}\3\d{4,5}|\d{12,18})(?![\w\-]|\.\d)")
_CARD_CONTEXT = re.compile(r"(?i)card|visa|master|amex|credit|debit|payment|pan\b")
_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])([A-Z]\d{2}(?:([ \-]?)[A-Z0-9]{4})(?:\2[A-Z0-9]{4}){1,6}"
                   r"(?:\2[A-Z0-9]{1,4})?)(?![A-Za-z0-9])")
_SSN = re.compile(r"\d(?<![\w\-.]\d)\d{2}([ \-.])\d{2}\1\d{4}(?![\d\-]|\.\d)")
_SSN_BARE = re.compile(r"\d(?<![\w\-.]\d)\d{8}(?![\d\-]|\.\d)")
# necessary for _CARD (4 digits first), _IBAN and _SSN
_CARD_GATE = _Gate(r"\d\d\d\d")
_IBAN_GATE = _Gate(r"[A-Z][A-Z]\d\d")
_SSN_GATE = _Gate(r"\d\d\d[ \-.]\d\d[ \-.]\d\d\d\d")
_SSN_CONTEXT = re.compile(r"ssn|social security|ss#|sozialversicherung")  # on the lower-cased text


def detect_ids(text: str, lower: str) -> Iterator[Candidate]:
    """Luhn-valid card numbers, mod-97-valid IBANs and SSA-valid US SSNs."""
    if not _D3(text):
        return
    for m in (_CARD.finditer(text) if _CARD_GATE(text) else ()):
        s = m.group(0)
        digits = s.replace(" ", "").replace("-", "")
        if not card_ok(digits):
            continue
        if s.isdigit() and len(digits) > 16 and not _CARD_CONTEXT.search(text, max(0, m.start() - 60), m.start()):
            continue  # 17-19 bare digits are usually ids, not cards
        yield Candidate(m.start(), m.end(), IDS, "CARD", "card", 2)
    for m in (_IBAN.finditer(text) if _IBAN_GATE(text) else ()):
        s, e, iban = m.start(), m.end(), m.group(0)
        if not iban_ok(iban.replace("-", "")):
            # the optional short last group may have swallowed a following word ("... X", "ALL")
            sep = m.group(2) or ""
            head = iban.rpartition(sep)[0] if sep else ""
            if not head or not iban_ok(head.replace("-", "")):
                continue
            e = s + len(head)
        yield Candidate(s, e, IDS, "IBAN", "iban", 2)
    for m in (_SSN.finditer(text) if _SSN_GATE(text) else ()):
        s = m.group(0)
        if ssn_ok(s[0:3], s[4:6], s[7:11]):
            yield Candidate(m.start(), m.end(), IDS, "SSN", "ssn", 3)
    if "ssn" in lower or "social security" in lower or "ss#" in lower or "sozialversicherung" in lower:
        for m in _SSN_BARE.finditer(text):
            s = m.group(0)
            if ssn_ok(s[0:3], s[3:5], s[5:9]) and _SSN_CONTEXT.search(lower, max(0, m.start() - 40), m.start()):
                yield Candidate(m.start(), m.end(), IDS, "SSN", "ssn_context", 3)
