"""MAC addresses: six two-digit hex groups with one consistent separator (`:` or `-`), or the
Cisco dotted form `aaaa.bbbb.cccc` after a MAC word.

Boundaries keep hex in code out: a group may not touch more hex, `x` (`0xde:ad`), `:` (IPv6,
fingerprints, hex dumps with more than six groups) or `.`. Broadcast, multicast (odd first
octet), all-zero and locally-administered placeholder patterns like `00:00:00:00:00:00` and
`ff:ff:ff:ff:ff:ff` are protocol constants, not anyone's hardware, and are left alone.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import IPS
from .validators import token_shape

_MAC = re.compile(r"(?<![0-9A-Za-z_:.-])([0-9A-Fa-f]{2})([:-])[0-9A-Fa-f]{2}(?:\2[0-9A-Fa-f]{2}){4}"
                  r"(?![0-9A-Za-z_]|[:-][0-9A-Fa-f]|\.[0-9A-Za-z])")
_MAC_DOTTED = re.compile(r"(?<![0-9A-Za-z_.])[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}(?![0-9A-Za-z_.])")
_MAC_WORDS = re.compile(r"(?i)mac|hwaddr|ether|bssid|hardware|lladdr")


def _plausible(hexdigits: str) -> bool:
    if len(set(hexdigits)) <= 2:
        return False  # 00:00:..., ff:ff:..., 11:11:...: constants and placeholders
    if int(hexdigits[:2], 16) & 1:
        return False  # group (multicast/broadcast) address: a protocol constant
    return hexdigits.lower() not in ("123456789abc", "0123456789ab", "aabbccddeeff", "a1b2c3d4e5f6")


def detect_macs(text: str, lower: str) -> Iterator[Candidate]:
    """Unicast MAC addresses in colon/dash notation, and dotted notation in a MAC context."""
    # in the token shape hex digits are `a`, `-` is `_` and `:` stays: a C-speed substring test on
    # the four inner groups (a pattern ending in the rarer separator lets the search skip ahead)
    shape = token_shape(text)
    if b":aa:aa:aa:aa:" in shape or b"_aa_aa_aa_aa_" in shape:
        for m in _MAC.finditer(text):
            digits = re.sub(r"[:-]", "", m.group(0))
            if _plausible(digits):
                yield Candidate(m.start(), m.end(), IPS, "MAC_ADDRESS", "mac_address", 3)
    if "mac" in lower or "ether" in lower or "hwaddr" in lower or "bssid" in lower:
        for m in _MAC_DOTTED.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if _MAC_WORDS.search(text, max(line_start, m.start() - 60), m.start()) and _plausible(
                    m.group(0).replace(".", "")):
                yield Candidate(m.start(), m.end(), IPS, "MAC_ADDRESS", "mac_address", 3)
