"""The curation block interface (surrogate_dagster.curation.blocks) and the filters built on it."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from surrogate_dagster.curation.ast_validity import AstChecker
from surrogate_dagster.curation.blocks import Block, BlockStats, Group, decide_batch, keep_drop, run_blocks
from surrogate_dagster.curation.quality.edu_classifier import EduFilter, RubricScorer
from surrogate_dagster.curation.quality.heuristics import RULES, HeuristicFilter
from tests.unit.curation.test_blocks_outputs import _plants, corpora


class Over:
    def __init__(self, name: str, limit: int) -> None:
        self.name, self.limit = name, limit

    def decide(self, row: dict) -> str | None:
        return f"{self.name}_over" if row["v"] > self.limit else None


class Odd:
    name = "odd"

    def __init__(self) -> None:
        self.batches: list[int] = []

    def decide(self, row: dict) -> str | None:
        return "odd" if row["v"] % 2 else None

    def decide_batch(self, rows, notes):
        self.batches.append(len(rows))
        notes["seen_odd"] += sum(r["v"] % 2 for r in rows)
        return [self.decide(r) for r in rows]


def _rows(n: int) -> list[dict]:
    return [{"v": i} for i in range(n)]


def test_first_reason_drops_and_later_blocks_never_see_the_row():
    odd = Odd()
    stats = BlockStats()
    reasons = run_blocks([Over("big", 5), odd], _rows(10), stats)
    assert reasons == [None, "odd", None, "odd", None, "odd", "big_over", "big_over", "big_over", "big_over"]
    assert odd.batches == [6]  # one batch of the six rows the first block kept
    big, o = stats.of("big"), stats.of("odd")
    assert (big.seen, big.kept, big.dropped) == (10, 6, Counter(big_over=4))
    assert (o.seen, o.kept, o.dropped, o.notes) == (6, 3, Counter(odd=3), Counter(seen_odd=3))
    # every row is kept or dropped by exactly one block
    assert len(reasons) == big.kept - o.seen + o.kept + sum(stats.dropped().values())
    assert stats.as_metadata()["odd"] == {"rows_seen": 6, "rows_kept": 3, "rows_dropped": 3,
                                          "dropped_by_reason": {"odd": 3}}


def test_group_drops_with_the_first_reason_and_flags_all():
    stats = BlockStats()
    group = Group("g", [Over("big", 5), Odd()])
    assert run_blocks([group], _rows(8), stats) == [None, "odd", None, "odd", None, "odd", "big_over", "big_over"]
    g = stats.of("g")
    assert g.dropped == Counter(odd=3, big_over=2)
    assert g.flagged == Counter(odd=4, big_over=2)   # 7 is both odd and big
    assert group.decide({"v": 7}) == "big_over" and group.violations({"v": 7}) == ["big_over", "odd"]
    with pytest.raises(ValueError, match="duplicate block names"):
        Group("g", [Odd(), Odd()])


def test_stats_merge_and_empty_input():
    a, b = BlockStats(), BlockStats()
    run_blocks([Over("big", 2), Odd()], _rows(3), a)
    run_blocks([Over("big", 2), Odd()], [], b)
    assert list(b.blocks) == ["big", "odd"] and b.of("big").seen == 0
    run_blocks([Over("big", 2), Odd()], _rows(6)[3:], b)
    merged = BlockStats().merge(a).merge(b)
    assert merged.of("big").seen == 6 and merged.dropped() == Counter(big_over=3, odd=1)


def test_a_batch_of_the_wrong_length_is_an_error():
    class Short(Odd):
        def decide_batch(self, rows, notes):
            return [None]

    with pytest.raises(ValueError, match="returned 1 decisions for 3 rows"):
        decide_batch(Short(), _rows(3))


def test_keep_drop_splits_rows():
    rows = _rows(4)
    kept, dropped = keep_drop(rows, run_blocks([Odd()], rows))
    assert kept == [rows[0], rows[2]] and dropped == [(rows[1], "odd"), (rows[3], "odd")]


def test_curation_filters_are_blocks():
    blocks = [AstChecker(), HeuristicFilter(), EduFilter(RubricScorer()), *HeuristicFilter().rules]
    assert all(isinstance(b, Block) for b in blocks)
    assert [b.name for b in blocks[:3]] == ["ast", "heuristics", "edu"]
    assert [r.name for r in HeuristicFilter().rules] == [r.name for r in RULES]


# ---------------------------------------------------------------- one decision, two ways of asking
def _all_rows() -> list[dict]:
    return [r for rows in corpora().values() for r in rows]


def _decide_both_ways(block, rows):
    """(row by row with decide, decide_batch over all rows): must be equal."""
    return [block.decide(r) for r in rows], decide_batch(block, rows)


def test_fused_heuristics_find_what_the_rule_blocks_find_on_the_corpora():
    heur = HeuristicFilter()
    rows = _all_rows()
    fused = [heur.violations(r) for r in rows]
    assert fused == [heur.plain_violations(r) for r in rows]
    assert sum(map(bool, fused)) > 100  # the comparison saw many failing rows


def test_batch_and_single_decisions_agree_on_the_corpora():
    rows = _all_rows()
    for block in (AstChecker(), EduFilter(RubricScorer(), threshold=3.0)):
        single, batch = _decide_both_ways(block, rows)
        assert single == batch, block.name
        assert any(single), block.name


_TEXT = st.text(alphabet=st.sampled_from(list("abcXYZ019 \t\n#/*-'\"`=(){}[]:;,.0x\\u+\ufffd\u00e9")), max_size=300)
_LANG = st.sampled_from(["python", "json", "c", "go", "", "rust", "yaml", "text"])


@st.composite
def answers(draw) -> str:
    pieces = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            pieces.append(draw(_TEXT))
        elif kind == 1:
            pieces.append(f"```{draw(_LANG)}\n{draw(_TEXT)}\n```")
        else:
            pieces.append(draw(st.sampled_from(_PLANTS)))
    return "\n".join(pieces)


_PLANTS = _plants(__import__("random").Random(11))


@st.composite
def rows(draw) -> dict:
    if draw(st.booleans()):
        return {"id": "h", "kind": "dpo", "prompt": [], "chosen": draw(answers()), "rejected": draw(answers())}
    turns = [{"role": "user", "content": "q"}]
    for _ in range(draw(st.integers(1, 3))):
        turns.append({"role": "assistant", "content": draw(answers())})
    return {"id": "h", "kind": "sft", "messages": turns}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows())
def test_fused_heuristics_equal_the_rule_blocks_on_generated_rows(row):
    for heur in (HeuristicFilter(), LOOSE):
        assert heur.violations(row) == heur.plain_violations(row)


# low floors, so that the size screens are crossed by short generated texts
LOOSE = HeuristicFilter({"alpha_fraction": {"min_chars": 5}, "digit_fraction": {"min_chars": 5},
                         "whitespace_fraction": {"min_chars": 5}, "duplicate_lines": {"min_lines": 2},
                         "comment_fraction": {"min_lines": 2}, "encoded_data": {"min_chars": 5},
                         "hex_words": {"min_chars": 5}, "long_string_words": {"min_chars": 5},
                         "max_line_length": {"max_chars": 40}, "repeated_ngrams": {"min_words": 5},
                         "mean_word_length": {"min_words": 3}, "too_short": {"min_chars": 20}})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rows(), min_size=1, max_size=6))
def test_chain_equals_its_blocks_one_after_the_other_on_generated_rows(batch):
    ast, heur = AstChecker(), HeuristicFilter()
    edu = EduFilter(RubricScorer(), threshold=3.0)
    expected = [ast.decide(r) or next(iter(heur.plain_violations(r)), None) for r in batch]
    survivors = [i for i, r in enumerate(expected) if r is None]
    for i in survivors:
        expected[i] = edu.decide(batch[i])
    assert run_blocks([ast, heur, edu], batch) == expected
