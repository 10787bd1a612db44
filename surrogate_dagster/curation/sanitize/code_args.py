"""Passwords passed as positional string arguments to APIs whose signatures say which argument is
the password: the assignment detector sees no name there (`server.login("me", "hunter2!")`).

Each API family names the literal position of the password among the call's arguments, from the
libraries' documented signatures:

- (user, password): requests `auth=(u, p)` tuples, `HTTPBasicAuth`/`HTTPDigestAuth`/`HttpNtlmAuth`,
  aiohttp `BasicAuth`, smtplib/ftplib/imaplib/poplib `.login(u, p)`, ldap `simple_bind_s(dn, p)`,
  .NET `NetworkCredential`, Java `PasswordAuthentication`/`UsernamePasswordCredentials`/
  `UsernamePasswordAuthenticationToken`, Go `SetBasicAuth`, `auth.basic`, `withBasicAuth`;
- (target, user, password): Go `smtp.PlainAuth(identity, user, password, host)`, JDBC `DriverManager.getConnection(url, u, p)`, PHP `new PDO(dsn, u, p)`,
  `mysqli_connect`/`new mysqli(host, u, p, db)`, `pymysql`/`MySQLdb.connect(host, u, p, db)`,
  `pyodbc`-style `connect(host, u, p)`;
- (host, port, user, password): paramiko `SSHClient.connect(host, port, u, p)`.

Also the Go MySQL driver's DSN, `user:password@tcp(host:3306)/db` (no scheme, so the URL rule
does not read it; also `unix(...)`, `udp(...)`).

Only string literals count: a variable or an expression is not a secret in the text. The value
must not be a placeholder and must be 4+ characters; a user-position literal that is empty or a
template field means the call is a template (`login("", "")`) and is skipped.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import PASSWORDS
from .validators import looks_like_placeholder

# callee name (the last dotted part, lower-cased) -> 0-based argument index of the password
_PASSWORD_ARG: dict[str, int] = {
    **dict.fromkeys(("httpbasicauth", "httpdigestauth", "httpntlmauth", "httpproxyauth", "basicauth", "login",
                     "simple_bind_s", "simple_bind", "bind_s", "networkcredential", "passwordauthentication",
                     "usernamepasswordcredentials", "usernamepasswordauthenticationtoken", "setbasicauth",
                     "withbasicauth", "basic_auth", "basicauthcredentials", "credentials", "authenticate",
                     "auth", "crammd5auth"), 1),
    **dict.fromkeys(("getconnection", "pdo", "mysqli_connect", "mysqli", "mysql_connect", "connect", "plainauth"), 2),
}
# every name in `_PASSWORD_ARG` holds one of these stems: the regex runs on the lower-cased text and
# starts only where a stem does (a plain identifier-then-paren regex enters at every word), and the
# whole name is then read backwards from the stem
_CALL = re.compile(r"(?:auth|login|bind|credential|connect|pdo|mysqli)\w*[ \t]*(?:=[ \t]*)?\(")
_NAME_BACK = re.compile(r"[A-Za-z_][\w]*\Z")
_NAME = re.compile(r"\w+")
# `connect(host, port, user, password)` when the second argument is a port number
_PORT_ARG = re.compile(r"\d{2,5}")
_GO_DSN = re.compile(r"""["'`][\w.-]{1,64}:(?P<v>[^\s"'`]{1,128})@(?:tcp|tcp6|udp|unix)\(""")
_HINT = ("auth", "login", "bind", "credential", "connect", "pdo", "mysqli")
_STR = re.compile(r"""[bru]{0,2}(?P<q>["'])(?P<v>(?:[^"'\\\n]|\\.)*?)(?P=q)""")


def _args(text: str, pos: int, limit: int = 6) -> list[tuple[int, int] | None]:
    """Spans of the string-literal arguments of the call opened at `pos` (None for any other
    argument), up to `limit` arguments or the closing parenthesis."""
    out: list[tuple[int, int] | None] = []
    i, n = pos, min(len(text), pos + 600)
    while i < n and len(out) < limit:
        while i < n and text[i] in " \t\r\n":
            i += 1
        m = _STR.match(text, i)
        if m is not None:
            j = m.end()
            while j < n and text[j] in " \t":
                j += 1
            if j < n and text[j] in ",)":
                out.append(m.span("v"))
                i = j
            elif text.startswith(".toCharArray()", j):  # Java's `"pw".toCharArray()`
                out.append(m.span("v"))
                i = j + len(".toCharArray()")
            else:
                out.append(None)
                i = _skip_arg(text, m.end(), n)
        else:
            out.append(None)
            i = _skip_arg(text, i, n)
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n or text[i] != ",":
            break
        i += 1
    return out


def _skip_arg(text: str, i: int, n: int) -> int:
    """The offset of the `,` or `)` that ends the argument starting at `i` (nesting respected)."""
    depth = 0
    while i < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        elif c in "\"'":
            m = _STR.match(text, i)
            if m is not None:
                i = m.end()
                continue
        i += 1
    return i


def detect_credential_arguments(text: str, lower: str) -> Iterator[Candidate]:
    """See the module docstring."""
    if "@tcp(" in lower or "@unix(" in lower or "@udp(" in lower or "@tcp6(" in lower:
        for m in _GO_DSN.finditer(text):
            if not looks_like_placeholder(m.group("v")):
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD", "go_mysql_dsn", 3)
    if not any(h in lower for h in _HINT):
        return
    for m in _CALL.finditer(lower):
        head = _NAME_BACK.search(lower, max(0, m.start() - 40), m.start())
        name = (head.group(0) if head else "") + _NAME.match(lower, m.start()).group(0)
        idx = _PASSWORD_ARG.get(name)
        if idx is None:
            continue
        args = _args(text, m.end())
        if name == "connect" and len(args) >= 4 and args[1] is None and _PORT_ARG.fullmatch(
                text[m.end():m.end() + 200].split(",")[1].strip()):
            idx = 3  # paramiko: connect(host, port, user, password)
        if name in ("auth", "credentials", "authenticate") and not (len(args) >= 2 and args[0] and args[1]):
            continue  # `auth(token)`, `authenticate(request, x)`: one argument, or not two literals
        if len(args) <= idx or args[idx] is None:
            continue
        user = args[idx - 1]
        if user is not None and (user[0] == user[1] or text[user[0]] in "${<%"):
            continue  # `login("", "")`, `login("${USER}", ...)`: a template
        s, e = args[idx]
        v = text[s:e]
        if len(v) < 4 or looks_like_placeholder(v) or v.lower() in ("password", "passwd", "secret", "changeme"):
            continue
        yield Candidate(s, e, PASSWORDS, "SECRET_PASSWORD", "credential_argument", 2)
