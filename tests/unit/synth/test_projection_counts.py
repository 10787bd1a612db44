"""The trace-synthesis projection on token counts measured with count_tokens: each counted call
kind's input-side tokens scaled by counted / stand-in count of the same requests, output tokens
kept, and the result saying which counts it used (the SDK against the local server:
tests/integration/test_synth_volume.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from surrogate_dagster.synth.config import synth_catalog
from surrogate_dagster.synth.projection import (INPUT_FIELDS, counted_ratios, project, project_counted, reprofile,
                                                stand_in_input_tokens)

CAT = synth_catalog()
PROFILE = CAT["traces"]["measured_tokens_per_trace"]
KW = dict(models=CAT["models"], prices=CAT["prices_per_mtok"], budget_usd=CAT["budget_usd"])
PLANNER = {"model": "claude-opus-5-5", "system": "x" * 400, "messages": [{"role": "user", "content": "y" * 400}],
           "tools": None, "tool_choice": None, "max_tokens": 4096, "temperature": None}


class Tokenizer:
    """A count_tokens endpoint whose tokens are ``factor`` times the stand-in's; records the params."""

    def __init__(self, factor: float) -> None:
        self.factor, self.calls = factor, []
        self.messages = SimpleNamespace(count_tokens=self._count)

    def _count(self, **params):
        self.calls.append(params)
        return SimpleNamespace(input_tokens=round(stand_in_input_tokens(params) * self.factor))


def test_stand_in_count_matches_the_servers_rule():
    text = json.dumps([PLANNER["system"], PLANNER["messages"], None], sort_keys=True, separators=(",", ":"))
    assert len(text) == 840 and stand_in_input_tokens(PLANNER) == 210  # characters / 4
    with_tools = {**PLANNER, "tools": [{"name": "t", "input_schema": {"type": "object"}}], "tool_choice": {"type": "any"}}
    assert stand_in_input_tokens(with_tools) > 313 + 200  # the tool-use system prompt is billed


def test_counted_tokens_scale_the_input_side_only():
    sdk = Tokenizer(1.5)
    ratios = counted_ratios(sdk, {"planner": [PLANNER, PLANNER], "subagent": []})
    assert ratios == {"planner": {"requests": 2, "stand_in_tokens": 420, "counted_tokens": 630, "ratio": 1.5}}
    # count_tokens gets the request's model/system/messages (no max_tokens, no unset fields)
    assert set(sdk.calls[0]) == {"model", "system", "messages"}
    scaled = reprofile(PROFILE, ratios)
    for f in INPUT_FIELDS:
        assert scaled["planner"][f] == pytest.approx(PROFILE["planner"][f] * 1.5, abs=1e-3)
    assert scaled["planner"]["output_tokens"] == PROFILE["planner"]["output_tokens"]
    assert scaled["judge"] == PROFILE["judge"]  # not counted: the stand-in's


def test_projection_names_the_counts_it_used():
    plain = project_counted(PROFILE, **KW)
    assert plain["token_counts"] == "stand_in_chars_per_4" and plain["counted_by_kind"] == {}
    assert plain["projected_cost_per_trace_usd"] == project(PROFILE, **KW)["projected_cost_per_trace_usd"]
    counted = project_counted(PROFILE, sdk=Tokenizer(2.0), requests={"planner": [PLANNER], "judge": [PLANNER]}, **KW)
    assert counted["token_counts"] == "count_tokens" and set(counted["counted_by_kind"]) == {"planner", "judge"}
    assert "subagent" in counted["kinds_not_counted"] and counted["output_tokens"] == "stand_in_chars_per_4"
    # twice the input tokens on the two kinds: dearer per trace, fewer traces for the $200
    assert counted["projected_cost_per_trace_usd"] > plain["projected_cost_per_trace_usd"]
    assert counted["traces_the_budget_buys"] < plain["traces_the_budget_buys"]
    assert counted["by_kind"]["subagent"] == plain["by_kind"]["subagent"]
    # kinds the profile does not hold are not counted into it
    other = project_counted(PROFILE, sdk=Tokenizer(2.0), requests={"unknown_kind": [PLANNER]}, **KW)
    assert other["token_counts"] == "stand_in_chars_per_4"
