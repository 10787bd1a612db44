"""Checksums and plausibility tests that turn regex candidates into findings.

Regexes over-match; these cheap checks are what keep the false-positive rate low on code:
Luhn for cards, ISO 13616 mod-97 for IBANs, SSA rules for SSNs, `ipaddress` for public IPs,
Shannon entropy floors and placeholder tests for generic secrets.
"""
from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import re
from collections import Counter

# Well-known public DNS resolvers: public addresses, but not personal data, and very common in
# configs and docs. Left alone on purpose.
KNOWN_RESOLVERS = frozenset({
    "8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112",
    "208.67.222.222", "208.67.220.220", "64.6.64.6", "64.6.65.6", "4.2.2.1", "4.2.2.2",
    "94.140.14.14", "94.140.15.15", "76.76.2.0", "76.76.10.0", "185.228.168.9",
    "2001:4860:4860::8888", "2001:4860:4860::8844", "2606:4700:4700::1111",
    "2606:4700:4700::1001", "2620:fe::fe", "2620:fe::9", "2620:119:35::35", "2620:119:53::53",
})

# RFC 5737 / RFC 3849 documentation ranges: by definition nobody's address.
_DOC_NETS = tuple(ipaddress.ip_network(n) for n in (
    "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))


def shannon_entropy(s: str) -> float:
    """Bits per character of `s` (0.0 for the empty string)."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def luhn_ok(digits: str) -> bool:
    """True when the digit string passes the Luhn checksum (card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


# Card brand prefixes (IIN ranges) and lengths, from the networks' public documentation.
_CARD_PREFIX = re.compile(
    r"^(?:4\d{12}(?:\d{3}){0,2}"                    # Visa 13/16/19
    r"|(?:5[1-5]\d{2}|222[1-9]|22[3-9]\d|2[3-6]\d{2}|27[01]\d|2720)\d{12}"  # Mastercard
    r"|3[47]\d{13}"                                  # Amex
    r"|3(?:0[0-5]|[68]\d)\d{11,16}"                  # Diners
    r"|6(?:011|5\d{2}|4[4-9]\d)\d{12,15}"            # Discover
    r"|35(?:2[89]|[3-8]\d)\d{12,15}"                 # JCB
    r"|62\d{14,17}"                                  # UnionPay
    r"|(?:5[06-9]|6\d)\d{10,17}"                     # Maestro
    r"|1\d{14})$"                                    # UATP
)


def card_ok(digits: str) -> bool:
    """Luhn-valid, a known brand prefix and length, and not a run of one digit."""
    return (13 <= len(digits) <= 19 and len(set(digits)) > 1
            and _CARD_PREFIX.match(digits) is not None and luhn_ok(digits))


# ISO 13616 IBAN lengths per country (public SWIFT registry).
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HN": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22,
    "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}


_IBAN_DIGITS = str.maketrans({chr(c): str(c - 55) for c in range(ord("A"), ord("Z") + 1)})


def iban_ok(raw: str) -> bool:
    """Country length and mod-97 == 1 (ISO 7064) on an IBAN with spaces removed."""
    s = raw.replace(" ", "").upper()
    if IBAN_LENGTHS.get(s[:2]) != len(s) or not s[2:4].isdigit():
        return False
    moved = s[4:] + s[:4]
    if not moved.isalnum() or not moved.isascii():
        return False
    return int(moved.translate(_IBAN_DIGITS)) % 97 == 1


def ssn_ok(area: str, group: str, serial: str) -> bool:
    """SSA rules: area not 000/666/9xx, group not 00, serial not 0000."""
    return (area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000")


def public_ip(s: str) -> bool:
    """True for a routable public address that is not a documentation range or known resolver.

    Private (RFC 1918, ULA), loopback, link-local, CGNAT, multicast, reserved and documentation
    ranges are left alone: they identify nobody.
    """
    try:
        addr = ipaddress.ip_address(s.split("%", 1)[0])
    except ValueError:
        return False
    if not addr.is_global or addr.is_multicast or any(addr in n for n in _DOC_NETS):
        return False
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return public_ip(str(addr.ipv4_mapped))
        if "." in s and not public_ip(s.split("%", 1)[0].rsplit(":", 1)[1]):
            return False  # NAT64 / SIIT / compatible forms wrapping a non-public IPv4
    return str(addr) not in KNOWN_RESOLVERS


_PLACEHOLDER_WORDS = re.compile(  # matched on the lower-cased value
    r"example|here$|####|changeme|change_me|placeholder|your[_-]?|redacted|"
    r"xxxx|\*\*\*\*|\.\.\.|todo|replace|insert|<[a-z_ -]+>|^none$|^null$|^nil$|^true$|^false$|"
    r"^undefined$|^password$|^secret$|^passw(?:or)?d$|^string$|^test$")
# words that mark a dummy only when the rest of the value is not random: `fake-token`,
# `dummy_password`, `sample123` are dummies; a generated key that happens to hold `fake`
# (`q9ULaFakeTC61LxjsyS8ChW762e...`) is a real key
_DUMMY_WORDS = re.compile(r"dummy|fake|sample")


def looks_like_placeholder(value: str) -> bool:
    """Template variables, obvious dummies and code references are not secrets."""
    v = value.strip()
    if v[:1] == "{" and _BRACED_B64.fullmatch(v):
        return False  # a Jenkins `hudson.util.Secret` (`{AQAAABAAAAAQ...=}`): encrypted, with the key beside it
    if not v or v[0] in "{<" or v.startswith(("{{", "ENC[", "env.", "process.env", "os.environ")):
        return True
    if v[0] == "$" and _SHELL_REF.match(v):
        return True  # $VAR, ${VAR}, $(cmd), $VAR/path; `$r3TEt_Q&@o` is a password that opens with `$`
    if v[0] == "%" and _PERCENT_FIELD.match(v):
        return True  # %(name)s, %{name}, %VAR% (a literal value may start with `%` too)
    if len(set(v)) <= 2 or _TEMPLATE_FIELD.search(v):
        return True
    low = v.lower()
    if _PLACEHOLDER_WORDS.search(low) is not None:
        return True
    if _DUMMY_WORDS.search(low) is not None:
        rest = _DUMMY_WORDS.sub("", low)
        if not (len(rest) >= 16 and alnum_classes(_DUMMY_WORDS.sub("", v)) == 3 and shannon_entropy(rest) >= 3.5):
            return True
    return False


_BRACED_B64 = re.compile(r"\{[A-Za-z0-9+/]{20,}={0,2}\}")
# `%VAR%` is a Windows variable when it is the whole value or an upper-case name (`%APPDATA%\x`);
# `%f4S6yy%@D!HX` is a password that happens to hold two `%`
_SHELL_REF = re.compile(r"\$(?:\{|\(|[A-Za-z_]\w*(?:$|[/.:\\\]\[\s\"'`,;)}-])|\d$)")
_PERCENT_FIELD = re.compile(r"%(?:\(|\{|[A-Za-z_]\w*%$|[A-Z_][A-Z0-9_]*%|[sdrf]$)")
# `{key_type}`, `${HOME}`, `%(name)s`, `{{ .Values.x }}`: template fields, filled in elsewhere
_TEMPLATE_FIELD = re.compile(r"\{[A-Za-z_][\w.]{2,}\}|\$\{[A-Za-z_]\w*\}|%\([A-Za-z_]\w*\)[sd]|\{\{[^}]*\}\}")


def char_classes(s: str) -> int:
    """How many of lower, upper, digit, symbol occur in `s`."""
    return ((s != s.upper()) + (s != s.lower()) + (_DIGIT.search(s) is not None)
            + (_SYMBOL.search(s) is not None))


def alnum_classes(s: str) -> int:
    """How many of lower, upper, digit occur in `s` (symbols don't count)."""
    return (s != s.upper()) + (s != s.lower()) + (_DIGIT.search(s) is not None)


_DIGIT = re.compile(r"\d")
_SYMBOL = re.compile(r"[^A-Za-z0-9]")


# Prefilters for the detectors of long tokens (base64 runs, quoted high-entropy strings, provider
# tokens): is there a run of n base64 characters [A-Za-z0-9+/], or of token characters (those
# and `_-`)? A regex scanning for a character class enters its matcher at every letter; mapping
# the UTF-8 bytes through a table (C speed; a non-ASCII character becomes bytes >= 0x80) and
# looking for `a` * n is far cheaper.
_B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_RUN_SHAPE = bytes(ord("a") if chr(b) in _B64_ALPHABET else ord("_") if chr(b) in "_-" else b for b in range(256))
# (text, its shape: base64 characters -> `a`, `_-` -> `_`; the same with `_` -> `a`, or None)
_last_runs: tuple[str | None, bytes, bytes | None] = (None, b"", None)


def _runs(text: str) -> tuple[str | None, bytes, bytes | None]:
    """Memoized for the last text: the engine and several detectors ask about one document."""
    global _last_runs
    last = _last_runs
    if last[0] is not text:
        last = _last_runs = (text, text.encode("utf-8", "surrogatepass").translate(_RUN_SHAPE), None)
    return last


def token_shape(text: str) -> bytes:
    """`text` as UTF-8 with base64 characters mapped to `a` and `_-` to `_` (other bytes kept)."""
    return _runs(text)[1]


def has_b64_run(text: str, n: int) -> bool:
    """Whether `text` holds `n` characters of [A-Za-z0-9+/] in a row."""
    return b"a" * n in _runs(text)[1]


def has_token_run(text: str, n: int) -> bool:
    """Whether `text` holds `n` characters of [A-Za-z0-9+/_-] in a row."""
    global _last_runs
    last = _runs(text)
    if last[2] is None:
        last = _last_runs = (last[0], last[1], last[1].replace(b"_", b"a"))
    return b"a" * n in last[2]


MAX_B64_RUN = 16384


def decode_b64_text(run: str) -> str | None:
    """The UTF-8 text a base64 run encodes, or None when it is not (mostly printable) text."""
    if len(run) > MAX_B64_RUN:
        return None
    stripped = run.rstrip("=")
    if len(stripped) % 4 == 1:
        return None
    # A run of letters only is nearly always a word or identifier, not base64 of text.
    if stripped.isalpha() and (stripped.islower() or stripped.isupper()):
        return None
    try:
        raw = base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True)
        out = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not out:
        return None
    printable = sum(1 for c in out if c.isprintable() or c in "\n\r\t")
    return out if printable >= 0.95 * len(out) else None


# A command continued over lines: `\` (POSIX shells, Dockerfile RUN), `` ` `` (PowerShell), `^`
# (cmd.exe) before the line break.
CONTINUATION = re.compile(r"[\\`^]\r?\n")


_joined: dict[int, tuple[str, str]] = {}  # id -> (text, joined): the last few texts (two detectors ask)


def join_continuations(text: str) -> str:
    """`text` with each line continuation blanked to spaces of the same length, so one command
    reads as one line and every offset still points at the same character of the original."""
    hit = _joined.get(id(text))
    if hit is not None and hit[0] is text:
        return hit[1]
    out = CONTINUATION.sub(lambda m: " " * len(m.group(0)), text)
    if len(_joined) >= 4:
        _joined.clear()
    _joined[id(text)] = (text, out)
    return out
