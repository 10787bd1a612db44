"""Credentials on command lines and in connection strings that the assignment detector cannot
read: short flags whose meaning depends on the command (`docker login -p`, `ldapsearch -w`,
`redis-cli -a`), long flags named after a credential (`--admin-password`, `--with-token`),
`key=value` pairs inside a command (`--from-literal=password=...`), `password=` /`pwd=` pairs
in JDBC, ODBC, ADO.NET and libpq strings, secrets fed to a command's stdin (`echo X | docker login
--password-stdin`, `<<< X`), positional secrets of a few commands (`vault login X`, `rabbitmqctl
add_user U X`), case-sensitive short flags (`zip -P`, `smbclient -U user%X`, openssl `pass:X`) and
Oracle `user/pass@host` logins.

A value is taken only when it is not a placeholder or variable (`$PASS`, `${X}`, `<token>`,
`%DB_PASS%`) and not a flag itself; values read from stdin leave nothing to redact.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import PASSWORDS
from .validators import char_classes, looks_like_placeholder

_VAL = r"""(?P<v>"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"'`|;&<>$-][^\s"'`|;]*)"""
_VAL2 = _VAL.replace("(?P<v>", "(?P<v2>")  # the second alternative of a two-branch pattern
# command -> the short flag that takes its password (as documented by each tool's --help)
_SHORT = re.compile(
    r"(?:\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|regctl|az|cf|oc|heroku)\b[^\n]{0,120}?\blogin\b[^\n]{0,200}?"
    r"[ \t]-p|\bldap(?:search|modify|add|delete|passwd|whoami|compare|modrdn)\b[^\n]{0,200}?[ \t]-w"
    r"|\bredis-cli\b[^\n]{0,200}?[ \t]-a|\b(?:smbclient|rpcclient|net)\b[^\n]{0,120}?[ \t]-u[ \t]*[^\s%]+%(?=\S)"
    r"|\bmongo(?:sh|dump|restore|import|export|stat|top)?\b[^\n]{0,200}?[ \t]-p|\b(?:useradd|usermod)\b[^\n]{0,120}?[ \t]-p"
    r"|\blftp\b[^\n]{0,120}?[ \t]-u[ \t]+[^\s,]+,(?=\S)"
    r"|\bpsql\b[^\n]{0,200}?[ \t]-W|\bhtpasswd\b[^\n]{0,120}?[ \t]-b[a-zA-Z]*[ \t]+\S+[ \t]+\S+)[ \t]*" + _VAL)
_LONG = re.compile(
    r"--(?<![\w-]--)(?:[a-z0-9]+-){0,3}(?:password|passwd|pass|pwd|token|secret|api-?key|access-key|secret-key|"
    r"client-secret|auth|credentials?)(?:=|[ \t]+)" + _VAL)
_INLINE = re.compile(  # `password=...` inside a command or a query string / key=value connection string
    r"(?:password|passwd|pwd|pass|secret|token|api_?key|access_?token|bind_?password|bindcredential)"
    r"=(?P<v>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|\{[^}\n]{1,200}\}|[^\s\"'`;&|)<>,]+)")
# connection strings and command-line pairs are written without spaces around `=`
_INLINE_KEYS = ("pass=", "passwd=", "password=", "pwd=", "secret=", "token=", "key=", "bindcredential=")
# a line holding one of these is a connection string or a command
_CONN_HINTS = ("jdbc:", "odbc", "server=", "data source=", "host=", "dbname=", "uid=", "user id=", "user=",
               "username=", "kubectl", "docker", "vault ", "curl ", "mysql", "psql", "mongo", "--from-literal", "ldap")
# flags whose case matters (`zip -p` is another option, `unzip -p` pipes): matched on the original text
_SHORT_CS = re.compile(
    r"(?:\b(?:zip|unzip|7za?|7zr)\b[^\n]{0,120}?[ \t]-P[ \t]*|\b7za?\b[^\n]{0,120}?[ \t]-p"
    r"|\bopenssl\b[^\n]{0,200}?[ \t]-(?:pass(?:in|out)?|k)[ \t]+(?:pass:)?"
    r"|\bhttps?\b[^\n]{0,120}?[ \t](?:-a|--auth)[ \t=]+[^\s:]+:"
    r"|\b(?:sqlcmd|bcp|osql|isql)\b[^\n]{0,200}?[ \t]-P[ \t]*|\bssh-keygen\b[^\n]{0,120}?[ \t]-N[ \t]+"
    r"|\bsnmp\w*\b[^\n]{0,200}?[ \t]-[AX][ \t]+)" + _VAL)
# single-dash long flags of Java and Go tools (`keytool -storepass`, `influx -password`)
_SINGLE = re.compile(r"(?<![\w-])-(?:(?:src|dest)?storepass|keypass|password|passwd|pwd)(?:=|[ \t]+)" + _VAL)
# `<tool> config set <credential name> <value>` and tools whose arguments are name/value words
_CONFIG_SET = re.compile(
    r"\b(?:nmcli|rclone|aws[ \t]+configure[ \t]+set|(?:npm|yarn|pnpm|pip|git|heroku)[ \t]+config(?::set|[ \t]+set)?)\b"
    r"[^\n]{0,120}?[ \t][\w.:/-]*(?:password|passwd|secret|token|_auth|psk)[\w.-]*[ \t]+" + _VAL)
# a secret written into a command's stdin: `echo X | cmd --password-stdin`, `cmd --with-token <<< X`
_STDIN_CMD = r"(?:--password-stdin|--with-token|--token-stdin|\bsudo[ \t]+-S\b|\bchpasswd\b|--stdin\b)"
_STDIN = re.compile(
    r"\b(?:echo|printf)(?:[ \t]+-[neE]+)*(?:[ \t]+(?:\"%s\\?n?\"|'%s\\?n?'))?[ \t]+" + _VAL
    + r"[ \t]*\|[^\n|]{0,200}?" + _STDIN_CMD + r"|" + _STDIN_CMD + r"[^\n|<]{0,100}?<<<[ \t]*" + _VAL2)
# commands taking a secret as a positional argument
_POSITIONAL = re.compile(
    r"\bvault[ \t]+login(?:[ \t]+-[\w-]+(?:=\S+)?)*[ \t]+(?![\w.-]+=)" + _VAL
    + r"|\brabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+" + _VAL2)
# Oracle `user/password@host[:port][/service]` (sqlplus, expdp, `jdbc:oracle:thin:`)
_ORACLE_HINTS = ("oracle", "sqlplus", "expdp", "impdp", "rman", "sqlldr", "1521", "tnsnames")
_ORACLE = re.compile(r"(?<![\w/.-])[A-Za-z_][\w$#]{0,30}/(?P<v>[^\s/@\"'<>]{1,128})@(?=//|[\w.-]+(?::\d+)?[:/\s\"']|[\w.-]+$)",
                     re.M)
_FLAG_NOT_SECRET = re.compile(r"-(?:file|path|env|stdin|prompt|length|min|max|policy|reset|hash|type|dir|name|id|"
                              r"url|expiry|expires|ttl|store|helper|command|cmd|var|source|field)(?=[= \t]|$)")


def _strip(v: str) -> tuple[str, int]:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'{":
        return v[1:-1], 1
    if len(v) >= 2 and v[0] == "{" and v[-1] == "}":
        return v[1:-1], 1
    return v, 0


def _ok(v: str, min_len: int = 4) -> bool:
    if looks_like_placeholder(v) or v.startswith(("-", "@", "/")) or len(v) < min_len:
        return False
    if re.fullmatch(r"%\w+%|\$\w+|\w+\(.*\)|[a-z_]+|[A-Z_]+", v):
        return False  # %VAR%, $VAR, call(), an identifier: not a literal credential
    return char_classes(v) >= 2 or len(v) >= 10


def _yield_val(text: str, m: re.Match, rule: str, min_len: int = 4) -> Iterator[Candidate]:
    g = "v" if m.group("v") is not None else "v2"
    v, q = _strip(text[m.start(g):m.end(g)])
    if _ok(v, min_len):
        yield Candidate(m.start(g) + q, m.start(g) + q + len(v), PASSWORDS, "SECRET_PASSWORD", rule, 3)


def detect_cli_credentials(text: str, lower: str) -> Iterator[Candidate]:
    """Command-line and connection-string credentials (see the module docstring)."""
    if ("zip" in lower or "7z" in lower or "openssl" in lower or "http" in lower or "sqlcmd" in lower or "bcp" in lower
            or "osql" in lower or "isql" in lower or "ssh-keygen" in lower or "snmp" in lower):
        for m in _SHORT_CS.finditer(text):
            yield from _yield_val(text, m, "cli_short_flag")
    if "stdin" in lower or "with-token" in lower or "sudo" in lower or "chpasswd" in lower:
        for m in _STDIN.finditer(text):
            yield from _yield_val(text, m, "cli_stdin")
    if "-storepass" in lower or "-keypass" in lower or " -passw" in lower or " -pwd" in lower:
        for m in _SINGLE.finditer(lower):
            yield from _yield_val(text, m, "cli_single_dash", 6)
    if "config" in lower or "nmcli" in lower or "rclone" in lower:
        for m in _CONFIG_SET.finditer(lower):
            yield from _yield_val(text, m, "cli_config_set", 6)
    if "vault" in lower or "rabbitmqctl" in lower:
        for m in _POSITIONAL.finditer(text):
            yield from _yield_val(text, m, "cli_positional", 8)
    if "@" in text and any(h in lower for h in _ORACLE_HINTS):
        for m in _ORACLE.finditer(text):
            v = m.group("v")
            if _ok(v):
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD", "oracle_login", 3)
    if ("login" in lower or "ldap" in lower or "mongo" in lower or "user" in lower or "lftp" in lower or "redis-cli" in lower or "psql" in lower or "htpasswd" in lower
            or "smbclient" in lower or "rpcclient" in lower or "net " in lower):
        for m in _SHORT.finditer(lower):
            v, q = _strip(text[m.start("v"):m.end("v")])
            if _ok(v):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", "cli_short_flag", 3)
    if "--" in text:
        for m in _LONG.finditer(lower):
            flag = lower[m.start():m.start("v")]
            if _FLAG_NOT_SECRET.search(flag.rstrip("= \t")):
                continue
            v, q = _strip(text[m.start("v"):m.end("v")])
            if _ok(v, 6):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", "cli_long_flag", 3)
    if any(k in lower for k in _INLINE_KEYS) and any(h in lower for h in _CONN_HINTS):
        for m in _INLINE.finditer(lower):
            if m.start() and (lower[m.start() - 1].isalnum() or lower[m.start() - 1] in "_.-"):
                continue  # part of a longer name: `db_password = x` is the assignment detector's
            line_start = lower.rfind("\n", 0, m.start()) + 1
            line_end = lower.find("\n", m.end())
            line = lower[line_start:line_end if line_end >= 0 else len(lower)]
            if not any(h in line for h in _CONN_HINTS):
                continue  # a plain `password = x` line is the assignment detector's case
            v, q = _strip(text[m.start("v"):m.end("v")])
            if _ok(v):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", "inline_pair", 3)
