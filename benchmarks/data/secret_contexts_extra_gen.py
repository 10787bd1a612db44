"""Generate ``secret_contexts_extra.jsonl``: extra tuning rows for four weak secret-context classes.

Every row is a JSON object with ``text``, ``secrets`` (exact substrings of ``text`` that a
sanitizer must remove; empty for negatives), ``label`` (1 when ``secrets`` is non-empty),
``class``, ``context`` (template family id, always ``x_``-prefixed), ``service`` and ``split``
(always ``"tune"``: these rows are for tuning, never for judging).

Classes and row counts (see ``CLASS_ROWS``):

* ``encoded`` (180): secrets that appear transformed in their context (base64 in Basic and
  docker auth, Kubernetes ``data:``, JSON escaped one or two levels, URL-encoded, HTML entities,
  language string escapes, hex, JWTs, SMTP/IMAP AUTH, LDIF ``::``, line continuations...).
  ``secrets`` holds the form that appears in the text.
* ``password_in_code`` (180): credentials as string literals in code, in positional and keyword
  arguments of database, mail, FTP, LDAP, cloud and crypto APIs across many languages.
* ``cli_flag`` (180): credentials on command lines of less common tools, with flag spellings,
  quoting, continuations, Makefiles, CI YAML, Dockerfiles, cron lines and shell history.
* ``negative`` (160): look-alikes that hold no secret (ids, digests, references to secret
  stores, password policy, prose, flags that read a password from elsewhere).

Rows cycle through the families of their class, so each family contributes a near-equal share.
No secret string appears in two rows. Run ``python secret_contexts_extra_gen.py [--out PATH]``;
output depends only on ``SEED``.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import html
import json
import random
import string
import urllib.parse
from pathlib import Path
from typing import Callable

SEED = 20261201
CLASS_ROWS = {"encoded": 180, "password_in_code": 180, "cli_flag": 180, "negative": 160}
DEFAULT_OUT = Path(__file__).with_name("secret_contexts_extra.jsonl")

# Placeholder-looking values make a tuning set teach the wrong thing: real leaks are never these.
BANNED = ("xxxx", "1234", "example", "changeme", "password1", "secret123", "dummy", "foobar")

WORDS = (
    "amber anchor apricot arbor aspen atlas autumn badger basalt beacon birch bison blossom bramble "
    "breeze bronze cactus canyon cedar cinder cobalt comet copper coral cosmic cricket crimson "
    "cypress dahlia delta ember falcon fennel fjord flint forest fox garnet geyser ginger glacier "
    "granite harbor hazel heron hickory indigo iris jasper juniper kestrel lagoon lantern larch "
    "lava lemon lilac linden lotus lynx magnet maple marble meadow mercury mesa meteor mistral "
    "monsoon moss nectar nimbus oasis obsidian ocelot olive onyx orbit orchid osprey otter pebble "
    "pepper pine plume polar poppy prairie quartz quill raven reef ridge river saffron sage "
    "sapphire sequoia shale sierra slate sparrow spruce summit sundial tango thistle thunder "
    "tidal timber topaz tundra umber velvet violet walnut willow wren zephyr"
).split()
USERS = (
    "svc_billing etl_loader jmartinez app_reporting deploy backup_agent ci_runner analytics_ro "
    "grafana airflow kpatel svc-orders ops_admin m.nguyen replicator dbt_prod metabase lrossi "
    "svc_payments harvester a.kowalski ingest_worker sre_oncall tchen"
).split()
DOMAINS = (
    "prod.internal corp.acme-logistics.io eu-west-1.rds.amazonaws.com dc1.northwind.lan "
    "svc.cluster.local infra.brightpath.net stg.fieldlabs.dev db.helios-retail.com"
).split()
FIRST = "maria james priya chen olga diego fatima lukas aisha tomas yuki noah".split()
LAST = "garcia smith sharma li petrova silva rahman weber okafor novak tanaka berg".split()

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
SYMS = "!@#$%^&*-_+=.?"


def clean(value: str) -> bool:
    low = value.lower()
    return not any(b in low for b in BANNED)


def rand(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    while True:
        value = "".join(r.choice(alphabet) for _ in range(n))
        if clean(value):
            return value


def mixed(r: random.Random, n: int) -> str:
    """Random string with upper, lower, digit and symbol, the shape generators produce."""
    while True:
        chars = [r.choice(string.ascii_uppercase), r.choice(string.ascii_lowercase),
                 r.choice(string.digits), r.choice("!@#$%^&*-_+=")]
        chars += [r.choice(ALNUM + "!@#$%^&*-_+=") for _ in range(n - 4)]
        r.shuffle(chars)
        value = "".join(chars)
        if clean(value):
            return value


def pw(r: random.Random) -> str:
    """A human or generated password in one of the styles seen in real configs."""
    while True:
        style = r.randrange(5)
        if style == 0:
            value = (r.choice(WORDS).capitalize() + r.choice(WORDS).capitalize()
                     + str(r.randrange(2015, 2027)) + r.choice("!#$%*?"))
        elif style == 1:
            sep = r.choice("-._")
            value = sep.join(r.choice(WORDS) for _ in range(r.randrange(3, 5)))
            value += str(r.randrange(10, 99))
        elif style == 2:
            value = mixed(r, r.randrange(16, 25))
        elif style == 3:
            value = rand(r, r.randrange(20, 33))
        else:
            value = (r.choice(WORDS).capitalize() + r.choice("#@%&!") + str(r.randrange(10, 999))
                     + r.choice(WORDS))
        if clean(value):
            return value


def pw_with(r: random.Random, chars: str) -> str:
    """A password that contains at least one of ``chars`` (so its encoded form differs)."""
    base = pw(r)
    i = r.randrange(1, len(base))
    return base[:i] + r.choice(chars) + base[i:]


def user(r: random.Random) -> str:
    return r.choice(USERS)


def host(r: random.Random, kind: str = "db") -> str:
    return f"{kind}-{r.randrange(1, 20):02d}.{r.choice(DOMAINS)}"


def ip(r: random.Random) -> str:
    return f"10.{r.randrange(0, 255)}.{r.randrange(0, 255)}.{r.randrange(2, 254)}"


def email(r: random.Random) -> str:
    return f"{r.choice(FIRST)}.{r.choice(LAST)}@{r.choice(['acme-logistics.io', 'northwind.com', 'fieldlabs.dev'])}"


def b64(s: str | bytes) -> str:
    raw = s.encode() if isinstance(s, str) else s
    return base64.b64encode(raw).decode()


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def aws_id(r: random.Random) -> str:
    return "AKIA" + rand(r, 16, string.ascii_uppercase + "234567")


def aws_secret(r: random.Random) -> str:
    return rand(r, 40, B64)


def jwt(r: random.Random) -> str:
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = {"sub": rand(r, 12, HEX), "iat": r.randrange(1700000000, 1760000000),
            "role": r.choice(["service", "admin", "reader"]), "iss": r.choice(DOMAINS)}
    payload = b64url(json.dumps(body, separators=(",", ":")).encode())
    return f"{head}.{payload}.{b64url(r.randbytes(32))}"


def fill(template: str, **values: str) -> str:
    """Replace ``<<name>>`` placeholders; code templates stay free of brace escaping."""
    for key, value in values.items():
        template = template.replace(f"<<{key}>>", str(value))
    if "<<" in template and ">>" in template.split("<<", 1)[1]:
        raise ValueError(f"unfilled placeholder in template: {template[:80]!r}")
    return template


Family = Callable[[random.Random], tuple[str, list[str]]]
FAMILIES: dict[str, list[tuple[str, str, Family]]] = {c: [] for c in CLASS_ROWS}


def family(cls: str, context: str, service: str) -> Callable[[Family], Family]:
    def register(fn: Family) -> Family:
        FAMILIES[cls].append((context, service, fn))
        return fn
    return register


# --------------------------------------------------------------------------------------------
# encoded
# --------------------------------------------------------------------------------------------

@family("encoded", "x_enc_curl_verbose_basic", "http")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    h = host(r, "api")
    return (f"$ curl -sv https://{h}/v2/reports?limit=50\n*   Trying {ip(r)}:443...\n"
            f"* Connected to {h} port 443\n> GET /v2/reports?limit=50 HTTP/2\n> Host: {h}\n"
            f"> Authorization: Basic {token}\n> User-Agent: curl/8.5.0\n> Accept: */*\n>\n"
            f"< HTTP/2 200\n< content-type: application/json\n", [token])


@family("encoded", "x_enc_raw_http_request", "http")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    h = host(r, "jenkins")
    return (f"POST /job/release/buildWithParameters HTTP/1.1\r\nHost: {h}\r\n"
            f"Authorization: Basic {token}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: 21\r\n\r\nBRANCH=release%2F4.{r.randrange(1, 9)}", [token])


@family("encoded", "x_enc_proxy_authorization", "proxy")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    return (f"CONNECT pypi.org:443 HTTP/1.1\nHost: pypi.org:443\nProxy-Authorization: Basic {token}\n"
            f"Proxy-Connection: Keep-Alive\n\nHTTP/1.1 200 Connection established\n", [token])


@family("encoded", "x_enc_docker_config_auth", "docker")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    reg = r.choice(["registry.gitlab.com", "ghcr.io", f"harbor.{r.choice(DOMAINS)}", "quay.io"])
    doc = {"auths": {reg: {"auth": token}}, "credsStore": "", "HttpHeaders": {"User-Agent": "Docker-Client/24.0.7 (linux)"}}
    return ("# ~/.docker/config.json on the build agent\n" + json.dumps(doc, indent="\t") + "\n", [token])


@family("encoded", "x_enc_dockercfg_legacy", "docker")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    reg = f"https://{r.choice(['index.docker.io/v1/', 'registry.' + r.choice(DOMAINS)])}"
    doc = {reg: {"auth": token, "email": email(r)}}
    return ("$ cat ~/.dockercfg\n" + json.dumps(doc) + "\n", [token])


@family("encoded", "x_enc_k8s_secret_data", "kubernetes")
def _(r):
    enc = b64(pw(r))
    name = r.choice(["postgres-credentials", "rabbitmq-auth", "smtp-relay", "api-backend-db"])
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {r.choice(['prod', 'payments', 'data'])}\n"
            f"type: Opaque\ndata:\n  username: {b64(user(r))}\n  password: {enc}\n", [enc])


@family("encoded", "x_enc_k8s_dockerconfigjson", "kubernetes")
def _(r):
    inner = {"auths": {"ghcr.io": {"username": user(r), "password": pw(r), "auth": b64(f"{user(r)}:{pw(r)}")}}}
    blob = b64(json.dumps(inner, separators=(",", ":")))
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: ghcr-pull\ntype: kubernetes.io/dockerconfigjson\n"
            f"data:\n  .dockerconfigjson: {blob}\n", [blob])


@family("encoded", "x_enc_json_escaped_once", "json")
def _(r):
    secret = pw_with(r, '"\\')
    payload = json.dumps({"username": user(r), "password": secret})
    line = json.dumps({"level": "debug", "msg": "outgoing request", "body": payload})
    escaped = json.dumps(json.dumps(secret)[1:-1])[1:-1]
    return (f"{r.randrange(10, 23)}:{r.randrange(10, 59)}:04 {line}\n", [escaped])


@family("encoded", "x_enc_json_escaped_twice", "json")
def _(r):
    secret = pw_with(r, '"\\')
    level1 = json.dumps({"db": {"host": host(r), "password": secret}})
    level2 = json.dumps({"config": level1, "version": r.randrange(2, 9)})
    record = json.dumps({"event": "config_push", "payload": level2})
    form = secret
    for _ in range(3):
        form = json.dumps(form)[1:-1]
    return (record + "\n", [form])


@family("encoded", "x_enc_url_query", "http")
def _(r):
    secret = pw_with(r, "@!#&/ ")
    enc = urllib.parse.quote(secret, safe="")
    return (f'{ip(r)} - - [12/Mar/2025:08:{r.randrange(10, 59)}:11 +0000] "GET /login?user={user(r)}&password={enc}&next=%2Fdash HTTP/1.1" 302 0 "-" "python-requests/2.31.0"\n',
            [enc])


@family("encoded", "x_enc_form_body", "oauth")
def _(r):
    secret = pw_with(r, "@!#&/+ ")
    cs = rand(r, 32)
    enc = urllib.parse.quote_plus(secret)
    return (f"POST /oauth/token HTTP/1.1\nHost: {host(r, 'auth')}\nContent-Type: application/x-www-form-urlencoded\n\n"
            f"grant_type=password&username={user(r)}&password={enc}&client_id=reporting-cli&client_secret={cs}\n",
            [enc, cs])


@family("encoded", "x_enc_curl_urlencode_trace", "http")
def _(r):
    secret = pw_with(r, "@#&+ ")
    enc = urllib.parse.quote(secret, safe="")
    return (f"$ curl --trace-ascii - --data-urlencode 'password={secret}' -d user={user(r)} https://{host(r, 'sso')}/session\n"
            f"=> Send data, {len(enc) + 30} bytes\n0000: password={enc}&user=...\n", [secret, enc])


@family("encoded", "x_enc_xml_attr_entities", "dotnet")
def _(r):
    secret = pw_with(r, '&"<')
    enc = html.escape(secret, quote=True)
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<configuration>\n  <appSettings>\n'
            f'    <add key="SmtpHost" value="{host(r, "smtp")}" />\n    <add key="SmtpPassword" value="{enc}" />\n'
            f"  </appSettings>\n</configuration>\n", [enc])


@family("encoded", "x_enc_html_hidden_input", "html")
def _(r):
    secret = pw_with(r, '&"')
    enc = html.escape(secret, quote=True)
    return (f'<form method="post" action="/admin/relay">\n  <input type="hidden" name="relay_user" value="{user(r)}">\n'
            f'  <input type="hidden" name="relay_password" value="{enc}">\n  <button>Save</button>\n</form>\n', [enc])


@family("encoded", "x_enc_python_escapes", "python")
def _(r):
    secret = pw_with(r, '"\\')
    lit = secret.replace("\\", "\\\\").replace('"', '\\"')
    return (f'# settings_local.py\nDATABASES["default"].update(\n    HOST="{host(r)}",\n    PASSWORD="{lit}",\n)\n', [lit])


@family("encoded", "x_enc_js_escapes", "javascript")
def _(r):
    secret = pw_with(r, "'\\")
    lit = secret.replace("\\", "\\\\").replace("'", "\\'")
    return (f"module.exports = {{\n  host: '{host(r, 'mq')}',\n  vhost: '/billing',\n  password: '{lit}',\n}};\n", [lit])


@family("encoded", "x_enc_yaml_block_scalar", "yaml")
def _(r):
    secret = pw(r) + rand(r, 6)
    return (f"smtp:\n  host: {host(r, 'smtp')}\n  port: 587\n  password: |-\n    {secret}\n  starttls: true\n", [secret])


@family("encoded", "x_enc_yaml_folded_token", "yaml")
def _(r):
    a, b = rand(r, 32, B64URL), rand(r, 32, B64URL)
    return (f"integrations:\n  pagerduty:\n    routing_key: >-\n      {a}\n      {b}\n    severity: critical\n", [a, b])


@family("encoded", "x_enc_shell_line_continuation", "shell")
def _(r):
    a, b = rand(r, 20), rand(r, 20)
    return (f'#!/usr/bin/env bash\nset -euo pipefail\nexport SENTRY_AUTH_TOKEN="{a}\\\n{b}"\nsentry-cli releases new "$GIT_SHA"\n', [a, b])


@family("encoded", "x_enc_hex_password", "app")
def _(r):
    enc = binascii.hexlify(pw(r).encode()).decode()
    return (f"[datasource]\nurl = jdbc:postgresql://{host(r)}:5432/ledger\nuser = {user(r)}\n# stored hex-encoded, decoded at start-up\npassword_hex = {enc}\n", [enc])


@family("encoded", "x_enc_xxd_transcript", "shell")
def _(r):
    secret = pw(r)
    enc = binascii.hexlify(secret.encode()).decode()
    return (f"$ echo -n '{secret}' | xxd -p\n{enc}\n$ vault kv put secret/ci/hex value={enc}\n", [secret, enc])


@family("encoded", "x_enc_jwt_bearer", "http")
def _(r):
    token = jwt(r)
    return (f"GET /api/v1/invoices HTTP/1.1\nHost: {host(r, 'billing')}\nAuthorization: Bearer {token}\nAccept: application/json\n", [token])


@family("encoded", "x_enc_git_extraheader", "git")
def _(r):
    token = b64(f"x-access-token:{rand(r, 36)}" if r.random() < 0.5 else f"{user(r)}:{pw(r)}")
    h = r.choice(["github.com", "gitlab." + r.choice(DOMAINS), "dev.azure.com"])
    return (f'git config --global http.https://{h}/.extraheader "AUTHORIZATION: basic {token}"\n'
            f"git clone https://{h}/platform/deploy-scripts.git\n", [token])


@family("encoded", "x_enc_npmrc_auth", "npm")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    return (f"registry=https://nexus.{r.choice(DOMAINS)}/repository/npm-group/\n_auth={token}\nemail={email(r)}\nalways-auth=true\n", [token])


@family("encoded", "x_enc_npmrc_password_b64", "npm")
def _(r):
    enc = b64(pw(r))
    reg = f"//artifactory.{r.choice(DOMAINS)}/api/npm/npm-local/"
    return (f"{reg}:username={user(r)}\n{reg}:_password={enc}\n{reg}:email={email(r)}\n", [enc])


@family("encoded", "x_enc_pypirc_percent", "pypi")
def _(r):
    secret = pw_with(r, "%")
    lit = secret.replace("%", "%%")  # configparser interpolation doubles percent signs
    return (f"[distutils]\nindex-servers =\n    internal\n\n[internal]\nrepository = https://pypi.{r.choice(DOMAINS)}/simple/\n"
            f"username = {user(r)}\npassword = {lit}\n", [lit])


@family("encoded", "x_enc_smtp_auth_plain", "smtp")
def _(r):
    token = b64(f"\0{email(r)}\0{pw(r)}")
    return (f"S: 220 {host(r, 'smtp')} ESMTP Postfix\nC: EHLO build-07\nS: 250-AUTH PLAIN LOGIN\nC: AUTH PLAIN {token}\nS: 235 2.7.0 Authentication successful\n", [token])


@family("encoded", "x_enc_smtp_auth_login", "smtp")
def _(r):
    enc = b64(pw(r))
    return (f"C: AUTH LOGIN\nS: 334 VXNlcm5hbWU6\nC: {b64(email(r))}\nS: 334 UGFzc3dvcmQ6\nC: {enc}\nS: 235 Authentication succeeded\n", [enc])


@family("encoded", "x_enc_imap_authenticate", "imap")
def _(r):
    token = b64(f"\0{email(r)}\0{pw(r)}")
    return (f"* OK [CAPABILITY IMAP4rev1 SASL-IR AUTH=PLAIN] Dovecot ready.\na001 AUTHENTICATE PLAIN {token}\na001 OK Logged in\n", [token])


@family("encoded", "x_enc_ldif_userpassword", "ldap")
def _(r):
    enc = b64(pw(r))
    name = f"{r.choice(FIRST)}.{r.choice(LAST)}"
    return (f"dn: uid={name},ou=people,dc=northwind,dc=lan\nobjectClass: inetOrgPerson\nuid: {name}\ncn: {name}\nuserPassword:: {enc}\n", [enc])


@family("encoded", "x_enc_printf_base64", "shell")
def _(r):
    secret = pw(r)
    u = user(r)
    token = b64(f"{u}:{secret}")
    return (f"$ printf '%s' '{u}:{secret}' | base64\n{token}\n$ curl -H \"Authorization: Basic {token}\" https://{host(r, 'grafana')}/api/health\n",
            [secret, token])


@family("encoded", "x_enc_url_in_dsn", "redis")
def _(r):
    secret = pw_with(r, "@/:#")
    enc = urllib.parse.quote(secret, safe="")
    return (f"CELERY_BROKER_URL=redis://:{enc}@{host(r, 'cache')}:6379/2\nCELERY_RESULT_EXPIRES=3600\n", [enc])


@family("encoded", "x_enc_postgres_uri_encoded", "postgres")
def _(r):
    secret = pw_with(r, "@#?/")
    enc = urllib.parse.quote(secret, safe="")
    return (f'SQLALCHEMY_DATABASE_URI = "postgresql+psycopg2://{user(r)}:{enc}@{host(r)}:5432/warehouse?sslmode=require"\n', [enc])


@family("encoded", "x_enc_requests_basic_header", "python")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    return (f'resp = requests.get(\n    "https://{host(r, "nexus")}/service/rest/v1/components",\n'
            f'    headers={{"Authorization": "Basic {token}"}},\n    timeout=30,\n)\n', [token])


@family("encoded", "x_enc_compose_dollar_escape", "docker")
def _(r):
    secret = pw_with(r, "$")
    lit = secret.replace("$", "$$")  # compose interpolation needs $$ for a literal dollar
    return (f"services:\n  db:\n    image: mariadb:11.2\n    environment:\n      MARIADB_ROOT_PASSWORD: \"{lit}\"\n"
            f"      MARIADB_DATABASE: shop\n", [lit])


@family("encoded", "x_enc_dotenv_escapes", "dotenv")
def _(r):
    secret = pw_with(r, '"$\\')
    lit = secret.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return (f'APP_ENV=production\nMAIL_HOST={host(r, "smtp")}\nMAIL_PASSWORD="{lit}"\nMAIL_PORT=465\n', [lit])


@family("encoded", "x_enc_b64_service_account", "gcp")
def _(r):
    key = {"type": "service_account", "project_id": f"{r.choice(WORDS)}-prod-{r.randrange(100, 999)}",
           "private_key_id": rand(r, 40, HEX),
           "private_key": "-----BEGIN PRIVATE KEY-----\n" + rand(r, 64, B64) + "\n-----END PRIVATE KEY-----\n",
           "client_email": f"loader@{r.choice(WORDS)}.iam.gserviceaccount.com"}
    blob = b64(json.dumps(key))
    return (f"# CI variable, masked\nGOOGLE_CREDENTIALS_B64={blob}\n", [blob])


@family("encoded", "x_enc_websocket_query_token", "http")
def _(r):
    token = jwt(r)
    enc = urllib.parse.quote(token, safe="")
    return (f'[ws] connecting to wss://{host(r, "rt")}/socket?vsn=2.0.0&access_token={enc}\n[ws] connected in {r.randrange(40, 300)}ms\n', [enc])


@family("encoded", "x_enc_powershell_base64", "powershell")
def _(r):
    token = b64(f"{user(r)}:{pw(r)}")
    return (f'$headers = @{{ Authorization = "Basic {token}" }}\nInvoke-RestMethod -Uri "https://{host(r, "tfs")}/_apis/projects" -Headers $headers\n', [token])


# --------------------------------------------------------------------------------------------
# password_in_code
# --------------------------------------------------------------------------------------------

@family("password_in_code", "x_code_psycopg2_dsn", "postgres")
def _(r):
    s = pw(r)
    return (f'import psycopg2\n\nconn = psycopg2.connect("host={host(r)} dbname=ledger user={user(r)} password={s} sslmode=require")\ncur = conn.cursor()\n', [s])


@family("password_in_code", "x_code_pymssql_positional", "mssql")
def _(r):
    s = pw(r)
    return (f'conn = pymssql.connect("{host(r, "sql")}", "{user(r)}", "{s}", "ReportServer")\ncursor = conn.cursor(as_dict=True)\n', [s])


@family("password_in_code", "x_code_cx_oracle_positional", "oracle")
def _(r):
    s = pw(r)
    return (f'import cx_Oracle\n\ncon = cx_Oracle.connect("{user(r).upper()}", "{s}", "{host(r, "ora")}:1521/ORCLPDB1", encoding="UTF-8")\n', [s])


@family("password_in_code", "x_code_mongoclient_kwargs", "mongodb")
def _(r):
    s = pw(r)
    return (f'client = MongoClient(\n    "{host(r, "mongo")}",\n    27017,\n    username="{user(r)}",\n    password="{s}",\n    authSource="admin",\n)\n', [s])


@family("password_in_code", "x_code_sequelize_positional", "mysql")
def _(r):
    s = pw(r)
    return (fill("const sequelize = new Sequelize('inventory', '<<u>>', '<<s>>', {\n  host: '<<h>>',\n  dialect: 'mysql',\n  logging: false,\n});\n",
                 u=user(r), s=s, h=host(r)), [s])


@family("password_in_code", "x_code_mysql_createconnection", "mysql")
def _(r):
    s = pw(r)
    return (fill("const connection = mysql.createConnection({\n  host: '<<h>>',\n  user: '<<u>>',\n  password: '<<s>>',\n  database: 'orders'\n});\nconnection.connect();\n",
                 h=host(r), u=user(r), s=s), [s])


@family("password_in_code", "x_code_knex_connection", "postgres")
def _(r):
    s = pw(r)
    return (fill("const db = require('knex')({\n  client: 'pg',\n  connection: {\n    host: '<<h>>',\n    port: 5432,\n    user: '<<u>>',\n    password: '<<s>>',\n    database: 'analytics',\n  },\n});\n",
                 h=host(r), u=user(r), s=s), [s])


@family("password_in_code", "x_code_go_sql_open", "mysql")
def _(r):
    s = pw(r).replace("@", "")  # the mysql DSN parser splits on the last '@'
    return (fill('db, err := sql.Open("mysql", "<<u>>:<<s>>@tcp(<<h>>:3306)/billing?parseTime=true")\nif err != nil {\n\tlog.Fatal(err)\n}\n',
                 u=user(r), s=s, h=host(r)), [s])


@family("password_in_code", "x_code_gorm_open", "mysql")
def _(r):
    s = pw(r).replace("@", "")
    return (fill('dsn := "<<u>>:<<s>>@tcp(<<h>>:3306)/shop?charset=utf8mb4&parseTime=True&loc=Local"\ndb, err := gorm.Open(mysql.Open(dsn), &gorm.Config{})\n',
                 u=user(r), s=s, h=host(r)), [s])


@family("password_in_code", "x_code_jdbc_properties", "postgres")
def _(r):
    s = pw(r)
    return (fill('Properties props = new Properties();\nprops.setProperty("user", "<<u>>");\nprops.setProperty("password", "<<s>>");\nprops.setProperty("ssl", "true");\nConnection conn = DriverManager.getConnection("jdbc:postgresql://<<h>>/claims", props);\n',
                 u=user(r), s=s, h=host(r)), [s])


@family("password_in_code", "x_code_datasource_setpassword", "java")
def _(r):
    s = pw(r)
    return (fill('HikariConfig cfg = new HikariConfig();\ncfg.setJdbcUrl("jdbc:mysql://<<h>>:3306/crm");\ncfg.setUsername("<<u>>");\ncfg.setPassword("<<s>>");\nHikariDataSource ds = new HikariDataSource(cfg);\n',
                 h=host(r), u=user(r), s=s), [s])


@family("password_in_code", "x_code_jedis_auth", "redis")
def _(r):
    s = pw(r)
    return (fill('try (Jedis jedis = pool.getResource()) {\n    jedis.auth("<<s>>");\n    jedis.select(3);\n    return jedis.get(key);\n}\n', s=s), [s])


@family("password_in_code", "x_code_node_redis_client", "redis")
def _(r):
    s = pw(r)
    return (fill("const client = redis.createClient({\n  socket: { host: '<<h>>', port: 6380, tls: true },\n  password: '<<s>>',\n});\nawait client.connect();\n",
                 h=host(r, "cache"), s=s), [s])


@family("password_in_code", "x_code_paramiko_connect", "ssh")
def _(r):
    s = pw(r)
    return (f'ssh = paramiko.SSHClient()\nssh.set_missing_host_key_policy(paramiko.AutoAddPolicy())\nssh.connect("{ip(r)}", username="{user(r)}", password="{s}", timeout=10)\n', [s])


@family("password_in_code", "x_code_pysftp_connection", "sftp")
def _(r):
    s = pw(r)
    return (f'with pysftp.Connection("{host(r, "sftp")}", username="{user(r)}", password="{s}", cnopts=cnopts) as sftp:\n    sftp.put(local_path, "/inbound/" + name)\n', [s])


@family("password_in_code", "x_code_ftplib_positional", "ftp")
def _(r):
    s = pw(r)
    return (f'from ftplib import FTP_TLS\n\nftps = FTP_TLS("{host(r, "ftp")}", "{user(r)}", "{s}")\nftps.prot_p()\nftps.retrlines("LIST")\n', [s])


@family("password_in_code", "x_code_smtplib_login", "smtp")
def _(r):
    s = pw(r)
    return (f'with smtplib.SMTP("{host(r, "smtp")}", 587) as server:\n    server.starttls()\n    server.login("{email(r)}", "{s}")\n    server.send_message(msg)\n', [s])


@family("password_in_code", "x_code_imaplib_login", "imap")
def _(r):
    s = pw(r)
    return (f'M = imaplib.IMAP4_SSL("{host(r, "imap")}")\nM.login("{email(r)}", "{s}")\nM.select("INBOX")\n', [s])


@family("password_in_code", "x_code_ldap3_connection", "ldap")
def _(r):
    s = pw(r)
    return (f'server = Server("ldaps://{host(r, "dc")}", get_info=ALL)\nconn = Connection(server, "cn=svc-ldap,ou=service,dc=northwind,dc=lan", "{s}", auto_bind=True)\n', [s])


@family("password_in_code", "x_code_boto3_client", "aws")
def _(r):
    s = aws_secret(r)
    return (f's3 = boto3.client(\n    "s3",\n    region_name="eu-central-1",\n    aws_access_key_id="{aws_id(r)}",\n    aws_secret_access_key="{s}",\n)\n', [s])


@family("password_in_code", "x_code_minio_positional", "minio")
def _(r):
    s = rand(r, 40)
    return (f'client = Minio("{host(r, "minio")}:9000", "{rand(r, 20, string.ascii_uppercase + string.digits)}", "{s}", secure=True)\n', [s])


@family("password_in_code", "x_code_pyjwt_encode", "jwt")
def _(r):
    s = rand(r, r.randrange(24, 48), ALNUM + "-_")
    return (f'token = jwt.encode({{"sub": user.id, "exp": expires}}, "{s}", algorithm="HS256")\n', [s])


@family("password_in_code", "x_code_hmac_new", "webhook")
def _(r):
    s = "whsec_" + rand(r, 32) if r.random() < 0.5 else rand(r, 40, HEX)
    return (f'digest = hmac.new(b"{s}", request.body, hashlib.sha256).hexdigest()\nif not hmac.compare_digest(digest, signature):\n    abort(401)\n', [s])


@family("password_in_code", "x_code_fernet_key", "crypto")
def _(r):
    s = base64.urlsafe_b64encode(r.randbytes(32)).decode()
    return (f'from cryptography.fernet import Fernet\n\nf = Fernet(b"{s}")\ntoken = f.encrypt(card_number.encode())\n', [s])


@family("password_in_code", "x_code_flask_secret_key", "flask")
def _(r):
    s = rand(r, 32, HEX) if r.random() < 0.5 else mixed(r, 28)
    return (f'app = Flask(__name__)\napp.secret_key = "{s}"\napp.config["SESSION_COOKIE_SECURE"] = True\n', [s])


@family("password_in_code", "x_code_django_secret_key", "django")
def _(r):
    s = rand(r, 50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)")
    return (f"DEBUG = False\nALLOWED_HOSTS = [\"portal.northwind.com\"]\nSECRET_KEY = '{s}'\n", [s])


@family("password_in_code", "x_code_express_session", "express")
def _(r):
    s = pw(r)
    return (fill("app.use(session({\n  secret: '<<s>>',\n  resave: false,\n  saveUninitialized: false,\n  cookie: { secure: true },\n}));\n", s=s), [s])


@family("password_in_code", "x_code_node_create_hmac", "webhook")
def _(r):
    s = rand(r, 32)
    return (f"const sig = crypto.createHmac('sha256', '{s}').update(rawBody).digest('hex');\n", [s])


@family("password_in_code", "x_code_csharp_sqlconnection", "mssql")
def _(r):
    s = pw(r).replace(";", "")
    return (f'using var conn = new SqlConnection("Server={host(r, "sql")};Database=Payroll;User Id={user(r)};Password={s};TrustServerCertificate=True;");\nawait conn.OpenAsync();\n', [s])


@family("password_in_code", "x_code_csharp_networkcredential", "smtp")
def _(r):
    s = pw(r)
    return (f'var smtp = new SmtpClient("{host(r, "smtp")}", 587)\n{{\n    EnableSsl = true,\n    Credentials = new NetworkCredential("{email(r)}", "{s}"),\n}};\nsmtp.Send(new MailMessage(new MailAddress("{email(r)}"), new MailAddress(to)));\n', [s])


@family("password_in_code", "x_code_go_struct_literal", "go")
def _(r):
    s = pw(r)
    return (fill('cfg := &Config{\n\tHost:     "<<h>>",\n\tPort:     5432,\n\tUser:     "<<u>>",\n\tPassword: "<<s>>",\n\tSSLMode:  "verify-full",\n}\n',
                 h=host(r), u=user(r), s=s), [s])


@family("password_in_code", "x_code_rust_builder", "rust")
def _(r):
    s = pw(r)
    return (fill('let opts = OptsBuilder::new()\n    .ip_or_hostname(Some("<<h>>"))\n    .user(Some("<<u>>"))\n    .pass(Some("<<s>>"))\n    .db_name(Some("telemetry"));\n',
                 h=host(r), u=user(r), s=s), [s])


@family("password_in_code", "x_code_rust_lettre_credentials", "smtp")
def _(r):
    s = pw(r)
    return (fill('let creds = Credentials::new("<<e>>".to_owned(), "<<s>>".to_owned());\nlet mailer = SmtpTransport::relay("<<h>>")?.credentials(creds).build();\n',
                 e=email(r), s=s, h=host(r, "smtp")), [s])


@family("password_in_code", "x_code_ruby_net_smtp", "smtp")
def _(r):
    s = pw(r)
    return (f"Net::SMTP.start('{host(r, 'smtp')}', 587, 'northwind.com', '{email(r)}', '{s}', :login) do |smtp|\n  smtp.send_message(msg, from, to)\nend\n", [s])


@family("password_in_code", "x_code_php_ldap_bind", "ldap")
def _(r):
    s = pw(r)
    return (f'$conn = ldap_connect("ldaps://{host(r, "dc")}");\nldap_set_option($conn, LDAP_OPT_PROTOCOL_VERSION, 3);\n$ok = ldap_bind($conn, "cn=portal,ou=apps,dc=northwind,dc=lan", \'{s}\');\n', [s])


@family("password_in_code", "x_code_php_pdo", "mysql")
def _(r):
    s = pw(r)
    return (f"$pdo = new PDO('mysql:host={host(r)};dbname=wp_shop;charset=utf8mb4', '{user(r)}', '{s}', [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);\n", [s])


@family("password_in_code", "x_code_shell_sshpass_function", "ssh")
def _(r):
    s = pw(r).replace("'", "")
    return (f"deploy() {{\n  sshpass -p '{s}' rsync -az dist/ {user(r)}@{ip(r)}:/srv/www/\n}}\n", [s])


@family("password_in_code", "x_code_powershell_pscredential", "powershell")
def _(r):
    s = pw(r)  # single quotes: PowerShell expands $ inside double quotes
    return (f"$secure = ConvertTo-SecureString '{s}' -AsPlainText -Force"
            + f'\n$cred = New-Object System.Management.Automation.PSCredential("NORTHWIND\\{user(r)}", $secure)\nEnter-PSSession -ComputerName {host(r, "app")} -Credential $cred\n', [s])


@family("password_in_code", "x_code_java_constant", "java")
def _(r):
    s = pw(r)
    return (f'public final class KeystoreConfig {{\n    static final String KEYSTORE_PATH = "/opt/app/conf/server.p12";\n    private static final String KEYSTORE_PASS = "{s}";\n}}\n', [s])


@family("password_in_code", "x_code_ts_enum", "typescript")
def _(r):
    a, b = rand(r, 32), rand(r, 32)
    return (f"export enum PartnerApiKey {{\n  Shipping = '{a}',\n  Tax = '{b}',\n}}\n", [a, b])


@family("password_in_code", "x_code_pytest_fixture", "python")
def _(r):
    s = pw(r)
    return (f'@pytest.fixture\ndef staging_admin():\n    return {{"username": "{user(r)}", "password": "{s}", "tenant": "northwind"}}\n', [s])


@family("password_in_code", "x_code_jest_login", "typescript")
def _(r):
    s = pw(r).replace("'", "")
    return (f"beforeAll(async () => {{\n  await page.goto('https://{host(r, 'staging')}/login');\n  await login(page, '{email(r)}', '{s}');\n}});\n", [s])


@family("password_in_code", "x_code_requests_auth_tuple", "python")
def _(r):
    s = pw(r)
    return (f'r = requests.post(url, json=payload, auth=("{user(r)}", "{s}"), timeout=15)\nr.raise_for_status()\n', [s])


@family("password_in_code", "x_code_perl_dbi", "mysql")
def _(r):
    s = pw(r).replace("'", "")
    return (f"my $dbh = DBI->connect('DBI:mysql:database=nagios;host={host(r)}', '{user(r)}', '{s}', {{ RaiseError => 1 }});\n", [s])


@family("password_in_code", "x_code_kotlin_const", "kotlin")
def _(r):
    s = pw(r).replace("$", "")  # Kotlin string templates expand $
    return (f'object MqttDefaults {{\n    const val BROKER = "ssl://{host(r, "mqtt")}:8883"\n    const val USERNAME = "{user(r)}"\n    const val PASSWORD = "{s}"\n}}\n', [s])


# --------------------------------------------------------------------------------------------
# cli_flag
# --------------------------------------------------------------------------------------------

def q(r: random.Random, value: str) -> str:
    """Quote a value the way people do on a shell line (single, double or bare)."""
    style = r.randrange(3)
    if style == 0 or any(c in value for c in "$!`\"\\&;|<>()*?# "):
        return "'" + value + "'"
    if style == 1:
        return '"' + value + '"'
    return value


def shell_pw(r: random.Random) -> str:
    return pw(r).replace("'", "")


@family("cli_flag", "x_cli_pgdump_pgpassword", "postgres")
def _(r):
    s = shell_pw(r)
    return (f"PGPASSWORD={q(r, s)} pg_dump -h {host(r)} -U {user(r)} -Fc -d ledger -f /backups/ledger_$(date +%F).dump\n", [s])


@family("cli_flag", "x_cli_pg_restore_env", "postgres")
def _(r):
    s = shell_pw(r)
    return (f"env PGPASSWORD={q(r, s)} pg_restore --no-owner -h {host(r)} -U {user(r)} -d staging /tmp/prod.dump\n", [s])


@family("cli_flag", "x_cli_clickhouse_client", "clickhouse")
def _(r):
    s = shell_pw(r)
    flag = r.choice([f"--password {q(r, s)}", f"--password={q(r, s)}"])
    return (f"clickhouse-client --host {host(r, 'ch')} --user {user(r)} {flag} --query \"SELECT count() FROM events\"\n", [s])


@family("cli_flag", "x_cli_cockroach_url", "cockroach")
def _(r):
    s = rand(r, 22)
    return (f"cockroach sql --url \"postgresql://{user(r)}:{s}@{host(r, 'crdb')}:26257/bank?sslmode=verify-full\" -e 'SHOW TABLES;'\n", [s])


@family("cli_flag", "x_cli_influx", "influxdb")
def _(r):
    s = shell_pw(r)
    return (f"influx -host {host(r, 'tsdb')} -ssl -username {user(r)} -password {q(r, s)} -database telegraf -execute 'SHOW MEASUREMENTS'\n", [s])


@family("cli_flag", "x_cli_nats", "nats")
def _(r):
    s = shell_pw(r)
    return (f"nats --server nats://{host(r, 'nats')}:4222 --user {user(r)} --password {q(r, s)} sub 'orders.>'\n", [s])


@family("cli_flag", "x_cli_rabbitmqadmin", "rabbitmq")
def _(r):
    s = shell_pw(r)
    return (f"rabbitmqadmin -H {host(r, 'mq')} -u {user(r)} -p {q(r, s)} list queues name messages\n", [s])


@family("cli_flag", "x_cli_kafka_jaas_inline", "kafka")
def _(r):
    s = rand(r, 24)
    return (f"kafka-console-producer.sh --bootstrap-server {host(r, 'kafka')}:9093 --topic audit \\\n"
            f"  --producer-property security.protocol=SASL_SSL \\\n  --producer-property sasl.mechanism=SCRAM-SHA-512 \\\n"
            f"  --producer-property 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user(r)}\" password=\"{s}\";'\n", [s])


@family("cli_flag", "x_cli_hydra", "pentest")
def _(r):
    s = shell_pw(r)
    return (f"hydra -l administrator -p {q(r, s)} -t 4 rdp://{ip(r)}\n", [s])


@family("cli_flag", "x_cli_medusa", "pentest")
def _(r):
    s = shell_pw(r)
    return (f"medusa -h {ip(r)} -u {user(r)} -p {q(r, s)} -M ssh -n 2222\n", [s])


@family("cli_flag", "x_cli_crackmapexec", "pentest")
def _(r):
    s = shell_pw(r)
    return (f"crackmapexec smb {ip(r)}/24 -u {user(r)} -p {q(r, s)} --shares\n", [s])


@family("cli_flag", "x_cli_enum4linux", "pentest")
def _(r):
    s = shell_pw(r)
    return (f"enum4linux -a -u {user(r)} -p {q(r, s)} {ip(r)} | tee enum.txt\n", [s])


@family("cli_flag", "x_cli_x11vnc_passwd", "vnc")
def _(r):
    s = rand(r, 8)
    return (f"x11vnc -display :0 -forever -shared -passwd {s} -rfbport 5901 &\n", [s])


@family("cli_flag", "x_cli_iwconfig_key", "wifi")
def _(r):
    s = shell_pw(r)
    return (f"sudo iwconfig wlan0 essid \"Warehouse-5G\" key s:{q(r, s)}\n", [s])


@family("cli_flag", "x_cli_wg_private_key", "wireguard")
def _(r):
    s = b64(r.randbytes(32))
    return (f"$ echo '{s}' | wg pubkey\n{b64(r.randbytes(32))}\n$ sudo wg set wg0 listen-port 51820 private-key /etc/wireguard/private.key\n", [s])


@family("cli_flag", "x_cli_curl_data_password", "http")
def _(r):
    s = shell_pw(r).replace("&", "")
    return (f"curl -s -X POST https://{host(r, 'auth')}/api/login --data 'username={user(r)}&password={s}' -c cookies.txt\n", [s])


@family("cli_flag", "x_cli_httpie_auth", "http")
def _(r):
    s = shell_pw(r)
    return (f"http -a {user(r)}:{q(r, s)} GET https://{host(r, 'registry')}/v2/_catalog\n", [s])


@family("cli_flag", "x_cli_ab_basic", "http")
def _(r):
    s = shell_pw(r)
    return (f"ab -n 2000 -c 50 -A {user(r)}:{q(r, s)} https://{host(r, 'staging')}/api/health\n", [s])


@family("cli_flag", "x_cli_aria2c", "http")
def _(r):
    s = shell_pw(r)
    return (f"aria2c -x8 --http-user={user(r)} --http-passwd={q(r, s)} https://{host(r, 'dl')}/releases/firmware-7.4.bin\n", [s])


@family("cli_flag", "x_cli_rsync_password_env", "rsync")
def _(r):
    s = shell_pw(r)
    return (f"RSYNC_PASSWORD={q(r, s)} rsync -avz --delete /srv/media/ rsync://{user(r)}@{host(r, 'nas')}/media/\n", [s])


@family("cli_flag", "x_cli_sshfs_stdin", "ssh")
def _(r):
    s = shell_pw(r)
    return (f"echo {q(r, s)} | sshfs {user(r)}@{ip(r)}:/data /mnt/data -o password_stdin,reconnect\n", [s])


@family("cli_flag", "x_cli_mount_cifs", "smb")
def _(r):
    s = shell_pw(r).replace(",", "")
    return (f"sudo mount -t cifs //{ip(r)}/finance /mnt/finance -o username={user(r)},password={s},vers=3.0,uid=1000\n", [s])


@family("cli_flag", "x_cli_sqlcmd", "mssql")
def _(r):
    s = shell_pw(r)
    return (f"sqlcmd -S {host(r, 'sql')},1433 -U {user(r)} -P {q(r, s)} -d Payroll -Q \"EXEC dbo.nightly_close\"\n", [s])


@family("cli_flag", "x_cli_bcp", "mssql")
def _(r):
    s = shell_pw(r)
    return (f"bcp Payroll.dbo.Employees out employees.dat -S {host(r, 'sql')} -U {user(r)} -P {q(r, s)} -n\n", [s])


@family("cli_flag", "x_cli_mysqlimport", "mysql")
def _(r):
    s = shell_pw(r)
    return (f"mysqlimport --local --host={host(r)} --user={user(r)} --password={q(r, s)} --fields-terminated-by=, shop /tmp/products.csv\n", [s])


@family("cli_flag", "x_cli_mongoimport", "mongodb")
def _(r):
    s = shell_pw(r)
    return (f"mongoimport --host {host(r, 'mongo')} --username {user(r)} --password {q(r, s)} --authenticationDatabase admin --db crm --collection leads --file leads.json\n", [s])


@family("cli_flag", "x_cli_cypher_shell", "neo4j")
def _(r):
    s = shell_pw(r)
    return (f"cypher-shell -a neo4j+s://{host(r, 'graph')}:7687 -u neo4j -p {q(r, s)} 'MATCH (n) RETURN count(n);'\n", [s])


@family("cli_flag", "x_cli_arangosh", "arangodb")
def _(r):
    s = shell_pw(r)
    return (f"arangosh --server.endpoint ssl://{host(r, 'arango')}:8529 --server.username root --server.password {q(r, s)} --javascript.execute migrate.js\n", [s])


@family("cli_flag", "x_cli_redis_benchmark", "redis")
def _(r):
    s = rand(r, 32)
    return (f"redis-benchmark -h {host(r, 'cache')} -p 6379 -a {s} -t set,get -n 100000 -q\n", [s])


@family("cli_flag", "x_cli_valkey_cli", "valkey")
def _(r):
    s = shell_pw(r)
    return (f"valkey-cli -h {host(r, 'cache')} --tls -a {q(r, s)} --no-auth-warning INFO replication\n", [s])


@family("cli_flag", "x_cli_ldapmodify", "ldap")
def _(r):
    s = shell_pw(r)
    return (f"ldapmodify -H ldaps://{host(r, 'dc')} -D 'cn=admin,dc=northwind,dc=lan' -w {q(r, s)} -f add_group.ldif\n", [s])


@family("cli_flag", "x_cli_kinit_echo", "kerberos")
def _(r):
    s = shell_pw(r)
    return (f"echo {q(r, s)} | kinit {user(r)}@NORTHWIND.LAN && klist\n", [s])


@family("cli_flag", "x_cli_az_account_key", "azure")
def _(r):
    s = b64(r.randbytes(64))
    return (f"az storage blob upload --account-name {r.choice(WORDS)}prodsa --account-key \"{s}\" -c exports -f report.csv -n 2025/03/report.csv\n", [s])


@family("cli_flag", "x_cli_s3cmd", "s3")
def _(r):
    s = aws_secret(r)
    return (f"s3cmd --access_key={aws_id(r)} --secret_key={s} sync ./public/ s3://{r.choice(WORDS)}-static/\n", [s])


@family("cli_flag", "x_cli_aws_configure_set", "aws")
def _(r):
    s = aws_secret(r)
    return (f"aws configure set aws_access_key_id {aws_id(r)} --profile ci\naws configure set aws_secret_access_key {s} --profile ci\n", [s])


@family("cli_flag", "x_cli_terraform_var", "terraform")
def _(r):
    s = shell_pw(r)
    return (f"terraform apply -auto-approve -var 'db_password={s}' -var env=prod\n", [s])


@family("cli_flag", "x_cli_packer_var", "packer")
def _(r):
    s = shell_pw(r)
    return (f"packer build -var \"winrm_password={s.replace('$', '')}\" -var-file=windows2022.pkrvars.hcl windows.pkr.hcl\n", [s.replace("$", "")])


@family("cli_flag", "x_cli_helm_set", "kubernetes")
def _(r):
    s = shell_pw(r).replace(",", "")
    return (f"helm upgrade --install keycloak bitnami/keycloak -n auth \\\n  --set auth.adminUser=admin \\\n  --set auth.adminPassword={q(r, s)} \\\n  --set postgresql.enabled=false\n", [s])


@family("cli_flag", "x_cli_kubectl_docker_password", "kubernetes")
def _(r):
    s = rand(r, 36)
    return (f"kubectl create secret docker-registry regcred --docker-server=ghcr.io --docker-username={user(r)} --docker-password={s} -n apps\n", [s])


@family("cli_flag", "x_cli_docker_run_env", "docker")
def _(r):
    s = shell_pw(r)
    return (f"docker run -d --name pg -p 5432:5432 -e POSTGRES_USER={user(r)} -e POSTGRES_PASSWORD={q(r, s)} postgres:16\n", [s])


@family("cli_flag", "x_cli_docker_build_arg", "docker")
def _(r):
    s = rand(r, 40)
    return (f"docker build --build-arg NPM_TOKEN={s} --build-arg NODE_ENV=production -t web:latest .\n", [s])


@family("cli_flag", "x_cli_ansible_extra_vars", "ansible")
def _(r):
    s = shell_pw(r).replace('"', "")
    return (f"ansible-playbook -i inventories/prod site.yml -e \"ansible_user={user(r)} ansible_password={s}\" --limit web\n", [s])


@family("cli_flag", "x_cli_mysqldump_attached", "mysql")
def _(r):
    s = shell_pw(r)
    return (f"mysqldump -h {host(r)} -u {user(r)} -p'{s}' --single-transaction shop | gzip > shop.sql.gz\n", [s])


@family("cli_flag", "x_cli_makefile_recipe", "make")
def _(r):
    s = rand(r, 20)
    return (f"seed:\n\tPGPASSWORD={s} psql -h localhost -U {user(r)} -d app -f db/seed.sql\n\n.PHONY: seed\n", [s])


@family("cli_flag", "x_cli_ci_yaml_run", "ci")
def _(r):
    s = shell_pw(r)
    return (f"jobs:\n  migrate:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
            f"      - run: flyway -url=jdbc:postgresql://{host(r)}/app -user={user(r)} -password={q(r, s)} migrate\n", [s])


@family("cli_flag", "x_cli_dockerfile_run", "docker")
def _(r):
    s = shell_pw(r)
    return (f"FROM python:3.12-slim\nRUN pip config set global.index-url https://{user(r)}:{urllib.parse.quote(s, safe='')}@pypi.{r.choice(DOMAINS)}/simple \\\n    && pip install --no-cache-dir -r requirements.txt\n",
            [urllib.parse.quote(s, safe="")])


@family("cli_flag", "x_cli_cron_line", "cron")
def _(r):
    s = shell_pw(r).replace("%", "")  # cron turns % into a newline
    return (f"# m h dom mon dow command\n30 2 * * * /usr/bin/mysqldump -u{user(r)} -p'{s}' crm > /var/backups/crm.sql 2>&1\n", [s])


@family("cli_flag", "x_cli_shell_history", "shell")
def _(r):
    s = shell_pw(r)
    return (f"  501  cd /opt/app\n  502  git pull\n  503  psql \"postgresql://{user(r)}@{host(r)}/app\"\n  504  mongosh \"mongodb://{host(r, 'mongo')}\" -u {user(r)} -p {q(r, s)}\n  505  history | tail\n", [s])


@family("cli_flag", "x_cli_sudo_vpn", "vpn")
def _(r):
    s = shell_pw(r)
    return (f"sudo openconnect --protocol=gp vpn.northwind.com --user={user(r)} --passwd-on-stdin <<< {q(r, s)}\n", [s])


@family("cli_flag", "x_cli_powershell_backtick", "powershell")
def _(r):
    s = pw(r).replace('"', "").replace("`", "").replace("$", "")
    return (f'Invoke-Sqlcmd -ServerInstance "{host(r, "sql")}" `\n    -Username "{user(r)}" `\n    -Password "{s}" `\n    -Query "SELECT @@VERSION"\n', [s])


@family("cli_flag", "x_cli_cmd_caret", "windows")
def _(r):
    s = pw(r).replace("^", "").replace("&", "").replace('"', "").replace("%", "")
    return (f"net use Z: \\\\{host(r, 'fs')}\\share ^\n  /user:NORTHWIND\\{user(r)} ^\n  {s} /persistent:no\n", [s])


@family("cli_flag", "x_cli_vagrant_env", "vagrant")
def _(r):
    s = shell_pw(r)
    return (f"VAGRANT_SMB_PASSWORD={q(r, s)} VAGRANT_SMB_USERNAME={user(r)} vagrant up --provider hyperv\n", [s])


@family("cli_flag", "x_cli_gsutil_boto_option", "gcs")
def _(r):
    s = rand(r, 40, B64)
    return (f"gsutil -o \"Credentials:gs_access_key_id=GOOG1E{rand(r, 20, string.ascii_uppercase + string.digits)}\" -o \"Credentials:gs_secret_access_key={s}\" cp dump.sql.gz gs://{r.choice(WORDS)}-backups/\n", [s])


# --------------------------------------------------------------------------------------------
# negative
# --------------------------------------------------------------------------------------------

def uuid(r: random.Random) -> str:
    h = rand(r, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


@family("negative", "x_neg_uuid_ids", "app")
def _(r):
    return (f'{{"order_id": "{uuid(r)}", "customer_id": "{uuid(r)}", "status": "shipped", "items": {r.randrange(1, 9)}}}\n', [])


@family("negative", "x_neg_git_log_shas", "git")
def _(r):
    lines = [f"{rand(r, 40, HEX)} {r.choice(['Fix', 'Add', 'Refactor', 'Bump'])} {r.choice(WORDS)} {r.choice(['handler', 'parser', 'migration', 'tests'])}" for _ in range(3)]
    return ("$ git log --format='%H %s' -3\n" + "\n".join(lines) + "\n", [])


@family("negative", "x_neg_sha256sums", "release")
def _(r):
    v = f"{r.randrange(1, 5)}.{r.randrange(0, 20)}.{r.randrange(0, 9)}"
    return (f"{rand(r, 64, HEX)}  tool-{v}-linux-amd64.tar.gz\n{rand(r, 64, HEX)}  tool-{v}-darwin-arm64.tar.gz\n", [])


@family("negative", "x_neg_sri_integrity", "html")
def _(r):
    return (f'<script src="https://cdn.jsdelivr.net/npm/htmx.org@1.9.{r.randrange(2, 12)}/dist/htmx.min.js" integrity="sha384-{b64(r.randbytes(48))}" crossorigin="anonymous"></script>\n', [])


@family("negative", "x_neg_lockfile_integrity", "npm")
def _(r):
    name = r.choice(["lodash", "ms", "debug", "semver", "chalk"])
    return (f'    "node_modules/{name}": {{\n      "version": "{r.randrange(1, 5)}.{r.randrange(0, 20)}.{r.randrange(0, 9)}",\n'
            f'      "resolved": "https://registry.npmjs.org/{name}/-/{name}.tgz",\n      "integrity": "sha512-{b64(r.randbytes(64))}"\n    }},\n', [])


@family("negative", "x_neg_image_digest", "docker")
def _(r):
    return (f"    image: ghcr.io/northwind/api@sha256:{rand(r, 64, HEX)}\n    imagePullPolicy: IfNotPresent\n", [])


@family("negative", "x_neg_base64_image", "css")
def _(r):
    return (f".icon-check {{\n  background-image: url(\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ{b64(r.randbytes(48))}\");\n}}\n", [])


@family("negative", "x_neg_base64_json_payload", "events")
def _(r):
    body = b64(json.dumps({"event": "page_view", "path": f"/{r.choice(WORDS)}", "ts": r.randrange(1700000000, 1760000000)}))
    return (f'{{"messageId": "{rand(r, 16, string.digits)}", "publishTime": "2025-04-0{r.randrange(1, 9)}T10:00:00Z", "data": "{body}"}}\n', [])


@family("negative", "x_neg_model_names", "ml")
def _(r):
    m = r.choice(["Qwen/Qwen2.5-Coder-7B", "Qwen/Qwen2.5-Coder-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mistral-7B-v0.3"])
    return (f"base_model: {m}\ntokenizer_type: AutoTokenizer\nsequence_len: {r.choice([4096, 8192, 16384])}\nlearning_rate: {r.choice(['1e-5', '2e-5', '5e-6'])}\n", [])


@family("negative", "x_neg_css_colors", "css")
def _(r):
    return (f":root {{\n  --brand-primary: #{rand(r, 6, HEX)};\n  --brand-accent: #{rand(r, 6, HEX)};\n  --surface: #{rand(r, 8, HEX)};\n}}\n", [])


@family("negative", "x_neg_version_strings", "deps")
def _(r):
    return (f"dagster=={r.randrange(1, 2)}.{r.randrange(6, 10)}.{r.randrange(0, 15)}\nvllm=={0}.{r.randrange(4, 9)}.{r.randrange(0, 5)}.post1\ntorch==2.{r.randrange(1, 6)}.0+cu121\n", [])


@family("negative", "x_neg_file_paths", "shell")
def _(r):
    return (f"/var/lib/{r.choice(WORDS)}/data/{rand(r, 2, HEX)}/{rand(r, 38, HEX)}\n/home/{user(r)}/.cache/huggingface/hub/models--Qwen--Qwen2.5-Coder-7B/snapshots/{rand(r, 40, HEX)}/config.json\n", [])


@family("negative", "x_neg_camelcase_identifiers", "java")
def _(r):
    a = "".join(w.capitalize() for w in r.sample(WORDS, 4))
    return (f"public class {a}PasswordResetRequestValidatorFactory implements RequestValidatorFactory<{a}Request> {{\n    private final PasswordPolicyEnforcementService policyService;\n}}\n", [])


@family("negative", "x_neg_test_names", "python")
def _(r):
    w = r.choice(WORDS)
    return (f"def test_{w}_login_rejects_wrong_password_after_three_attempts(client):\n    resp = client.post('/login', data={{'user': 'alice', 'password': request_password}})\n    assert resp.status_code == 429\n", [])


@family("negative", "x_neg_enum_password_member", "python")
def _(r):
    w = r.choice(WORDS)
    return (f"class {w.capitalize()}CredentialKind(str, Enum):\n    PASSWORD = \"password\"\n    API_KEY = \"api_key\"\n    {w.upper()}_TOKEN = \"{w}_token\"\n", [])


@family("negative", "x_neg_gha_secrets_ref", "ci")
def _(r):
    name = r.choice(["PROD_DB_PASSWORD", "NPM_TOKEN", "DOCKERHUB_TOKEN", "SLACK_WEBHOOK"])
    return (f"      - name: Deploy\n        env:\n          {name}: ${{{{ secrets.{name} }}}}\n        run: ./scripts/deploy.sh {r.choice(['prod', 'staging'])}\n", [])


@family("negative", "x_neg_secret_key_ref", "kubernetes")
def _(r):
    return (f"        env:\n          - name: DB_PASSWORD\n            valueFrom:\n              secretKeyRef:\n                name: {r.choice(WORDS)}-{r.choice(['pg-auth', 'db-creds', 'app-secrets'])}\n                key: password\n", [])


@family("negative", "x_neg_ansible_vault_tag", "ansible")
def _(r):
    return (f"db_user: {user(r)}\ndb_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  {{{{ lookup('file', 'vault/{r.choice(WORDS)}.enc') }}}}\n", [])


@family("negative", "x_neg_op_reference", "1password")
def _(r):
    return (f"DATABASE_PASSWORD=op://{r.choice(['Engineering', 'Platform', 'Ops'])}/{r.choice(WORDS)}-postgres/password\nSTRIPE_KEY=op://Engineering/stripe/credential\n", [])


@family("negative", "x_neg_secretsmanager_arn", "aws")
def _(r):
    return (f'"secrets": [{{"name": "DB_PASSWORD", "valueFrom": "arn:aws:secretsmanager:eu-west-1:{rand(r, 12, string.digits)}:secret:prod/{r.choice(WORDS)}/db-{rand(r, 6)}"}}]\n', [])


@family("negative", "x_neg_gcp_secret_path", "gcp")
def _(r):
    return (f"password_secret: projects/{r.choice(WORDS)}-prod/secrets/{r.choice(WORDS)}-db-password/versions/{r.randrange(1, 12)}\n", [])


@family("negative", "x_neg_password_policy", "policy")
def _(r):
    return (f"password_policy:\n  min_length: {r.randrange(10, 17)}\n  require_uppercase: true\n  require_symbol: true\n  max_age_days: {r.choice([60, 90, 180])}\n  history: {r.randrange(3, 12)}\n", [])


@family("negative", "x_neg_password_prose", "docs")
def _(r):
    return (f"Passwords must be rotated every {r.choice([30, 60, 90])} days, and accounts in the "
            f"{r.choice(WORDS)} tenant lock after {r.randrange(3, 11)} failed attempts. "
            f"Never paste a password into a ticket; use the reset link in the {r.choice(['admin console', 'self-service portal', 'SSO dashboard'])} instead, "
            "and store shared credentials in the team vault.\n", [])


@family("negative", "x_neg_port_mapping", "docker")
def _(r):
    return (f"docker run -d -p {r.choice([8080, 8443, 3000])}:80 -p 127.0.0.1:{r.choice([5432, 6379])}:{r.choice([5432, 6379])} --name web nginx:1.27\n", [])


@family("negative", "x_neg_password_stdin", "docker")
def _(r):
    return (f'echo "$CR_PAT" | docker login ghcr.io -u {user(r)} --password-stdin\naws ecr get-login-password | docker login --username AWS --password-stdin {rand(r, 12, string.digits)}.dkr.ecr.eu-west-1.amazonaws.com\n', [])


@family("negative", "x_neg_password_file_flag", "cli")
def _(r):
    return (f"restic -r s3:s3.amazonaws.com/{r.choice(WORDS)}-backup --password-file /run/secrets/restic_pw backup /srv\n"
            f"mysql --defaults-extra-file=/etc/mysql/{user(r)}.cnf -e 'SELECT 1'\n", [])


@family("negative", "x_neg_ssh_identity", "ssh")
def _(r):
    return (f"ssh -i ~/.ssh/id_ed25519 -o StrictHostKeyChecking=accept-new {user(r)}@{ip(r)} 'sudo systemctl restart api'\n", [])


@family("negative", "x_neg_extra_vars_file", "ansible")
def _(r):
    return (f"ansible-playbook -i inventories/{r.choice(WORDS)} {r.choice(['site', 'db', 'web'])}.yml --extra-vars @vars/{r.choice(['prod', 'staging', 'dr'])}.yml --vault-password-file ~/.vault_pass --limit {r.choice(WORDS)}\n", [])


@family("negative", "x_neg_empty_password_env", "shell")
def _(r):
    return (f'export DB_HOST={host(r)}\nexport DB_PASSWORD="${{DB_PASSWORD:?set DB_PASSWORD before running}}"\npsql "host=$DB_HOST user={user(r)} password=$DB_PASSWORD" -c "\\dt"\n', [])


@family("negative", "x_neg_html_password_input", "html")
def _(r):
    field = f"{r.choice(WORDS)}-pw"
    return (f'<label for="{field}">Password</label>\n<input id="{field}" type="password" name="password" autocomplete="current-password" minlength="{r.randrange(8, 15)}" required>\n', [])


@family("negative", "x_neg_trace_span_ids", "otel")
def _(r):
    return (f'{{"trace_id": "{rand(r, 32, HEX)}", "span_id": "{rand(r, 16, HEX)}", "name": "POST /checkout", "duration_ms": {r.randrange(5, 900)}}}\n', [])


@family("negative", "x_neg_ssh_host_fingerprint", "ssh")
def _(r):
    return (f"The authenticity of host '{host(r, 'bastion')} ({ip(r)})' can't be established.\nED25519 key fingerprint is SHA256:{b64(r.randbytes(32)).rstrip('=')}.\n", [])


@family("negative", "x_neg_password_hash_column_schema", "sql")
def _(r):
    return (f"CREATE TABLE {r.choice(WORDS)}_users (\n  id BIGSERIAL PRIMARY KEY,\n  email CITEXT UNIQUE NOT NULL,\n  password_hash TEXT NOT NULL,\n  password_changed_at TIMESTAMPTZ,\n  failed_logins SMALLINT DEFAULT {r.randrange(0, 2)}\n);\n", [])


@family("negative", "x_neg_helm_template_ref", "kubernetes")
def _(r):
    w = r.choice(WORDS)
    return (f"            - name: {w.upper()}_DB_PASSWORD\n              value: {{{{ .Values.{w}.db.password | quote }}}}\n"
            f"            - name: {w.upper()}_DB_HOST\n              value: {{{{ .Values.{w}.db.host }}}}\n", [])


@family("negative", "x_neg_env_interpolation", "config")
def _(r):
    w = r.choice(WORDS)
    return (f"datasource:\n  url: jdbc:postgresql://{host(r)}:5432/{w}\n  username: ${{{w.upper()}_DB_USER}}\n"
            f"  password: ${{{w.upper()}_DB_PASSWORD:}}\n", [])


@family("negative", "x_neg_doc_placeholders", "docs")
def _(r):
    tool = r.choice(["psql -h <host> -U <username> -d <database>", "mysql -h <host> -u <username> -p",
                     "mongosh --host <host> -u <username> -p"])
    return (f"To connect, run `{tool}` and enter your password when prompted. "
            f"Replace `<username>` with the account from the {r.choice(WORDS)} onboarding email; "
            "the password is never sent by email.\n", [])


@family("negative", "x_neg_public_key_pem", "tls")
def _(r):
    # DER SubjectPublicKeyInfo header of an RSA-2048 key, then random modulus bytes.
    spki = bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00") + r.randbytes(270)
    body = b64(spki)
    lines = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    return (f"# {r.choice(WORDS)} webhook verification key (public)\n-----BEGIN PUBLIC KEY-----\n{lines}\n-----END PUBLIC KEY-----\n", [])


@family("negative", "x_neg_authorized_keys", "ssh")
def _(r):
    blob = b64(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + r.randbytes(32))
    return (f"ssh-ed25519 {blob} {user(r)}@{r.choice(WORDS)}-laptop\n", [])


@family("negative", "x_neg_jwks_public", "oauth")
def _(r):
    key = {"kty": "RSA", "use": "sig", "kid": rand(r, 16, HEX), "alg": "RS256", "e": "AQAB",
           "n": b64url(r.randbytes(256))}
    return ('{"keys": [' + json.dumps(key) + "]}\n", [])


@family("negative", "x_neg_configmap_binarydata", "kubernetes")
def _(r):
    text = f"welcome to {r.choice(WORDS)} {r.choice(WORDS)} support, hours 9-17 CET\n"
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: motd\nbinaryData:\n  motd.txt: {b64(text)}\n", [])


def build_rows(seed: int = SEED) -> list[dict]:
    r = random.Random(seed)
    rows: list[dict] = []
    used_secrets: set[str] = set()
    used_texts: set[str] = set()
    for cls, total in CLASS_ROWS.items():
        fams = FAMILIES[cls]
        for i in range(total):
            context, service, fn = fams[i % len(fams)]
            for _attempt in range(50):
                text, secrets = fn(r)
                if text in used_texts or any(s in used_secrets for s in secrets) or len(set(secrets)) != len(secrets):
                    continue
                missing = [s for s in secrets if s not in text]
                if missing:
                    raise ValueError(f"{context}: secret not in text: {missing[0]!r}")
                break
            else:
                raise RuntimeError(f"{context}: no fresh row after 50 attempts")
            used_texts.add(text)
            used_secrets.update(secrets)
            rows.append({"text": text, "secrets": secrets, "label": int(bool(secrets)), "class": cls,
                         "context": context, "service": service, "split": "tune"})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rows = build_rows()
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = {c: sum(1 for row in rows if row["class"] == c) for c in CLASS_ROWS}
    fams = {c: len(FAMILIES[c]) for c in CLASS_ROWS}
    print(f"wrote {len(rows)} rows to {args.out}; rows per class {counts}; families per class {fams}")


if __name__ == "__main__":
    main()
