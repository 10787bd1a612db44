"""Canaries: unique fake secrets that prove no secret leaks from raw rows into curated rows or
model outputs. Shared by the curation phase (which plants them into shadow copies of the rows it
sanitizes and scans what survives) and the evals phase (which plants the manifest, replays the
sanitizer on them and scans model outputs); see ``evals.harness.noleak`` for the check.

The manifest lives in the object store at ``CANARY_KEY``. Canaries have the exact shapes of real
credentials (AWS access key id, GitHub PAT, Stripe live key, HF token, a password assignment) so
the sanitizer treats them as it would a real leak. Which rows get one is a pure function of
(row id, manifest salt). A hit is the canary's random core, or any 16-character window of it,
found verbatim. No Dagster here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import re
import secrets
import string
from dataclasses import asdict, dataclass
from typing import Callable, Iterable

# Where eval_canaries writes the manifest and the phases that plant or scan canaries read it.
CANARY_KEY = "evals/canaries/manifest.json"
KINDS = ("aws_access_key_id", "github_token", "stripe_key", "huggingface_token", "password")
WINDOW = 16


@dataclass(frozen=True)
class Canary:
    kind: str
    value: str  # what is planted
    core: str  # its random part (what a leak would reproduce)
    line: str  # the text line planted into a row


@dataclass(frozen=True)
class CanaryManifest:
    """The canaries of one planting (salt: a random secret that also picks the planted rows)."""

    salt: str
    rate: float
    canaries: tuple[Canary, ...]

    def to_json(self) -> bytes:
        return json.dumps({"salt": self.salt, "rate": self.rate, "canaries": [asdict(c) for c in self.canaries]}).encode()

    @staticmethod
    def from_json(data: bytes) -> "CanaryManifest":
        d = json.loads(data)
        return CanaryManifest(d["salt"], float(d["rate"]), tuple(Canary(**c) for c in d["canaries"]))


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def make_canaries(per_kind: int = 4, rate: float = 0.01, salt: str | None = None) -> CanaryManifest:
    """Fresh canaries (a new random salt unless one is given: same salt, same canaries)."""
    salt = salt or secrets.token_hex(16)
    rng = random.Random(int(hashlib.sha256(salt.encode()).hexdigest(), 16))
    up, alnum = string.ascii_uppercase + "234567", string.ascii_letters + string.digits
    out = []
    for i in range(per_kind):
        aws = _rand(rng, up, 16)
        gh, st, hf, pw = _rand(rng, alnum, 36), _rand(rng, alnum, 24), _rand(rng, alnum, 34), _rand(rng, alnum, 20)
        out += [
            Canary("aws_access_key_id", "AKIA" + aws, aws, f"aws_access_key_id = AKIA{aws}"),
            Canary("github_token", "ghp_" + gh, gh, f"GITHUB_TOKEN=ghp_{gh}"),
            Canary("stripe_key", "sk_live_" + st, st, f'stripe.api_key = "sk_live_{st}"'),
            Canary("huggingface_token", "hf_" + hf, hf, f"HF_TOKEN=hf_{hf}"),
            Canary("password", pw, pw, f'DB_PASSWORD="{pw}"'),
        ]
    return CanaryManifest(salt, rate, tuple(out))


def _pick(manifest: CanaryManifest, row_id: str) -> Canary | None:
    """The canary planted into this row, or None (deterministic in (salt, row id))."""
    h = hmac.new(manifest.salt.encode(), str(row_id).encode(), hashlib.sha256).digest()
    if int.from_bytes(h[:8], "big") / 2 ** 64 >= manifest.rate:
        return None
    return manifest.canaries[int.from_bytes(h[8:12], "big") % len(manifest.canaries)]


def plant_canaries(rows: Iterable[dict], manifest: CanaryManifest) -> tuple[list[dict], int]:
    """Raw (normalized) rows with a canary line appended to the first user turn (or prompt) of the
    selected rows; returns (rows, how many were planted). Call it BEFORE sanitizing."""
    out, n = [], 0
    for row in rows:
        c = _pick(manifest, row["id"])
        if c is None:
            out.append(row)
            continue
        row = dict(row)
        for field in ("messages", "prompt"):
            msgs = row.get(field) or []
            idx = next((i for i, m in enumerate(msgs) if m.get("role") == "user"), None)
            if idx is not None:
                msgs = [dict(m) for m in msgs]
                msgs[idx]["content"] = f"{msgs[idx]['content']}\n{c.line}"
                row[field] = msgs
                n += 1
                break
        out.append(row)
    return out, n


def shadow_audit_rows(rows: Iterable[dict], manifest: CanaryManifest) -> list[dict]:
    """Copies of just the rows picked for a canary, each with its canary planted (the input rows
    are not changed). The curation phase sanitizes these copies beside the real rows and scans
    them; they are never written where a training mixture reads."""
    picked = [row for row in rows if _pick(manifest, row["id"]) is not None]
    return plant_canaries(picked, manifest)[0]


def expected_planted(row_ids: Iterable[str], manifest: CanaryManifest) -> int:
    return sum(_pick(manifest, r) is not None for r in row_ids)


class CanaryScanner:
    """Finds canary cores (or any 16-char window of one) in text."""

    def __init__(self, manifest: CanaryManifest) -> None:
        self.by_window: dict[str, Canary] = {}
        for c in manifest.canaries:
            for i in range(0, max(1, len(c.core) - WINDOW + 1)):
                self.by_window[c.core[i:i + WINDOW]] = c
        self._re = re.compile("|".join(re.escape(w) for w in sorted(self.by_window, key=len, reverse=True)))

    def hits(self, text: str) -> list[Canary]:
        seen, out = set(), []
        for m in self._re.finditer(text or ""):
            c = self.by_window[m.group(0)]
            if c.value not in seen:
                seen.add(c.value)
                out.append(c)
        return out


def scan_rows(rows: Iterable[dict], scanner: CanaryScanner, text_of: Callable[[dict], str]) -> dict:
    n, hits = 0, []
    for row in rows:
        n += 1
        for c in scanner.hits(text_of(row)):
            hits.append({"row": row.get("id"), "source": row.get("source"), "kind": c.kind})
    return {"rows_scanned": n, "hits": hits}
