"""A scenario's failure detail (what the server said, kept in rejected rows) holds no credential,
whatever form the server echoed it in."""

from __future__ import annotations

import base64
import binascii
from types import SimpleNamespace
from urllib.parse import quote

import pytest

from surrogate_dagster.llm.client import LLMError
from surrogate_dagster.synth import orchestrator
from surrogate_dagster.synth.orchestrator import ScenarioFailed, synthesize_batch

KEY = "sk-ant-api03-Zq8Vw2Lr5Tn7Yp1Xc4Mb9Hd6Gf3Js0Ka-Ue"
FORMS = {"plain": KEY, "base64": base64.b64encode(KEY.encode()).decode(),
         "hex": binascii.hexlify(KEY.encode()).decode(), "url": quote(KEY, safe="")}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("error", ["scenario_failed", "llm_error"])
def test_failure_detail_is_scrubbed(monkeypatch, form, error):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    echoed = f"HTTP 401: invalid x-api-key, got {FORMS[form]}"

    def fail(*a, **k):
        raise ScenarioFailed("malformed_reply", echoed) if error == "scenario_failed" else LLMError(echoed)

    monkeypatch.setattr(orchestrator, "run_scenario", fail)
    client = SimpleNamespace(ledger=SimpleNamespace(summary=lambda: {}))
    rows, summary = synthesize_batch(client, [{"id": "s1", "task": "t"}])
    assert rows == [] and len(summary["failures"]) == 1
    detail = summary["failures"][0]["detail"]
    assert detail.startswith("HTTP 401: invalid x-api-key, got <REDACTED")  # still says what happened
    assert FORMS[form] not in detail and KEY[:16] not in detail
