"""Credential-shaped tokens found by what stands near them rather than by an operator.

Secret scanners (TruffleHog's detectors, Nosey Parker's rules) key most services the same way: a
service word, then within a short window a token of the service's shape, whatever separates
the two. This module does that in three families:

- **service word near a token**: a name from `service_names.SERVICE_NAMES` (as a word or a name
  part: `MAILGUN_KEY`, `mailgunKey`, `Mailgun.init(`) or an identifier that ends in a credential
  word glued to a vendor name (`ACMEKEY`, `acmeApiKey`, `ACME_TOKEN`), then a credential-shaped
  token starting within `WINDOW` characters (one line break at most), with no word between the
  two that names something public or derived (`id`, `commit`, `version`, `sha`, `public`, ...);
- **prefix-shaped tokens**: `<vendor>[<sep><kind>]<sep><tail>` where the vendor is a short
  lower-case word, the separator `_`, `-` or `.`, the optional kind a credential kind (`live`,
  `pat`, `sk`, `v1`, ...) and the tail long and random by the token class's own shape (mixed
  base62, lower-case base36 with digits, or hex); documented id prefixes (`call_`, `toolu_`,
  `msg_`, Stripe object ids, ...), digest names and file names are not credentials;
- **tokens in URL paths**: a random segment after a path word that names a hook or a key
  (`/webhook/`, `/hooks/`, `/services/`, `/key/`) or before a collector word (`/<t>/telemetry`).

A token is credential-shaped (`credential_shaped`) when it is hex of 32+ with letters and digits,
a UUID, base64 of 30+, or base62/base36 of 20+ holding digits, with a high entropy and none of the
word segments identifiers have; sequential dummies (`abcdef0123...`) and placeholders are not.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import SAAS
from .prefilter import trie_pattern
from .random_values import class_changes, word_share
from .service_names import SERVICE_NAMES
from .validators import has_token_run, looks_like_placeholder, shannon_entropy, token_shape

WINDOW = 40  # a token must start this close after the keyword's name (TruffleHog's prefix window)

_SERVICE_RX = re.compile(trie_pattern(SERVICE_NAMES))
# an identifier ending in a credential word: `ACMEKEY`, `acmeApiKey`, `ACME_API_TOKEN`, `acme-secret`
_CRED_TAIL = re.compile(r"(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|secret|key)\Z", re.I)
_CRED_WORD_END = re.compile(r"(?:key|token|secret)(?![a-z0-9])")  # on the lower-cased text
_NAME = re.compile(r"[A-Za-z0-9_.-]{0,30}")
_NAME_BACK = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,40}\Z")
_TOKEN = re.compile(r"[A-Za-z0-9+/=_.~-]{16,160}")
_TOKEN_START = re.compile(r"[A-Za-z0-9+/]")
# words between keyword and token (or ending the keyword's name) that make the value public or derived
_GAP_STOP = re.compile(
    r"(?i)(?:^|[^a-z])(?:ids?|uuid|guid|hash|sha\d*|md5|digest|checksum|commit|version|v|build|revision|rev|image|tag|"
    r"url|uri|path|file|name|user(?:name)?|account|org|project|region|public|publishable|pub|site|zone|channel|order|"
    r"request|customer|invoice|issue|ref|number|no|host|domain|email|endpoint|app[_ -]?id|client[_ -]?id)(?:$|[^a-z])")
_NAME_STOP = re.compile(r"(?i)(?:ids?|uuid|url|uri|path|file|name|user|version|host|domain|region|endpoint|sid)\Z")
_SEQUENTIAL = re.compile(r"(?i)abcdefgh|01234567|12345678|qwertyui|0123456789")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_B64 = re.compile(r"[A-Za-z0-9+/]{30,}={0,2}")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_DIGIT_RUN = re.compile(r"[0-9]+")


def random_alnum(v: str) -> bool:
    """Letters and digits drawn at random: in mixed case the character class changes at a third
    of the positions or more (~0.6 for random base62, ~0.2 for camelCase words); in one case the
    digits are spread over several runs (~6 in 32 random base36 characters; `base64encoded1` has 2)."""
    digits = sum(c.isdigit() for c in v)
    if digits == 0 or digits == len(v):
        return False
    upper, lower = any(c.isupper() for c in v), any(c.islower() for c in v)
    if upper and lower:
        return class_changes(v) >= 0.35 and word_share(v) < 0.5 and shannon_entropy(v) >= 3.6
    runs = len(_DIGIT_RUN.findall(v))
    return (runs >= (3 if len(v) < 32 else 4) and 0.1 <= digits / len(v) <= 0.7 and shannon_entropy(v) >= 3.5)


def credential_shaped(v: str) -> bool:
    """Whether `v` has the shape of a generated credential (module docstring)."""
    if len(v) < 20 or _SEQUENTIAL.search(v) or looks_like_placeholder(v) or len(set(v)) < 10:
        return False
    digits = sum(c.isdigit() for c in v)
    if _HEX.fullmatch(v):
        return len(v) >= 32 and 0 < digits < len(v) and shannon_entropy(v) >= 3.3
    if _UUID.fullmatch(v):
        return shannon_entropy(v.replace("-", "")) >= 3.3
    if _B64.fullmatch(v) and ("+" in v or "/" in v or v.endswith("=")):
        body = v.rstrip("=")
        return (shannon_entropy(body) >= 4.2 and digits > 0 and any(c.isupper() for c in v)
                and any(c.islower() for c in v) and class_changes(body) >= 0.35 and "//" not in v)
    return _ALNUM.fullmatch(v) is not None and random_alnum(v)


def _name_part_start(text: str, s: int) -> bool:
    """A service word starts a name part at `s`: no letter before it, or a camelCase boundary."""
    if s == 0:
        return True
    p = text[s - 1]
    return not p.isalpha() or (p.islower() and text[s].isupper())


def _anchors(text: str, lower: str, lo: int, hi: int) -> Iterator[int]:
    """End offsets of service names in [lo, hi) after which a token may follow."""
    for m in _SERVICE_RX.finditer(lower, lo, hi):
        s, e = m.span()
        if not _name_part_start(text, s):
            continue
        nxt = text[e:e + 1]
        if nxt.islower() and not text[s:e].islower():
            continue  # `Stripes`: the name goes on in lower case
        if nxt.islower() and text[s:e].islower():
            continue  # `stripey`
        ne = _NAME.match(text, e).end()
        while ne > e and text[ne - 1] in ".-_":
            ne -= 1
        if _NAME_STOP.search(text, e, ne) or _GAP_STOP.search(text[e:ne]):
            continue  # `STRIPE_ACCOUNT_ID`, `mailgun_domain`: the name is of something public
        yield ne


def _cred_anchors(text: str, lower: str, lo: int, hi: int) -> Iterator[int]:
    """End offsets of identifiers in [lo, hi) ending in a glued credential word (`ACMEKEY`, `acmeApiKey`)."""
    for m in _CRED_WORD_END.finditer(lower, lo, hi):
        e = m.end()
        nb = _NAME_BACK.search(text, max(0, e - 41), e)
        if nb is None:
            continue
        name = nb.group(0)
        cm = _CRED_TAIL.search(name)
        if cm is None:
            continue
        head, word = name[:cm.start()], cm.group(0)
        if len(head.rstrip("_-")) < 3:
            continue
        if head[-1].isalnum():  # glued: `acmeApiKey` (camelCase) or `ACMEKEY` (all upper)
            if not (word[0].isupper() and (head[-1].islower() or (head.isupper() and word.isupper()))):
                continue  # `monkey`, `turkey`, `Hotkey`: a word, not vendor + credential word
        if _GAP_STOP.search(head):
            continue
        yield e


_RUN_TAIL = re.compile(rb"a*")
_UUID_MIDDLE = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
_ZONE_BACK = WINDOW + 72  # a token's anchor ends within WINDOW of it; its name (<= 71 characters) before that


def _anchor_zones(text: str) -> list[tuple[int, int]]:
    """Where anchors of a token can lie: the stretch before each run of 20+ token characters (and
    each UUID). Only those stretches are scanned for service words: most text has few such runs,
    and the service-name scan is the costly part. Falls back to the whole text when it is not ASCII
    (the run map is over UTF-8 bytes)."""
    if not text.isascii():
        return [(0, len(text))]
    shape = token_shape(text)
    starts = []
    i = shape.find(b"a" * 20)
    while i >= 0:
        starts.append(i)
        i = shape.find(b"a" * 20, _RUN_TAIL.match(shape, i).end())
    if "-" in text:
        starts.extend(max(0, m.start() - 8) for m in _UUID_MIDDLE.finditer(text))
    zones: list[list[int]] = []
    for st in sorted(starts):
        lo, hi = max(0, st - _ZONE_BACK), st + 1
        if zones and lo <= zones[-1][1]:
            zones[-1][1] = max(zones[-1][1], hi)
        else:
            zones.append([lo, hi])
    return [(a, b) for a, b in zones]


def detect_keyword_tokens(text: str, lower: str) -> Iterator[Candidate]:
    """Service word or glued credential word, then a credential-shaped token within `WINDOW`."""
    if not has_token_run(text, 20):
        return
    anchors: set[int] = set()
    for lo, hi in _anchor_zones(text):
        anchors.update(_anchors(text, lower, lo, hi))
        anchors.update(_cred_anchors(text, lower, lo, hi))
    seen: set[int] = set()
    for ne in sorted(anchors):
        stop = min(len(text), ne + WINDOW)
        nl = text.find("\n", ne, stop)
        if nl >= 0:
            nl2 = text.find("\n", nl + 1, stop)
            if nl2 >= 0:
                stop = nl2
        pos = ne
        while pos < stop:
            tm = _TOKEN.search(text, pos, stop + 160)
            if tm is None or tm.start() >= stop:
                break
            s, e = tm.span()
            pos = e + 1
            while e > s and text[e - 1] in ".=-_~" and not text[s:e].endswith("=="):
                if text[e - 1] == "=" and _B64.fullmatch(text[s:e]):
                    break
                e -= 1
            v = text[s:e]
            if s in seen or len(v) < 20:
                continue
            if s and text[s - 1] in "/@:#$%\\" or text[e:e + 1] in ("(", "/", "@") or text[e:e + 2] in (".j", ".c", ".p"):
                continue  # a path, an e-mail or digest notation, a call, a file name
            if not credential_shaped(v):
                continue
            if _GAP_STOP.search(text[ne:s]):
                break  # `stripe customer id ...`: what follows is named as something public
            seen.add(s)
            yield Candidate(s, e, SAAS, "SECRET_API_KEY", "keyword_token", 2)


# ---------------------------------------------------------------- prefix-shaped tokens
_KINDS = r"live|test|prod|pat|sk|api|v\d|key|tok|sec|secret|oauth|app|sa|rt|at|dev|int"
_PTAIL = re.compile(r"[._-]([A-Za-z0-9]{24,100})(?![A-Za-z0-9_/+=-]|\.[A-Za-z0-9])")
# (not after `+`: a PEP 440 local version, `1.6.0+dev.<commit>`)
_PREFIX_BACK = re.compile(rf"(?<![A-Za-z0-9_.\-/@:$%+])([a-z][a-z0-9]{{1,9}})(?:([._-])({_KINDS}))?([._-])\Z")
# documented identifier prefixes (tool-call and message ids, API object ids), publishable-key
# prefixes (`pk_live_...` is meant to ship in a web page), and digest or file words
_ID_PREFIXES = frozenset(
    "call toolu srvtoolu msg chatcmpl cmpl run thread asst batch resp req evt cus prod price pi ch sub txn acct in ii "
    "si seti src po tr re ba file files img image asset assets static chunk main vendor runtime bundle app build cache "
    "commit git blob tree obj sha md hash rev ver id uuid tmp temp test page user org node item data sess session job "
    "task trace span log pr ci cd doc docs fig plot frame step epoch ckpt model layer tok pk pub".split())
_ID_WORD = re.compile(r"(?i)\b(?:ids?|identifiers?)\b")
_DIGEST = re.compile(r"(?:sha|md|blake|sm|ripemd|crc|xxh|murmur)\d")


def _prefixed_tail_ok(tail: str) -> bool:
    if _SEQUENTIAL.search(tail) or len(set(tail)) < 12:
        return False
    if _HEX.fullmatch(tail):
        digits = sum(c.isdigit() for c in tail)
        return len(tail) >= 32 and 0 < digits < len(tail) and tail.islower() and shannon_entropy(tail) >= 3.4
    if tail.isupper() or (not any(c.isupper() for c in tail) and len(tail) < 28):
        return False  # an upper-case constant; a short lower-case tail could be a slug
    return random_alnum(tail) and shannon_entropy(tail) >= 3.8


def detect_prefix_shaped(text: str, lower: str) -> Iterator[Candidate]:
    """`<vendor>[<sep><kind>]<sep><random tail>` tokens (module docstring)."""
    if not has_token_run(text, 24):
        return
    for m in _PTAIL.finditer(text):
        pm = _PREFIX_BACK.search(text, max(0, m.start() - 24), m.start() + 1)
        if pm is None:
            continue
        vendor, sep1, kind, sep2 = pm.groups()
        if sep1 is not None and sep1 != sep2:
            continue
        if vendor in _ID_PREFIXES or _DIGEST.match(vendor) or vendor.isdigit():
            continue
        if sep2 == "." and kind is None and len(vendor) < 3:
            continue  # `xa.<hex>` alone reads as an attribute; with a kind (`xa.pat.`) it is a format
        tail = m.group(1)
        if not _prefixed_tail_ok(tail):
            continue
        if len(tail) < 28 and tail.startswith("01"):
            continue  # a time-ordered typed id (`wrkspc_011CZk...`, `rlg_01VPT...`): ULID-style ids open with `01`
        s = pm.start()
        line_start = text.rfind("\n", max(0, s - 80), s) + 1
        if _ID_WORD.search(text, max(line_start, s - 80), s):
            continue  # introduced as an identifier (`Workspace ID (for example, ...)`)
        yield Candidate(s, m.end(1), SAAS, "SECRET_API_KEY", "prefix_shaped_token", 2)


# ---------------------------------------------------------------- tokens in URL paths
_PATH_BEFORE = re.compile(
    r"(?i)/(?:webhooks?|hooks?|services|key|keys|token|tokens|secret|secrets|apikey|api_key|incoming|catch|notify)"
    r"/(?:[A-Za-z0-9_-]{1,30}/){0,2}?([A-Za-z0-9_-]{20,128})(?=[/?#\s\"'<>)\]`]|\Z)")
_PATH_AFTER = re.compile(r"/([A-Za-z0-9_-]{20,128})/(?:telemetry|collect|ingest|beacon|track)(?=[/?#\s\"'<>)\]`]|\Z)", re.I)


def detect_url_path_tokens(text: str, lower: str) -> Iterator[Candidate]:
    """A random path segment after a hook/key path word, or before a collector word."""
    if "/" not in text or not has_token_run(text, 20):
        return
    for rx in (_PATH_BEFORE, _PATH_AFTER):
        for m in rx.finditer(text):
            v = m.group(1)
            if credential_shaped(v) or _prefixed_tail_ok(v.replace("_", "").replace("-", "")):
                yield Candidate(m.start(1), m.end(1), SAAS, "SECRET_WEBHOOK_TOKEN", "url_path_token", 2)
