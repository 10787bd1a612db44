"""Agreement and speed of the local educational-value scorer, plus AST and heuristic figures.

Run: .venv/bin/python benchmarks/quality_classifier_agreement.py

1. Agreement of RubricScorer (local profile) with hand labels (Stack-Edu rubric, 0-5) on the
   held-out split, against two baselines measured in the same run: a constant scorer (the dev
   split's most common label) and a "longer is better" scorer (non-blank lines / 5, capped at 5).
   The labels were written by the scorer's author: read the honesty note in
   surrogate_dagster/curation/quality/edu_labelled.py before quoting these numbers.
2. Throughput of the AST check (tree-sitter) on real Python solutions from shared/data
   (MBPP, HumanEval, LeetCode prompts), against Python's own ``ast.parse`` on the same blocks,
   and how often the two agree on validity.
3. What share of those real solutions each heuristic rule would drop (false-drop rate on code
   that is known to be fine), and the rubric scorer's speed on them.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from surrogate_dagster.curation.ast_validity import AstChecker  # noqa: E402
from surrogate_dagster.curation.quality.edu_classifier import RubricScorer  # noqa: E402
from surrogate_dagster.curation.quality.edu_labelled import split  # noqa: E402
from surrogate_dagster.curation.quality.heuristics import HeuristicFilter  # noqa: E402

SHARED = Path(os.environ.get("SURROGATE_SHARED_DIR", ROOT.parent / "shared"))


def _ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1   # average rank for ties
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else 0.0


def agreement(scores: list[float], labels: list[int], threshold: float = 3.0) -> dict:
    n = len(labels)
    pred = [s >= threshold for s in scores]
    gold = [lab >= threshold for lab in labels]
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    fn = sum(g and not p for p, g in zip(pred, gold))
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return {"exact": sum(round(s) == lab for s, lab in zip(scores, labels)) / n,
            "within_1": sum(abs(s - lab) <= 1 for s, lab in zip(scores, labels)) / n,
            "binary_acc@3": sum(p == g for p, g in zip(pred, gold)) / n,
            "binary_f1@3": f1, "spearman": spearman(scores, [float(x) for x in labels])}


def section_agreement() -> None:
    dev, held = split("dev"), split("heldout")
    majority = Counter(e["label"] for e in dev).most_common(1)[0][0]
    scorer = RubricScorer()
    scorers = {
        "rubric-features-v1": lambda e: scorer.score(e["code"], e["language"], e["context"]),
        f"baseline constant={majority}": lambda e: float(majority),
        "baseline lines/5": lambda e: min(5.0, len([ln for ln in e["code"].split("\n") if ln.strip()]) / 5),
    }
    labels = [e["label"] for e in held]
    print(f"== 1. Agreement with hand labels, held-out split: {len(held)} blocks "
          f"(dev split of {len(dev)} used for tuning) ==")
    print(f"{'scorer':28s} {'exact':>6s} {'±1':>6s} {'acc@3':>6s} {'F1@3':>6s} {'rho':>6s}")
    results = {}
    for name, fn in scorers.items():
        results[name] = agreement([fn(e) for e in held], labels)
        r = results[name]
        print(f"{name:28s} {r['exact']:6.2f} {r['within_1']:6.2f} {r['binary_acc@3']:6.2f} "
              f"{r['binary_f1@3']:6.2f} {r['spearman']:6.2f}")
    best_base = max(v["binary_acc@3"] for k, v in results.items() if k.startswith("baseline"))
    print(f"binary accuracy@3 vs best baseline: {results['rubric-features-v1']['binary_acc@3']:.2f} "
          f"vs {best_base:.2f} ({results['rubric-features-v1']['binary_acc@3'] / best_base:.2f}x)")
    per_label = Counter()
    for e in held:
        per_label[(e["label"], round(scorer.score(e["code"], e["language"], e["context"])))] += 1
    print("confusion (label -> rounded score: count):",
          ", ".join(f"{a}->{b}: {c}" for (a, b), c in sorted(per_label.items())))


def real_python_blocks() -> list[str]:
    bench = SHARED / "data" / "benchmarks"
    blocks = [json.loads(line)["code"] for line in open(bench / "mbpp_full_974.OpenCoder.jsonl")]
    with gzip.open(bench / "HumanEval.jsonl.gz", "rt") as fh:
        blocks += [(d := json.loads(line))["prompt"] + d["canonical_solution"] for line in fh]
    blocks += [json.loads(line)["prompt"] for line in
               open(bench / "leetcode_contests_20240121-Jul.OpenCoder.jsonl")]
    return blocks


def section_ast(blocks: list[str]) -> None:
    checker = AstChecker()
    checker.parses("x = 1", "python")  # load the grammar outside the timing
    reps = 3
    t0 = time.perf_counter()
    for _ in range(reps):
        ts_ok = [checker.parses(b, "python") for b in blocks]
    t_ts = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        py_ok = []
        for b in blocks:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in MBPP
                    ast.parse(b)
                py_ok.append(True)
            except SyntaxError:
                py_ok.append(False)
    t_py = (time.perf_counter() - t0) / reps
    agree = sum(a == b for a, b in zip(ts_ok, py_ok))
    mb = sum(len(b.encode()) for b in blocks) / 1e6
    print(f"\n== 2. AST check on {len(blocks)} real Python blocks ({mb:.2f} MB) ==")
    print(f"tree-sitter: {len(blocks) / t_ts:,.0f} blocks/s ({mb / t_ts:.1f} MB/s); "
          f"baseline ast.parse: {len(blocks) / t_py:,.0f} blocks/s; ratio {t_py / t_ts:.2f}x")
    print(f"valid per tree-sitter {sum(ts_ok)}, per ast.parse {sum(py_ok)}, agree on "
          f"{agree}/{len(blocks)} ({agree / len(blocks):.1%})")
    for b, a, p in zip(blocks, ts_ok, py_ok):
        if a != p:
            print(f"  disagreement (tree-sitter={a}, ast={p}): {b.strip().splitlines()[0][:70]!r}")
            break

    # Other languages: the hand-labelled snippets (multi-language, small).
    from surrogate_dagster.curation.quality.edu_labelled import EXAMPLES
    items = [(e["code"], e["language"]) for e in EXAMPLES] * 20
    t0 = time.perf_counter()
    for code, lang in items:
        checker.parses(code, lang)
    dt = time.perf_counter() - t0
    print(f"mixed languages ({len({lang for _, lang in items})} languages, {len(items)} blocks): "
          f"{len(items) / dt:,.0f} blocks/s")


def section_heuristics(blocks: list[str]) -> None:
    filt = HeuristicFilter()
    rows = [{"kind": "sft", "messages": [{"role": "user", "content": "q"},
                                         {"role": "assistant", "content": f"```python\n{b}\n```"}]}
            for b in blocks]
    t0 = time.perf_counter()
    flagged = Counter(v for r in rows for v in filt.violations(r))
    dt = time.perf_counter() - t0
    dropped = sum(1 for r in rows if filt.decide(r))
    print(f"\n== 3. Heuristic rules on the same {len(rows)} known-good solutions ==")
    print(f"{len(filt.rules)} rules, {len(rows) / dt:,.0f} rows/s; rows that would be dropped: "
          f"{dropped} ({dropped / len(rows):.1%}); per rule: {dict(flagged) or 'none'}")
    scorer = RubricScorer()
    t0 = time.perf_counter()
    scores = [scorer.score(b, "python") for b in blocks]
    dt = time.perf_counter() - t0
    hist = Counter(round(s) for s in scores)
    print(f"rubric scorer: {len(blocks) / dt:,.0f} blocks/s; score histogram {dict(sorted(hist.items()))}; "
          f"share >= 3: {sum(s >= 3 for s in scores) / len(scores):.1%} (benchmark solutions are "
          f"mostly uncommented, so a low share is expected)")


def main() -> None:
    t0 = time.perf_counter()
    section_agreement()
    blocks = real_python_blocks()
    section_ast(blocks)
    section_heuristics(blocks)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
