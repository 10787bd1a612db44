"""Secrets hidden in base64 or hex: decode candidate runs, scan the decoded text, redact the whole run.

Only runs of 20..16384 characters of the standard base64 alphabet, or of 24+ hex digits (even
count, one case), are tried, only if they decode to valid UTF-8 that is mostly printable. One
level of nesting (a base64 run inside decoded base64) is followed, which covers k8s Secrets and
docker `auth` fields. Hex-encoded text turns up in `xxd -p` output, `bytes.fromhex(...)` literals
and hex-armoured config values.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from .detectors import Candidate
from .patterns import PASSWORDS
from .validators import decode_b64_text, has_b64_run

# A maximal run: no base64/url-safe character or `=` on either side. The look-behind sits after
# the first character (`(?<!XB)` there == `(?<!X)` before it): a leading look-behind would make
# `re` try the whole pattern at every position instead of skipping to base64 characters.
B64_RUN = re.compile(r"[A-Za-z0-9+/](?<![A-Za-z0-9+/=_-][A-Za-z0-9+/])[A-Za-z0-9+/]{19,}={0,2}(?![A-Za-z0-9+/=_-])")
# one case throughout; the look-behind sits after the first digit (see B64_RUN); even length is checked in code
HEX_RUN = re.compile(r"[0-9a-f](?<![0-9A-Za-z][0-9a-f])[0-9a-f]{23,}(?![0-9A-Za-z])"
                     r"|[0-9A-F](?<![0-9A-Za-z][0-9A-F])[0-9A-F]{23,}(?![0-9A-Za-z])")
_USERPASS = re.compile(r"^[A-Za-z0-9._@+-]{1,128}:[^\s]{4,256}$")


def may_hold_base64(text: str) -> bool:
    """False only when `text` has no run B64_RUN could match (a cheap prefilter: most documents
    have no 20 base64 characters in a row, and then neither the regex nor the overlap resolution
    the base64 scan needs is run)."""
    return has_b64_run(text, 20)


def detect_base64(text: str, covered: Callable[[int, int], bool],
                  scan: Callable[[str, int], list[Candidate]], depth: int) -> Iterator[Candidate]:
    """Candidates for base64 runs whose decoded text holds a finding of `scan` or a `user:password`
    (what Basic auth and docker config `auth` fields encode).

    `covered(start, end)` says whether a span is already claimed by a direct finding (a JWT,
    a provider token), so those are not decoded again.
    """
    return _decoded_runs(B64_RUN, decode_b64_text, "base64", text, covered, scan, depth)


def decode_hex_text(run: str) -> str | None:
    """The UTF-8 text a hex run encodes, or None when it is not (mostly printable) text."""
    if len(run) % 2:
        return None
    try:
        out = bytes.fromhex(run).decode("utf-8")
    except ValueError:
        return None
    printable = sum(1 for c in out if c.isprintable() or c in "\n\r\t")
    return out if out and printable >= 0.95 * len(out) else None


def detect_hex(text: str, covered: Callable[[int, int], bool],
               scan: Callable[[str, int], list[Candidate]], depth: int) -> Iterator[Candidate]:
    """Candidates for hex runs whose decoded text holds a finding of `scan` or a `user:password`."""
    return _decoded_runs(HEX_RUN, decode_hex_text, "hex", text, covered, scan, depth)


def _decoded_runs(runs: re.Pattern, decode: Callable[[str], str | None], encoding: str, text: str,
                  covered: Callable[[int, int], bool], scan: Callable[[str, int], list[Candidate]],
                  depth: int) -> Iterator[Candidate]:
    """The whole run, for every run of `runs` that decodes to text holding a secret."""
    for m in runs.finditer(text):
        if covered(m.start(), m.end()):
            continue
        decoded = decode(m.group(0))
        if decoded is None:
            continue
        inner = scan(decoded, depth + 1)
        if inner:
            first = max(inner, key=lambda c: c.priority)
            yield Candidate(m.start(), m.end(), first.category, f"{encoding.upper()}_{first.tag}",
                            f"{encoding}:{first.rule}", 4)
        elif _USERPASS.match(decoded.strip()):
            yield Candidate(m.start(), m.end(), PASSWORDS, f"{encoding.upper()}_SECRET_CREDENTIALS",
                            f"{encoding}:user_pass", 4)
