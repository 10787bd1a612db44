"""Passwords passed as positional string arguments to APIs whose signatures say which argument is
the password: the assignment detector sees no name there (`server.login("me", "hunter2!")`).

Each API family names the literal position of the password among the call's arguments, from the
libraries' documented signatures:

- (user, password): requests `auth=(u, p)` tuples, `HTTPBasicAuth`/`HTTPDigestAuth`/`HttpNtlmAuth`,
  aiohttp `BasicAuth`, smtplib/ftplib/imaplib/poplib `.login(u, p)`, ldap `simple_bind_s(dn, p)`,
  .NET `NetworkCredential`, Java `PasswordAuthentication`/`UsernamePasswordCredentials`/
  `UsernamePasswordAuthenticationToken`, Go `SetBasicAuth`, `auth.basic`, `withBasicAuth`;
- (target, user, password): Go `smtp.PlainAuth(identity, user, password, host)`, JDBC
  `DriverManager.getConnection(url, u, p)`, PHP `new PDO(dsn, u, p)`, `mysqli_connect`/`new
  mysqli(host, u, p, db)`, `pymysql`/`MySQLdb.connect(host, u, p, db)`, Sequelize, `FTP(host, u, p)`,
  ldap3 `Connection(server, u, p)`, PHP `ldap_bind($c, dn, p)`; cx_Oracle's `connect(u, p, dsn)`
  is told apart by a host or DSN in the third place, and `login(page, u, p)` by a non-literal first;
- (host, port, user, password): paramiko `SSHClient.connect(host, port, u, p)`;
- qualified callees: Rust lettre `Credentials::new(u, p)`, Ruby `Net::SMTP.start(host, port, helo,
  u, p)`; signing keys: `hmac.new(key, ...)`, `crypto.createHmac(alg, key)`, `jwt.encode(payload,
  key)`, `jwt.sign(payload, key)`; setters and builders: `.password("p")`, `.pass(Some("p"))`,
  `setPassword("p")`.

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
    **dict.fromkeys(("getconnection", "pdo", "mysqli_connect", "mysqli", "mysql_connect", "connect", "plainauth",
                     "sequelize", "ftp", "ftp_tls", "connection", "ldap_bind", "ldap_sasl_bind"), 2),
}
# qualified callees (`::`/`.` joined, lower-cased suffix) whose password sits elsewhere
_QUALIFIED_ARG: dict[str, int] = {
    "credentials::new": 1,   # Rust lettre `Credentials::new(user, pw)`
    "smtp.start": 4,         # Ruby `Net::SMTP.start(host, port, helo, user, secret, authtype)`
}
# keys as an argument: HMAC and JWT signing keys (`hmac.new(key, ...)`, `createHmac(alg, key)`,
# `jwt.encode(payload, key)`, `jwt.sign(payload, key)`)
_KEY_ARG: dict[str, int] = {"hmac.new": 0, "createhmac": 1, "jwt.encode": 1, "jwt.sign": 1}
_CALL = re.compile(r"(?:credentials::new|auth|login|bind|credential|connect|pdo|mysqli|sequelize|ftp|smtp\.start|hmac\.new|"
                   r"createhmac|jwt\.(?:encode|sign))\w*[ \t]*(?:=[ \t]*)?\(")
_NAME_BACK = re.compile(r"[A-Za-z_][\w]*\Z")
_QUALIFIER_BACK = re.compile(r"(?:[A-Za-z_]\w*(?:\.|::))+\Z")
_NAME = re.compile(r"[\w.:]+?(?=[ \t]*(?:=[ \t]*)?\()")
# `connect(host, port, user, password)` when the second argument is a port number
_PORT_ARG = re.compile(r"\d{2,5}")
# a host, DSN or URL as an argument (`"db.internal:1521/ORCL"`, `"localhost"`)
_HOSTISH = re.compile(r"localhost|[\w-]+(?:\.[\w-]+)+(?::\d+)?(?:/\S*)?|[\w.-]+:\d+(?:/\S*)?|\w+://\S+", re.I)
_GO_DSN = re.compile(r"""["'`][\w.-]{1,64}:(?P<v>[^\s"'`]{1,128})@(?:tcp|tcp6|udp|unix)\(""")
_USER = re.compile(r"(?!localhost\b)[A-Za-z_][\w$-]{0,63}")  # a user name: no dots, colons or `=` (not a host or DSN)
_HINT = ("auth", "login", "bind", "credential", "connect", "pdo", "mysqli", "sequelize", "ftp", "smtp", "hmac", "jwt")
# a builder or setter taking the password (`.pass(Some("pw"))`, `.password("pw")`, `setPassword("pw")`)
# (two patterns, each opening with a literal that `re` can skip to)
_SETTER_TAIL = r"""\([ \t]*(?:Some\([ \t]*)?(?P<q>["'])(?P<v>(?:[^"'\\\n]|\\.){4,200})(?P=q)"""
_SETTERS = (re.compile(r"\.(?:pass|password|passwd|pwd|secret|api_key|apikey|token)" + _SETTER_TAIL),
            re.compile(r"set(?:Password|Passwd|Secret|ApiKey|Token)" + _SETTER_TAIL))
_STR = re.compile(r"""[bru]{0,2}(?P<q>["'])(?P<v>(?:[^"'\\\n]|\\.)*?)(?P=q)""")
# a method called on a literal argument that keeps it the value (`"pw".to_owned()`, `.toCharArray()`)
_LITERAL_SUFFIX = re.compile(r"(?:\.(?:to_owned|to_string|into|toCharArray|encode|getBytes|as_bytes)\(\))+")


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
            elif _LITERAL_SUFFIX.match(text, j):  # `"pw".toCharArray()`, `"pw".to_owned()`
                out.append(m.span("v"))
                i = _LITERAL_SUFFIX.match(text, j).end()
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


def _credential_value(v: str, key: bool = False) -> bool:
    if len(v) < (8 if key else 4) or looks_like_placeholder(v):
        return False
    return v.lower() not in ("password", "passwd", "secret", "changeme", "key", "secret_key", "your-secret")


def detect_credential_arguments(text: str, lower: str) -> Iterator[Candidate]:
    """See the module docstring."""
    if "@tcp(" in lower or "@unix(" in lower or "@udp(" in lower or "@tcp6(" in lower:
        for m in _GO_DSN.finditer(text):
            if not looks_like_placeholder(m.group("v")):
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD", "go_mysql_dsn", 3)
    if "pass" in lower or "pwd" in lower or "secret" in lower or "key" in lower or "token" in lower:
        for m in (m for rx in _SETTERS for m in rx.finditer(text)):
            if m.start() and text[m.start()] == "s" and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue  # `resetPassword(...)`: `set` inside a longer name
            if _credential_value(m.group("v")):
                yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD", "credential_setter", 2)
    if not any(h in lower for h in _HINT):
        return
    for m in _CALL.finditer(lower):
        head = _NAME_BACK.search(lower, max(0, m.start() - 40), m.start())
        name = (head.group(0) if head else "") + _NAME.match(lower, m.start()).group(0)
        start = m.start() - len(head.group(0)) if head else m.start()
        qual = _QUALIFIER_BACK.search(lower, max(0, start - 60), start)
        qualified = (qual.group(0) if qual else "") + name
        key_idx = next((i for suffix, i in _KEY_ARG.items() if qualified.endswith(suffix)), None)
        if key_idx is not None:
            args = _args(text, m.end())
            if len(args) > key_idx and args[key_idx] is not None:
                s, e = args[key_idx]
                if _credential_value(text[s:e], key=True):
                    yield Candidate(s, e, PASSWORDS, "SECRET_TOKEN", "signing_key_argument", 2)
            continue
        idx = next((i for suffix, i in _QUALIFIED_ARG.items() if qualified.endswith(suffix)), None)
        if idx is None:
            idx = _PASSWORD_ARG.get(name.rsplit(".", 1)[-1])
        if idx is None:
            continue
        args = _args(text, m.end())
        if name == "connect" and len(args) >= 4 and args[1] is None and _PORT_ARG.fullmatch(
                text[m.end():m.end() + 200].split(",")[1].strip()):
            idx = 3  # paramiko: connect(host, port, user, password)
        elif name == "connect" and len(args) >= 3 and args[0] and args[2] and _USER.fullmatch(
                text[args[0][0]:args[0][1]]) and _HOSTISH.fullmatch(text[args[2][0]:args[2][1]]):
            idx = 1  # cx_Oracle: connect(user, password, dsn)
        elif idx == 1 and len(args) >= 3 and args[0] is None and args[1] and args[2]:
            idx = 2  # `login(page, user, password)`: a session or client object first
        if name in ("auth", "credentials", "authenticate") and not (len(args) >= 2 and args[idx - 1] and args[idx]):
            continue  # `auth(token)`, `authenticate(request, x)`: one argument, or not two literals
        if len(args) <= idx or args[idx] is None:
            continue
        user = args[idx - 1]
        if user is not None and (user[0] == user[1] or text[user[0]] in "${<%"):
            continue  # `login("", "")`, `login("${USER}", ...)`: a template
        s, e = args[idx]
        if _credential_value(text[s:e]):
            yield Candidate(s, e, PASSWORDS, "SECRET_PASSWORD", "credential_argument", 2)
