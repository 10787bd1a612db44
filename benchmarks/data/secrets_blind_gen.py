"""Seeded generator for a *blind* secrets evaluation set (stdlib only).

Written independently of the sanitizer rules and of the other labelled sets:
token formats come from public vendor documentation / public knowledge,
contexts are hand-written templates.  Token bodies are random, drawn from each
format's documented charset and length.  Crypto addresses carry valid
checksums (base58check, bech32/bech32m, EIP-55 via a pure-Python keccak-256).

Usage:  python benchmarks/data/secrets_blind_gen.py [--seed N] [--out PATH]

Row schema: {"text", "secrets": [substrings that must be gone], "class", "origin": "blind"}
Negatives have "secrets": [] and class "neg_<kind>"; they must come back unchanged.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "secrets_blind.jsonl"

ALNUM = string.ascii_letters + string.digits
UPALNUM = string.ascii_uppercase + string.digits
LOWALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = string.ascii_letters + string.digits + "+/"
B64URL = string.ascii_letters + string.digits + "-_"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

R: random.Random = random.Random(0)


def rs(charset: str, n: int) -> str:
    return "".join(R.choice(charset) for _ in range(n))


def pick(seq):
    return R.choice(seq)


def b64url_nopad(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


# ---------------------------------------------------------------- keccak-256
_RC = [
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
]
_ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61],
        [28, 55, 25, 21, 56], [27, 20, 39, 8, 14]]
_M64 = (1 << 64) - 1


def _rol(v: int, n: int) -> int:
    n %= 64
    return ((v << n) | (v >> (64 - n))) & _M64 if n else v


def _keccak_f(A):
    for rc in _RC:
        C = [A[x][0] ^ A[x][1] ^ A[x][2] ^ A[x][3] ^ A[x][4] for x in range(5)]
        D = [C[(x - 1) % 5] ^ _rol(C[(x + 1) % 5], 1) for x in range(5)]
        A = [[A[x][y] ^ D[x] for y in range(5)] for x in range(5)]
        B = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                B[y][(2 * x + 3 * y) % 5] = _rol(A[x][y], _ROT[x][y])
        A = [[B[x][y] ^ ((~B[(x + 1) % 5][y]) & B[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
        A[0][0] ^= rc
    return A


def keccak256(data: bytes) -> bytes:
    rate = 136
    msg = bytearray(data) + b"\x01"
    while len(msg) % rate:
        msg += b"\x00"
    msg[-1] |= 0x80
    A = [[0] * 5 for _ in range(5)]
    for off in range(0, len(msg), rate):
        block = msg[off:off + rate]
        for i in range(rate // 8):
            x, y = i % 5, i // 5
            A[x][y] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        A = _keccak_f(A)
    out = b""
    for i in range(4):
        x, y = i % 5, i // 5
        out += A[x][y].to_bytes(8, "little")
    return out


def eip55(addr_hex40: str) -> str:
    a = addr_hex40.lower()
    h = keccak256(a.encode()).hex()
    return "0x" + "".join(c.upper() if c.isalpha() and int(h[i], 16) >= 8 else c for i, c in enumerate(a))


# ---------------------------------------------------------------- base58check / bech32
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58check(payload: bytes) -> str:
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(data, "big")
    s = ""
    while n:
        n, r = divmod(n, 58)
        s = _B58[r] + s
    pad = len(data) - len(data.lstrip(b"\x00"))
    return "1" * pad + s


_BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        b = chk >> 25
        chk = ((chk & 0x1FFFFFF) << 5) ^ v
        for i in range(5):
            if (b >> i) & 1:
                chk ^= gen[i]
    return chk


def _hrp_expand(h):
    return [ord(c) >> 5 for c in h] + [0] + [ord(c) & 31 for c in h]


def _convertbits(data, frm, to):
    acc = bits = 0
    out = []
    maxv = (1 << to) - 1
    for v in data:
        acc = (acc << frm) | v
        bits += frm
        while bits >= to:
            bits -= to
            out.append((acc >> bits) & maxv)
    if bits:
        out.append((acc << (to - bits)) & maxv)
    return out


def segwit_addr(hrp: str, witver: int, prog: bytes) -> str:
    const = 1 if witver == 0 else 0x2BC830A3
    data = [witver] + _convertbits(prog, 8, 5)
    pm = _polymod(_hrp_expand(hrp) + data + [0] * 6) ^ const
    chk = [(pm >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_BECH[d] for d in data + chk)


def _selftest():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert eip55("5aaeb6053f3e94c9b9a09f33669435e7ef1beaed") == "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
    assert b58check(b"\x00" * 21) == "1111111111111111111114oLvT2"
    assert segwit_addr("bc", 0, bytes.fromhex("751e76e8199196d454941c45d1b3a323f1433bd6")) == \
        "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"


# ---------------------------------------------------------------- context helpers
def ctx_assign(var: str, val: str) -> str:
    """Wrap `var = val` in one of many languages/formats."""
    lvar = var.lower()
    camel = "".join(p.capitalize() if i else p for i, p in enumerate(lvar.split("_")))
    forms = [
        f'{var} = "{val}"\n',
        f"import requests\n\n{var} = '{val}'\nresp = requests.get(URL, headers={{'Authorization': f'Bearer {{{var}}}'}})\n",
        f'const {camel} = "{val}";\nexport default {camel};\n',
        f"export {var}={val}\n",
        f'export {var}="{val}"\nnpm run deploy\n',
        f"{var}={val}\n",
        f"# local overrides, do not commit\n{var}='{val}'\nDEBUG=false\n",
        f'package main\n\nconst {camel} = "{val}"\n',
        f"env:\n  {var}: {val}\n  NODE_ENV: production\n",
        f"jobs:\n  build:\n    runs-on: ubuntu-latest\n    env:\n      {var}: \"{val}\"\n    steps:\n      - uses: actions/checkout@v4\n",
        f'{{\n  "{camel}": "{val}",\n  "region": "us-east-1"\n}}\n',
        f'[default]\n{lvar} = "{val}"\n',
        f'ENV {var}={val}\nRUN make install\n',
        f"$env:{var} = \"{val}\"\n",
        f"    let {lvar} = \"{val}\";\n",
        f"  private static final String {var} = \"{val}\";\n",
        f"set {var}={val}\n",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secrets\nstringData:\n  {var}: \"{val}\"\n",
        f"variable \"{lvar}\" {{\n  default = \"{val}\"\n}}\n",
        f"I rotated the key but forgot to update CI, here is the old one: {val} -- can someone revoke it?\n",
        f"2024-03-1{R.randint(0, 9)}T10:22:{R.randint(10, 59)}Z DEBUG config loaded {lvar}={val} retries=3\n",
        f"```bash\ncurl -H \"Authorization: Bearer {val}\" https://api.example.com/v1/me\n```\n",
    ]
    return pick(forms)


def curl_hdr(header: str, val: str, url: str) -> str:
    return pick([
        f'curl -s -H "{header}: {val}" {url}\n',
        f"curl --request GET \\\n  --url {url} \\\n  --header '{header}: {val}'\n",
        f"import httpx\nr = httpx.get(\"{url}\", headers={{\"{header}\": \"{val}\"}})\n",
        f"fetch('{url}', {{ headers: {{ '{header}': '{val}' }} }})\n",
        f"GET {url} HTTP/1.1\nHost: api\n{header}: {val}\nAccept: application/json\n",
    ])


# ---------------------------------------------------------------- vendor tokens
def _jwt():
    hdr = b64url_nopad(json.dumps({"alg": pick(["HS256", "RS256", "ES256"]), "typ": "JWT"}, separators=(",", ":")).encode())
    payload = {"sub": str(R.randint(10**6, 10**9)), "name": pick(["Ada Byron", "Li Wei", "Jose Ruiz", "svc-ingest"]),
               "iat": R.randint(1_600_000_000, 1_720_000_000), "role": pick(["admin", "user", "service_role"])}
    pl = b64url_nopad(json.dumps(payload, separators=(",", ":")).encode())
    return f"{hdr}.{pl}.{rs(B64URL, 43)}"


def _pem(kind: str):
    body_len = {"RSA PRIVATE KEY": 1600, "EC PRIVATE KEY": 160, "PRIVATE KEY": 1620, "OPENSSH PRIVATE KEY": 380}[kind]
    raw = base64.b64encode(bytes(R.getrandbits(8) for _ in range(body_len * 3 // 4))).decode()
    width = 70 if kind == "OPENSSH PRIVATE KEY" else 64
    body = "\n".join(raw[i:i + width] for i in range(0, len(raw), width))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----", body


def _discord():
    uid = str(R.randint(10**17, 10**18))
    return f"{b64url_nopad(uid.encode())}.{rs(B64URL, 6)}.{rs(B64URL, 38)}"


VENDORS = [
    # (service, var name, token factory, preferred special context or None)
    ("github_classic", "GITHUB_TOKEN", lambda: "ghp_" + rs(ALNUM, 36), None),
    ("github_oauth", "GH_OAUTH_TOKEN", lambda: "gho_" + rs(ALNUM, 36), None),
    ("github_app", "GH_INSTALL_TOKEN", lambda: "ghs_" + rs(ALNUM, 36), None),
    ("github_fine", "GH_PAT", lambda: "github_pat_" + rs(ALNUM, 22) + "_" + rs(ALNUM, 59), None),
    ("gitlab_pat", "GITLAB_TOKEN", lambda: "glpat-" + rs(B64URL, 20), None),
    ("gitlab_trigger", "TRIGGER_TOKEN", lambda: "glptt-" + rs(HEX, 40), None),
    ("gitlab_runner", "RUNNER_TOKEN", lambda: "glrt-" + rs(B64URL, 20), None),
    ("slack_bot", "SLACK_BOT_TOKEN", lambda: f"xoxb-{rs(string.digits, 12)}-{rs(string.digits, 13)}-{rs(ALNUM, 24)}", None),
    ("slack_user", "SLACK_USER_TOKEN", lambda: f"xoxp-{rs(string.digits, 12)}-{rs(string.digits, 12)}-{rs(string.digits, 13)}-{rs(HEX, 32)}", None),
    ("slack_webhook", "SLACK_WEBHOOK_URL", lambda: f"https://hooks.slack.com/services/T{rs(UPALNUM, 8)}/B{rs(UPALNUM, 10)}/{rs(ALNUM, 24)}", None),
    ("stripe_secret", "STRIPE_SECRET_KEY", lambda: "sk_live_" + rs(ALNUM, 99), None),
    ("stripe_restricted", "STRIPE_RK", lambda: "rk_live_" + rs(ALNUM, 99), None),
    ("stripe_webhook", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + rs(ALNUM, 32), None),
    ("twilio_key", "TWILIO_API_KEY", lambda: "SK" + rs(HEX, 32), None),
    ("sendgrid", "SENDGRID_API_KEY", lambda: f"SG.{rs(B64URL, 22)}.{rs(B64URL, 43)}", None),
    ("openai_proj", "OPENAI_API_KEY", lambda: "sk-proj-" + rs(B64URL, 156), None),
    ("openai_legacy", "OPENAI_KEY", lambda: "sk-" + rs(ALNUM, 20) + "T3BlbkFJ" + rs(ALNUM, 20), None),
    ("anthropic", "ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + rs(B64URL, 93) + "AA", None),
    ("huggingface", "HF_TOKEN", lambda: "hf_" + rs(string.ascii_letters, 34), None),
    ("npm", "NPM_TOKEN", lambda: "npm_" + rs(ALNUM, 36), "npmrc"),
    ("pypi", "PYPI_TOKEN", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(B64URL, 160), "pypirc"),
    ("shopify", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + rs(HEX, 32), None),
    ("digitalocean", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + rs(HEX, 64), None),
    ("doppler", "DOPPLER_TOKEN", lambda: "dp.pt." + rs(ALNUM, 43), None),
    ("linear", "LINEAR_API_KEY", lambda: "lin_api_" + rs(ALNUM, 40), None),
    ("notion_legacy", "NOTION_TOKEN", lambda: "secret_" + rs(ALNUM, 43), None),
    ("notion_ntn", "NOTION_API_KEY", lambda: "ntn_" + rs(string.digits, 12) + rs(ALNUM, 34), None),
    ("postman", "POSTMAN_API_KEY", lambda: f"PMAK-{rs(HEX, 24)}-{rs(HEX, 34)}", None),
    ("databricks", "DATABRICKS_TOKEN", lambda: "dapi" + rs(HEX, 32), None),
    ("grafana_cloud", "GRAFANA_CLOUD_TOKEN", lambda: "glc_" + rs(B64, 76) + "==", None),
    ("grafana_sa", "GRAFANA_SA_TOKEN", lambda: "glsa_" + rs(ALNUM, 32) + "_" + rs(HEX, 8), None),
    ("newrelic", "NEW_RELIC_API_KEY", lambda: "NRAK-" + rs(UPALNUM, 27), None),
    ("atlassian", "JIRA_API_TOKEN", lambda: "ATATT3xFfGF0" + rs(B64URL, 170) + "=" + rs(HEX.upper(), 8), None),
    ("pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + rs(HEX, 40), None),
    ("vault", "VAULT_TOKEN", lambda: "hvs." + rs(B64URL, 91), None),
    ("tailscale", "TS_AUTHKEY", lambda: f"tskey-auth-k{rs(ALNUM, 16)}CNTRL-{rs(ALNUM, 33)}", None),
    ("figma", "FIGMA_TOKEN", lambda: "figd_" + rs(B64URL, 40), None),
    ("airtable", "AIRTABLE_PAT", lambda: "pat" + rs(ALNUM, 14) + "." + rs(HEX, 64), None),
    ("mailgun", "MAILGUN_API_KEY", lambda: "key-" + rs(HEX, 32), None),
    ("telegram", "TELEGRAM_BOT_TOKEN", lambda: f"{R.randint(10**8, 10**10)}:AA{rs(B64URL, 33)}", None),
    ("discord", "DISCORD_BOT_TOKEN", _discord, None),
    ("discord_webhook", "DISCORD_WEBHOOK", lambda: f"https://discord.com/api/webhooks/{rs(string.digits, 19)}/{rs(B64URL, 68)}", None),
    ("google_api", "GOOGLE_API_KEY", lambda: "AIza" + rs(B64URL, 35), None),
    ("google_oauth", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + rs(B64URL, 28), None),
    ("aws", "AWS", None, "aws"),
    ("aws_sts", "AWS_STS", None, "aws_sts"),
    ("azure_storage", "AZURE_STORAGE_CONNECTION_STRING", None, "azure"),
    ("azure_ad", "AZURE_CLIENT_SECRET", lambda: rs(ALNUM, 3) + str(R.randint(0, 9)) + "Q~" + rs(ALNUM + "_~.-", 34), None),
    ("jwt", "ACCESS_TOKEN", _jwt, "jwt"),
    ("pem", "PRIVATE_KEY", None, "pem"),
    ("square", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + rs(B64URL, 60), None),
    ("planetscale", "PLANETSCALE_TOKEN", lambda: "pscale_tkn_" + rs(B64URL, 43), None),
    ("supabase", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + rs(HEX, 40), None),
    ("netlify", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + rs(ALNUM, 36), None),
    ("sentry", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + rs(HEX, 64), None),
    ("dropbox", "DROPBOX_TOKEN", lambda: "sl." + rs(B64URL, 135), None),
    ("age", "SOPS_AGE_KEY", lambda: "AGE-SECRET-KEY-1" + rs(_BECH.upper(), 58), None),
    ("buildkite", "BUILDKITE_API_TOKEN", lambda: "bkua_" + rs(HEX, 40), None),
    ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + rs(B64URL, 43), None),
    ("dynatrace", "DT_API_TOKEN", lambda: f"dt0c01.{rs(UPALNUM, 24)}.{rs(UPALNUM, 64)}", None),
    ("rubygems", "GEM_HOST_API_KEY", lambda: "rubygems_" + rs(HEX, 48), None),
    ("dockerhub", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + rs(B64URL, 27), "docker"),
    ("replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + rs(ALNUM, 37), None),
    ("groq", "GROQ_API_KEY", lambda: "gsk_" + rs(ALNUM, 52), None),
    ("langsmith", "LANGCHAIN_API_KEY", lambda: f"lsv2_pt_{rs(HEX, 32)}_{rs(HEX, 10)}", None),
    ("sonarqube", "SONAR_TOKEN", lambda: "squ_" + rs(HEX, 40), None),
    ("terraform_cloud", "TFE_TOKEN", lambda: f"{rs(ALNUM, 14)}.atlasv1.{rs(ALNUM, 67)}", None),
    ("mailchimp", "MAILCHIMP_API_KEY", lambda: rs(HEX, 32) + "-us" + str(R.randint(1, 21)), None),
    ("alibaba", "ALIBABA_CLOUD_ACCESS_KEY_ID", lambda: "LTAI" + rs(ALNUM, 20), None),
]


def vendor_row(service, var, factory, special):
    if special == "aws":
        kid, sec = "AKIA" + rs("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), rs(B64, 40)
        text = pick([
            f"[default]\naws_access_key_id = {kid}\naws_secret_access_key = {sec}\nregion = eu-west-1\n",
            f"import boto3\ns3 = boto3.client(\n    's3',\n    aws_access_key_id='{kid}',\n    aws_secret_access_key='{sec}',\n)\n",
            f"export AWS_ACCESS_KEY_ID={kid}\nexport AWS_SECRET_ACCESS_KEY={sec}\naws s3 ls\n",
        ])
        return text, [kid, sec]
    if special == "aws_sts":
        kid, sec = "ASIA" + rs("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), rs(B64, 40)
        text = (f'{{\n    "Credentials": {{\n        "AccessKeyId": "{kid}",\n        "SecretAccessKey": "{sec}",\n'
                f'        "Expiration": "2024-05-01T12:00:00Z"\n    }}\n}}\n')
        return text, [kid, sec]
    if special == "azure":
        acct = pick(["prodblobs", "mlartifacts01", "contosodata"])
        key = rs(B64, 86) + "=="
        cs = f"DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={key};EndpointSuffix=core.windows.net"
        text = pick([
            f'AZURE_STORAGE_CONNECTION_STRING="{cs}"\n',
            f'{{\n  "Values": {{\n    "AzureWebJobsStorage": "{cs}",\n    "FUNCTIONS_WORKER_RUNTIME": "python"\n  }}\n}}\n',
        ])
        return text, [key]
    if special == "pem":
        kind = pick(["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"])
        block, body = _pem(kind)
        text = pick([
            f"{block}\n",
            f"Here's the deploy key from the old box:\n\n{block}\n\nplease add it to the runner.\n",
            f'{{\n  "type": "service_account",\n  "project_id": "acme-prod",\n  "private_key": "{block.replace(chr(10), chr(92) + "n")}\\n",\n  "client_email": "svc@acme-prod.iam.gserviceaccount.com"\n}}\n',
        ])
        if '"private_key"' in text:
            return text, [body.split("\n")[1]]
        return text, [body]
    tok = factory()
    if special == "npmrc":
        text = pick([f"//registry.npmjs.org/:_authToken={tok}\nalways-auth=true\n",
                     f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={tok}\n"])
    elif special == "pypirc":
        text = f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {tok}\n"
    elif special == "docker":
        auth = base64.b64encode(f"ci-bot:{tok}".encode()).decode()
        if R.random() < 0.5:
            text = f'{{\n\t"auths": {{\n\t\t"https://index.docker.io/v1/": {{\n\t\t\t"auth": "{auth}"\n\t\t}}\n\t}}\n}}\n'
            return text, [auth]
        text = f"echo {tok} | docker login -u ci-bot --password-stdin\n"
    elif special == "jwt":
        text = pick([curl_hdr("Authorization", "Bearer " + tok, "https://api.internal.example/v2/orders"),
                     ctx_assign(var, tok)])
    else:
        r = R.random()
        if r < 0.25 and not tok.startswith("https://"):
            hdr = pick(["Authorization", "X-API-Key", "Authorization"])
            v = ("Bearer " + tok) if hdr == "Authorization" else tok
            text = curl_hdr(hdr, v, pick(["https://api.example.com/v1/projects", "https://example.org/api/graphql"]))
        else:
            text = ctx_assign(var, tok)
    return text, [tok]


# ---------------------------------------------------------------- passwords
WORDS = ["river", "Falcon", "orange", "Tiger", "winter", "Maple", "copper", "Delta", "summit", "Nova",
         "harbor", "Quartz", "lemon", "Cobalt", "sparrow", "Vertex"]


def password() -> str:
    k = R.random()
    if k < 0.35:
        return rs(ALNUM, R.randint(14, 28))
    if k < 0.65:
        return rs(ALNUM, 1) + rs(ALNUM + "!#%^*-_+=.?", R.randint(11, 23))  # no leading symbol
    if k < 0.85:
        return pick(WORDS) + pick(["#", "!", "_", "@", "$"]) + str(R.randint(1000, 9999)) + pick(WORDS).lower()
    return rs(string.ascii_lowercase, 4) + "-" + rs(string.ascii_lowercase, 4) + "-" + rs(LOWALNUM, 4) + str(R.randint(10, 99))


def url_password() -> str:
    # no raw ':' '/' '@' '?' '#' in URL userinfo
    k = R.random()
    if k < 0.5:
        return rs(ALNUM, R.randint(14, 28))
    if k < 0.8:
        return rs(ALNUM + "-_.~!*", R.randint(12, 24))
    return pick(WORDS) + "%40" + str(R.randint(1000, 9999)) + rs(ALNUM, 4)


def shell_password() -> str:
    return rs(ALNUM + "-_.+=%", R.randint(12, 24)) if R.random() < 0.6 else rs(ALNUM, R.randint(10, 20))


USERS = ["admin", "app", "svc_etl", "deploy", "postgres", "root", "analytics", "jenkins", "web"]
HOSTS = ["db.internal", "10.0.3.17", "prod-pg-01.cluster-abc.eu-west-1.rds.amazonaws.com", "mysql.corp.local",
         "cache-1.example.net", "mongo0.example.io", "172.16.4.20", "db"]


def yaml_row():
    pw = password()
    key = pick(["password", "passwd", "db_password", "secret", "client_secret", "api_key", "auth_token", "token"])
    ind = pick(["  ", "    "])
    q = pick(['"', "'", ""])
    if not q and pw[0] in "!#%*-?@&":
        q = '"'
    v = f"{q}{pw}{q}"
    text = pick([
        f"db:\n{ind}host: {pick(HOSTS)}\n{ind}port: 5432\n{ind}user: {pick(USERS)}\n{ind}{key}: {v}\n",
        f"spring:\n{ind}datasource:\n{ind}{ind}url: jdbc:postgresql://{pick(HOSTS)}:5432/app\n{ind}{ind}username: {pick(USERS)}\n{ind}{ind}password: {v}\n",
        f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: {pick(USERS)}\n      POSTGRES_PASSWORD: {v}\n",
        f"# group_vars/prod.yml\nmysql_root_password: {v}\nmysql_port: 3306\n",
        f"smtp:\n{ind}server: smtp.mailgun.org\n{ind}username: postmaster@mg.example.com\n{ind}{key}: {v}\n",
        f"redis:\n{ind}enabled: true\n{ind}auth:\n{ind}{ind}{key}: {v}\n",
        f"- name: configure app\n  vars:\n    admin_user: {pick(USERS)}\n    admin_{key}: {v}\n",
        f"credentials:\n{ind}- name: warehouse\n{ind}  username: {pick(USERS)}\n{ind}  {key}: {v}\n",
        f"oauth:\n{ind}client_id: {rs(LOWALNUM, 20)}\n{ind}client_secret: {v}\n{ind}redirect_uri: https://app.example.com/cb\n",
    ])
    return text, [pw]


def json_row():
    pw = password().replace("\\", "")
    key = pick(["password", "apiKey", "client_secret", "secret", "accessToken", "api_key", "dbPassword", "authToken"])
    text = pick([
        f'{{\n  "{key}": "{pw}",\n  "timeout": 30\n}}\n',
        f'{{"user": "{pick(USERS)}", "{key}": "{pw}", "host": "{pick(HOSTS)}"}}\n',
        f'{{\n    "installed": {{\n        "client_id": "{R.randint(10**11, 10**12)}-{rs(LOWALNUM, 32)}.apps.googleusercontent.com",\n'
        f'        "client_secret": "{pw}",\n        "redirect_uris": ["http://localhost"]\n    }}\n}}\n',
        f'{{\n  "ConnectionStrings": {{}},\n  "Smtp": {{\n    "Host": "smtp.office365.com",\n    "Password": "{pw}"\n  }}\n}}\n',
        f'config = {{\n    "endpoint": "https://search.example.com",\n    "{key}": "{pw}",\n}}\n',
        f'const firebaseConfig = {{\n  authDomain: "demo.firebaseapp.com",\n  "{key}": "{pw}",\n}};\n',
        f'[\n  {{\n    "name": "staging",\n    "credentials": {{ "username": "{pick(USERS)}", "{key}": "{pw}" }}\n  }}\n]\n',
        f'{{\n\t"mcpServers": {{\n\t\t"search": {{\n\t\t\t"env": {{ "{key}": "{pw}" }}\n\t\t}}\n\t}}\n}}\n',
    ])
    return text, [pw]


def xml_esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def xml_row():
    pw = password().replace("&", "x").replace("<", "y").replace('"', "z")
    text = pick([
        f"<settings>\n  <servers>\n    <server>\n      <id>nexus-releases</id>\n      <username>{pick(USERS)}</username>\n      <password>{pw}</password>\n    </server>\n  </servers>\n</settings>\n",
        f'<?xml version="1.0" encoding="UTF-8"?>\n<tomcat-users>\n  <user username="{pick(USERS)}" password="{pw}" roles="manager-gui"/>\n</tomcat-users>\n',
        f'<hibernate-configuration>\n <session-factory>\n  <property name="connection.username">{pick(USERS)}</property>\n  <property name="connection.password">{pw}</property>\n </session-factory>\n</hibernate-configuration>\n',
        f"<com.cloudbees.plugins.credentials.impl.StringCredentialsImpl>\n  <id>deploy-token</id>\n  <secret>{pw}</secret>\n</com.cloudbees.plugins.credentials.impl.StringCredentialsImpl>\n",
        f'<appSettings>\n  <add key="ApiKey" value="{pw}" />\n  <add key="Environment" value="Production" />\n</appSettings>\n',
        f'<DataSource name="jdbc/app" user="{pick(USERS)}" password="{pw}" url="jdbc:mysql://{pick(HOSTS)}/app"/>\n',
        f"<config>\n\t<smtp>\n\t\t<host>mail.example.com</host>\n\t\t<password>{pw}</password>\n\t</smtp>\n</config>\n",
        f"<credentials>\n    <apiToken>{pw}</apiToken>\n</credentials>\n",
        f'<connection host="{pick(HOSTS)}" port="5672" username="{pick(USERS)}" password="{pw}" vhost="/"/>\n',
        f"<wpa_config><ssid>Office-5G</ssid><psk>{pw}</psk></wpa_config>\n",
    ])
    return text, [pw]


def ini_row():
    pw = password()
    text = pick([
        f"DB_HOST={pick(HOSTS)}\nDB_USER={pick(USERS)}\nDB_PASSWORD={pw}\n",
        f"spring.datasource.url=jdbc:mysql://{pick(HOSTS)}:3306/shop\nspring.datasource.username={pick(USERS)}\nspring.datasource.password={pw}\n",
        f"db.password={pw}\ndb.pool.size=10\n",
        f"[client]\nuser={pick(USERS)}\npassword={pw}\nhost={pick(HOSTS)}\n",
        f"[database]\nhost = {pick(HOSTS)}\nusername = {pick(USERS)}\npassword = {pw}\n",
        f"{pick(HOSTS)}:5432:*:{pick(USERS)}:{pw}\n",
        f"# gradle.properties\nsigning.keyId=24875D73\nsigning.password={pw}\nossrhPassword={pw}\n",
        f"REDIS_PASSWORD=\"{pw}\"\nREDIS_PORT=6379\n",
        f"[smtp]\nserver=smtp.gmail.com\nport=587\nlogin=alerts@example.com\npass={pw}\n",
        f"mail.smtp.password = {pw}\nmail.smtp.auth = true\n",
        f"SECRET_TOKEN='{pw}'\n",
        f"[auth]\nclient_secret: {pw}\n",
    ])
    return text, [pw]


def cli_row():
    pw = shell_password()
    u = pick(USERS)
    h = pick(HOSTS)
    text = pick([
        f"mysql -u{u} -p{pw} -h {h} shop < dump.sql\n",
        f"mysql -h {h} -u {u} --password={pw} -e 'SHOW DATABASES'\n",
        f"mysqldump -u{u} -p'{pw}' --single-transaction app > app.sql\n",
        f"./manage.py createsuperuser --username {u} --password {pw}\n",
        f"my-cli deploy --token={pw} --env prod\n",
        f"terraform-provider-check --api-token {pw}\n",
        f"docker login -u {u} -p {pw} registry.example.com\n",
        f"sshpass -p '{pw}' ssh {u}@{h} 'uptime'\n",
        f"sshpass -p {pw} scp backup.tgz {u}@{h}:/srv/\n",
        f"curl -u {u}:{pw} https://nexus.example.com/service/rest/v1/repositories\n",
        f"curl --user \"{u}:{pw}\" -X POST https://jenkins.example.com/job/build/build\n",
        f"PGPASSWORD={pw} psql -h {h} -U {u} -d app -c 'select 1'\n",
        f"PGPASSWORD='{pw}' pg_dump -h {h} -U {u} app | gzip > app.sql.gz\n",
        f"redis-cli -h {h} -a {pw} INFO\n",
        f"mongosh --host {h} -u {u} -p '{pw}' --authenticationDatabase admin\n",
        f"htpasswd -b -c /etc/nginx/.htpasswd {u} {pw}\n",
        f"az login --service-principal -u {rs(HEX, 8)}-{rs(HEX, 4)}-{rs(HEX, 4)}-{rs(HEX, 4)}-{rs(HEX, 12)} -p {pw} --tenant contoso.onmicrosoft.com\n",
        f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out cert.p12 -passout pass:{pw}\n",
        f"keytool -importkeystore -srckeystore a.p12 -destkeystore a.jks -deststorepass {pw}\n",
        f"sqlcmd -S {h} -U sa -P '{pw}' -Q 'SELECT @@VERSION'\n",
        f"wget --user={u} --password={pw} https://files.example.com/export.csv\n",
        f"kubectl create secret generic db-creds --from-literal=username={u} --from-literal=password={pw}\n",
        f"helm repo add private https://charts.example.com --username {u} --password {pw}\n",
        f"smbclient //fileserver/share -U {u}%{pw}\n",
        f"xfreerdp /v:{h} /u:{u} /p:{pw}\n",
        f"ldapsearch -x -H ldap://{h} -D 'cn={u},dc=example,dc=com' -w {pw} '(uid=*)'\n",
        f"rabbitmqctl add_user {u} {pw}\n",
        f"$ history | tail -3\n  501  cd /srv/app\n  502  mysql -u{u} -p{pw}\n  503  exit\n",
        f"subprocess.run([\"psql\", \"-h\", \"{h}\"], env={{\"PGPASSWORD\": \"{pw}\"}})\n",
        f"RUN ./configure && make && ./install.sh --admin-password {pw}\n",
        f"- run: ./scripts/publish.sh --token {pw}\n",
        f"```\n$ vault login -method=userpass username={u} password={pw}\n```\n",
    ])
    return text, [pw]


def conn_row():
    pw = url_password()
    u = pick(USERS)
    h = pick(HOSTS)
    db = pick(["app", "orders", "analytics", "prod"])
    cs, secret = pick([
        (f"postgres://{u}:{pw}@{h}:5432/{db}", pw),
        (f"postgresql+psycopg2://{u}:{pw}@{h}/{db}", pw),
        (f"mysql://{u}:{pw}@{h}:3306/{db}", pw),
        (f"mongodb+srv://{u}:{pw}@cluster0.{rs(LOWALNUM, 5)}.mongodb.net/{db}?retryWrites=true&w=majority", pw),
        (f"mongodb://{u}:{pw}@{h}:27017/{db}?authSource=admin", pw),
        (f"redis://:{pw}@{h}:6379/0", pw),
        (f"rediss://default:{pw}@{h}:6380", pw),
        (f"amqp://{u}:{pw}@{h}:5672/%2F", pw),
        (f"amqps://{u}:{pw}@b-{rs(HEX, 8)}.mq.us-east-1.amazonaws.com:5671", pw),
        (f"jdbc:sqlserver://{h}:1433;databaseName={db};user={u};password={pw};encrypt=true", pw),
        (f"jdbc:postgresql://{h}:5432/{db}?user={u}&password={pw}&ssl=true", pw),
        (f"Server={h};Database={db};User Id={u};Password={pw};TrustServerCertificate=True;", pw),
        (f"Data Source={h},1433;Initial Catalog={db};User ID={u};Pwd={pw}", pw),
        (f"ftp://{u}:{pw}@{h}/incoming/", pw),
        (f"smtp://{u}:{pw}@smtp.example.com:587", pw),
        (f"https://{u}:{pw}@git.example.com/team/repo.git", pw),
        (f"http://elastic:{pw}@{h}:9200", pw),
        (f"clickhouse://{u}:{pw}@{h}:9000/{db}", pw),
    ])
    text = pick([
        f"DATABASE_URL={cs}\n",
        f'engine = create_engine("{cs}")\n',
        f"const client = new Client({{ connectionString: '{cs}' }});\n",
        f"  url: {cs}\n",
        f'"ConnectionStrings": {{ "Default": "{cs}" }}\n',
        f"broker_url = '{cs}'\n",
        f"Failed to connect to {cs}: connection refused\n",
        f"sqlalchemy.url = {cs}\n",
        f"git remote add origin {cs}\n" if cs.startswith("https") else f"export DB_URL=\"{cs}\"\n",
        f"In the staging env the DSN is `{cs}` (ask ops before using it).\n",
    ])
    return text, [secret]


DJANGO_CS = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"


def encoded_row():
    k = R.random()
    if k < 0.18:
        v = base64.b64encode(bytes(R.getrandbits(8) for _ in range(32))).decode()
        text = pick([f'SECRET_KEY = "{v}"\n', f"SESSION_SECRET={v}\n", f"encryption_key: {v}\n",
                     f'{{"jwtSecret": "{v}"}}\n', f"app.config['SECRET_KEY'] = '{v}'\n"])
    elif k < 0.36:
        v = rs(HEX, 64)
        text = pick([f"signing_key: {v}\n", f"HMAC_KEY={v}\n", f'const webhookSecret = "{v}";\n',
                     f"aes_key = bytes.fromhex(\"{v}\")\n", f"  signing_secret: \"{v}\"\n"])
    elif k < 0.48:
        v = rs(HEX, 128)
        text = pick([f"production:\n  secret_key_base: {v}\n", f"SECRET_KEY_BASE={v}\n"])
    elif k < 0.60:
        v = rs(DJANGO_CS, 50)
        text = pick([f"SECRET_KEY = '{v}'\n", f"# settings/prod.py\nDEBUG = False\nSECRET_KEY = '{v}'\nALLOWED_HOSTS = ['*']\n"])
    elif k < 0.72:
        v = base64.urlsafe_b64encode(bytes(R.getrandbits(8) for _ in range(32))).decode()
        text = pick([f"FERNET_KEY={v}\n", f"fernet = Fernet(b'{v}')\n", f"  fernet_key: '{v}'\n"])
    elif k < 0.82:
        raw = base64.b64encode(bytes(R.getrandbits(8) for _ in range(32))).decode()
        v = "base64:" + raw
        text = f"APP_NAME=Shop\nAPP_ENV=production\nAPP_KEY={v}\n"
        return text, [raw]
    elif k < 0.91:
        v = rs(HEX, 32)
        text = pick([f"master_key = \"{v}\"\n", f"NEXTAUTH_SECRET={v}\n", f"cookie_secret: {v}\n"])
    else:
        v = base64.b64encode(bytes(R.getrandbits(8) for _ in range(48))).decode()
        text = pick([f"JWT_SECRET=\"{v}\"\n", f"token_signing_key = '{v}'\n"])
    return text, [v]


def wallet_row():
    k = R.random()
    if k < 0.2:
        a = b58check(b"\x00" + bytes(R.getrandbits(8) for _ in range(20)))
    elif k < 0.35:
        a = b58check(b"\x05" + bytes(R.getrandbits(8) for _ in range(20)))
    elif k < 0.55:
        a = segwit_addr("bc", 0, bytes(R.getrandbits(8) for _ in range(20)))
    elif k < 0.62:
        a = segwit_addr("bc", 0, bytes(R.getrandbits(8) for _ in range(32)))
    elif k < 0.72:
        a = segwit_addr("bc", 1, bytes(R.getrandbits(8) for _ in range(32)))
    else:
        a = eip55(rs(HEX, 40))
    coin = "ETH" if a.startswith("0x") else "BTC"
    text = pick([
        f"If you find this useful, tips welcome: {coin} {a}\n",
        f"## Donate\n\n- {coin}: `{a}`\n",
        f'PAYOUT_ADDRESS = "{a}"\n',
        f'{{"user_id": {R.randint(1000, 99999)}, "withdraw_to": "{a}", "amount": "{R.randint(1, 999) / 100}"}}\n',
        f"Please send the {R.randint(1, 9)}.{R.randint(0, 99):02d} {coin} to my wallet {a} by Friday.\n",
        f"[{R.randint(10, 23)}:{R.randint(10, 59)}:{R.randint(10, 59)}] tx broadcast from={a} fee=low\n",
        f"wallet:\n  address: {a}\n  network: mainnet\n",
        f"Mi dirección de cartera es {a}, gracias.\n",
        f"recipient = '{a}'  # cold wallet\n",
    ])
    return text, [a]


def mac_row():
    first = R.randrange(0, 256) & 0xFE  # unicast
    octs = [first] + [R.randrange(256) for _ in range(5)]
    sep = pick([":", ":", "-"])
    upper = R.random() < 0.4 or sep == "-"
    m = sep.join(f"{o:02X}" if upper else f"{o:02x}" for o in octs)
    ip = f"192.168.{R.randint(0, 20)}.{R.randint(2, 250)}"
    if sep == ":":
        text = pick([
            f"host printer {{\n  hardware ethernet {m};\n  fixed-address {ip};\n}}\n",
            f"2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500\n    link/ether {m} brd ff:ff:ff:ff:ff:ff\n    inet {ip}/24\n",
            f"? ({ip}) at {m} [ether] on wlan0\n",
            f"network:\n  ethernets:\n    eno1:\n      match:\n        macaddress: {m}\n      set-name: lan0\n",
            f"Mar  3 10:1{R.randint(0, 9)}:22 gw dnsmasq-dhcp[812]: DHCPACK(br0) {ip} {m} laptop-anna\n",
            f'SUBSYSTEM=="net", ACTION=="add", ATTR{{address}}=="{m}", NAME="wan0"\n',
            f"wlan0: authenticated with {m} (reason=3)\n",
            f"ALLOWED_DEVICES = ['{m}']\n",
        ])
    else:
        text = pick([
            f"   Physical Address. . . . . . . . . : {m}\n   DHCP Enabled. . . . . . . . . . . : Yes\n",
            f"  {ip}           {m.lower()}     dynamic\n",
            f"Device registered: mac={m} site=warehouse-3\n",
            f"MAC-Adresse des Druckers: {m}\n",
        ])
        if f"{m.lower()}" in text and m not in text:
            m = m.lower()
    return text, [m]


# ---------------------------------------------------------------- negatives
ENGLISH = ["hello world", "lorem ipsum", "the quick brown fox", "ordinary text", "foo bar baz", "banana",
           "configuration", "good morning", "test payload", "abc123", "weather report", "admin panel"]


def neg_row(kind):
    if kind == "placeholder":
        return pick([
            "GITHUB_TOKEN=<your-token>\n",
            "password: ${DB_PASSWORD}\n",
            'api_key = os.environ["API_KEY"]\n',
            "SLACK_BOT_TOKEN=xxxxxxxxxxxxxxxx\n",
            "      GH_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
            'const key = process.env.STRIPE_SECRET_KEY;\n',
            "OPENAI_API_KEY=YOUR_API_KEY_HERE\n",
            "DATABASE_URL=postgres://${PGUSER}:${PGPASSWORD}@${PGHOST}:5432/app\n",
            '<password>${env.NEXUS_PASSWORD}</password>\n',
            'curl -H "Authorization: Bearer <TOKEN>" https://api.example.com/v1/me\n',
            "token = os.getenv('HF_TOKEN')\n",
            '{"apiKey": "<insert-api-key>"}\n',
            "export AWS_SECRET_ACCESS_KEY=\"$AWS_SECRET\"\n",
            "db:\n  password: {{ vault_db_password }}\n",
            "Set `SENDGRID_API_KEY` in your environment before running.\n",
            "mysql -u root -p\n",
        ])
    if kind == "git_sha":
        sha = rs(HEX, 40)
        return pick([
            f'Revert "Add retry to uploader"\n\nThis reverts commit {sha}.\n',
            f"commit {sha}\nAuthor: Jane Doe <jane@example.com>\nDate:   Tue Mar 5 10:00:00 2024 +0100\n\n    fix flaky test\n",
            f"(cherry picked from commit {sha})\n",
            f"{sha[:7]} Merge pull request #{R.randint(10, 9999)} from org/feature\n{rs(HEX, 7)} bump deps\n",
            f"Fixes regression introduced in {sha[:12]}.\n",
            f"pip install git+https://github.com/org/lib.git@{sha}\n",
        ])
    if kind == "lockfile_digest":
        d = rs(HEX, 64)
        return pick([
            f'[[package]]\nname = "requests"\nversion = "2.31.0"\nfiles = [\n    {{file = "requests-2.31.0-py3-none-any.whl", hash = "sha256:{d}"}},\n]\n',
            f"requests==2.31.0 \\\n    --hash=sha256:{d}\n",
            f'[[package]]\nname = "serde"\nversion = "1.0.197"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{d}"\n',
            f"FROM python:3.11-slim@sha256:{d}\n",
            f'    "node_modules/lodash": {{\n      "version": "4.17.21",\n      "integrity": "sha512-{base64.b64encode(bytes(R.getrandbits(8) for _ in range(64))).decode()}"\n    }}\n',
            f"golang.org/x/text v0.14.0 h1:{base64.b64encode(bytes(R.getrandbits(8) for _ in range(32))).decode()}\n",
            f"{d}  dist/app-1.4.2-linux-amd64.tar.gz\n",
        ])
    if kind == "uuid":
        u = f"{rs(HEX, 8)}-{rs(HEX, 4)}-4{rs(HEX, 3)}-{pick('89ab')}{rs(HEX, 3)}-{rs(HEX, 12)}"
        return pick([
            f'ORDER_ID = uuid.UUID("{u}")\n',
            f"    <ProjectGuid>{{{u.upper()}}}</ProjectGuid>\n",
            f"metadata:\n  name: web-7d9f\n  uid: {u}\n",
            f'assert resp.json()["id"] == "{u}"\n',
            f"INSERT INTO users (id, name) VALUES ('{u}', 'alice');\n",
            f"request_id={u} status=200 latency_ms={R.randint(3, 400)}\n",
        ])
    if kind == "base64_words":
        w = pick(ENGLISH)
        e = base64.b64encode(w.encode()).decode()
        return pick([
            f'def test_encode():\n    assert b64encode(b"{w}") == b"{e}"\n',
            f"expect(btoa('{w}')).toBe('{e}');\n",
            f"echo -n '{w}' | base64   # {e}\n",
            f'    ("{w}", "{e}"),\n',
        ])
    if kind == "version":
        v = f"{R.randint(0, 9)}.{R.randint(0, 30)}.{R.randint(0, 20)}"
        return pick([
            f'__version__ = "{v}"\n',
            f'  "version": "{v}-rc.{R.randint(1, 5)}+build.{R.randint(1, 999)}",\n',
            f"## [{v}] - 2024-0{R.randint(1, 9)}-1{R.randint(0, 9)}\n### Fixed\n- crash on empty input\n",
            f"numpy>={v},<{R.randint(10, 12)}.0\n",
            f"image: nginx:{v}-alpine\n",
            f"Tested with Python 3.11 and Django {v}.\n",
        ])
    if kind == "ipv6":
        full = ":".join(rs(HEX, 4) for _ in range(8))
        return pick([
            f"listen [2001:db8::{rs(HEX, 2)}]:443 ssl;\n",
            f"inet6 fe80::{rs(HEX, 4)}:{rs(HEX, 4)}:{rs(HEX, 4)}:{rs(HEX, 4)}/64 scope link\n",
            f"ALLOWED_IPS = ['::1', '2001:db8:{rs(HEX, 4)}::/48']\n",
            f"Connection from {full} port 52314\n",
            f"AAAA record: 2606:4700:{rs(HEX, 4)}::{rs(HEX, 4)}\n",
        ])
    if kind == "hex_colour":
        c = [rs(HEX, 6) for _ in range(3)]
        return pick([
            f".btn-primary {{\n  color: #{c[0]};\n  background: #{c[1]};\n  border: 1px solid #{c[2]};\n}}\n",
            f'theme = {{"accent": "#{c[0].upper()}", "bg": "#{c[1]}"}}\n',
            f"$brand: #{c[0]};\n$muted: #{c[1][:3]};\n",
            f'<rect fill="#{c[0]}" stroke="#{c[2]}" width="10" height="10"/>\n',
        ])
    if kind == "hex_constant":
        return pick([
            "#define MAGIC 0xdeadbeef\n",
            "if (hdr->magic != 0xCAFEBABE) return -EINVAL;\n",
            "static const uint32_t CRC32_POLY = 0xEDB88320u;\n",
            "FNV_OFFSET = 0xcbf29ce484222325\nFNV_PRIME = 0x100000001b3\n",
            "h ^= h >> 33; h *= 0xff51afd7ed558ccdULL;\n",
            "const GOLDEN: u64 = 0x9E3779B97F4A7C15;\n",
            "mask = 0xFFFFFFFF\n",
            "#define MH_MAGIC_64 0xfeedfacf\n",
            "ldr r0, =0x20001000\n",
        ])
    if kind == "pw_from_function":
        return pick([
            'password = getpass.getpass("DB password: ")\n',
            'password = get_secret("prod/db")["password"]\n',
            "self.password = kwargs.get('password')\n",
            "hashed_password = bcrypt.hashpw(password.encode(), bcrypt.gensalt())\n",
            'api_key = vault.read("secret/data/api")["data"]["key"]\n',
            "token = request.headers.get('Authorization', '').removeprefix('Bearer ')\n",
            "password = generate_password(length=24)\n",
            "def login(username: str, password: str) -> bool:\n    return check_password_hash(user.pw_hash, password)\n",
            "secret = keyring.get_password('myapp', username)\n",
            "client_secret = settings.OAUTH_CLIENT_SECRET\n",
        ])
    raise ValueError(kind)


NEG_KINDS = ["placeholder", "git_sha", "lockfile_digest", "uuid", "base64_words", "version", "ipv6",
             "hex_colour", "hex_constant", "pw_from_function"]


def generate(seed: int = 1337, per_class: int = 60, neg_per_kind: int = 15):
    global R
    R = random.Random(seed)
    _selftest()
    rows = []
    services = list(VENDORS)
    R.shuffle(services)
    for i in range(max(per_class, len(services))):
        s = services[i % len(services)]
        text, secrets = vendor_row(*s)
        rows.append((text, secrets, "vendor_token"))
    for cls, fn in [("config_yaml", yaml_row), ("config_json", json_row), ("config_xml", xml_row),
                    ("config_ini_env", ini_row), ("cli_flag", cli_row), ("connection_string", conn_row),
                    ("encoded_secret", encoded_row), ("crypto_wallet", wallet_row), ("mac_address", mac_row)]:
        for _ in range(per_class):
            text, secrets = fn()
            rows.append((text, secrets, cls))
    out = []
    for text, secrets, cls in rows:
        for s in secrets:
            assert s and s in text, (cls, s, text)
        out.append({"text": text, "secrets": secrets, "class": cls, "origin": "blind"})
    for kind in NEG_KINDS:
        seen = set()
        for _ in range(neg_per_kind):
            for _try in range(50):
                text = neg_row(kind)
                if text in seen:  # vary fixed snippets: indentation / a harmless comment line
                    text = pick(["    ", "\t", "# see docs/SETUP.md\n", "// TODO: tidy\n", ""]) + text
                if text not in seen:
                    break
            seen.add(text)
            out.append({"text": text, "secrets": [], "class": "neg_" + kind, "origin": "blind"})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args()
    rows = generate(a.seed)
    with a.out.open("w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    pos = sum(1 for r in rows if r["secrets"])
    print(f"wrote {len(rows)} rows ({pos} positive, {len(rows) - pos} negative) to {a.out}")


if __name__ == "__main__":
    main()
