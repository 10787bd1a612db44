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

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?:[A-Za-z]{2,24}|xn--[A-Za-z0-9-]{2,59}))(?![A-Za-z0-9-]|\.[A-Za-z0-9])")
# RFC 2606 / 6761 reserved names and asset-name look-alikes (icon@2x.png)
_RESERVED_DOMAIN = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost|local)$")
_FILE_TLDS = frozenset("png jpg jpeg gif svg webp ico bmp js mjs ts tsx jsx css scss py rb go rs java kt md txt "
                       "json yaml yml xml html htm pdf zip gz tar so dll exe wasm map lock".split())
_SSH_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "ssh.dev.azure.com", "vs-ssh.visualstudio.com")


def detect_emails(text: str, lower: str) -> Iterator[Candidate]:
    """Email addresses, except reserved example domains, git-over-ssh users and asset names."""
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        local, domain = m.group(1), m.group(2).lower()
        if _RESERVED_DOMAIN.search(domain) or domain.rsplit(".", 1)[-1] in _FILE_TLDS:
            continue
        if local == "git" and domain in _SSH_HOSTS:
            continue
        yield Candidate(m.start(), m.end(), EMAILS, "EMAIL", "email", 2)


_PHONE = re.compile(
    r"(?<![\w+.\-/:#])(?:(?P<intl>\+\d{1,3})[ .\-]?)?(?:\((?P<area>\d{1,4})\)[ .\-]?)?"
    r"(?P<body>\d{1,15}(?:[ .\-]\d{1,8}){0,5})(?![\w\-]|\.\d|:\d)")
_NANP = re.compile(r"^(?:\+?1[ .\-]?)?(?:\(\d{3}\)[ .\-]?|\d{3}[ .\-])\d{3}[ .\-]\d{4}$")
_PHONE_CONTEXT = re.compile(r"(?i)(?:phone|tel\b|tel:|telephone|mobile|cell|fax|call|whatsapp|sms|contact|number|"
                            r"n[uú]mero|telefon|handy)")
_DATEISH = re.compile(r"^\d{4}[\-./]\d{1,2}[\-./]\d{1,2}$|^\d{1,2}[\-./]\d{1,2}[\-./]\d{2,4}$")


def detect_phones(text: str, lower: str) -> Iterator[Candidate]:
    """International numbers (+CC, 8-15 digits), NANP-formatted numbers, and other formatted
    numbers (7-15 digits, separators) only next to a phone-ish word."""
    if not any(c.isdigit() for c in text[:2048]) and not re.search(r"\d{3}", text):
        return
    for m in _PHONE.finditer(text):
        s = m.group(0)
        digits = re.sub(r"\D", "", s)
        n = len(digits)
        if n < 7 or n > 15 or _DATEISH.match(s):
            continue
        if m.group("intl"):
            ok = n >= 8 and (" " in s or "-" in s or n >= 10 or m.group("area") is not None)
        elif _NANP.match(s):
            ok = True
        else:
            seps = re.findall(r"[ .\-]", s)
            context = _PHONE_CONTEXT.search(text, max(0, m.start() - 40), m.start())
            formatted = bool(seps) or m.group("area") is not None
            # bare digit runs only when long enough to be a full national number (CN: 11)
            ok = context is not None and "." not in seps and (formatted or 10 <= n <= 15)
        if ok and len(set(digits)) > 2:
            yield Candidate(m.start(), m.end(), PHONES, "PHONE", "phone", 1)


_IPV4 = re.compile(r"(?<![\w.])(?<!\d\.)((?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})"
                   r"(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])((?:[0-9A-Fa-f]{1,4}:){1,7}(?::|(?::?[0-9A-Fa-f]{1,4}))(?::[0-9A-Fa-f]{1,4})*"
                   r"(?:(?<=:)(?:\d{1,3}\.){3}\d{1,3})?(?:%[\w.]+)?)(?![\w:])")
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|version|ver|release)[\s=:\"'@-]{0,3}$")


def detect_ips(text: str, lower: str) -> Iterator[Candidate]:
    """Public IPv4/IPv6 addresses; private, loopback, link-local, documentation ranges and
    well-known resolvers are left alone, as are version-number look-alikes (`v1.2.3.4`)."""
    if "." in text:
        for m in _IPV4.finditer(text):
            if _VERSION_BEFORE.search(text, max(0, m.start() - 10), m.start()):
                continue
            if public_ip(m.group(1)):
                yield Candidate(m.start(1), m.end(1), IPS, "IP", "ipv4", 2)
    if "::" in text or re.search(r"[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:", text):
        for m in _IPV6.finditer(text):
            s = m.group(1)
            if s.count(":") < 2 or not any(c.isdigit() for c in s) or len(s) < 6:
                continue
            if public_ip(s):
                yield Candidate(m.start(1), m.end(1), IPS, "IP", "ipv6", 2)


_CARD = re.compile(r"(?<![\w\-.])(\d{4}([ \-])\d{4}\2\d{4}\2\d{1,4}(?:\2\d{1,3})?|\d{4}([ \-])\d{6}\3\d{4,5}|\d{13,19})"
                   r"(?![\w\-]|\.\d)")
_CARD_CONTEXT = re.compile(r"(?i)card|visa|master|amex|credit|debit|payment|pan\b")
_IBAN = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2}\d{2}(?:([ \-]?)[A-Z0-9]{4})(?:\2[A-Z0-9]{4}){1,6}(?:\2[A-Z0-9]{1,4})?)(?![A-Za-z0-9])")
_SSN = re.compile(r"(?<![\d\-.])(\d{3})([ \-.])(\d{2})\2(\d{4})(?![\d\-]|\.\d)")
_SSN_BARE = re.compile(r"(?<![\d\-.])(\d{3})(\d{2})(\d{4})(?![\d\-]|\.\d)")
_SSN_CONTEXT = re.compile(r"(?i)\bssn\b|social security|\bss#|sozialversicherung")


def detect_ids(text: str, lower: str) -> Iterator[Candidate]:
    """Luhn-valid card numbers, mod-97-valid IBANs and SSA-valid US SSNs."""
    if not re.search(r"\d{3}", text):
        return
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(1))
        if not card_ok(digits):
            continue
        if m.group(1).isdigit() and len(digits) > 16 and not _CARD_CONTEXT.search(text, max(0, m.start() - 60), m.start()):
            continue  # 17-19 bare digits are usually ids, not cards
        yield Candidate(m.start(1), m.end(1), IDS, "CARD", "card", 2)
    for m in _IBAN.finditer(text):
        s, e = m.span(1)
        if not iban_ok(m.group(1).replace("-", "")):
            # the optional short last group may have swallowed a following word ("... X", "ALL")
            sep = m.group(2) or ""
            head, _, last = m.group(1).rpartition(sep) if sep else (m.group(1)[:-4], "", m.group(1)[-4:])
            if not sep or not iban_ok(head.replace("-", "")):
                continue
            e = s + len(head)
        yield Candidate(s, e, IDS, "IBAN", "iban", 2)
    for m in _SSN.finditer(text):
        if ssn_ok(m.group(1), m.group(3), m.group(4)):
            yield Candidate(m.start(), m.end(), IDS, "SSN", "ssn", 3)
    if _SSN_CONTEXT.search(text):
        for m in _SSN_BARE.finditer(text):
            if ssn_ok(m.group(1), m.group(2), m.group(3)) and _SSN_CONTEXT.search(text, max(0, m.start() - 40), m.start()):
                yield Candidate(m.start(), m.end(), IDS, "SSN", "ssn_context", 3)
