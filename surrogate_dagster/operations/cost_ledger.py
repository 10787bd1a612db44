"""The `cost_ledger` asset and its `budget` check (the pure arithmetic is in `costs.py`).

The asset reads every materialization in the instance's event log (all assets, all history,
including assets since removed from the code: their money was spent), plus the LLM ledger files
in the object store, and prices GPU hours and storage with the active profile's `phases.ops`.
"""


import json
from typing import Any

from dagster import (
    ConfigurableResource,
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from pydantic import model_validator

from ..resources import ObjectStoreResource
from .costs import CostConfig, budget_status, build_ledger, ledger_markdown, llm_ledger_usd
from .lineage_report import metadata_to_plain

COST_LEDGER = AssetKey("cost_ledger")


class CostsResource(ConfigurableResource):
    """The profile's prices (`phases.ops.costs`) and budget (`phases.ops.budget`), checked by
    `CostConfig.from_profile_section` when the resource is built."""

    costs: dict[str, Any] = {}
    budget: dict[str, Any] = {}

    @model_validator(mode="after")
    def _valid(self) -> "CostsResource":
        self.config()
        return self

    def config(self) -> CostConfig:
        return CostConfig.from_profile_section({"costs": self.costs, "budget": self.budget})


def cost_resources(profile) -> dict[str, Any]:
    """``{"costs": CostsResource}`` from a profile's `phases.ops` (unset members left out)."""
    ops = profile.phases.get("ops") or {}
    section = {k: {n: v for n, v in (ops.get(k) or {}).items() if v is not None} for k in ("costs", "budget")}
    return {"costs": CostsResource(**{k: {n: str(v) if hasattr(v, "isoformat") else v for n, v in s.items()}
                                      for k, s in section.items()})}


def materialization_events(instance: DagsterInstance, exclude: set[AssetKey] = frozenset(), page: int = 1000):
    """Every materialization in the instance as {asset, partition, storage_id, metadata}."""
    for key in instance.get_asset_keys():
        if key in exclude:
            continue
        cursor = None
        while True:
            res = instance.fetch_materializations(AssetRecordsFilter(asset_key=key), limit=page, cursor=cursor)
            for rec in res.records:
                mat = rec.event_log_entry.asset_materialization
                yield {"asset": key.to_user_string(), "partition": mat.partition, "storage_id": rec.storage_id,
                       "metadata": metadata_to_plain(mat.metadata)}
            if not res.has_more:
                break
            cursor = res.cursor


@asset(key=COST_LEDGER, group_name="ops", kinds={"python"},
       description="API dollars, GPU hours x price and storage per asset and in total, vs the budget")
def cost_ledger(context: AssetExecutionContext, object_store: ObjectStoreResource,
                costs: CostsResource) -> MaterializeResult:
    cfg = costs.config()
    events = list(materialization_events(context.instance, exclude={COST_LEDGER}))
    ledger = build_ledger(events, cfg, store_llm_usd=llm_ledger_usd(object_store.get_store()))
    level, message = budget_status(ledger, cfg)
    t = ledger["totals"]
    context.log.info(f"budget {level}: {message}")
    meta: dict[str, Any] = {k: v for k, v in t.items()}
    meta.update({"cash_ratio": ledger["ratios"]["cash"], "monthly_ratio": ledger["ratios"]["monthly"],
                 "budget_level": level, "budget_message": message,
                 "per_asset": MetadataValue.md(ledger_markdown(ledger)),
                 "ledger": MetadataValue.json({"per_asset": dict(list(ledger["per_asset"].items())[:200]),
                                               "totals": t, "ratios": ledger["ratios"]})})
    return MaterializeResult(metadata=meta)


@asset_check(asset=cost_ledger, name="budget", description="Warn at 80%, fail at 100% of the cash or monthly budget")
def cost_budget_check(context: AssetCheckExecutionContext, costs: CostsResource) -> AssetCheckResult:
    cfg = costs.config()
    ev = context.instance.get_latest_materialization_event(COST_LEDGER)
    if ev is None:
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR,
                                metadata={"reason": "cost_ledger has not been materialized"})
    meta = metadata_to_plain(ev.asset_materialization.metadata)
    ledger = {"totals": {k: meta[k] for k in ("cash_usd", "monthly_usd")},
              "ratios": {"cash": float(meta["cash_ratio"]), "monthly": float(meta["monthly_ratio"])}}
    level, message = budget_status(ledger, cfg)
    out = {"level": level, "message": message, "cash_ratio": ledger["ratios"]["cash"],
           "monthly_ratio": ledger["ratios"]["monthly"], "thresholds": json.dumps([cfg.warn_at, cfg.fail_at])}
    if level == "ok":
        return AssetCheckResult(passed=True, metadata=out)
    sev = AssetCheckSeverity.ERROR if level == "fail" else AssetCheckSeverity.WARN
    return AssetCheckResult(passed=False, severity=sev, metadata=out, description=message)
