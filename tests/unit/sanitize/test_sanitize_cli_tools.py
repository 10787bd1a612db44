"""Command-line credentials per tool family (database clients, cloud CLIs, VCS and package tools,
network and file tools, environment prefixes) and passwords holding `@`, `:` or `/` in URLs and
Oracle logins. Each positive names the exact value that must disappear while the rest of the line
(user names, hosts, flags) stays; each negative (variables, placeholders, files, switches) must
come back unchanged."""
from __future__ import annotations

import re

import pytest

from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig

PW = "Vq7#mZ2pLx!9"
TOK = "Zt8Kq2LmW9xR4vB7nC1pD6sF3gH5jJ0a"


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None))


_PLACEHOLDER = r"<SECRET_[A-Z_]+_\d+>"

# (line, the secret in it, words that must survive)
POSITIVES = {
    "database": [
        (f"mysql -uroot -p{PW} -e 'show databases'", PW, ["root"]),
        (f"mariadb -h db -u app --password={PW} app", PW, ["app"]),
        (f"psql postgresql://app:{PW}@db:5432/app", PW, ["db:5432"]),
        (f"PGPASSWORD={PW} psql -h db -U app", PW, ["psql"]),
        (f"sqlplus -s scott/{PW}@orcl @report.sql", PW, ["scott", "orcl"]),
        (f"mongosh --host mongo -u admin -p {PW}", PW, ["admin"]),
        (f"redis-cli -h cache -a {PW} ping", PW, ["cache"]),
        (f"redis-cli --user app --pass {PW} ping", PW, ["app"]),
        (f"redis-cli -h cache CONFIG SET requirepass {PW}", PW, ["requirepass"]),
        (f"sqlcmd -S sql01 -U sa -P {PW} -Q 'SELECT 1'", PW, ["sa"]),
        (f"influx setup -u admin -p {PW} -o corp -b metrics -f", PW, ["admin", "corp"]),
        (f"influx auth list -t {TOK}", TOK, ["auth"]),
        (f"clickhouse-client --user default --password {PW}", PW, ["default"]),
        (f"cqlsh cassandra.internal -u cassandra -p {PW}", PW, ["cassandra.internal"]),
        (f"cypher-shell -a neo4j://graph:7687 -u neo4j -p {PW}", PW, ["graph:7687"]),
        (f"mysqlsh root:{PW}@localhost:3306", PW, ["root", "localhost:3306"]),
        (f"etcdctl --user root:{PW} get /config", PW, ["root"]),
    ],
    "cloud": [
        (f"aws configure set aws_secret_access_key {TOK}", TOK, ["aws_secret_access_key"]),
        (f"aws ssm put-parameter --name /app/db --type SecureString --value {PW}", PW, ["/app/db"]),
        (f"aws secretsmanager create-secret --name db --secret-string {PW}", PW, ["db"]),
        (f"az login -u ops -p {PW}", PW, ["ops"]),
        (f"az ad sp create-for-rbac --client-secret {TOK}", TOK, ["create-for-rbac"]),
        (f"az keyvault secret set --vault-name kv --name db-password --value {PW}", PW, ["db-password"]),
        (f"doctl auth init -t {TOK}", TOK, ["init"]),
        (f"flyctl deploy -t {TOK}", TOK, ["deploy"]),
        (f"vercel deploy --prod --token={TOK}", TOK, ["--prod"]),
        (f"terraform apply -var 'db_password={PW}'", PW, ["apply"]),
        (f"helm upgrade --install api ./chart --set db.password={PW}", PW, ["./chart"]),
        (f"kubectl create secret generic api --from-literal=api-key={TOK}", TOK, ["api-key"]),
        (f"docker login -u ci -p {PW} registry.corp.io", PW, ["registry.corp.io"]),
        (f"podman login -u ci -p {PW} quay.io", PW, ["quay.io"]),
        (f"oc login --token={TOK} --server=https://api.ocp:6443", TOK, ["--server=https://api.ocp:6443"]),
        (f"vault login {TOK}", TOK, ["login"]),
        (f"pulumi config set --secret dbPassword {PW}", PW, ["dbPassword"]),
        (f"consul kv get -token={TOK} app/config", TOK, ["app/config"]),
    ],
    "vcs_packages": [
        (f"git clone https://ci-bot:{TOK}@git.corp.io/team/app.git", TOK, ["ci-bot", "git.corp.io"]),
        (f"npm config set //registry.npmjs.org/:_authToken={TOK}", TOK, ["registry.npmjs.org"]),
        (f"pip install --index-url https://deploy:{PW}@pypi.corp.io/simple app", PW, ["deploy", "pypi.corp.io"]),
        (f"twine upload -u __token__ -p {TOK} dist/*", TOK, ["__token__"]),
        (f"cargo login {TOK}", TOK, ["cargo"]),
        (f"cargo login --registry corp {TOK}", TOK, ["corp"]),
        (f"poetry config http-basic.corp deploy {PW}", PW, ["deploy"]),
        (f"poetry config pypi-token.pypi {TOK}", TOK, ["pypi-token.pypi"]),
        (f"composer config -g github-oauth.github.com {TOK}", TOK, ["github-oauth.github.com"]),
        (f"dotnet nuget push app.nupkg -k {TOK} -s https://nuget.corp.io/v3/index.json", TOK, ["app.nupkg"]),
        (f"nuget push app.nupkg -ApiKey {TOK}", TOK, ["app.nupkg"]),
        (f"uv publish -u deploy -p {PW}", PW, ["deploy"]),
        (f"mvn deploy -DrepoPassword={PW}", PW, ["-DrepoPassword="]),
        (f"./gradlew publish -PsigningPassword={PW}", PW, ["-PsigningPassword="]),
        (f"java -jar jenkins-cli.jar -s https://ci -auth admin:{TOK} who-am-i", TOK, ["admin", "who-am-i"]),
    ],
    "network_files": [
        (f"curl -u admin:{PW} https://ci.corp.io/api/json", PW, ["ci.corp.io"]),
        (f"curl --proxy-user ops:{PW} https://x.corp.io", PW, ["x.corp.io"]),
        ("curl -u admin:p@ss9Word https://ci.corp.io", "p@ss9Word", ["ci.corp.io"]),
        (f"curl -H 'Authorization: Bearer {TOK}' https://api.corp.io", TOK, ["api.corp.io"]),
        (f"curl -H 'X-Api-Key: {TOK}' https://api.corp.io", TOK, ["X-Api-Key"]),
        (f"wget --http-user=ci --http-password={PW} https://files.corp.io/a.tgz", PW, ["--http-user=ci"]),
        (f"sshpass -p '{PW}' ssh deploy@10.0.0.4", PW, ["ssh"]),
        (f"smbclient //fs01/share -U svc%{PW}", PW, ["//fs01/share"]),
        (f"rdesktop -u admin -p {PW} win01", PW, ["win01"]),
        (f"xfreerdp /u:admin /p:{PW} /v:win01", PW, ["/v:win01"]),
        (f"openssl rsa -in key.pem -passin pass:{PW} -out plain.pem", PW, ["pass:", "plain.pem"]),
        (f"openssl pkcs12 -export -password pass:{PW} -out c.p12", PW, ["c.p12"]),
        (f"openssl passwd -6 -salt abcdefgh {PW}", PW, ["abcdefgh"]),
        (f"mkpasswd -m sha-512 {PW}", PW, ["sha-512"]),
        (f"zip -P {PW} out.zip notes.txt", PW, ["out.zip"]),
        (f"7z a -p{PW} backup.7z data", PW, ["backup.7z"]),
        (f"unzip -P {PW} secrets.zip", PW, ["secrets.zip"]),
        (f"htpasswd -b /etc/nginx/.htpasswd admin {PW}", PW, ["admin"]),
        (f"htpasswd -nb deployer {PW}", PW, ["deployer"]),
        (f"htpasswd -cbB .htpasswd admin {PW}", PW, ["admin"]),
        (f"ldapsearch -x -D cn=admin,dc=corp -w {PW} -b dc=corp", PW, ["cn=admin,dc=corp"]),
        (f"ldappasswd -x -D cn=admin -W -s {PW} uid=alice", PW, ["uid=alice"]),
        (f"snmpwalk -v2c -c {PW} 10.20.0.1 system", PW, ["system"]),
        (f"nmcli dev wifi connect CorpWiFi password {PW}", PW, ["CorpWiFi"]),
        (f"wpa_passphrase CorpWiFi {PW}", PW, ["CorpWiFi"]),
        (f"mosquitto_passwd -b /etc/mosquitto/passwd sensor01 {PW}", PW, ["sensor01"]),
        (f"net use Z: \\\\fs01\\share /user:CORP\\svc {PW}", PW, ["/user:CORP\\svc"]),
        (f"ssh-keygen -p -P {PW} -N '' -f id_ed25519", PW, ["id_ed25519"]),
        (f"secretsdump.py CORP/admin:{PW}@10.0.0.5", PW, ["CORP/admin", "10.0.0.5"]),
        (f"$pw = ConvertTo-SecureString \"{PW}\" -AsPlainText -Force", PW, ["-AsPlainText"]),
    ],
    "env_prefix": [
        (f"MYSQL_PWD={PW} mysql -u root -h db app", PW, ["mysql"]),
        (f"API_KEY={TOK} ./run.sh --env prod", TOK, ["./run.sh"]),
    ],
}

# passwords holding `@`, `:` or `/`: the last `@` before the host ends them
AT_PASSWORDS = [
    ("sqlplus scott/{}@orcl", "p@ss9Word", ["scott", "orcl"]),
    ("sqlplus system/{}@//ora01:1521/ORCLPDB1", "Tr0ub@dor:x", ["//ora01:1521/ORCLPDB1"]),
    ("expdp system/{}@db01 schemas=HR", "a@b@c9Kx", ["db01"]),
    ("sqlplus scott/\"{}\"@orcl", "p@ss wd9", ["orcl"]),
    ("https://user:{}@host.corp.io/path", "p@ss9Word", ["user", "host.corp.io/path"]),
    ("https://user:{}@host.corp.io/", "p@ss:w0rd@9", ["host.corp.io"]),
    ("postgresql://app:{}@pg.internal:5432/app", "pa@ss/w0rd9", ["pg.internal:5432/app"]),
    ("postgresql://app:{}@pg.internal:5432/app", "pa/ss@w0rd9", ["pg.internal:5432/app"]),
    ("git clone https://bot:{}@github.com/org/repo.git", "t0k@en:Xy9", ["github.com/org/repo.git"]),
    ("mysqlsh --uri admin:{}@db:3306", "p@ss9Word", ["db:3306"]),
    ("impacket-psexec corp.local/admin:{}@dc01", "p@ss9Word", ["dc01"]),
]

NEGATIVES = [
    "docker login -u $USER -p $PASSWORD",
    "mysql -u root -p${DB_PASS}",
    "mysql -u root -p app",
    "redis-cli -a <password> ping",
    "vault login ${VAULT_TOKEN}",
    "vault login -method=oidc",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.corp.io",
    "sshpass -p '****' ssh deploy@host",
    "doctl auth init -t your-token",
    "cargo login",
    "cargo login <token>",
    'az login -u ops -p "$AZ_PASS"',
    "helm install x . --set password=$DB_PASSWORD",
    "kubectl create secret generic x --from-literal=password=<password>",
    "smbclient -U admin%$PW //fs/share",
    "wget --password=$PASS https://files.corp.io/a",
    "MYSQL_PWD=$PASS mysql",
    "API_KEY=${API_KEY} ./run.sh",
    "zip -P your-password out.zip notes.txt",
    "sqlplus scott/$PW@orcl",
    "snmpwalk -v2c -c public 10.0.0.1",
    "vercel --token $VERCEL_TOKEN",
    "openssl rsa -passin pass:$PASS -in key.pem",
    "openssl rsa -passin env:KEY_PASS -in key.pem",
    "npm config set //registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "gcloud auth activate-service-account --key-file=/tmp/key.json",
    "nmcli dev wifi connect Home password <password>",
    "poetry config http-basic.corp deploy $PASS",
    "mvn -Dpassword=${env.PW} deploy",
    "ConvertTo-SecureString $pw -AsPlainText -Force",
    "consul kv get -token=$CONSUL_TOKEN app/x",
    "nxc smb 10.0.0.5 -u admin -p passwords.txt",
    "flyctl deploy -t $FLY_API_TOKEN",
    "fly -t ci-prod2 set-pipeline -p app -c pipeline.yml",  # Concourse: `-t` names a target
    "htpasswd -nb admin $PW",
    "mysqlsh root@localhost",
    "wget -U \"Mozilla/5.0 (X11; rv:109.0) Gecko\" https://files.corp.io/a",
    "git clone https://${GIT_USER}:${GIT_TOKEN}@git.corp.io/team/app.git",
    # `@` after a path, a port or an npm scope is no credential separator
    "https://cdn.jsdelivr.net/npm/@babel/core@7.0.0/lib/index.js",
    "https://cdn.io:443/npm@3.0.1/x.js",
    "https://registry.corp.io/@scope/pkg",
    "git@github.com:org/repo.git",
    "ssh://git@host:22/repo.git",
]


@pytest.mark.parametrize("line,secret,keep", [c for cases in POSITIVES.values() for c in cases],
                         ids=[f"{fam}-{i}" for fam, cases in POSITIVES.items() for i in range(len(cases))])
def test_cli_credential_redacted_rest_kept(san, line, secret, keep):
    out = san.sanitize(line).text
    assert secret not in out, out
    for word in keep:
        assert word in out, (word, out)


@pytest.mark.parametrize("template,password,keep", AT_PASSWORDS)
def test_password_with_at_sign_redacted_whole(san, template, password, keep):
    out = san.sanitize(template.format(password)).text
    # exactly the password became one placeholder: no piece before or after an inner `@` is left
    # and the host after the last `@` is kept
    assert re.fullmatch(_PLACEHOLDER.join(re.escape(part) for part in template.split("{}")), out), out
    for word in keep:
        assert word in out, (word, out)


@pytest.mark.parametrize("line", NEGATIVES)
def test_placeholders_and_non_secrets_untouched(san, line):
    res = san.sanitize(line)
    assert not res.changed, res.text


def test_redaction_is_idempotent_on_positional_rules(san):
    """A later round must not take the user name or the salt once the password is a placeholder."""
    for line in (f"mkpasswd -m sha-512 {PW}", f"pulumi config set --secret dbPassword {PW}",
                 f"htpasswd -b .htpasswd admin {PW}", f"mosquitto_passwd -b /etc/p sensor01 {PW}"):
        once = san.sanitize(line)
        assert len(once.findings) == 1, once.findings
        assert not san.sanitize(once.text).changed
