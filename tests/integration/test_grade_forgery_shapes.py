"""No forged grade: 12 test styles x 5 tricks (tests/support/forgery_shapes.py), graded by the Grader.

Before this harness, 22 of the 60 tricked runs scored above 0 (21 a full pass): replacing the
harness's reporter passed loops, helpers, check(candidate), called test functions, try-wrapped
and table tests; shadowing range/zip passed loop tests; reading the harness's spec file passed
every table; empty code passed tests under ``if __name__ == '__main__':`` and unittest classes.
Now every style is rewritten into straight-line asserts judged on the host (``sandbox/shapes.py``)
and reported through a channel the candidate cannot reach (``sandbox/runners.py``): none of the
60 scores above 0, nor the sixth trick (patched assertions); the honest correct answer passes
every style, sealed. Fed through ``build_exec_pairs``, a forged answer is never a chosen side.
"""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.synth.exec_pairs import INJECTED, build_exec_pairs
from surrogate_dagster.synth.graders import Grader
from tests.support import forgery_shapes as fs


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(workers=2)


@pytest.fixture(scope="module")
def graded(grader):
    runs = fs.tricked_runs({**fs.TRICKS, **fs.EXTRA_TRICKS})
    tasks = fs.tasks()
    honest = [(tasks[s], fs.fenced(code)) for code in (fs.CORRECT, fs.WRONG) for s in fs.STYLES]
    grades = grader.grade_many([(t, c) for _, _, t, c in runs] + honest)
    tricked = {(s, k): g for (s, k, _, _), g in zip(runs, grades)}
    n = len(fs.STYLES)
    correct = dict(zip(fs.STYLES, grades[len(runs):len(runs) + n]))
    wrong = dict(zip(fs.STYLES, grades[len(runs) + n:]))
    return tricked, correct, wrong


def _tests(g):
    return next((c for c in g.checks if c.name == "tests"), None)


def test_the_sixty_tricked_runs_score_zero(graded) -> None:
    tricked, _, _ = graded
    main = {key: g for key, g in tricked.items() if key[1] in fs.TRICKS}
    assert len(main) == 60
    forged = {f"{s}/{k}": (g.score, _tests(g).detail["errors"] if _tests(g) else g.failed_gate)
              for (s, k), g in main.items() if g.score > 0 or g.passed}
    assert forged == {}


@pytest.mark.parametrize("trick", list(fs.EXTRA_TRICKS))
def test_patched_assertions_score_zero(graded, trick: str) -> None:
    tricked, _, _ = graded
    assert [s for s in fs.STYLES if tricked[(s, trick)].score > 0] == []


@pytest.mark.parametrize("style", list(fs.STYLES))
def test_the_honest_answers_grade_as_python_would(graded, style: str) -> None:
    _, correct, wrong = graded
    g = correct[style]
    assert g.passed and g.score == 1.0, _tests(g).detail
    assert _tests(g).detail["unsealed"] == 0 and _tests(g).detail["no_assert"] == 0  # sealed, every style
    assert wrong[style].score == 0.0 and not wrong[style].passed


def test_forged_answers_never_become_the_chosen_side(grader) -> None:
    tasks = list(fs.tasks().values())
    pool = [fs.fenced(code) for code in fs.TRICKS.values()] + [fs.fenced(fs.WRONG)]
    gen = lambda prompts, n, t: [list(pool)] * len(prompts)  # noqa: E731
    # the samples alone: all score 0, no pair at all
    res = build_exec_pairs(tasks, gen, grader, n=len(pool), min_margin=0.1)
    assert res.summary["pairs"] == 0 and res.summary["no_pair_by_reason"] == {"all_scores_equal": len(tasks)}
    assert all(g["score"] == 0.0 for g in res.grades)
    # with the honest reference injected: it is the chosen side of every pair, a forgery only rejected
    res = build_exec_pairs(tasks, gen, grader, n=len(pool), min_margin=0.1, max_pairs_per_prompt=8,
                           inject_pool=True)
    metas = [json.loads(r["meta"]) for r in res.rows]
    assert len(res.rows) == len(pool)  # reference vs each sample (the same pair of texts is kept once)
    assert all(m["chosen_origin"] == INJECTED and m["chosen_index"] == len(pool) for m in metas)
    assert all(m["rejected_score"] == 0.0 and m["chosen_score"] == 1.0 for m in metas)
