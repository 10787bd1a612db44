"""Failed LLM attempts are booked in the cost ledger, through a materialized run (the booking rules:
tests/unit/operations/test_ops_costs_booked_once.py)."""

import pytest

from surrogate_dagster.operations.costs import FAILED_ATTEMPTS, build_ledger

from tests.unit.operations.test_ops_costs_booked_once import PRICE, PROD, _ev, _stage


def test_failed_llm_attempts_are_included():
    # batch-000's first attempt failed after spending $7 (ledger file only); the retry spent $20 and materialized
    events = [_ev("orchestrator_traces", 1, "batch-000", batch_usd=20.0), _stage(2, 1.0)]
    led = build_ledger(events, PROD, store_llm_usd=27.0)
    assert led["per_asset"][FAILED_ATTEMPTS]["api_usd"] == pytest.approx(7.0)
    assert led["totals"]["api_usd"] == pytest.approx(27.0)
    assert led["totals"]["cash_usd"] == pytest.approx(27.0 + PRICE)
