"""The rules that scrub API keys and gateway tokens from text (end to end through the client and a run:
tests/integration/test_llm_key_scrub.py)."""

from __future__ import annotations

import secrets
import string

from surrogate_dagster.llm.client import KEY_WINDOW, scrub


ALPHABET = string.ascii_letters + string.digits + "-_"


KEY = "sk-ant-api03-" + "".join(secrets.choice(ALPHABET) for _ in range(93)) + "AA"


GATEWAY_TOKEN = "gw_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))


def leaked(text: str, secret: str = KEY) -> list[str]:
    """The 16-character windows of ``secret`` found in ``text``."""
    return [secret[i:i + KEY_WINDOW] for i in range(len(secret) - KEY_WINDOW + 1)
            if secret[i:i + KEY_WINDOW] in text]


def test_scrub_rules():
    body = (f'{{"x-api-key": "{KEY}", "authorization": "Bearer {GATEWAY_TOKEN}"}} '
            f"Authorization: Basic dXNlcjpwYXNzd29yZA== key cut: {KEY[20:60]} "
            "aws AKIA7QX2M4RT9LPZ3KVW")
    out = scrub(body, (KEY,))
    assert not leaked(out) and GATEWAY_TOKEN not in out and "dXNlcjpwYXNzd29yZA" not in out
    assert "AKIA7QX2M4RT9LPZ3KVW" not in out  # the sanitizer's secret rules run too
    assert scrub("HTTP 500: overloaded, try later") == "HTTP 500: overloaded, try later"
