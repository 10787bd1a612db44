"""Stage 1.6's agent data carries the runbook's Surrogate-1 system prompt as its system turn."""

from __future__ import annotations

from pathlib import Path

from tests.support.axolotl_reader_rows import mixture_rows, normalized_rows
from surrogate_dagster.curation.mixtures import build_mixture, default_system_prompt, to_mixture_row
from surrogate_dagster.synth.orchestrator import SURROGATE_PROMPT, system_prompt

STAGE_FILE = Path(__file__).resolve().parents[3] / "assets" / "stages" / "stage1_6.yaml"


def test_prompt_file_is_the_prompt_the_orchestrator_traces_carry():
    prompt = default_system_prompt("agent_sft")
    assert prompt == SURROGATE_PROMPT.strip()
    assert prompt.startswith("You are Surrogate-1.") and "Decision rules:" in prompt
    assert system_prompt().endswith(prompt)  # the traces: Hermes tool listing, then the same words
    assert "stage1_6_system_prompt.txt" in STAGE_FILE.read_text()


def test_only_the_agent_mixture_has_a_default_system_prompt():
    assert [m for m in ("code_sft", "tool_sft", "agent_sft", "code_dpo", "tool_dpo")
            if default_system_prompt(m)] == ["agent_sft"]


def test_agent_rows_without_a_system_turn_get_it_and_others_keep_theirs():
    rows = normalized_rows("agent_sft")
    by_source = {r["source"]: r for r in rows}
    build = build_mixture("agent_sft", "sft", {s: [r] for s, r in by_source.items()}, {})
    out = {r["source"]: r for r in build.iter_rows()}
    prompt = default_system_prompt("agent_sft")
    for source, row in by_source.items():
        first = row["messages"][0]
        got = out[source]["messages"]
        assert sum(m["role"] == "system" for m in got) == 1, source
        if first["role"] == "system":
            assert got[0]["content"] == first["content"], f"{source}: its own system turn was replaced"
        else:
            assert got[0] == {"role": "system", "content": prompt}, source
            assert got[1:] == to_mixture_row(row)["messages"], source
    # the fixture exercises both branches
    assert any(r["messages"][0]["role"] != "system" for r in rows)
    assert any(r["messages"][0]["role"] == "system" for r in rows)
    assert list(build.iter_rows()) == [r for r in mixture_rows("agent_sft") if r["source"] in out]


def test_other_mixtures_are_left_as_curated():
    rows = normalized_rows("code_sft")
    build = build_mixture("code_sft", "sft", {"all": rows}, {})
    assert [r["messages"] for r in build.iter_rows()] == [to_mixture_row(r)["messages"] for r in rows]
    assert any(r["messages"][0]["role"] != "system" for r in build.iter_rows())
