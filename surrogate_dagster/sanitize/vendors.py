"""Vendor token rules beyond the core set in `patterns`: fixed-prefix credentials of the services
covered by public secret-scanning rule sets (gitleaks, detect-secrets, and larger catalogues),
written from each vendor's documented token format.

Each entry is a `Rule` like those in `patterns`, so the engine's keyword prefilter applies: a rule's
regex runs only when one of its (lower-case) literal prefixes occurs in the document. Prefixes that
are also common English/code fragments carry an entropy floor and a long-token shape, so
`EAA`-like words and `sk.` attribute chains are not matched.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import _L, _LD, _R, _RD, CLOUD, JWT, RULES, SAAS, VCS, Rule
from .validators import has_b64_run, shannon_entropy

_B = r"(?![A-Za-z0-9+/=_-])"  # end of a base64-alphabet token


def _v(id_: str, cat: str, tag: str, body: str, keywords: tuple[str, ...], entropy: float = 3.0,
       left: str = _L, right: str = _R, **kw) -> Rule:
    return Rule(id_, cat, tag, left + body + right, keywords, entropy=entropy, **kw)


_UP, _LO, _DG = re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"[0-9]")


def _random_mix(v: str) -> bool:
    """At least three upper-case letters, three lower-case and three digits, and no lower-case
    run of 7+ (an English word inside an identifier)."""
    return (len(_UP.findall(v)) >= 3 and len(_LO.findall(v)) >= 3 and len(_DG.findall(v)) >= 3
            and re.search(r"[a-z]{7}", v) is None)


def _class_of(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.isupper() else 2


def _tail_mix(v: str) -> bool:
    """The part after the first `_`/`-` looks random: upper- and lower-case letters both occur,
    the character class (digit/upper/lower) changes at >= 35% of adjacent pairs (45% without any
    digit; about 62% in random base62, 20-30% in camelCase words), and there is no lower-case run
    of 9+ (an English word). For prefixes that are ordinary word fragments (`live_`, `aio_`, `ak-`),
    where the tail alone tells a key from an identifier such as `aio_fetchUserProfilesFromServer`;
    about 1-2% of random base62 tails fail it."""
    tail = re.sub(r"[^A-Za-z0-9]", "", re.split(r"[_-]", v, maxsplit=1)[-1])
    if len(tail) < 8 or not (_UP.search(tail) and _LO.search(tail)):
        return False
    changes = sum(_class_of(a) != _class_of(b) for a, b in zip(tail, tail[1:]))
    floor = 0.35 if _DG.search(tail) else 0.45
    return changes >= floor * (len(tail) - 1) and re.search(r"[a-z]{9}", tail) is None


def _hex_mix(v: str) -> bool:
    """A lower-case hex/alnum tail holds both digits and letters: `sk-` + 32 digits or 32 letters
    is a number or a word run, not a key."""
    tail = re.split(r"[_-]", v, maxsplit=1)[-1]
    return _DG.search(tail) is not None and _LO.search(tail) is not None


_B64 = r"(?<![A-Za-z0-9+/])"  # start of a base64-alphabet token
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

# Formats from the public secret-scanning catalogues (gitleaks, trufflehog, Nosey Parker,
# GitHub's supported patterns, Microsoft's identifiable-key signatures): each has a literal
# prefix, a fixed structure or a signature at a fixed offset, so it needs no keyword context.
# A keyword drops a prefix's leading e/o/t/n/r/l where the rest is still distinctive (`ive_` for
# `live_`): the prefilter checks words starting with those common letters one `in` scan each.
_MORE_RULES: tuple[Rule, ...] = (
    # ---- Azure identifiable keys: base64 keys carrying a 4-character service signature at a
    # fixed offset (32-byte keys: 33 + signature + 6 + `=`; 64-byte keys: 76 + signature + 6 + `==`).
    # The last character before the padding holds zero low bits, so it comes from a short set.
    _v("azure_identifiable_key_64", CLOUD, "SECRET_AZURE_KEY",
       r"[A-Za-z0-9+/]{76}(?:\+ASt|ACDb|\+ABa|APIM|\+AMC)[A-Za-z0-9+/]{5}[AQgw]==",
       ("+ast", "acdb", "+aba", "apim", "+amc"), entropy=4.0, left=_B64, right=_B, long_run=True),
    _v("azure_identifiable_key_32", CLOUD, "SECRET_AZURE_KEY",
       r"[A-Za-z0-9+/]{33}(?:\+ASb|\+AEh|\+ARm|AIoT|AzCa)[A-Za-z0-9+/]{5}[AEIMQUYcgkosw048]=",
       ("+asb", "+aeh", "+arm", "aiot", "azca"), entropy=4.0, left=_B64, right=_B, long_run=True),
    # Functions keys use the URL-safe alphabet
    _v("azure_function_key", CLOUD, "SECRET_AZURE_KEY", r"[A-Za-z0-9_-]{44}AzFu[A-Za-z0-9_-]{5}[AQgw]={0,2}",
       ("azfu",), entropy=4.0, left=_LD, right=_B, long_run=True),
    _v("azure_search_key", CLOUD, "SECRET_AZURE_KEY", r"[A-Za-z0-9]{42}AzSe[A-D][A-Za-z0-9]{5}", ("azse",),
       entropy=4.0, long_run=True),
    _v("azure_container_registry_key", CLOUD, "SECRET_AZURE_KEY", r"[A-Za-z0-9+/]{42}\+ACR[A-D][A-Za-z0-9+/]{5}",
       ("+acr",), entropy=4.0, left=_B64, right=_B, long_run=True),
    # Google OAuth refresh tokens: `1//0` then a long url-safe tail
    _v("gcp_refresh_token", CLOUD, "SECRET_GCP_OAUTH", r"1//0(?<![A-Za-z0-9_/:].{4})[A-Za-z0-9_-]{40,}", ("1//0",),
       entropy=3.5, left="", right=_RD, long_run=True),
    _v("clickhouse_cloud_secret", CLOUD, "SECRET_CLICKHOUSE_KEY", r"4b1d[A-Za-z0-9]{38}", ("4b1d",), entropy=3.5),
    # Yandex OAuth tokens (`y0_`) and short-lived IAM tokens (`t1.<header>.<86-char signature>`)
    _v("yandex_oauth_token", CLOUD, "SECRET_YANDEX_KEY", r"y0_[A-Za-z0-9_-]{55}", ("y0_",), entropy=3.5, right=_RD),
    _v("yandex_iam_token", CLOUD, "SECRET_YANDEX_KEY",
       r"t1\.(?<![A-Za-z0-9_.].{3})[A-Za-z0-9_-]{8,}={0,2}\.[A-Za-z0-9_-]{86}={0,2}", ("t1.",), entropy=3.5, left="",
       right=_B, long_run=True),
    _v("dynatrace_platform_token", CLOUD, "SECRET_DYNATRACE_TOKEN", r"dt0s\d\d\.[A-Z0-9]{8,24}\.[A-Z0-9]{64}",
       ("dt0s",)),
    _v("databricks_oauth_secret", CLOUD, "SECRET_DATABRICKS_TOKEN", r"dose[a-f0-9]{32}", ("dose",)),
    _v("e2b_key", CLOUD, "SECRET_E2B_KEY", r"e2b_[a-f0-9]{40}", ("2b_",)),
    _v("pixie_key", CLOUD, "SECRET_NEW_RELIC_KEY", r"px-(?:api|dep)-" + _UUID, ("px-api-", "px-dep-"), left=_LD,
       right=_RD),
    # (one rule per literal prefix from here on: a literal-led pattern lets `re` skip ahead to it,
    # where a leading alternation is tried at every position)
    _v("new_relic_key_more", SAAS, "SECRET_NEW_RELIC_KEY", r"NRIQ-[A-Za-z0-9_-]{25,32}", ("iq-",), right=_RD),
    _v("new_relic_key_more", SAAS, "SECRET_NEW_RELIC_KEY", r"NRBR-[a-f0-9]{19}", ("br-",), right=_RD),
    # license keys: 36 hex then the `NRAL` suffix
    _v("new_relic_license_key", SAAS, "SECRET_NEW_RELIC_KEY", r"[a-f0-9]{36}NRAL", ("nral",)),
    # ---- VCS / CI / registries
    _v("crates_io_token", VCS, "SECRET_CRATES_TOKEN", r"cio[A-Za-z0-9]{32}", ("cio",), entropy=3.5,
       validate=_tail_mix),
    _v("dependency_track_key", VCS, "SECRET_DEPENDENCY_TRACK_KEY", r"odt_[A-Za-z0-9]{32,255}", ("dt_",),
       entropy=3.5, validate=_tail_mix),
    _v("postman_collection_key", VCS, "SECRET_POSTMAN_KEY", r"PMAT-[A-Z0-9]{26}", ("pmat-",)),
    _v("stackhawk_key", VCS, "SECRET_STACKHAWK_KEY", r"hawk\.[A-Za-z0-9_-]{20}\.[A-Za-z0-9_-]{20}", ("hawk.",),
       entropy=3.5, right=_RD),
    _v("settlemint_token", VCS, "SECRET_SETTLEMINT_TOKEN", r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}",
       ("sm_aat_", "sm_pat_", "sm_sat_")),
    _v("rootly_key", VCS, "SECRET_ROOTLY_KEY", r"rootly_[a-f0-9]{64}", ("y_",)),
    _v("apify_token", VCS, "SECRET_APIFY_TOKEN", r"apify_api_[A-Za-z0-9]{36}", ("apify_api_",)),
    # ---- AI / data services
    _v("langfuse_key", SAAS, "SECRET_LANGFUSE_KEY", r"sk-lf-" + _UUID, ("sk-lf-",), right=_RD),
    _v("langfuse_key", SAAS, "SECRET_LANGFUSE_KEY", r"pk-lf-" + _UUID, ("pk-lf-",), right=_RD),
    _v("cerebras_key", SAAS, "SECRET_CEREBRAS_KEY", r"csk-[a-z0-9]{48}", ("csk-",), entropy=3.5),
    _v("together_key", SAAS, "SECRET_TOGETHER_KEY", r"tgp_v1_[A-Za-z0-9_-]{40,50}", ("gp_v1_",), entropy=3.5,
       right=_RD),
    # DeepSeek: `sk-` + 32 lower-case alphanumerics (OpenAI's legacy keys are 48 mixed-case)
    _v("deepseek_key", SAAS, "SECRET_DEEPSEEK_KEY", r"sk-[a-z0-9]{32}", ("sk-",), entropy=3.5, validate=_hex_mix,
       left=_LD),
    # Modal token ids/secrets: `ak-`/`as-` + 22 base62; both prefixes are word fragments, so the
    # tail must look random
    _v("modal_token", SAAS, "SECRET_MODAL_TOKEN", r"ak-[A-Za-z0-9]{22}", ("ak-",), entropy=3.5,
       validate=_tail_mix, left=_LD),
    _v("modal_token", SAAS, "SECRET_MODAL_TOKEN", r"as-[A-Za-z0-9]{22}", ("as-",), entropy=3.5,
       validate=_tail_mix, left=_LD),
    _v("elevenlabs_key", SAAS, "SECRET_ELEVENLABS_KEY", r"sk_[a-f0-9]{48}", ("sk_",), entropy=3.5),
    _v("nvidia_key", SAAS, "SECRET_NVIDIA_KEY", r"nvapi-[A-Za-z0-9_-]{64}", ("vapi-",), entropy=3.5, right=_RD),
    _v("firecrawl_key", SAAS, "SECRET_FIRECRAWL_KEY", r"fc-[a-f0-9]{32}", ("fc-",), validate=_hex_mix, left=_LD),
    _v("tavily_key", SAAS, "SECRET_TAVILY_KEY", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}", ("tvly-",), entropy=3.5),
    _v("llamacloud_key", SAAS, "SECRET_LLAMACLOUD_KEY", r"llx-[A-Za-z0-9]{48}", ("lx-",), entropy=3.5),
    _v("jina_key", SAAS, "SECRET_JINA_KEY", r"jina_[A-Za-z0-9]{60}", ("jina_",), entropy=3.5),
    _v("posthog_personal_key", SAAS, "SECRET_POSTHOG_KEY", r"phx_[A-Za-z0-9_]{43,48}", ("phx_",), entropy=3.5),
    _v("voiceflow_key", SAAS, "SECRET_VOICEFLOW_KEY", r"VF\.(?:(?:DM|WS)\.)?[a-fA-F0-9]{24}\.[A-Za-z0-9]{16}",
       ("vf.",), entropy=3.5),
    _v("nightfall_key", SAAS, "SECRET_NIGHTFALL_KEY", r"NF-[A-Za-z0-9]{32}", ("nf-",), entropy=3.5,
       validate=_tail_mix, left=_LD),
    # ---- SaaS / payments / messaging
    _v("adobe_client_secret", SAAS, "SECRET_ADOBE_KEY", r"p8e-[A-Za-z0-9_-]{32}", ("p8e-",), entropy=3.5, right=_RD),
    _v("adafruit_key", SAAS, "SECRET_ADAFRUIT_KEY", r"aio_[A-Za-z0-9]{28}", ("aio_",), entropy=3.5,
       validate=_tail_mix),
    _v("clickup_token", SAAS, "SECRET_CLICKUP_TOKEN", r"pk_[0-9]{6,9}_[0-9A-Z]{32}", ("pk_",), entropy=3.5),
    _v("resend_key", SAAS, "SECRET_RESEND_KEY", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}", ("re_",), entropy=3.5,
       validate=_tail_mix),
    _v("segment_token", SAAS, "SECRET_SEGMENT_TOKEN", r"sgp_[A-Za-z0-9]{64}", ("sgp_",), entropy=3.5),
    _v("onfido_token", SAAS, "SECRET_ONFIDO_TOKEN",
       r"api_(?:live|sandbox)(?:_us|_ca)?\.[A-Za-z0-9_-]{11}\.[A-Za-z0-9_-]{32}", ("api_live", "api_sandbox"),
       entropy=3.5, right=_RD),
    _v("samsara_token", SAAS, "SECRET_SAMSARA_TOKEN", r"samsara_api_[A-Za-z0-9]{30}", ("samsara_api_",)),
    _v("zuplo_key", SAAS, "SECRET_ZUPLO_KEY", r"zpka_[a-f0-9]{32}_[a-f0-9]{8}", ("zpka_",)),
    _v("ramp_credential", SAAS, "SECRET_RAMP_KEY", r"ramp_(?:id|sec)_[A-Za-z0-9]{40,48}", ("ramp_id_", "ramp_sec_"),
       entropy=3.5),
    _v("ubidots_token", SAAS, "SECRET_UBIDOTS_TOKEN", r"BBFF-[A-Za-z0-9]{30}", ("bbff-",), entropy=3.5),
    _v("mailgun_public_key", SAAS, "SECRET_MAILGUN_KEY", r"pubkey-[a-f0-9]{32}", ("pubkey-",)),
    _v("maxmind_license_key", SAAS, "SECRET_MAXMIND_KEY", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", ("_mmk",),
       entropy=3.5),
    # LaunchDarkly SDK, mobile and API access keys: a kind prefix then a UUID
    *(_v("launchdarkly_key", SAAS, "SECRET_LAUNCHDARKLY_KEY", kind + "-" + _UUID, (kind + "-",), left=_LD, right=_RD)
      for kind in ("sdk", "mob", "api")),
    # Lob: `live_`/`test_` + 35 hex (secret), `live_pub_`/`test_pub_` + 31 hex (publishable)
    *(_v("lob_key", SAAS, "SECRET_LOB_KEY", env + r"_(?:[a-f0-9]{35}|pub_[a-f0-9]{31})", (env[1:] + "_",),
         validate=_hex_mix) for env in ("live", "test")),
    # GoCardless access tokens: `live_`/`sandbox_` + 40 url-safe characters
    *(_v("gocardless_token", SAAS, "SECRET_GOCARDLESS_TOKEN", env + r"_[A-Za-z0-9_-]{40}", (kw,),
         entropy=3.5, validate=_tail_mix, right=_RD) for env, kw in (("live", "ive_"), ("sandbox", "sandbox_"))),
    _v("flutterwave_live_key", SAAS, "SECRET_FLUTTERWAVE_KEY",
       r"FLW(?:(?:SECK|PUBK)-[A-Za-z0-9]{32}-X|SECK_TEST[a-hA-H0-9]{12})", ("flwseck", "flwpubk"), right=_RD),
    # Dropbox long-lived tokens: 11 characters, ten `A`s, then 43 url-safe characters
    _v("dropbox_long_lived_token", SAAS, "SECRET_DROPBOX_TOKEN", r"[A-Za-z0-9]{11}AAAAAAAAAA[A-Za-z0-9_-]{43}",
       ("aaaaaaaaaa",), right=_RD, long_run=True),
    # PubNub publish/subscribe keys (`pub-c-`/`sub-c-` + UUID) and secret keys (`sec-c-` + 48)
    _v("pubnub_key", SAAS, "SECRET_PUBNUB_KEY", r"pub-c-" + _UUID, ("pub-c-",), left=_LD, right=_RD),
    _v("pubnub_key", SAAS, "SECRET_PUBNUB_KEY", r"sub-c-" + _UUID, ("sub-c-",), left=_LD, right=_RD),
    _v("pubnub_key", SAAS, "SECRET_PUBNUB_KEY", r"sec-c-[A-Za-z0-9]{48}", ("sec-c-",), entropy=3.5, left=_LD),
    _v("bitbucket_dc_token", VCS, "SECRET_BITBUCKET_TOKEN", r"BBDC-[A-Za-z0-9+/@_-]{40,50}", ("bbdc-",),
       entropy=3.5, right=r"(?![A-Za-z0-9+/@_=-])"),
    # Checkout.com secret keys: `sk_[test_|sbox_]` + UUID (v1) or `sk_sbox_` + 26 base32 + a check character
    _v("checkout_key", SAAS, "SECRET_CHECKOUT_KEY",
       r"sk_(?:(?:test_|sbox_)?" + _UUID + r"|sbox_[a-z2-7]{26}[a-z2-7*#$=])", ("sk_",), right=_RD),
    _v("fullstory_key", SAAS, "SECRET_FULLSTORY_KEY", r"na1\.[A-Za-z0-9+/]{100}={0,2}", ("na1.",), entropy=4.0,
       right=_B),
    _v("midtrans_server_key", SAAS, "SECRET_MIDTRANS_KEY", r"(?:SB-)?Mid-server-[A-Za-z0-9_-]{24}", ("mid-server-",),
       entropy=3.0, left=_LD, right=_RD),
    # Cloudinary URLs carry `api_key:api_secret`: the pair is replaced, the cloud name kept
    Rule("cloudinary_url", SAAS, "SECRET_CLOUDINARY_KEY", r"cloudinary://(\d{15}:[A-Za-z0-9_-]{27})@",
         ("cloudinary://",), group=1, entropy=3.0),
)


VENDOR_RULES: tuple[Rule, ...] = (
    # ---- VCS / CI / registries / developer platforms
    _v("bitbucket_app_password", VCS, "SECRET_BITBUCKET_TOKEN", r"ATBB[A-Za-z0-9_=.-]{28,40}", ("atbb",),
       right=_RD),
    _v("atlassian_api_token", VCS, "SECRET_ATLASSIAN_TOKEN", r"AT(?:ATT|CTT)[A-Za-z0-9_=-]{60,300}", ("atatt", "atctt"),
       right=_RD),
    _v("sourcegraph_token", VCS, "SECRET_SOURCEGRAPH_TOKEN",
       r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}", ("sgp_",)),
    _v("docker_hub_pat", VCS, "SECRET_DOCKER_TOKEN", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}", ("dckr_",), right=_RD),
    _v("clojars_token", VCS, "SECRET_CLOJARS_TOKEN", r"CLOJARS_[a-z0-9]{60}", ("clojars_",)),
    _v("sonarqube_token", VCS, "SECRET_SONAR_TOKEN", r"sq[pua]_[a-f0-9]{40}", ("sqp_", "squ_", "sqa_")),
    _v("buildkite_token", VCS, "SECRET_BUILDKITE_TOKEN", r"bkua_[a-f0-9]{40}", ("bkua_",)),
    _v("jfrog_identity_token", VCS, "SECRET_ARTIFACTORY_KEY", r"cmVmdGtuOjAxOj[A-Za-z0-9]{40,}", ("cmvmdgtuojaxoj",)),
    _v("octopus_deploy_key", VCS, "SECRET_OCTOPUS_KEY", r"API-[A-Z0-9]{26,32}", ("api-",), entropy=3.5, long_run=True),
    _v("azure_devops_pat", VCS, "SECRET_AZURE_DEVOPS_PAT", r"[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}", ("azdo",)),
    _v("harness_pat", VCS, "SECRET_HARNESS_TOKEN", r"(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
       ("pat.", "sat."), long_run=True),
    _v("prefect_key", SAAS, "SECRET_PREFECT_KEY", r"pnu_[A-Za-z0-9]{36}", ("pnu_",)),
    _v("readme_key", SAAS, "SECRET_README_KEY", r"rdme_[a-z0-9]{70}", ("dme_",)),
    _v("typeform_token", SAAS, "SECRET_TYPEFORM_TOKEN", r"tfp_[A-Za-z0-9_.=-]{59}", ("fp_",), right=_RD),
    _v("figma_token", SAAS, "SECRET_FIGMA_TOKEN", r"figd_[A-Za-z0-9_-]{40,}", ("figd_",), right=_RD),
    _v("contentful_token", SAAS, "SECRET_CONTENTFUL_TOKEN", r"CFPAT-[A-Za-z0-9_-]{43}", ("cfpat-",), right=_RD),
    _v("airtable_pat", SAAS, "SECRET_AIRTABLE_TOKEN", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", ("pat",), long_run=True),
    _v("asana_pat", SAAS, "SECRET_ASANA_TOKEN", r"[12](?<![\w/][12])/\d{13,16}(?:/\d{13,16})?:[a-f0-9]{32}", ("1/", "2/"), left="", long_run=True),
    _v("linear_like_frameio", SAAS, "SECRET_FRAMEIO_TOKEN", r"fio-u-[A-Za-z0-9_=-]{64}", ("fio-u-",), right=_RD),
    _v("tailscale_key", SAAS, "SECRET_TAILSCALE_KEY",
       r"tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{10,}-[A-Za-z0-9]{20,}", ("skey-",)),
    _v("netlify_token", CLOUD, "SECRET_NETLIFY_TOKEN", r"nf[pc]_[A-Za-z0-9]{36,40}", ("fp_", "fc_")),
    _v("vercel_token", CLOUD, "SECRET_VERCEL_TOKEN", r"vc[pikar]_[A-Za-z0-9]{24,60}", ("vcp_", "vci_", "vck_", "vca_", "vcr_"),
       entropy=3.5),
    _v("render_key", CLOUD, "SECRET_RENDER_KEY", r"rnd_[A-Za-z0-9]{32}", ("d_",), entropy=3.5),
    _v("supabase_token", CLOUD, "SECRET_SUPABASE_TOKEN", r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{31,})",
       ("sbp_", "sb_secret_"), right=_RD),
    _v("neon_key", CLOUD, "SECRET_NEON_KEY", r"napi_[a-z0-9]{64}", ("api_",)),
    _v("planetscale_token", CLOUD, "SECRET_PLANETSCALE_TOKEN", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,64}",
       ("pscale_",), right=_RD),
    _v("flyio_token", CLOUD, "SECRET_FLYIO_TOKEN", r"(?:fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})",
       ("fo1_", "fm1", "fm2"), right=_B),
    _v("cloudflare_origin_ca", CLOUD, "SECRET_CLOUDFLARE_KEY", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",)),
    _v("tencent_secret_id", CLOUD, "SECRET_TENCENT_KEY", r"AKID[A-Za-z0-9]{32}", ("akid",), entropy=3.5),
    _v("scaleway_key", CLOUD, "SECRET_SCALEWAY_KEY", r"SCW[A-Z0-9]{17}", ("scw",), entropy=3.0, long_run=True),
    # Yandex Cloud API keys (AQVN...) and IAM key ids (YC...); the short-lived `t1.` IAM tokens are left out
    _v("yandex_api_key", CLOUD, "SECRET_YANDEX_KEY", r"AQVN[A-Za-z0-9_-]{35,38}", ("aqvn",), entropy=3.5, right=_RD),
    _v("yandex_key_id", CLOUD, "SECRET_YANDEX_KEY", r"YC[A-Za-z0-9_-]{38}", ("yc",), entropy=3.5, right=_RD,
       long_run=True),
    _v("openshift_token", CLOUD, "SECRET_OPENSHIFT_TOKEN", r"sha256~[A-Za-z0-9_-]{43}", ("sha256~",), right=_RD),
    _v("dynatrace_token", CLOUD, "SECRET_DYNATRACE_TOKEN", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}", ("dt0c01.",)),
    _v("new_relic_key", SAAS, "SECRET_NEW_RELIC_KEY", r"NR(?:AK|II|JS|AA|RA)-[A-Za-z0-9-]{19,32}", ("ak-", "ii-", "js-", "aa-", "ra-"),
       right=_RD),
    _v("age_secret_key", SAAS, "SECRET_AGE_KEY", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
       ("age-secret-key-1",)),
    _v("onepassword_secret_key", SAAS, "SECRET_1PASSWORD_KEY",
       r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}", ("a3-",),
       right=_RD),
    _v("onepassword_service_token", SAAS, "SECRET_1PASSWORD_KEY", r"ops_eyJ[A-Za-z0-9+/_-]{100,}={0,3}", ("ps_eyj",),
       right=_B),
    _v("mapbox_secret_token", SAAS, "SECRET_MAPBOX_TOKEN", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", ("sk.eyj",),
       right=_RD),
    _v("facebook_access_token", SAAS, "SECRET_FACEBOOK_TOKEN", r"EAA[A-Za-z0-9]{80,}", ("eaa",), entropy=4.0, long_run=True),
    _v("twitter_bearer", SAAS, "SECRET_TWITTER_TOKEN", r"A{21,23}[A-Za-z0-9%]{30,}", ("aaaaaaaaaaaaaaaaaaaaa",), long_run=True),
    _v("langsmith_key", SAAS, "SECRET_LANGSMITH_KEY", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", ("sv2_",)),
    _v("groq_key", SAAS, "SECRET_GROQ_KEY", r"gsk_[A-Za-z0-9]{48,56}", ("gsk_",), entropy=3.5),
    _v("xai_key", SAAS, "SECRET_XAI_KEY", r"xai-[A-Za-z0-9]{70,90}", ("xai-",), entropy=3.5),
    _v("replicate_token", SAAS, "SECRET_REPLICATE_TOKEN", r"r8_[A-Za-z0-9]{37}", ("8_",), entropy=3.5),
    _v("openrouter_key", SAAS, "SECRET_OPENROUTER_KEY", r"sk-or-v1-[a-f0-9]{64}", ("sk-or-v1-",)),
    _v("fireworks_key", SAAS, "SECRET_FIREWORKS_KEY", r"fw_[A-Za-z0-9]{24,}", ("fw_",), entropy=3.5),
    _v("pinecone_key", SAAS, "SECRET_PINECONE_KEY", r"pcsk_[A-Za-z0-9]{5,}_[A-Za-z0-9]{50,}", ("pcsk_",)),
    _v("stripe_webhook_secret", SAAS, "SECRET_STRIPE_KEY", r"whsec_[A-Za-z0-9+/]{32,}={0,2}", ("whsec_",), right=_B),
    _v("braintree_token", SAAS, "SECRET_BRAINTREE_TOKEN", r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
       ("access_token$",)),
    _v("plaid_token", SAAS, "SECRET_PLAID_TOKEN",
       r"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
       ("access-sandbox-", "access-development-", "access-production-"), right=_RD),
    _v("razorpay_key", SAAS, "SECRET_RAZORPAY_KEY", r"rzp_(?:live|test)_[A-Za-z0-9]{14}", ("zp_",)),
    _v("shippo_token", SAAS, "SECRET_SHIPPO_TOKEN", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", ("shippo_",)),
    _v("duffel_token", SAAS, "SECRET_DUFFEL_TOKEN", r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}", ("duffel_",), right=_RD),
    _v("easypost_key", SAAS, "SECRET_EASYPOST_KEY", r"EZ[AT]K[A-Za-z0-9]{54}", ("zak", "ztk")),
    _v("flutterwave_key", SAAS, "SECRET_FLUTTERWAVE_KEY", r"FLW(?:SECK|PUBK)_TEST-[a-hA-H0-9]{12,32}(?:-X)?",
       ("flwseck", "flwpubk"), right=_RD),
    _v("brevo_key", SAAS, "SECRET_BREVO_KEY", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", ("xkeysib-",)),
    _v("infracost_key", SAAS, "SECRET_INFRACOST_KEY", r"ico-[A-Za-z0-9]{32}", ("ico-",), entropy=3.5),
    _v("intra42_secret", SAAS, "SECRET_INTRA42_KEY", r"s-s4t2(?:ud|af)-[a-f0-9]{64}", ("s-s4t2",)),
    _v("scalingo_token", SAAS, "SECRET_SCALINGO_TOKEN", r"tk-us-[A-Za-z0-9_-]{48}", ("k-us-",), right=_RD),
    _v("defined_networks_key", SAAS, "SECRET_DEFINED_KEY", r"dnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52}", ("dnkey-",),
       right=_RD),
    _v("authress_key", SAAS, "SECRET_AUTHRESS_KEY",
       r"(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120}",
       ("acc_", "acc-"), right=_B, long_run=True),
    _v("salesforce_token", SAAS, "SECRET_SALESFORCE_TOKEN", r"00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}", ("00d",), long_run=True),
    _v("zoho_token", SAAS, "SECRET_ZOHO_TOKEN", r"1000\.[a-f0-9]{32}\.[a-f0-9]{32}", ("1000.",), long_run=True),
    _v("firebase_fcm_key", SAAS, "SECRET_FIREBASE_KEY", r"AAAA[A-Za-z0-9_-]{7}:[A-Za-z0-9_-]{140}", ("aaaa",),
       right=_RD, long_run=True),
    _v("dropbox_token", SAAS, "SECRET_DROPBOX_TOKEN", r"sl\.(?:u\.)?[A-Za-z0-9_-]{130,}", ("sl.",), right=_RD, long_run=True),
    _v("hubspot_pat", SAAS, "SECRET_HUBSPOT_TOKEN", r"pat-(?:na|eu)1-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
       ("pat-na1-", "pat-eu1-")),
    _v("discord_webhook", SAAS, "SECRET_DISCORD_WEBHOOK", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
       ("/api/webhooks/",), left="", right=_RD),
    _v("teams_webhook", SAAS, "SECRET_TEAMS_WEBHOOK",
       r"https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@-]{36,}/IncomingWebhook/[A-Za-z0-9]{32}/[A-Za-z0-9-]{36}",
       ("webhook.office.com",), left="", right=_RD),
    _v("shopify_other", SAAS, "SECRET_SHOPIFY_TOKEN", r"shpua_[a-fA-F0-9]{32}", ("shpua_",)),
    _v("heroku_key_v1", CLOUD, "SECRET_HEROKU_KEY", r"HRKU-AA[A-Za-z0-9_-]{58}", ("hrku-aa",), right=_RD),
    _v("jwt_like_session", JWT, "SECRET_SESSION_TOKEN", r"ghsession_[A-Za-z0-9]{40}", ("ghsession_",)),
) + _MORE_RULES

# A prefixed token of a service without its own rule: a short lower-case vendor prefix, up to two
# `_`/`-`-separated kinds (`live`, `pat`, `sk`), then a long tail that is random by character mix;
# code identifiers of this shape (`test_getUserName2`) fail the mix test. The regex starts at the
# separator before the tail (`_`/`-` are rarer than letters, so `re` enters it less often) and the
# prefix is checked backwards from there.
_TAIL = re.compile(r"[_-]([A-Za-z0-9]{28,100})(?![A-Za-z0-9+/=_-])")
_PREFIX_BACK = re.compile(r"(?<![A-Za-z0-9_.-])(?!(?:sha|md|blake|sm|ripemd)\d)[a-z][a-z0-9]{1,9}(?:[_-][a-z0-9]{2,8}){0,2}\Z")


# Prefixes several services share (`live_` is Lob's, GoCardless's and Mollie's): a specific rule's
# "no" on one of these does not settle the token, so the generic rule still looks at it.
_SHARED_PREFIXES = frozenset({"live_", "ive_", "test_", "est_", "sandbox_", "pk_", "re_", "ak-", "as-", "sdk-",
                              "mob-", "aio_", "fc-", "nf-"})
# keywords of the specific rules that are whole prefixes (>= 3 characters, ending in a separator)
_OWNED_PREFIXES = tuple(sorted({k for r in RULES + VENDOR_RULES for k in r.keywords
                                if len(k) >= 3 and k[-1] in "_-" and k not in _SHARED_PREFIXES}
                               | {"bedrock-api-key-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-ant-"}))


def detect_generic_prefixed(text: str, lower: str) -> Iterator[Candidate]:
    """`<vendor>_[<kind>_]<random tail>` tokens of services with no rule of their own."""
    if not has_b64_run(text, 28):
        return  # no tail could match
    for m in _TAIL.finditer(text):
        pm = _PREFIX_BACK.search(text, max(0, m.start() - 28), m.start())
        if pm is None:
            continue
        prefix = lower[pm.start():m.start() + 1]
        if any(prefix.startswith(k) for k in _OWNED_PREFIXES):
            continue  # a format with its own rule (`sk-proj-`, `bedrock-api-key-`): that rule's "no" stands
        v = m.group(1)
        if shannon_entropy(v) >= 4.2 and _random_mix(v):
            yield Candidate(m.start(1), m.end(1), SAAS, "SECRET_API_KEY", "generic_prefixed_token", 2)
