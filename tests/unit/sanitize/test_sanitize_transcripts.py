"""Secrets in transcripts and encoded forms (SMTP AUTH, LDIF, encoder pipes, vault kv), in
commands by shape (a user flag then a password flag, stdin readers), and the look-alikes kept."""
from __future__ import annotations

import pytest

from surrogate_dagster.sanitize import SECRET_CATEGORIES

PW = "Quartz#481lagoon"



@pytest.mark.parametrize("text, secret", [
    ("C: AUTH LOGIN\nS: 334 VXNlcm5hbWU6\nC: bWFyaWFAY29ycC5leGFtcGxl\nS: 334 UGFzc3dvcmQ6\nC: UXVhcnR6IzQ4MWxhZ29vbg==\n"
     "S: 235 2.7.0 Authentication successful", "UXVhcnR6IzQ4MWxhZ29vbg=="),
    ("> AUTH PLAIN AG1hcmlhAFF1YXJ0eiM0ODFsYWdvb24=\n< 235 ok", "AG1hcmlhAFF1YXJ0eiM0ODFsYWdvb24="),
    ("dn: uid=maria,ou=people,dc=corp\nobjectClass: inetOrgPerson\nuserPassword:: UXVhcnR6IzQ4MWxhZ29vbg==\n",
     "UXVhcnR6IzQ4MWxhZ29vbg=="),
    ("dn: uid=ops,dc=corp\nuserPassword: {SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "{SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="),
    ("$ printf '%s' 'ci_runner:Timber@939beacon' | base64\nY2lfcnVubmVyOlRpbWJlckA5MzliZWFjb24=", "ci_runner:Timber@939beacon"),
    ("echo -n 'JYaW0NEvlQEtwhD7f20hnZ3Vuh8gSa' | xxd -p", "JYaW0NEvlQEtwhD7f20hnZ3Vuh8gSa"),
    (f"vault kv put secret/ci/db password={PW}", PW),
    (f"hydra -l administrator -p {PW} -t 4 rdp://10.0.0.7", PW),
    (f"medusa -h 10.0.0.9 -u svc-orders -p {PW} -M ssh", PW),
    (f"sometool --user deploy --timeout 30 -w '{PW}' run", PW),
    (f"echo '{PW}' | sshfs ops@10.0.0.5:/data /mnt/data -o password_stdin,reconnect", PW),
    (f'sudo openconnect vpn.corp.example --user=ops --passwd-on-stdin <<< "{PW}"', PW),
    (f"echo '{PW}' | kinit svc@CORP.EXAMPLE", PW),
    (f"valkey-cli -h cache --tls -a {PW} INFO", PW),
    (f"sudo iwconfig wlan0 essid Lab key s:'{PW}'", PW),
    (f"ab -n 100 -A svc:'{PW}' https://staging.corp.example/", PW),
    ("module.exports = {\n  password: 'k\\'bALt9ZoB9FV7MXq',\n};", "bALt9ZoB9FV7MXq"),
    ("smtp:\n  password: |-\n    copper.indigo.juniper40bJZ1H2\n  starttls: true\n", "copper.indigo.juniper40bJZ1H2"),
    ("api:\n  secret_token: >-\n    KyzsOnFg4xarI6F3H_r-up8cUb1ErTHE\n    ZnVwX5lfiA5nYQnLqFWfDNJGhjaIFw40\n  tls: true\n",
     "ZnVwX5lfiA5nYQnLqFWfDNJGhjaIFw40"),
    (f'con = cx_Oracle.connect("JMARTINEZ", "{PW}", "ora.corp.example:1521/ORCLPDB1")', PW),
    (f"const sequelize = new Sequelize('inventory', 'kpatel', '{PW}', {{ dialect: 'mysql' }});", PW),
    (f'ftps = FTP_TLS("ftp.corp.example", "backup", "{PW}")', PW),
    (f'conn = Connection(server, "cn=svc,dc=corp", "{PW}", auto_bind=True)', PW),
    (f'let creds = Credentials::new("me@corp.example".to_owned(), "{PW}".to_owned());', PW),
    (f"Net::SMTP.start('smtp.corp.example', 587, 'corp.example', 'me@corp.example', '{PW}', :login) do |smtp|", PW),
    (f'$ok = ldap_bind($conn, "cn=portal,dc=corp", \'{PW}\');', PW),
    (f"await login(page, 'maria@corp.example', '{PW}');", PW),
    ('digest = hmac.new(b"9cf002939767f7393e82df4af6f89d96cc07c373", body, hashlib.sha256)',
     "9cf002939767f7393e82df4af6f89d96cc07c373"),
    ("const sig = crypto.createHmac('sha256', 'o8b3wwpTItNYWXMtFPhwY6cYit6k7BXf').update(b)",
     "o8b3wwpTItNYWXMtFPhwY6cYit6k7BXf"),
    ('token = jwt.encode(payload, "BlU2Yy1XzECn6uuHtnNYT43kmo_3Vts", algorithm="HS256")', "BlU2Yy1XzECn6uuHtnNYT43kmo_3Vts"),
    (f'let opts = OptsBuilder::new().user(Some("app")).pass(Some("{PW}"));', PW),
    (f'ds.setPassword("{PW}");', PW),
    ('return {"username": "grafana", "password": "$r3TEt_QBv3qt&@o"}', "$r3TEt_QBv3qt&@o"),
])
def test_secret_is_redacted(regex_sanitizer, text, secret):
    assert secret not in regex_sanitizer.sanitize(text).text


@pytest.mark.parametrize("text", [
    '"secrets": [{"name": "DB_PASSWORD", "valueFrom": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-zwvTLP"}]',
    "ED25519 key fingerprint is SHA256:6ANh1o1PH2YTTgIL8uJaHHVJLAQxCrPhvVqGWIL7Nk8.",
    '{"keys": [{"kty": "RSA", "kid": "ac69c7fb4f364f83", "e": "AQAB", "n": '
    '"jUOl2x6x_LWKlEIumcjVTGvD0Q3O6V5nTECN6WOiMWMTDu80Af_SO1eEr4wxnTy0QhLBteWa6xJbWJ73Rhl51d6h09FdM5NVBhgciyFiSorB"}]}',
    "docker run -p 8080:80 -u 1000 nginx",
    "ssh -p 2222 -l deploy bastion.corp.example",
    "echo 'hello world' | base64",
    "echo -n $PASSWORD | base64",
    "docker login -u ci --password-stdin registry.corp.example",
    "mysql -u root -p",
    "group_order = 0x8CB91E82A3386D280F5D6F7E50E641DF152F7109ED5456B31F166E6CAC0425A7CF3AB6AF6B7FC3103B883202E9046565",
    "aws s3api complete-multipart-upload --bucket b --key 'multipart/01' --upload-id "
    "dfRtDYU0WWCCcH43C3WFbkRONycyCpTJJvxu2i5GYkZljF.Yxwh6XG7WfS2vC4to6HiV6Yjlx.cph0gtNBtJ8P3URCSbB7rjxI5iEwVDmgaXZOGgkk",
    'Application Default Credentials (`google.auth.default()`).',
    "smtp.login(user, password)",
])
def test_look_alike_is_kept(regex_sanitizer, text):
    out = regex_sanitizer.sanitize(text)
    assert not [f for f in out.findings if f.category in SECRET_CATEGORIES], out.text


@pytest.mark.parametrize("text", [
    f"htpasswd -b -c /etc/nginx/.htpasswd admin {PW}",
    f"mysqladmin -u root password {PW}",
    f"smbclient //fs01/share {PW} -U svc",
    f"tool -pass {PW}",
    f"consul kv put secret/db {PW}",
    f"etcdctl user add root:{PW}",
    f"rabbitmqctl authenticate_user admin {PW}",
    f"pass insert -m web <<< {PW}",
    f"netsh wlan set hostednetwork mode=allow ssid=lab key={PW}",
    f"dotnet user-secrets set DbPassword {PW}",
    f"doppler secrets set DB_PASSWORD {PW}",
    f"gh secret set DB_PASSWORD -b'{PW}'",
    f"glab variable set DB_PASS {PW}",
    f"echo {PW} | docker secret create db_pw -",
    f"ldappasswd -x -D cn=admin -w {PW} -s new uid=x",
    f'smbpasswd -a user <<< "{PW}"',
    f"echo -e '{PW}\\n{PW}' | passwd user",
    f"neo4j-admin dbms set-initial-password {PW}",
    f"redis-cli -h cache AUTH {PW}",
    f"redis-cli -h cache AUTH default {PW}",
    f"expdp hr/{PW} directory=d dumpfile=x.dmp",
    f"curl -u :{PW} https://api.corp.example",
    f"npm login --auth-type=legacy <<< '{PW}'",
    f"winrs -r:host -u:admin -p:{PW} cmd",
    'export DB_PASSWORD="Quartz#481\\\nlagoon"\n./migrate.sh',
])
def test_command_line_secret_is_redacted(regex_sanitizer, text):
    out = regex_sanitizer.sanitize(text).text
    assert "Quartz#481" not in out and "lagoon" not in out


@pytest.mark.parametrize("text", [
    "kubectl config set-context dev --namespace=web",
    "git config --global user.name deploy",
    "npm config set registry https://registry.npmjs.org/",
    "poetry env use python3.11",
    "redis-cli -h cache AUTH",
    "expdp hr/ directory=d",
    "docker run -u 1000 -p 8080:80 nginx",
    "docker run --user app -p 127.0.0.1:8080:80/tcp img",
    "ab -u put.txt -p post.json http://staging.corp.example/",
    'echo "Welcome" | mail -s login ops',
])
def test_command_look_alike_is_kept(regex_sanitizer, text):
    out = regex_sanitizer.sanitize(text)
    assert not [f for f in out.findings if f.category in SECRET_CATEGORIES], out.text


def _b64(s: str) -> str:
    import base64

    return base64.b64encode(s.encode()).decode()


@pytest.mark.parametrize("text, secret", [
    (f"apiVersion: v1\nkind: Secret\ndata:\n  DB_PASS: {_b64(PW)}\n  DB_USER: {_b64('app')}\n", _b64(PW)),
    (f'{{"auths": {{"ghcr.io": {{"auth": "{_b64("ci:" + PW)}"}}}}}}', _b64("ci:" + PW)),
    (f"Proxy-Authorization: Basic {_b64('proxy:' + PW)}", _b64("proxy:" + PW)),
    ("POST /login HTTP/1.1\n\nusername=admin&password=Quartz%23481lagoon&remember=1", "Quartz%23481lagoon"),
    ('<add name="Db" connectionString="Server=x;User Id=sa;Password=Quartz&amp;481lagoon;" />', "Quartz&amp;481lagoon"),
    (f"password: !!binary {_b64(PW)}", _b64(PW)),
    (f"_auth={_b64('ci:' + PW)}\nalways-auth=true", _b64("ci:" + PW)),
])
def test_encoded_secret_is_redacted(regex_sanitizer, text, secret):
    assert secret not in regex_sanitizer.sanitize(text).text


@pytest.mark.parametrize("text, secret", [
    (f"$ echo -n 'admin:{PW}' | xxd -p\n{('admin:' + PW).encode().hex()}", ("admin:" + PW).encode().hex()),
    (f"x = '{('ghp_' + 'Xk9fQ2mZp7LrT4vB8nW1cY6hJ3sD5gA0qR2t').encode().hex()}'",
     ("ghp_" + "Xk9fQ2mZp7LrT4vB8nW1cY6hJ3sD5gA0qR2t").encode().hex()),
    (f'password = bytes.fromhex("{PW.encode().hex()}").decode()', PW.encode().hex()),
    (f"password = base64.b64decode('{_b64(PW)}').decode()", _b64(PW)),
    (f"PASSWORD=$(echo {PW.encode().hex()} | xxd -r -p)", PW.encode().hex()),
    (f"export DB_PASS=$(echo '{_b64(PW)}' | base64 -d)", _b64(PW)),
])
def test_hex_and_decoded_secret_is_redacted(regex_sanitizer, text, secret):
    assert secret not in regex_sanitizer.sanitize(text).text


@pytest.mark.parametrize("text", [
    "digest = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'",
    "greeting = bytes.fromhex('48656c6c6f2c20776f726c6421').decode()",
    "msg = base64.b64decode('SGVsbG8sIHdvcmxkIQ==').decode()",
    f"$ echo -n 'hello world, this is text' | xxd -p\n{'hello world, this is text'.encode().hex()}",
])
def test_hex_and_decoded_text_is_kept(regex_sanitizer, text):
    out = regex_sanitizer.sanitize(text)
    assert not [f for f in out.findings if f.category in SECRET_CATEGORIES], out.text


@pytest.mark.parametrize("text, secret", [
    ("Authorization: SSWS 00aB3xK9fQ2mZp7LrT4vB8nW1cY6hJ3sD5gA0", "00aB3xK9fQ2mZp7LrT4vB8nW1cY6hJ3sD5gA0"),
    ("Authorization: GenieKey 7b1d9f3a-4c2e-4e8b-9a6d-2f5c8e1b3a7d", "7b1d9f3a-4c2e-4e8b-9a6d-2f5c8e1b3a7d"),
    ("curl -H 'Authorization: Klaviyo-API-Key pk_Xk9fQ2mZp7LrT4vB8nW1cY6h' https://a.klaviyo.com/api/profiles/",
     "pk_Xk9fQ2mZp7LrT4vB8nW1cY6h"),
])
def test_any_authorization_scheme_keeps_its_credential_out(regex_sanitizer, text, secret):
    assert secret not in regex_sanitizer.sanitize(text).text


def test_authorization_prose_is_kept(regex_sanitizer):
    text = "Authorization: required for every endpoint except /health."
    assert regex_sanitizer.sanitize(text).text == text
