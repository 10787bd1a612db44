"""Seeded generator of the per-class labelled set `secret_classes_labelled.jsonl`.

Every row is one realistic snippet (config block, CLI line, connection string, source line, log
line) holding zero or more secret values, written from documented token formats and ordinary
config/code templates. Rows carry `class`, `secrets` (the exact values that must disappear),
`label`, `repo` (a synthetic repository) and `origin` (template id), and `split`.

Split: every class's templates and the vendor formats are divided in two by index parity; tuning
repositories only draw from the even half, held-out repositories only from the odd half, so a
held-out row shares neither its context template nor (for vendor tokens) its service with any
tuning row.

    .venv/bin/python benchmarks/data/secret_classes_gen.py   # rewrites the JSONL (seed 20261201)
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
OUT = HERE / "secret_classes_labelled.jsonl"
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

A62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def rs(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def password(rng):
    kind = rng.randrange(4)
    if kind == 0:
        return rs(rng, A62 + "!@#%^&*", rng.randint(10, 20))
    if kind == 1:
        w = rng.choice(["winter", "Falcon", "orange", "Tiger", "harbor", "Quartz", "maple", "Rocket"])
        return f"{w}{rng.choice('-_.!')}{rng.choice(['Blue', 'river', 'Storm', 'delta'])}{rng.randint(10, 9999)}{rng.choice('!#$')}"
    if kind == 2:
        return rs(rng, A62, rng.randint(12, 24))
    return rs(rng, string.ascii_lowercase + string.digits, rng.randint(14, 22))


def password_at(rng):
    """A password holding `@` (and sometimes `:`): the separator rules must take the last `@`."""
    return f"{rs(rng, A62, rng.randint(4, 8))}@{rs(rng, A62, rng.randint(3, 6))}{rng.choice(['', ':', '!'])}{rs(rng, A62, rng.randint(3, 6))}"


def password_url(rng):
    """A URL password holding `@`, `:` or one `/`."""
    sep = rng.choice("@:/")
    return f"{rs(rng, A62, rng.randint(4, 8))}{sep}{rs(rng, A62, rng.randint(4, 8))}{rng.choice(['', '@', ':'])}{rs(rng, A62, 3)}"


def token(rng):
    return rs(rng, A62, rng.choice([32, 36, 40, 48]))


def b64secret(rng):
    return base64.b64encode(rng.randbytes(rng.choice([24, 32, 48, 64]))).decode()


def hexsecret(rng):
    return rs(rng, HEX, rng.choice([32, 40, 64]))


# ---------------------------------------------------------------- vendor formats (documented shapes)
def _uuid(rng):
    h = rs(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


VENDORS = [  # (service, generator)
    ("bitbucket", lambda r: "ATBB" + rs(r, A62, 32)),
    ("langsmith_pt", lambda r: f"lsv2_pt_{rs(r, HEX, 32)}_{rs(r, HEX, 10)}"),
    ("sourcegraph", lambda r: f"sgp_{rs(r, HEX, 16)}_{rs(r, HEX, 40)}"),
    ("facebook", lambda r: "EAAG" + rs(r, A62, 160)),
    ("onepassword", lambda r: f"A3-{rs(r, string.ascii_uppercase + string.digits, 6)}-{rs(r, string.ascii_uppercase + string.digits, 11)}-"
                              + "-".join(rs(r, string.ascii_uppercase + string.digits, 5) for _ in range(3))),
    ("mapbox", lambda r: "sk.eyJ1Ijoi" + rs(r, A62, 40) + "." + rs(r, A62 + "_-", 22)),
    ("langsmith_sk", lambda r: f"lsv2_sk_{rs(r, HEX, 32)}_{rs(r, HEX, 10)}"),
    ("atlassian", lambda r: "ATATT3xFfGF0" + rs(r, A62 + "_-", 180) + "=" + rs(r, HEX.upper(), 8)),
    ("docker_hub", lambda r: "dckr_pat_" + rs(r, A62 + "_-", 27)),
    ("sonarqube", lambda r: "sqp_" + rs(r, HEX, 40)),
    ("buildkite", lambda r: "bkua_" + rs(r, HEX, 40)),
    ("groq", lambda r: "gsk_" + rs(r, A62, 52)),
    ("replicate", lambda r: "r8_" + rs(r, A62, 37)),
    ("openrouter", lambda r: "sk-or-v1-" + rs(r, HEX, 64)),
    ("xai", lambda r: "xai-" + rs(r, A62, 80)),
    ("pinecone", lambda r: "pcsk_" + rs(r, A62, 6) + "_" + rs(r, A62, 64)),
    ("supabase", lambda r: "sbp_" + rs(r, HEX, 40)),
    ("netlify", lambda r: "nfp_" + rs(r, A62, 36)),
    ("neon", lambda r: "napi_" + rs(r, string.ascii_lowercase + string.digits, 64)),
    ("planetscale", lambda r: "pscale_tkn_" + rs(r, A62, 43)),
    ("tailscale", lambda r: f"tskey-auth-{rs(r, A62, 17)}-{rs(r, A62, 33)}"),
    ("dynatrace", lambda r: f"dt0c01.{rs(r, string.ascii_uppercase + string.digits, 24)}.{rs(r, string.ascii_uppercase + string.digits, 64)}"),
    ("new_relic", lambda r: "NRAK-" + rs(r, string.ascii_uppercase + string.digits, 27)),
    ("age", lambda r: "AGE-SECRET-KEY-1" + rs(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    ("figma", lambda r: "figd_" + rs(r, A62 + "_-", 40)),
    ("contentful", lambda r: "CFPAT-" + rs(r, A62 + "_-", 43)),
    ("airtable", lambda r: "pat" + rs(r, A62, 14) + "." + rs(r, HEX, 64)),
    ("prefect", lambda r: "pnu_" + rs(r, A62, 36)),
    ("readme", lambda r: "rdme_" + rs(r, string.ascii_lowercase + string.digits, 70)),
    ("typeform", lambda r: "tfp_" + rs(r, A62, 59)),
    ("brevo", lambda r: f"xkeysib-{rs(r, HEX, 64)}-{rs(r, A62, 16)}"),
    ("easypost", lambda r: "EZAK" + rs(r, A62, 54)),
    ("shippo", lambda r: "shippo_live_" + rs(r, HEX, 40)),
    ("razorpay", lambda r: "rzp_live_" + rs(r, A62, 14)),
    ("stripe_webhook", lambda r: "whsec_" + rs(r, A62, 32)),
    ("plaid", lambda r: "access-production-" + _uuid(r)),
    ("hubspot", lambda r: "pat-na1-" + _uuid(r)),
    ("tencent", lambda r: "AKID" + rs(r, A62, 32)),
    ("scaleway", lambda r: "SCW" + rs(r, string.ascii_uppercase + string.digits, 17)),
    ("openshift", lambda r: "sha256~" + rs(r, A62 + "_-", 43)),
    ("dropbox", lambda r: "sl." + rs(r, A62 + "_-", 136)),
    ("zoho", lambda r: f"1000.{rs(r, HEX, 32)}.{rs(r, HEX, 32)}"),
    ("duffel", lambda r: "duffel_live_" + rs(r, A62, 43)),
    ("infracost", lambda r: "ico-" + rs(r, A62, 32)),
    ("clojars", lambda r: "CLOJARS_" + rs(r, string.ascii_lowercase + string.digits, 60)),
    ("frameio", lambda r: "fio-u-" + rs(r, A62, 64)),
    ("vercel", lambda r: "vcp_" + rs(r, A62, 56)),
    ("render", lambda r: "rnd_" + rs(r, A62, 32)),
    ("fireworks", lambda r: "fw_" + rs(r, A62, 24)),
    ("fly", lambda r: "fo1_" + rs(r, A62 + "_-", 43)),
    ("harness", lambda r: f"pat.{rs(r, A62, 22)}.{rs(r, A62, 24)}.{rs(r, A62, 20)}"),
    ("salesforce", lambda r: "00D" + rs(r, A62, 15) + "!" + rs(r, A62 + "._", 96)),
    ("octopus", lambda r: "API-" + rs(r, string.ascii_uppercase + string.digits, 26)),
    ("yandex", lambda r: "AQVN" + rs(r, A62 + "_-", 36)),
    ("flutterwave", lambda r: f"FLWSECK_TEST-{rs(r, 'abcdefgh0123456789', 32)}-X"),
    ("scalingo", lambda r: "tk-us-" + rs(r, A62 + "_-", 48)),
    ("azure_devops", lambda r: rs(r, A62, 76) + "AZDO" + rs(r, A62, 4)),
    ("jfrog", lambda r: "cmVmdGtuOjAxOj" + rs(r, A62, 50)),
    # services without a fixed prefix: found only through their context
    ("datadog", lambda r: rs(r, HEX, 32)),
    ("algolia", lambda r: rs(r, HEX, 32)),
    ("snyk", _uuid),
    ("heroku_legacy", _uuid),
    ("mongodb_atlas", lambda r: _uuid(r)),
    ("twitch", lambda r: rs(r, string.ascii_lowercase + string.digits, 30)),
]

VENDOR_CONTEXTS = [
    "{svc}_token = '{v}'",
    'export {SVC}_API_KEY="{v}"',
    '  "{svc}ApiKey": "{v}",',
    "{SVC}_SECRET={v}",
    "client = {Svc}Client(api_key=\"{v}\")",
    "    {svc}_key: {v}",
    "curl -H 'Authorization: Bearer {v}' https://api.{svc}.example.net/v1/me",
    "<add key=\"{Svc}Token\" value=\"{v}\" />",
    "{svc}.api.token={v}",
    "const {svc}Secret = `{v}`;",
]

# ---------------------------------------------------------------- context classes: (template, value kind)
CLASSES = {
    "config_xml": [
        ("<hudson.util.Secret>\n  <secret>{v}</secret>\n</hudson.util.Secret>", "b64"),
        ("<credentials>\n  <username>deploy</username>\n  <password>{v}</password>\n</credentials>", "pw"),
        ("<server>\n  <id>nexus-releases</id>\n  <username>ci</username>\n  <password>{v}</password>\n</server>", "pw"),
        ('<add key="ApiKey" value="{v}" />', "tok"),
        ("<apiToken>{v}</apiToken>", "hex"),
        ('<property name="connection.password" value="{v}"/>', "pw"),
        ("<clientSecret>{v}</clientSecret>", "tok"),
        ('<entry key="secretKey">{v}</entry>', "b64"),
        ("<privateToken>{v}</privateToken>", "tok"),
        ('<setting name="AuthToken" serializeAs="String"><value>{v}</value></setting>', "tok"),
        # elements and attributes named after the credential
        ("<psk>{v}</psk>", "pw"),
        ("<sharedKey>\n  <keyType>passPhrase</keyType>\n  <keyMaterial>{v}</keyMaterial>\n</sharedKey>", "pw"),
        ('<user username="admin" password="{v}" roles="manager-gui"/>', "pw"),
        ('<Pass encoding="base64">{v}</Pass>', "b64"),
        ("<apiKey>{v}</apiKey>", "tok"),
        ('<service name="billing" apiKey="{v}" />', "tok"),
        ("<secret><![CDATA[{v}]]></secret>", "b64"),
        ("<pre-shared-key>{v}</pre-shared-key>", "pw"),
    ],
    "config_json": [
        ('{{"apiKey": "{v}", "region": "us-east-1"}}', "tok"),
        ('  "client_secret": "{v}",', "tok"),
        ('{{"auth": {{"user": "svc", "password": "{v}"}}}}', "pw"),
        ('  "accessToken": "{v}"', "tok"),
        ('{{"db": {{"host": "db.internal", "pass": "{v}"}}}}', "pw"),
        ('"secretKey":"{v}"', "b64"),
        ('{{\n  "signingSecret": "{v}"\n}}', "hex"),
        ('  "x-api-key": "{v}",', "tok"),
        ('{{"credentials": {{"token": "{v}"}}}}', "tok"),
        ('"privateKey": "{v}"', "b64"),
    ],
    "config_yaml": [
        ("database:\n  user: app\n  password: {v}", "pw"),
        ("spring:\n  datasource:\n    password: '{v}'", "pw"),
        ("api_key: {v}", "tok"),
        ("env:\n  - name: SECRET_TOKEN\n    value: \"{v}\"", "tok"),
        ("stringData:\n  apiToken: {v}", "tok"),
        ("auth:\n  clientSecret: \"{v}\"", "tok"),
        ("smtp:\n  pass: {v}", "pw"),
        ("webhook_secret: {v}", "hex"),
        ("  secret_key_base: {v}", "hex"),
        ("redis:\n  requirepass: {v}", "pw"),
    ],
    "config_ini": [
        ("[database]\nhost = db01\npassword = {v}", "pw"),
        ("[api]\nkey = {v}", "tok"),
        ("[smtp]\nsmtp_password={v}", "pw"),
        ("[auth]\nsecret = {v}", "b64"),
        ("[default]\naws_secret_access_key = {v}", "aws"),
        ("[pypi]\nusername = __token__\npassword = {v}", "pw"),
        ("[client]\npassword=\"{v}\"", "pw"),
        ("[service]\napi_token = {v}", "tok"),
        # credential files: .pgpass, .netrc, .my.cnf, .git-credentials, server configs, WireGuard
        ("db.internal:5432:app:app_user:{v}", "pw"),
        ("machine api.corp.io\n  login deploy\n  password {v}", "pw"),
        ("[client]\nuser = root\npassword = {v}\nhost = localhost", "pw"),
        ("https://ci-bot:{v}@git.corp.io", "tok"),
        ("requirepass {v}", "pw"),
        ("*:*:*:replicator:{v}", "pw"),
        ("machine ftp.corp.io login backup password {v}", "pw"),
        ("[Interface]\nPrivateKey = {v}\nAddress = 10.8.0.2/24", "b64_32"),
        ("rootpw {v}", "pw"),
        ("[Peer]\nPresharedKey = {v}", "b64_32"),
        ("bindpw {v}", "pw"),
        (": PSK \"{v}\"", "pw"),
        ("admin:{v}", "apr1"),
        ("ldap_default_authtok = {v}", "pw"),
    ],
    "config_env": [
        ("DB_PASSWORD={v}", "pw"),
        ("export API_TOKEN={v}", "tok"),
        ("SECRET_KEY='{v}'", "b64"),
        ("APP_SECRET=\"{v}\"", "hex"),
        ("MAIL_PASSWORD={v}", "pw"),
        ("JWT_SECRET={v}", "b64"),
        ("REDIS_PASS={v}", "pw"),
        ("SESSION_SECRET={v}", "hex"),
        ("PGPASSWORD={v}", "pw"),
        ("MYSQL_PWD={v}", "pw"),
        ("RABBITMQ_DEFAULT_PASS={v}", "pw"),
        ("export VAULT_TOKEN={v}", "tok"),
    ],
    "config_properties": [
        ("spring.datasource.password={v}", "pw"),
        ("mail.smtp.password = {v}", "pw"),
        ("app.security.jwt.secret={v}", "b64"),
        ("api.key={v}", "tok"),
        ("ldap.manager.password={v}", "pw"),
        ("oauth.client.secret: {v}", "tok"),
        ("keystore.password={v}", "pw"),
        ("github.token={v}", "tok"),
    ],
    "cli_flag": [
        ("docker login -u ci-bot -p {v} registry.example.io", "pw"),
        ("mysql -h db -u root --password={v} app", "pw"),
        ("psql \"host=db user=app\" --password {v}", "pw"),
        ("echo {v} | docker login --username bot --password-stdin", "tok"),
        ("vault login -method=userpass username=ops password={v}", "pw"),
        ("ldapsearch -x -D cn=admin,dc=corp,dc=local -w {v} -b dc=corp,dc=local", "pw"),
        ("helm repo add internal https://charts.corp.io --username ci --password {v}", "pw"),
        ("gh auth login --with-token {v}", "tok"),
        ("az login --service-principal -u app-id -p {v} --tenant t1", "pw"),
        ("npm config set //registry.npmjs.org/:_authToken {v}", "tok"),
        ("sshpass -p '{v}' ssh deploy@10.0.0.4", "pw"),
        ("redis-cli -h cache -a {v} ping", "pw"),
        ("mongo --username admin --password '{v}' --authenticationDatabase admin", "pw"),
        ("kubectl create secret generic db --from-literal=password={v}", "pw"),
        # per-tool flags from each tool's documented usage
        ("mysql -h db -u app -p'{v}' app", "pw"),
        ("PGPASSWORD={v} pg_dump -h db -U app app > app.sql", "pw"),
        ("curl -H \"Authorization: Bearer {v}\" https://api.corp.io/v1/me", "tok"),
        ("sshpass -p{v} scp dump.sql ops@backup:/srv", "pw"),
        ("mc alias set minio https://minio.corp.io minioadmin {v}", "tok"),
        ("ipmitool -I lanplus -H bmc01 -U admin -P {v} chassis status", "pw"),
        ("xfreerdp /v:win01 /u:admin /p:{v}", "pw"),
        ("gh secret set DEPLOY_TOKEN --body {v}", "tok"),
        ("buildah push --creds bot:{v} app:1.2 docker://registry.corp.io/app:1.2", "pw"),
        ("twine upload -u deploy -p {v} dist/*", "pw"),
        ("wget --user=ci --password={v} https://artifacts.corp.io/x.tgz", "pw"),
        ("psexec \\\\srv01 -u CORP\\admin -p {v} cmd", "pw"),
        ("plink -ssh admin@bastion -pw {v} uptime", "pw"),
        ("mosquitto_sub -h mqtt.corp.io -u sensor -P {v} -t 'plant/#'", "pw"),
        # one pair per tool family (even index: tuning half, odd: held-out), from each tool's usage
        # database clients
        ("mysql -uroot -p{v} -e 'show databases'", "pw"),
        ("mariadb -h db -u app --password={v} app", "pw"),
        ("sqlplus -s scott/{v}@orcl @report.sql", "pw_at"),
        ("sqlplus system/{v}@//ora01:1521/ORCLPDB1", "pw_at"),
        ("mongosh \"mongodb://admin:{v}@mongo:27017/admin\"", "pw_at"),
        ("mongosh --host mongo -u admin -p {v} --authenticationDatabase admin", "pw"),
        ("redis-cli --user app --pass {v} -h cache ping", "pw"),
        ("redis-cli -h cache CONFIG SET requirepass {v}", "pw"),
        ("sqlcmd -S tcp:sql01,1433 -U sa -P {v} -Q \"SELECT 1\"", "pw"),
        ("cqlsh cassandra.internal -u cassandra -p {v}", "pw"),
        ("influx setup -u admin -p {v} -o corp -b metrics -f", "pw"),
        ("influx auth list -t {v}", "tok"),
        ("clickhouse-client --host ch01 --user default --password {v} -q 'SELECT 1'", "pw"),
        ("cypher-shell -a neo4j://graph:7687 -u neo4j -p {v}", "pw"),
        # cloud and cluster CLIs
        ("doctl auth init -t {v}", "tok"),
        ("flyctl deploy --remote-only -t {v}", "tok"),
        ("terraform apply -auto-approve -var 'db_password={v}'", "pw"),
        ("helm upgrade --install api ./chart --set db.password={v}", "pw"),
        ("kubectl create secret generic api --from-literal=api-key={v} -n prod", "tok"),
        ("kubectl create secret docker-registry regcred --docker-server=r.corp.io --docker-username=ci --docker-password={v}", "pw"),
        ("podman login -u ci -p {v} quay.io", "pw"),
        ("oc login --token={v} --server=https://api.ocp.corp:6443", "tok"),
        ("vault login {v}", "tok"),
        ("az keyvault secret set --vault-name kv-prod --name db-password --value {v}", "pw"),
        ("pulumi config set --secret dbPassword {v}", "pw"),
        ("aws ssm put-parameter --name /app/db --type SecureString --value {v}", "pw"),
        # VCS and package tools
        ("git clone https://ci-bot:{v}@git.corp.io/team/app.git", "pw_at"),
        ("pip install --index-url https://deploy:{v}@pypi.corp.io/simple/ app", "pw_at"),
        ("cargo login {v}", "tok"),
        ("poetry config http-basic.corp deploy {v}", "pw"),
        ("dotnet nuget push app.nupkg -k {v} -s https://nuget.corp.io/v3/index.json", "tok"),
        ("composer config -g github-oauth.github.com {v}", "tok"),
        ("uv publish --publish-url https://pypi.corp.io/legacy/ -u deploy -p {v}", "pw"),
        ("mvn deploy -DrepoPassword={v}", "pw"),
        # network and file tools
        ("curl --user admin:{v} https://jenkins.corp.io/api/json", "pw_at"),
        ("curl -H 'X-Api-Key: {v}' https://api.corp.io/v2/items", "tok"),
        ("wget --http-user=ci --http-password={v} https://files.corp.io/a.tgz", "pw"),
        ("smbclient //fs01/share -U svc%{v}", "pw"),
        ("rdesktop -u admin -p {v} win01.corp.io", "pw"),
        ("openssl rsa -in key.pem -passin pass:{v} -out plain.pem", "pw"),
        ("7z a -p{v} -mhe=on backup.7z /srv/data", "pw"),
        ("htpasswd -b /etc/nginx/.htpasswd admin {v}", "pw"),
        ("snmpwalk -v2c -c {v} 10.20.0.1 system", "pw"),
        ("nmcli dev wifi connect CorpWiFi password {v}", "pw"),
        ("wpa_passphrase CorpWiFi {v}", "pw"),
        ("unzip -P {v} secrets.zip", "pw"),
        # environment prefixes
        ("MYSQL_PWD={v} mysql -u root -h db app", "pw"),
        ("API_KEY={v} ./run.sh --env prod", "tok"),
    ],
    "connection_string": [
        ("jdbc:mysql://db:3306/app?user=app&password={v}", "pw"),
        ("Server=tcp:sql01,1433;Database=crm;User ID=sa;Password={v};Encrypt=True;", "pw"),
        ("jdbc:sqlserver://sql01:1433;databaseName=hr;user=hr;password={v};", "pw"),
        ("postgresql://app:{v}@pg.internal:5432/app", "pw"),
        ("Data Source=ora01;User Id=scott;Password={v};", "pw"),
        ("mongodb+srv://admin:{v}@cluster0.abcde.mongodb.net/test", "pw"),
        ("ldap_bind_password = {v}", "pw"),
        ("host=db port=5432 dbname=app user=app password={v} sslmode=require", "pw"),
        ("amqp://guest:{v}@rabbit:5672/", "pw"),
        ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=core.windows.net", "azkey"),
        ("Driver={{ODBC Driver 18}};Server=sql;Uid=app;Pwd={v};", "pw"),
        ("bindDN: cn=svc,ou=apps,dc=corp\nbindCredential: {v}", "pw"),
        # passwords holding `@`, `:` or `/`: the last `@` before the host ends them
        ("postgresql://app:{v}@pg.internal:5432/app?sslmode=require", "pw_url"),
        ("mysql://root:{v}@mysql.internal:3306/shop", "pw_at"),
        ("sqlplus scott/{v}@orcl", "pw_at"),
        ("expdp system/{v}@//ora01:1521/ORCLPDB1 schemas=HR", "pw_at"),
        ("https://deploy:{v}@nexus.corp.io/repository/pypi/simple", "pw_at"),
        ("amqps://svc:{v}@mq.corp.io:5671/prod", "pw_url"),
    ],
    "base64_assignment": [
        ("HMAC_KEY = '{v}'", "b64"),
        ("signing_key = b\"{v}\"", "b64"),
        ("encryption_key: {v}", "b64"),
        ("cookie_secret = \"{v}\"", "b64"),
        ("master_key={v}", "b64"),
        ("FERNET_KEY = '{v}'", "fernet"),
        ("aes_key = \"{v}\"", "b64"),
        ("webhook_signing_secret: \"{v}\"", "b64"),
        ("salt_secret = '{v}'", "b64"),
        ("config.secret_key_base = '{v}'", "hex"),
    ],
    "encoded_secret": [
        ("cipher = Fernet(b'{v}')", "fernet"),
        ("APP_KEY=base64:{v}", "b64_32"),
        ("key = bytes.fromhex('{v}')", "hex"),
        ("KEY = base64.b64decode('{v}')", "b64"),
        ("const key = Buffer.from('{v}', 'hex');", "hex"),
        ("secret = binascii.unhexlify(\"{v}\")", "hex"),
        ("byte[] key = Base64.getDecoder().decode(\"{v}\");", "b64"),
        ("'key' => env('APP_KEY', 'base64:{v}'),", "b64_32"),
        ("key, _ := hex.DecodeString(\"{v}\")", "hex"),
        ('{{"kty": "oct", "k": "{v}", "alg": "HS256"}}', "b64url"),
        ("$key = base64_decode('{v}');", "b64"),
        ("FERNET_KEYS = ['{v}']", "fernet"),
        ("JWT_PRIVATE_KEY={v}", "der"),
        ('{{"client_email": "svc@corp.io", "key": "{v}"}}', "der"),
        ("otpauth://totp/Corp:ops?secret={v}&issuer=Corp", "b32"),
        ("static const uint8_t hmac_key[16] = {{{v}}};", "bytearr"),
    ],
    "crypto_wallet": [
        ("Send the payment to {v}", "btc"),
        ("wallet_address = \"{v}\"", "eth"),
        ("BTC: {v}", "bech32"),
        ("donate: {v}", "eth"),
        ("recipient = '{v}'", "ethlower"),
        ("- payout address {v}", "btc3"),
        ("to: {v}  # eth", "eth"),
        ("Tips welcome at {v}", "bech32"),
    ],
    "mac_address": [
        ("ether {v}  txqueuelen 1000  (Ethernet)", "mac"),
        ("hwaddr = \"{v}\"", "mac"),
        ("link/ether {v} brd ff:ff:ff:ff:ff:ff", "mac"),
        ("Device {v} connected", "mac"),
        ("ARP entry: 10.0.0.7 at {v} on en0", "macdash"),
        ("bssid: {v}", "mac"),
        ("  mac_address: {v}", "macupper"),
        ("host printer {{ hardware ethernet {v}; fixed-address 10.0.0.9; }}", "mac"),
    ],
}

# A third split, `fresh`: templates written after the rules were tuned and never used to tune them
# (the held-out half's per-class scores were looked at during development; these were not).
FRESH = {
    "config_xml": [
        ("<connectionStrings>\n  <add name=\"Main\" connectionString=\"Server=db;User ID=app;Password={v}\" />\n</connectionStrings>", "pw"),
        ("<jdbc-connection-pool>\n  <property name=\"Password\" value=\"{v}\"/>\n</jdbc-connection-pool>", "pw"),
        ("<smtp>\n  <network host=\"mail\" userName=\"relay\" password=\"{v}\" />\n</smtp>", "pw"),
        ("<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n  <password>{{AQAAABAAAAAQ{v}}}</password>", "b64"),
        ("<token>{v}</token>", "tok"),
        ("<Setting Name=\"StorageAccessKey\" Value=\"{v}\" />", "b64"),
    ],
    "config_json": [
        ('{{"type": "service_account", "private_key_id": "{v}"}}', "hex"),
        ('"auths": {{"registry.corp.io": {{"password": "{v}"}}}}', "pw"),
        ('{{"mailer": {{"smtp_password": "{v}"}}}}', "pw"),
        ('  "SlackBotToken": "{v}",', "tok"),
    ],
    "config_yaml": [
        ("  - name: DATABASE_PASSWORD\n    value: {v}", "pw"),
        ("registry:\n  auth:\n    password: \"{v}\"", "pw"),
        ("sentry:\n  auth_token: {v}", "hex"),
        ("oauth2:\n  client-secret: {v}", "tok"),
    ],
    "config_env": [
        ("STRIPE_SECRET={v}", "tok"),
        ("ADMIN_PASS=\"{v}\"", "pw"),
        ("export ENCRYPTION_KEY={v}", "b64"),
        ("PGPASSWORD={v} psql -h db -U app", "pw"),
    ],
    "cli_flag": [
        ("mysqladmin -u root --password={v} status", "pw"),
        ("curl -u admin:{v} https://jenkins.corp.io/api/json", "pw"),
        ("skopeo copy --dest-creds ci:{v} docker://a docker://b", "pw"),
        ("aws configure set aws_secret_access_key {v}", "aws"),
        ("gitlab-runner register --registration-token {v}", "tok"),
        ("openssl pkcs12 -export -passout pass:{v} -out cert.p12", "pw"),
        ("mongodump --uri mongodb://backup:{v}@mongo:27017/app", "pw"),
        ("net use Z: \\\\fs01\\share /user:CORP\\svc {v}", "pw"),
    ],
    "connection_string": [
        ("jdbc:oracle:thin:scott/{v}@//ora:1521/ORCL", "pw"),
        ("redis://:{v}@cache:6379/0", "pw"),
        ("Provider=SQLOLEDB;Data Source=sql;User ID=sa;Password={v};", "pw"),
        ("ldap_bind_pw: {v}", "pw"),
        ("DATABASE_URL=postgres://app:{v}@pg:5432/app", "pw"),
        ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={v}", "azkey"),
    ],
    "base64_assignment": [
        ("NEXTAUTH_SECRET={v}", "b64"),
        ("$config['encryption_key'] = '{v}';", "b64"),
        ("secret_key_base: {v}", "hex"),
        ("private static final String HMAC_SECRET = \"{v}\";", "b64"),
    ],
    "crypto_wallet": [
        ("bitcoin:{v}?amount=0.05", "btc"),
        ("ETH donations: {v}", "eth"),
        ("payTo: \"{v}\"", "bech32"),
        ("withdrawal address {v} confirmed", "ethlower"),
    ],
    "mac_address": [
        ("dhcp-host={v},192.168.1.50", "mac"),
        ("Interface: eth1  HWaddr {v}", "macupper"),
        ("wol.send_magic_packet('{v}')", "mac"),
        ("arp -s 10.0.0.2 {v}", "macdash"),
    ],
}
FRESH_VENDOR_CONTEXTS = [
    "[{svc}]\napi_key = {v}",
    "ERROR auth failed for key={v} (service {svc})",
    "headers = {{'X-{Svc}-Token': '{v}'}}",
    "    - {SVC}_TOKEN={v}",
]

# negatives: look like secrets by shape, are not (placeholders, digests, ids, code hex)
NEGATIVES = [
    "api_key = 'your_api_key_here'",
    "password: ${{DB_PASSWORD}}",
    "API_TOKEN=<TOKEN>",
    "secret = os.environ['APP_SECRET']",
    "token: xxxxxxxxxxxxxxxxxxxxxxxx",
    'sha256 = "{sha256}"',
    "integrity sha512-{b64long}",
    '"resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz", "integrity": "sha1-{b64short}"',
    "commit {sha1}",
    "git checkout {sha1}",
    "digest: sha256:{sha256}",
    "MAGIC = 0x{hex8}",
    "addr = fe80::{hex4}:{hex4}:{hex4}",
    "mask = 0xde:ad",
    "uuid = '{uuid}'",
    "checksum = \"{md5}\"",
    "password = getpass.getpass()",
    "token = request.headers.get('Authorization')",
    "ETH_ZERO = '0x0000000000000000000000000000000000000000'",
    "hash = '0x{hex40}'",
    "broadcast = 'ff:ff:ff:ff:ff:ff'",
    "time 12:34:56 elapsed",
    "docker login -u $USER -p $PASSWORD",
    "password=\"changeme\"",
    "  \"apiKey\": \"<YOUR_API_KEY>\",",
    "jdbc:mysql://db:3306/app?user=app&password=${{DB_PASS}}",
    # secret names passed to lookups, decodes of variables or text, prompting flags
    's = get_secret("prod/db")',
    'api_key = os.environ["API_KEY"]',
    'password = os.getenv("PASSWORD")',
    'resp = client.get_secret_value(SecretId="prod/app/db")',
    'pw = keyring.get_password("smtp", "alerts")',
    "digest = bytes.fromhex(payload)",
    "mysql -u root -p app",
    "docker login --password-stdin < token.txt",
    "greeting = bytes.fromhex('48656c6c6f2c20776f726c6421')",
    "token = vault.read_secret('kv/app/{hex4}')",
    # command lines whose credential is a variable or a placeholder
    "redis-cli -a $REDIS_PASSWORD ping",
    "sqlplus scott/${{ORACLE_PWD}}@orcl",
    "doctl auth init -t <your-token>",
    "snmpwalk -v2c -c public 10.0.0.1",
    "cargo login",
    "curl -u admin:**** https://ci.corp.io/api/json",
    "git clone https://${{GIT_USER}}:${{GIT_TOKEN}}@git.corp.io/team/app.git",
    "az login -u ops-admin -p \"$AZ_PASSWORD\"",
]


def _btc(rng, version):
    payload = bytes([version]) + rng.randbytes(20)
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\x00"))) + out


_BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32(rng):
    from surrogate_dagster.sanitize.wallets import _bech32_polymod
    data = [0] + [rng.randrange(32) for _ in range(32)]
    hrp = "bc"
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + data
    pm = _bech32_polymod(values + [0] * 6) ^ 1
    return hrp + "1" + "".join(_BECH[d] for d in data + [(pm >> 5 * (5 - i)) & 31 for i in range(6)])


def _eth(rng, lower=False):
    from surrogate_dagster.sanitize.wallets import keccak256
    h = rs(rng, HEX, 40)
    if lower:
        return "0x" + h
    k = keccak256(h.encode()).hex()
    return "0x" + "".join(c.upper() if int(k[i], 16) >= 8 else c for i, c in enumerate(h))


def _mac(rng, sep=":", upper=False):
    b = [rng.randrange(256) & 0xFE] + [rng.randrange(256) for _ in range(5)]
    s = sep.join(f"{x:02x}" for x in b)
    return s.upper() if upper else s


CRYPT64 = "./" + string.digits + string.ascii_uppercase + string.ascii_lowercase


def _der_private_key(rng):
    """Base64 DER opening like a private key (RFC 8017/5915): SEQUENCE { INTEGER version, ... }."""
    body = b"\x02\x01" + bytes([rng.choice([0, 1])]) + b"\x02\x82\x01\x01\x00" + rng.randbytes(257)
    return base64.b64encode(b"\x30\x82" + len(body).to_bytes(2, "big") + body).decode()


def value(kind, rng):
    return {
        "pw": password, "tok": token, "pw_at": password_at, "pw_url": password_url, "b64": b64secret, "hex": hexsecret,
        "aws": lambda r: rs(r, A62 + "/+", 40),
        "azkey": lambda r: base64.b64encode(r.randbytes(64)).decode(),
        "fernet": lambda r: base64.urlsafe_b64encode(r.randbytes(32)).decode(),
        "b64_32": lambda r: base64.b64encode(r.randbytes(32)).decode(),
        "der": _der_private_key,
        "b32": lambda r: base64.b32encode(r.randbytes(20)).decode().rstrip("="),
        "bytearr": lambda r: ", ".join(f"0x{b:02x}" for b in r.randbytes(16)),
        "apr1": lambda r: f"$apr1${rs(r, CRYPT64, 8)}${rs(r, CRYPT64, 22)}",
        "b64url": lambda r: base64.urlsafe_b64encode(r.randbytes(32)).decode().rstrip("="),
        "btc": lambda r: _btc(r, 0), "btc3": lambda r: _btc(r, 5), "bech32": _bech32,
        "eth": _eth, "ethlower": lambda r: _eth(r, True),
        "mac": _mac, "macdash": lambda r: _mac(r, "-"), "macupper": lambda r: _mac(r, ":", True),
    }[kind](rng)


def generate(seed: int = 20261201, per_class: int = 60) -> list[dict]:
    rng = random.Random(seed)
    repos = [f"synthetic/{a}-{b}" for a in ("acme", "globex", "initech", "umbrella", "hooli", "vandelay")
             for b in ("api", "infra", "web", "ops")]
    rows: list[dict] = []

    def repo_for(split):
        return rng.choice([r for i, r in enumerate(repos) if i % 2 == (0 if split == "tune" else 1)])

    for cls, templates in CLASSES.items():
        for i in range(per_class):
            split = "tune" if i % 2 == 0 else "heldout"
            k = rng.randrange(len(templates) // 2) * 2 + (0 if split == "tune" else 1)
            k = min(k, len(templates) - 1)
            tpl, kind = templates[k]
            v = value(kind, rng)
            rows.append({"text": tpl.format(v=v), "secrets": [v], "label": True, "class": cls,
                         "repo": repo_for(split), "origin": f"{cls}/t{k}", "split": split})
    for i in range(len(VENDORS) * 4):
        split = "tune" if i % 2 == 0 else "heldout"
        j = rng.randrange(len(VENDORS) // 2) * 2 + (0 if split == "tune" else 1)
        j = min(j, len(VENDORS) - 1)
        svc, gen = VENDORS[j]
        c = rng.randrange(len(VENDOR_CONTEXTS) // 2) * 2 + (0 if split == "tune" else 1)
        v = gen(rng)
        base = svc.split("_")[0]
        text = VENDOR_CONTEXTS[c].format(v=v, svc=base, SVC=base.upper(), Svc=base.capitalize())
        rows.append({"text": text, "secrets": [v], "label": True, "class": "vendor_prefix", "service": svc,
                     "repo": repo_for(split), "origin": f"vendor/{svc}/c{c}", "split": split})
    for cls, templates in FRESH.items():
        for i in range(24):
            tpl, kind = templates[i % len(templates)]
            v = value(kind, rng)
            rows.append({"text": tpl.format(v=v), "secrets": [v], "label": True, "class": cls,
                         "repo": "synthetic/fresh-" + cls, "origin": f"fresh/{cls}/t{i % len(templates)}", "split": "fresh"})
    for i in range(len(VENDORS)):
        svc, gen = VENDORS[i]
        v = gen(rng)
        base = svc.split("_")[0]
        text = FRESH_VENDOR_CONTEXTS[i % len(FRESH_VENDOR_CONTEXTS)].format(v=v, svc=base, SVC=base.upper(),
                                                                           Svc=base.capitalize())
        rows.append({"text": text, "secrets": [v], "label": True, "class": "vendor_prefix", "service": svc,
                     "repo": "synthetic/fresh-vendors", "origin": f"fresh/vendor/{svc}", "split": "fresh"})
    for i in range(len(NEGATIVES) * 4):
        split = "tune" if i % 2 == 0 else "heldout"
        j = rng.randrange(len(NEGATIVES) // 2) * 2 + (0 if split == "tune" else 1)
        j = min(j, len(NEGATIVES) - 1)
        text = NEGATIVES[j].format(sha256=rs(rng, HEX, 64), sha1=rs(rng, HEX, 40), md5=rs(rng, HEX, 32),
                                   b64long=base64.b64encode(rng.randbytes(64)).decode(),
                                   b64short=base64.b64encode(rng.randbytes(20)).decode(), hex8=rs(rng, HEX, 8),
                                   hex4=rs(rng, HEX, 4), hex40=rs(rng, HEX, 40), uuid=_uuid(rng))
        rows.append({"text": text, "secrets": [], "label": False, "class": "negative",
                     "repo": repo_for(split), "origin": f"negative/n{j}", "split": split})
    return rows


if __name__ == "__main__":
    rows = generate()
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} rows to {OUT}")
