"""Redaction by value: every occurrence of a value judged secret, in every text of a row."""
from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from surrogate_dagster.curation.sanitize_stage import sanitize_rows
from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig

PW = "Hx7#kq92Lm!v"
TOKEN = "q8F1xJ9mZ0kT4bWn2RcV7pLs"


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None))


# ---------------------------------------------------------------- repeated values in one text
def test_repeated_value_after_keyword_is_redacted_everywhere(san):
    out = san.sanitize(f"token = '{TOKEN}' | '{TOKEN}'\nprint('{TOKEN}')").text
    assert out == "token = '<SECRET_TOKEN_1>' | '<SECRET_TOKEN_1>'\nprint('<SECRET_TOKEN_1>')"


def test_repeated_password_in_prose_gets_the_same_placeholder(san):
    res = san.sanitize(f'password = "{PW}"\nthen run: login admin {PW}')
    assert PW not in res.text
    assert res.text.count("<SECRET_PASSWORD_1>") == 2
    assert [f.rule for f in res.findings] == ["assignment", "same_value"]


def test_encoded_forms_of_a_found_value(san):
    b64 = base64.b64encode(PW.encode()).decode()
    said = base64.b64encode(f"log in as ops using {PW} today".encode()).decode()
    text = (f'password = "{PW}"\nurl: https://example.org/login?p={quote(PW, safe="")}\n'
            f"blob {b64}\nhex {PW.encode().hex()}\nnote {said}")
    out = san.sanitize(text).text
    for form in (PW, quote(PW, safe=""), b64, PW.encode().hex(), said):
        assert form not in out, form
    assert "note <BASE64_SECRET_PASSWORD_1>" in out  # a run whose decoded text holds the value


def test_short_values_match_whole_tokens_only(san):
    # `Zq7x9p` is the password; inside `aZq7x9pb` it is part of another token and stays
    out = san.sanitize('pwd = "Zq7x9p"\nvalue Zq7x9p and aZq7x9pb').text
    assert out == 'pwd = "<SECRET_PASSWORD_1>"\nvalue <SECRET_PASSWORD_1> and aZq7x9pb'


def test_plain_words_and_short_numbers_are_not_propagated(san):
    # the quoted value is a password where it stands; the word elsewhere is the word
    out = san.sanitize('password = "production"\nif env == "production": deploy()').text
    assert out == 'password = "<SECRET_PASSWORD_1>"\nif env == "production": deploy()'


def test_idempotent_after_value_redaction(san):
    text = f"token = '{TOKEN}' | '{TOKEN}' {base64.b64encode(TOKEN.encode()).decode()}"
    once = san.sanitize(text).text
    assert san.sanitize(once).text == once


# ---------------------------------------------------------------- values in two texts of a row
def test_value_in_two_turns(san):
    user = f"my db password is set: PASSWORD={PW}"
    assistant = f"I will connect with {PW} now."
    a, b = san.sanitize_row([user, assistant])
    assert PW not in a.text and PW not in b.text
    assert b.text == "I will connect with <SECRET_PASSWORD_1> now."
    assert [f.rule for f in b.findings] == ["same_value"]


def test_value_found_in_a_later_turn_is_redacted_in_an_earlier_one(san):
    first = f"the result was {TOKEN}, keep it"
    second = f"export API_TOKEN={TOKEN}"
    a, b = san.sanitize_row([first, second])
    assert a.text == "the result was <SECRET_TOKEN_1>, keep it"
    assert b.text == "export API_TOKEN=<SECRET_TOKEN_1>"
    assert a.counts["passwords"] == 1


def test_tool_call_and_its_result(san):
    call = ('<tool_call>\n' + json.dumps({"name": "db_login", "arguments": {"user": "ops", "password": PW}})
            + '\n</tool_call>')
    result = json.dumps({"status": "ok", "echo": {"user": "ops", "secret_used": PW}})
    a, b = san.sanitize_row([call, result])
    assert PW not in a.text and PW not in b.text
    assert json.dumps(PW)[1:-1] not in b.text
    ph = "<SECRET_PASSWORD_1>"
    assert ph in a.text and ph in b.text


def test_tool_arguments_as_an_escaped_string(san):
    # OpenAI-style tool calls carry `arguments` as a JSON string: the value is escaped once more
    pw = 'Xb\\c9Xq7Lm2'
    call = json.dumps({"name": "login", "arguments": json.dumps({"password": pw})})
    result = f"logged in with {pw}"
    a, b = san.sanitize_row([call, result])
    assert b.text == "logged in with <SECRET_PASSWORD_1>"
    assert "<SECRET_PASSWORD_1>" in a.text


def test_row_texts_without_secrets_are_untouched(san):
    texts = ["def add(a, b):\n    return a + b\n", "print(add(1, 2))"]
    assert [r.text for r in san.sanitize_row(texts)] == texts
    assert not any(r.changed for r in san.sanitize_row(texts))


def test_sanitize_row_refuses_non_text(san):
    with pytest.raises(TypeError):
        san.sanitize_row(["ok", None])  # type: ignore[list-item]


def test_curation_stage_redacts_across_messages(san):
    rows = [{"messages": [{"role": "user", "content": f"use client_secret: {TOKEN}"},
                          {"role": "assistant", "content": f"Calling the API with {TOKEN}."},
                          {"role": "tool", "content": f'{{"token": "{TOKEN}", "ok": true}}'}]},
            {"messages": [{"role": "user", "content": "nothing here"}]}]
    res = sanitize_rows(rows, san)
    msgs = res.rows[0]["messages"]
    assert all(TOKEN not in m["content"] for m in msgs)
    assert msgs[1]["content"] == "Calling the API with <SECRET_PASSWORD_1>."
    assert res.changed == 1 and res.rows[1] is rows[1]
