"""The secret scrubber: every form of a known value, the credential shapes, logs and exceptions.

Expected texts are written out by hand (the encodings computed here with the standard library,
independently of the scrubber's own encoder).
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
from urllib.parse import quote

import pytest

from surrogate_dagster.scrub import (ScrubbedError, encoded_forms, install_log_scrub, register_secret_envs,
                                     scrub_exception, scrub_methods, scrub_text, scrub_value, scrubbing_errors)

TOKEN = "hf_QpZr7Lm2Xv9Kc4Tb8Nw1Ys6Ud3Fg5Hj0Ae"


@pytest.fixture(autouse=True)
def token(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


@pytest.mark.parametrize("text", [
    f"401: bad token {TOKEN}",
    b64(TOKEN),
    base64.urlsafe_b64encode(TOKEN.encode()).decode(),
    b64("user:" + TOKEN),                     # offset 5 bytes: the second alignment
    b64("ab" + TOKEN + "zz"),                 # offset 2 bytes
    b64("abc" + TOKEN),                       # offset 3: the first again
    binascii.hexlify(TOKEN.encode()).decode(),
    binascii.hexlify(TOKEN.encode()).decode().upper(),
    quote(TOKEN + "?", safe=""),
    "cut at 200: " + TOKEN[:19],              # a 16+ character piece
])
def test_every_form_is_redacted_and_nothing_decodes_to_the_token(text):
    out = scrub_text(text)
    assert "<REDACTED:HF_TOKEN>" in out
    assert TOKEN[:16] not in out and TOKEN[-16:] not in out
    for run in out.replace("<REDACTED:HF_TOKEN>", " ").split():
        for cut in range(4):
            piece = run[cut:]
            try:
                decoded = base64.b64decode(piece[:len(piece) - len(piece) % 4] + "==", validate=False)
            except (binascii.Error, ValueError):
                continue
            assert TOKEN[:12].encode() not in decoded and TOKEN[-12:].encode() not in decoded


def test_whole_values_are_one_placeholder():
    assert scrub_text(f"token={TOKEN}.") == "token=<REDACTED:HF_TOKEN>."
    assert scrub_text(f"x {TOKEN} y {TOKEN}") == "x <REDACTED:HF_TOKEN> y <REDACTED:HF_TOKEN>"


def test_ordinary_text_is_left_alone():
    text = "basic arithmetic; Bearer of bad news; the api was slow; hf_hub_download failed"
    assert scrub_text(text) == text


def test_credential_shapes_without_a_known_value():
    assert scrub_text("Authorization: Bearer abcdef123456ghijkl") == "Authorization: Bearer <REDACTED>"
    assert scrub_text('{"x-api-key": "sk-live-abcdef123"}') == '{"x-api-key": "<REDACTED>"}'
    assert scrub_text("key AKIAABCDEFGHIJKLMNOP in url") == "key <REDACTED> in url"
    assert scrub_text("hf_" + "a1" * 17) == "<REDACTED>"


def test_short_and_unset_variables_are_not_secrets(monkeypatch):
    monkeypatch.setenv("WASABI_SECRET", "abc")  # too short to match safely
    monkeypatch.delenv("HF_TOKEN")
    assert scrub_text(f"abc {TOKEN[:10]}") == f"abc {TOKEN[:10]}"


def test_registered_variables_count(monkeypatch):
    monkeypatch.setenv("SURROGATE_TEST_SCRUB_KEY", "zz-private-value-991")
    assert scrub_text("v=zz-private-value-991") == "v=zz-private-value-991"
    register_secret_envs("SURROGATE_TEST_SCRUB_KEY")
    assert scrub_text("v=zz-private-value-991") == "v=<REDACTED:SURROGATE_TEST_SCRUB_KEY>"


def test_encoded_forms_hold_the_standard_encodings():
    f = encoded_forms(TOKEN)
    assert {TOKEN, binascii.hexlify(TOKEN.encode()).decode(), quote(TOKEN, safe="")} <= f
    assert any(core in b64(TOKEN) for core in f if core not in (TOKEN,))


def test_values_nested_in_metadata_and_rows():
    row = {"detail": f"HTTP 401: {b64(TOKEN)}", "n": 3, "tags": [TOKEN, ("ok", TOKEN)]}
    # 37 bytes: 49 base64 characters depend on the token alone, then its last bits and padding
    assert scrub_value(row) == {"detail": "HTTP 401: <REDACTED:HF_TOKEN>" + b64(TOKEN)[49:],
                                "n": 3, "tags": ["<REDACTED:HF_TOKEN>", ("ok", "<REDACTED:HF_TOKEN>")]}
    assert TOKEN[:16] not in str(scrub_value(row))


def test_exception_scrubbed_in_place_keeps_its_type_and_chain():
    try:
        try:
            raise ConnectionError(f"echo {TOKEN}")
        except ConnectionError as inner:
            raise ValueError(f"lookup failed: {inner}") from inner
    except ValueError as e:
        raised, out = e, scrub_exception(e)
    assert out is raised and type(out) is ValueError
    assert str(out) == "lookup failed: echo <REDACTED:HF_TOKEN>"
    assert str(out.__cause__) == "echo <REDACTED:HF_TOKEN>"


def test_exception_whose_text_is_not_its_args_is_replaced():
    class Odd(Exception):
        def __str__(self):
            return f"odd {TOKEN}"

    out = scrub_exception(Odd())
    assert isinstance(out, ScrubbedError) and str(out) == "Odd: odd <REDACTED:HF_TOKEN>"


def test_scrubbed_methods_and_generators():
    @scrub_methods
    class Client:
        def call(self):
            raise OSError(f"HTTP 401 {TOKEN}")

        def rows(self):
            yield 1
            raise RuntimeError(f"stream {TOKEN}")

    with pytest.raises(OSError, match=r"HTTP 401 <REDACTED:HF_TOKEN>$"):
        Client().call()
    gen = Client().rows()
    assert next(gen) == 1
    with pytest.raises(RuntimeError, match=r"stream <REDACTED:HF_TOKEN>$"):
        next(gen)
    with pytest.raises(KeyError):  # an exception without a secret passes as it is
        with scrubbing_errors():
            raise KeyError("plain")


def test_log_records_are_scrubbed_with_their_exception():
    install_log_scrub()
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    log = logging.getLogger("surrogate_dagster.test_scrub")
    log.addHandler(handler)
    try:
        log.warning("token %s", TOKEN)
        log.warning("b64 " + b64(TOKEN))
        try:
            raise ValueError(f"echo {TOKEN}")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    text = buf.getvalue()
    assert TOKEN[:16] not in text and b64(TOKEN)[4:20] not in text
    assert "token <REDACTED:HF_TOKEN>" in text and "ValueError: echo <REDACTED:HF_TOKEN>" in text
