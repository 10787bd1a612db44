"""Per-class cases for command-line flags, credential files, XML credential elements, encoded key
material and secret lookups by name (the values are made up; the shapes follow each format's docs)."""
from __future__ import annotations

import pytest

from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig


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


def test_later_round_rescans_around_replacements_in_long_documents(san):
    """A match that only a replacement exposes (the second phone number below) is found in a
    later round, also when the line sits between long stretches of unrelated text and other
    findings far away."""
    line = "My US number is (415) 555-0132, and my international one is 91-415-555-0132"
    filler = "\n".join(f"value_{i} = compute(x, {i})  # plain code line" for i in range(120))
    doc = f"{filler}\npassword = '{PW}'\n{filler}\n{line}\n{filler}\nmachine a.io login u password {PW}\n"
    res = san.sanitize(doc)
    assert "555-0132" not in res.text and PW not in res.text
    assert any(f.round > 0 for f in res.findings)
    assert not san.sanitize(res.text).changed


def _der_b64(version: int) -> str:
    import base64
    import random

    body = b"\x02\x01" + bytes([version]) + b"\x02\x82\x01\x01\x00" + random.Random(7).randbytes(257)
    return base64.b64encode(b"\x30\x82" + len(body).to_bytes(2, "big") + body).decode()


@pytest.mark.parametrize("text,secret", [
    (f"PRIVATE_KEY={_der_b64(0)}", _der_b64(0)),
    (f'{{"signing_key": "{_der_b64(1)}"}}', _der_b64(1)),
    ("admin:$apr1$r31.bcde$HqJZimcKQFAMYayBlzkrA/", "$apr1$r31.bcde$HqJZimcKQFAMYayBlzkrA/"),
    ("deploy:$2y$10$" + "abcdefghijklmnopqrstuv" + "WXYZ0123456789./abcdefghijklmno", "$2y$10$abcdefghijklmnopqrstuv"),
    (f"gpg --batch --passphrase {PW} -d backup.gpg", PW),
    (f"unrar x -p{PW} backup.rar", PW),
    (f"ldap_default_authtok = {PW}", PW),
])
def test_hashes_der_keys_and_more_flags_redacted(san, text, secret):
    out = san.sanitize(text).text
    assert secret not in out, out


def test_der_public_key_and_prose_directives_untouched(san):
    import base64

    # SubjectPublicKeyInfo: SEQUENCE { SEQUENCE { algorithm } BIT STRING }, no version INTEGER
    spki = base64.b64encode(b"\x30\x59\x30\x13\x06\x07\x2a\x86\x48\xce\x3d\x02\x01" + bytes(range(70))).decode()
    for text in (f"PUBLIC_KEY={spki}", "password combination.\n\nR5: Regulatory", "password :=,.:-@*?!"):
        assert not san.sanitize(text).changed, text


@pytest.mark.parametrize("text,secret", [
    (f"CREATE USER 'app'@'%' IDENTIFIED BY '{PW}';", PW),
    ("ALTER USER scott IDENTIFIED BY Tiger2024x;", "Tiger2024x"),
    ("otpauth://totp/ACME:bob?secret=JBSWY3DPEHPK3PXPJBSW&issuer=ACME", "JBSWY3DPEHPK3PXPJBSW"),
    ("xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi",
     "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"),
    ("static const uint8_t aes_key[16] = {0x3f, 0x9a, 0x1c, 0x7e, 0x5b, 0x2d, 0x8f, 0x04, 0xa6, 0xc3, 0xe1, 0xb9, "
     "0xd7, 0xf5, 0xa2, 0xc4};", "0x3f, 0x9a, 0x1c"),
    (f"plink -ssh admin@host -pw {PW}", PW),
    (f"mosquitto_pub -h broker -u dev -P {PW} -t a -m b", PW),
    (f"az storage blob list --account-name acct --account-key {B64_KEY}", B64_KEY),
])
def test_sql_otp_bip32_byte_arrays_and_tool_flags_redacted(san, text, secret):
    out = san.sanitize(text).text
    assert secret not in out, out


@pytest.mark.parametrize("text", [
    "the request is identified by the token it carries",
    "uint8_t iv[16] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};",
    "key = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f}",
    "table = [0x3f, 0x9a, 0x1c, 0x7e, 0x5b, 0x2d, 0x8f, 0x04, 0xa6, 0xc3, 0xe1, 0xb9, 0xd7, 0xf5, 0xa2, 0xc4]",
])
def test_prose_counting_vectors_and_unnamed_tables_untouched(san, text):
    assert not san.sanitize(text).changed
