"""GAIA Level 1 (runbook Tier 2), where credentials allow.

GAIA (``gaia-benchmark/GAIA``) is gated on the Hub: a token of an account that accepted its terms
is needed, and its questions expect tools (web, files). Without the token, or offline, the report
is ``unavailable`` and says so. With it: the 2023 validation split, Level 1 questions (their answers
are public; the test answers are not), answered greedily without tools, scored by GAIA's
quasi-exact match (numbers as numbers, lists element-wise, strings normalized) on the text after
"FINAL ANSWER:".
"""

from __future__ import annotations

import os
import re
import string
from typing import Callable

from ...inference import GenRequest, InferenceClient
from .common import EvalReport, Timer, pct, unavailable

BENCHMARK = "gaia_level1"
VARIANT = "GAIA 2023 validation, Level 1, no tools, quasi-exact match"
SYSTEM = ("You are a general AI assistant. I will ask you a question. Report your thoughts, and finish your answer "
          "with the following template: FINAL ANSWER: [YOUR FINAL ANSWER]. YOUR FINAL ANSWER should be a number OR "
          "as few words as possible OR a comma separated list of numbers and/or strings.")


def _norm_str(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch not in string.punctuation and not ch.isspace())


def _num(s: str) -> float | None:
    try:
        return float(re.sub(r"[$%,\s]", "", s))
    except ValueError:
        return None


def quasi_exact_match(answer: str, truth: str) -> bool:
    """GAIA's scorer rules: number / comma-or-semicolon list / normalized string."""
    if _num(truth) is not None:
        return _num(answer) == _num(truth)
    if any(c in truth for c in ",;"):
        a = [x.strip() for x in re.split(r"[,;]", answer)]
        t = [x.strip() for x in re.split(r"[,;]", truth)]
        return len(a) == len(t) and all((_num(y) is not None and _num(x) == _num(y)) or _norm_str(x) == _norm_str(y)
                                        for x, y in zip(a, t))
    return _norm_str(answer) == _norm_str(truth)


def final_answer(text: str) -> str:
    m = re.findall(r"FINAL ANSWER:\s*(.+)", text)
    return m[-1].strip() if m else text.strip().splitlines()[-1] if text.strip() else ""


def run(client: InferenceClient, *, offline: bool, token_env: str = "HF_TOKEN", max_items: int | None = None,
        max_new_tokens: int = 512, log: Callable[[str], None] | None = None) -> EvalReport:
    if offline:
        return unavailable(BENCHMARK, VARIANT, "offline: GAIA is only on the HF Hub (gated)", "% correct")
    if not os.environ.get(token_env):
        return unavailable(BENCHMARK, VARIANT, f"no HF token in ${token_env}: GAIA is gated (accept its terms "
                           "with the token's account)", "% correct")
    from datasets import load_dataset

    rows = [r for r in load_dataset("gaia-benchmark/GAIA", "2023_level1", split="validation",
                                    token=os.environ[token_env])]
    rows = rows[:max_items] if max_items else rows
    with Timer() as tg:
        gens = client.generate([GenRequest(messages=({"role": "system", "content": SYSTEM},
                                                     {"role": "user", "content": r["Question"]}),
                                           max_new_tokens=max_new_tokens) for r in rows])
    samples = []
    for r, g in zip(rows, gens):
        ans = final_answer(g.text)
        samples.append({"task_id": r["task_id"], "answer": ans, "truth": r["Final answer"],
                        "correct": quasi_exact_match(ans, r["Final answer"]), "has_file": bool(r.get("file_name"))})
    n, k = len(samples), sum(s["correct"] for s in samples)
    return EvalReport(benchmark=BENCHMARK, variant=VARIANT, version="2023_level1/validation", status="ok",
                      score=pct(k, n), score_name="% correct (quasi-exact match)", n_items=n, samples=samples,
                      dataset={"source": "hf://datasets/gaia-benchmark/GAIA 2023_level1 validation"},
                      metrics={"correct": k, "with_attached_file": sum(s["has_file"] for s in samples),
                               "inference": client.describe()},
                      timings={"generate_s": round(tg.s, 3), "samples_per_s": round(n / tg.s, 3) if tg.s else 0.0},
                      notes=["no tools given: questions needing web or attached files are expected to fail"])
