"""Provider token rules (categories 1-5): fixed-format credentials found by prefix and shape.

Each rule carries lower-case keywords; the engine runs a rule's regex only when one keyword
occurs in the lower-cased document (gitleaks' prefilter idea), so a clean document costs a
handful of substring scans. Entropy floors reject obvious dummies (`ghp_xxxx...`, `AKIAZZZ...`).
Regexes are written from the providers' documented token formats.
"""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Callable

CLOUD = "cloud_credentials"
VCS = "vcs_ci_tokens"
SAAS = "saas_api_keys"
PKEY = "private_keys"
JWT = "jwt_bearer_session"
PASSWORDS = "passwords"
EMAILS = "emails"
PHONES = "phones"
IPS = "public_ips"
IDS = "payment_national_ids"
PERSONS = "person_names"
ADDRESSES = "addresses"

SECRET_CATEGORIES = (CLOUD, VCS, SAAS, PKEY, JWT, PASSWORDS)
PII_CATEGORIES = (EMAILS, PHONES, IPS, IDS)
NER_CATEGORIES = (PERSONS, ADDRESSES)
CATEGORIES = SECRET_CATEGORIES + PII_CATEGORIES + NER_CATEGORIES

# Token boundaries: a token must not be glued to other token characters on either side.
_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"
_LD = r"(?<![A-Za-z0-9_-])"   # for token alphabets that include '-'
_RD = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True)
class Rule:
    """One fixed-format credential: regex, prefilter keywords, entropy floor, placeholder tag."""

    id: str
    category: str
    tag: str
    pattern: str
    keywords: tuple[str, ...]
    group: int = 0
    entropy: float = 0.0
    validate: Callable[[str], bool] | None = None
    flags: int = 0
    on_lower: bool = False  # match the lower-cased text (same offsets): faster than (?i)
    # every match holds >= 20 characters of [A-Za-z0-9+/_-] in a row: skipped on a text without
    # such a run. Set on rules whose keywords are too common to filter (`.`, `s.`, `sk`).
    long_run: bool = False
    # a literal-led pattern every match contains (searched first; the rule is skipped without it)
    # for rules whose own pattern starts with a common character and cannot skip ahead
    requires: str = ""
    regex: re.Pattern = field(init=False, repr=False, compare=False)
    requires_regex: re.Pattern | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(_literal_first(self.pattern), self.flags))
        object.__setattr__(self, "requires_regex", re.compile(self.requires) if self.requires else None)


_LIT = re.compile(r"(?:[A-Za-z0-9_-]|\\\.)+")


def _literal_first(pattern: str) -> str:
    """Move a leading boundary look-behind after the token's literal prefix.

    `(?<![A-Za-z0-9_])ghp_...` makes `re` evaluate the look-behind at every position;
    `ghp_(?<![A-Za-z0-9_].{4})...` lets it skip to the literal first (same matches)."""
    for lb in (_L, _LD):
        if pattern.startswith(lb):
            m = _LIT.match(pattern, len(lb))
            if m and len(m.group(0)) >= 2 and pattern[m.end():m.end() + 1] not in ("?", "*", "+", "{"):
                n = len(m.group(0).replace("\\.", "."))
                return m.group(0) + f"(?<!{lb[4:-1]}.{{{n}}})" + pattern[m.end():]
    return pattern


def _not_example(v: str) -> bool:
    return not v.endswith("EXAMPLE")


def _random_looking(v: str) -> bool:
    """At least two of lower/upper/digit and not a dotted name: `get_session_id` and
    `botocore.httpsession.URLLib3Session` are code, `4f9a0c...` is a value."""
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", v):
        return False
    return (v != v.upper()) + (v != v.lower()) + any(c.isdigit() for c in v) >= 2


def _jwt_header_ok(v: str) -> bool:
    """The first segment must decode to a JSON object: rejects look-alikes and truncated headers."""
    head = v.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode("latin-1").strip()
    except (binascii.Error, ValueError):
        return False
    return raw.startswith("{") and raw.endswith("}")


RULES: tuple[Rule, ...] = (
    # ---- (1) cloud credentials
    Rule("aws_access_key_id", CLOUD, "SECRET_AWS_ACCESS_KEY",
         _L + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _R,
         ("akia", "asia", "abia", "acca", "a3t"), entropy=3.0, validate=_not_example),
    Rule("aws_secret_access_key", CLOUD, "SECRET_AWS_SECRET_KEY",
         r"(?i)aws[\w.-]{0,20}?(?:secret|sk)[\w.-]{0,20}[\\\"' \t]*(?:=|:=|:|=>|,)[\\\"' \t]*"
         r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", ("aws",), group=1, entropy=3.0),
    Rule("aws_bedrock_short_lived_key", CLOUD, "SECRET_AWS_BEDROCK_KEY",
         r"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&._-]*", ("bedrock-api-key-",)),
    Rule("aws_bedrock_key", CLOUD, "SECRET_AWS_BEDROCK_KEY",
         _L + r"ABSK[A-Za-z0-9+/]{109,269}={0,2}(?![A-Za-z0-9+/=])", ("absk",), entropy=3.0),
    Rule("gcp_api_key", CLOUD, "SECRET_GCP_API_KEY", _L + r"AIza[0-9A-Za-z_-]{35}" + _RD,
         ("aiza",), entropy=3.5),
    Rule("gcp_oauth_secret", CLOUD, "SECRET_GCP_OAUTH", _L + r"GOCSPX-[0-9A-Za-z_-]{28}" + _RD,
         ("gocspx-",), entropy=3.0),
    Rule("gcp_oauth_token", CLOUD, "SECRET_GCP_OAUTH", _L + r"ya29\.[0-9A-Za-z_-]{30,}" + _RD,
         ("ya29.",), entropy=3.5),
    Rule("azure_ad_client_secret", CLOUD, "SECRET_AZURE_CLIENT_SECRET",
         r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
         ("q~",), entropy=3.0),
    Rule("azure_storage_key", CLOUD, "SECRET_AZURE_STORAGE_KEY",
         r"(?i)(?:AccountKey|SharedAccessKey|azure[\w.-]{0,20}key)[\\\"' \t]*[=:][\\\"' \t]*"
         r"([A-Za-z0-9+/]{86}==|[A-Za-z0-9+/]{43}=)", ("accountkey", "sharedaccesskey", "azure"),
         group=1, entropy=3.5),
    Rule("azure_sas_sig", CLOUD, "SECRET_AZURE_SAS", r"(?i)[?&]sig=([A-Za-z0-9%+/]{40,}={0,2})",
         ("sig=",), group=1, entropy=3.5),
    Rule("alibaba_access_key", CLOUD, "SECRET_ALIBABA_KEY", _L + r"LTAI[A-Za-z0-9]{20}" + _R,
         ("ltai",), entropy=3.0),
    Rule("digitalocean_token", CLOUD, "SECRET_DIGITALOCEAN_TOKEN",
         _L + r"do[opr]_v1_[a-f0-9]{64}" + _R, ("_v1_",), entropy=3.0),
    Rule("heroku_key", CLOUD, "SECRET_HEROKU_KEY", _L + r"HRKU-[A-Za-z0-9_-]{60}" + _RD,
         ("hrku-",), entropy=3.0),
    # ---- (2) VCS, CI and package-registry tokens
    Rule("github_token", VCS, "SECRET_GITHUB_TOKEN", _L + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _R,
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), entropy=3.0, long_run=True),
    Rule("github_fine_grained_pat", VCS, "SECRET_GITHUB_TOKEN",
         _L + r"github_pat_[A-Za-z0-9_]{60,255}" + _R, ("github_pat_",), entropy=3.0),
    # GitLab's documented token lengths per prefix (routable tokens carry a `.xx.yyyyyyy` tail)
    Rule("gitlab_token", VCS, "SECRET_GITLAB_TOKEN",
         _L + r"(?:glpat-[\w-]{20}|glpat-[\w-]{27,300}\.[0-9a-z]{2}\.[0-9a-z]{7,9}|gl(?:dt|rt|ft|ffct|wt)-[\w-]{20}"
         r"|glsoat-[\w-]{20,50}|glcbt-(?:[0-9a-fA-F]{1,5}_)?[\w-]{20}|glimt-[\w-]{25}|glptt-[\w-]{40}"
         r"|glagent-[\w-]{50,1024}|gloas-[\w-]{64})" + _RD,
         ("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "glimt-", "glagent-", "gloas-",
          "glft-", "glsoat-", "glffct-", "glwt-"), entropy=3.0),
    Rule("gitlab_runner_registration", VCS, "SECRET_GITLAB_TOKEN", _L + r"GR1348941[A-Za-z0-9_-]{20,50}" + _RD,
         ("gr1348941",), entropy=3.0),
    Rule("npm_token", VCS, "SECRET_NPM_TOKEN", _L + r"npm_[A-Za-z0-9]{36}" + _R, ("npm_",), entropy=3.0),
    Rule("npmrc_auth", VCS, "SECRET_NPM_TOKEN",
         r"(?i)//[^\s:]+/:_(?:authToken|password|auth)(?:\s*=\s*|[ \t]+)([^\s$'\"{<][^\s'\"]{7,})",
         ("_authtoken", "_password", ":_auth"), group=1, entropy=2.5),
    Rule("pypi_token", VCS, "SECRET_PYPI_TOKEN", _L + r"pypi-AgE[A-Za-z0-9_-]{50,}" + _RD,
         ("pypi-age",), entropy=3.0),
    Rule("rubygems_token", VCS, "SECRET_RUBYGEMS_TOKEN", _L + r"rubygems_[a-f0-9]{48}" + _R,
         ("rubygems_",), entropy=3.0),
    Rule("nuget_key", VCS, "SECRET_NUGET_KEY", _L + r"oy2[a-z0-9]{43}" + _R, ("oy2",), entropy=3.5),
    # Always-on rules (their keywords are everywhere) start with a character class and check the
    # preceding character with a look-behind placed after it: a leading look-behind makes `re`
    # try the whole pattern at every position.
    Rule("artifactory_key", VCS, "SECRET_ARTIFACTORY_KEY",
         r"A(?<![^\s=:\"]A)(?:KC[A-Za-z0-9]{10,}|P[0-9A-F][A-Za-z0-9]{8,})(?![A-Za-z0-9])", ("akc", "ap")),
    Rule("circleci_token", VCS, "SECRET_CIRCLECI_TOKEN", _L + r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}" + _R,
         ("ccipat_",), entropy=3.0),
    # ---- (3) SaaS and AI API keys
    Rule("slack_token", SAAS, "SECRET_SLACK_TOKEN",
         # xoxb-<digits>-..., xoxp-<digits>-<digits>-<digits>-<hex>, xoxe.xoxp-1-<long>: at least two
         # dash groups and one run of >= 6 digits or a long random tail
         _L + r"xox[abposrce](?:\.xox[a-z])?(?:-[0-9]{1,2})?-(?=[\w-]*(?:\d{6}|[A-Za-z0-9]{40}))[0-9A-Za-z]+(?:-[0-9A-Za-z]+){1,5}"
         + _RD, ("xox",), entropy=2.5),
    Rule("slack_app_token", SAAS, "SECRET_SLACK_TOKEN", _L + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+" + _RD,
         ("xapp-",), entropy=3.0),
    Rule("slack_webhook", SAAS, "SECRET_SLACK_WEBHOOK",
         r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
         ("hooks.slack.com",)),
    Rule("stripe_key", SAAS, "SECRET_STRIPE_KEY", _L + r"(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,247}" + _R,
         ("sk_", "rk_"), entropy=2.5),
    Rule("openai_key", SAAS, "SECRET_OPENAI_KEY",
         _L + r"sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}" + _RD,
         ("t3blbkfj",), entropy=3.0),
    Rule("openai_key_v2", SAAS, "SECRET_OPENAI_KEY", _L + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{58,}" + _RD,
         ("sk-proj-", "sk-svcacct-", "sk-admin-"), entropy=3.5),
    Rule("openai_legacy_key", SAAS, "SECRET_OPENAI_KEY", _L + r"sk-[A-Za-z0-9]{48}" + _R, ("sk-",), entropy=4.0),
    Rule("anthropic_key", SAAS, "SECRET_ANTHROPIC_KEY",
         _L + r"sk-ant-(?:api|admin|sid)\d\d-[A-Za-z0-9_-]{93}AA" + _RD, ("sk-ant-",), entropy=3.0),
    Rule("huggingface_token", SAAS, "SECRET_HF_TOKEN", _L + r"(?:hf_|api_org_)[A-Za-z0-9]{34}" + _R,
         ("hf_", "api_org_"), entropy=3.0),
    Rule("sendgrid_key", SAAS, "SECRET_SENDGRID_KEY", _L + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _RD,
         ("sg.",), entropy=3.0),
    # one rule per two-letter prefix: a pattern led by a literal pair lets `re` skip to it, where an
    # alternation (`SK|AC`) is tried at every `S` and `A`
    Rule("twilio_key", SAAS, "SECRET_TWILIO_KEY", r"SK(?<![A-Za-z0-9_].{2})[0-9a-fA-F]{32}" + _R, ("sk",),
         entropy=3.0, long_run=True),
    Rule("twilio_key", SAAS, "SECRET_TWILIO_KEY", r"AC(?<![A-Za-z0-9_].{2})[0-9a-fA-F]{32}" + _R, ("ac",),
         entropy=3.0, long_run=True),
    Rule("mailgun_key", SAAS, "SECRET_MAILGUN_KEY", _L + r"key-[0-9a-f]{32}" + _R, ("key-",), entropy=3.0),
    Rule("mailchimp_key", SAAS, "SECRET_MAILCHIMP_KEY", _L + r"[0-9a-f]{32}-us[0-9]{1,2}" + _R,
         ("-us",), entropy=3.0),
    Rule("shopify_token", SAAS, "SECRET_SHOPIFY_TOKEN", _L + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _R,
         ("shpat_", "shpca_", "shppa_", "shpss_"), entropy=3.0),
    Rule("square_token", SAAS, "SECRET_SQUARE_TOKEN",
         _L + r"(?:EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,43})" + _RD,
         ("eaaa", "sq0"), entropy=3.0),
    Rule("discord_bot_token", SAAS, "SECRET_DISCORD_TOKEN",
         r"[MNO](?<![A-Za-z0-9_-][MNO])[A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_!-]{27,}" + _RD,
         (".",), entropy=3.0, long_run=True, requires=r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_!-]{27}"),
    Rule("telegram_bot_token", SAAS, "SECRET_TELEGRAM_TOKEN", r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + _RD,
         (":aa",), entropy=3.0),
    Rule("linear_key", SAAS, "SECRET_LINEAR_KEY", _L + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _R,
         ("lin_api_", "lin_oauth_"), entropy=3.0),
    Rule("notion_token", SAAS, "SECRET_NOTION_TOKEN", _L + r"(?:ntn_[0-9]{11}[A-Za-z0-9]{32,35}|secret_[A-Za-z0-9]{43})" + _R,
         ("ntn_", "secret_"), entropy=3.5),
    Rule("databricks_token", SAAS, "SECRET_DATABRICKS_TOKEN", _L + r"dapi[a-f0-9]{32}(?:-\d)?" + _R,
         ("dapi",), entropy=3.0),
    Rule("doppler_token", SAAS, "SECRET_DOPPLER_TOKEN", _L + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _R,
         ("dp.",), entropy=3.0),
    Rule("terraform_cloud_token", SAAS, "SECRET_TERRAFORM_TOKEN",
         _L + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}" + _RD, ("atlasv1",), entropy=3.0),
    Rule("vault_token", SAAS, "SECRET_VAULT_TOKEN", _L + r"(?:hvs|hvb)\.[A-Za-z0-9_-]{90,}" + _RD,
         ("hvs.", "hvb."), entropy=3.5),
    Rule("vault_token_legacy", SAAS, "SECRET_VAULT_TOKEN",
         r"s\.(?<![A-Za-z0-9_.].{2})(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{24}" + _R,
         ("s.",), entropy=3.5, long_run=True),
    Rule("vault_token_legacy", SAAS, "SECRET_VAULT_TOKEN",
         r"b\.(?<![A-Za-z0-9_.].{2})(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{24}" + _R,
         ("b.",), entropy=3.5, long_run=True),
    Rule("sentry_token", SAAS, "SECRET_SENTRY_TOKEN",
         _L + r"(?:sntrys_eyJ[A-Za-z0-9+/=_-]{60,}|sntryu_[a-f0-9]{64})" + _RD, ("sntry",), entropy=3.0),
    Rule("sentry_dsn", SAAS, "SECRET_SENTRY_DSN", r"(?i)https?://([a-f0-9]{32})(?::[a-f0-9]{32})?@[\w.-]*sentry",
         ("sentry",), group=1, entropy=3.0),
    Rule("grafana_token", SAAS, "SECRET_GRAFANA_TOKEN",
         _L + r"(?:glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,400}={0,2})"
         + r"(?![A-Za-z0-9+/=])", ("glc_", "glsa_", "eyjrijoi"), entropy=3.0),
    Rule("postman_key", SAAS, "SECRET_POSTMAN_KEY", _L + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _R,
         ("pmak-",), entropy=3.0),
    Rule("pulumi_token", SAAS, "SECRET_PULUMI_TOKEN", _L + r"pul-[a-f0-9]{40}" + _R, ("pul-",), entropy=3.0),
    Rule("perplexity_key", SAAS, "SECRET_PERPLEXITY_KEY", _L + r"pplx-[A-Za-z0-9]{48}" + _R, ("pplx-",), entropy=3.0),
    Rule("cohere_key", SAAS, "SECRET_COHERE_KEY",
         r"(?i)(?:cohere|co_api_key)[\w.-]{0,20}[\\\"' \t]*(?:=|:|=>)[\\\"' \t]*([A-Za-z0-9]{40})(?![A-Za-z0-9])",
         ("cohere", "co_api_key"), group=1, entropy=3.5),
    # ---- (5) JWTs, bearer and session tokens
    Rule("jwt", JWT, "SECRET_JWT",
         _L + r"(?:eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*={0,2})?"
         r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,}={0,2})?)(?![A-Za-z0-9_=.-])",
         ("eyj",), entropy=3.0, validate=_jwt_header_ok),
    Rule("bearer_token", JWT, "SECRET_BEARER_TOKEN",
         r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)", ("bearer",), group=1, entropy=3.0),
    # session cookies; CSRF tokens are anti-forgery nonces, not credentials (as gitleaks treats them)
    Rule("session_cookie", JWT, "SECRET_SESSION_TOKEN",
         r"(?:session(?:id|_id|_token|-token)?|sessid|phpsessid|jsessionid|connect\.sid|auth[_-]?token)"
         r"[\\\"' \t]*[=:][\\\"' \t]*([a-z0-9%._~+/-]{16,}={0,2})",
         ("session", "sessid", "connect.sid", "auth_token", "auth-token", "authtoken"), group=1, entropy=3.2,
         on_lower=True, validate=_random_looking),
)
