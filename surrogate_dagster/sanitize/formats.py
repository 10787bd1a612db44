"""Credentials in file formats that have no `name = value` shape, and key material passed
through a decoding call.

- `.pgpass` lines, `hostname:port:database:username:password` (PostgreSQL libpq docs; `*`
  wildcards, `\\:` escapes a colon in a field);
- `.netrc` entries, `machine HOST login USER password PASS` on one line or across lines
  (the `default` entry too);
- space-separated directives of server configs whose value is a credential: Redis
  `requirepass`/`masterauth`, Sentinel `sentinel auth-pass NAME PASS`, OpenLDAP `rootpw`,
  nss/pam-ldap `bindpw`, keepalived `auth_pass`, Debian interfaces `wpa-psk`, and a bare
  `password VALUE` / `secret VALUE` line;
- strongSwan `ipsec.secrets` entries, `ID : PSK "secret"` (also EAP/XAUTH);
- Laravel-style `base64:` app keys (`APP_KEY=base64:<44 chars>`) wherever they appear;
- literals decoded into key bytes: `bytes.fromhex("...")`, `unhexlify`, `b64decode("...")`,
  `atob`, `Buffer.from("...", "base64"|"hex")`, `Convert.FromBase64String`, Go
  `DecodeString`, Java `getDecoder().decode`, PHP `base64_decode`/`hex2bin`, Ruby `decode64`,
  when the literal is long, random-looking and does not decode to text (text is the base64
  detector's to scan), or when it decodes to text and the call's result is assigned to a
  credential name (`password = b64decode("...").decode()`, `PASSWORD=$(echo ... | base64 -d)`);
- crypt(3)-style password hashes as `.htpasswd`, `/etc/shadow` and config files hold them:
  MD5-crypt `$1$`, Apache `$apr1$`, bcrypt `$2a$`/`$2b$`/`$2y$`, SHA-crypt `$5$`/`$6$`,
  yescrypt `$y$`, argon2 `$argon2id$` (a hash lets an attacker guess the password offline);
- private keys as bare base64 DER (no PEM lines, as env vars and JSON carry them): a run that
  decodes to an ASN.1 SEQUENCE whose first member is the INTEGER version 0 or 1 -- PKCS#8
  (RFC 5208/5958), PKCS#1 RSA (RFC 8017) and SEC1 EC (RFC 5915) private keys; public keys and
  certificates open with a nested SEQUENCE instead;
- SQL `IDENTIFIED BY 'pw'` (MySQL, Oracle, Snowflake `CREATE/ALTER USER`);
- the `secret` parameter of an `otpauth://` Key URI (a TOTP/HOTP seed, base32);
- BIP32 extended private keys (`xprv`/`yprv`/`zprv`/`tprv`, 111 base58 characters);
- byte-array literals of 16+ hex bytes (`{0x3f, 0x9a, ...}`) on a line that names a key, secret
  or password;
- SMTP AUTH transcripts: the client's answer to the base64 `Password:` prompt of AUTH LOGIN, and
  the AUTH PLAIN argument (base64 of `\\0user\\0password`);
- LDIF password attributes (`userPassword:: <base64>`, `{SSHA}` hashes, Samba and AD hashes);
- JSON Web Keys (RFC 7517/7518): the private members `d`, `p`, `q`, `dp`, `dq`, `qi` and the
  symmetric `k` of an object carrying `"kty"`.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Iterator

from .detectors import Candidate
from .encoded import decode_hex_text
from .patterns import PASSWORDS, PKEY
from .validators import (alnum_classes, char_classes, decode_b64_text, has_b64_run, looks_like_placeholder,
                         shannon_entropy)

_PGPASS = re.compile(r"(?m)^[ \t]*(?:[\w.*-]+|\[[0-9A-Fa-f:.]+\]):(?:\d{1,5}|\*):(?:[^:\s\\]|\\.)+:(?:[^:\s\\]|\\.)+:"
                     r"(?P<v>(?:[^:\s\\]|\\.){4,200})[ \t]*\r?$")
_PGPASS_HINT = re.compile(r":(?:\d{1,5}|\*):")
_HEXISH_LINE = re.compile(r"[0-9A-Fa-f:]+")
_NETRC = re.compile(r"(?:\bmachine[ \t]+\S+|\bdefault)(?P<body>(?:\s+(?:login|account|port|password)[ \t]+\S+){1,5})")
_NETRC_PW = re.compile(r"\bpassword[ \t]+(?P<v>\S+)")
# led by the newline (a literal `re` skips to); the text's first line is matched with `.match`
_DIRECTIVE_BODY = (
    r"[ \t]*(?:requirepass|masterauth|rootpw|bindpw|auth_pass|wpa-psk|sentinel[ \t]+auth-pass[ \t]+\S+|"
    r"(?P<generic>password|passwd|secret|psk))[ \t]+(?P<v>\"[^\"\n]{4,200}\"|'[^'\n]{4,200}'|[^\s\"'#;][^\s#;]{3,200})[ \t]*\r?(?=\n|\Z)")
_DIRECTIVE = re.compile(_DIRECTIVE_BODY)
_DIRECTIVE_NL = re.compile(r"\n" + _DIRECTIVE_BODY)
_PROSE_WORD = re.compile(r"[A-Za-z]+[.,;:!?)]*|[A-Za-z]+[-'][A-Za-z]+[.,;:!?)]*")
_IPSEC = re.compile(r":[ \t]*(?:PSK|EAP|XAUTH|NTLM)[ \t]+(?P<v>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|0[sx][A-Za-z0-9+/=]{8,})")
_APP_KEY = re.compile(r"base64:(?P<v>[A-Za-z0-9+/]{32,}={0,2})(?![A-Za-z0-9+/=])")
# A long quoted literal as a call's first argument (led by the literal `(`), then the call's name
# read backwards from the parenthesis: cheaper than trying every name at every position.
_CALL_LITERAL = re.compile(r"\((?=[ \t]*[bru]?[\"'`][A-Za-z0-9+/_=-]{16})[ \t]*[bru]?(?P<q>[\"'`])"
                           r"(?P<v>[A-Za-z0-9+/_=-]{16,1024})(?P=q)")
# shell: `PASSWORD=$(echo <base64 or hex> | base64 -d)` (also `xxd -r -p`, `openssl base64 -d`)
_SHELL_DECODE = re.compile(r"\$\((?:echo|printf)(?:[ \t]+-[neE]+)*[ \t]+[\"']?(?P<v>[A-Za-z0-9+/=]{12,})[\"']?[ \t]*\|[ \t]*"
                           r"(?:base64[ \t]+(?:-d|--decode|-D)|xxd[ \t]+-r|openssl[ \t]+(?:base64|enc[ \t]+-base64)[ \t]+-d)")
# a credential name assigned on the line before a decoding call: `password = b64decode("...")`
_CRED_ASSIGN_BACK = re.compile(r"(?i)(?:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|credentials?)\w*[\"'\]]?[ \t]*"
                               r"(?::=|=|:)[^\n=]{0,60}\Z")
_DECODE_NAME = re.compile(
    r"(?:fromhex|unhexlify|a2b_hex|b64decode|a2b_base64|decodebytes|atob|frombase64string|decodestring|"
    r"getdecoder\(\)\.decode|geturldecoder\(\)\.decode|base64_decode|hex2bin|decode64|decodehex|parsehexbinary|"
    r"(?P<buf>buffer\.from))[ \t]*\Z")
_BUFFER_ENCODING = re.compile(r"[ \t]*,[ \t]*[\"'](?:hex|base64|base64url)[\"']")
_DECODE_KEYS = ("hex", "decode", "atob", "base64")
_SEQUENTIAL = re.compile(r"(?i)0123456789|abcdef0123|00000000|ffffffff")
_CRYPT_HASH = re.compile(r"\$(?:(?P<md5>1|apr1)\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}|2[abxy]\$\d\d\$[./0-9A-Za-z]{53}"
                         r"|[56]\$(?:rounds=\d+\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{43,86}|y\$[./0-9A-Za-z]+\$[./0-9A-Za-z]{1,64}"
                         r"\$[./0-9A-Za-z]{43}|argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{11,}\$[A-Za-z0-9+/]{16,})"
                         r"(?![./0-9A-Za-z$])")
# `M` + a look-behind after it: `re` skips to the letter; 64+ base64 characters follow
_DER_B64 = re.compile(r"M(?<![A-Za-z0-9+/]M)[A-Za-z0-9+/]{63,}={0,2}(?![A-Za-z0-9+/=])")
_IDENTIFIED_BY = re.compile(r"\bidentified[ \t]+by[ \t]+(?:password[ \t]+)?(?P<v>'[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|[^\s;'\"]{4,200})")
_OTPAUTH = re.compile(r"otpauth://[^\s\"'<>]*?[?&]secret=(?P<v>[A-Za-z2-7]{16,}=*)")
_XPRV = re.compile(r"[xyzt](?<![1-9A-Za-z][xyzt])prv[1-9A-HJ-NP-Za-km-z]{104,108}(?![1-9A-Za-z])")
_BYTE_ARRAY = re.compile(r"0x[0-9a-fA-F]{2}(?:[ \t]*,[ \t]*(?:\r?\n[ \t]*)?0x[0-9a-fA-F]{2}){15,}")
_KEY_NAME = re.compile(r"(?i)key|secret|passw|token|psk|salt")
_JWK_MEMBER = re.compile(r"\"(?:d|p|q|dp|dq|qi|k)\"[ \t]*:[ \t]*\"(?P<v>[A-Za-z0-9_-]{16,})\"")


# SMTP: the client line after the server's base64 `Password:` prompt (AUTH LOGIN), and AUTH PLAIN's
# base64 of `authzid\0user\0password` (RFC 4954, RFC 4616)
_SMTP_AUTH = re.compile(r"334[ \t]+UGFzc3dvcmQ6[ \t]*\r?\n(?:[ \t]*C:)?[ \t]*(?P<v>[A-Za-z0-9+/]{4,}={0,2})(?=[ \t]*(?:\r?\n|\Z))"
                        r"|\bAUTH[ \t]+PLAIN[ \t]+(?P<p>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
# LDIF password attributes (`userPassword:: <base64>`, `userPassword: {SSHA}...`, Samba/AD hashes)
_LDIF_PASSWORD = re.compile(r"(?im)^(?:userPassword|unicodePwd|sambaNTPassword|sambaLMPassword|ipaNTHash|"
                            r"krbPrincipalKey)::?[ \t]*(?P<v>\S+)")


def _der_private_key(run: str) -> bool:
    """Whether base64 `run` opens like a DER private key: SEQUENCE, length, INTEGER 0 or 1."""
    try:
        head = base64.b64decode(run[:16])
    except (binascii.Error, ValueError):
        return False
    if len(head) < 8 or head[0] != 0x30:
        return False
    i = 2 if head[1] < 0x80 else 2 + (head[1] & 0x7F)
    return head[1] != 0x80 and head[i:i + 3] in (b"\x02\x01\x00", b"\x02\x01\x01")


def _plain_ok(v: str) -> bool:
    """A literal credential, not a variable, a file or an identifier."""
    if looks_like_placeholder(v) or v.startswith(("-", "/", "~", "@", "$", "%")) or len(v) < 4:
        return False
    if re.fullmatch(r"[a-z_]+|[A-Z_]+|[A-Za-z_][\w.]*\(.*\)|[\w./-]+\.(?:pem|key|txt|conf|cfg|json|crt|p12|pfx|jks)", v):
        return False
    return char_classes(v) >= 2 or len(v) >= 10


def _key_material(v: str) -> bool:
    """A decoded literal that looks like random key bytes: hex or base64, long, high entropy."""
    if _SEQUENTIAL.search(v):
        return False
    body = v.rstrip("=")
    if re.fullmatch(r"[0-9a-fA-F]+", body):
        if len(body) < 32 or shannon_entropy(body) < 3.0:
            return False
        try:
            raw = bytes.fromhex(body if len(body) % 2 == 0 else body[:-1])
        except ValueError:
            return False
        text = raw.decode("utf-8", "ignore")
        return not (len(text) == len(raw) and text.isprintable())  # hex-encoded text is not key bytes
    return (len(body) >= 24 and shannon_entropy(body) >= 4.0 and alnum_classes(body) >= 3
            and decode_b64_text(v.replace("-", "+").replace("_", "/")) is None)


def _decodes_to_text(v: str) -> bool:
    """Whether a literal is hex or base64 of printable text (a password armoured for a config)."""
    if re.fullmatch(r"[0-9a-fA-F]+", v):
        return decode_hex_text(v) is not None
    return decode_b64_text(v.replace("-", "+").replace("_", "/")) is not None


def detect_file_formats(text: str, lower: str) -> Iterator[Candidate]:
    """See the module docstring."""
    if _PGPASS_HINT.search(text):
        for m in _PGPASS.finditer(text):
            line = m.group(0).strip()
            if _HEXISH_LINE.fullmatch(line):
                continue  # an IPv6 address or a MAC-like run of hex groups
            v = m.group("v")
            if _plain_ok(v.replace("\\:", ":")):
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD", "pgpass", 3)
    if "password" in lower and ("machine" in lower or "default" in lower):
        for m in _NETRC.finditer(text):
            for p in _NETRC_PW.finditer(m.group("body")):
                v = p.group("v")
                if _plain_ok(v):
                    s = m.start("body") + p.start("v")
                    yield Candidate(s, s + len(v), PASSWORDS, "SECRET_PASSWORD", "netrc", 3)
    first = _DIRECTIVE.match(lower)
    for m in ([first] if first else []) + list(_DIRECTIVE_NL.finditer(lower)):
        s, e = m.span("v")
        q = 1 if text[s] in "\"'" else 0
        v = text[s + q:e - q]
        if m.group("generic") and not q and _PROSE_WORD.fullmatch(v):
            continue  # `password combination.`: a sentence that starts with the word
        if _plain_ok(v) and v[0] not in ":=" and any(c.isalnum() for c in v):
            yield Candidate(s + q, e - q, PASSWORDS, "SECRET_PASSWORD", "config_directive", 2)
    if "PSK" in text or "EAP" in text or "XAUTH" in text or "NTLM" in text:
        for m in _IPSEC.finditer(text):
            s, e = m.span("v")
            q = 1 if text[s] in "\"'" else 0
            if e - s - 2 * q >= 4 and not looks_like_placeholder(text[s + q:e - q]):
                yield Candidate(s + q, e - q, PASSWORDS, "SECRET_PASSWORD", "ipsec_secret", 3)
    if "base64:" in text:
        for m in _APP_KEY.finditer(text):
            v = m.group("v")
            if shannon_entropy(v) >= 4.0 and alnum_classes(v) >= 3 and decode_b64_text(v) is None:
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_TOKEN", "base64_app_key", 3)
    if any(k in lower for k in _DECODE_KEYS):
        for m in _CALL_LITERAL.finditer(lower):
            name = _DECODE_NAME.search(lower, max(0, m.start() - 40), m.start())
            if name is None or (name.group("buf") and not _BUFFER_ENCODING.match(lower, m.end())):
                continue
            s, e = m.span("v")
            if e - s >= 24 and _key_material(text[s:e]):
                yield Candidate(s, e, PASSWORDS, "SECRET_TOKEN", "decoded_literal", 3)
            elif _decodes_to_text(text[s:e]) and _CRED_ASSIGN_BACK.search(
                    text, max(text.rfind("\n", 0, m.start()) + 1, m.start() - 100), m.start()):
                yield Candidate(s, e, PASSWORDS, "SECRET_PASSWORD", "decoded_credential", 3)
    if "$(" in text and "|" in text:
        for m in _SHELL_DECODE.finditer(text):
            s, e = m.span("v")
            if _decodes_to_text(text[s:e]) and _CRED_ASSIGN_BACK.search(
                    text, max(text.rfind("\n", 0, m.start()) + 1, m.start() - 100), m.start()):
                yield Candidate(s, e, PASSWORDS, "SECRET_PASSWORD", "decoded_credential", 3)
    if "$" in text:
        for m in _CRYPT_HASH.finditer(text):
            yield Candidate(m.start(), m.end(), PASSWORDS, "SECRET_PASSWORD_HASH", "crypt_hash", 3)
    if "M" in text and has_b64_run(text, 64):
        for m in _DER_B64.finditer(text):
            if _der_private_key(m.group(0)):
                yield Candidate(m.start(), m.end(), PKEY, "SECRET_PRIVATE_KEY", "der_private_key", 4)
    if "identified" in lower:
        for m in _IDENTIFIED_BY.finditer(lower):
            s, e = m.span("v")
            q = 1 if text[s] in "\"'" else 0
            if not q:
                while e > s and text[e - 1] in ",.):":
                    e -= 1  # `identified by UID,`: prose punctuation, not part of a bare value
            v = text[s + q:e - q]
            if v and not looks_like_placeholder(v) and (q or _plain_ok(v)):
                yield Candidate(s + q, e - q, PASSWORDS, "SECRET_PASSWORD", "sql_identified_by", 3)
    if "otpauth://" in lower:
        for m in _OTPAUTH.finditer(text):
            yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_TOKEN", "otpauth_secret", 3)
    if "prv" in text:
        for m in _XPRV.finditer(text):
            yield Candidate(m.start(), m.end(), PKEY, "SECRET_PRIVATE_KEY", "bip32_private_key", 4)
    if "0x" in lower:
        for m in _BYTE_ARRAY.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not _KEY_NAME.search(text, max(line_start, m.start() - 120), m.start()):
                continue
            vals = [int(h, 16) for h in re.findall(r"0x([0-9a-fA-F]{2})", m.group(0))]
            steps = {b - a for a, b in zip(vals, vals[1:])}
            if len(set(vals)) >= len(vals) // 2 and len(steps) > 2:  # not a counting or constant test vector
                yield Candidate(m.start(), m.end(), PASSWORDS, "SECRET_TOKEN", "key_byte_array", 3)
    if "334" in text or "auth plain" in lower:
        for m in _SMTP_AUTH.finditer(text):
            g = "v" if m.group("v") else "p"
            yield Candidate(m.start(g), m.end(g), PASSWORDS, "SECRET_PASSWORD", "smtp_auth", 3)
    if "password:" in lower or "pwd:" in lower or "hash:" in lower or "key:" in lower:
        for m in _LDIF_PASSWORD.finditer(text):
            if not looks_like_placeholder(m.group("v")):
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD", "ldif_password", 3)
    if "\"kty\"" in text:
        for m in _JWK_MEMBER.finditer(text):
            v = m.group("v")
            if len(v) >= 16 and shannon_entropy(v) >= 3.5:
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_TOKEN", "jwk_private_member", 3)
