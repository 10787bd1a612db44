"""Vendor tokens with a distinctive documented shape (literal prefix, fixed structure, signature at a
fixed offset): for every such rule in `vendors`, a realistic positive (the token sits in an
assignment, JSON, XML, env or CLI line and must be gone from the sanitized text, and the rule itself
must match it there) and a near-miss negative (the prefix followed by an ordinary word, a token too
short, or the wrong alphabet: the text must come back unchanged).

Token values are generated here from each format with a seeded RNG."""
from __future__ import annotations

import random
import string

import pytest

from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig
from surrogate_dagster.sanitize.validators import has_token_run, shannon_entropy
from surrogate_dagster.sanitize.vendors import VENDOR_RULES

HEX = "0123456789abcdef"
AN = string.ascii_letters + string.digits
LAN = string.ascii_lowercase + string.digits
UAN = string.ascii_uppercase + string.digits
URL = AN + "_-"
B64 = AN + "+/"
DIG = string.digits


def _gen(seed: int, *parts) -> str:
    """Concatenate literal parts and (alphabet, length) random runs drawn from `seed`."""
    rng = random.Random(seed)
    out = []
    for p in parts:
        out.append(p if isinstance(p, str) else "".join(rng.choice(p[0]) for _ in range(p[1])))
    return "".join(out)


def _uuid(seed: int) -> str:
    return _gen(seed, (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12))


CONTEXTS = (
    'API_TOKEN = "{t}"',
    '{{"service": {{"credentials": "{t}"}}}}',
    "<setting name=\"ApiKey\"><value>{t}</value></setting>",
    "export SERVICE_TOKEN={t}",
    "curl -s -H 'Authorization: {t}' https://api.example.com/v1/items",
    "client = Client(api_key='{t}')",
)

# rule id -> (token, near-miss text)
CASES: dict[str, tuple[str, str]] = {
    "azure_identifiable_key_64": (
        _gen(1, (B64, 76), "+ASt", (B64, 5), "Q=="),
        "the apim gateway and the +ASt signature are described in the storage docs",
    ),
    "azure_identifiable_key_32": (
        _gen(2, (B64, 33), "AzCa", (B64, 5), "g="),
        "redis_cache_name = 'AzCa-prod' # AzCa prefix kept for the cache tier",
    ),
    "azure_function_key": (
        _gen(3, (URL, 44), "AzFu", (URL, 5), "w=="),
        "def call_AzFu_endpoint(route): return route  # AzFu handler",
    ),
    "azure_search_key": (
        _gen(4, (AN, 42), "AzSe", "B", (AN, 5)),
        "class AzSeSearchClient:  # wraps the AzSe index API",
    ),
    "azure_container_registry_key": (
        _gen(5, (B64, 42), "+ACR", "C", (B64, 5)),
        "registry = 'myregistry.azurecr.io'  # +ACR suffix on the login server",
    ),
    "gcp_refresh_token": (
        _gen(6, "1//0", (URL, 99)),
        "path = 'file:///tmp'  # 1//0 would be a division by zero",
    ),
    "clickhouse_cloud_secret": (
        _gen(7, "4b1d", (AN, 38)),
        "commit 4b1d9e2 fixed the parser",
    ),
    "yandex_oauth_token": (
        _gen(8, "y0_", (URL, 55)),
        "y0_offset = y0_base + height  # y0_ is the top edge",
    ),
    "yandex_iam_token": (
        _gen(9, "t1.", (URL, 30), ".", (URL, 86)),
        "t1.start(); t1.join(timeout=5)",
    ),
    "dynatrace_platform_token": (
        _gen(10, "dt0s16.", (UAN, 24), ".", (UAN, 64)),
        "dt0s16.example is not a token",
    ),
    "databricks_oauth_secret": (
        _gen(11, "dose", (HEX, 32)),
        "dose_response = fit(doses)  # dose in mg",
    ),
    "e2b_key": (
        _gen(12, "e2b_", (HEX, 40)),
        "from e2b_code_interpreter import Sandbox",
    ),
    "pixie_key": (
        "px-api-" + _uuid(13),
        "px-api-server is the name of the pixie deployment",
    ),
    "new_relic_key_more": (
        _gen(14, "NRIQ-", (UAN, 27)),
        "NRIQ-docs describe the query key",
    ),
    "new_relic_license_key": (
        _gen(15, (HEX, 36), "NRAL"),
        "the license key ends in NRAL (see the agent docs)",
    ),
    "crates_io_token": (
        _gen(16, "cio", (AN, 32)),
        "a precious ciphertext from the cio office",
    ),
    "dependency_track_key": (
        _gen(17, "odt_", (AN, 32)),
        "odt_ExportTheCurrentProjectSpreadsheets = True",
    ),
    "postman_collection_key": (
        _gen(18, "PMAT-", (UAN, 26)),
        "PMAT-SHORT is a placeholder name",
    ),
    "stackhawk_key": (
        _gen(19, "hawk.", (URL, 20), ".", (URL, 20)),
        "import hawk.client.session  # hawk.scan",
    ),
    "settlemint_token": (
        _gen(20, "sm_pat_", (AN, 16)),
        "sm_pat_short = 1",
    ),
    "rootly_key": (
        _gen(21, "rootly_", (HEX, 64)),
        "rootly_incident_id = incident.id",
    ),
    "apify_token": (
        _gen(22, "apify_api_", (AN, 36)),
        "apify_api_client = ApifyClient()",
    ),
    "langfuse_key": (
        "sk-lf-" + _uuid(23),
        "sk-lf-placeholder goes here",
    ),
    "cerebras_key": (
        _gen(24, "csk-", (LAN, 48)),
        "csk-token is the name of the cerebras secret in the vault",
    ),
    "together_key": (
        _gen(25, "tgp_v1_", (URL, 43)),
        "tgp_v1_ is the prefix of together keys",
    ),
    "deepseek_key": (
        _gen(26, "sk-", (LAN, 32)),
        "pip install scikit-learn  # formerly sk-learn; sk-abcdefghijklmnopqrstuvwxyzabcdef",
    ),
    "modal_token": (
        _gen(27, "ak-", (AN, 22)),
        "ask-the-user-for-confirmation and has-FeatureFlagsEnabledAlways",
    ),
    "elevenlabs_key": (
        _gen(28, "sk_", (HEX, 48)),
        "sk_learn_pipeline = make_pipeline(scaler)",
    ),
    "nvidia_key": (
        _gen(29, "nvapi-", (URL, 64)),
        "nvapi-docs: the NVAPI reference",
    ),
    "firecrawl_key": (
        _gen(30, "fc-", (HEX, 32)),
        "fc-layer-dimensions and fc-00000000000000000000000000000000",
    ),
    "tavily_key": (
        _gen(31, "tvly-dev-", (AN, 32)),
        "tvly-dev-key-goes-here",
    ),
    "llamacloud_key": (
        _gen(32, "llx-", (AN, 48)),
        "llx-short",
    ),
    "jina_key": (
        _gen(33, "jina_", (AN, 60)),
        "jina_embeddings_v3 = load('jina_embeddings_v3')",
    ),
    "posthog_personal_key": (
        _gen(34, "phx_", (AN, 43)),
        "phx_click handler in the Phoenix app",
    ),
    "voiceflow_key": (
        _gen(35, "VF.DM.", (HEX, 24), ".", (AN, 16)),
        "VF.DM.render() draws the dialog manager",
    ),
    "nightfall_key": (
        _gen(36, "NF-", (AN, 32)),
        "NF-kappaB-ActivationPathwaysInMacrophages",
    ),
    "adobe_client_secret": (
        _gen(37, "p8e-", (URL, 32)),
        "p8e-example",
    ),
    "adafruit_key": (
        _gen(38, "aio_", (AN, 28)),
        "async def aio_fetchUserProfilesFromServer(): pass",
    ),
    "clickup_token": (
        _gen(39, "pk_", (DIG, 8), "_", (UAN, 32)),
        "pk_12345678_short primary key column",
    ),
    "resend_key": (
        _gen(40, "re_", (AN, 8), "_", (AN, 24)),
        "re_compile_pattern_cache_for_module = {}",
    ),
    "segment_token": (
        _gen(41, "sgp_", (AN, 64)),
        "sgp_short is not a token",
    ),
    "onfido_token": (
        _gen(42, "api_live.", (URL, 11), ".", (URL, 32)),
        "api_live.status() returns the health of the live api",
    ),
    "samsara_token": (
        _gen(43, "samsara_api_", (AN, 30)),
        "samsara_api_client = SamsaraClient()",
    ),
    "zuplo_key": (
        _gen(44, "zpka_", (HEX, 32), "_", (HEX, 8)),
        "zpka_ is the prefix of zuplo keys",
    ),
    "ramp_credential": (
        _gen(45, "ramp_sec_", (AN, 48)),
        "ramp_sec_per_step = 0.5",
    ),
    "ubidots_token": (
        _gen(46, "BBFF-", (AN, 30)),
        "BBFF-short",
    ),
    "mailgun_public_key": (
        _gen(47, "pubkey-", (HEX, 32)),
        "pubkey-format: the public key header",
    ),
    "maxmind_license_key": (
        _gen(48, (AN, 6), "_", (AN, 29), "_mmk"),
        "geoip_mmk = 'see the maxmind account page'",
    ),
    "launchdarkly_key": (
        "sdk-" + _uuid(49),
        "aws-sdk-go-v2 and sdk-version-pinning",
    ),
    "lob_key": (
        _gen(50, "live_", (HEX, 35)),
        "live_reload_enabled = True  # test_ecabafdebcadefabcedbafcdebafedcbaef",
    ),
    "gocardless_token": (
        _gen(51, "sandbox_", (URL, 40)),
        "sandbox_environment_should_reset_between_runs = True",
    ),
    "flutterwave_live_key": (
        _gen(52, "FLWSECK-", (AN, 32), "-X"),
        "FLWSECK-EXAMPLE-X",
    ),
    "pubnub_key": ("pub-c-" + _uuid(54), "pub-c-style publishing"),
    "bitbucket_dc_token": (_gen(55, "BBDC-", (AN + "+/@", 44)), "BBDC-shortname"),
    "checkout_key": ("sk_test_" + _uuid(56), "sk_test_" + _uuid(56)[:20] + " (truncated)"),
    "fullstory_key": (_gen(57, "na1.", (B64, 100)), "na1.fullstory.com is the data centre host"),
    "midtrans_server_key": (_gen(58, "SB-Mid-server-", (URL, 24)), "SB-Mid-server-key goes in the env file"),
    "dropbox_long_lived_token": (
        _gen(53, (AN, 11), "AAAAAAAAAA", (URL, 43)),
        "padding = 'AAAAAAAAAA' * 4",
    ),
}

# the other literal prefixes of rule ids that span several rules (`<rule id>#<variant>`)
CASES.update({
    "new_relic_key_more#nrbr": (_gen(70, "NRBR-", (HEX, 19)), "NRBR-short and NRBR-notahexvaluehereok"),
    "langfuse_key#pk": ("pk-lf-" + _uuid(71), "pk-lf-0000 is a truncated key"),
    "modal_token#as": (_gen(77, "as-", (AN, 22)), "class-BasedViewsRenderedAsync"),
    "launchdarkly_key#mob": ("mob-" + _uuid(73), "mob-programming-session-notes"),
    "launchdarkly_key#api": ("api-" + _uuid(74), "rest-api-" + _uuid(74) + " and api-gateway"),
    "lob_key#test": (_gen(75, "test_pub_", (HEX, 31)), "test_publishes_the_event = True"),
    "pubnub_key#sub": ("sub-c-" + _uuid(78), "sub-c-section of the manual"),
    "pubnub_key#sec": (_gen(79, "sec-c-", (AN, 48)), "sec-c-levels = 3"),
    "checkout_key#sbox": (_gen(80, "sk_sbox_", ("abcdefghijklmnopqrstuvwxyz234567", 26), "#"), "sk_sbox_settings = {}"),
    "gocardless_token#live": (_gen(76, "live_", (URL, 40)),
                              "live_migration_should_keep_connections_open_always = 1"),
})

RULES_BY_ID: dict[str, list] = {}
for _r in VENDOR_RULES:
    RULES_BY_ID.setdefault(_r.id, []).append(_r)  # one id may span rules (one per literal prefix)


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None))


def _rule_hits(rule_id: str, text: str) -> list[str]:
    """Values the rule itself reports on `text`, gated as the engine gates it (keyword prefilter,
    long-run precondition, entropy floor, validator)."""
    lower = text.lower()
    out = []
    for rule in RULES_BY_ID[rule_id]:
        if not any(k in lower for k in rule.keywords):
            continue
        if rule.long_run and not has_token_run(text, 20):
            continue
        for m in rule.regex.finditer(lower if rule.on_lower else text):
            v = text[m.start(rule.group):m.end(rule.group)]
            if rule.entropy and shannon_entropy(v) < rule.entropy:
                continue
            if rule.validate is not None and not rule.validate(v):
                continue
            out.append(v)
    return out


def _rid(case: str) -> str:
    return case.split("#")[0]


def test_every_case_names_a_vendor_rule():
    assert {_rid(c) for c in CASES} <= set(RULES_BY_ID)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("ctx", range(len(CONTEXTS)))
def test_vendor_token_redacted(san: Sanitizer, case: str, ctx: int):
    token, _ = CASES[case]
    text = CONTEXTS[ctx].format(t=token)
    assert token in _rule_hits(_rid(case), text), "the rule itself must match the token in context"
    res = san.sanitize(text)
    assert token not in res.text
    # no piece of the token's random part survives either
    assert token[-12:] not in res.text


@pytest.mark.parametrize("case", sorted(CASES))
def test_vendor_near_miss_untouched(san: Sanitizer, case: str):
    _, near = CASES[case]
    assert _rule_hits(_rid(case), near) == []
    res = san.sanitize(near)
    assert res.text == near, res.findings


@pytest.mark.parametrize("token", [
    _gen(60, "live_", (AN, 30)),                  # Mollie-style: no rule of its own
    _gen(62, "test_", (AN, 32)),                  # (tails the generic rule's mix test accepts)
])
def test_shared_prefix_still_reaches_generic_rule(san: Sanitizer, token: str):
    # `live_`/`test_` belong to several services: a specific rule rejecting the tail (Lob wants hex)
    # leaves the generic prefixed-token rule free to redact it
    text = f'payments:\n  mollie: "{token}"\n'
    assert token not in san.sanitize(text).text


def test_cloudinary_url_keeps_cloud_name(san: Sanitizer):
    pair = _gen(62, (DIG, 15), ":", (URL, 27))
    text = f"CLOUDINARY_URL=cloudinary://{pair}@my-cloud"
    assert _rule_hits("cloudinary_url", text) == [pair]
    res = san.sanitize(text)
    assert pair.split(":")[1] not in res.text


def test_cloudinary_url_without_credentials_untouched(san: Sanitizer):
    text = "see the docs for the cloudinary://<api_key>:<api_secret>@<cloud_name> format"
    assert _rule_hits("cloudinary_url", text) == []
    assert san.sanitize(text).text == text


@pytest.mark.parametrize("case,parts", [
    ("modal_token", ("ak-", (AN, 22))),
    ("adafruit_key", ("aio_", (AN, 28))),
    ("nightfall_key", ("NF-", (AN, 32))),
    ("resend_key", ("re_", (AN, 8), "_", (AN, 24))),
    ("gocardless_token", ("live_", (URL, 40))),
    ("crates_io_token", ("cio", (AN, 32))),
])
def test_word_prefix_rules_catch_most_random_tails(case: str, parts: tuple):
    # rules whose prefix is a word fragment also ask the tail to look random; that test may drop
    # a few real keys (an unlucky draw with no digit and long same-case runs), never most of them
    tokens = [_gen(1000 + i, *parts) for i in range(400)]
    caught = sum(t in _rule_hits(case, f'KEY = "{t}"') for t in tokens)
    assert caught / len(tokens) >= 0.95, caught
