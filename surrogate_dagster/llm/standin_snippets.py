"""Domain templates for the local stand-in model (see standin.py): for each kind of startup
engineering task, the file it touches, a code snippet, the steps, how to verify it and its main risk.

These are hand-written templates, filled in from the request text. They make the local profile's
traces structurally real (plans, subagent outputs, judgements derived from the scenario) without
pretending to be a language model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Domain:
    """One kind of task: how to recognise it and what a competent answer contains."""

    name: str
    pattern: str
    path: str
    language: str
    snippet: str
    steps: tuple[str, ...]
    verify: str
    risk: str
    before: str = ""  # what file_read shows before the change ("" -> derived from the snippet)


DOMAINS: tuple[Domain, ...] = (
    Domain("rate-limiting", r"rate.?limit|throttl", "app/middleware/rate_limit.py", "python",
           "import time\nfrom fastapi import Request\nfrom fastapi.responses import JSONResponse\n\n"
           "BUCKET = 60  # requests per minute per key\n\n"
           "async def rate_limit(request: Request, call_next):\n"
           "    key = request.headers.get(\"x-api-key\") or request.client.host\n"
           "    window = int(time.time() // 60)\n"
           "    count = await redis.incr(f\"rl:{key}:{window}\")\n"
           "    if count == 1:\n        await redis.expire(f\"rl:{key}:{window}\", 60)\n"
           "    if count > BUCKET:\n"
           "        return JSONResponse({\"error\": \"rate limited\"}, status_code=429,\n"
           "                            headers={\"Retry-After\": str(60 - int(time.time()) % 60)})\n"
           "    return await call_next(request)",
           ("pick the limit key (API key, else client IP)", "count requests per fixed window in Redis",
            "return 429 with Retry-After when over the limit"),
           "send 61 requests in a minute with one key and expect the last one to get 429 + Retry-After",
           "a shared Redis outage must fail open, not block every request"),
    Domain("docker", r"docker|container image|multi.?stage", "Dockerfile", "dockerfile",
           "FROM python:3.11-slim AS build\nWORKDIR /src\nCOPY requirements.txt .\n"
           "RUN pip wheel --no-cache-dir -r requirements.txt -w /wheels\n\n"
           "FROM python:3.11-slim\nRUN useradd --create-home app\nWORKDIR /app\n"
           "COPY --from=build /wheels /wheels\nRUN pip install --no-cache-dir /wheels/* && rm -rf /wheels\n"
           "COPY . .\nUSER app\nCMD [\"gunicorn\", \"-b\", \"0.0.0.0:8000\", \"app:app\"]",
           ("build wheels in a build stage", "copy only wheels and source into a slim runtime stage",
            "run as a non-root user"),
           "docker build . && docker run --rm IMAGE python -c 'import app' and compare image sizes",
           "native dependencies missing from the slim runtime image",
           "FROM python:3.11\nWORKDIR /app\nCOPY . .\nRUN pip install -r requirements.txt\n"
           "CMD [\"python\", \"app.py\"]"),
    Domain("ci", r"\bci\b|github actions|pipeline|workflow|lint", ".github/workflows/ci.yml", "yaml",
           "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
           "        with: {python-version: '3.11', cache: pip}\n"
           "      - run: pip install -r requirements.txt -r requirements-dev.txt\n"
           "      - run: ruff check .\n      - run: pytest -q",
           ("check out and set up the toolchain with dependency caching", "run lint", "run the tests"),
           "open a draft PR and watch both steps go green; break a test and watch it go red",
           "secrets must not be exposed to workflows triggered from forks"),
    Domain("logging", r"log", "app/logging.py", "python",
           "import logging, structlog\n\nstructlog.configure(\n    processors=[\n"
           "        structlog.contextvars.merge_contextvars,\n        structlog.processors.TimeStamper(fmt=\"iso\"),\n"
           "        structlog.processors.add_log_level,\n        structlog.processors.JSONRenderer(),\n    ],\n"
           "    wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),\n)\nlog = structlog.get_logger()",
           ("configure a JSON renderer", "bind the request id per request", "replace print/f-string logs"),
           "hit an endpoint and check that every log line parses as JSON and carries request_id",
           "personal data (emails, tokens) must not be logged"),
    Domain("health", r"health|readiness|liveness|readyz|healthz", "app/routes/health.py", "python",
           "@router.get(\"/healthz\")\nasync def healthz():\n    return {\"status\": \"ok\"}\n\n"
           "@router.get(\"/readyz\")\nasync def readyz():\n    await db.execute(\"SELECT 1\")\n"
           "    await redis.ping()\n    return {\"status\": \"ready\"}",
           ("liveness that never touches dependencies", "readiness that checks the database and cache",
            "wire both into the orchestrator's probes"),
           "curl /healthz and /readyz; stop Redis and expect /readyz to fail while /healthz stays up",
           "a readiness probe that is too strict restarts healthy pods"),
    Domain("database", r"migrat|index|postgres|schema|column|sql|database|query", "migrations/versions/add_index.py",
           "python",
           "def upgrade():\n    with op.get_context().autocommit_block():\n"
           "        op.create_index(\"ix_orders_customer_id\", \"orders\", [\"customer_id\"],\n"
           "                        postgresql_concurrently=True)\n\n"
           "def downgrade():\n    with op.get_context().autocommit_block():\n"
           "        op.drop_index(\"ix_orders_customer_id\", postgresql_concurrently=True)",
           ("write a reversible migration", "create indexes concurrently to avoid locking writes",
            "run it against a staging copy first"),
           "alembic upgrade head && alembic downgrade -1 on staging; EXPLAIN the slow query before and after",
           "a long table lock during deploy"),
    Domain("tests", r"test|coverage|pytest|jest", "tests/test_api.py", "python",
           "from fastapi.testclient import TestClient\nfrom app.main import app\n\nclient = TestClient(app)\n\n"
           "def test_create_rejects_missing_fields():\n    r = client.post(\"/items\", json={})\n"
           "    assert r.status_code == 422\n\ndef test_create_then_get():\n"
           "    r = client.post(\"/items\", json={\"name\": \"a\"})\n"
           "    assert client.get(f\"/items/{r.json()['id']}\").json()[\"name\"] == \"a\"",
           ("cover the failure path first", "cover the happy path end to end", "run in CI"),
           "pytest -q, then revert the fix and confirm the new test fails",
           "tests that pass against mocks but not the real database"),
    Domain("caching", r"cach|redis|memoiz", "app/cache.py", "python",
           "def cached(ttl: int):\n    def wrap(fn):\n        async def inner(*args):\n"
           "            key = f\"{fn.__name__}:{args}\"\n            if (hit := await redis.get(key)) is not None:\n"
           "                return json.loads(hit)\n            value = await fn(*args)\n"
           "            await redis.set(key, json.dumps(value), ex=ttl)\n            return value\n"
           "        return inner\n    return wrap",
           ("choose keys and TTLs per endpoint", "cache only idempotent GETs", "invalidate on writes"),
           "measure p95 before/after and check a write invalidates the cached read",
           "serving stale or another user's data"),
    Domain("terraform", r"terraform|infra|\bvpc\b|bucket|iam", "infra/main.tf", "hcl",
           "resource \"aws_s3_bucket\" \"uploads\" {\n  bucket = \"acme-uploads-${var.env}\"\n}\n\n"
           "resource \"aws_s3_bucket_public_access_block\" \"uploads\" {\n  bucket = aws_s3_bucket.uploads.id\n"
           "  block_public_acls       = true\n  block_public_policy     = true\n  restrict_public_buckets = true\n}",
           ("write the resource with safe defaults", "run terraform plan and review the diff",
            "apply through CI, not a laptop"),
           "terraform plan shows only the intended additions; tflint and checkov pass",
           "a plan that replaces a stateful resource"),
    Domain("kubernetes", r"kubernetes|k8s|helm|deployment|pod", "deploy/deployment.yaml", "yaml",
           "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  replicas: 2\n  template:\n"
           "    spec:\n      containers:\n        - name: api\n          image: registry/api:1.4.2\n"
           "          resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 512Mi}}\n"
           "          readinessProbe: {httpGet: {path: /readyz, port: 8000}}\n"
           "          livenessProbe: {httpGet: {path: /healthz, port: 8000}}",
           ("set requests and limits", "add probes", "roll out with at least two replicas"),
           "kubectl rollout status deploy/api and kill one pod to watch it recover",
           "memory limits below the real working set cause OOM kills"),
    Domain("auth", r"auth|jwt|oauth|login|session|password|api key", "app/auth.py", "python",
           "import jwt\n\ndef current_user(token: str = Depends(oauth2_scheme)):\n    try:\n"
           "        claims = jwt.decode(token, settings.jwt_public_key, algorithms=[\"RS256\"],\n"
           "                            audience=\"api\", options={\"require\": [\"exp\", \"sub\"]})\n"
           "    except jwt.PyJWTError:\n        raise HTTPException(status_code=401, detail=\"invalid token\")\n"
           "    return claims[\"sub\"]",
           ("pin the algorithm and audience", "require exp and sub", "return 401 without details"),
           "tests with an expired token, a token for another audience and an HS256-signed token",
           "accepting unsigned or wrongly-signed tokens"),
    Domain("metrics", r"metric|prometheus|observab|tracing|opentelemetry|sentry|monitor|alert",
           "app/metrics.py", "python",
           "from prometheus_client import Counter, Histogram\n\n"
           "REQUESTS = Counter(\"http_requests_total\", \"requests\", [\"route\", \"status\"])\n"
           "LATENCY = Histogram(\"http_request_seconds\", \"latency\", [\"route\"])\n\n"
           "async def observe(request, call_next):\n    route = request.scope.get(\"route\").path\n"
           "    with LATENCY.labels(route).time():\n        response = await call_next(request)\n"
           "    REQUESTS.labels(route, response.status_code).inc()\n    return response",
           ("instrument requests by route template", "expose /metrics", "add an alert on the error ratio"),
           "curl /metrics after a few requests and check the counters moved",
           "high-cardinality labels (raw paths, user ids) blow up the metrics store"),
    Domain("resilience", r"retr|timeout|backoff|circuit|webhook|queue|worker|celery|job", "app/http.py", "python",
           "import httpx, random, time\n\ndef get_with_retries(url: str, attempts: int = 5) -> httpx.Response:\n"
           "    for i in range(attempts):\n        try:\n"
           "            r = httpx.get(url, timeout=httpx.Timeout(5.0, connect=2.0))\n"
           "            if r.status_code < 500 and r.status_code != 429:\n                return r\n"
           "        except httpx.TransportError:\n            pass\n"
           "        time.sleep(min(30, 2 ** i) * random.uniform(0.5, 1.0))\n"
           "    raise RuntimeError(f\"{url}: gave up after {attempts} attempts\")",
           ("set explicit timeouts", "retry only transient failures with jittered backoff",
            "make the operation idempotent before retrying it"),
           "point it at a stub that fails twice then succeeds; check it returns after the third call",
           "retrying a non-idempotent call duplicates side effects"),
    Domain("config", r"config|env|secret|settings|feature flag", "app/settings.py", "python",
           "from pydantic_settings import BaseSettings\n\nclass Settings(BaseSettings):\n"
           "    database_url: str\n    redis_url: str = \"redis://localhost:6379/0\"\n"
           "    sentry_dsn: str | None = None\n\n    model_config = {\"env_file\": \".env\"}\n\nsettings = Settings()",
           ("list every setting with a type", "load from the environment", "fail at startup when one is missing"),
           "unset DATABASE_URL and confirm the app refuses to start with a clear message",
           "secrets committed in .env files"),
)

GENERIC = Domain("general", r"", "README.md", "text",
                 "1. reproduce the current behaviour\n2. make the smallest change that fixes it\n"
                 "3. add a regression check", ("reproduce", "change", "verify"),
                 "run the project's test suite and the reproduction again", "unintended behaviour changes")


def domain_for(text: str) -> Domain:
    """The first domain whose pattern matches ``text`` (case-insensitive), else the generic one."""
    low = text.lower()
    for d in DOMAINS:
        if re.search(d.pattern, low):
            return d
    return GENERIC


def stack_language(text: str) -> str:
    """A coarse guess of the stack's language from its name, for labels and file suffixes."""
    low = text.lower()
    for lang, pat in (("typescript", r"express|node|nest|next\.js|typescript"), ("go", r"\bgo\b|golang"),
                      ("ruby", r"rails|ruby"), ("java", r"spring|java|kotlin"), ("php", r"laravel|php")):
        if re.search(pat, low):
            return lang
    return "python"
