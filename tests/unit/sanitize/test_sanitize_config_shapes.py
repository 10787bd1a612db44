"""Credential shapes in configs and commands: JSON name/value objects, XML credential elements
with a value child, commands continued over lines, word passphrases."""
from __future__ import annotations

import pytest

from surrogate_dagster.sanitize.validators import join_continuations

PW = "Qv7#pLm2!xWz"



@pytest.mark.parametrize("text", [
    f'{{"values": [{{"key": "client_secret", "value": "{PW}", "type": "secret", "enabled": true}}]}}',
    f'"environment": [\n  {{"name": "DB_PASSWORD",\n   "value": "{PW}"}}\n]',
    f'[{{"ParameterKey": "MasterUserPassword", "ParameterValue": "{PW}"}}]',
    f"<AdministratorPassword>\n  <Value>{PW}</Value>\n  <PlainText>true</PlainText>\n</AdministratorPassword>",
    f"<dict><key>x</key><Password>\n<string>{PW}</string></Password></dict>",
    f"docker login registry.corp.example \\\n    -u ci \\\n    -p {PW}",
    f"mysql -h db \\\n  -u root \\\n  -p{PW} app",
    f"docker login `\n  -u ci `\n  -p {PW} registry.corp.example",
    f"curl https://api.corp.example \\\n  -u admin:{PW}",
    'oras login registry.corp.example -u jdoe -p meadow_basalt_sierra',
    'ansible-playbook site.yml --extra-vars "ansible_become_pass=birch.correct.sierra.horse36 v=2"',
    'payload = "{\\"user\\": \\"svc\\", \\"password\\": \\"zephyr.beacon.zenith.bison11\\"}"',
    f'auth := smtp.PlainAuth("", "alerts@corp.example", "{PW}", "smtp.corp.example")',
])
def test_credential_is_redacted(regex_sanitizer, text):
    out = regex_sanitizer.sanitize(text)
    for secret in (PW, "meadow_basalt_sierra", "birch.correct.sierra.horse36", "zephyr.beacon.zenith.bison11"):
        assert secret not in out.text


@pytest.mark.parametrize("text", [
    '{"key": "baseUrl", "value": "https://api.corp.example"}',
    '{"name": "DB_PASSWORD_FILE", "value": "/run/secrets/db"}',
    '{"name": "LOG_LEVEL", "value": "debug"}',
    "<AdministratorPassword>\n  <Value></Value>\n</AdministratorPassword>",
    "<Password><Value>${ADMIN_PASSWORD}</Value></Password>",
    "password = config.db.password",
    "token = settings.api.token_value",
    "docker login -u ci --password-stdin \\\n  registry.corp.example",
    "Application Default Credentials (`google.auth.default`).",
    "mysql -u root -p db_password",
])
def test_names_paths_and_references_are_kept(regex_sanitizer, text):
    out = regex_sanitizer.sanitize(text)
    assert not [f for f in out.findings if f.category != "emails"], out.text


def test_continuations_keep_offsets():
    text = "cmd \\\n  -p x `\r\n y ^\nz"
    joined = join_continuations(text)
    assert joined == "cmd " + "  " + "  -p x " + "   " + " y " + "  " + "z"
    assert len(joined) == len(text)
