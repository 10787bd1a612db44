"""Cost ledger logic (no Dagster): API dollars, GPU hours x price and storage, per asset and in total, against the budget.

Each cost is booked once, in its category:

- GPU: the hours a materialization reports, priced here at the profile's
  `phases.ops.costs.gpu_usd_per_hour` (the price of the profile's executor GPU). A dollar figure
  the producer puts beside its hours (`cost_usd`, `gpu_usd`) is its own estimate of the same hours
  and is not booked. A materialization that reused an earlier finished run
  (`reused_finished_run: true`) reports that run's hours again; they are not booked a second time.
- LLM/API: what every attempt booked in the object store (`llm.ledger.booked_usd`): its summary in
  the LLM ledger files (`llm-ledger/*.json`, written by `llm.ledger.record_batch_spend`, failed and
  retried attempts included: they were billed), or, for an attempt killed before it wrote one, its
  reservation records (`llm-spend/`, each settled by its cached reply or booked at its worst case). Materializations that report LLM dollars attribute that spend to
  their asset; what the ledger files hold beyond the attributed sum is booked as
  `(failed or unrecorded attempts)`. Dollars a materialization reports that no ledger file holds
  are booked as reported.
- Storage: what the graph holds now, the latest `bytes` of each (asset, partition).

Metadata conventions read from materializations:

    api_cost_usd | llm_cost_usd | api_usd | batch_usd               LLM/API dollars this materialization spent
    a JSON entry holding an LLM ledger summary (`batch_usd` key)    same, from llm.ledger.summary()
    gpu_hours (or gpu_seconds)                                      accelerator time it used
    bytes | size_bytes | storage_bytes                              what it keeps in the object store

The budget is the runbook's: $400 cash (API + GPU) plus $15 a month (storage + subscriptions),
from the profile's `phases.ops` section. The check warns at 80% and fails at 100% of either.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

# `cost_usd` is not among them: the training stages put their GPU estimate there, and reading it
# as API spend booked every training run twice (once as API dollars, once as priced GPU hours).
API_KEYS = ("api_cost_usd", "llm_cost_usd", "api_usd", "batch_usd")
GPU_HOURS_KEYS = ("gpu_hours",)
GPU_SECONDS_KEYS = ("gpu_seconds",)
REUSED_RUN_KEY = "reused_finished_run"
BYTES_KEYS = ("bytes", "size_bytes", "storage_bytes")
FAILED_ATTEMPTS = "(failed or unrecorded attempts)"
SUBSCRIPTIONS = "(subscriptions)"


@dataclass(frozen=True)
class CostConfig:
    """Prices and budget (profile `phases.ops.costs` and `phases.ops.budget`)."""

    gpu_usd_per_hour: float = 0.0
    storage_usd_per_gb_month: float = 0.0
    storage_min_billable_gb: float = 0.0
    fixed_usd_per_month: dict[str, float] = field(default_factory=dict)
    cash_usd: float = 400.0
    monthly_usd: float = 15.0
    start: date | None = None
    warn_at: float = 0.8
    fail_at: float = 1.0

    @classmethod
    def from_profile_section(cls, ops: dict[str, Any] | None) -> "CostConfig":
        """From a profile's `phases.ops` mapping; unknown keys are errors (typos must not zero a price)."""
        ops = dict(ops or {})
        costs, budget = dict(ops.get("costs") or {}), dict(ops.get("budget") or {})
        allowed_c = {"gpu_usd_per_hour", "storage_usd_per_gb_month", "storage_min_billable_gb", "fixed_usd_per_month"}
        allowed_b = {"cash_usd", "monthly_usd", "start", "warn_at", "fail_at"}
        bad = sorted(set(costs) - allowed_c) + sorted(set(budget) - allowed_b)
        if bad:
            raise ValueError(f"phases.ops: unknown cost/budget keys {bad}; expected {sorted(allowed_c | allowed_b)}")
        start = budget.pop("start", None)
        if isinstance(start, str):
            start = date.fromisoformat(start)
        cfg = cls(**costs, **budget, start=start)
        for name in ("gpu_usd_per_hour", "storage_usd_per_gb_month", "storage_min_billable_gb", "cash_usd", "monthly_usd"):
            value = getattr(cfg, name)
            # a bool is an int to Python, and .inf would be no budget at all: both refused
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"phases.ops: {name} must be a finite number >= 0, got {value!r}")
        if not 0 < cfg.warn_at <= cfg.fail_at:
            raise ValueError(f"phases.ops.budget: need 0 < warn_at <= fail_at, got {cfg.warn_at}, {cfg.fail_at}")
        return cfg


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def costs_from_metadata(meta: dict[str, Any]) -> dict[str, float]:
    """API dollars, GPU hours and bytes one materialization reports (0 where it reports none)."""
    api = next((_num(meta[k]) for k in API_KEYS if _num(meta.get(k)) is not None), None)
    if api is None:  # an embedded LLM ledger summary
        for v in meta.values():
            if isinstance(v, dict) and _num(v.get("batch_usd")) is not None:
                api = _num(v["batch_usd"])
                break
    gpu = next((_num(meta[k]) for k in GPU_HOURS_KEYS if _num(meta.get(k)) is not None), None)
    if gpu is None:
        secs = next((_num(meta[k]) for k in GPU_SECONDS_KEYS if _num(meta.get(k)) is not None), None)
        gpu = secs / 3600 if secs is not None else None
    if meta.get(REUSED_RUN_KEY) is True:
        gpu = None  # the reused run's hours were booked with the materialization that ran it
    size = next((_num(meta[k]) for k in BYTES_KEYS if _num(meta.get(k)) is not None), None)
    for name, v in (("api", api), ("gpu_hours", gpu), ("bytes", size)):
        if v is not None and v < 0:
            raise ValueError(f"negative {name} in materialization metadata: {v}")
    return {"api_usd": api or 0.0, "gpu_hours": gpu or 0.0, "bytes": size or 0.0}


def months_elapsed(start: date | None, today: date | None = None) -> int:
    """Billing months begun since `start` (at least 1)."""
    if start is None:
        return 1
    today = today or datetime.now(timezone.utc).date()
    return max(1, (today.year - start.year) * 12 + today.month - start.month + (1 if today.day >= start.day else 0))


def build_ledger(events: Iterable[dict[str, Any]], cfg: CostConfig, store_llm_usd: float = 0.0,
                 today: date | None = None) -> dict[str, Any]:
    """Sum costs per asset. `events`: {asset, partition, storage_id, metadata}, any order, all history."""
    per: dict[str, dict[str, float]] = defaultdict(lambda: {"api_usd": 0.0, "gpu_hours": 0.0, "bytes": 0.0,
                                                            "materializations": 0})
    latest_bytes: dict[tuple[str, str | None], tuple[int, float]] = {}
    for ev in events:
        c = costs_from_metadata(ev.get("metadata") or {})
        row = per[ev["asset"]]
        row["api_usd"] += c["api_usd"]
        row["gpu_hours"] += c["gpu_hours"]
        row["materializations"] += 1
        k = (ev["asset"], ev.get("partition"))
        if k not in latest_bytes or ev["storage_id"] > latest_bytes[k][0]:
            latest_bytes[k] = (ev["storage_id"], c["bytes"])
    for (asset, _), (_, b) in latest_bytes.items():
        per[asset]["bytes"] += b
    api_recorded = sum(r["api_usd"] for r in per.values())
    if store_llm_usd > api_recorded + 1e-9:
        per[FAILED_ATTEMPTS]["api_usd"] += store_llm_usd - api_recorded
    rows = {}
    for asset, r in per.items():
        gpu_usd = r["gpu_hours"] * cfg.gpu_usd_per_hour
        rows[asset] = {"api_usd": round(r["api_usd"], 6), "gpu_hours": round(r["gpu_hours"], 6),
                       "gpu_usd": round(gpu_usd, 6), "bytes": int(r["bytes"]),
                       "cash_usd": round(r["api_usd"] + gpu_usd, 6), "materializations": int(r["materializations"])}
    total_bytes = sum(r["bytes"] for r in rows.values())
    gb = total_bytes / 1e9
    storage_month = max(gb, cfg.storage_min_billable_gb) * cfg.storage_usd_per_gb_month if total_bytes or \
        cfg.storage_min_billable_gb else 0.0
    fixed = sum(cfg.fixed_usd_per_month.values())
    months = months_elapsed(cfg.start, today)
    cash = sum(r["cash_usd"] for r in rows.values())
    monthly = storage_month + fixed
    totals = {
        "api_usd": round(sum(r["api_usd"] for r in rows.values()), 6),
        "gpu_hours": round(sum(r["gpu_hours"] for r in rows.values()), 6),
        "gpu_usd": round(sum(r["gpu_usd"] for r in rows.values()), 6),
        "cash_usd": round(cash, 6), "bytes": int(total_bytes),
        "storage_usd_per_month": round(storage_month, 6), "fixed_usd_per_month": round(fixed, 6),
        "monthly_usd": round(monthly, 6), "months": months,
        "spent_to_date_usd": round(cash + monthly * months, 6),
        "budget_to_date_usd": round(cfg.cash_usd + cfg.monthly_usd * months, 6),
    }
    ratios = {"cash": cash / cfg.cash_usd if cfg.cash_usd else (math.inf if cash else 0.0),
              "monthly": monthly / cfg.monthly_usd if cfg.monthly_usd else (math.inf if monthly else 0.0)}
    return {"per_asset": dict(sorted(rows.items(), key=lambda kv: (-kv[1]["cash_usd"], kv[0]))),
            "totals": totals, "ratios": {k: round(v, 6) for k, v in ratios.items()}}


def budget_status(ledger: dict[str, Any], cfg: CostConfig) -> tuple[str, str]:
    """("ok" | "warn" | "fail", a sentence saying which budget is how full)."""
    t, r = ledger["totals"], ledger["ratios"]
    worst = max(r.values())
    level = "fail" if worst >= cfg.fail_at else "warn" if worst >= cfg.warn_at else "ok"
    msg = (f"cash ${t['cash_usd']:.2f} of ${cfg.cash_usd:.2f} ({r['cash']:.0%}); "
           f"monthly ${t['monthly_usd']:.2f} of ${cfg.monthly_usd:.2f} ({r['monthly']:.0%})")
    return level, msg


def llm_ledger_usd(store) -> float:
    """Dollars booked by every LLM attempt in the object store (ledger summaries and the
    reservation records of attempts that wrote none)."""
    from ..llm.ledger import booked_usd

    return booked_usd(store)


def ledger_markdown(ledger: dict[str, Any], limit: int = 30) -> str:
    lines = ["| asset | API $ | GPU h | GPU $ | stored MB | materializations |", "|---|---:|---:|---:|---:|---:|"]
    for asset, r in list(ledger["per_asset"].items())[:limit]:
        lines.append(f"| {asset} | {r['api_usd']:.4f} | {r['gpu_hours']:.3f} | {r['gpu_usd']:.2f} | "
                     f"{r['bytes'] / 1e6:.2f} | {r['materializations']} |")
    t = ledger["totals"]
    lines.append(f"| **total** | {t['api_usd']:.4f} | {t['gpu_hours']:.3f} | {t['gpu_usd']:.2f} | "
                 f"{t['bytes'] / 1e6:.2f} | |")
    return "\n".join(lines)
