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
from .patterns import _L, _R, _RD, CLOUD, JWT, RULES, SAAS, VCS, Rule
from .validators import has_b64_run, shannon_entropy

_B = r"(?![A-Za-z0-9+/=_-])"  # end of a base64-alphabet token


def _v(id_: str, cat: str, tag: str, body: str, keywords: tuple[str, ...], entropy: float = 3.0,
       left: str = _L, right: str = _R, **kw) -> Rule:
    return Rule(id_, cat, tag, left + body + right, keywords, entropy=entropy, **kw)


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
)

# A prefixed token of a service without its own rule: a short lower-case vendor prefix, up to two
# `_`/`-`-separated kinds (`live`, `pat`, `sk`), then a long tail that is random by character mix;
# code identifiers of this shape (`test_getUserName2`) fail the mix test. The regex starts at the
# separator before the tail (`_`/`-` are rarer than letters, so `re` enters it less often) and the
# prefix is checked backwards from there.
_TAIL = re.compile(r"[_-]([A-Za-z0-9]{28,100})(?![A-Za-z0-9+/=_-])")
_PREFIX_BACK = re.compile(r"(?<![A-Za-z0-9_.-])(?!(?:sha|md|blake|sm|ripemd)\d)[a-z][a-z0-9]{1,9}(?:[_-][a-z0-9]{2,8}){0,2}\Z")
_UP, _LO, _DG = re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"[0-9]")


def _random_mix(v: str) -> bool:
    """At least three upper-case letters, three lower-case and three digits, and no lower-case
    run of 7+ (an English word inside an identifier)."""
    return (len(_UP.findall(v)) >= 3 and len(_LO.findall(v)) >= 3 and len(_DG.findall(v)) >= 3
            and re.search(r"[a-z]{7}", v) is None)


# keywords of the specific rules that are whole prefixes (>= 3 characters, ending in a separator)
_OWNED_PREFIXES = tuple(sorted({k for r in RULES + VENDOR_RULES for k in r.keywords
                                if len(k) >= 3 and k[-1] in "_-"} | {"bedrock-api-key-", "sk-proj-", "sk-svcacct-",
                                                                     "sk-admin-", "sk-ant-"}))


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
