"""Passwords as positional arguments of credential-taking APIs (`code_args`)."""
from __future__ import annotations

import pytest


PW = "Tr0ub4dor&3x"



@pytest.mark.parametrize("code", [
    f"requests.get(url, auth=('admin', '{PW}'))",
    f'r = requests.post(url, auth=HTTPBasicAuth("deploy", "{PW}"))',
    f'server.login("alerts@corp.com", "{PW}")',
    f"ftp.login('backup', '{PW}')",
    f'var cred = new NetworkCredential("svc_build", "{PW}");',
    f'conn = DriverManager.getConnection("jdbc:mysql://db:3306/app", "root", "{PW}");',
    f'$conn = mysqli_connect("localhost", "wp", "{PW}", "wordpress");',
    f"$pdo = new PDO('mysql:host=db;dbname=shop', 'shop', '{PW}');",
    f"db = pymysql.connect('10.0.0.5', 'report', '{PW}', 'sales')",
    f"ssh.connect('10.0.0.9', 22, 'ubuntu', '{PW}')",
    f'conn.simple_bind_s("cn=admin,dc=corp,dc=com", "{PW}")',
    f'req.SetBasicAuth("ci", "{PW}")',
    f'new UsernamePasswordCredentials("jenkins", "{PW}")',
    f'new PasswordAuthentication("mailer", "{PW}".toCharArray())',
    f'db, err := sql.Open("mysql", "app:{PW}@tcp(127.0.0.1:3306)/app")',
    f'session = aiohttp.ClientSession(auth=aiohttp.BasicAuth(\n    "svc",\n    "{PW}",\n))',
])
def test_positional_password_is_redacted(regex_sanitizer, code):
    out = regex_sanitizer.sanitize(code)
    assert PW not in out.text
    assert any(f.rule in ("credential_argument", "go_mysql_dsn") for f in out.findings) or out.changed


@pytest.mark.parametrize("code", [
    "smtp.login(user, password)",
    'server.login("", "")',
    'ftp.login("${FTP_USER}", "${FTP_PASS}")',
    "auth(token)",
    'raise ValueError("Cannot specify both `api_key` and AWS credentials (`aws_access_key`, `aws_secret_key`)")',
    'conn = connect("db.internal", "app", os.environ["DB_PASSWORD"])',
    'client.login("admin", "<password>")',
    'db, err := sql.Open("mysql", os.Getenv("DSN"))',
])
def test_variables_templates_and_prose_are_kept(regex_sanitizer, code):
    assert regex_sanitizer.sanitize(code).text == code
