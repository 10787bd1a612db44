"""Secrets and PII sanitizer for training rows.

    from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig
    res = Sanitizer(SanitizerConfig(ner_model=None)).sanitize(text)
    res.text, res.counts, res.findings
    results = Sanitizer(...).sanitize_row([user_turn, tool_call, tool_result])   # one row

Categories: cloud_credentials, vcs_ci_tokens, saas_api_keys, private_keys, jwt_bearer_session,
passwords, emails, phones, public_ips, payment_national_ids (regex + validators), person_names,
addresses (NER, `ner_model`). MAC addresses are reported under public_ips (`MAC_ADDRESS_n`),
checksummed crypto wallet addresses under payment_national_ids (`CRYPTO_WALLET_n`).

Rule families: `patterns` (core provider formats), `vendors` (wider vendor-prefix catalogue and
generic prefixed tokens), `detectors` (assignments, URLs, headers, high entropy), `config`
(name/value pairs in XML, YAML env lists and JSON), `cli` (command-line flags, connection
strings), `code_args` (passwords as positional arguments of known APIs), `random_values`
(random-looking values in value positions), `formats` (.pgpass, .netrc, server-config directives,
ipsec.secrets, password hashes, decoded key literals, bare DER and JWK private keys), `wallets`,
`mac`, `pii`, `encoded` (base64 and hex), `ner`, `keyword_tokens` (a service word from
`service_names` or a glued credential word near a credential-shaped token, prefix-shaped tokens,
tokens in URL paths), `stated` (INI credentials, Vault unseal keys, passwords stated in prose,
Kerberos and pwdump hashes).

Redaction is by value (`same_value`): a value judged secret is replaced everywhere it occurs in
the document, and with `Sanitizer.sanitize_row(texts)` in every text of a row, in its encoded
forms too, always with the same placeholder.
"""
from .detectors import Candidate
from .engine import Finding, SanitizeResult, Sanitizer, SanitizerConfig
from .ner import DEFAULT_NER_MODEL, NERBackend, SpacyNER, TransformersNER, load_ner
from .patterns import CATEGORIES, NER_CATEGORIES, PII_CATEGORIES, SECRET_CATEGORIES
from .placeholders import PLACEHOLDER_RE

__all__ = [
    "CATEGORIES", "Candidate", "DEFAULT_NER_MODEL", "Finding", "NERBackend", "NER_CATEGORIES", "PII_CATEGORIES",
    "PLACEHOLDER_RE", "SECRET_CATEGORIES", "SanitizeResult", "Sanitizer", "SanitizerConfig", "SpacyNER",
    "TransformersNER", "load_ner",
]
