"""The five training mixtures as axolotl 0.19 reads them, against hand-written Qwen2.5 renderings.

For each stage file (assets/stages/*.yaml), rendered for the local executor around a tiny Qwen2
that carries the real Qwen2.5 chat template, axolotl's own dataset preparation (``load_cfg`` then
``load_datasets`` / ``load_preference_datasets``, as ``axolotl preprocess`` runs them; DPO rows
then tokenized by TRL's DPO trainer) runs in the trainer environment on a small mixture holding
one row per source of that stage's mixture (tests/fixtures/reader/<mixture>.jsonl, made by
``to_mixture_row``: tests/support/axolotl_reader_rows.py). The decoded token ids are compared with
tests/golden/reader/<mixture>.txt, written by hand from the template's definition
(trl/chat_templates/qwen2_5.jinja), not produced by any renderer:

- SFT: the whole input, and each trained span (labels != -100): exactly the assistant contents,
  each followed by its ``<|im_end|>``;
- DPO: the prompt, and the chosen and rejected completions, each closed by one ``<|im_end|>``.

On top of the goldens: one ``<tool_response>`` per tool result, every ``<tool_call>`` body strict
JSON with ``name``/``arguments``, one system turn. A mixture whose tool turns still carry their
``<tool_response>`` wrapper must fail these checks (it renders a double wrapper).

Golden file format: ``##### <row id> <part>`` header lines; a part's text is everything up to the
next header, minus the one newline that ends it (so a text ending in a newline is followed by an
empty line). Parts: ``input`` and ``trained`` (one per trained span, in order) for SFT; ``prompt``,
``chosen``, ``rejected`` for DPO.

The local executor renders ``sample_packing: false``; that is also what makes one prepared row one
conversation here, so its ids and labels can be decoded per row. Packing on a GPU executor
concatenates rows tokenized by this same path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.axolotl_reader_rows import MIXTURES, fixture_path, mixture_rows, normalized_rows
from tests.support.axolotl_reader_support import (
    STAGE_MIXTURE,
    TRAINER_PY,
    build_tokenizer_model,
    read_jsonl,
    render_local,
    run_probe,
)
from surrogate_dagster.catalog.loader import load_sources
from surrogate_dagster.curation.config import load_curation
from surrogate_dagster.curation.mixtures import to_jsonl
from surrogate_dagster.synth.orchestrator import SOURCE_NAME as ORCHESTRATOR_SOURCE
from surrogate_dagster.synth.pairs import PAIR_SOURCE

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "reader"
HEADER = re.compile(r"^##### (\S+) (input|trained|prompt|chosen|rejected)\n", re.M)
TOOL_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
SYNTH_SOURCE = {"orchestrator_traces": ORCHESTRATOR_SOURCE, "exec_graded_pairs": PAIR_SOURCE}
SFT_STAGES = ["stage1", "stage1_5", "stage1_6"]
DPO_STAGES = ["stage2", "stage2_5"]
WRAPPED = "stage1_5_wrapped"

needs_trainer = pytest.mark.skipif(not TRAINER_PY.exists(),
                                   reason=f"the trainer environment is absent ({TRAINER_PY}); `make setup` creates it")


def load_golden(mixture: str) -> dict[str, dict[str, list[str]]]:
    text = (GOLDEN / f"{mixture}.txt").read_text(encoding="utf-8")
    parts = HEADER.split(text)
    assert parts[0] == "", f"{mixture}.txt: text before the first header"
    out: dict[str, dict[str, list[str]]] = {}
    for row_id, part, body in zip(parts[1::3], parts[2::3], parts[3::3]):
        assert body.endswith("\n"), f"{mixture}.txt: {row_id} {part} does not end with a newline"
        out.setdefault(row_id, {}).setdefault(part, []).append(body[:-1])
    return out


def mixture_members(mixture: str) -> set[str]:
    """The row sources of a mixture, as the catalog defines it (families, sources, synth)."""
    cfg = load_curation().mixtures[mixture]
    members = {s.name for s in load_sources().sources if s.family in cfg.families or s.name in cfg.sources}
    return members | {SYNTH_SOURCE[k] for k in cfg.synth}


def row_of(text: str, rows: list[dict]) -> dict:
    """The fixture row a decoded sequence came from (axolotl shuffles and drops the id column):
    the one whose last user turn appears in it verbatim."""
    found = []
    for r in rows:
        users = [m["content"] for m in r["messages"] if m["role"] == "user"]
        if f"<|im_start|>user\n{users[-1]}<|im_end|>" in text:
            found.append(r)
    assert len(found) == 1, f"{len(found)} fixture rows match:\n{text[:400]}"
    return found[0]


def after_system(text: str) -> str:
    """The conversation after its system turn (a Hermes system prompt shows the call syntax)."""
    assert text.startswith("<|im_start|>system\n")
    return text.split("<|im_end|>", 1)[1]


def check_tool_calls(text: str) -> int:
    """Every <tool_call> body is strict JSON {"name": str, "arguments": object}; returns the count."""
    assert text.count("<tool_call>") == text.count("</tool_call>")
    bodies = TOOL_CALL.findall(text)
    assert len(bodies) == text.count("<tool_call>")
    for body in bodies:
        call = json.loads(body)
        assert list(call) == ["name", "arguments"] and isinstance(call["name"], str)
        assert isinstance(call["arguments"], dict)
    return len(bodies)


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict[str, dict]:
    """Every stage (and stage 1.5 on tool turns left wrapped) through axolotl, in one trainer process."""
    root = tmp_path_factory.mktemp("axolotl-reader")
    model = build_tokenizer_model(root / "tiny")
    data = {m: fixture_path(m) for m in MIXTURES}
    configs = {stage: render_local(stage, root / stage, model, data) for stage in STAGE_MIXTURE}
    wrapped = root / "tool_sft_wrapped.jsonl"
    wrapped.write_bytes(to_jsonl([{"id": r["id"], "source": r["source"], "messages": r["messages"]}
                                  for r in normalized_rows("tool_sft")]))
    configs[WRAPPED] = render_local("stage1_5", root / WRAPPED, model, {**data, "tool_sft": wrapped})
    return run_probe(configs, root)


@pytest.mark.parametrize("mixture", MIXTURES)
def test_reader_fixture_is_the_mixture_of_one_row_per_source(mixture):
    rows = read_jsonl(fixture_path(mixture))
    assert rows == mixture_rows(mixture), "fixture out of date: run .venv/bin/python tests/support/axolotl_reader_rows.py"
    assert {r["source"] for r in rows} == mixture_members(mixture)
    assert set(load_golden(mixture)) == {r["id"] for r in rows}


@needs_trainer
@pytest.mark.parametrize("stage", SFT_STAGES)
def test_sft_stage_reads_its_mixture_as_the_golden_rendering(stage, probed):
    mixture = STAGE_MIXTURE[stage]
    result, rows, golden = probed[stage], read_jsonl(fixture_path(mixture)), load_golden(mixture)
    assert result["rl"] is None and result["sample_packing"] is False
    assert result["datasets"][0]["roles_to_train"] == ["assistant"]
    assert result["datasets"][0]["train_on_eos"] == "turn"
    assert len(result["rows"]) == len(rows), "axolotl dropped rows"
    seen = set()
    for got in result["rows"]:
        row = row_of(got["input"], rows)
        seen.add(row["id"])
        want = golden[row["id"]]
        assert got["input"] == want["input"][0], row["id"]
        assert got["trained"] == want["trained"], row["id"]
        assert got["label_mismatches"] == 0, row["id"]
        # Independently of the golden: loss on the assistant contents (each + <|im_end|>) only.
        assert got["trained"] == [m["content"] + "<|im_end|>" for m in row["messages"] if m["role"] == "assistant"]
        assert got["input"].count("<|im_start|>system") == 1, row["id"]
        n_results = sum(m["role"] == "tool" for m in row["messages"])
        assert got["input"].count("<tool_response>") == n_results, row["id"]
        assert "<tool_response>\n<tool_response>" not in got["input"]
        n_calls = check_tool_calls(after_system(got["input"]))
        assert sum(check_tool_calls(span) for span in got["trained"]) == n_calls, "a call outside the loss"
    assert seen == {r["id"] for r in rows}


@needs_trainer
@pytest.mark.parametrize("stage", DPO_STAGES)
def test_dpo_stage_reads_its_pairs_as_the_golden_rendering(stage, probed):
    mixture = STAGE_MIXTURE[stage]
    result, rows, golden = probed[stage], read_jsonl(fixture_path(mixture)), load_golden(mixture)
    assert result["rl"] == "dpo"
    ds = result["datasets"][0]
    assert (ds["type"], ds["field_messages"], ds["field_chosen"], ds["field_rejected"]) == \
        ("chat_template.default", "messages", "chosen", "rejected")
    assert len(result["rows"]) == len(rows), "axolotl or TRL dropped pairs"
    seen = set()
    for got in result["rows"]:
        row = row_of(got["prompt_ids"], rows)
        seen.add(row["id"])
        want = golden[row["id"]]
        for part in ("prompt", "chosen", "rejected"):
            # axolotl's strings and TRL's token ids (decoded) are the same text.
            assert got[part] == want[part][0], (row["id"], part)
            assert got[f"{part}_ids"] == want[part][0], (row["id"], part)
        for part in ("chosen", "rejected"):
            assert got[part] == row[part]["content"] + "<|im_end|>", (row["id"], part)
            assert got[part].count("<|im_end|>") == 1 and got[f"{part}_ends_with_eos"], (row["id"], part)
            check_tool_calls(got[part])
        assert got["prompt"].count("<|im_start|>system") == 1
        assert got["prompt"].endswith("<|im_start|>assistant\n")
        check_tool_calls(after_system(got["prompt"]))
    assert seen == {r["id"] for r in rows}


@needs_trainer
def test_wrapped_tool_turns_fail_the_reader_check(probed):
    """Tool turns that still hold their <tool_response> wrapper reach the model double-wrapped:
    the golden comparison above would fail on every row with a tool result."""
    rows, golden = normalized_rows("tool_sft"), load_golden("tool_sft")
    with_results = {r["id"] for r in rows if any(m["role"] == "tool" for m in r["messages"])}
    assert len(with_results) >= 4
    failing = set()
    for got in probed[WRAPPED]["rows"]:
        row = row_of(got["input"], rows)
        if row["id"] in with_results:
            assert "<tool_response>\n<tool_response>" in got["input"]
            assert got["input"].count("<tool_response>") == 2 * sum(m["role"] == "tool" for m in row["messages"])
        if got["input"] != golden[row["id"]]["input"][0]:
            failing.add(row["id"])
    assert failing == with_results
