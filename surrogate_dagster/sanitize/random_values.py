"""Random-looking tokens where a value goes, whatever the name they are given.

Most services have no token prefix: a Mailgun, Datadog or Abbysale key is 32-64 random letters
and digits, and configs name it after the service (`ABBYSALE=...`, `<abbysale>...</abbysale>`,
`ENV ABBYSALE ...`), in words no keyword list holds. What such a value has is its shape: upper,
lower and digits mixed at random, which names, words, paths and hex digests never are. A token
is taken when it

- is 20-256 characters of `[A-Za-z0-9+/_.~-]` (and `=` padding) holding upper case, lower case
  and digits, with the character classes changing at a third of the positions or more (a random
  string changes class at ~60%; `AbstractProxyFactoryBean2` at ~20%), little of it in word-like
  segments (`RemovedInDjango40Warning`) and a high Shannon entropy;
- sits in a value position: after `=`, `:` or `=>`, as an XML element's text, as the value of a
  Dockerfile `ENV NAME value`, or with a credential word in the 40 characters before it on its
  line and no other flag in between (`my api key is X`, `--body X`);
- and is not named as something public or derived (`..._id`, `checksum`, `integrity`, `sha256`,
  `public_key`, `nonce`, `version`), nor base64 of text (the base64 scan reads that), nor a path.

Hex-only values (digests, commit ids), UUIDs and two-class tokens qualify only through a
credential word with no operator between (`my api key 52d7...`; `token: 52d7...` is the
assignment detector's): elsewhere they need a credential name, which is the assignment detector's
rule.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import _KEY_NOT_SECRET, Candidate
from .patterns import PASSWORDS
from .placeholders import PLACEHOLDER_RE
from .validators import alnum_classes, decode_b64_text, has_token_run, looks_like_placeholder, shannon_entropy

# `=` only as base64 padding at the end: inside a run it is an assignment (`NAME=value`)
_RUN = re.compile(r"[A-Za-z0-9](?<![A-Za-z0-9+/_.~-][A-Za-z0-9])[A-Za-z0-9+/_.~-]{19,255}={0,2}(?![A-Za-z0-9+/_=.~-])")
_SEQUENTIAL = re.compile(r"(?i)abcdefgh|01234567|qwertyui|12345678")
# what may close a value: end of line/text, a quote, markup, a separator
_AFTER_OK = frozenset(" \t\r\n\"'`<;,)]}&|\\")
# the name a value is given, read backwards from the operator
_NAME_BACK = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,60}\Z")
# names of values that are public, derived or identifiers rather than credentials
_NOT_SECRET_NAME = re.compile(
    r"(?i)(?:^|[_.-]|(?<=[a-z]))(?:ids?|uuid|guid|hash|sha\d*|md5|digest|checksum|integrity|etag|commit|rev|revision|"
    r"version|nonce|salt|iv|signature_version|name|names|path|file|url|uri|href|src|image|tag|ref|slug|handle|"
    r"publishable|public|pub|pubkey|cert|certificate|fingerprint|thumbprint|kid|signature|accept|stream|color|font|"
    r"class|style|checkpoint|model|repo)$")
_JWK_PUBLIC = frozenset({"n", "e", "x", "y", "x5c", "x5t", "kid"})
_PUBLIC_WORD = re.compile(r"(?i)public|publishable|pub[_-]?key|ssh-(?:rsa|ed25519|dss)|ecdsa-sha2|fingerprint|"
                          r"\b(?:sha\d{1,3}|md5)[:=-]\Z")
# credential words that may stand before a value with no operator (`api key is X`, `--body X`)
# (whole words or name parts: `API_KEY`, `apiKey`, `--body`, but not `AutoTokenizer`, `monkey`)
_CRED_WORD = re.compile(r"(?<![A-Za-z])(?i:api[ _-]?key|key|token|secret|passw(?:or)?d|passphrase|pwd|credentials?|"
                        r"bearer|auth)(?![a-z])|(?<=[a-z])(?:Key|Token|Secret|Password|Pwd|Credentials?)(?![A-Za-z])|--body\b")
# another flag between the credential word and the value: the word belonged to that flag's value
_OTHER_FLAG = re.compile(r"(?<!\S)--?[A-Za-z]")
_CLASS_RUNS = re.compile(r"[A-Z]+|[a-z]+|[0-9]+|[^A-Za-z0-9]+")
_DOCKER_ENV = re.compile(r"(?:^|\n)[ \t]*(?:ENV|ARG)[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]+\Z")


def class_changes(v: str) -> float:
    """Share of adjacent character pairs whose class (upper, lower, digit, other) differs."""
    return (len(_CLASS_RUNS.findall(v)) - 1) / max(1, len(v) - 1)  # runs of one class, counted in C


_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def word_share(v: str) -> float:
    """Share of `v` in letter segments of 4+ (`Removed`, `Django`, `HTTP`): ~0.2 for a random
    62-character-alphabet token (0.65 at the 99th percentile), 0.7-1.0 for an identifier."""
    return sum(len(s) for s in _SEGMENT.findall(v) if len(s) >= 4 and s.isalpha()) / max(1, len(v))


_PARTS = re.compile(r"[._/-]")
_B64_PARTS = re.compile(r"[._-]")
_CAMEL_WORDS = re.compile(r"(?:[a-z]{2,}|[A-Z]{0,3}[A-Z][a-z]{2,})(?:[A-Z]{0,3}[A-Z][a-z]{2,})*[A-Z]{0,4}")


def _word_part(p: str) -> bool:
    """A separator-delimited part that reads as a word or identifier (`meta`, `Qwen`, `DataRequest`)."""
    return len(p) >= 4 and p.isalpha() and (p.islower() or p.isupper() or _CAMEL_WORDS.fullmatch(p) is not None)


def mean_segment(v: str) -> float:
    """Mean length of the letter and digit segments of `v` (`Got|Ocr|2|Image|Processor`)."""
    segs = _SEGMENT.findall(v)
    return sum(map(len, segs)) / max(1, len(segs))


def random_token(v: str) -> bool:
    """Whether `v` is shaped like a generated credential (see the module docstring)."""
    if len(v) < 20 or alnum_classes(v) < 3 or v[:2] in ("0x", "0X"):
        return False  # (a hex number literal is code)
    body = v.rstrip("=")
    # cheapest tests first: most runs in code fail the class-change test; an entropy of 3.7 bits
    # needs at least 13 distinct characters
    if (class_changes(body) < 0.34 or len(set(body)) < 13 or word_share(body) >= 0.7
            or shannon_entropy(body) < 3.7 or _SEQUENTIAL.search(v)):
        return False
    # standard base64 (`+` in it, or `=` padding) has `/` at random: only `._-` separate its parts
    parts = (_B64_PARTS if "+" in body or v.endswith("=") else _PARTS).split(body)
    if "//" in body or (len(parts) > 1 and any(map(_word_part, parts))):
        return False  # a path, a dotted name, a model id, a dashed slug: words between separators
    if mean_segment(body) >= 3.2:
        return False  # `LapackILP64NotFoundError`: long words, where random text has 1-2 letter runs
    if looks_like_placeholder(v):
        return False
    return decode_b64_text(body.replace("-", "+").replace("_", "/")) is None


_HEX_RUN = re.compile(r"[0-9a-f]{32,}|[0-9A-F]{32,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _loose_token(v: str) -> bool:
    """The looser shape a value introduced by a credential word may have (`api key 52d7...`): hex
    digests, UUIDs and two-class tokens, which `random_token` leaves to named assignments."""
    if len(v) < 20 or looks_like_placeholder(v) or _SEQUENTIAL.search(v):
        return False
    if _HEX_RUN.fullmatch(v) or _UUID.fullmatch(v):
        return shannon_entropy(v.replace("-", "")) >= 3.2
    parts = _PARTS.split(v.rstrip("="))
    return (alnum_classes(v) >= 2 and any(c.isdigit() for c in v) and shannon_entropy(v) >= 3.5 and class_changes(v) >= 0.25
            and word_share(v) < 0.7 and mean_segment(v) < 3.2 and not any(map(_word_part, parts))
            and decode_b64_text(v.rstrip("=").replace("-", "+").replace("_", "/")) is None)


def _operator_name(text: str, start: int) -> tuple[str | None, str]:
    """(the name a value at `start` is assigned to, the operator kind) or (None, '')."""
    j = start
    if j and text[j - 1] in "\"'`":
        j -= 1
    while j and text[j - 1] in " \t":
        j -= 1
    if not j:
        return None, ""
    op = text[j - 1]
    if op == ">":
        if j >= 2 and text[j - 2] == "=":  # `=>`
            k = j - 2
        else:
            lt = text.rfind("<", max(0, j - 80), j)
            if lt < 0 or text[lt + 1:lt + 2] in "/!?" or PLACEHOLDER_RE.match(text, lt):
                return None, ""  # a closing tag, a comment, or a placeholder (`<SECRET_TOKEN_1> X`)
            tag = re.match(r"[A-Za-z][\w:.-]*", text[lt + 1:j - 1])
            return (tag.group(0) if tag else None), "xml"
    elif op in "=:":
        k = j - 1
        if op == ":" and (k and text[k - 1] == ":" or j == start):
            return None, ""  # `Foo::Bar`, `arn:aws:...:environment:ID`: a `:` glued to the value is no YAML/JSON key
    else:
        return None, ""
    while k and text[k - 1] in " \t\"'`]":
        k -= 1
    m = _NAME_BACK.search(text, max(0, k - 61), k)
    return (m.group(0) if m else ""), op


def _introduced(before: str) -> bool:
    """Whether a credential word stands in the 40 characters before a value on its line (`my api
    key is `, `--body `, `ENV ABBYSALE_KEY `). A redaction placeholder ends that window: the word
    before `token = "<SECRET_TOKEN_1>" X` introduced the redacted value, and a second pass over
    sanitized text must find what the first found, no more."""
    window = before[-40:]
    if ">" in window:  # a placeholder ends in the window (it may start before it)
        last = None
        for last in PLACEHOLDER_RE.finditer(before, max(0, len(before) - 120)):
            pass
        if last is not None:
            window = before[max(last.end(), len(before) - 40):]
    last = None
    for last in _CRED_WORD.finditer(window):
        pass
    return last is not None and _OTHER_FLAG.search(window, last.end()) is None


def detect_random_values(text: str, lower: str) -> Iterator[Candidate]:
    """See the module docstring."""
    if not has_token_run(text, 20):
        return
    for m in _RUN.finditer(text):
        s, e = m.span()
        if text[e:e + 1] and text[e] not in _AFTER_OK:
            continue
        v = text[s:e]
        line_start = text.rfind("\n", 0, s) + 1
        before = text[line_start:s]
        if not random_token(v):
            # a looser shape, but only right after a credential word: `my api key is 52d7...`
            if (_introduced(before) and _loose_token(v) and not _PUBLIC_WORD.search(before[-60:])
                    and _operator_name(text, s)[1] == ""):
                yield Candidate(s, e, PASSWORDS, "SECRET_TOKEN", "random_value", 1)
            continue
        if _PUBLIC_WORD.search(before[-60:]):
            continue
        name, op = _operator_name(text, s)
        if name is not None and op:
            if name and (_NOT_SECRET_NAME.search(name.strip("_.-")) or _KEY_NOT_SECRET.match(name.lstrip("_.-"))):
                continue  # `request_id`, `checksum`, `csrf-token`: named as something public or derived
            if name in _JWK_PUBLIC and "\"kty\"" in text:
                continue  # a JSON Web Key's public members (RSA modulus and exponent, EC coordinates)
            if op == ":" and s and text[s - 1] == ":" and not name:
                continue
            yield Candidate(s, e, PASSWORDS, "SECRET_TOKEN", "random_value", 1)
            continue
        env = _DOCKER_ENV.search(text, max(0, line_start - 1), s)
        if env is not None and not _NOT_SECRET_NAME.search(env.group(1)):
            yield Candidate(s, e, PASSWORDS, "SECRET_TOKEN", "random_value", 1)
            continue
        if _introduced(before):
            yield Candidate(s, e, PASSWORDS, "SECRET_TOKEN", "random_value", 1)

