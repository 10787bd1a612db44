"""Near dedup on what makes a tool row distinct, checked on real-shape rows.

The rows are the offline hub fixtures of five tool sources, run through their adapters. Rows of a
source share one Hermes system prompt per tool set, so whole-row texts of *different* requests
reach Jaccard 0.7-0.9; `dedup_text` leaves system turns out. Lightly edited copies of the same rows
(reflowed text, changed numbers, a renamed identifier) must still be caught.
"""

from __future__ import annotations

import copy
import re

import pytest

from surrogate_dagster.curation.minhash import THRESHOLD, compute_signatures, find_near_duplicates, jaccard, shingles
from surrogate_dagster.curation.text import dedup_text, row_text

from tests.unit.sources.test_adapters_tool_agent import EXPECTED, OK, rows_of, run

SOURCES = ["hermes_function_calling", "xlam_function_calling", "when2call_sft", "toolmind", "toucan_kimi_k2"]
# Below ~30 shingles one renamed word moves 5 of them: 5-gram Jaccard cannot stay >= 0.7.
MIN_SHINGLES_FOR_RENAME = 30


def _converted(source: str) -> list[dict]:
    repo, parts = EXPECTED[source]
    out = []
    for part, outcomes in parts.items():
        for raw, outcome in zip(rows_of(repo, part), outcomes):
            if outcome == OK:
                out.append(run(source, raw, part.split("/")[0]))
    return out


@pytest.fixture(scope="module")
def tool_rows() -> dict[str, list[dict]]:
    return {s: _converted(s) for s in SOURCES}


def _edit(row: dict, suffix: str, fn) -> dict:
    out = copy.deepcopy(row)
    out["id"] = f"{row['id']}-{suffix}"
    out["messages"] = [m if m["role"] == "system" else {**m, "content": fn(m["content"])} for m in out["messages"]]
    return out


def _reflow(text: str) -> str:
    return re.sub(" ", "\n", text, count=6).replace(", ", ",  ")


def _renumber(text: str) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group()) + 7), text)


def _rename_first_user_word(row: dict) -> dict:
    out = copy.deepcopy(row)
    out["id"] = f"{row['id']}-renamed"
    user = next(m for m in out["messages"] if m["role"] == "user")
    word = max(re.findall(r"[A-Za-z_]{4,}", user["content"]), key=len)
    user["content"] = user["content"].replace(word, word[:2] + "zq" + word[4:], 1)
    return out


def _near(tmp: Path, parts: dict[str, list[dict]], view) -> dict:
    dirs, texts = {}, {}
    for name, rows in parts.items():
        dirs[name] = tmp / view.__name__ / name
        compute_signatures(((r["id"], view(r)) for r in rows), dirs[name])
        texts.update({(name, r["id"]): view(r) for r in rows})
    return find_near_duplicates(dirs, lambda p, d: texts[(p, d)], threshold=THRESHOLD,
                                priority=list(parts)).dropped


def test_whole_rows_of_distinct_requests_look_like_near_duplicates(tmp_path: Path, tool_rows) -> None:
    """The failure mode this view avoids: the shared system prompt alone pushes distinct rows over."""
    dropped = _near(tmp_path, tool_rows, row_text)
    assert len(dropped) >= 5
    for (src, doc), dup in dropped.items():
        a = next(r for r in tool_rows[src] if r["id"] == doc)
        b = next(r for r in tool_rows[dup.kept_partition] if r["id"] == dup.kept_doc_id)
        assert jaccard(shingles(dedup_text(a)), shingles(dedup_text(b))) < 0.55


def test_distinct_tool_requests_all_survive(tmp_path: Path, tool_rows) -> None:
    assert sum(map(len, tool_rows.values())) >= 25
    assert _near(tmp_path, tool_rows, dedup_text) == {}


def test_lightly_edited_copies_are_still_caught(tmp_path: Path, tool_rows) -> None:
    edited = []
    for rows in tool_rows.values():
        for row in rows:
            edited += [_edit(row, "reflowed", _reflow), _edit(row, "renumbered", _renumber)]
            if len(shingles(dedup_text(row))) >= MIN_SHINGLES_FOR_RENAME:
                edited.append(_rename_first_user_word(row))
    dropped = _near(tmp_path, {**tool_rows, "edited": edited}, dedup_text)
    originals = {r["id"] for rows in tool_rows.values() for r in rows}
    # every edited copy is dropped, always in favour of its original; no original is dropped
    assert {d for (p, d) in dropped} == {r["id"] for r in edited if dedup_text(r) != ""} - originals
    for (p, d), dup in dropped.items():
        assert p == "edited" and d.rsplit("-", 1)[0] == dup.kept_doc_id
        assert dup.jaccard >= THRESHOLD


def test_dedup_text_leaves_out_system_turns_and_tool_wrappers() -> None:
    row = {"kind": "sft", "messages": [
        {"role": "system", "content": "You are a function calling AI model. <tools>...</tools>"},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": '<tool_call>\n{"name": "w", "arguments": {"city": "Oslo"}}\n</tool_call>'},
        {"role": "tool", "content": '<tool_response>\n{"t": 4}\n</tool_response>'},
        {"role": "assistant", "content": "4 degrees."}]}
    assert dedup_text(row) == ('Weather in Oslo?\n<tool_call>\n{"name": "w", "arguments": {"city": "Oslo"}}\n'
                               '</tool_call>\n{"t": 4}\n4 degrees.')
    dpo = {"kind": "dpo", "prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}],
           "chosen": "A", "rejected": "B"}
    assert dedup_text(dpo) == "Q\nA\nB"
