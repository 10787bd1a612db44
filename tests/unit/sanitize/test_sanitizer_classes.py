"""Per-class cases for the sanitizer's rule families: config blocks, CLI flags, connection strings,
vendor prefixes, base64/hex values in assignments, crypto wallets and MAC addresses. Each class
has positives (the value must disappear) and near-miss negatives (the text must stay as is)."""
from __future__ import annotations

import base64
import hashlib

import pytest

from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig
from surrogate_dagster.sanitize.wallets import base58check_ok, bech32_ok, eip55_ok, keccak256


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None))


def _b58check(version: int, body: bytes) -> str:
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    raw = bytes([version]) + body
    raw += hashlib.sha256(hashlib.sha256(raw).digest()).digest()[:4]
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = alphabet[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


PW = "Vq7#mZ2pLx!9"
TOK = "Zt8Kq2LmW9xR4vB7nC1pD6sF3gH5jJ0a"
B64 = base64.b64encode(bytes(range(7, 39))).decode()
BTC = _b58check(0, bytes(range(40, 60)))
P2SH = _b58check(5, bytes(range(90, 110)))
ETH = "0x52908400098527886E0F7030069857D2E4169EE7"  # EIP-55 reference vector
ETH_LOWER = "0xde709f2102306220921060314715629080e2fb77"

POSITIVES = {
    "config_xml": [
        (f"<hudson.util.Secret><secret>{B64}</secret></hudson.util.Secret>", B64),
        (f'<appSettings>\n  <add key="StripeApiKey" value="{TOK}" />\n</appSettings>', TOK),
        (f'<bean id="ds"><property name="password" value="{PW}"/></bean>', PW),
        (f'<entry key="jwt.signing.secret">{TOK}</entry>', TOK),
        (f'<param name="adminPassword">{PW}</param>', PW),
    ],
    "config_json_yaml_ini_env": [
        (f'{{"service": {{"apiKey": "{TOK}"}}}}', TOK),
        (f"auth:\n  client_secret: {TOK}\n", TOK),
        (f"[mail]\nsmtp_pass = {PW}\n", PW),
        (f"POSTGRES_PASSWORD={PW}\n", PW),
        (f"jenkins.admin.password={PW}", PW),
    ],
    "cli_flag": [
        (f"docker login -u deployer -p {PW} ghcr.io", PW),
        (f"podman login --username bot --password '{PW}' quay.io", PW),
        (f"ldapwhoami -x -D uid=svc,ou=people,dc=ex,dc=org -w {PW}", PW),
        (f"redis-cli -h 10.1.2.3 -a {PW} info", PW),
        (f"terraform apply -var admin_user=root --db-password={PW}", PW),
        (f"kubectl create secret generic api --from-literal=token={TOK}", TOK),
    ],
    "connection_string": [
        (f"jdbc:postgresql://pg:5432/shop?user=shop&password={PW}&ssl=true", PW),
        (f"Server=sql02;Database=inv;User Id=inv;Password={PW};", PW),
        (f"mysql://reporting:{PW}@mysql.internal:3306/reports", PW),
        (f"dbname=metrics host=ts user=grafana password={PW}", PW),
    ],
    "config_json": [
        (f'{{"auths": {{"ghcr.io": {{"auth": "{TOK}"}}}}}}', TOK),
        (f'{{"smtp": {{"pass": "{PW}"}}}}', PW),
        (f'{{"secretAccessKey": "{TOK}"}}', TOK),
        (f"{{'client_secret': '{TOK}'}}", TOK),
    ],
    "config_yaml": [
        (f"redis:\n  requirepass: {PW}", PW),
        (f"masterauth: {PW}", PW),
        (f"env:\n  - name: DB_PASSWORD\n    value: {PW}\n", PW),
        (f'  - name: API_TOKEN\n    value: "{TOK}"', TOK),
        (f"password: >-\n  {PW}\n", PW),
        (f"spring:\n  datasource:\n    password: '{PW}'", PW),
    ],
    "config_xml_more": [
        (f"<db:password>{PW}</db:password>", PW),
        (f"<password><![CDATA[{PW}]]></password>", PW),
        (f"<auth>{TOK}</auth>", TOK),
        (f'<smtp host="mail" password="{PW}" />', PW),
    ],
    "cli_more": [
        (f"echo {TOK} | docker login --username bot --password-stdin", TOK),
        (f"gh auth login --with-token <<< {TOK}", TOK),
        (f"npm config set //registry.npmjs.org/:_authToken {TOK}", TOK),
        (f"SSHPASS={PW} sshpass -e ssh host", PW),
        (f"smbclient //fs/share -U alice%{PW}", PW),
        (f"zip -P {PW} backup.zip db.sql", PW),
        (f"openssl pkcs12 -export -passout pass:{PW} -out a.p12", PW),
        (f"vault login {TOK}", TOK),
        (f"rabbitmqctl add_user admin {PW}", PW),
        (f"http -a admin:{PW} GET https://api.local", PW),
    ],
    "connection_more": [
        (f"jdbc:oracle:thin:scott/{PW}@db:1521:orcl", PW),
        (f"sqlplus scott/{PW}@//db:1521/svc", PW),
        (f"rediss://default:{PW}@cache:6380", PW),
        (f"Driver={{ODBC}};Server=h;Uid=u;Pwd={PW};", PW),
    ],
    "vendor_prefix": [
        ("ATBB" + "x7Kq2LmW9R4vB7nC1pD6sF3gH5jJ0aZt", None),
        ("lsv2_pt_" + "0123456789abcdef0123456789abcdef" + "_0a1b2c3d4e", None),
        ("lsv2_sk_" + "fedcba9876543210fedcba9876543210" + "_a9b8c7d6e5", None),
        ("sgp_" + "0123456789abcdef" + "_" + "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", None),
        ("EAAG" + "ZCxq81LmW9R4vB7nC1pD6sF3gH5jJ0aZt8Kq2LmW9xR4vB7nC1pD6sF3gH5jJ0aZt8Kq2LmW9xR4vB7nC1pD6sF3gH5", None),
        ("A3-ABC123-DEF456GHI78-JKL90-MNO12-PQR34", None),
        ("sk.eyJ1IjoiZXhhbXBsZXVzZXIiLCJhIjoiY2s" + "xyz." + "Q2w3e4r5t6y7u8i9o0pAzS", None),
        ("dckr_pat_" + "Zt8Kq2LmW9xR4vB7nC1pD6sF3gH", None),
        ("gsk_" + "Zt8Kq2LmW9xR4vB7nC1pD6sF3gH5jJ0aZt8Kq2LmW9xR4vB7nC1pD6sF", None),
    ],
    "base64_hex_assignment": [
        (f"SECRET_KEY = b'{B64}'", B64),
        (f"self.hmac_secret = '{B64}'", B64),
        (f"encryption_key: \"{B64}\"", B64),
        ("app_secret = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'",
         "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ],
    "crypto_wallet": [
        (f"please send 0.01 BTC to {BTC}", BTC),
        (f"multisig: {P2SH}", P2SH),
        ("segwit bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"),
        (f"contract owner {ETH}", ETH),
        (f"wallet = '{ETH_LOWER}'", ETH_LOWER),
    ],
    "mac_address": [
        ("eth0: ether 3c:22:fb:12:ab:cd txqueuelen 1000", "3c:22:fb:12:ab:cd"),
        ("Physical Address. . . : 00-1A-2B-3C-4D-5E", "00-1A-2B-3C-4D-5E"),
        ("wlan bssid=a4:2b:b0:c1:d2:e3", "a4:2b:b0:c1:d2:e3"),
        ("switch# show mac 0026.9e4f.1b2c", "0026.9e4f.1b2c"),
    ],
}

NEGATIVES = {
    "config": [
        '<add key="ApiBaseUrl" value="https://api.corp.io/v2" />',
        "<password>${env.DB_PASSWORD}</password>",
        '{"apiKey": "your_api_key_here"}',
        "api_key: <YOUR_API_KEY>",
        "DB_PASSWORD=\n",
        "secret = os.environ['APP_SECRET']",
        '<property name="password" value="${db.password}"/>',
    ],
    "cli": [
        "docker login -u $USER -p $TOKEN registry.io",
        "echo $PW | docker login --password-stdin -u ci",
        "psql --password-file ~/.pgpass",
        "git log --pretty=format:%h -p src/",
        "cc -O2 -W -o build/app main.c",
        "redis-cli -a $REDIS_PASSWORD ping",
        "unzip -p archive.zip notes.txt",
        "gh auth login --with-token < token.txt",
        "vault login -method=github",
        "rsync --password-file=/etc/rsync.pw src dst",
    ],
    "config_near_miss": [
        "password: !vault |",
        "secret: !Ref DbSecret",
        "auth: AuthConfig",
        '{"auth": "basic"}',
        "  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db}",
        "  - name: DB_HOST\n    value: db.internal.example.net",
        "<db:password>${DB_PASSWORD}</db:password>",
        "bypass: enabled_for_all_users",
        "compass_heading: NorthNorthWest12",
        "def extractall(self, path=None, members=None, pwd=None):",
        '"integrity": "sha1-9yftEYA4e3iCZblZFwa7Rzr5TOQ="',
        "author: Jane Q. Developer 2024",
    ],
    "connection": [
        "jdbc:mysql://db/app?user=app&password=${DB_PASS}",
        "Server=sql;User Id=sa;Password=%DB_PASSWORD%;",
        "postgresql://user:password@localhost/db",
        "npm install @types/node@18.11.9",
        "sqlplus scott/${ORA_PW}@db:1521/svc",
    ],
    "hashes_and_ids": [
        'sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
        "commit 3f2a9c1d7e8b4a6f0c5d2e1b9a8f7c6d5e4b3a21",
        "resolved sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
        "digest: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141",
        "test_getUserAccountDetailsForProfileViewAndEdit()",
    ],
    "wallet_and_mac": [
        "digest = '0xde709f2102306220921060314715629080e2fb77'",  # lowercase hex without wallet words
        "0x52908400098527886E0F7030069857D2E4169Ee7 is mistyped",  # bad EIP-55 checksum
        "id: 1BoatSLRHtKNngkdXEeobR76b53LETtpyZ",  # base58 shape, bad checksum
        "mask 0xde:ad:be:ef",
        "addr fe80::1ff:fe23:4567:890a",
        "broadcast ff:ff:ff:ff:ff:ff",
        "fingerprint 3c:22:fb:12:ab:cd:ef:01:23:45:67:89",
        "at 12:34:56",
    ],
}


@pytest.mark.parametrize("cls,text,secret", [(c, t, s) for c, cases in POSITIVES.items() for t, s in cases])
def test_positive(san: Sanitizer, cls: str, text: str, secret: str | None) -> None:
    res = san.sanitize(text)
    secret = secret or text
    assert secret not in res.text, (cls, res.text)
    assert res.changed


@pytest.mark.parametrize("cls,text", [(c, t) for c, cases in NEGATIVES.items() for t in cases])
def test_negative(san: Sanitizer, cls: str, text: str) -> None:
    res = san.sanitize(text)
    assert not res.changed, (cls, [(f.rule, text[f.start:f.end]) for f in res.findings])


def test_checksums() -> None:
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert eip55_ok("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
    assert not eip55_ok("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD")
    assert base58check_ok("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa")
    assert not base58check_ok("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb")
    assert bech32_ok("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
    assert not bech32_ok("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdr")


def test_new_classes_keep_categories_and_are_idempotent(san: Sanitizer) -> None:
    text = f"mac 3c:22:fb:12:ab:cd pay {BTC} docker login -u a -p {PW} x"
    res = san.sanitize(text)
    assert res.counts["public_ips"] == 1 and res.counts["payment_national_ids"] == 1 and res.counts["passwords"] == 1
    assert "<MAC_ADDRESS_1>" in res.text and "<CRYPTO_WALLET_1>" in res.text
    assert not san.sanitize(res.text).changed


def test_category_filter_drops_new_classes() -> None:
    s = Sanitizer(SanitizerConfig(ner_model=None, categories=("passwords",)))
    assert not s.sanitize("mac 3c:22:fb:12:ab:cd").changed
