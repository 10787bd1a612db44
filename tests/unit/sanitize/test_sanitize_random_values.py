"""Keyword-free random-token values (`random_values`): service-named keys caught by their shape,
identifiers, paths, model ids and digests left alone."""
from __future__ import annotations

import random
import string

import pytest

from surrogate_dagster.sanitize.random_values import random_token

ALNUM = string.ascii_letters + string.digits



def _token(seed: int, n: int = 32, alphabet: str = ALNUM) -> str:
    rng = random.Random(seed)
    while True:
        v = "".join(rng.choice(alphabet) for _ in range(n))
        if random_token(v):
            return v


CONTEXTS = [
    "ABBYSALE={v}",
    "<abbysale>{v}</abbysale>",
    "ENV ABBYSALE {v}",
    "ARG WIDGETLY_ACCESS {v}",
    "my abbysale api key is {v}",
    "gh secret set WIDGETLY --body {v}",
    '{{"widgetly": "{v}"}}',
    "widgetly:\n  account: {v}\n",
    "$config['widgetly'] = '{v}';",
    "widgetly => '{v}',",
]


@pytest.mark.parametrize("i", range(len(CONTEXTS)))
def test_service_named_random_value_is_redacted(regex_sanitizer, i):
    ctx = CONTEXTS[i]
    v = _token(i)
    out = regex_sanitizer.sanitize(ctx.format(v=v))
    assert v not in out.text and out.changed


@pytest.mark.parametrize("text", [
    "warnings.warn(msg, category=RemovedInDjango40Warning)",
    'tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen3-MoE-15B-A2B")',
    "req: ray_client_pb2.DataRequest,",
    'policy = "Policy-Min-TLS-1-0-2019-07"',
    "notfounderror = LapackILP64NotFoundError",
    '"arn:aws:cloud9:us-east-2:123456789012:environment:8d9967e2f0624182b74e7690ad69ebEX"',
    "commit_id = 9f2c1e7b3d8a4f6e0b5c2d9a7e1f3b8c4d6a0e2f",
    "image_digest: sha256-Xk9fQ2mZp7LrT4vB8nW1cY6hJ3sD5gA0",
    "request_id = Xk9fQ2mZp7LrT4vB8nW1cY6h",
    "public_key = Xk9fQ2mZp7LrT4vB8nW1cY6hJ3sD5gA0",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx3kq9Pz7yVbLmT5R2wQ8nC4hJ6dF1sA0uE9oK3iX7v user@host",
    "path = src/main/resources/Application2Config",
    "DNS_ALPN_H3_JOB_WON_WITHOUT_RACE = dnsAlpnH3JobWonWithoutRace",
])
def test_identifiers_paths_and_public_values_are_kept(regex_sanitizer, text):
    assert regex_sanitizer.sanitize(text).text == text


def test_random_token_accepts_generated_credentials_and_rejects_words():
    rng = random.Random(7)
    tokens = ["".join(rng.choice(ALNUM) for _ in range(40)) for _ in range(500)]
    assert sum(map(random_token, tokens)) >= 0.97 * len(tokens)
    for word in ("AbstractSingletonProxyFactoryBean2", "getHTTPResponse2Handler", "X509CertificateChainValidator",
                 "abcdefghABCDEFGH01234567", "0123456789abcdef0123456789abcdef", "dGhpcyBpcyBwbGFpbiB0ZXh0IGluIGJhc2U2NA=="):
        assert not random_token(word), word
