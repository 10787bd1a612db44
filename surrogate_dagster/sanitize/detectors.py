"""Context detectors for categories 4 and 6: private keys, and passwords/credentials found by
their surroundings (assignments, URLs, connection strings, command lines, HTTP headers), plus a
keyword-free high-entropy quoted-string detector.

Every detector yields `Candidate`s; the engine resolves overlaps. Quotes may be escaped
(`\\"password\\": \\"...\\"` inside JSON strings) and values stop at a literal `\\n`, so secrets in
escaped JSON are found where they sit, with no unescaping pass.
"""
from __future__ import annotations

import re
from typing import Iterator, NamedTuple

from .patterns import JWT, PASSWORDS, PKEY
from .validators import (CONTINUATION, alnum_classes, char_classes, decode_b64_text, has_token_run,
                         join_continuations, looks_like_placeholder, shannon_entropy)


class Candidate(NamedTuple):
    """A span to replace: [start, end) in the scanned text."""

    start: int
    end: int
    category: str
    tag: str
    rule: str
    priority: int  # higher wins an overlap: provider formats > context rules > generic entropy


# ---------------------------------------------------------------- (4) private keys and certs
_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 _-]{0,60}?(PRIVATE KEY(?: BLOCK)?|CERTIFICATE))-----")
_B64ISH = re.compile(r"[A-Za-z0-9+/=]")
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d: [^\n]*(?:\n[^\n]+){1,60}")


def detect_private_keys(text: str, lower: str) -> Iterator[Candidate]:
    """PEM private keys, PGP private key blocks, certificates and PuTTY key files.

    A block needs a body of >= 20 base64 characters (an empty `BEGIN..END` is documentation).
    Without an END line (truncated paste) the block runs to the next blank line.
    """
    if "-----begin" in lower:
        for m in _PEM_BEGIN.finditer(text):
            label = m.group(1)
            end_marker = f"-----END {label}-----"
            end = text.find(end_marker, m.end(), m.end() + 40000)
            if end >= 0:
                stop = end + len(end_marker)
                body = text[m.end():end]
            else:
                blank = re.compile(r"\n[ \t]*\n|\\n\\n|\Z").search(text, m.end())
                stop = blank.start() if blank else len(text)
                body = text[m.end():stop]
            # with an END line the body must look like key material (an empty or `...` body is
            # documentation); a BEGIN line with no END is a truncated paste: redact what follows
            if end >= 0 and len(_B64ISH.findall(body.replace("\\n", ""))) < 20:
                continue
            cert = m.group(2) == "CERTIFICATE"
            yield Candidate(m.start(), stop, PKEY, "CERTIFICATE" if cert else "SECRET_PRIVATE_KEY",
                            "pem_block", 4)
    if "putty-user-key-file" in lower:
        for m in _PUTTY.finditer(text):
            if "Private-Lines" in m.group(0):
                yield Candidate(m.start(), m.end(), PKEY, "SECRET_PRIVATE_KEY", "putty_key", 4)


# ---------------------------------------------------------------- (6) passwords / credentials
# Strong keywords: the value is a password whatever it looks like (if not a placeholder).
# Weak keywords: the value must also look random (entropy floor, mixed character classes).
# `psk`, `PresharedKey`, `keyMaterial`: Wi-Fi/IPsec/WireGuard pre-shared keys (hostapd, pfSense, WLAN profiles)
_STRONG = (r"passw(?:or)?d|passwd|pwd|passphrase|pass|pw|secrete?|private[_.-]?key|client[_.-]?secret|psk|authtok|"
           r"pre[_.-]?shared[_.-]?key|key[_.-]?material")
_WEAK = (r"token|api[_.-]?key|apikey|access[_.-]?key|auth[_.-]?key|credentials?|creds|"
         r"signing[_.-]?key|encryption[_.-]?key|master[_.-]?key")
# bare `key` is the weakest signal of all: stricter value test, and many key names are not secrets
_KEYWORD = r"key"
# bare `auth` names a credential in Docker/npm/Redis configs (`"auth": "<base64>"`, `masterauth`) but
# also objects in code (`auth: AuthConfig`): its value must carry a digit as well (`_value_ok`)
_AUTH = r"auth"
_KW = re.compile(rf"(?i)({_STRONG})|({_WEAK})|({_KEYWORD})|({_AUTH})")
# Cheap gate on the lower-cased text: a keyword, the rest of a name, then an operator. Most
# keyword hits in code (`for key in`, `self.token)`) fail here, inside the regex engine.
_GATE = re.compile(r"(?:pass|pw|psk|pre.?shared.?key|secret|private.?key|client.?secret|token|api.?key|apikey|access.?key|auth|"
                   r"credential|creds|signing.?key|encryption.?key|master.?key|key)[\w.-]{0,40}?[\\\"'`\]]{0,4}[ \t]*"
                   r"(?:=|:|,|\(|>|!=|[ \t]@?\\?[\"'`]|(?<=[ \t])[\w:.-]{1,40}=[\"'])")
# a weak keyword glued to a lower-case prefix (`jsonwebtoken`) counts only after these words
_GLUED_OK = frozenset({"access", "auth", "api", "bearer", "refresh", "session", "id", "bot", "app", "user", "client",
                       "secret", "private", "oauth", "github", "gitlab", "slack", "npm", "pypi", "hf", "service",
                       "master", "admin", "root", "db", "my", "x", "personal", "deploy", "license", "signing"})
# `pass`/`pw` glued to a word counts only after these (`requirepass`, `SSHPASS`, `dbpass`); `bypass`,
# `compass`, `overpass` stay words
_PASS_GLUED_OK = _GLUED_OK | frozenset({"require", "ssh", "smtp", "mail", "ldap", "bind", "redis", "mysql", "pg",
                                        "sql", "ftp", "proxy", "store", "key", "vnc", "sudo", "login", "web", "sa",
                                        "rabbit", "mongo", "postgres", "keystore", "truststore"})
_KEY_NOT_SECRET = re.compile(r"(?i)^(?:public|pub[_.-]|csrf|xsrf|primary|foreign|sort|partition|cache|idempoten|row|"
                             r"hot|shortcut|keyboard|sequence|schema|bucket|object|s3|map|dict|hash|lookup|cursor|"
                             r"group|routing|unique|composite|natural|surrogate|sharding|index|kms|ssh[_.-]?pub)")
_KEY_CH = r"[A-Za-z0-9_.-]"
# after the key name: optional closing quote/bracket, an assignment operator, an opening quote
_ASSIGN_TAIL = re.compile(
    r"(?P<kq>\\*[\"'`])?(?:\s*\])?[ \t]*(?P<op>:=|::=|:::=|=>|===?|!==?|\?\?=|\?=|\.=|\|\||=|:|,|\((?=[ \t]*\\?[\"'`])|[ \t](?=[ \t]*@?\\?[\"'`]))"
    r"[ \t]*(?:\[\]\s*)?@?(?:[bBrRuU]{1,2}(?=[\"']))?(?P<vq>\\*[\"'`])?")
_QVAL_PLAIN = {"\"": re.compile(r"((?:[^\"\\\n]|\\[^\n])*)\""), "'": re.compile(r"((?:[^'\\\n]|\\[^\n])*)'"),
               "`": re.compile(r"([^`\n]*)`")}
_QVAL = {"\"": re.compile(r"((?:[^\"\\\n]|\\(?!\"|n))*)\\?\""), "'": re.compile(r"((?:[^'\\\n]|\\(?!'|n))*)\\?'"),
         "`": re.compile(r"([^`\n]*)`")}
_CALL = re.compile(r"[A-Za-z_][\w.]*[(\[]")
_UVAL = re.compile(r"[^\s\"'`,;\\]+")
_NON_SECRET_SUFFIX = re.compile(
    r"(?i)(?:^|[_.-]|(?<=[a-z]))(?:ids?|names?|urls?|uris?|files?|paths?|size|length|len|types?|format|"
    r"fields?|labels?|prompts?|polic(?:y|ies)|headers?|count|expir\w*|timeouts?|ttl|min|max|mode|"
    r"endpoint|regexp?|pattern|columns?|class|version|hint|dir|at|hash|salt|reset|confirm|"
    r"strength|rules?|store|manager|mgr|provider|service|generator|validator|input|placeholder|location|handler|"
    r"helper|factory|widget|form|dialog|realm|callback|hook|changed?|enabled|required|visible|label)$")
_CODE_REF = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*$|^[a-z_]+$|^[A-Z_]+$|^(?:true|false|null|none|nil)$",
                       re.I)


# a value that itself names a credential is a field name or a dummy: 'aws_secret_access_key',
# 'AWSSecretKey', 'role-secret-key', 'HTTPPasswordMgr'
_NAMES_A_CREDENTIAL = re.compile(r"(?i)secret|passw|token|credential|key(?![a-z])|_key|apikey")


_YAML_TAG = re.compile(r"!{1,2}[A-Za-z][A-Za-z:./_-]*(?:[ \t]|$)")


def _value_ok(value: str, strong: bool, quoted: bool, bare_key: bool = False, bare_auth: bool = False) -> bool:
    v = value.strip()
    if looks_like_placeholder(v) or not any(c.isalnum() for c in v) or _NAMES_A_CREDENTIAL.search(v):
        return False
    if v[0] == "!" and _YAML_TAG.match(v):
        return False  # a YAML tag (`!vault |`, `!Ref DbSecret`): the value is elsewhere
    if bare_auth and not any(c.isdigit() for c in v):
        return False  # `auth: AuthConfig`, `"auth": "basic"`: a type or a scheme
    if bare_key:
        if v.startswith("base64:"):
            v = v[7:]  # Laravel-style `APP_KEY=base64:...`
        # hex draws from 16 symbols: 32 random hex characters average ~3.7 bits and often fall under 3.5
        floor = 3.2 if _HEX.fullmatch(v) and len(v) >= 32 else 3.5
        return (len(v) >= 16 and " " not in v and shannon_entropy(v) >= floor and alnum_classes(v) >= 2
                and _CODE_REF.match(v) is None and ("/" not in v or _b64_key(v)))
    if strong:
        if quoted:
            return len(v) >= 4
        return (len(v) >= 6 and (_CODE_REF.match(v) is None or _random_case(v) or _dotted_passphrase(v))
                and (char_classes(v) >= 2 or len(v) >= 12))
    if " " in v or v.lower().startswith(("http://", "https://", "file:")):
        return False
    return (len(v) >= 8 and shannon_entropy(v) >= 3.0 and char_classes(v) >= 2 and _CALL_EXPR.fullmatch(v) is None
            and _CODE_REF.match(v) is None)


_CALL_EXPR = re.compile(r"[A-Za-z_][\w.]*\(.*\)")  # `google.auth.default()`: code quoted in prose


# first parts of dotted names that are code, not words of a passphrase
_CODE_ROOTS = frozenset({"self", "this", "cls", "config", "conf", "cfg", "settings", "env", "os", "process", "app",
                         "secrets", "vault", "params", "props", "options", "opts", "ctx", "context", "request", "req",
                         "args", "kwargs", "values", "vars", "var", "data", "input", "inputs", "credentials", "creds",
                         "keys", "user", "current", "session", "window", "document", "module", "exports", "import"})
_DOTTED_WORDS = re.compile(r"[a-z]{3,}\d*(?:\.[a-z]{3,}\d*){2,}")


def _dotted_passphrase(v: str) -> bool:
    """Three or more lower-case words joined by dots (`birch.correct.sierra36`): a passphrase,
    unless it opens like code (`config.db.password`) or names a credential."""
    return (_DOTTED_WORDS.fullmatch(v) is not None and v.split(".", 1)[0] not in _CODE_ROOTS
            and _NAMES_A_CREDENTIAL.search(v) is None)


_B64_KEY = re.compile(r"[A-Za-z0-9+/]{20,}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def _b64_key(v: str) -> bool:
    """Standard base64 key material (`q8F1xJ/9mZ0k...=`), as opposed to a path (`keys/dev/app`)."""
    return (_B64_KEY.fullmatch(v) is not None and v[0] != "/" and "//" not in v and alnum_classes(v) == 3
            and shannon_entropy(v) >= 4.0)


def _random_case(v: str) -> bool:
    """Letters whose case flips at a third of the positions or more (`tCDyAPYUtVQwTDq`): a random
    value, where an identifier (`currentUserPassword`, `DB_PASS`) flips at word starts only."""
    if len(v) < 10 or not v.isalpha():
        return False
    flips = sum(1 for a, b in zip(v, v[1:]) if a.isupper() != b.isupper())
    return flips * 3 >= len(v) and shannon_entropy(v) >= 3.3


_NAME_BACK = re.compile(r"[A-Za-z0-9_.-]{0,50}\Z")
_NAME_FWD = re.compile(r"[A-Za-z0-9_.-]{0,40}")


def _key_bounds(text: str, kw_start: int, kw_end: int) -> tuple[int, int]:
    """The whole name around a keyword: `aws_secret_access_key`, `DB_PASSWORD`."""
    s = _NAME_BACK.search(text, max(0, kw_start - 50), kw_start).start()
    return s, _NAME_FWD.match(text, kw_end).end()


def detect_assignments(text: str, lower: str) -> Iterator[Candidate]:
    """`password = "..."`, `API_TOKEN: ...`, `"client_secret": "..."`, `Pwd=...;`, XML elements,
    `setProperty("X_TOKEN", "...")` and reversed comparisons `"..." == password`."""
    # every _GATE alternative contains one of these words: a few substring scans spare most
    # documents the regex (which is tried at every p/s/c/t/a/e/m/k)
    gate = ("key" in lower or "pass" in lower or "token" in lower or "secret" in lower or "pw" in lower
            or "cred" in lower or "auth" in lower or "psk" in lower)
    pos = 0 if gate else -1
    while pos >= 0:
        g = _GATE.search(lower, pos)
        if g is None:
            break
        m = _KW.match(text, g.start())
        pos = g.start() + 1
        if m is None:
            continue
        pos = m.end()
        strong = m.group(1) is not None
        bare_key = m.group(3) is not None
        bare_auth = m.group(4) is not None
        kw = m.group(0).lower()
        after = text[m.end():m.end() + 1]
        before = text[m.start() - 1:m.start()] if m.start() else ""
        # `tokenizer`, `passenger`, `author`, `keyword`: the keyword is part of another word
        if after.islower() and not m.group(0).isupper():
            continue
        if kw in ("pass", "pw") and before.isalpha():
            j = m.start()
            while j > 0 and text[j - 1].isalpha() and (text[j - 1].isupper() == before.isupper()):
                j -= 1
            if text[j:m.start()].lower() not in _PASS_GLUED_OK:
                continue  # bypass, compass
        if not strong and not bare_auth and before.islower() and m.group(0)[0].islower():  # camelCase `genericToken` is fine
            j = m.start()
            while j > 0 and text[j - 1].islower():
                j -= 1
            if text[j:m.start()].lower() not in _GLUED_OK:
                continue  # jsonwebtoken, monkey, hotkey
        ks, ke = _key_bounds(text, m.start(), m.end())
        key = text[ks:ke]
        if (bare_key or bare_auth) and text[m.end():ke].rstrip("0123456789") not in ("", "s"):
            continue  # `keyStr`, `KeyMeshing`: `key` must end the name to mean a credential
        if _NON_SECRET_SUFFIX.search(key) or _KEY_NOT_SECRET.match(key.lstrip("_.-")):
            continue
        if ks and text[ks - 1] == ":" and _ARN_BACK.search(lower, max(0, ks - 120), ks):
            continue  # `arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME`: an ARN names a secret
        # XML element <password>value</password>, also namespaced (<db:password>) and CDATA-wrapped
        tag_start = ks
        if ks > 1 and text[ks - 1] == ":":
            ns = _XML_NS_BACK.search(text, max(0, ks - 33), ks - 1)
            if ns is not None:
                tag_start = ns.start()
        open_end = ke
        if tag_start > 0 and text[tag_start - 1] == "<" and text[ke:ke + 1] in (" ", "\t"):
            # `<Pass encoding="base64">...</Pass>`: an element named after the credential, with attributes
            gt = _OPEN_TAG_REST.match(text, ke)
            if gt is not None:
                open_end = gt.end() - 1
        if tag_start > 0 and text[tag_start - 1] == "<" and text[open_end:open_end + 1] == ">":
            close = text.find(f"</{text[tag_start:ke]}>", open_end + 1, open_end + 400)
            if close > 0:
                ke = open_end
                val = text[ke + 1:close].strip()
                if val.startswith("<![CDATA[") and val.endswith("]]>"):
                    val = val[9:-3].strip()
                if val and _value_ok(val, strong, True, bare_auth=bare_auth):
                    vs = text.index(val, ke + 1)
                    yield Candidate(vs, vs + len(val), PASSWORDS, "SECRET_PASSWORD" if strong else "SECRET_TOKEN",
                                    "xml_element", 2)
            continue
        t = _ASSIGN_TAIL.match(text, ke)
        if t is None:
            continue
        op = t.group("op")
        if op in ("==", "!=") and not t.group("vq"):
            continue
        if op == "(" and not (key.lower().rstrip("0123456789").endswith(kw)
                              or key.lower().endswith((".assign", ".set", ".put"))):
            continue  # `self.password.encode('utf-8')`: a method call on a secret, not its value
        if op == "(" and _LOOKUP_CALL.search(key):
            continue  # `get_secret("prod/db")`, `vault.read_secret(...)`: the argument names a secret
        if op.isspace() and kw in ("pass", "pw"):
            continue  # `pass 'ignore' to ...`: English, not `password "value"`
        if op == "," and not (t.group("kq") and t.group("vq")):
            continue  # `"api_token", "value"` only: a bare comma is too common
        vq = t.group("vq")
        block = False
        if vq:
            # an escaped opening quote (`\"password\": \"x\"`) is closed by an escaped one; inside
            # a plain literal `\'` is an escaped quote of the value (`'k\'bALt9'`)
            qm = (_QVAL if len(vq) >= 2 else _QVAL_PLAIN)[vq[-1]].match(text, t.end())
            spliced = None
            if qm is None and len(vq) == 1 and "\\\n" in text[t.end():t.end() + 400]:
                # a shell string continued over lines (`"abc\<newline>def"`): read it as one value;
                # the continuation becomes two NULs, so offsets still point into the original
                spliced = text[:t.end() + 400].replace("\\\n", "\0\0")
                qm = _QVAL_PLAIN[vq[-1]].match(spliced, t.end())
            if qm is None:
                continue
            vs, ve = qm.span(1)
            while len(vq) > 2 and ve > vs and text[ve - 1] == "\\":
                ve -= 1  # JSON in JSON in a string: `\\\"pw\\\"` closes with more than one backslash
        else:
            um = _UVAL.match(text, t.end())
            if um is not None and um.group(0) in ("!!binary", "!!str") and text[um.end():um.end() + 1] == " ":
                um = _UVAL.match(text, um.end() + 1)  # a YAML tag naming the scalar's type, then the value
            if um is None:
                continue
            vs, ve = um.span()
            if text[ve:ve + 1] in ("(", "[") or text[ve:ve + 1] == "." and text[ve + 1:ve + 2].isalpha():
                continue  # a call or attribute access, not a literal
            if _CALL.match(text, vs, ve) or text[vs] in "([{":
                continue  # `get_password(user)`, `cfg["pw"]`, `(a if b else c)`: code, not a literal
            while ve > vs and text[ve - 1] in ")]},;>:":
                ve -= 1  # closing punctuation of the surrounding code, not the value
            if op == ":" and text[vs:ve] in _YAML_BLOCK:
                bm = _YAML_BLOCK_LINE.match(text, ve)  # `password: >-` then the value on indented lines
                if bm is None:
                    continue
                vs, ve = bm.start(2), bm.end(3) if bm.group(3) else bm.end(2)
                block = True  # a block scalar is literal text: no code reference can stand there
        val = bm.group(2) if block else spliced[vs:ve].replace("\0", "") if vq and spliced else text[vs:ve]
        if op == "," and _KEY_AFTER.match(text, ve + 1):
            continue  # `"DB_PASSWORD", "valueFrom": ...`: the next JSON member's name, not a value
        if val.strip().lower() in (kw, key.lower()):
            continue  # `PASS = "PASS"`, `PASSWORD = "password"`: enum members, not secrets
        if not strong and not vq and ("(" in val or ")" in val):
            continue  # `=None).to_string()`: an expression
        if _value_ok(val, strong, bool(vq) or block, bare_key, bare_auth):
            yield Candidate(vs, ve, PASSWORDS, "SECRET_PASSWORD" if strong else "SECRET_TOKEN", "assignment", 2)
    if "==" in text or "!=" in text:
        for m in _REVERSED.finditer(text):
            kw = _KW.search(m.group("key"))
            if kw and _value_ok(m.group("val"), kw.group(1) is not None, True):
                yield Candidate(m.start("val"), m.end("val"), PASSWORDS, "SECRET_PASSWORD", "comparison", 2)


_KEY_AFTER = re.compile(r"[ \t]*:")
_ARN_BACK = re.compile(r"\barn:[\w-]+:[\w-]+:[^\s\"']*\Z")
_XML_NS_BACK = re.compile(r"[A-Za-z][\w.-]{0,30}\Z")
# the rest of an opening tag after its name: attributes, then `>` (not `/>`: an empty element)
_OPEN_TAG_REST = re.compile(r"""(?:[ \t]+[\w:.-]+[ \t]*=[ \t]*(?:"[^"<>\n]*"|'[^'<>\n]*'))+[ \t]*>""")
# a call whose first argument is the name of a secret to look up, not its value
_LOOKUP_CALL = re.compile(r"(?:^|[._])(?:get|read|fetch|load|lookup|retrieve|find|has|delete|del|remove|describe|"
                          r"resolve|access|revoke|rotate|list|require)(?:_|(?=[A-Z]))", re.I)
_YAML_BLOCK = frozenset({"|", "|-", "|+", ">", ">-", ">+"})
# the first indented line of a block scalar, then any further lines at the same indent (a folded
# token split over lines)
_YAML_BLOCK_LINE = re.compile(r"[ \t]*\r?\n([ \t]+)([^\s\"'`]{4,200})[ \t]*(?=\r?\n|\Z)"
                              r"((?:\r?\n\1[^\s\"'`#][^\s]{0,200}[ \t]*(?=\r?\n|\Z))*)")
_REVERSED = re.compile(r"([\"'])(?P<val>[^\"'\n]{4,200})\1\s*(?:===?|!==?)\s*(?P<key>[A-Za-z0-9_.]{2,60})")

# The password runs to the last `@` of the authority (`https://u:p@ss@host/` has password `p@ss`;
# `:` may occur in it too): the host after that `@` is not followed by another `@` (possessive run).
# A `/` inside it (`u:p@ss/w@db:5432/app`) is taken only when the host after the last `@` carries a
# port or a dot and ends the authority, and never after a purely numeric first part (a port).
_URL_HOST = r"[\w\[][^\s@/?#\"'<>]*+(?!@)"
_URL_CRED = re.compile(
    r"://(?P<user>[^\s:/@\"'<>()\[\]{}]{0,128}):(?P<pw>(?!\d+/)[^\s/\"'<>]{1,128}/[^\s/\"'<>]{1,128}"
    r"(?=@[\w-]+(?:\.[\w-]+)*(?::\d+|\.[\w-]+)(?:[/?#\s\"'<>]|$))|[^\s/\"'<>]{1,256}?(?=@" + _URL_HOST + r"))@")
_SCHEME_BEFORE = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}\Z")
_CURL_USER = re.compile(
    r"""(?:\s|^)(?:-[uU]|--user|--proxy-user)(?:=|[ \t]+)(?P<v>(?:"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"':]*)(?::(?:"[^"\n]*"|'[^'\n]*'|[^\s"']*))?)""",
    re.M)
# matched on the lower-cased text; the value is re-read from the original at the same offsets
_CLI_FLAG = re.compile(
    r"""(?:--(?:password|passwd|passphrase|pass|db-password|token|auth-token|access-token|api-key|apikey|secret|client-secret)"""
    r"""(?:=|[ \t]+)|sshpass[ \t]+-p[ \t]*)(?P<v>"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"'-][^\s"']*)""")
_MYSQL_P = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mariadb)\b[^\n]*?[ \t]-p"
                      r"(?P<v>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'-]\S*)")
_HEADER = re.compile(  # on the lower-cased text
    r"(?P<name>authorization|proxy-authorization|x-[a-z0-9-]{0,30}?(?:api-?key|token|auth)|api-?key|api-token|private-token|token)"
    r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*(?:(?P<scheme>basic|bearer|token|digest|[a-z][a-z0-9-]{1,24})[ \t]+)?(?P<v>[\w=~@.+/-]{8,})")
# (any one-word scheme before the credential: Okta `SSWS`, `ApiKey`, `Splunk`, `GenieKey`, `Klaviyo-API-Key`)


_SCHEME_NAME = re.compile(r"^[A-Z0-9]+(?:-[A-Z0-9]+)+$")
_HEADER_FLAG = re.compile(r"(?:-H|--header)[ \t=]*[\"']\Z")


def _strip_quotes(v: str) -> str:
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'" else v


def detect_credentials_in_context(text: str, lower: str) -> Iterator[Candidate]:
    """Passwords in URLs, curl `-u user:pass`, CLI flags, mysql `-pSECRET`, HTTP auth headers.
    A command continued over lines is read as one line (`join_continuations`)."""
    if CONTINUATION.search(text):
        text, lower = join_continuations(text), join_continuations(lower)
    if "://" in text and "@" in text:
        for m in _URL_CRED.finditer(text):
            pw = m.group("pw")
            if not _SCHEME_BEFORE.search(text, max(0, m.start() - 21), m.start()):
                continue
            if not looks_like_placeholder(pw) and pw.lower() not in ("pass", "pwd", "x-oauth-basic"):
                yield Candidate(m.start("pw"), m.end("pw"), PASSWORDS, "SECRET_PASSWORD", "url_credentials", 3)
    if "curl" in lower or "wget" in lower:
        for m in _CURL_USER.finditer(text):
            raw = m.group("v")
            v = _strip_quotes(raw)
            if ":" not in v:
                continue
            if "-U" in m.group(0)[:4] and "curl" not in lower[lower.rfind("\n", 0, m.start()) + 1:m.start()]:
                continue  # `-U` is curl's proxy user; wget's `-U` is a user agent
            user, _, pw = v.partition(":")
            parts = [p.strip("\"'{}") for p in (user, pw)]
            if any(p.strip("\"'").startswith(("$", "<", "[", "{{", "${")) for p in (user, pw)):
                continue
            secretish = [p for p in parts if p and not looks_like_placeholder(p) and len(p) >= 6
                         and p.lower() not in ("token", "username", "password")]
            if not parts[1] or parts[1].lower() in ("test", "pass", "password", "token", "pwd", "changeme"):
                if parts[1] or not secretish:
                    continue
            if secretish and shannon_entropy(v) >= 2.0:
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_CREDENTIALS", "curl_user", 3)
    if "--" in text or "sshpass" in lower:
        for m in _CLI_FLAG.finditer(lower):
            if m.start() > 0 and not text[m.start() - 1].isspace():
                continue
            if lower.startswith("--secret ", m.start()) and "config set" in lower[max(0, m.start() - 80):m.start()]:
                continue  # `pulumi config set --secret NAME VALUE`: a switch; NAME is not the secret
            raw = text[m.start("v"):m.end("v")]
            v = _strip_quotes(raw)
            q = (len(raw) - len(v)) // 2
            if not looks_like_placeholder(v) and len(v) >= 6 and char_classes(v) >= 2:
                yield Candidate(m.start("v") + q, m.end("v") - q, PASSWORDS, "SECRET_PASSWORD", "cli_flag", 3)
    if "mysql" in lower or "mariadb" in lower:
        for m in _MYSQL_P.finditer(text):
            v = m.group("v")
            q = 1 if v[0] in "\"'" else 0
            v = v[q:len(v) - q]
            if v and not looks_like_placeholder(v) and not v.isdigit():
                yield Candidate(m.start("v") + q, m.end("v") - q, PASSWORDS, "SECRET_PASSWORD", "mysql_p", 3)
    if "auth" in lower or "key" in lower or "token" in lower:
        for m in _HEADER.finditer(lower):
            if m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue
            v, scheme = text[m.start("v"):m.end("v")], m.group("scheme") or ""
            if looks_like_placeholder(v) or shannon_entropy(v) < 2.75 or char_classes(v) < 2:
                continue
            if _CODE_REF.match(v) or text[m.end("v"):m.end("v") + 1] == "(" or _SCHEME_NAME.match(v):
                continue  # `self.credentials.token`, `auth_token`, `AWS4-HMAC-SHA256`
            if m.group("name").lower() == "token" and not scheme and not _HEADER_FLAG.search(text, max(0, m.start() - 12), m.start()):
                continue  # plain `token: x` outside a `-H "..."` is the assignment detector's business
            cat, tag = (PASSWORDS, "SECRET_BASIC_AUTH") if scheme == "basic" else (JWT, "SECRET_AUTH_HEADER")
            yield Candidate(m.start("v"), m.end("v"), cat, tag, "http_header", 3)


# ---------------------------------------------------------------- generic high entropy
_SEQUENTIAL = re.compile(r"(?i)abcdefgh|01234567|qwertyui")
_PUBLIC_NAME = re.compile(r"(?i)public|pub[_-]?key|publishable")
_SRI_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-")
# documented id prefixes of LLM APIs: agent traces carry thousands of these
_ID_VALUE = re.compile(r"(?:srvtoolu|toolu|call|msg|req|run|thread|asst|batch|resp|file)_|chatcmpl-|cmpl-")
_JWK_PUBLIC_MEMBER = re.compile(r"\"(?:n|e|x|y|x5c|x5t|x5t#S256|kid)\"[ \t]*:[ \t]*\Z")
_QUOTED_B64 = re.compile(r"([\"'])([A-Za-z0-9+/_-]{32,512}={0,2})\\?\1")


def detect_high_entropy_strings(text: str, lower: str) -> Iterator[Candidate]:
    """Quoted base64-alphabet strings of >= 32 chars with entropy >= 4.5 and upper, lower and
    digits (detect-secrets' base64 limit). Pure hex is skipped: hashes and commit ids dominate
    it in code."""
    if not has_token_run(text, 32):
        return  # no run _QUOTED_B64 could match
    for m in _QUOTED_B64.finditer(text):
        v = m.group(2)
        q = m.start() - 1 if m.start() and text[m.start() - 1] == "\\" else m.start()
        if q and text[q - 1] in "bBrRuU" and (q == 1 or not (text[q - 2].isalnum() or text[q - 2] in "_$")):
            q -= 1  # a string prefix: `Fernet(b'...')`
        if q and (text[q - 1].isalnum() or text[q - 1] in "+/=_-"):
            continue
        if char_classes(v) < 3 or shannon_entropy(v) < 4.5 or looks_like_placeholder(v) or _SEQUENTIAL.search(v):
            continue
        if v.startswith(_SRI_PREFIXES):
            continue  # a Subresource-Integrity digest (`"integrity": "sha512-..."` in lock files)
        if _ID_VALUE.match(v):
            continue  # a tool-call, message or request id (`toolu_01...`, `call_...`, `chatcmpl-...`)
        if decode_b64_text(v) is not None:
            continue  # base64 of plain text: the base64 detector scans what it says
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _PUBLIC_NAME.search(text, max(line_start, m.start() - 60), m.start()):
            continue  # public keys / publishable tokens are meant to be shared
        if "\"kty\"" in text and _JWK_PUBLIC_MEMBER.search(text, max(0, q - 20), q):
            continue  # the public members of a JSON Web Key (RSA modulus and exponent, EC coordinates)
        yield Candidate(m.start(2), m.end(2), PASSWORDS, "SECRET_HIGH_ENTROPY", "high_entropy_string", 1)
