"""Credentials a document states outright, in shapes with no `name = value` operator:

- INI sections (`[Credentials]` then `Username=...` / `Password=...`): a credential key's value on
  its own line is literal text in an INI file, even when it is a plain lower-case word (which the
  assignment detector reads as a code reference elsewhere);
- HashiCorp Vault unseal keys: `vault operator unseal <key>` and the `Unseal Key N: <key>` lines
  `vault operator init` prints (base64 key shares);
- passwords stated in prose: `the default password is '...'`, `new password X`, `the password for
  the db user is X`, `credentials are admin / X` -- a quoted value, or an unquoted one that holds a
  digit or a symbol (a plain word after "password is" is prose: `empty`, `wrong`);
- Kerberos roastable hashes (`$krb5asrep$...`, `$krb5tgs$...`, hashcat/John formats) and pwdump
  lines (`user:RID:LM:NT:::`, the NT hash; the empty-password LM constant is not a secret).
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import _NAMES_A_CREDENTIAL, Candidate
from .patterns import PASSWORDS
from .validators import char_classes, looks_like_placeholder

_INI_SECTION = re.compile(r"(?m)^[ \t]*\[[A-Za-z0-9 _.:-]{1,60}\][ \t]*\r?$")
_INI_CRED = re.compile(
    r"(?mi)^[ \t]*(?:password|passwd|pwd|pass|secret|client_secret|api_?key|token|auth_token)[ \t]*[=:][ \t]*"
    r"(?P<v>[^\s;#\"'][^\n;#]{3,200}?)[ \t]*\r?$")
_UNSEAL = re.compile(r"(?:\bvault[ \t]+operator[ \t]+unseal(?:[ \t]+-[\w=-]+)*[ \t]+|\bUnseal Key \d{1,2}:[ \t]*)"
                     r"(?P<v>[A-Za-z0-9+/]{40,}={0,2})(?![A-Za-z0-9+/=])")
_PROSE = re.compile(
    r"(?i)\b(?:(?:default|initial|admin|root|new|temporary|the|my|wifi|wi-fi)[ \t]+)?password"
    r"(?:[ \t]+for[ \t]+(?:the[ \t]+)?[\w .-]{1,30}?)?"
    r"(?:[ \t]+(?:is|was|are|remains)(?:[ \t]+(?:now|still|set[ \t]+to))?|[ \t]+(?:set|changed)[ \t]+to|[ \t]*:|(?<=new password))"
    r"[ \t]+(?P<v>'[^'\n]{4,64}'|\"[^\"\n]{4,64}\"|`[^`\n]{4,64}`|[^\s'\"`]{6,64})")
_CRED_PAIR_PROSE = re.compile(r"(?i)\bcredentials?[ \t]+(?:are|is|:)[ \t]+[\w.@-]{2,40}[ \t]*/[ \t]*(?P<v>[^\s,;()]{6,64})")
# an unquoted password in prose: no brackets, dots or commas (code and sentences have those)
_UNQUOTED_PW = re.compile(r"[A-Za-z0-9!@#$%^&*+=_~-]{6,64}")
_KRB = re.compile(r"\$krb5(?:asrep|tgs|pa)\$\d{1,2}\$[^\s]{0,200}?\$[0-9a-fA-F]{32,}(?![0-9a-fA-F])")
_PWDUMP = re.compile(r"(?m)^[^:\s]{1,64}:\d{1,10}:(?P<lm>[0-9a-fA-F]{32}):(?P<nt>[0-9a-fA-F]{32}):::")
_EMPTY_LM = "aad3b435b51404eeaad3b435b51404ee"
_EMPTY_NT = "31d6cfe0d16ae931b73c59d7e0c089c0"


def _unquote(v: str) -> tuple[str, int]:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"`":
        return v[1:-1], 1
    return v, 0


def detect_stated_credentials(text: str, lower: str) -> Iterator[Candidate]:
    """See the module docstring."""
    if "=" in text or ":" in text:
        if ("pass" in lower or "pwd" in lower or "secret" in lower or "key" in lower or "token" in lower) \
                and _INI_SECTION.search(text):
            for m in _INI_CRED.finditer(text):
                v = m.group("v").rstrip()
                if not looks_like_placeholder(v) and len(v) >= 4:
                    yield Candidate(m.start("v"), m.start("v") + len(v), PASSWORDS, "SECRET_PASSWORD", "ini_credential", 2)
    if "unseal" in lower:
        for m in _UNSEAL.finditer(text):
            yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_VAULT_UNSEAL_KEY", "vault_unseal_key", 3)
    if "password" in lower:
        for m in _PROSE.finditer(text):
            raw = m.group("v")
            v, q = _unquote(raw)
            if not q:
                v = v.rstrip(".,;:!?)")
                if _UNQUOTED_PW.fullmatch(v) is None or not any(c.isdigit() for c in v):
                    continue  # `is empty`, `is wrong`, `: Optional[str]`: prose or code
            if looks_like_placeholder(v) or len(v) < 4 or (not q and char_classes(v) < 2) or _NAMES_A_CREDENTIAL.search(v):
                continue
            s = m.start("v") + q
            yield Candidate(s, s + len(v), PASSWORDS, "SECRET_PASSWORD", "prose_password", 2)
    if "credential" in lower:
        for m in _CRED_PAIR_PROSE.finditer(text):
            v = m.group("v").rstrip(".,;:!?)")
            if not looks_like_placeholder(v) and char_classes(v) >= 2 and _UNQUOTED_PW.fullmatch(v):
                yield Candidate(m.start("v"), m.start("v") + len(v), PASSWORDS, "SECRET_PASSWORD", "prose_password", 2)
    if "$krb5" in lower:
        for m in _KRB.finditer(text):
            yield Candidate(m.start(), m.end(), PASSWORDS, "SECRET_PASSWORD_HASH", "kerberos_hash", 3)
    if ":::" in text:
        for m in _PWDUMP.finditer(text):
            for g in ("lm", "nt"):
                h = m.group(g).lower()
                if h not in (_EMPTY_LM, _EMPTY_NT):
                    yield Candidate(m.start(g), m.end(g), PASSWORDS, "SECRET_PASSWORD_HASH", "pwdump_hash", 3)
