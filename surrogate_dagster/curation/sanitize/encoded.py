"""Secrets hidden in base64: decode candidate runs, scan the decoded text, redact the whole run.

Only runs of 20..16384 characters of the standard alphabet are tried, only if they decode to
valid UTF-8 that is mostly printable. One level of nesting (a base64 run inside decoded
base64) is followed, which covers k8s Secrets and docker `auth` fields.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Callable, Iterator

from .detectors import Candidate
from .patterns import PASSWORDS

B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
MAX_RUN = 16384
_USERPASS = re.compile(r"^[A-Za-z0-9._@+-]{1,128}:[^\s]{4,256}$")


def decode_b64_text(run: str) -> str | None:
    """The UTF-8 text a base64 run encodes, or None when it is not (mostly printable) text."""
    if len(run) > MAX_RUN:
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


def detect_base64(text: str, covered: Callable[[int, int], bool],
                  scan: Callable[[str, int], list[Candidate]], depth: int) -> Iterator[Candidate]:
    """Candidates for base64 runs whose decoded text holds a finding of `scan`.

    `covered(start, end)` says whether a span is already claimed by a direct finding (a JWT,
    a provider token), so those are not decoded again.
    """
    for m in B64_RUN.finditer(text):
        if covered(m.start(), m.end()):
            continue
        decoded = decode_b64_text(m.group(0))
        if decoded is None:
            continue
        inner = scan(decoded, depth + 1)
        if inner:
            first = max(inner, key=lambda c: c.priority)
            yield Candidate(m.start(), m.end(), first.category, "BASE64_" + first.tag, "base64:" + first.rule, 4)
        elif _USERPASS.match(decoded.strip()):
            # `user:password` is what Basic auth and docker config `auth` fields encode
            yield Candidate(m.start(), m.end(), PASSWORDS, "BASE64_SECRET_CREDENTIALS", "base64:user_pass", 4)
