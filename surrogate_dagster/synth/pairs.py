"""Preference pairs from execution-graded samples of one prompt.

For each prompt, k completions (sampled at temperature 1.0) are graded (graders.py). Two ways to
pair them:

- :func:`select_pairs` (what the pipeline uses): several pairs per prompt, by tier: a sample that
  passes every test against one that does not (``tests``), then one that passes more tests
  (``partial_tests``), then a lint-only difference at least ``min_margin`` wide (``lint``); a pair
  whose chosen sample passes fewer tests is never made, whatever its lint. Larger margins first
  within a tier, at most ``max_pairs`` per prompt, near-identical pairs dropped;
- :func:`select_pair`: best vs worst only (deterministic ties: earliest best, latest worst).

Output rows follow the normalized DPO contract (``sources/adapters/base.py::dpo_row``), with scores
in ``meta``.
"""

from __future__ import annotations

import hashlib
import re
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


TIERS = ("tests", "partial_tests", "lint")  # in the order pairs are taken
_WS = re.compile(r"\s+")


def normalized_text(text: str) -> str:
    """Whitespace collapsed: two answers equal under it are the same answer."""
    return _WS.sub(" ", text).strip()


def tests_score(s: ScoredCompletion) -> float:
    """The functional part of a grade: 0 when a gate failed, else the mean functional check score
    (1.0 when the task has no functional check). Without a grade: 1.0 if it passed, else 0.0."""
    if not s.grade:
        return float(s.passed)
    if s.grade.get("failed_gate"):
        return 0.0
    fn = [c["score"] for c in s.grade.get("checks", []) if c.get("role") == "functional"]
    return sum(fn) / len(fn) if fn else 1.0


def passes_tests(s: ScoredCompletion) -> bool:
    """Every gate and every functional check passed (lint aside)."""
    if not s.grade:
        return s.passed
    return not s.grade.get("failed_gate") and all(
        c.get("passed") for c in s.grade.get("checks", []) if c.get("role") in ("gate", "functional"))


@dataclass(frozen=True)
class PairChoice:
    """One pair picked from a prompt's samples."""

    chosen: int
    rejected: int
    margin: float  # score difference
    tier: str  # one of TIERS


def pair_key(chosen: str, rejected: str) -> str:
    """Identity of a pair across prompts (whitespace-insensitive)."""
    return hashlib.sha256(f"{normalized_text(chosen)}\0{normalized_text(rejected)}".encode()).hexdigest()


def select_pairs(scored: Sequence[ScoredCompletion], *, min_margin: float, max_pairs: int,
                 code_of: Callable[[str], str | None] | None = None,
                 seen: set[str] | None = None) -> tuple[list[PairChoice], Counter]:
    """Pairs of one prompt's samples (see the module docstring) and counted reasons for candidate
    pairs left out. ``code_of`` extracts the graded code: a pair whose two samples have the same
    code is left out (``same_code``). ``seen`` holds :func:`pair_key` of pairs already taken (from
    this and earlier prompts) and is updated."""
    if max_pairs < 1:
        raise ValueError("max_pairs must be at least 1")
    seen = set() if seen is None else seen
    dropped: Counter = Counter()
    cands: list[tuple[int, float, int, int, str]] = []
    for i, a in enumerate(scored):
        for j, b in enumerate(scored):
            if i == j or a.score <= b.score:
                continue
            ta, tb = tests_score(a), tests_score(b)
            if passes_tests(a) and not passes_tests(b):
                tier = "tests"
            elif ta > tb:
                tier = "partial_tests"
            elif ta < tb:
                dropped["chosen_passes_fewer_tests"] += 1  # cleaner lint must not outrank correctness
                continue
            elif a.score - b.score >= min_margin - 1e-9:
                tier = "lint"
            else:
                dropped["margin_too_small"] += 1
                continue
            cands.append((TIERS.index(tier), -(a.score - b.score), i, j, tier))
    picked: list[PairChoice] = []
    for _, neg_margin, i, j, tier in sorted(cands):
        c, r = scored[i].completion, scored[j].completion
        if normalized_text(c) == normalized_text(r):
            dropped["chosen_equals_rejected"] += 1  # same text graded differently: a flaky grade
            continue
        if code_of is not None:
            cc, rc = code_of(c), code_of(r)
            if cc is not None and rc is not None and normalized_text(cc) == normalized_text(rc):
                dropped["same_code"] += 1
                continue
        key = pair_key(c, r)
        if key in seen:
            dropped["duplicate_pair"] += 1
            continue
        if len(picked) >= max_pairs:
            dropped["over_max_pairs"] += 1
            continue
        seen.add(key)
        picked.append(PairChoice(i, j, round(-neg_margin, 6), tier))
    return picked, dropped


def pair_row(task_id: str, prompt: str | list[dict], scored: Sequence[ScoredCompletion], choice: PairChoice, *,
             task_source: str = "", extra_meta: dict | None = None) -> tuple[dict | None, str | None]:
    """(normalized DPO row, None) for one :class:`PairChoice`, or (None, quarantine reason)."""
    return _row(task_id, prompt, scored, choice.chosen, choice.rejected, task_source,
                {"tier": choice.tier, **(extra_meta or {})})


def make_pair(task_id: str, prompt: str | list[dict], scored: Sequence[ScoredCompletion], *,
              task_source: str = "", min_margin: float = 0.0,
              extra_meta: dict | None = None) -> tuple[dict | None, str | None]:
    """(normalized DPO row, None) or (None, reason): best vs worst. ``prompt`` is text or ChatML turns."""
    picked = select_pair(scored, min_margin)
    if isinstance(picked, str):
        return None, picked
    b, w = picked
    return _row(task_id, prompt, scored, b, w, task_source, extra_meta)


def _row(task_id: str, prompt: str | list[dict], scored: Sequence[ScoredCompletion], b: int, w: int,
         task_source: str, extra_meta: dict | None) -> tuple[dict | None, str | None]:
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


MARGIN_BINS = ((0.0, 0.1), (0.1, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0001))


def margin_histogram(margins: Iterable[float]) -> dict[str, int]:
    """Pairs per score-margin bin, ``"[lo,hi)"`` -> count (the last bin includes 1.0)."""
    out = {f"[{lo:g},{min(hi, 1.0):g}{')' if hi < 1 else ']'}": 0 for lo, hi in MARGIN_BINS}
    for m in margins:
        for (lo, hi), k in zip(MARGIN_BINS, out):
            if lo <= m < hi:
                out[k] += 1
                break
        else:
            raise ValueError(f"margin {m} outside [0, 1]")
    return out
