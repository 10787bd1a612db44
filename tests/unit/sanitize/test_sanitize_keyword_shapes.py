"""The keyword-near-token, prefix-shape, URL-path and stated-credential rules: for each, a hit
and the look-alike it must leave alone (values are hand-written random draws)."""
from __future__ import annotations

import pytest

from surrogate_dagster.sanitize import SECRET_CATEGORIES, Sanitizer, SanitizerConfig
from surrogate_dagster.sanitize.keyword_tokens import credential_shaped
from surrogate_dagster.sanitize.validators import looks_like_placeholder

HEX32 = "9f3ac17be04d58a2c6f1907e3b5d24a8"
HEX40 = "4b7e19c0d2a85f36e1b09c7d4a2f58e3b61c90d7"
B62 = "Xq7Lm2pZ9vT4kR8wN3bH6cJ1"
B36 = "k3v9xq2m7p0w4z8t1r6n5b2c9d4f7h3j"
PW = "Tr0ub4dor&3x"


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None))


def redacted(san: Sanitizer, text: str, value: str) -> bool:
    return value not in san.sanitize(text).text


def untouched(san: Sanitizer, text: str) -> bool:
    return not any(f.category in SECRET_CATEGORIES for f in san.sanitize(text).findings)


# ---------------------------------------------------------------- the shape test itself
@pytest.mark.parametrize("v", [HEX32, HEX40, B62, B36, "0f8a2c1e-7b3d-4e96-a5c2-9d1f6b3e8a70",
                               "q8F1xJ/9mZ0kT4bWn2RcV7pLs+Yd3Hg6Ue5Ko0Aa"])
def test_credential_shapes(v):
    assert credential_shaped(v)


@pytest.mark.parametrize("v", ["abcdef0123456789abcdef0123456789",  # sequential dummy
                               "getUserProfileFromServer2",          # camelCase identifier
                               "base64encodedstring1abc",            # lower-case words, two digit runs
                               "0000000000000000000000000000000",    # one character
                               "12345678901234567890123",            # digits only
                               "deadbeef",                            # short
                               "your_api_key_goes_here_123"])
def test_not_credential_shapes(v):
    assert not credential_shaped(v)


# ---------------------------------------------------------------- service word near a token
@pytest.mark.parametrize("text", [
    f"MAILGUNKEY {HEX32}",
    f"mailgun '{B36}'",
    f"# Datadog API key\n{HEX32}",
    f'client = AlgoliaClient("{B62}")',
    f"| sendbird | `{B62}` |",
])
def test_service_word_then_token(san, text):
    token = text.split()[-1].strip("`'\"|()")
    token = next(v for v in (HEX32, B36, B62) if v in text)
    assert redacted(san, text, token), text


@pytest.mark.parametrize("text", [
    f"Mailgun request id {HEX32[:8]}-{HEX32[8:12]}-4abc-8def-{HEX32[:12]}",
    f"Upgrade datadog to 4.12.1 (commit {HEX40})",
    f"docker pull datadog/agent@sha256:{HEX32}{HEX32}",
    f"algolia_project_id = '{HEX32[:24]}'",
    "mailgun abcdef0123456789abcdef0123456789",
    f"see https://github.com/mailgun/mailgun-js/commit/{HEX40}",
])
def test_service_word_next_to_public_values(san, text):
    assert untouched(san, text), text


def test_glued_credential_word_of_an_unknown_vendor(san):
    assert redacted(san, f"ZORBLAXKEY {HEX40}", HEX40)
    assert redacted(san, f"zorblaxApiKey {B62}", B62)
    assert redacted(san, f'ZORBLAX_TOKEN "{B36}"', B36)


def test_glued_words_that_are_words(san):
    # `monkey`, `turkey`, `hotkey`: not vendor + credential word; and a public key stays
    assert untouched(san, f"monkey {HEX40}")
    assert untouched(san, f"hotkey {B62}")
    assert untouched(san, f"ZORBLAX_PUBLIC_KEY {B62}")


# ---------------------------------------------------------------- prefix-shaped tokens
@pytest.mark.parametrize("tok", [f"qz_live_{B62}xY", f"nx.pat.{HEX40}", f"wimg-v1-{B36}", f"acme_{HEX40}"])
def test_prefix_shaped_tokens(san, tok):
    assert redacted(san, f'client = Client("{tok}")', tok)


@pytest.mark.parametrize("text", [
    f'"id": "call_{B62}"',                 # tool-call ids
    f'"id": "toolu_01{B62}"',
    "pk_live_j5krY8XTgIcDaHDb3YrsAfCl",    # a publishable key
    f"/static/js/main.{HEX40}.js",         # a hashed asset name
    f"sha256_{HEX32}{HEX32}",              # a digest name
    f"cus_{B62}",                          # an API object id
    f"mypy 1.6.0+dev.{HEX40} (compiled: no)",  # a PEP 440 local version carrying a commit
    "The value is a Workspace ID (for example, `wrkspc_Q9xk2LmZ7vT4pR8wN3bH6cJ1`).",  # named an id
    "group (`rlg_01VPTCmyiu5ZLsWkcxYG2pY8`)",  # a time-ordered typed id
])
def test_prefix_shaped_look_alikes(san, text):
    assert untouched(san, text), text


# ---------------------------------------------------------------- URL paths
@pytest.mark.parametrize("text, tok", [
    (f"POST https://api.acme.io/webhook/{B36}", B36),
    (f"https://hooks.chatco.com/services/{B62}", B62),
    (f"https://maker.acme.com/trigger/build/with/key/{B62}", B62),
    (f"https://acme.io/api/v1/{HEX32}/telemetry", HEX32),
])
def test_url_path_tokens(san, text, tok):
    assert redacted(san, text, tok)


@pytest.mark.parametrize("text", [
    "https://example.com/webhooks/stripe/events",
    "See /hooks/pre-commit and /hooks/post-merge",
    f"https://cdn.example.com/{HEX40}/logo.png",
    f"https://github.com/acme/widgets/commit/{HEX40}",
])
def test_url_path_look_alikes(san, text):
    assert untouched(san, text), text


# ---------------------------------------------------------------- stated credentials
def test_ini_credentials_even_as_plain_words(san):
    assert redacted(san, "[Server]\nHost=10.0.0.4\nUser=admin\nPassword=hxpacxcidtsc\n", "hxpacxcidtsc")
    assert untouched(san, "[Credentials]\nUsername=svc\nPassword=\n")
    assert untouched(san, "[Server]\nPassword=${DB_PASSWORD}\n")
    # without an INI section header a bare word after `password=` stays a code reference
    assert untouched(san, "password=hxpacxcidtsc")


def test_vault_unseal_keys(san):
    key = "2iHBIxPgvDsaC45aTCvUG/yUhwB7UiLm0NExXy14lJz7"
    assert redacted(san, f"vault operator unseal {key}", key)
    assert redacted(san, f"Unseal Key 3: {key}", key)
    assert untouched(san, "vault operator unseal")
    assert untouched(san, "vault operator unseal -migrate")


@pytest.mark.parametrize("text", [f"The default password is '{PW}'.", f"I reset it, new password {PW} works now",
                                  f"The password for the db user is {PW}", f"Credentials are admin / {PW} (change it)"])
def test_prose_passwords(san, text):
    assert redacted(san, text, PW), text


@pytest.mark.parametrize("text", ["The password must be at least 12 characters long.",
                                  "The default password is empty; set one.", "If the password is wrong, retry.",
                                  "def login(user, password: Optional[str] = None):", 'password: "real_key"'])
def test_prose_without_passwords(san, text):
    assert untouched(san, text), text


def test_kerberos_and_pwdump_hashes(san):
    asrep = "$krb5asrep$23$svc_sql@CORP.LOCAL:" + HEX32 + "$" + HEX40 * 5
    assert redacted(san, asrep, asrep)
    nt = "8846f7eaee8fb117ad06bdd830b7586c"
    line = f"Administrator:500:aad3b435b51404eeaad3b435b51404ee:{nt}:::"
    out = san.sanitize(line).text
    assert nt not in out and "aad3b435b51404eeaad3b435b51404ee" in out  # the empty-password LM constant stays
    assert untouched(san, "Total: $5$20 after discount")
    assert untouched(san, "Guest:501:aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0:::")


def test_jenkins_encrypted_secret_is_not_a_template(san):
    sec = "{AQAAABAAAAAQp8Yc3x0kR7mVd2LqW9sT4bN6eJ1hG5fZ}"
    assert not looks_like_placeholder(sec)
    assert looks_like_placeholder("{user_name}")
    assert redacted(san, f"<credentials>\n  <id>deploy</id>\n  <password>{sec}</password>\n</credentials>", sec)


# ---------------------------------------------------------------- placeholders and form fields
def test_a_random_key_holding_a_dummy_word_is_a_key(san):
    v = "q9ULaFakeTC61LxjsyS8ChW762eOELmrBm1oDZ"
    assert not looks_like_placeholder(v)
    assert redacted(san, f'API_KEY = "{v}"', v)
    for dummy in ("fake-token-123", "dummy_password", "sample123", "your-api-key-here"):
        assert looks_like_placeholder(dummy), dummy


@pytest.mark.parametrize("text", [
    f'<input type="hidden" name="authenticity_token" value="{B62}{B62}+/Aa==" />',
    f'<meta name="csrf-token" content="{B62}{HEX32}">',
    f"<input type='hidden' name='csrfmiddlewaretoken' value='{B62}{B62}'>",
    f'<input name="__RequestVerificationToken" type="hidden" value="{B62}-{B62}_{B62}" />',
])
def test_anti_forgery_form_fields_are_public(san, text):
    assert untouched(san, text), text


def test_a_secret_in_another_hidden_input_is_still_found(san):
    assert redacted(san, f'<input type="hidden" name="api_key" value="{B62}">', B62)
