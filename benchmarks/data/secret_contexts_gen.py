"""Labelled credentials in realistic contexts, written independently of the sanitizer's rules.

Each row of ``secret_contexts_labelled.jsonl`` is a snippet of 1-15 lines as people write them
(command lines, config files, source code, logs, READMEs) with the exact secret substrings that
a sanitizer must remove (``secrets``), ``label`` 1 for positives and 0 for look-alikes that must
be left alone, the ``class``, the template family (``context``), the vendor or tool (``service``)
and the ``split``.

Class counts (positives 1,420, negatives 250):

    cli_flag 180, config_json 110, config_yaml 120, config_xml 90, config_toml 80,
    config_ini_env 150, connection_string 150, vendor_token 300, password_in_code 150,
    encoded 90, negative 250

Split: services are shuffled with ``random.Random(SEED)`` and dealt to ``tune`` / ``heldout``
(per pool, so every pool has services on both sides); a family bound to one service follows that
service, the other families of each class are shuffled and dealt so each side gets about half.
Rows of a family draw only services of the family's side, so a ``heldout`` row shares neither
its ``context`` nor its ``service`` with any ``tune`` row. Each class has half its rows on each
side. Negatives without a vendor carry ``service`` "".

Secret values are random draws of the vendor's documented alphabet and length, or passwords of
mixed styles; a value never appears in two rows.

Regenerate (stdlib only, deterministic):

    .venv/bin/python benchmarks/data/secret_contexts_gen.py
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import sys
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

SEED = 20261201
OUT_NAME = "secret_contexts_labelled.jsonl"

CLASS_COUNTS: dict[str, int] = {
    "cli_flag": 180, "config_json": 110, "config_yaml": 120, "config_xml": 90, "config_toml": 80,
    "config_ini_env": 150, "connection_string": 150, "vendor_token": 300,
    "password_in_code": 150, "encoded": 90, "negative": 250,
}

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
# Symbols a password may carry in each kind of context without breaking its quoting.
SYMBOLS = {
    "shell": "@%_+=.,-~^",
    "url": "-._~",
    "xml": "!#%*+-.=?@^_~",
    "code": "!#%*+-.=?@^_~&",
    "any": "!#%*+-.=?@^_~&/:",
    "ini": "!%*+-.=?@^_~",
}
WORDS = (
    "amber anchor apricot aspen atlas basalt beacon birch bison bramble breeze canyon cedar "
    "cobalt comet copper coral cosmos crimson dahlia delta ember falcon fennel fjord garnet "
    "glacier granite harbor hazel heron indigo island jasper juniper kestrel lagoon lantern "
    "lichen magnet maple marble meadow meteor mosaic nectar nimbus oasis obsidian olive orbit "
    "orchid otter pebble pepper pine plasma prairie quartz quill raven reef ripple saffron "
    "sequoia sierra spruce summit tangerine thistle timber topaz tundra velvet walnut willow "
    "zenith zephyr horse staple battery correct violet tiger lemon rocket pilot harvest"
).split()
SEASONS = ("Summer", "Winter", "Autumn", "Spring", "Welcome", "Monday", "October", "Dragon",
           "Sunshine", "Football", "Kodiak", "Phoenix", "Galaxy", "Hunter", "Liberty")
USERS = ("admin", "deploy", "app", "svc_etl", "jenkins", "backup", "reporting", "postgres",
         "root", "ci-bot", "webapp", "billing", "analytics", "ops", "readonly", "migrator",
         "grafana", "airflow", "metabase", "keycloak", "jdoe", "m.garcia", "svc-orders")
DBS = ("orders", "inventory", "crm", "analytics", "app_production", "billing", "warehouse",
       "users", "payments", "catalog", "events", "ledger", "wp_site", "gitea", "metrics")
DOMAINS = ("acme-corp.io", "northwind.local", "internal.fabrikam.com", "corp.initech.net",
           "prod.globex.cloud", "svc.cluster.local", "db.contoso.dev", "eu-west-1.compute.internal",
           "tailspin.internal", "hooli.xyz", "stark-ind.net", "umbrella-labs.org")


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def host(rng: random.Random) -> str:
    prefix = rng.choice(("db", "db01", "pg-main", "mysql-primary", "10.0.3.17", "172.16.8.40",
                         "sql", "replica-2", "mq", "cache", "mongo-0", "srv04", "data"))
    if prefix[0].isdigit():
        return prefix
    if rng.random() < 0.1:
        return f"{prefix}.c{rand(rng, LOWER_ALNUM, 12)}.eu-west-1.rds.amazonaws.com"
    return f"{prefix}.{rng.choice(DOMAINS)}"


def user(rng: random.Random) -> str:
    return rng.choice(USERS)


def db(rng: random.Random) -> str:
    return rng.choice(DBS)


def password(rng: random.Random, ctx: str = "code") -> str:
    """A password in one of the styles people choose, with symbols safe for ``ctx``."""
    symbols = SYMBOLS[ctx]
    style = rng.randrange(6)
    if style == 0:  # random, manager-generated
        n = rng.randint(12, 24)
        chars = [rng.choice(ALNUM) for _ in range(n)]
        for i in rng.sample(range(n), k=max(2, n // 6)):
            chars[i] = rng.choice(symbols)
        chars[0] = rng.choice(string.ascii_letters)
        return "".join(chars)
    if style == 1:  # passphrase
        sep = rng.choice([c for c in "-_." if c in symbols] or ["-"])
        return sep.join(rng.sample(WORDS, k=rng.randint(3, 5))) + (str(rng.randint(2, 99))
                                                                   if rng.random() < .5 else "")
    if style == 2:  # word + digits + symbol
        sym = rng.choice(symbols.replace(".", "").replace(",", "") or "_")
        return f"{rng.choice(SEASONS)}{rng.randint(1990, 2026)}{sym}{rand(rng, string.digits, rng.randint(0, 3))}"
    if style == 3:
        return rand(rng, HEX, rng.choice((32, 40, 64)))
    if style == 4:  # `openssl rand -base64`, padding dropped; '+' and '/' only where they need no escaping
        return rand(rng, B64 if ctx in ("code", "any", "ini", "xml") else ALNUM, rng.randint(24, 88))
    return (rng.choice(WORDS).capitalize() + rng.choice(symbols) + rand(rng, ALNUM, 6)
            + rng.choice(symbols) + str(rng.randint(10, 999)))


_SPEC = re.compile(r"\{([A-Za-z])(\d*)\}")
_ALPHABETS = {"A": ALNUM, "H": HEX, "X": "0123456789ABCDEF", "U": UPPER_ALNUM,
              "L": string.ascii_letters, "D": string.digits, "B": B64, "S": URLSAFE,
              "a": LOWER_ALNUM, "Z": BECH32, "b": "abcdefghijklmnopqrstuvwxyz234567",
              "W": string.ascii_uppercase + "234567"}


def expand(rng: random.Random, spec: str) -> str:
    """Fill a token spec: ``{A36}`` is 36 alphanumerics, ``{N}`` a UUID, ``{H32}`` lower hex..."""
    def one(m: re.Match) -> str:
        kind, n = m.group(1), m.group(2)
        if kind == "N":
            h = rand(rng, HEX, 32)
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"
        if kind == "J":  # JWT-shaped: base64url header.payload.signature
            head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
            body = base64.urlsafe_b64encode(json.dumps(
                {"iss": rand(rng, LOWER_ALNUM, 20), "role": rng.choice(("service_role", "admin")),
                 "iat": rng.randint(1_600_000_000, 1_750_000_000)}).encode()).decode().rstrip("=")
            return f"{head}.{body}.{rand(rng, URLSAFE, 43)}"
        return rand(rng, _ALPHABETS[kind], int(n))
    return _SPEC.sub(one, spec)


@dataclass(frozen=True)
class Vendor:
    service: str
    var: str  # the variable name real configs use for it
    spec: str
    host: str

    @property
    def prefixed(self) -> bool:
        """The token names its vendor by itself (a literal prefix), without a keyword nearby."""
        return not self.spec.startswith("{")


# service | variable | token spec | API host. Formats follow each vendor's documented token shape;
# services whose keys have no prefix are named by their variable, as real configs do.
_VENDOR_TABLE = """
github|GITHUB_TOKEN|ghp_{A36}|api.github.com
github-fine-grained|GH_PAT|github_pat_{A22}_{A59}|api.github.com
github-oauth|GITHUB_OAUTH_TOKEN|gho_{A36}|api.github.com
gitlab|GITLAB_TOKEN|glpat-{S20}|gitlab.com
gitlab-runner|CI_RUNNER_TOKEN|glrt-{S20}|gitlab.com
gitlab-deploy|GITLAB_DEPLOY_TOKEN|gldt-{S20}|gitlab.com
slack-bot|SLACK_BOT_TOKEN|xoxb-{D12}-{D13}-{A24}|slack.com
slack-user|SLACK_USER_TOKEN|xoxp-{D12}-{D12}-{D13}-{H32}|slack.com
slack-app|SLACK_APP_TOKEN|xapp-1-A{U10}-{D13}-{H64}|slack.com
stripe|STRIPE_SECRET_KEY|sk_live_{A99}|api.stripe.com
stripe-restricted|STRIPE_RESTRICTED_KEY|rk_live_{A99}|api.stripe.com
stripe-webhook|STRIPE_WEBHOOK_SECRET|whsec_{A32}|api.stripe.com
aws-session|AWS_SESSION_KEY_ID|ASIA{W16}|sts.amazonaws.com
google-api|GOOGLE_API_KEY|AIza{S35}|maps.googleapis.com
google-oauth|GOOGLE_CLIENT_SECRET|GOCSPX-{S28}|oauth2.googleapis.com
sendgrid|SENDGRID_API_KEY|SG.{S22}.{S43}|api.sendgrid.com
npm|NPM_TOKEN|npm_{A36}|registry.npmjs.org
pypi|PYPI_API_TOKEN|pypi-AgEIcHlwaS5vcmcCJ{S150}|upload.pypi.org
huggingface|HF_TOKEN|hf_{L34}|huggingface.co
anthropic|ANTHROPIC_API_KEY|sk-ant-api03-{S93}AA|api.anthropic.com
openai|OPENAI_API_KEY|sk-proj-{S156}|api.openai.com
shopify|SHOPIFY_ACCESS_TOKEN|shpat_{H32}|shop.myshopify.com
shopify-shared|SHOPIFY_API_SECRET|shpss_{H32}|shop.myshopify.com
digitalocean|DIGITALOCEAN_TOKEN|dop_v1_{H64}|api.digitalocean.com
digitalocean-oauth|DO_OAUTH_TOKEN|doo_v1_{H64}|api.digitalocean.com
linear|LINEAR_API_KEY|lin_api_{A40}|api.linear.app
planetscale|PLANETSCALE_SERVICE_TOKEN|pscale_tkn_{S43}|api.planetscale.com
planetscale-password|PLANETSCALE_DB_PASSWORD|pscale_pw_{S43}|aws.connect.psdb.cloud
notion|NOTION_TOKEN|ntn_{D12}{A34}|api.notion.com
notion-legacy|NOTION_API_KEY|secret_{A43}|api.notion.com
twilio|TWILIO_AUTH_TOKEN|{H32}|api.twilio.com
twilio-apikey|TWILIO_API_SECRET|SK{H32}|api.twilio.com
mailgun|MAILGUN_API_KEY|key-{H32}|api.mailgun.net
mailgun-signing|MAILGUN_WEBHOOK_SIGNING_KEY|{H32}|api.mailgun.net
mailchimp|MAILCHIMP_API_KEY|{H32}-us{D2}|us14.api.mailchimp.com
datadog|DD_API_KEY|{H32}|api.datadoghq.com
datadog-app|DD_APP_KEY|{H40}|api.datadoghq.com
newrelic|NEW_RELIC_API_KEY|NRAK-{U27}|api.newrelic.com
newrelic-license|NEW_RELIC_LICENSE_KEY|{H36}NRAL|collector.newrelic.com
sentry-auth|SENTRY_AUTH_TOKEN|sntryu_{H64}|sentry.io
doppler|DOPPLER_TOKEN|dp.st.prd.{A40}|api.doppler.com
pulumi|PULUMI_ACCESS_TOKEN|pul-{H40}|api.pulumi.com
terraform-cloud|TFE_TOKEN|{A14}.atlasv1.{S67}|app.terraform.io
vault|VAULT_TOKEN|hvs.{S90}|vault.internal:8200
databricks|DATABRICKS_TOKEN|dapi{H32}|adb-4021.azuredatabricks.net
atlassian|JIRA_API_TOKEN|ATATT3xFfGF0{S171}|acme.atlassian.net
heroku|HEROKU_API_KEY|{N}|api.heroku.com
cloudflare|CLOUDFLARE_API_TOKEN|{S40}|api.cloudflare.com
cloudflare-global|CF_API_KEY|{H37}|api.cloudflare.com
fastly|FASTLY_API_TOKEN|{S32}|api.fastly.com
netlify|NETLIFY_AUTH_TOKEN|nfp_{A40}|api.netlify.com
vercel|VERCEL_TOKEN|{A24}|api.vercel.com
flyio|FLY_API_TOKEN|fo1_{S43}|api.fly.io
render|RENDER_API_KEY|rnd_{A32}|api.render.com
supabase|SUPABASE_ACCESS_TOKEN|sbp_{H40}|api.supabase.com
supabase-service|SUPABASE_SERVICE_ROLE_KEY|{J}|acme.supabase.co
algolia|ALGOLIA_ADMIN_KEY|{H32}|acme-dsn.algolia.net
postman|POSTMAN_API_KEY|PMAK-{H24}-{H34}|api.getpostman.com
grafana|GRAFANA_SERVICE_ACCOUNT_TOKEN|glsa_{A32}_{H8}|grafana.acme-corp.io
grafana-cloud|GRAFANA_CLOUD_TOKEN|glc_{A100}|grafana.net
dynatrace|DT_API_TOKEN|dt0c01.{U24}.{U64}|abc12345.live.dynatrace.com
age|SOPS_AGE_KEY|AGE-SECRET-KEY-1{Z58}|
rubygems|GEM_HOST_API_KEY|rubygems_{H48}|rubygems.org
clojars|CLOJARS_TOKEN|CLOJARS_{H60}|clojars.org
dockerhub|DOCKERHUB_TOKEN|dckr_pat_{S27}|hub.docker.com
figma|FIGMA_TOKEN|figd_{S40}|api.figma.com
asana|ASANA_ACCESS_TOKEN|2/{D16}/{D16}:{H32}|app.asana.com
airtable|AIRTABLE_TOKEN|pat{A14}.{H64}|api.airtable.com
contentful|CONTENTFUL_MANAGEMENT_TOKEN|CFPAT-{S43}|api.contentful.com
okta|OKTA_API_TOKEN|00{S40}|acme.okta.com
intercom|INTERCOM_ACCESS_TOKEN|dG9rOj{A54}=|api.intercom.io
zendesk|ZENDESK_API_TOKEN|{A40}|acme.zendesk.com
hubspot|HUBSPOT_ACCESS_TOKEN|pat-na1-{N}|api.hubapi.com
typeform|TYPEFORM_TOKEN|tfp_{A44}_{A14}|api.typeform.com
mapbox|MAPBOX_SECRET_TOKEN|sk.eyJ1IjoiYWNtZS{A50}.{S22}|api.mapbox.com
shippo|SHIPPO_API_KEY|shippo_live_{H40}|api.goshippo.com
easypost|EASYPOST_API_KEY|EZAK{H54}|api.easypost.com
square|SQUARE_ACCESS_TOKEN|EAAA{S60}|connect.squareup.com
braintree|BRAINTREE_ACCESS_TOKEN|access_token$production${a16}${H32}|api.braintreegateway.com
razorpay|RAZORPAY_KEY_SECRET|{A24}|api.razorpay.com
flutterwave|FLW_SECRET_KEY|FLWSECK-{H32}-X|api.flutterwave.com
paystack|PAYSTACK_SECRET_KEY|sk_live_{H40}|api.paystack.co
telegram|TELEGRAM_BOT_TOKEN|{D10}:AA{S33}|api.telegram.org
discord|DISCORD_BOT_TOKEN|MT{A24}.{S6}.{S38}|discord.com
twitter|TWITTER_BEARER_TOKEN|AAAAAAAAAAAAAAAAAAAAA{A90}|api.twitter.com
facebook|FB_PAGE_ACCESS_TOKEN|EAAB{A180}|graph.facebook.com
azure-ad|AZURE_CLIENT_SECRET|{A3}{D1}Q~{S31}|login.microsoftonline.com
azure-devops|AZURE_DEVOPS_PAT|{b52}|dev.azure.com
alibaba|ALIBABA_CLOUD_ACCESS_KEY_SECRET|{A30}|ecs.aliyuncs.com
tencent|TENCENTCLOUD_SECRET_KEY|{A32}|cvm.tencentcloudapi.com
ibm-cloud|IBMCLOUD_API_KEY|{S44}|iam.cloud.ibm.com
linode|LINODE_TOKEN|{H64}|api.linode.com
vultr|VULTR_API_KEY|{U36}|api.vultr.com
hetzner|HCLOUD_TOKEN|{A64}|api.hetzner.cloud
scaleway|SCW_SECRET_KEY|{N}|api.scaleway.com
backblaze|B2_APPLICATION_KEY|K005{A27}|api.backblazeb2.com
wasabi|WASABI_SECRET_KEY|{A40}|s3.wasabisys.com
replicate|REPLICATE_API_TOKEN|r8_{A37}|api.replicate.com
groq|GROQ_API_KEY|gsk_{A52}|api.groq.com
mistral|MISTRAL_API_KEY|{A32}|api.mistral.ai
perplexity|PERPLEXITY_API_KEY|pplx-{A48}|api.perplexity.ai
together|TOGETHER_API_KEY|{H64}|api.together.xyz
fireworks|FIREWORKS_API_KEY|fw_{A24}|api.fireworks.ai
xai|XAI_API_KEY|xai-{A80}|api.x.ai
openrouter|OPENROUTER_API_KEY|sk-or-v1-{H64}|openrouter.ai
cohere|COHERE_API_KEY|{A40}|api.cohere.com
langsmith|LANGSMITH_API_KEY|lsv2_pt_{H32}_{H10}|api.smith.langchain.com
wandb|WANDB_API_KEY|{H40}|api.wandb.ai
elevenlabs|ELEVENLABS_API_KEY|sk_{H48}|api.elevenlabs.io
assemblyai|ASSEMBLYAI_API_KEY|{H32}|api.assemblyai.com
deepgram|DEEPGRAM_API_KEY|{H40}|api.deepgram.com
pagerduty|PAGERDUTY_TOKEN|u+{S18}|api.pagerduty.com
opsgenie|OPSGENIE_API_KEY|{N}|api.opsgenie.com
circleci|CIRCLECI_TOKEN|CCIPAT_{A22}_{H40}|circleci.com
buildkite|BUILDKITE_API_TOKEN|bkua_{H40}|api.buildkite.com
snyk|SNYK_TOKEN|{N}|api.snyk.io
sonarqube|SONAR_TOKEN|squ_{H40}|sonarcloud.io
codecov|CODECOV_TOKEN|{N}|codecov.io
jfrog|JFROG_ACCESS_TOKEN|cmVmdGtuOjAxOj{A50}|acme.jfrog.io
octopus|OCTOPUS_API_KEY|API-{U30}|octopus.acme-corp.io
launchdarkly|LD_SDK_KEY|sdk-{N}|app.launchdarkly.com
segment|SEGMENT_WRITE_KEY|{A32}|api.segment.io
mixpanel|MIXPANEL_API_SECRET|{H32}|api.mixpanel.com
posthog|POSTHOG_PERSONAL_API_KEY|phx_{A43}|app.posthog.com
honeycomb|HONEYCOMB_API_KEY|hcaik_{a58}|api.honeycomb.io
neon|NEON_API_KEY|napi_{a64}|console.neon.tech
confluent|CONFLUENT_CLOUD_API_SECRET|{A64}|api.confluent.cloud
dropbox|DROPBOX_ACCESS_TOKEN|sl.{S138}|api.dropboxapi.com
trello|TRELLO_TOKEN|ATTA{H64}{X8}|api.trello.com
brevo|BREVO_API_KEY|xkeysib-{H64}-{A16}|api.brevo.com
resend|RESEND_API_KEY|re_{A8}_{A24}|api.resend.com
postmark|POSTMARK_SERVER_TOKEN|{N}|api.postmarkapp.com
sparkpost|SPARKPOST_API_KEY|{H40}|api.sparkpost.com
mailjet|MJ_APISECRET_PRIVATE|{H32}|api.mailjet.com
tailscale|TS_AUTHKEY|tskey-auth-{A17}-{A33}|api.tailscale.com
onepassword|OP_SERVICE_ACCOUNT_TOKEN|ops_eyJzaWduSW5BZGRyZXNzIjoi{A120}|my.1password.com
woocommerce|WC_CONSUMER_SECRET|cs_{H40}|shop.acme-corp.io
openweather|OPENWEATHER_API_KEY|{H32}|api.openweathermap.org
pusher|PUSHER_APP_SECRET|{H20}|api-eu.pusher.com
ably|ABLY_API_KEY|{A6}.{A6}:{S43}|rest.ably.io
auth0|AUTH0_CLIENT_SECRET|{S64}|acme.eu.auth0.com
clerk|CLERK_SECRET_KEY|sk_live_{A40}|api.clerk.com
bitbucket|BITBUCKET_APP_PASSWORD|ATBB{A32}{X8}|api.bitbucket.org
readme|README_API_KEY|rdme_{a70}|dash.readme.com
prefect|PREFECT_API_KEY|pnu_{A36}|api.prefect.cloud
dbt-cloud|DBT_CLOUD_API_TOKEN|dbtc_{S56}|cloud.getdbt.com
browserstack|BROWSERSTACK_ACCESS_KEY|{A20}|api.browserstack.com
percy|PERCY_TOKEN|web_{H64}|percy.io
expo|EXPO_TOKEN|{S40}|api.expo.dev
firebase-fcm|FCM_SERVER_KEY|AAAA{S7}:APA91b{S134}|fcm.googleapis.com
steam|STEAM_API_KEY|{X32}|api.steampowered.com
riot|RIOT_API_KEY|RGAPI-{N}|euw1.api.riotgames.com
etherscan|ETHERSCAN_API_KEY|{U34}|api.etherscan.io
infura|INFURA_PROJECT_SECRET|{H32}|mainnet.infura.io
alchemy|ALCHEMY_API_KEY|{S32}|eth-mainnet.g.alchemy.com
shodan|SHODAN_API_KEY|{A32}|api.shodan.io
virustotal|VT_API_KEY|{H64}|www.virustotal.com
porkbun|PORKBUN_SECRET_API_KEY|sk1_{H64}|api.porkbun.com
godaddy|GODADDY_API_SECRET|{A22}|api.godaddy.com
sanity|SANITY_API_TOKEN|sk{A180}|api.sanity.io
cloudsmith|CLOUDSMITH_API_KEY|{H40}|api.cloudsmith.io
ngrok|NGROK_AUTHTOKEN|2{A26}_{A21}|api.ngrok.com
pinecone|PINECONE_API_KEY|pcsk_{A6}_{A60}|api.pinecone.io
lob|LOB_API_KEY|live_{H35}|api.lob.com
yandex|YANDEX_OAUTH_TOKEN|y0_{S55}|cloud-api.yandex.net
""".strip()

VENDORS: list[Vendor] = [Vendor(*line.split("|")) for line in _VENDOR_TABLE.splitlines()]
VENDOR_BY_NAME = {v.service: v for v in VENDORS}


Maker = Callable[[random.Random, str], "tuple[str, list[str]]"]


@dataclass(frozen=True)
class Family:
    """One template family: a kind of file or command, with the services it may carry."""

    cls: str
    context: str
    make: Maker
    service: str | None  # bound to one service...
    pool: str | None  # ...or draws services from a pool
    accepts: Callable[[str], bool] | None


FAMILIES: list[Family] = []
POOLS: dict[str, list[str]] = {"vendor": [v.service for v in VENDORS]}


def family(cls: str, context: str, service: str | None = None, pool: str | None = None,
           accepts: Callable[[str], bool] | None = None) -> Callable[[Maker], Maker]:
    def register(fn: Maker) -> Maker:
        FAMILIES.append(Family(cls, context, fn, service, pool, accepts))
        return fn
    return register


def vtok(rng: random.Random, svc: str) -> tuple[Vendor, str]:
    v = VENDOR_BY_NAME[svc]
    return v, expand(rng, v.spec)


def prefixed_only(svc: str) -> bool:
    return VENDOR_BY_NAME[svc].prefixed


def camel(var: str) -> str:
    parts = var.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def short_key(var: str) -> str:
    """``STRIPE_SECRET_KEY`` -> ``secret_key``: the key name inside a per-service section."""
    parts = var.lower().split("_")
    return "_".join(parts[1:]) if len(parts) > 1 else parts[0]


def client_class(svc: str) -> str:
    return "".join(p.capitalize() for p in re.split(r"[-_]", svc)) + "Client"


# ---------------------------------------------------------------- vendor_token
@family("vendor_token", "vt_dotenv", pool="vendor")
def _vt_dotenv(rng, svc):
    v, t = vtok(rng, svc)
    lines = ["# copied from the staging box, do not commit", f"NODE_ENV={rng.choice(('production', 'staging'))}",
             f"PORT={rng.choice((3000, 8080, 5000))}", f"{v.var}={t}", f"LOG_LEVEL={rng.choice(('info', 'debug'))}"]
    return "\n".join(lines[rng.randint(0, 1):]), [t]


@family("vendor_token", "vt_readme_export", pool="vendor")
def _vt_readme_export(rng, svc):
    v, t = vtok(rng, svc)
    q = rng.choice(("", '"', "'"))
    return (f"## Quick start\n\n```bash\nexport {v.var}={q}{t}{q}\n"
            f"python -m {svc.replace('-', '_')}_sync --since 7d\n```"), [t]


@family("vendor_token", "vt_json_settings", pool="vendor")
def _vt_json_settings(rng, svc):
    v, t = vtok(rng, svc)
    key = rng.choice((camel(short_key(v.var)), short_key(v.var), "token", "apiKey"))
    doc = {"integrations": {svc: {"enabled": True, key: t, "timeoutMs": rng.choice((5000, 10000))}}}
    return json.dumps(doc, indent=2), [t]


@family("vendor_token", "vt_yaml_values", pool="vendor")
def _vt_yaml_values(rng, svc):
    v, t = vtok(rng, svc)
    return (f"{svc.replace('-', '_')}:\n  enabled: true\n  {short_key(v.var)}: {t}\n"
            f"  endpoint: https://{v.host or 'localhost'}\n  retries: {rng.randint(2, 5)}"), [t]


@family("vendor_token", "vt_http_header", pool="vendor")
def _vt_http_header(rng, svc):
    v, t = vtok(rng, svc)
    hdr = rng.choice((f"Authorization: Bearer {t}", f"Authorization: Token {t}", f"X-API-Key: {t}"))
    return (f"curl -s -H \"{hdr}\" \\\n  -H 'Accept: application/json' \\\n"
            f"  https://{v.host or 'api.local'}/v1/{rng.choice(('users', 'projects', 'events'))}?limit=50"), [t]


@family("vendor_token", "vt_python_client", pool="vendor")
def _vt_python_client(rng, svc):
    v, t = vtok(rng, svc)
    mod = svc.replace("-", "_")
    return (f"from {mod} import {client_class(svc)}\n\n"
            f"client = {client_class(svc)}(api_key=\"{t}\", timeout=30)\n"
            f"resp = client.{rng.choice(('list', 'fetch', 'query'))}(limit=100)"), [t]


@family("vendor_token", "vt_js_client", pool="vendor")
def _vt_js_client(rng, svc):
    v, t = vtok(rng, svc)
    return (f"import {{ {client_class(svc)} }} from '@{svc}/sdk';\n\n"
            f"const client = new {client_class(svc)}({{\n  apiKey: '{t}',\n  region: 'eu',\n}});\n"
            f"export default client;"), [t]


@family("vendor_token", "vt_docker_run_env", pool="vendor")
def _vt_docker_run_env(rng, svc):
    v, t = vtok(rng, svc)
    return (f"docker run -d --name {svc}-worker \\\n  -e {v.var}={t} \\\n"
            f"  -e TZ=UTC \\\n  ghcr.io/acme/{svc}-worker:{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"), [t]


@family("vendor_token", "vt_k8s_env_value", pool="vendor")
def _vt_k8s_env_value(rng, svc):
    v, t = vtok(rng, svc)
    return (f"    spec:\n      containers:\n        - name: {svc}-sync\n          image: acme/{svc}-sync:latest\n"
            f"          env:\n            - name: {v.var}\n              value: \"{t}\"\n"
            f"            - name: LOG_FORMAT\n              value: json"), [t]


@family("vendor_token", "vt_actions_env", pool="vendor")
def _vt_actions_env(rng, svc):
    v, t = vtok(rng, svc)
    return (f"jobs:\n  publish:\n    runs-on: ubuntu-latest\n    env:\n      {v.var}: {t}\n"
            f"    steps:\n      - uses: actions/checkout@v4\n      - run: make publish"), [t]


@family("vendor_token", "vt_log_line", pool="vendor", accepts=prefixed_only)
def _vt_log_line(rng, svc):
    v, t = vtok(rng, svc)
    ts = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    line = rng.choice((f"{ts} DEBUG http.client send headers={{'Authorization': 'Bearer {t}', 'User-Agent': 'acme/2.3'}}",
                       f"{ts} INFO  auth: using credential {t} for https://{v.host or 'api'}",
                       f"[{ts}] WARN retrying POST https://{v.host or 'api'}/v2/batch token={t} attempt=2"))
    return line, [t]


@family("vendor_token", "vt_getenv_default", pool="vendor")
def _vt_getenv_default(rng, svc):
    v, t = vtok(rng, svc)
    return (f"import os\n\n{v.var} = os.getenv(\"{v.var}\", \"{t}\")\n"
            f"BASE_URL = \"https://{v.host or 'localhost'}\""), [t]


@family("vendor_token", "vt_terraform_provider", pool="vendor")
def _vt_terraform_provider(rng, svc):
    v, t = vtok(rng, svc)
    return (f"provider \"{svc.replace('-', '_')}\" {{\n  {short_key(v.var)} = \"{t}\"\n"
            f"  region = \"{rng.choice(('us-east-1', 'eu-central-1', 'ap-south-1'))}\"\n}}"), [t]


@family("vendor_token", "vt_ini_section", pool="vendor")
def _vt_ini_section(rng, svc):
    v, t = vtok(rng, svc)
    return f"[{svc}]\nurl = https://{v.host or 'localhost'}\n{short_key(v.var)} = {t}\nverify_ssl = true", [t]


@family("vendor_token", "vt_go_const", pool="vendor")
def _vt_go_const(rng, svc):
    v, t = vtok(rng, svc)
    return (f"package {svc.replace('-', '')}\n\nconst (\n\tbaseURL = \"https://{v.host or 'localhost'}\"\n"
            f"\t{camel(v.var)} = \"{t}\"\n)"), [t]


# Vendors whose own CLI takes the token as an argument; the others appear in a project's script.
VENDOR_CLI = {
    "netlify": "netlify deploy --prod --dir=dist --auth {t}",
    "vercel": "vercel deploy --prod --token {t}",
    "flyio": "flyctl deploy --remote-only --access-token {t}",
    "huggingface": "huggingface-cli login --token {t}",
    "doppler": "doppler run --token {t} -- npm start",
    "sentry-auth": "sentry-cli --auth-token {t} releases finalize 2.8.1",
    "codecov": "codecov -t {t} -f coverage.xml",
    "snyk": "snyk auth {t}",
    "sonarqube": "sonar-scanner -Dsonar.projectKey=acme_web -Dsonar.token={t}",
    "wandb": "wandb login {t}",
    "ngrok": "ngrok config add-authtoken {t}",
    "tailscale": "tailscale up --authkey={t} --ssh",
    "vault": "vault login {t}",
    "circleci": "circleci setup --no-prompt --host https://circleci.com --token {t}",
    "dockerhub": "docker login -u acmebuild -p {t}",
    "gitlab": "glab auth login --hostname gitlab.com --token {t}",
    "stripe": "stripe customers list --limit 3 --api-key {t}",
    "newrelic": "newrelic profile add --profile prod --region us --apiKey {t}",
    "supabase": "supabase login --token {t}",
    "digitalocean": "doctl auth init -t {t}",
    "npm": "npm whoami --//registry.npmjs.org/:_authToken={t}",
    "pulumi": "PULUMI_ACCESS_TOKEN={t} pulumi up --yes --stack prod",
    "buildkite": "bk configure --org acme --token {t}",
    "age": "SOPS_AGE_KEY={t} sops -d secrets.enc.yaml",
}


@family("vendor_token", "vt_cli_flag", pool="vendor")
def _vt_cli_flag(rng, svc):
    v, t = vtok(rng, svc)
    if svc in VENDOR_CLI:
        return f"$ {VENDOR_CLI[svc].format(t=t)}", [t]
    flag = rng.choice((f"--{svc}-token", "--api-key", "--token"))
    eq = rng.choice((" ", "="))
    return f"$ python scripts/{rng.choice(('backfill', 'sync', 'export'))}_{svc.replace('-', '_')}.py {flag}{eq}{t} --days 30", [t]


# ---------------------------------------------------------------- cli_flag
def cmdline(rng: random.Random, parts: list[str]) -> str:
    """Put one command where people write commands: prompt, script, Makefile, CI step, Dockerfile."""
    if len(parts) > 4 and rng.random() < 0.3:
        cmd = parts[0] + "".join((" \\\n    " if p.startswith("-") else " ") + p for p in parts[1:])
    else:
        cmd = " ".join(parts)
    where = rng.randrange(8)
    if where == 0:
        return f"$ {cmd}"
    if where == 1:
        return f"sudo {cmd}"
    if where == 2:
        return f"#!/usr/bin/env bash\nset -euo pipefail\n\n{cmd}"
    if where == 3:
        return f".PHONY: sync\nsync:\n\t{cmd.replace(chr(10), chr(10) + chr(9))}"
    if where == 4:
        body = cmd.replace("\n", "\n          ")
        return f"      - name: {rng.choice(('Restore dump', 'Publish', 'Login', 'Sync data'))}\n        run: |\n          {body}"
    if where == 5:
        return f"FROM debian:12-slim\nRUN apt-get update && {cmd}"
    if where == 6:
        return f"  {rng.randint(100, 2000)}  {cmd}"  # a `history` line
    return cmd


def windows_cmdline(rng: random.Random, parts: list[str]) -> str:
    """Windows commands: a PowerShell or cmd prompt, a script line, or a scheduled-task action."""
    cmd = " ".join(parts)
    where = rng.randrange(4)
    if where == 0:
        return f"PS C:\\Users\\{user(rng)}> {cmd}"
    if where == 1:
        return f"@echo off\nREM nightly backup\n{cmd}\nrobocopy D:\\data Z:\\ /MIR"
    if where == 2:
        return f"# deploy.ps1\n$ErrorActionPreference = 'Stop'\n{cmd}"
    return cmd


def cli(service: str, context: str, pw_ctx: str = "shell", windows: bool = False):
    """Register a command-line family: ``fn(rng, secret) -> argv parts``.

    ``pw_ctx`` names the password alphabet, or is a token spec such as ``{B40}``."""
    def register(fn):
        def make(rng, svc):
            secret = expand(rng, pw_ctx) if "{" in pw_ctx else password(rng, pw_ctx)
            place = windows_cmdline if windows else cmdline
            return place(rng, fn(rng, secret)), [secret]
        FAMILIES.append(Family("cli_flag", context, make, service, None, None))
        return fn
    return register


cli("mysql", "cli_mysql_p_attached")(lambda r, s: ["mysql", "-u", user(r), f"-p{s}", "-h", host(r), db(r)])
cli("mysql", "cli_mysql_password_eq")(lambda r, s: ["mysql", f"--user={user(r)}", f"--password='{s}'", f"--host={host(r)}", "-e", "'SHOW PROCESSLIST'"])
cli("mysqldump", "cli_mysqldump")(lambda r, s: ["mysqldump", "--single-transaction", "-u", user(r), f"-p'{s}'", db(r), "|", "gzip", ">", f"/backups/{db(r)}.sql.gz"])
cli("psql", "cli_pgpassword_env")(lambda r, s: [f"PGPASSWORD='{s}'", "psql", "-h", host(r), "-U", user(r), "-d", db(r), "-f", "migrate.sql"])
cli("psql", "cli_psql_uri", "url")(lambda r, s: ["psql", f"\"postgresql://{user(r)}:{s}@{host(r)}:5432/{db(r)}?sslmode=require\"", "-c", "'\\dt'"])
cli("pg_dump", "cli_pg_dump_env")(lambda r, s: ["env", f"PGPASSWORD={s}", "pg_dump", "-Fc", "-h", host(r), "-U", user(r), db(r), "-f", "dump.pgc"])
cli("mongosh", "cli_mongosh_p")(lambda r, s: ["mongosh", f"\"mongodb://{host(r)}:27017/{db(r)}\"", "-u", user(r), "-p", f"'{s}'", "--authenticationDatabase", "admin"])
cli("mongodump", "cli_mongodump")(lambda r, s: ["mongodump", "--host", host(r), "--username", user(r), f"--password={s}", "--db", db(r), "--out", "/tmp/dump"])
cli("redis-cli", "cli_redis_a")(lambda r, s: ["redis-cli", "-h", host(r), "-p", "6379", "-a", f"'{s}'", "--no-auth-warning", "INFO", "memory"])
cli("curl", "cli_curl_u")(lambda r, s: ["curl", "-fsSL", "-u", f"'{user(r)}:{s}'", f"https://{host(r)}/api/v2/export?format=csv", "-o", "export.csv"])
cli("curl", "cli_curl_user_eq")(lambda r, s: ["curl", f"--user={user(r)}:{s}", "-X", "POST", f"https://jenkins.{r.choice(DOMAINS)}/job/deploy/build"])
cli("curl", "cli_curl_auth_header", "any")(lambda r, s: ["curl", "-H", f"\"Authorization: Bearer {s}\"", f"https://{host(r)}/api/v1/status"])
cli("wget", "cli_wget_password")(lambda r, s: ["wget", f"--user={user(r)}", f"--password='{s}'", f"https://repo.{r.choice(DOMAINS)}/artifacts/build-{r.randint(100, 999)}.tar.gz"])
cli("wget", "cli_wget_http_password")(lambda r, s: ["wget", "-q", "--http-user", user(r), "--http-password", s, f"http://{host(r)}/nightly/latest.zip"])
cli("docker", "cli_docker_login_p")(lambda r, s: ["docker", "login", "-u", user(r), "-p", f"'{s}'", f"registry.{r.choice(DOMAINS)}"])
cli("podman", "cli_podman_login")(lambda r, s: ["podman", "login", f"--username={user(r)}", f"--password={s}", "quay.io"])
cli("helm", "cli_helm_repo_add")(lambda r, s: ["helm", "repo", "add", "internal", f"https://charts.{r.choice(DOMAINS)}", "--username", user(r), "--password", f"'{s}'"])
cli("oras", "cli_oras_login")(lambda r, s: ["oras", "login", f"registry.{r.choice(DOMAINS)}", "-u", user(r), "-p", s])
cli("skopeo", "cli_skopeo_creds")(lambda r, s: ["skopeo", "copy", f"--src-creds={user(r)}:{s}", f"docker://registry.{r.choice(DOMAINS)}/app:1.4", "oci:app:1.4"])
cli("kubectl", "cli_kubectl_token")(lambda r, s: ["kubectl", f"--server=https://{host(r)}:6443", f"--token={s}", "get", "pods", "-n", "prod"])
cli("kubectl", "cli_kubectl_set_credentials")(lambda r, s: ["kubectl", "config", "set-credentials", user(r), f"--username={user(r)}", f"--password={s}"])
cli("az", "cli_az_login_sp")(lambda r, s: ["az", "login", "--service-principal", "-u", expand(r, "{N}"), "-p", f"'{s}'", "--tenant", expand(r, "{N}")])
cli("aws", "cli_aws_configure_set", "{B40}")(lambda r, s: ["aws", "configure", "set", "aws_secret_access_key", s, "--profile", r.choice(("prod", "ci", "default"))])
cli("gcloud", "cli_gcloud_sql_user")(lambda r, s: ["gcloud", "sql", "users", "set-password", user(r), "--instance", f"{db(r)}-pg", f"--password={s}"])
cli("vault", "cli_vault_login_userpass")(lambda r, s: ["vault", "login", "-method=userpass", f"username={user(r)}", f"password={s}"])
cli("sshpass", "cli_sshpass")(lambda r, s: ["sshpass", "-p", f"'{s}'", "ssh", "-o", "StrictHostKeyChecking=no", f"{user(r)}@{host(r)}", "'systemctl restart app'"])
cli("htpasswd", "cli_htpasswd_b")(lambda r, s: ["htpasswd", "-b", "-c", "/etc/nginx/.htpasswd", user(r), s])
cli("smbclient", "cli_smbclient_U")(lambda r, s: ["smbclient", f"//{host(r)}/share", "-U", f"'CORP\\{user(r)}%{s}'", "-c", "'ls'"])
cli("lftp", "cli_lftp_u")(lambda r, s: ["lftp", "-u", f"{user(r)},{s}", f"sftp://{host(r)}", "-e", "'mirror -R dist /var/www; bye'"])
cli("openssl", "cli_openssl_passout")(lambda r, s: ["openssl", "pkcs12", "-export", "-in", "server.crt", "-inkey", "server.key", "-out", "server.p12", f"-passout", f"pass:{s}"])
cli("openssl", "cli_openssl_passin")(lambda r, s: ["openssl", "rsa", "-in", "encrypted.key", "-out", "server.key", f"-passin", f"'pass:{s}'"])
cli("keytool", "cli_keytool_storepass")(lambda r, s: ["keytool", "-importcert", "-alias", "corp-ca", "-file", "ca.pem", "-keystore", "truststore.jks", "-storepass", s, "-noprompt"])
cli("keytool", "cli_keytool_keypass")(lambda r, s: ["keytool", "-genkeypair", "-alias", "release", "-keyalg", "RSA", "-keystore", "release.jks", f"-keypass", s, "-dname", "'CN=Acme'"])
cli("git", "cli_git_clone_userinfo", "url")(lambda r, s: ["git", "clone", f"https://{user(r)}:{s}@git.{r.choice(DOMAINS)}/platform/infra.git"])
cli("npm", "cli_npm_authtoken")(lambda r, s: ["npm", "config", "set", f"//npm.{r.choice(DOMAINS)}/:_authToken={s}"])
cli("yarn", "cli_yarn_npm_auth")(lambda r, s: ["yarn", "config", "set", "npmAuthToken", s])
cli("twine", "cli_twine_upload")(lambda r, s: ["twine", "upload", "--repository-url", f"https://pypi.{r.choice(DOMAINS)}/simple/", "-u", user(r), "-p", f"'{s}'", "dist/*"])
cli("gh", "cli_gh_with_token_env")(lambda r, s: [f"GH_TOKEN={s}", "gh", "release", "create", f"v{r.randint(1, 9)}.{r.randint(0, 30)}.0", "--generate-notes"])
cli("glab", "cli_glab_auth_token")(lambda r, s: ["glab", "auth", "login", "--hostname", f"gitlab.{r.choice(DOMAINS)}", "--token", s])
cli("terraform", "cli_terraform_var")(lambda r, s: ["terraform", "apply", "-auto-approve", "-var", f"'db_password={s}'", "-var", f"'env={r.choice(('prod', 'stage'))}'"])
cli("ansible", "cli_ansible_extra_vars")(lambda r, s: ["ansible-playbook", "-i", "inventory/prod", "site.yml", "--extra-vars", f"\"ansible_become_pass={s} app_version=2.4.1\""])
cli("sqlcmd", "cli_sqlcmd_P")(lambda r, s: ["sqlcmd", "-S", f"tcp:{host(r)},1433", "-U", user(r), "-P", f"'{s}'", "-d", db(r), "-Q", "\"SELECT @@VERSION\""])
cli("bcp", "cli_bcp_P")(lambda r, s: ["bcp", f"{db(r)}.dbo.Orders", "out", "orders.dat", "-S", host(r), "-U", user(r), "-P", s, "-c"])
cli("rclone", "cli_rclone_obscure_pass")(lambda r, s: ["rclone", "copy", "./reports", ":sftp:/srv/reports", f"--sftp-host={host(r)}", f"--sftp-user={user(r)}", f"--sftp-pass={s}"])
cli("s3cmd", "cli_s3cmd_secret_key", "{B40}")(lambda r, s: ["s3cmd", f"--access_key={expand(r, 'AKIA{W16}')}", f"--secret_key={s}", "sync", "build/", "s3://acme-static/"])
cli("minio-mc", "cli_mc_alias_set")(lambda r, s: ["mc", "alias", "set", "backup", f"https://{host(r)}:9000", user(r), s])
cli("influx", "cli_influx_t")(lambda r, s: ["influx", "query", "--host", f"http://{host(r)}:8086", "-t", s, "--org", "acme", "'from(bucket:\"metrics\") |> range(start:-1h)'"])
cli("java", "cli_java_dpassword")(lambda r, s: ["java", f"-Dspring.datasource.password={s}", f"-Dspring.datasource.username={user(r)}", "-jar", "app.jar"])
cli("powershell", "cli_ps_securestring", "xml", windows=True)(lambda r, s: ["$pw", "=", "ConvertTo-SecureString", f"\"{s}\"", "-AsPlainText", "-Force"])
cli("net-use", "cli_net_use", windows=True)(lambda r, s: ["net", "use", f"\\\\{host(r)}\\backups", f"/user:CORP\\{user(r)}", s, "/persistent:no"])
cli("mariadb", "cli_mariadb_password_space")(lambda r, s: ["mariadb", "-h", host(r), "-u", user(r), "--password", s, db(r)])
cli("ldapsearch", "cli_ldapsearch_w")(lambda r, s: ["ldapsearch", "-x", "-H", f"ldaps://{host(r)}", "-D", f"\"cn={user(r)},ou=svc,dc=corp,dc=local\"", "-w", f"'{s}'", "-b", "dc=corp,dc=local", "'(uid=*)'"])
cli("rabbitmqctl", "cli_rabbitmqctl_add_user")(lambda r, s: ["rabbitmqctl", "add_user", user(r), f"'{s}'"])
cli("svn", "cli_svn_password")(lambda r, s: ["svn", "checkout", f"https://svn.{r.choice(DOMAINS)}/repos/core/trunk", "--username", user(r), "--password", s, "--non-interactive"])
cli("zip", "cli_zip_P")(lambda r, s: ["zip", "-r", "-P", s, "export.zip", "reports/"])
cli("nmcli", "cli_nmcli_wifi")(lambda r, s: ["nmcli", "dev", "wifi", "connect", f"{r.choice(WORDS).capitalize()}-5G", "password", f"'{s}'"])


def simple(cls: str, context: str, service: str, pw_ctx: str = "code"):
    """Register a one-secret family: ``fn(rng, secret) -> text``; ``pw_ctx`` as for ``cli``."""
    def register(fn):
        def make(rng, svc):
            secret = expand(rng, pw_ctx) if "{" in pw_ctx else password(rng, pw_ctx)
            return fn(rng, secret), [secret]
        FAMILIES.append(Family(cls, context, make, service, None, None))
        return fn
    return register


def jdump(obj) -> str:
    return json.dumps(obj, indent=2)


# ---------------------------------------------------------------- config_json
simple("config_json", "json_appsettings_smtp", "aspnetcore")(lambda r, s: jdump(
    {"Logging": {"LogLevel": {"Default": "Information"}},
     "Smtp": {"Host": f"smtp.{r.choice(DOMAINS)}", "Port": 587, "UserName": f"noreply@{r.choice(DOMAINS)}", "Password": s}}))
simple("config_json", "json_composer_auth", "composer")(lambda r, s: jdump(
    {"http-basic": {f"repo.{r.choice(DOMAINS)}": {"username": user(r), "password": s}}}))
simple("config_json", "json_cypress_env", "cypress")(lambda r, s: jdump(
    {"baseUrl": f"https://staging.{r.choice(DOMAINS)}", "adminUser": f"qa@{r.choice(DOMAINS)}", "adminPassword": s}))
simple("config_json", "json_vscode_sftp", "vscode-sftp")(lambda r, s: jdump(
    {"name": "prod", "host": host(r), "protocol": "sftp", "port": 22, "username": user(r), "password": s,
     "remotePath": "/var/www/html", "uploadOnSave": True}))
simple("config_json", "json_sqltools_connection", "sqltools")(lambda r, s: jdump(
    {"sqltools.connections": [{"name": f"{db(r)} (prod)", "driver": "PostgreSQL", "server": host(r), "port": 5432,
                               "database": db(r), "username": user(r), "password": s}]}))
simple("config_json", "json_lambda_env", "aws-lambda")(lambda r, s: jdump(
    {"FunctionName": f"{db(r)}-ingest", "Environment": {"Variables": {"DB_HOST": host(r), "DB_PASS": s, "STAGE": "prod"}}}))
simple("config_json", "json_grafana_datasource", "grafana-provisioning")(lambda r, s: jdump(
    {"name": "warehouse", "type": "postgres", "url": f"{host(r)}:5432", "user": user(r),
     "secureJsonData": {"password": s}, "jsonData": {"sslmode": "require"}}))
simple("config_json", "json_postman_environment", "postman-env")(lambda r, s: jdump(
    {"name": "Production", "values": [{"key": "baseUrl", "value": f"https://api.{r.choice(DOMAINS)}"},
                                      {"key": "client_secret", "value": s, "type": "secret"}]}))
simple("config_json", "json_tfvars", "terraform-tfvars")(lambda r, s: jdump(
    {"region": "eu-west-1", "db_username": user(r), "db_password": s, "instance_class": "db.t3.medium"}))
simple("config_json", "json_pm2_ecosystem", "pm2")(lambda r, s: jdump(
    {"apps": [{"name": "api", "script": "dist/server.js", "env_production": {"NODE_ENV": "production", "SESSION_SECRET": s}}]}))


simple("config_json", "json_keycloak_adapter", "keycloak")(lambda r, s: jdump(
    {"realm": "acme", "auth-server-url": f"https://sso.{r.choice(DOMAINS)}/", "resource": f"{db(r)}-api",
     "credentials": {"secret": s}, "confidential-port": 0}))


@family("config_json", "json_webhook_keys", service="webhook-relay")
def _json_webhook_keys(rng, svc):
    s = password(rng, "code") if rng.random() < 0.5 else expand(rng, "{B44}")
    key = rng.choice(("signing_key", "signingSecret", "hmac_secret", "auth", "accessKey", "pwd", "passwd"))
    return jdump({"webhooks": [{"url": f"https://hooks.{rng.choice(DOMAINS)}/ingest", key: s, "events": ["order.paid"]}]}), [s]


@family("config_json", "json_gcp_service_account", service="gcp-service-account")
def _json_gcp_sa(rng, svc):
    body = "\\n".join(rand(rng, B64, 64) for _ in range(rng.randint(3, 6)))
    text = jdump({"type": "service_account", "project_id": f"acme-{rand(rng, LOWER_ALNUM, 6)}",
                  "private_key_id": rand(rng, HEX, 40), "private_key": "@@KEY@@",
                  "client_email": f"etl@acme-{rand(rng, LOWER_ALNUM, 6)}.iam.gserviceaccount.com"})
    key = f"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n"
    return text.replace("@@KEY@@", key), [body]


@family("config_json", "json_aws_sts_output", service="aws-sts")
def _json_sts(rng, svc):
    secret, session = expand(rng, "{B40}"), expand(rng, "IQoJb3JpZ2luX2VjE{B300}")
    return jdump({"Credentials": {"AccessKeyId": expand(rng, "ASIA{W16}"), "SecretAccessKey": secret,
                                  "SessionToken": session, "Expiration": "2025-06-01T14:03:11+00:00"}}), [secret, session]


@family("config_json", "json_keywordless_vendor", pool="vendor", accepts=prefixed_only)
def _json_keywordless(rng, svc):
    v, t = vtok(rng, svc)
    name = svc.upper().replace("-", "_")
    return jdump({"env": rng.choice(("prod", "production")), "region": "us-east-1", name: t}), [t]


# ---------------------------------------------------------------- config_yaml
def yq(s: str) -> str:
    return f"\"{s}\""


simple("config_yaml", "yaml_compose_environment", "docker-compose")(lambda r, s: (
    f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: {user(r)}\n"
    f"      POSTGRES_PASSWORD: {yq(s)}\n      POSTGRES_DB: {db(r)}\n    ports:\n      - \"5432:5432\""))
simple("config_yaml", "yaml_k8s_secret_stringdata", "kubernetes")(lambda r, s: (
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {db(r)}-db\n  namespace: prod\ntype: Opaque\n"
    f"stringData:\n  username: {user(r)}\n  password: {yq(s)}"))
simple("config_yaml", "yaml_actions_service_container", "github-actions")(lambda r, s: (
    f"jobs:\n  test:\n    runs-on: ubuntu-latest\n    services:\n      mysql:\n        image: mysql:8.0\n"
    f"        env:\n          MYSQL_ROOT_PASSWORD: {yq(s)}\n        ports: ['3306:3306']"))
simple("config_yaml", "yaml_gitlab_ci_variables", "gitlab-ci")(lambda r, s: (
    f"variables:\n  DOCKER_DRIVER: overlay2\n  DEPLOY_USER: {user(r)}\n  DEPLOY_PASSWORD: {yq(s)}\n\n"
    f"deploy:\n  stage: deploy\n  script:\n    - ./scripts/deploy.sh"))
simple("config_yaml", "yaml_ansible_group_vars", "ansible")(lambda r, s: (
    f"---\nmysql_root_user: root\nmysql_root_password: {yq(s)}\nmysql_databases:\n  - name: {db(r)}"))
simple("config_yaml", "yaml_ansible_inventory", "ansible")(lambda r, s: (
    f"all:\n  hosts:\n    {host(r)}:\n      ansible_user: {user(r)}\n      ansible_password: {yq(s)}\n      ansible_connection: winrm"))
simple("config_yaml", "yaml_rails_database", "rails")(lambda r, s: (
    f"production:\n  adapter: postgresql\n  encoding: unicode\n  database: {db(r)}_production\n"
    f"  username: {user(r)}\n  password: {yq(s)}\n  host: {host(r)}"))
simple("config_yaml", "yaml_spring_application", "spring-boot")(lambda r, s: (
    f"spring:\n  datasource:\n    url: jdbc:mysql://{host(r)}:3306/{db(r)}\n    username: {user(r)}\n"
    f"    password: {yq(s)}\n  jpa:\n    hibernate:\n      ddl-auto: validate"))
simple("config_yaml", "yaml_helm_values", "helm")(lambda r, s: (
    f"postgresql:\n  enabled: true\n  auth:\n    username: {user(r)}\n    password: {yq(s)}\n    database: {db(r)}"))
simple("config_yaml", "yaml_home_assistant_secrets", "home-assistant")(lambda r, s: (
    f"# secrets.yaml\nlatitude: 52.37\nmqtt_username: {user(r)}\nmqtt_password: {yq(s)}"))
simple("config_yaml", "yaml_netplan_wifi", "netplan", "shell")(lambda r, s: (
    f"network:\n  version: 2\n  wifis:\n    wlan0:\n      dhcp4: true\n      access-points:\n"
    f"        \"{r.choice(WORDS).capitalize()}-Office\":\n          password: \"{s}\""))
simple("config_yaml", "yaml_alertmanager_smtp", "alertmanager")(lambda r, s: (
    f"global:\n  smtp_smarthost: 'smtp.{r.choice(DOMAINS)}:587'\n  smtp_from: alerts@{r.choice(DOMAINS)}\n"
    f"  smtp_auth_username: alerts\n  smtp_auth_password: {yq(s)}"))
simple("config_yaml", "yaml_airflow_connections", "airflow")(lambda r, s: (
    f"connections:\n  - conn_id: warehouse\n    conn_type: postgres\n    host: {host(r)}\n"
    f"    login: {user(r)}\n    password: {yq(s)}\n    port: 5432"))


@family("config_yaml", "yaml_keywordless_vendor", pool="vendor", accepts=prefixed_only)
def _yaml_keywordless(rng, svc):
    v, t = vtok(rng, svc)
    return f"integrations:\n  {svc.replace('-', '_')}: {t}\n  region: eu\n  enabled: true", [t]


# ---------------------------------------------------------------- config_xml
simple("config_xml", "xml_maven_settings", "maven", "xml")(lambda r, s: (
    f"<settings>\n  <servers>\n    <server>\n      <id>internal-releases</id>\n      <username>{user(r)}</username>\n"
    f"      <password>{s}</password>\n    </server>\n  </servers>\n</settings>"))
simple("config_xml", "xml_nuget_config", "nuget", "xml")(lambda r, s: (
    f"<configuration>\n  <packageSourceCredentials>\n    <internal>\n      <add key=\"Username\" value=\"{user(r)}\" />\n"
    f"      <add key=\"ClearTextPassword\" value=\"{s}\" />\n    </internal>\n  </packageSourceCredentials>\n</configuration>"))
simple("config_xml", "xml_webconfig_appsettings", "aspnet-webconfig", "xml")(lambda r, s: (
    f"<appSettings>\n  <add key=\"SmtpServer\" value=\"smtp.{r.choice(DOMAINS)}\" />\n"
    f"  <add key=\"SmtpPassword\" value=\"{s}\" />\n</appSettings>"))
simple("config_xml", "xml_hibernate_cfg", "hibernate", "xml")(lambda r, s: (
    f"<hibernate-configuration>\n  <session-factory>\n    <property name=\"connection.url\">jdbc:postgresql://{host(r)}/{db(r)}</property>\n"
    f"    <property name=\"connection.username\">{user(r)}</property>\n"
    f"    <property name=\"connection.password\">{s}</property>\n  </session-factory>\n</hibernate-configuration>"))
simple("config_xml", "xml_persistence_unit", "jpa", "xml")(lambda r, s: (
    f"<persistence-unit name=\"main\">\n  <properties>\n    <property name=\"javax.persistence.jdbc.user\" value=\"{user(r)}\"/>\n"
    f"    <property name=\"javax.persistence.jdbc.password\" value=\"{s}\"/>\n  </properties>\n</persistence-unit>"))
simple("config_xml", "xml_jenkins_credentials", "jenkins", "{AQAAABAAAAAQ{B44}=}")(lambda r, s: (
    f"<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n  <scope>GLOBAL</scope>\n"
    f"  <id>deploy-creds</id>\n  <username>{user(r)}</username>\n  <password>{s}</password>\n"
    f"</com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>"))
simple("config_xml", "xml_tomcat_users", "tomcat", "xml")(lambda r, s: (
    f"<tomcat-users>\n  <role rolename=\"manager-gui\"/>\n  <user username=\"{user(r)}\" password=\"{s}\" roles=\"manager-gui,admin-gui\"/>\n</tomcat-users>"))
simple("config_xml", "xml_tomcat_context_resource", "tomcat", "xml")(lambda r, s: (
    f"<Context>\n  <Resource name=\"jdbc/{db(r)}\" auth=\"Container\" type=\"javax.sql.DataSource\"\n"
    f"            username=\"{user(r)}\" password=\"{s}\"\n            url=\"jdbc:mysql://{host(r)}:3306/{db(r)}\"/>\n</Context>"))
simple("config_xml", "xml_logback_smtp", "logback", "xml")(lambda r, s: (
    f"<appender name=\"EMAIL\" class=\"ch.qos.logback.classic.net.SMTPAppender\">\n  <smtpHost>smtp.{r.choice(DOMAINS)}</smtpHost>\n"
    f"  <username>alerts</username>\n  <password>{s}</password>\n</appender>"))
simple("config_xml", "xml_wildfly_datasource", "wildfly", "xml")(lambda r, s: (
    f"<datasource jndi-name=\"java:jboss/datasources/{db(r)}\" pool-name=\"{db(r)}\">\n  <connection-url>jdbc:postgresql://{host(r)}/{db(r)}</connection-url>\n"
    f"  <security>\n    <user-name>{user(r)}</user-name>\n    <password>{s}</password>\n  </security>\n</datasource>"))
simple("config_xml", "xml_windows_unattend", "windows-unattend", "xml")(lambda r, s: (
    f"<UserAccounts>\n  <AdministratorPassword>\n    <Value>{s}</Value>\n    <PlainText>true</PlainText>\n  </AdministratorPassword>\n</UserAccounts>"))
simple("config_xml", "xml_flyway_plugin", "flyway", "xml")(lambda r, s: (
    f"<plugin>\n  <groupId>org.flywaydb</groupId>\n  <artifactId>flyway-maven-plugin</artifactId>\n  <configuration>\n"
    f"    <url>jdbc:postgresql://{host(r)}:5432/{db(r)}</url>\n    <user>{user(r)}</user>\n    <password>{s}</password>\n  </configuration>\n</plugin>"))


@family("config_xml", "xml_android_strings", pool="vendor")
def _xml_android_strings(rng, svc):
    v, t = vtok(rng, svc)
    return (f"<resources>\n    <string name=\"app_name\">Acme</string>\n"
            f"    <string name=\"{short_key(v.var)}\" translatable=\"false\">{t}</string>\n</resources>"), [t]


# ---------------------------------------------------------------- config_toml
simple("config_toml", "toml_gitlab_runner", "gitlab-runner", "glrt-{S20}")(lambda r, s: (
    f"concurrent = 4\n\n[[runners]]\n  name = \"{host(r)}\"\n  url = \"https://gitlab.{r.choice(DOMAINS)}\"\n"
    f"  token = \"{s}\"\n  executor = \"docker\""))
simple("config_toml", "toml_cargo_credentials", "cargo", "cio{A32}")(lambda r, s: (
    f"[registry]\ntoken = \"{s}\""))
simple("config_toml", "toml_streamlit_secrets", "streamlit")(lambda r, s: (
    f"[connections.postgresql]\ndialect = \"postgresql\"\nhost = \"{host(r)}\"\nport = \"5432\"\n"
    f"database = \"{db(r)}\"\nusername = \"{user(r)}\"\npassword = \"{s}\""))
simple("config_toml", "toml_telegraf_influx", "telegraf")(lambda r, s: (
    f"[[outputs.influxdb]]\n  urls = [\"http://{host(r)}:8086\"]\n  database = \"telegraf\"\n"
    f"  username = \"telegraf\"\n  password = \"{s}\""))
simple("config_toml", "toml_vector_sink", "vector", "{H32}")(lambda r, s: (
    f"[sinks.datadog]\ntype = \"datadog_logs\"\ninputs = [\"app_logs\"]\ndefault_api_key = \"{s}\"\nsite = \"datadoghq.eu\""))
simple("config_toml", "toml_rocket_secret_key", "rocket", "{B43}=")(lambda r, s: (
    f"[release]\naddress = \"0.0.0.0\"\nport = 8000\nsecret_key = \"{s}\""))
simple("config_toml", "toml_dynaconf_secrets", "dynaconf")(lambda r, s: (
    f"[production]\nDB_USER = \"{user(r)}\"\nDB_PASSWORD = \"{s}\""))
simple("config_toml", "toml_poetry_http_basic", "poetry")(lambda r, s: (
    f"[http-basic.internal]\nusername = \"{user(r)}\"\npassword = \"{s}\""))
simple("config_toml", "toml_uv_index_url", "uv", "url")(lambda r, s: (
    f"[[tool.uv.index]]\nname = \"internal\"\nurl = \"https://{user(r)}:{s}@pypi.{r.choice(DOMAINS)}/simple\""))
simple("config_toml", "toml_wrangler_vars", "wrangler")(lambda r, s: (
    f"name = \"edge-api\"\nmain = \"src/index.ts\"\ncompatibility_date = \"2024-09-23\"\n\n[vars]\nUPSTREAM_API_SECRET = \"{s}\""))
simple("config_toml", "toml_netlify_env", "netlify-toml")(lambda r, s: (
    f"[build]\n  command = \"npm run build\"\n\n[context.production.environment]\n  ADMIN_PASSWORD = \"{s}\""))
simple("config_toml", "toml_pgcat_users", "pgcat")(lambda r, s: (
    f"[pools.{db(r)}.users.0]\nusername = \"{user(r)}\"\npassword = \"{s}\"\npool_size = 20"))
simple("config_toml", "toml_oauth2_proxy_cfg", "oauth2-proxy", "{S32}")(lambda r, s: (
    f"provider = \"oidc\"\nclient_id = \"{db(r)}-portal\"\nclient_secret = \"{s}\"\n"
    f"cookie_secure = true\nemail_domains = [\"{r.choice(DOMAINS)}\"]"))
simple("config_toml", "hcl_terraform_db_instance", "terraform")(lambda r, s: (
    f"resource \"aws_db_instance\" \"{db(r)}\" {{\n  engine         = \"postgres\"\n  instance_class = \"db.t3.medium\"\n"
    f"  username       = \"{user(r)}\"\n  password       = \"{s}\"\n}}"))
simple("config_toml", "toml_config_rs_settings", "config-rs")(lambda r, s: (
    f"[database]\nhost = \"{host(r)}\"\nuser = \"{user(r)}\"\npass = \"{s}\"\n\n[server]\nport = 8080"))


# ---------------------------------------------------------------- config_ini_env
simple("config_ini_env", "env_laravel", "laravel", "ini")(lambda r, s: (
    f"APP_ENV=production\nDB_CONNECTION=mysql\nDB_HOST={host(r)}\nDB_PORT=3306\nDB_DATABASE={db(r)}\n"
    f"DB_USERNAME={user(r)}\nDB_PASSWORD={s}\nCACHE_DRIVER=redis"))
simple("config_ini_env", "env_mail_password_quoted", "laravel", "code")(lambda r, s: (
    f"MAIL_MAILER=smtp\nMAIL_HOST=smtp.{r.choice(DOMAINS)}\nMAIL_USERNAME=noreply\nMAIL_PASSWORD=\"{s}\""))
simple("config_ini_env", "py_django_settings", "django", "code")(lambda r, s: (
    f"DATABASES = {{\n    \"default\": {{\n        \"ENGINE\": \"django.db.backends.postgresql\",\n"
    f"        \"NAME\": \"{db(r)}\",\n        \"USER\": \"{user(r)}\",\n        \"PASSWORD\": \"{s}\",\n"
    f"        \"HOST\": \"{host(r)}\",\n    }}\n}}"))
simple("config_ini_env", "py_django_secret_key", "django", "{A50}")(lambda r, s: (
    f"DEBUG = False\nALLOWED_HOSTS = [\"{r.choice(DOMAINS)}\"]\nSECRET_KEY = '{s}'"))
simple("config_ini_env", "php_wp_config", "wordpress", "xml")(lambda r, s: (
    f"define( 'DB_NAME', '{db(r)}' );\ndefine( 'DB_USER', '{user(r)}' );\ndefine( 'DB_PASSWORD', '{s}' );\n"
    f"define( 'DB_HOST', 'localhost' );"))
simple("config_ini_env", "properties_spring", "spring-boot", "ini")(lambda r, s: (
    f"spring.datasource.url=jdbc:postgresql://{host(r)}:5432/{db(r)}\nspring.datasource.username={user(r)}\n"
    f"spring.datasource.password={s}\nspring.jpa.open-in-view=false"))
simple("config_ini_env", "php_codeigniter_db", "codeigniter", "xml")(lambda r, s: (
    f"$db['default'] = array(\n    'hostname' => '{host(r)}',\n    'username' => '{user(r)}',\n"
    f"    'password' => '{s}',\n    'database' => '{db(r)}',\n    'dbdriver' => 'mysqli',\n);"))
simple("config_ini_env", "ini_pypirc", "twine", "ini")(lambda r, s: (
    f"[distutils]\nindex-servers =\n    internal\n\n[internal]\nrepository = https://pypi.{r.choice(DOMAINS)}/\n"
    f"username = {user(r)}\npassword = {s}"))
simple("config_ini_env", "ini_pip_conf_index_url", "pip", "url")(lambda r, s: (
    f"[global]\nindex-url = https://{user(r)}:{s}@pypi.{r.choice(DOMAINS)}/simple\ntimeout = 60"))
simple("config_ini_env", "ini_npmrc_authtoken", "npm", "{N}")(lambda r, s: (
    f"registry=https://npm.{r.choice(DOMAINS)}/\n//npm.{r.choice(DOMAINS)}/:_authToken={s}\nalways-auth=true"))
simple("config_ini_env", "ini_git_credentials", "git", "ghp_{A36}")(lambda r, s: (
    f"https://{user(r)}:{s}@github.com"))
simple("config_ini_env", "ini_my_cnf", "mysql", "ini")(lambda r, s: (
    f"[client]\nuser={user(r)}\npassword={s}\nhost={host(r)}"))
simple("config_ini_env", "ini_cifs_credentials", "cifs-utils", "ini")(lambda r, s: (
    f"username={user(r)}\npassword={s}\ndomain=CORP"))
simple("config_ini_env", "ini_rclone_conf", "rclone", "{B40}")(lambda r, s: (
    f"[wasabi]\ntype = s3\nprovider = Wasabi\naccess_key_id = {expand(r, '{U20}')}\nsecret_access_key = {s}\n"
    f"endpoint = s3.eu-central-1.wasabisys.com"))
simple("config_ini_env", "ini_aws_credentials", "aws", "{B40}")(lambda r, s: (
    f"[default]\naws_access_key_id = {expand(r, 'AKIA{W16}')}\naws_secret_access_key = {s}\nregion = eu-west-1"))
simple("config_ini_env", "ini_grafana_security", "grafana", "ini")(lambda r, s: (
    f"[security]\nadmin_user = admin\nadmin_password = {s}\ncookie_secure = true"))
simple("config_ini_env", "ini_gitea_app", "gitea", "ini")(lambda r, s: (
    f"[database]\nDB_TYPE  = postgres\nHOST     = {host(r)}:5432\nNAME     = gitea\nUSER     = gitea\nPASSWD   = {s}"))
simple("config_ini_env", "conf_wpa_supplicant", "wpa_supplicant", "shell")(lambda r, s: (
    f"network={{\n    ssid=\"{r.choice(WORDS).capitalize()}-Guest\"\n    psk=\"{s}\"\n    key_mgmt=WPA-PSK\n}}"))
simple("config_ini_env", "conf_netrc", "netrc", "shell")(lambda r, s: (
    f"machine {host(r)}\n  login {user(r)}\n  password {s}"))
simple("config_ini_env", "systemd_environment", "systemd", "shell")(lambda r, s: (
    f"[Service]\nUser=app\nEnvironment=\"DB_HOST={host(r)}\"\nEnvironment=\"DB_PASS={s}\"\nExecStart=/opt/app/bin/server"))
simple("config_ini_env", "conf_pgpass", "libpq", "shell")(lambda r, s: (
    f"{host(r)}:5432:{db(r)}:{user(r)}:{s}"))
simple("config_ini_env", "ini_odoo_conf", "odoo", "ini")(lambda r, s: (
    f"[options]\nadmin_passwd = {s}\ndb_host = {host(r)}\ndb_user = odoo\naddons_path = /mnt/extra-addons"))
simple("config_ini_env", "ini_supervisord_env", "supervisord", "shell")(lambda r, s: (
    f"[program:worker]\ncommand=/srv/app/venv/bin/celery -A app worker\nenvironment=BROKER_PASSWORD=\"{s}\",LANG=\"C.UTF-8\""))


@family("config_ini_env", "env_keywordless_vendor", pool="vendor", accepts=prefixed_only)
def _env_keywordless(rng, svc):
    v, t = vtok(rng, svc)
    return f"APP_NAME=storefront\n{svc.upper().replace('-', '_')}={t}\nFEATURE_FLAGS=checkout_v2", [t]


# ---------------------------------------------------------------- connection_string
def place_conn(rng: random.Random, conn: str, var: str = "DATABASE_URL") -> str:
    """Where connection strings live: env files, YAML, Python settings, JSON, shell."""
    where = rng.randrange(5)
    if where == 0:
        return f"{var}={conn}"
    if where == 1:
        return f"database:\n  url: \"{conn}\"\n  pool_size: {rng.randint(5, 30)}"
    if where == 2:
        return f"import os\n\n{var} = os.environ.get(\"{var}\", \"{conn}\")"
    if where == 3:
        return jdump({"db": {"connection": conn, "ssl": True}})
    return f"export {var}='{conn}'"


def conn_family(context: str, service: str, pw_ctx: str, build, var: str = "DATABASE_URL"):
    def make(rng, svc):
        secret = expand(rng, pw_ctx) if "{" in pw_ctx else password(rng, pw_ctx)
        return place_conn(rng, build(rng, secret), var), [secret]
    FAMILIES.append(Family("connection_string", context, make, service, None, None))


conn_family("cs_postgres_uri", "postgres", "url", lambda r, s: f"postgresql://{user(r)}:{s}@{host(r)}:5432/{db(r)}?sslmode=require")
conn_family("cs_mysql_uri", "mysql", "url", lambda r, s: f"mysql://{user(r)}:{s}@{host(r)}:3306/{db(r)}")
conn_family("cs_sqlalchemy_pymysql", "sqlalchemy", "url", lambda r, s: f"mysql+pymysql://{user(r)}:{s}@{host(r)}/{db(r)}?charset=utf8mb4", "SQLALCHEMY_DATABASE_URI")
conn_family("cs_mongodb_srv", "mongodb", "url", lambda r, s: f"mongodb+srv://{user(r)}:{s}@cluster0.{rand(r, LOWER_ALNUM, 5)}.mongodb.net/{db(r)}?retryWrites=true&w=majority", "MONGODB_URI")
conn_family("cs_redis_url", "redis", "url", lambda r, s: f"rediss://default:{s}@{host(r)}:6380/0", "REDIS_URL")
conn_family("cs_amqp_url", "rabbitmq", "url", lambda r, s: f"amqps://{user(r)}:{s}@{host(r)}:5671/%2F", "CELERY_BROKER_URL")
conn_family("cs_mssql_ado", "sqlserver", "ini", lambda r, s: f"Server=tcp:{host(r)},1433;Initial Catalog={db(r)};User ID={user(r)};Password={s};Encrypt=True;", "ConnectionStrings__Default")
conn_family("cs_jdbc_postgres_params", "jdbc-postgres", "url", lambda r, s: f"jdbc:postgresql://{host(r)}:5432/{db(r)}?user={user(r)}&password={s}&ssl=true", "JDBC_URL")
conn_family("cs_jdbc_sqlserver", "jdbc-sqlserver", "ini", lambda r, s: f"jdbc:sqlserver://{host(r)}:1433;databaseName={db(r)};user={user(r)};password={s};encrypt=true", "JDBC_URL")
conn_family("cs_odbc_pwd", "odbc", "ini", lambda r, s: f"Driver={{ODBC Driver 18 for SQL Server}};Server={host(r)};Database={db(r)};UID={user(r)};PWD={s};", "ODBC_CONN")
conn_family("cs_smtp_url", "smtp", "url", lambda r, s: f"smtp://{user(r)}:{s}@smtp.{r.choice(DOMAINS)}:587", "EMAIL_URL")
conn_family("cs_oracle_easy_connect", "oracle", "shell", lambda r, s: f"{user(r)}/{s}@{host(r)}:1521/ORCLPDB1", "ORACLE_CONN")
conn_family("cs_snowflake_url", "snowflake", "url", lambda r, s: f"snowflake://{user(r)}:{s}@acme-{rand(r, LOWER_ALNUM, 7)}/{db(r)}/public?warehouse=COMPUTE_WH", "SNOWFLAKE_URL")
conn_family("cs_azure_storage", "azure-storage", "{B86}==", lambda r, s: f"DefaultEndpointsProtocol=https;AccountName=acme{rand(r, LOWER_ALNUM, 6)};AccountKey={s};EndpointSuffix=core.windows.net", "AZURE_STORAGE_CONNECTION_STRING")
conn_family("cs_azure_servicebus", "azure-servicebus", "{B43}=", lambda r, s: f"Endpoint=sb://acme-{rand(r, LOWER_ALNUM, 5)}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={s}", "SERVICEBUS_CONNECTION")
conn_family("cs_elasticsearch_url", "elasticsearch", "url", lambda r, s: f"https://elastic:{s}@{host(r)}:9200", "ELASTICSEARCH_URL")
conn_family("cs_clickhouse_url", "clickhouse", "url", lambda r, s: f"clickhouse://{user(r)}:{s}@{host(r)}:9000/{db(r)}", "CLICKHOUSE_URL")
conn_family("cs_nats_url", "nats", "url", lambda r, s: f"nats://{user(r)}:{s}@{host(r)}:4222", "NATS_URL")


@family("connection_string", "cs_kafka_jaas", service="kafka")
def _cs_kafka_jaas(rng, svc):
    s = password(rng, "ini")
    key = expand(rng, "{U16}")
    return (f"bootstrap.servers=pkc-{rand(rng, LOWER_ALNUM, 5)}.eu-west-1.aws.confluent.cloud:9092\nsecurity.protocol=SASL_SSL\n"
            f"sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            f"username=\"{key}\" password=\"{s}\";"), [s]


@family("connection_string", "cs_ldap_bind", service="ldap")
def _cs_ldap_bind(rng, svc):
    s = password(rng, "code")
    return (f"ldap:\n  url: ldaps://{host(rng)}:636\n  bind_dn: \"cn={user(rng)},ou=services,dc=corp,dc=local\"\n"
            f"  bind_password: \"{s}\"\n  user_search_base: \"ou=people,dc=corp,dc=local\""), [s]


@family("connection_string", "cs_webconfig_connectionstrings", service="aspnet-webconfig")
def _cs_webconfig(rng, svc):
    s = password(rng, "xml")
    return (f"<connectionStrings>\n  <add name=\"Default\" providerName=\"System.Data.SqlClient\"\n"
            f"       connectionString=\"Data Source={host(rng)};Initial Catalog={db(rng)};User Id={user(rng)};Password={s};\" />\n"
            f"</connectionStrings>"), [s]


# ---------------------------------------------------------------- password_in_code
def code(context: str, service: str, pw_ctx: str = "code"):
    return simple("password_in_code", context, service, pw_ctx)


code("py_psycopg2_connect", "psycopg2")(lambda r, s: (
    f"import psycopg2\n\nconn = psycopg2.connect(\n    host=\"{host(r)}\",\n    dbname=\"{db(r)}\",\n"
    f"    user=\"{user(r)}\",\n    password=\"{s}\",\n)"))
code("py_pymysql_positional", "pymysql")(lambda r, s: (
    f"import pymysql\n\ndb = pymysql.connect(\"{host(r)}\", \"{user(r)}\", \"{s}\", \"{db(r)}\")\ncursor = db.cursor()"))
code("py_requests_auth_tuple", "requests")(lambda r, s: (
    f"resp = requests.get(\n    \"https://{host(r)}/api/v1/reports\",\n    auth=(\"{user(r)}\", \"{s}\"),\n    timeout=30,\n)"))
code("py_smtplib_login", "smtplib")(lambda r, s: (
    f"with smtplib.SMTP(\"smtp.{r.choice(DOMAINS)}\", 587) as server:\n    server.starttls()\n"
    f"    server.login(\"reports@{r.choice(DOMAINS)}\", \"{s}\")\n    server.send_message(msg)"))
code("py_paramiko_connect", "paramiko")(lambda r, s: (
    f"client = paramiko.SSHClient()\nclient.set_missing_host_key_policy(paramiko.AutoAddPolicy())\n"
    f"client.connect(\"{host(r)}\", username=\"{user(r)}\", password=\"{s}\")"))
code("py_redis_client", "redis-py")(lambda r, s: (
    f"cache = redis.Redis(host=\"{host(r)}\", port=6379, password=\"{s}\", decode_responses=True)"))
code("py_module_constants", "python-settings")(lambda r, s: (
    f"# settings for the nightly export\nEXPORT_HOST = \"{host(r)}\"\nEXPORT_USER = \"{user(r)}\"\nEXPORT_PASS = \"{s}\""))
code("js_mysql2_connection", "mysql2")(lambda r, s: (
    f"const connection = mysql.createConnection({{\n  host: '{host(r)}',\n  user: '{user(r)}',\n"
    f"  password: '{s}',\n  database: '{db(r)}'\n}});"))
code("js_nodemailer_transport", "nodemailer")(lambda r, s: (
    f"const transporter = nodemailer.createTransport({{\n  host: 'smtp.{r.choice(DOMAINS)}',\n  port: 465,\n"
    f"  secure: true,\n  auth: {{ user: 'noreply@{r.choice(DOMAINS)}', pass: '{s}' }},\n}});"))
code("js_pg_pool", "node-postgres")(lambda r, s: (
    f"const pool = new Pool({{\n  host: '{host(r)}',\n  user: '{user(r)}',\n  password: '{s}',\n  max: 20,\n}});"))
code("js_axios_basic_auth", "axios")(lambda r, s: (
    f"const {{ data }} = await axios.get(`${{BASE}}/export`, {{\n  auth: {{ username: '{user(r)}', password: '{s}' }},\n}});"))
code("ts_typeorm_datasource", "typeorm")(lambda r, s: (
    f"export const AppDataSource = new DataSource({{\n  type: 'postgres',\n  host: '{host(r)}',\n"
    f"  username: '{user(r)}',\n  password: '{s}',\n  database: '{db(r)}',\n}});"))
code("go_sql_open_dsn", "go-sql-driver", "url")(lambda r, s: (
    f"db, err := sql.Open(\"mysql\", \"{user(r)}:{s}@tcp({host(r)}:3306)/{db(r)}?parseTime=true\")\n"
    f"if err != nil {{\n\tlog.Fatal(err)\n}}"))
code("go_redis_options", "go-redis")(lambda r, s: (
    f"rdb := redis.NewClient(&redis.Options{{\n\tAddr:     \"{host(r)}:6379\",\n\tPassword: \"{s}\",\n\tDB:       0,\n}})"))
code("go_smtp_plainauth", "go-net-smtp")(lambda r, s: (
    f"auth := smtp.PlainAuth(\"\", \"alerts@{r.choice(DOMAINS)}\", \"{s}\", \"smtp.{r.choice(DOMAINS)}\")"))
code("java_drivermanager", "jdbc")(lambda r, s: (
    f"Connection conn = DriverManager.getConnection(\n    \"jdbc:mysql://{host(r)}:3306/{db(r)}\", \"{user(r)}\", \"{s}\");"))
code("java_javamail_auth", "javamail")(lambda r, s: (
    f"Session session = Session.getInstance(props, new Authenticator() {{\n    protected PasswordAuthentication getPasswordAuthentication() {{\n"
    f"        return new PasswordAuthentication(\"{user(r)}\", \"{s}\");\n    }}\n}});"))
code("cs_network_credential", "dotnet-net")(lambda r, s: (
    f"var client = new SmtpClient(\"smtp.{r.choice(DOMAINS)}\", 587)\n{{\n"
    f"    Credentials = new NetworkCredential(\"{user(r)}\", \"{s}\"),\n    EnableSsl = true\n}};"))
code("cs_sqlconnection_literal", "sqlclient", "ini")(lambda r, s: (
    f"using var conn = new SqlConnection(\"Server={host(r)};Database={db(r)};User Id={user(r)};Password={s};\");\nconn.Open();"))
code("rb_net_smtp_start", "net-smtp-ruby")(lambda r, s: (
    f"Net::SMTP.start('smtp.{r.choice(DOMAINS)}', 587, 'localhost', '{user(r)}', '{s}', :login) do |smtp|\n"
    f"  smtp.send_message(msg, from, to)\nend"))
code("rb_establish_connection", "activerecord")(lambda r, s: (
    f"ActiveRecord::Base.establish_connection(\n  adapter: 'mysql2',\n  host: '{host(r)}',\n"
    f"  username: '{user(r)}',\n  password: '{s}',\n  database: '{db(r)}'\n)"))
code("php_pdo_new", "pdo")(lambda r, s: (
    f"$pdo = new PDO('mysql:host={host(r)};dbname={db(r)}', '{user(r)}', '{s}');\n"
    f"$pdo->setAttribute(PDO::ATTR_ERRMODE, PDO::ERRMODE_EXCEPTION);"))
code("php_mysqli_connect", "mysqli")(lambda r, s: (
    f"$link = mysqli_connect('{host(r)}', '{user(r)}', '{s}', '{db(r)}');\nif (!$link) {{ die('db down'); }}"))
code("rs_reqwest_basic_auth", "reqwest")(lambda r, s: (
    f"let resp = client\n    .get(\"https://{host(r)}/api/export\")\n    .basic_auth(\"{user(r)}\", Some(\"{s}\"))\n"
    f"    .send()\n    .await?;"))
code("rs_tokio_postgres_config", "tokio-postgres")(lambda r, s: (
    f"let (client, connection) = tokio_postgres::Config::new()\n    .host(\"{host(r)}\")\n    .user(\"{user(r)}\")\n"
    f"    .password(\"{s}\")\n    .connect(NoTls)\n    .await?;"))
code("sh_script_variable", "bash-script", "shell")(lambda r, s: (
    f"#!/bin/sh\nDB_USER={user(r)}\nDB_PASS='{s}'\nmysqldump -u\"$DB_USER\" -p\"$DB_PASS\" {db(r)} > /backups/{db(r)}.sql"))
code("kt_datasource_builder", "hikaricp")(lambda r, s: (
    f"val ds = HikariDataSource().apply {{\n    jdbcUrl = \"jdbc:postgresql://{host(r)}/{db(r)}\"\n"
    f"    username = \"{user(r)}\"\n    password = \"{s}\"\n}}"))


# ---------------------------------------------------------------- encoded
def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def enc(context: str, service: str):
    """Register an encoded family: ``fn(rng, password) -> (text, encoded secret)``."""
    def register(fn):
        def make(rng, svc):
            text, secret = fn(rng, password(rng, "code"))
            return text, [secret]
        FAMILIES.append(Family("encoded", context, make, service, None, None))
        return fn
    return register


@enc("enc_k8s_secret_data", "kubernetes")
def _enc_k8s(r, p):
    e = b64(p)
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {db(r)}-credentials\ntype: Opaque\n"
            f"data:\n  username: {b64(user(r))}\n  password: {e}"), e


@enc("enc_k8s_dockerconfigjson", "kubernetes")
def _enc_k8s_dockercfg(r, p):
    reg = f"registry.{r.choice(DOMAINS)}"
    u = user(r)
    e = b64(json.dumps({"auths": {reg: {"username": u, "password": p, "auth": b64(f"{u}:{p}")}}}))
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\n"
            f"data:\n  .dockerconfigjson: {e}"), e


@enc("enc_docker_config_auths", "docker")
def _enc_docker_auths(r, p):
    e = b64(f"{user(r)}:{p}")
    return jdump({"auths": {f"registry.{r.choice(DOMAINS)}": {"auth": e}}, "credsStore": ""}), e


@enc("enc_legacy_dockercfg", "dockercfg")
def _enc_dockercfg(r, p):
    e = b64(f"{user(r)}:{p}")
    return jdump({"https://index.docker.io/v1/": {"auth": e, "email": f"{user(r)}@{r.choice(DOMAINS)}"}}), e


@enc("enc_basic_auth_curl", "http-basic")
def _enc_basic_curl(r, p):
    e = b64(f"{user(r)}:{p}")
    return f"curl -H \"Authorization: Basic {e}\" https://{host(r)}/api/v1/metrics", e


@enc("enc_nginx_proxy_basic", "nginx")
def _enc_nginx(r, p):
    e = b64(f"{user(r)}:{p}")
    return (f"location /upstream/ {{\n    proxy_pass http://{host(r)}:8080/;\n"
            f"    proxy_set_header Authorization \"Basic {e}\";\n}}"), e


@enc("enc_git_extraheader", "git")
def _enc_git_header(r, p):
    e = b64(f"x-access-token:{p}")
    return f"git -c http.extraHeader=\"AUTHORIZATION: basic {e}\" fetch origin main", e


@enc("enc_smtp_auth_login_transcript", "smtp-auth")
def _enc_smtp(r, p):
    e = b64(p)
    return (f"C: AUTH LOGIN\nS: 334 VXNlcm5hbWU6\nC: {b64(user(r) + '@' + r.choice(DOMAINS))}\n"
            f"S: 334 UGFzc3dvcmQ6\nC: {e}\nS: 235 2.7.0 Authentication successful"), e


@enc("enc_aws_secretsmanager_json_escaped", "aws-secretsmanager")
def _enc_sm(r, p):
    inner = json.dumps({"username": user(r), "password": p, "host": host(r)})
    return jdump({"ARN": f"arn:aws:secretsmanager:eu-west-1:{rand(r, string.digits, 12)}:secret:prod/db-{rand(r, ALNUM, 6)}",
                  "Name": "prod/db", "SecretString": inner}), p


@enc("enc_log_json_escaped", "logstash")
def _enc_log(r, p):
    inner = json.dumps({"user": user(r), "api_key": p})
    return json.dumps({"@timestamp": "2025-03-02T10:11:12Z", "level": "debug", "message": f"login payload {inner}"}), p


@enc("enc_urlencoded_query", "nginx-access-log")
def _enc_urlq(r, p):
    p = p + r.choice("!#&%+=?@") + rand(r, ALNUM, 3)  # reserved characters, so the encoded form differs
    e = urllib.parse.quote(p, safe="")
    ip = f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    return (f"{ip} - - [12/Mar/2025:08:14:55 +0000] \"GET /login?user={user(r)}&password={e}&next=%2F HTTP/1.1\" "
            f"302 0 \"-\" \"Mozilla/5.0\""), e


@enc("enc_hex_bytes_fromhex", "python-bytes")
def _enc_hex(r, p):
    e = p.encode().hex()
    return f"# obfuscated so it does not show up in grep\nSMTP_PASSWORD = bytes.fromhex(\"{e}\").decode()", e


@enc("enc_filezilla_sitemanager", "filezilla")
def _enc_filezilla(r, p):
    e = b64(p)
    return (f"<Server>\n  <Host>{host(r)}</Host>\n  <Port>21</Port>\n  <User>{user(r)}</User>\n"
            f"  <Pass encoding=\"base64\">{e}</Pass>\n</Server>"), e


# ---------------------------------------------------------------- negative
def neg(context: str, service: str = ""):
    """Register a look-alike family: ``fn(rng) -> text`` that holds no secret."""
    def register(fn):
        FAMILIES.append(Family("negative", context, lambda rng, svc: (fn(rng), []), service, None, None))
        return fn
    return register


neg("neg_env_placeholders")(lambda r: r.choice((
    "OPENAI_API_KEY=<your-api-key>\nMODEL=gpt-4o-mini",
    "STRIPE_SECRET_KEY=your_stripe_secret_key_here\nSTRIPE_CURRENCY=eur",
    f"DB_HOST={host(r)}\nDB_USER={user(r)}\nDB_PASSWORD=\nDB_NAME={db(r)}",
    "# fill in before running\nSLACK_BOT_TOKEN=\"<paste bot token>\"",
    "API_TOKEN=REPLACE_ME\nAPI_URL=https://api.internal",
)))
neg("neg_compose_env_reference")(lambda r: (
    f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: {user(r)}\n"
    f"      POSTGRES_PASSWORD: ${{{r.choice(('DB_PASSWORD', 'POSTGRES_PASSWORD', 'PG_PASS'))}}}\n      POSTGRES_DB: {db(r)}"))
neg("neg_helm_template", "helm")(lambda r: (
    f"stringData:\n  password: {{{{ .Values.{r.choice(('postgresql.auth.password', 'redis.password', 'db.password'))} | quote }}}}\n"
    f"  username: {{{{ .Values.db.user }}}}"))
neg("neg_os_environ")(lambda r: r.choice((
    "api_key = os.environ[\"OPENAI_API_KEY\"]\nclient = OpenAI(api_key=api_key)",
    "password = os.getenv(\"DB_PASSWORD\")\nif not password:\n    raise SystemExit(\"DB_PASSWORD is not set\")",
    "const token = process.env.GITHUB_TOKEN;\nconst octokit = new Octokit({ auth: token });",
    "token := os.Getenv(\"SLACK_BOT_TOKEN\")",
    "String pw = System.getenv(\"SMTP_PASSWORD\");",
)))
neg("neg_git_sha", "git")(lambda r: r.choice((
    f"commit {rand(r, HEX, 40)}\nAuthor: {user(r)} <{user(r)}@{r.choice(DOMAINS)}>\nDate:   Tue Mar 4 10:12:01 2025 +0100\n\n    fix: retry on 503",
    f"pip install git+https://github.com/acme/toolkit.git@{rand(r, HEX, 40)}",
    f"Merge pull request #{r.randint(100, 9999)} from acme/feature/{r.choice(WORDS)} ({rand(r, HEX, 7)})",
    f"      - uses: actions/checkout@{rand(r, HEX, 40)}  # v4.1.1",
)))
neg("neg_docker_digest", "docker")(lambda r: (
    f"FROM python:3.{r.randint(9, 13)}-slim@sha256:{rand(r, HEX, 64)}\nWORKDIR /app\nCOPY . ."))
neg("neg_npm_integrity", "npm")(lambda r: (
    f"    \"node_modules/{r.choice(WORDS)}\": {{\n      \"version\": \"{r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}\",\n"
    f"      \"resolved\": \"https://registry.npmjs.org/{r.choice(WORDS)}/-/{r.choice(WORDS)}-1.2.3.tgz\",\n"
    f"      \"integrity\": \"sha512-{rand(r, B64, 86)}==\"\n    }}"))
neg("neg_poetry_lock_hashes", "poetry")(lambda r: (
    f"[[package]]\nname = \"{r.choice(WORDS)}\"\nversion = \"{r.randint(1, 5)}.{r.randint(0, 30)}.{r.randint(0, 9)}\"\nfiles = [\n"
    f"    {{file = \"pkg-1.0-py3-none-any.whl\", hash = \"sha256:{rand(r, HEX, 64)}\"}},\n]"))
neg("neg_go_sum", "go-modules")(lambda r: (
    f"github.com/{r.choice(WORDS)}/{r.choice(WORDS)} v1.{r.randint(0, 20)}.{r.randint(0, 9)} h1:{rand(r, B64, 43)}=\n"
    f"github.com/{r.choice(WORDS)}/{r.choice(WORDS)} v0.{r.randint(1, 20)}.0/go.mod h1:{rand(r, B64, 43)}="))
neg("neg_request_ids")(lambda r: (
    f"2025-04-0{r.randint(1, 9)}T12:00:{r.randint(10, 59)}Z INFO request_id={expand(r, '{N}')} trace_id={rand(r, HEX, 32)} "
    f"span_id={rand(r, HEX, 16)} status=200 duration_ms={r.randint(3, 900)}"))
neg("neg_versions_and_paths")(lambda r: r.choice((
    f"version: {r.randint(1, 9)}.{r.randint(0, 40)}.{r.randint(0, 20)}\nbuild: {r.randint(1000, 99999)}\nchannel: stable",
    f"log_file: /var/log/{r.choice(WORDS)}/app.log\ncert_path: /etc/ssl/certs/ca-certificates.crt\nkey_path: /etc/ssl/private/server.key",
    f"ssh -i ~/.ssh/id_ed25519 {user(r)}@{host(r)}",
)))
neg("neg_django_form_field", "django")(lambda r: (
    "class LoginForm(forms.Form):\n    username = forms.CharField(max_length=150)\n"
    "    password = forms.CharField(widget=forms.PasswordInput)"))
neg("neg_docker_password_stdin", "docker")(lambda r: (
    f"echo \"${r.choice(('REGISTRY_TOKEN', 'CR_PAT', 'DOCKERHUB_TOKEN'))}\" | docker login registry.{r.choice(DOMAINS)} -u {user(r)} --password-stdin"))
neg("neg_docker_port_flag", "docker")(lambda r: (
    f"docker run -d -p {r.choice((8080, 8443, 3000, 5432))}:{r.choice((80, 443, 3000, 5432))} --name web nginx:1.27"))
neg("neg_mysql_prompt", "mysql")(lambda r: r.choice((
    f"mysql -u {user(r)} -p -h {host(r)} {db(r)}",
    f"$ mysql -u{user(r)} -p\nEnter password:",
)))
neg("neg_readme_instructions")(lambda r: r.choice((
    "Set your token in GITHUB_TOKEN before running `make release`.",
    "Create an API key in the dashboard and export it as `ANTHROPIC_API_KEY`; never commit it.",
    "The password is read from the `PGPASSWORD` environment variable or `~/.pgpass`.",
    "Pass `--token-file` to read the token from a file instead of the command line.",
)))
neg("neg_actions_secrets_ref", "github-actions")(lambda r: (
    f"      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: ${{{{ secrets.{r.choice(('NPM_TOKEN', 'NODE_AUTH_TOKEN'))} }}}}"))
neg("neg_terraform_var_ref", "terraform")(lambda r: (
    f"resource \"aws_db_instance\" \"main\" {{\n  username = var.db_username\n  password = var.db_password\n"
    f"  instance_class = \"db.t3.{r.choice(('micro', 'small', 'medium'))}\"\n}}"))
neg("neg_k8s_secret_key_ref", "kubernetes")(lambda r: (
    f"env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: {db(r)}-credentials\n        key: password"))
neg("neg_getpass_prompt")(lambda r: (
    "import getpass\n\npassword = getpass.getpass(\"Password: \")\nclient.login(username, password)"))
neg("neg_checksum_verify")(lambda r: (
    f"curl -fsSLO https://dl.{r.choice(DOMAINS)}/tool-{r.randint(1, 3)}.{r.randint(0, 9)}.tar.gz\n"
    f"echo \"{rand(r, HEX, 64)}  tool.tar.gz\" | sha256sum -c -"))
neg("neg_vault_reference", "vault")(lambda r: (
    f"database:\n  password: vault:secret/data/{r.choice(('prod', 'staging'))}/{db(r)}#password\n  username: {user(r)}"))
neg("neg_aws_arn", "aws")(lambda r: (
    f"DB_SECRET_ARN=arn:aws:secretsmanager:eu-west-1:{rand(r, string.digits, 12)}:secret:prod/{db(r)}-{rand(r, ALNUM, 6)}"))
neg("neg_password_policy")(lambda r: r.choice((
    f"PASSWORD_MIN_LENGTH = {r.randint(8, 16)}\nPASSWORD_RESET_TIMEOUT = {r.choice((3600, 86400))}",
    "password_policy:\n  require_symbols: true\n  max_age_days: 90",
    "if len(password) < 12:\n    raise ValueError(\"password too short\")",
)))
neg("neg_ssh_public_key", "openssh")(lambda r: (
    f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rand(r, B64, 43)} {user(r)}@laptop"))
neg("neg_data_uri")(lambda r: (
    f".logo {{\n  background-image: url(\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{rand(r, B64, 60)}\");\n}}"))

neg("neg_html_password_input")(lambda r: (
    "<form method=\"post\" action=\"/login\">\n  <label for=\"password\">Password</label>\n"
    "  <input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\" required>\n</form>"))
neg("neg_sql_schema_columns")(lambda r: (
    "CREATE TABLE users (\n  id BIGSERIAL PRIMARY KEY,\n  email TEXT UNIQUE NOT NULL,\n"
    "  password_hash VARCHAR(255) NOT NULL,\n  api_token_last4 CHAR(4)\n);"))
neg("neg_cli_help_text")(lambda r: (
    "Options:\n  -u, --username TEXT   Registry user\n  -p, --password TEXT   Registry password (env: REGISTRY_PASSWORD)\n"
    "  --token-file PATH     Read the API token from PATH"))
neg("neg_secretsmanager_fetch", "aws")(lambda r: (
    f"aws secretsmanager get-secret-value --secret-id prod/{db(r)} --query SecretString --output text | jq -r .password"))
neg("neg_image_pull_secret_ref", "kubernetes")(lambda r: (
    f"spec:\n  imagePullSecrets:\n    - name: regcred\n  containers:\n    - name: api\n      image: registry.{r.choice(DOMAINS)}/api:{r.randint(1, 9)}.{r.randint(0, 9)}"))
@neg("neg_ansible_vault_var_ref", "ansible")
def _neg_ansible_vault(r):
    u = user(r)
    var = re.sub(r"[^a-z0-9]", "_", u)
    return (f"mysql_root_password: \"{{{{ vault_mysql_root_password }}}}\"\nmysql_users:\n  - name: {u}\n"
            f"    password: \"{{{{ vault_{var}_password }}}}\"")


neg("neg_spring_placeholder", "spring-boot")(lambda r: (
    f"spring.datasource.url=jdbc:postgresql://{host(r)}:5432/{db(r)}\nspring.datasource.username=${{DB_USER}}\nspring.datasource.password=${{DB_PASSWORD}}"))
neg("neg_maven_env_password", "maven")(lambda r: (
    "<server>\n  <id>nexus</id>\n  <username>${env.NEXUS_USER}</username>\n  <password>${env.NEXUS_PASSWORD}</password>\n</server>"))
neg("neg_public_certificate")(lambda r: (
    "-----BEGIN CERTIFICATE-----\n" + "\n".join(rand(r, B64, 64) for _ in range(4)) + "\n-----END CERTIFICATE-----"))


# ---------------------------------------------------------------- split and build
SPLITS = ("tune", "heldout")


def _least(rng: random.Random, counts: Counter, options) -> str:
    return min(options, key=lambda o: (counts[o], rng.random()))


def assign_splits(rng: random.Random) -> tuple[dict[str, str], dict[str, str]]:
    """Deal services, then families, to ``tune`` / ``heldout`` (see the module docstring)."""
    service_split: dict[str, str] = {}
    for pool in sorted(POOLS):
        # Prefixed and keyword-only vendors are dealt separately: some families take only the former.
        groups: dict[bool, list[str]] = {}
        for name in sorted(set(POOLS[pool])):
            groups.setdefault(VENDOR_BY_NAME[name].prefixed if name in VENDOR_BY_NAME else True, []).append(name)
        for _, names in sorted(groups.items()):
            rng.shuffle(names)
            for i, name in enumerate(names):
                service_split[name] = SPLITS[0] if i < len(names) // 2 else SPLITS[1]
    family_split: dict[str, str] = {}
    for cls in CLASS_COUNTS:
        fams = [f for f in FAMILIES if f.cls == cls]
        counts: Counter = Counter()
        bound = [f for f in fams if f.service]
        for f in bound:
            if f.service in service_split:
                counts[service_split[f.service]] += 1
        new = sorted({f.service for f in bound if f.service not in service_split})
        rng.shuffle(new)
        for svc in new:
            side = _least(rng, counts, SPLITS)
            service_split[svc] = side
            counts[side] += sum(1 for f in bound if f.service == svc)
        for f in bound:
            family_split[f.context] = service_split[f.service]
        free = [f for f in fams if not f.service]
        rng.shuffle(free)
        for f in free:
            side = _least(rng, counts, SPLITS)
            family_split[f.context] = side
            counts[side] += 1
    return service_split, family_split


def build(seed: int = SEED) -> list[dict]:
    contexts = [f.context for f in FAMILIES]
    dup = [c for c, n in Counter(contexts).items() if n > 1]
    if dup:
        raise ValueError(f"template family ids must be unique: {dup}")
    rng = random.Random(seed)
    service_split, family_split = assign_splits(rng)
    usage: Counter = Counter()
    seen: set[str] = set()
    rows: list[dict] = []
    for cls, total in CLASS_COUNTS.items():
        for side, n in zip(SPLITS, (total // 2, total - total // 2)):
            fams = sorted((f for f in FAMILIES if f.cls == cls and family_split[f.context] == side),
                          key=lambda f: f.context)
            if len(fams) < 2:
                raise ValueError(f"class {cls!r} has {len(fams)} template families in {side!r}; need >= 2")
            rng.shuffle(fams)
            for i, fam in enumerate(fams):
                for _ in range(n // len(fams) + (1 if i < n % len(fams) else 0)):
                    rows.append(_row(rng, fam, side, service_split, usage, seen))
    return rows


def _row(rng: random.Random, fam: Family, side: str, service_split: dict[str, str],
         usage: Counter, seen: set[str]) -> dict:
    if fam.service:
        svc = fam.service
    elif fam.pool:
        options = sorted(s for s in POOLS[fam.pool]
                         if service_split[s] == side and (fam.accepts is None or fam.accepts(s)))
        svc = _least(rng, usage, options)
    else:
        svc = ""
    usage[svc] += 1
    for _ in range(50):  # redraw on the rare value collision so no secret repeats across rows
        text, secrets = fam.make(rng, svc)
        if not any(s in seen for s in secrets):
            break
    else:
        raise RuntimeError(f"{fam.context}: could not draw an unused secret")
    lines = text.count("\n") + 1
    if not 1 <= lines <= 15:
        raise ValueError(f"{fam.context}: {lines} lines")
    for s in secrets:
        if s not in text or len(s) < 8:
            raise ValueError(f"{fam.context}: secret {s[:4]}... not verbatim in its text or too short")
    seen.update(secrets)
    return {"text": text, "secrets": secrets, "label": 0 if fam.cls == "negative" else 1,
            "class": fam.cls, "context": fam.context, "service": svc, "split": side}


def write(path: Path, seed: int = SEED) -> list[dict]:
    rows = build(seed)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows


def main(argv: list[str]) -> int:
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else Path(__file__).with_name(OUT_NAME)
    rows = write(out)
    by = Counter((r["class"], r["split"]) for r in rows)
    print(f"wrote {len(rows)} rows to {out}")
    for cls in CLASS_COUNTS:
        fams = {r["context"] for r in rows if r["class"] == cls}
        svcs = {r["service"] for r in rows if r["class"] == cls} - {""}
        print(f"  {cls:18s} tune={by[(cls, 'tune')]:4d} heldout={by[(cls, 'heldout')]:4d} "
              f"families={len(fams):3d} services={len(svcs):3d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
