"""Preference pairs from execution-graded samples: best vs worst completion of one prompt.

For each prompt, k completions (sampled at temperature 1.0) are graded; the highest-scoring one
becomes ``chosen`` and the lowest-scoring one ``rejected`` when their scores differ by more than
``min_margin``. Ties are broken deterministically: among equal best scores the earliest sample
wins, among equal worst scores the latest. Output rows follow the normalized DPO contract
(``sources/adapters/base.py::dpo_row``), with scores in ``meta``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import mean, median
from typing import Any, Callable, Iterable, Sequence

from surrogate_dagster.sources.adapters.base import AdapterContext, Quarantine, content_id, dpo_row

PAIR_SOURCE = "exec_graded_pairs"


@dataclass
class ScoredCompletion:
    """One sampled completion and its grade."""

    completion: str
    score: float
    passed: bool
    grade: dict | None = None  # Grade.to_dict(), kept for the pair's meta


def select_pair(scored: Sequence[ScoredCompletion], min_margin: float = 0.0) -> tuple[int, int] | str:
    """(chosen index, rejected index), or the reason there is no pair."""
    if len(scored) < 2:
        return "fewer_than_2_completions"
    best = max(range(len(scored)), key=lambda i: (scored[i].score, -i))
    worst = min(range(len(scored)), key=lambda i: (scored[i].score, -i))
    margin = scored[best].score - scored[worst].score
    if margin <= 0:
        return "all_scores_equal"
    if margin <= min_margin:
        return "margin_too_small"
    if scored[best].completion.strip() == scored[worst].completion.strip():
        return "chosen_equals_rejected"  # same text graded differently: a flaky grade, not a signal
    return best, worst


def make_pair(task_id: str, prompt: str | list[dict], scored: Sequence[ScoredCompletion], *,
              task_source: str = "", min_margin: float = 0.0,
              extra_meta: dict | None = None) -> tuple[dict | None, str | None]:
    """(normalized DPO row, None) or (None, reason). ``prompt`` is text or ChatML turns."""
    picked = select_pair(scored, min_margin)
    if isinstance(picked, str):
        return None, picked
    b, w = picked
    turns = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    meta = {"task_id": task_id, "task_source": task_source, "k": len(scored),
            "scores": [s.score for s in scored], "passed": [s.passed for s in scored],
            "chosen_index": b, "rejected_index": w,
            "chosen_score": scored[b].score, "rejected_score": scored[w].score,
            "margin": round(scored[b].score - scored[w].score, 6),
            "chosen_grade": _summary(scored[b].grade), "rejected_grade": _summary(scored[w].grade),
            **(extra_meta or {})}
    try:
        row = dpo_row(AdapterContext(source=PAIR_SOURCE), content_id(task_id, scored[b].completion,
                      scored[w].completion), turns, scored[b].completion, scored[w].completion, meta=meta)
    except Quarantine as q:
        return None, q.reason
    return row, None


def _summary(grade: dict | None) -> dict | None:
    """Per-check scores only: full findings stay in the grading report, not in every row."""
    if not grade:
        return None
    return {"failed_gate": grade.get("failed_gate"),
            "checks": {c["name"]: round(c["score"], 4) for c in grade.get("checks", [])}}


def pass_rate_summary(groups: Iterable[Sequence[ScoredCompletion]]) -> dict[str, Any]:
    """Distribution over prompts: how many of the k samples passed, score spread, pairable share."""
    groups = [list(g) for g in groups]
    n_prompts = len(groups)
    scores = [s.score for g in groups for s in g]
    per_prompt_pass = Counter(sum(s.passed for s in g) for g in groups)
    pairable = sum(1 for g in groups if not isinstance(select_pair(g), str))
    bins = Counter(min(int(s * 4), 3) if s < 1.0 else 4 for s in scores)
    return {
        "prompts": n_prompts,
        "completions": len(scores),
        "pass_rate": (sum(s.passed for g in groups for s in g) / len(scores)) if scores else 0.0,
        "mean_score": mean(scores) if scores else 0.0,
        "median_score": median(scores) if scores else 0.0,
        # {number of passing samples out of k: number of prompts}
        "passing_samples_per_prompt": dict(sorted(per_prompt_pass.items())),
        "all_pass_prompts": sum(1 for g in groups if g and all(s.passed for s in g)),
        "none_pass_prompts": sum(1 for g in groups if g and not any(s.passed for s in g)),
        "pairable_prompts": pairable,
        "score_histogram": {k: bins.get(i, 0) for i, k in
                            enumerate(["[0,.25)", "[.25,.5)", "[.5,.75)", "[.75,1)", "1.0"])},
    }


def scored_from_grades(completions: Sequence[str], grades: Sequence[Any]) -> list[ScoredCompletion]:
    """Zip completions with their ``Grade`` objects (from ``graders.Grader.grade_many``)."""
    if len(completions) != len(grades):
        raise ValueError(f"{len(completions)} completions but {len(grades)} grades")
    return [ScoredCompletion(c, g.score, g.passed, g.to_dict()) for c, g in zip(completions, grades)]


def exec_graded_pairs(tasks: Sequence[Any], generate: Callable[[list[str], int, float], list[list[str]]],
                      grader: Any, *, k: int = 4, temperature: float = 1.0,
                      min_margin: float = 0.0) -> tuple[list[dict], dict[str, Any]]:
    """Sample ``k`` completions per task with ``generate(prompts, k, temperature)`` (the inference
    resource), grade them all in one batch, pair best vs worst. Returns (DPO rows, report)."""
    prompts = [t.prompt for t in tasks]
    samples = generate(prompts, k, temperature)
    if len(samples) != len(tasks) or any(len(s) != k for s in samples):
        raise ValueError(f"generate returned {[len(s) for s in samples]} samples, wanted {k} for each "
                         f"of {len(tasks)} prompts")
    grades = grader.grade_many([(t, c) for t, cs in zip(tasks, samples) for c in cs])
    rows, reasons, groups = [], Counter(), []
    for i, (task, cs) in enumerate(zip(tasks, samples)):
        scored = scored_from_grades(cs, grades[i * k:(i + 1) * k])
        groups.append(scored)
        row, reason = make_pair(task.id, task.prompt, scored, task_source=task.source, min_margin=min_margin,
                                extra_meta={"kind": task.kind, "temperature": temperature})
        if row is None:
            reasons[reason] += 1
        else:
            rows.append(row)
    return rows, {"summary": pass_rate_summary(groups), "pairs": len(rows), "no_pair": dict(reasons)}
