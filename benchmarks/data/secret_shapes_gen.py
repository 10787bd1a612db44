"""Seeded generator of `secret_shapes_labelled.jsonl`: secrets by the shape of their context.

Classes follow the shapes public scanner collections hold and a rule reading `name = value`
misses: a service word then a token with no operator (`<vendor>KEY <token>`, `<vendor> '<token>'`),
bare tokens with a service prefix no rule knows, credentials inside URLs, credential XML/INI
containers, remote-execution and build-tool flags, passwords stated in prose, password-hash
formats, real-shaped keys that hold a word such as "fake", a secret repeated after the one a
keyword introduced, and a secret repeated across the turns of a row (`turns`: scored with
`Sanitizer.sanitize_row`). Token values are random draws of the documented shape of each token
class (hex digests of 32/40/64, base62 of 20-48, UUIDs, base64); no line is copied from any
scanner's tests. Look-alike negatives (`label` false) are the near misses: public form fields
(`authenticity_token`, CSRF), hashes in asset URLs and commit links, documented placeholder forms,
ids and versions next to a service word, hash-like prices and paths, flags without a secret.

Split: per class, the templates (and for service-keyed classes the service names) are shuffled
with a fixed seed and cut in two; `tune` rows draw only from the first half, `heldout` rows only
from the second, so a held-out row shares neither its template nor its service with a tuning row.

    .venv/bin/python benchmarks/data/secret_shapes_gen.py   # rewrites the JSONL (seed 20261202)
"""
from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "secret_shapes_labelled.jsonl"
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from surrogate_dagster.sanitize.service_names import SERVICE_NAMES  # noqa: E402  (data only)

SEED = 20261202
PER_SPLIT = 40          # rows per positive class and split
NEG_PER_SPLIT = 12      # rows per negative kind and split
A62 = string.ascii_letters + string.digits
LOWER36 = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"


def rs(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(rng, n, alphabet=A62):
    """A random draw holding upper, lower and digits (what a generated key of that alphabet holds)."""
    while True:
        v = rs(rng, alphabet, n)
        if alphabet is not A62 or (any(c.isupper() for c in v) and any(c.islower() for c in v)
                                   and any(c.isdigit() for c in v)):
            if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
                return v


def token(rng):
    """A prefix-less API key of one of the documented shapes services issue."""
    kind = rng.randrange(7)
    if kind == 0:
        return mixed(rng, 32, HEX)
    if kind == 1:
        return mixed(rng, 40, HEX)
    if kind == 2:
        return mixed(rng, rng.choice([20, 24, 32, 40]))
    if kind == 3:
        return mixed(rng, rng.choice([32, 40]), LOWER36)
    if kind == 4:
        h = mixed(rng, 32, HEX)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"
    if kind == 5:
        return base64.b64encode(rng.randbytes(30)).decode()
    return mixed(rng, 64, HEX)


def password(rng):
    kind = rng.randrange(3)
    if kind == 0:
        return mixed(rng, rng.randint(10, 16)) + rng.choice("!#%&*")
    if kind == 1:
        return f"{rng.choice(['Summer', 'Falcon', 'Orbit', 'Harbor', 'Maple'])}{rng.randint(10, 99)}{rng.choice('!#$@')}{rs(rng, A62, 4)}"
    return mixed(rng, rng.randint(12, 18))


def invented_vendor(rng):
    """A made-up service name (no list holds it): the credential word glued to it carries the sign."""
    syl = ["ka", "lo", "vi", "ter", "zon", "mar", "qui", "bex", "dra", "nu", "pol", "sy", "fen", "ro"]
    return "".join(rng.choice(syl) for _ in range(rng.randint(2, 3)))


def cap(s):
    return s[:1].upper() + s[1:]


# ---------------------------------------------------------------- positive classes
# each template: (rng, service) -> (text, [secrets])
def _kw(templates):
    return templates


KEYWORD_NEAR_TOKEN = _kw([
    lambda r, s: (lambda t: (f"{s.upper()}KEY {t}", [t]))(token(r)),
    lambda r, s: (lambda t: (f"{s} '{t}'", [t]))(token(r)),
    lambda r, s: (lambda t: (f"# {cap(s)} API key\n{t}", [t]))(token(r)),
    lambda r, s: (lambda t: (f"{s.upper()}_API_KEY {t}", [t]))(token(r)),
    lambda r, s: (lambda t: (f'client = {cap(s)}Client("{t}")', [t]))(token(r)),
    lambda r, s: (lambda t: (f"{cap(s)} token for the staging account is {t}", [t]))(token(r)),
    lambda r, s: (lambda t: (f"set {s}_secret to {t} in the dashboard", [t]))(token(r)),
    lambda r, s: (lambda t: (f"export {s.upper()}_TOKEN {t}", [t]))(token(r)),
    lambda r, s: (lambda t: (f"{cap(s)}.init('{t}');", [t]))(token(r)),
    lambda r, s: (lambda t: (f"| {s} | `{t}` |", [t]))(token(r)),
    lambda r, s: (lambda t: (f"new {cap(s)}Api({{ apiKey }}) // key: ... {s} {t}", [t]))(token(r)),
    lambda r, s: (lambda t: (f"{s}-key\n  {t}", [t]))(token(r)),
])

GLUED_VENDOR = [  # a made-up vendor glued to a credential word, then a token
    lambda r, v: (lambda t: (f"{v.upper()}KEY {t}", [t]))(token(r)),
    lambda r, v: (lambda t: (f"{v.upper()}_TOKEN '{t}'", [t]))(token(r)),
    lambda r, v: (lambda t: (f"{v}ApiKey {t}", [t]))(token(r)),
    lambda r, v: (lambda t: (f"{cap(v)}Secret: `{t}`", [t]))(token(r)),
    lambda r, v: (lambda t: (f"{v}_access_token \"{t}\"", [t]))(token(r)),
    lambda r, v: (lambda t: (f"{v.upper()}_APIKEY={t}", [t]))(token(r)),
]


def _prefixed(r):
    pre = rs(r, string.ascii_lowercase, r.randint(2, 6))
    sep = r.choice(["_", ".", "-"])
    kind = r.choice(["", f"live{sep}", f"pat{sep}", f"sk{sep}", f"prod{sep}", f"v1{sep}", f"api{sep}"])
    tail = r.choice([lambda: mixed(r, r.randint(24, 48)), lambda: mixed(r, 32, LOWER36), lambda: mixed(r, 40, HEX)])()
    return f"{pre}{sep}{kind}{tail}"


PREFIXED_TOKEN = [
    lambda r, _: (lambda t: (f'client = Client("{t}")', [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"curl https://api.example.net/v2/items -H 'X-Key: {t}'", [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"INFO connected with {t}", [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"keys = ['{t}']", [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"    {t}\n", [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"sdk.configure({t!r})", [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"<code>{t}</code>", [t]))(_prefixed(r)),
    lambda r, _: (lambda t: (f"run --with {t} --verbose", [t]))(_prefixed(r)),
]


def _host(r):
    return f"{rs(r, string.ascii_lowercase, r.randint(4, 8))}.{r.choice(['internal', 'example.org', 'corp.net', 'io'])}"


URL_CREDENTIAL = [
    lambda r, _: (lambda t: (f"https://hooks.{rs(r, string.ascii_lowercase, 6)}.com/services/{t}", [t]))(mixed(r, 32)),
    lambda r, _: (lambda t: (f"POST https://api.{rs(r, string.ascii_lowercase, 5)}.io/webhook/{t}", [t]))(mixed(r, 40, LOWER36)),
    lambda r, _: (lambda t: (f"url: https://{rs(r, string.ascii_lowercase, 5)}.io/api/v1/{t}/telemetry", [t]))(mixed(r, 32, HEX)),
    lambda r, _: (lambda t: (f"git clone https://deploy:{t}@{_host(r)}/team/repo.git", [t]))(password(r)),
    lambda r, _: (lambda t: (f"amqp://svc:{t}@{_host(r)}:5672/", [t]))(password(r)),
    lambda r, _: (lambda t: (f"connect to ftp://backup:{t}@{_host(r)}/dumps", [t]))(password(r)),
    lambda r, _: (lambda t: (f"GET /v1/forecast?lat=1&apikey={t}", [t]))(token(r)),
    lambda r, _: (lambda t: (f"https://{rs(r, string.ascii_lowercase, 6)}.com/trigger/build/with/key/{t}", [t]))(mixed(r, 22)),
    lambda r, _: (lambda t: (f"webhook_url = \"https://chat.{rs(r, string.ascii_lowercase, 5)}.com/hooks/{t}\"", [t]))(mixed(r, 26, LOWER36)),
    lambda r, _: (lambda t: (f"proxy http://admin:{t}@{_host(r)}:3128", [t]))(password(r)),
]


def _jenkins_secret(r):
    return "{" + base64.b64encode(b"\x01\x00\x00\x00" + r.randbytes(40)).decode() + "}"


CREDENTIAL_CONTAINER = [
    lambda r, _: (lambda t: ("<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n  <scope>GLOBAL</scope>\n"
                             f"  <id>deploy</id>\n  <username>ci</username>\n  <password>{t}</password>\n"
                             "</com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>", [t]))(_jenkins_secret(r)),
    lambda r, _: (lambda t: (f"<credentials>\n  <org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>\n"
                             f"    <id>api</id>\n    <secret>{t}</secret>\n  </org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>\n"
                             "</credentials>", [t]))(_jenkins_secret(r)),
    lambda r, _: (lambda t: (f"[Credentials]\nUsername=svc_backup\nPassword={t}\n", [t]))(password(r)),
    lambda r, _: (lambda t: (f"[Server]\nHost=10.0.0.4\nUser=admin\nPassword={t}\nPort=22\n", [t]))(rs(r, string.ascii_lowercase, r.randint(8, 12))),
    lambda r, _: (lambda t: (f"<credentials>\n  <user>deploy</user>\n  <secret>{t}</secret>\n</credentials>", [t]))(token(r)),
    lambda r, _: (lambda t: (f"<Server>\n  <Host>files.corp.net</Host>\n  <User>ops</User>\n"
                             f"  <Pass encoding=\"base64\">{t}</Pass>\n</Server>", [t]))(base64.b64encode(password(r).encode()).decode()),
    lambda r, _: (lambda t: (f"<connection>\n  <username>app</username>\n  <password><![CDATA[{t}]]></password>\n</connection>", [t]))(password(r)),
    lambda r, _: (lambda t: (f"[database]\nuser = report\npassword = {t}\n", [t]))(rs(r, string.ascii_lowercase, 10)),
]

TOOL_FLAG = [
    lambda r, _: (lambda t: (f"psexec \\\\{_host(r)} -u CORP\\admin -p {t} cmd.exe", [t]))(password(r)),
    lambda r, _: (lambda t: (f"PsExec64.exe -accepteula -u administrator -p \"{t}\" -s ipconfig", [t]))(password(r)),
    lambda r, _: (lambda t: (f"paexec \\\\srv01 -u svc -p {t} -i hostname", [t]))(password(r)),
    lambda r, _: (lambda t: (f"mvn deploy -DaltDeploymentRepository=x -Dnexus.password={t}", [t]))(password(r)),
    lambda r, _: (lambda t: (f"sonar-scanner -Dsonar.host.url=http://sonar:9000 -Dsonar.login={t}", [t]))(mixed(r, 40, HEX)),
    lambda r, _: (lambda t: (f"java -Djavax.net.ssl.keyStorePassword={t} -jar app.jar", [t]))(password(r)),
    lambda r, _: (lambda t: (f"vault operator unseal {t}", [t]))(base64.b64encode(r.randbytes(33)).decode()),
    lambda r, _: (lambda t: (f"Unseal Key 1: {t}", [t]))(base64.b64encode(r.randbytes(33)).decode()),
    lambda r, _: (lambda t: (f"gradle publish -PmavenPassword={t}", [t]))(password(r)),
    lambda r, _: (lambda t: (f"winrs -r:srv02 -u:admin -p:{t} dir", [t]))(password(r)),
]

PROSE_PASSWORD = [
    lambda r, _: (lambda t: (f"The default password is '{t}'.", [t]))(password(r)),
    lambda r, _: (lambda t: (f"Log in as root; the password is {t} until you change it.", [t]))(password(r)),
    lambda r, _: (lambda t: (f"use the password \"{t}\" for the admin account", [t]))(password(r)),
    lambda r, _: (lambda t: (f"My wifi password: {t}", [t]))(password(r)),
    lambda r, _: (lambda t: (f"The admin password was set to `{t}` during install.", [t]))(password(r)),
    lambda r, _: (lambda t: (f"Credentials are admin / {t} (change after first login).", [t]))(password(r)),
    lambda r, _: (lambda t: (f"I reset it, new password {t} works now", [t]))(password(r)),
    lambda r, _: (lambda t: (f"The password for the db user is {t}", [t]))(password(r)),
]


def _salt(r, n=8):
    return rs(r, A62 + "./", n)


PASSWORD_HASH = [
    lambda r, _: (lambda t: (f"admin:{t}:19000:0:99999:7:::", [t]))(f"$6${_salt(r, 16)}${rs(r, A62 + './', 86)}"),
    lambda r, _: (lambda t: (f"user1:{t}", [t]))(f"$1${_salt(r)}${rs(r, A62 + './', 22)}"),
    lambda r, _: (lambda t: (f"hash = '{t}'", [t]))(f"$2b$12${rs(r, A62 + './', 53)}"),
    lambda r, _: (lambda t: (f"{t}", [t]))(f"$krb5asrep$23$svc_sql@CORP.LOCAL:{rs(r, HEX, 32)}${rs(r, HEX, 220)}"),
    lambda r, _: (lambda t: (f"found: {t}", [t]))(f"$krb5tgs$23$*websvc$CORP.LOCAL$http/web.corp.local*${rs(r, HEX, 32)}${rs(r, HEX, 200)}"),
    lambda r, _: (lambda t: (f"root:{t}:18000:0:99999:7:::", [t]))(f"$5${_salt(r, 16)}${rs(r, A62 + './', 43)}"),
    lambda r, _: (lambda t: (f"deploy:{t}", [t]))(f"$apr1${_salt(r)}${rs(r, A62 + './', 22)}"),
    lambda r, _: (lambda t: (f"Administrator:500:aad3b435b51404eeaad3b435b51404ee:{t}:::", [t]))(rs(r, HEX, 32)),
]


def _fake_word(r):
    base = mixed(r, r.randint(24, 36))
    i = r.randrange(4, len(base) - 4)
    return base[:i] + r.choice(["fake", "Fake", "test", "demo", "sample"]) + base[i:]


FAKE_WORD_VALUE = [
    lambda r, _: (lambda t: (f'API_KEY = "{t}"', [t]))(_fake_word(r)),
    lambda r, _: (lambda t: (f"client_secret: {t}", [t]))(_fake_word(r)),
    lambda r, _: (lambda t: (f'{{"token": "{t}"}}', [t]))(_fake_word(r)),
    lambda r, _: (lambda t: (f"export AUTH_TOKEN={t}", [t]))(_fake_word(r)),
    lambda r, _: (lambda t: (f"password: '{t}'", [t]))(_fake_word(r)),
    lambda r, _: (lambda t: (f"<apiKey>{t}</apiKey>", [t]))(_fake_word(r)),
]

REPEATED_VALUE = [
    lambda r, _: (lambda t: (f"token = '{t}' | '{t}'", [t]))(token(r)),
    lambda r, _: (lambda t: (f"API_KEY={t}\n# same key used below\nrequests.get(url, params={{'k': '{t}'}})", [t]))(token(r)),
    lambda r, _: (lambda t: (f"password: {t}\n...\nmysql -h db -u app {t}", [t]))(password(r)),
    lambda r, _: (lambda t: (f"secret = \"{t}\"\nprint(\"{t}\")", [t]))(token(r)),
    lambda r, _: (lambda t: (f'{{"apiKey": "{t}", "backup": "{t}"}}', [t]))(token(r)),
    lambda r, _: (lambda t: (f"client_secret: {t}\nnote: rotate {t} monthly", [t]))(token(r)),
]

# rows of several texts (a row's turns): scored with sanitize_row
ACROSS_TURNS = [
    lambda r, _: (lambda t: ([f"my api_key = {t}", f"Calling the service with {t} now."], [t]))(token(r)),
    lambda r, _: (lambda t: ([f"Here is the output: {t}", f"That looks like PASSWORD={t}; rotate it."], [t]))(password(r)),
    lambda r, _: (lambda t: (['<tool_call>\n' + json.dumps({"name": "deploy", "arguments": {"token": t}}) + '\n</tool_call>',
                              json.dumps({"ok": True, "used_token": t})], [t]))(token(r)),
    lambda r, _: (lambda t: ([json.dumps({"name": "login", "arguments": json.dumps({"password": t})}),
                              f"login ok for {t}"], [t]))(password(r)),
    lambda r, _: (lambda t: ([f"run `curl -u admin:{t} https://ci.corp.net/api`", f"401 for user admin password {t}"], [t]))(password(r)),
    lambda r, _: (lambda t: ([f"secret: {t}", "ack", f"echo {t} | base64"], [t]))(token(r)),
]

POSITIVE = {
    "keyword_near_token": (KEYWORD_NEAR_TOKEN, "service"),
    "glued_vendor_word": (GLUED_VENDOR, "invented"),
    "prefixed_token": (PREFIXED_TOKEN, None),
    "url_credential": (URL_CREDENTIAL, None),
    "credential_container": (CREDENTIAL_CONTAINER, None),
    "tool_flag": (TOOL_FLAG, None),
    "prose_password": (PROSE_PASSWORD, None),
    "password_hash": (PASSWORD_HASH, None),
    "fake_word_value": (FAKE_WORD_VALUE, None),
    "repeated_value": (REPEATED_VALUE, None),
    "across_turns": (ACROSS_TURNS, None),
}


# ---------------------------------------------------------------- look-alike negatives
def _sha(r, n=64):
    return hashlib.sha256(r.randbytes(16)).hexdigest()[:n]


NEGATIVE = {
    "form_field": [
        lambda r, _: f'<input type="hidden" name="authenticity_token" value="{base64.b64encode(r.randbytes(64)).decode()}" />',
        lambda r, _: f'<meta name="csrf-token" content="{base64.b64encode(r.randbytes(48)).decode()}">',
        lambda r, _: f"<input type='hidden' name='csrfmiddlewaretoken' value='{mixed(r, 64)}'>",
        lambda r, _: f'<input type="hidden" name="__RequestVerificationToken" value="{mixed(r, 92, A62 + "-_")}" />',
    ],
    "asset_url_hash": [
        lambda r, _: f'<link rel="stylesheet" href="/assets/application-{_sha(r)}.css" media="all">',
        lambda r, _: f'<script src="/static/js/main.{_sha(r, 20)}.chunk.js"></script>',
        lambda r, _: f'<img src="https://cdn.example.com/{_sha(r, 40)}/logo.png">',
        lambda r, _: f"See https://github.com/acme/widgets/commit/{_sha(r, 40)} for the fix.",
        lambda r, _: f'<script src="/packs/js/runtime-{_sha(r, 20)}.js" integrity="sha384-{base64.b64encode(r.randbytes(48)).decode()}"></script>',
    ],
    "placeholder_form": [
        lambda r, s: f"{s.upper()}_API_KEY=<YOUR_{s.upper()}_API_KEY>",
        lambda r, s: f"{s} 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'",
        lambda r, s: f"export {s.upper()}_TOKEN=${{{s.upper()}_TOKEN}}",
        lambda r, s: f"{s.upper()}KEY your-{s}-key-here",
        lambda r, s: f"{s} abcdef0123456789abcdef0123456789",
        lambda r, s: f"{s}_secret = '0000000000000000000000000000000'",
        lambda r, s: f"password: '********'",
    ],
    "service_word_id": [
        lambda r, s: f"{cap(s)} request id {mixed(r, 32, HEX)[:8]}-{mixed(r, 32, HEX)[8:12]}-4abc-8def-{mixed(r, 32, HEX)[:12]}",
        lambda r, s: f"Upgrade {s} to 4.12.1 (commit {_sha(r, 40)})",
        lambda r, s: f"{s} account id: {r.randint(10**11, 10**12)}",
        lambda r, s: f"docker pull {s}/agent@sha256:{_sha(r)}",
        lambda r, s: f"{s}_project_id = '{mixed(r, 24, HEX)}'",
        lambda r, s: f"# {cap(s)} integration, see issue #{r.randint(100, 9999)} and build {_sha(r, 12)}",
    ],
    "hash_like": [
        lambda r, _: f"Total: $5${r.randint(10, 99)} after discount",
        lambda r, _: f"cp $HOME/$USER/.config $TMP/backup",
        lambda r, _: f"checksum sha256 {_sha(r)}  release.tar.gz",
        lambda r, _: f"md5sum: {_sha(r, 32)}",
        lambda r, _: f'"integrity": "sha512-{base64.b64encode(r.randbytes(64)).decode()}"',
    ],
    "flag_without_secret": [
        lambda r, _: f"psexec \\\\{_host(r)} -u admin -p %ADMIN_PASSWORD% cmd.exe",
        lambda r, _: "mvn -Dserver.port=8080 -Dfile.encoding=UTF-8 spring-boot:run",
        lambda r, _: "vault operator unseal",
        lambda r, _: f"ls -p {_host(r)} && mkdir -p build/out",
        lambda r, _: "java -Dlogin.url=https://sso.example.org/login -jar app.jar",
    ],
    "prose_without_secret": [
        lambda r, _: "The password must be at least 12 characters long.",
        lambda r, _: "The default password is empty; set one before exposing the service.",
        lambda r, _: "Reset your password from the account settings page.",
        lambda r, _: "If the password is wrong, the API returns 401.",
        lambda r, _: "Enter the password you chose when you created the account.",
    ],
    "url_without_secret": [
        lambda r, _: "https://example.com/webhooks/stripe/events",
        lambda r, _: "See /hooks/pre-commit and /hooks/post-merge in the repo.",
        lambda r, _: f"https://{_host(r)}/api/v1/users/{r.randint(1000, 99999)}/profile",
        lambda r, _: "mailto:support@localhost?subject=help",
        lambda r, _: "postgres://app@db.internal:5432/app",
    ],
    "container_without_secret": [
        lambda r, _: "[Credentials]\nUsername=svc_backup\nPassword=\n",
        lambda r, _: "[Server]\nHost=10.0.0.4\nUser=admin\nPassword=${DB_PASSWORD}\n",
        lambda r, _: "<credentials>\n  <id>deploy</id>\n  <description>CI deploy key</description>\n</credentials>",
        lambda r, _: "<password></password>",
    ],
}


def split_halves(rng, items):
    items = list(items)
    rng.shuffle(items)
    h = len(items) // 2
    return {"tune": items[:h], "heldout": items[h:]}


def generate() -> list[dict]:
    rng = random.Random(SEED)
    services = split_halves(random.Random(SEED + 1), SERVICE_NAMES)
    vendors = {"tune": [invented_vendor(random.Random(SEED + 2 + i)) for i in range(40)],
               "heldout": [invented_vendor(random.Random(SEED + 900 + i)) for i in range(40)]}
    vendors["heldout"] = [v for v in vendors["heldout"] if v not in vendors["tune"]]
    rows: list[dict] = []
    for cls, (templates, keyed) in POSITIVE.items():
        halves = split_halves(random.Random(f"{SEED}:{cls}"), range(len(templates)))
        for split in ("tune", "heldout"):
            names = services[split] if keyed == "service" else vendors[split] if keyed == "invented" else [""]
            for i in range(PER_SPLIT):
                ti = halves[split][i % len(halves[split])]
                svc = rng.choice(names)
                text, secrets = templates[ti](rng, svc)
                row = {"class": cls, "split": split, "label": True, "origin": f"{cls}/t{ti}", "secrets": secrets}
                if svc:
                    row["service"] = svc
                row["turns" if isinstance(text, list) else "text"] = text
                rows.append(row)
    for kind, templates in NEGATIVE.items():
        halves = split_halves(random.Random(f"{SEED}:neg:{kind}"), range(len(templates)))
        for split in ("tune", "heldout"):
            for i in range(NEG_PER_SPLIT):
                ti = halves[split][i % len(halves[split])]
                svc = rng.choice(services[split])
                rows.append({"class": "negative", "kind": kind, "split": split, "label": False,
                             "origin": f"negative/{kind}/t{ti}", "secrets": [], "text": templates[ti](rng, svc)})
    return rows


def main() -> None:
    rows = generate()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
