"""The filter step (AST, heuristics, edu scorer) over chunks of rows, in the calling process and in fork workers,
equals the three blocks run in sequence; a fork-unsafe scorer runs in the parent only."""

from __future__ import annotations

import random

import pytest

from surrogate_dagster.curation.blocks import BlockStats, run_blocks
from surrogate_dagster.curation.quality.edu_classifier import EduFilter, RubricScorer
from surrogate_dagster.curation.quality.edu_labelled import EXAMPLES
from surrogate_dagster.curation.quality.heuristics import HeuristicFilter
from tests.unit.curation.test_quality import CASES, GOOD_CODE, GOOD_PROSE, py, sft


def _filter_rows_reference(rows, threshold=3.0):
    from surrogate_dagster.curation.ast_validity import AstChecker

    ck, heur, edu = AstChecker(), HeuristicFilter(), EduFilter(RubricScorer(), threshold=threshold)
    stats = BlockStats()
    reasons = run_blocks([ck, heur, edu], rows, stats)
    return (reasons, ck.metadata(stats.of("ast")), heur.metadata(stats.of("heuristics")),
            edu.metadata(stats.of("edu")))


def _filter_corpus():
    rng = random.Random(4)
    answers = [py(GOOD_CODE), py("def f(:\n    pass"), "k", GOOD_PROSE, py(EXAMPLES[0]["code"])]
    answers += [bad for bad, _ in CASES.values()] + [good for _, good in CASES.values()]
    answers += [f"```{e['language']}\n{e['code']}\n```\n{e['context']}" for e in EXAMPLES]
    return [sft(rng.choice(answers)) for _ in range(150)]


@pytest.mark.parametrize("workers,chunk_size", [(1, 256), (1, 7), (2, 16)])
def test_the_filter_steps_block_run_equals_the_three_blocks_in_sequence(workers, chunk_size):
    from surrogate_dagster.curation.ast_validity import PARSE_MEMO, AstChecker
    from surrogate_dagster.curation.code_blocks import PARTS_MEMO
    from surrogate_dagster.curation.executor import apply_blocks

    rows = _filter_corpus()
    expected = _filter_rows_reference(rows)
    PARSE_MEMO.clear()
    PARTS_MEMO.clear()
    blocks = (AstChecker(), HeuristicFilter(), EduFilter(RubricScorer(), threshold=3.0))
    res = apply_blocks(rows, blocks, {"kind": "pool", "workers": workers, "chunk_rows": chunk_size}, "unused")
    assert (res.reasons, *(b.metadata(res.stats.of(b.name)) for b in blocks)) == expected
    assert {r for r in res.reasons if r} >= {"ast_error_python", "quality_too_short", "quality_edu_score"}
    assert list(res.stats.blocks) == ["ast", "heuristics", "edu"]
    if workers == 1:
        assert PARSE_MEMO.hits > 0 and PARTS_MEMO.hits > 0  # the edu scorer reused AST's work


def test_the_filter_steps_block_run_scores_a_fork_unsafe_model_in_the_parent():
    import os

    from surrogate_dagster.curation.ast_validity import AstChecker
    from surrogate_dagster.curation.executor import apply_blocks

    class ParentOnly(RubricScorer):
        fork_safe = False
        pids: set[int] = set()

        def score_many(self, items):
            ParentOnly.pids.add(os.getpid())
            return super().score_many(items)

    rows = _filter_corpus()
    edu = EduFilter(ParentOnly(), threshold=3.0)
    res = apply_blocks(rows, (AstChecker(), HeuristicFilter(), edu), {"kind": "pool", "workers": 2, "chunk_rows": 16},
                       "unused")
    assert ParentOnly.pids == {os.getpid()}
    assert (res.reasons, edu.metadata(res.stats.of("edu"))) == (_filter_rows_reference(rows)[0], _filter_rows_reference(rows)[3])
