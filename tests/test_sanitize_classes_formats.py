"""Per-class cases for command-line flags, credential files, XML credential elements, encoded key
material and secret lookups by name (the values are made up; the shapes follow each format's docs)."""
from __future__ import annotations

import pytest

from surrogate_dagster.curation.sanitize import Sanitizer, SanitizerConfig


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None))


B64_KEY = "q8F1xJ/9mZ0kP+3vR2tY7uW4oE6iA5sD1fG8hJ0kL2M="
FERNET = "hX3nq8b1xYz-9kLmQp0aBc9dEfGh2IjKlMnOpQrStUv="
HEX_KEY = "3f9a1c7e5b2d8f04a6c3e1b9d7f5a2c48e6b0d3f1a9c7e5b"
PW = "Tq7!vRm2Lp9x"

CLI = [
    f"mysql -u root -p'{PW}' appdb",
    f"mysqldump -uroot -p{PW} app > app.sql",
    f"PGPASSWORD={PW} psql -h db -U app",
    f"sshpass -p{PW} ssh ops@10.0.0.4",
    f"mc alias set minio https://minio.corp.io minioadmin {PW}Zz",
    f"ipmitool -I lanplus -H bmc -U admin -P {PW} power status",
    f"xfreerdp /v:win01 /u:admin /p:{PW}",
    f"gh secret set API_TOKEN --body {PW}",
    f"skopeo copy --src-creds bot:{PW} docker://a docker://b",
    f"net user svc_backup {PW} /add",
    f"curl --oauth2-bearer {PW}Qw https://api.corp.io",
]
CONFIG_FILES = [
    f"db.internal:5432:app:app_user:{PW}",
    f"*:*:*:postgres:{PW}",
    f"machine api.corp.io\n  login me@corp.io\n  password {PW}",
    f"machine github.com login bob password {PW}",
    f"requirepass {PW}",
    f"sentinel auth-pass mymaster {PW}",
    f"rootpw {PW}",
    f'%any : PSK "{PW}"',
    f"wpa_psk={PW}",
    f"[Peer]\nPresharedKey = {B64_KEY}",
]
XML = [
    f"<psk>{PW}</psk>",
    f"<ipsec><phase1><psk>{PW}</psk></phase1></ipsec>",
    f"<keyMaterial>{PW}</keyMaterial>",
    f"<pre-shared-key>{PW}</pre-shared-key>",
    f'<Pass encoding="base64">VHE3IXZSbTJMcDl4</Pass>',
    f'<user username="admin" password="{PW}" roles="manager-gui"/>',
]
ENCODED = [
    (f"cipher = Fernet(b'{FERNET}')", FERNET),
    (f"APP_KEY=base64:{B64_KEY}", B64_KEY),
    (f"'key' => env('APP_KEY', 'base64:{B64_KEY}'),", B64_KEY),
    (f"key = bytes.fromhex('{HEX_KEY}')", HEX_KEY),
    (f'k = binascii.unhexlify("{HEX_KEY[:32]}")', HEX_KEY[:32]),
    (f"KEY = base64.b64decode('{B64_KEY}')", B64_KEY),
    (f"const key = Buffer.from('{HEX_KEY}', 'hex');", HEX_KEY),
    (f'{{"kty":"oct","k":"{FERNET.rstrip("=")}"}}', FERNET.rstrip("=")),
]


@pytest.mark.parametrize("text", CLI, ids=range(len(CLI)))
def test_cli_flags_redacted(san, text):
    out = san.sanitize(text).text
    assert PW not in out, out


@pytest.mark.parametrize("text", CONFIG_FILES, ids=range(len(CONFIG_FILES)))
def test_credential_files_redacted(san, text):
    out = san.sanitize(text).text
    assert PW not in out and B64_KEY not in out, out


@pytest.mark.parametrize("text", XML, ids=range(len(XML)))
def test_xml_credential_elements_redacted(san, text):
    out = san.sanitize(text).text
    assert PW not in out and "VHE3IXZSbTJMcDl4" not in out, out


@pytest.mark.parametrize("text,secret", ENCODED, ids=range(len(ENCODED)))
def test_encoded_key_material_redacted(san, text, secret):
    out = san.sanitize(text).text
    assert secret not in out, out


def test_quoted_flag_value_keeps_its_quotes(san):
    res = san.sanitize(f"mysql -u root -p'{PW}' appdb")
    assert res.text == "mysql -u root -p'<SECRET_PASSWORD_1>' appdb"


NEGATIVES = [
    's = get_secret("prod/db")',
    'secret = vault.read_secret("kv/prod/app")',
    'token = fetch_token("github-app")',
    'v = readPassword("db-main")',
    'k = os.environ["API_KEY"]',
    'p = os.getenv("PASSWORD")',
    'pw = keyring.get_password("svc", "bob")',
    "d = bytes.fromhex(data)",
    "h = bytes.fromhex('48656c6c6f2c20776f726c6421')",  # hex of text
    "t = bytes.fromhex('000102030405060708090a0b0c0d0e0f')",  # a counting test vector
    "x = base64.b64decode(payload)",
    "mysql -u root -p appdb",
    "openssl enc -aes-256-cbc -pass env:ENC_PASS -in a -out b",
    "machine example.com login anonymous",
    "password reset",
    "<password>${DB_PASS}</password>",
    '<psk encoding="none"/>',
    "addr = fe80:1:2:3:abcd",
    "ts 2024:12:01:10:30",
    "requirepass /etc/redis/pass.txt",
]


@pytest.mark.parametrize("text", NEGATIVES, ids=range(len(NEGATIVES)))
def test_names_lookups_and_non_secrets_untouched(san, text):
    res = san.sanitize(text)
    assert not res.changed, (res.text, [f.rule for f in res.findings])


def test_idempotent_on_new_formats(san):
    for text in CLI + CONFIG_FILES + XML + [t for t, _ in ENCODED]:
        once = san.sanitize(text).text
        assert not san.sanitize(once).changed, once
