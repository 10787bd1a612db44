"""An inference server's error reply reaches exceptions and logs scrubbed of credentials."""

from dataclasses import dataclass

from surrogate_dagster.inference.client import server_error

KEY = "vllm-Zq8rT2mXp4LkW9sB7nYc3Hd6Fj1Ga5Ue"  # made up for the test


@dataclass
class Reply:
    status_code: int
    text: str


def test_echoed_key_and_credentials_are_scrubbed():
    body = (f'{{"error": "unauthorized", "request_headers": {{"Authorization": "Bearer {KEY}"}}, '
            '"detail": "retry with aws_secret_access_key=Hq3vN8/tR2pLx7Kc9ZmW4bYs1GdJf6UoTe5Ai0Qr"}')
    err = str(server_error(Reply(401, body), f"Bearer {KEY}"))
    assert err.startswith("inference server: HTTP 401: ")
    assert KEY not in err and KEY[:16] not in err and "Hq3vN8/tR2pLx7Kc" not in err
    assert "unauthorized" in err


def test_a_long_body_is_cut_after_scrubbing():
    body = "x" * 290 + f" token {KEY}"  # the key straddles the cut
    err = str(server_error(Reply(500, body), KEY))
    assert KEY[:8] not in err and len(err) <= len("inference server: HTTP 500: ") + 300
