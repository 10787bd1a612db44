"""The whole curation chain on N synthetic code documents: docs/s and MB/s per stage and total.

    .venv/bin/python benchmarks/curation_chain.py [--docs 100000] [--sources 22]

Documents are chat rows (user question + assistant answer with a fenced code block) generated
from varied templates, with 3% planted near-duplicates, 1% planted secrets and 0.2% planted
HumanEval prompts. Stages are the same blocks the assets chain (sanitize, AST, heuristics, edu
scorer, MinHash signatures, cross-source clustering, decontamination). Baseline for the
incremental figure: the full run measured in the same process; one changed source of `--sources`
re-runs its per-source stages plus the cross-source steps.
Targets (issue 3): whole chain >= 2 MB/s on 2 cores; one-source re-curation <= 15% of a full run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from surrogate_dagster.curation.ast_validity import AstChecker  # noqa: E402
from surrogate_dagster.curation.benchmark_refs import load_benchmarks  # noqa: E402
from surrogate_dagster.curation.decontam import BenchmarkIndex, Decontaminator  # noqa: E402
from surrogate_dagster.curation.exact_dedup import ExactDeduper  # noqa: E402
from surrogate_dagster.curation.minhash import compute_signatures, find_near_duplicates  # noqa: E402
from surrogate_dagster.curation.quality.edu_classifier import EduFilter, build_edu_scorer  # noqa: E402
from surrogate_dagster.curation.quality.heuristics import HeuristicFilter  # noqa: E402
from surrogate_dagster.curation.sanitize import Sanitizer, SanitizerConfig  # noqa: E402
from surrogate_dagster.curation.text import map_row_text, row_text  # noqa: E402

VERBS = ["compute", "parse", "merge", "filter", "count", "normalize", "validate", "group", "rank", "cache"]
NOUNS = ["orders", "log lines", "user records", "invoices", "events", "tokens", "intervals", "paths"]


SYL = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "be", "do", "fi", "gu", "ha"]
OPS = ["+", "-", "*", "//", "%", "max", "min", "abs"]


def word(rng: random.Random) -> str:
    # Numbers normalize to 0 in MinHash shingles, so diversity must come from identifiers.
    return "".join(rng.choices(SYL, k=rng.randint(2, 4)))


def make_doc(i: int, rng: random.Random) -> dict:
    verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
    fn = f"{verb}_{word(rng)}_{word(rng)}"
    body_lines = []
    for j in range(rng.randint(4, 14)):
        var, it, op = word(rng), word(rng), rng.choice(OPS)
        expr = f"{op}({it}, {word(rng)})" if op.isalpha() else f"{it} {op} {word(rng)}"
        body_lines.append(f"    {var} = [{expr} for {it} in {word(rng)} if {it}]")
        body_lines.append(f"    total += len({var})  # {word(rng)} the {noun} {word(rng)}")
    code = f"def {fn}(items):\n    \"\"\"{verb.title()} {noun}.\"\"\"\n    total = 0\n" + "\n".join(body_lines) + "\n    return total\n"
    answer = f"Here is how to {verb} {noun} in Python.\n\n```python\n{code}```\n\nIt runs in O(n) per step."
    if rng.random() < 0.01:
        answer += f"\nConfigure with token ghp_{''.join(rng.choices('ABCDEFGHabcdefgh0123456789', k=36))}."
    return {"id": f"d{i}", "source": "", "kind": "sft", "prompt": [], "chosen": "", "rejected": "",
            "tools": "", "meta": "{}",
            "messages": [{"role": "user", "content": f"Write a function to {verb} {noun} ({i})."},
                         {"role": "assistant", "content": answer}]}


def corpus(n: int, n_sources: int, humaneval_prompts: list[str]) -> dict[str, list[dict]]:
    rng = random.Random(0)
    docs = [make_doc(i, rng) for i in range(n)]
    for i in rng.sample(range(n), n * 3 // 100):  # near duplicates: one edited line
        src = docs[rng.randrange(n)]
        dup = {**src, "id": f"nd{i}", "messages": [dict(m) for m in src["messages"]]}
        dup["messages"][1]["content"] = src["messages"][1]["content"].replace("O(n)", "linear time")
        docs[i] = dup
    for i in rng.sample(range(n), max(1, n // 500)):  # contamination
        docs[i]["messages"][0]["content"] += "\n" + rng.choice(humaneval_prompts)
    by_source: dict[str, list[dict]] = {f"s{k:02d}": [] for k in range(n_sources)}
    for i, d in enumerate(docs):
        s = f"s{i % n_sources:02d}"
        by_source[s].append({**d, "source": s})
    return by_source


def run(by_source: dict[str, list[dict]], only: set[str] | None, tmp: Path, index: BenchmarkIndex) -> dict:
    """Run the chain; per-source stages only for `only` (None = all). Returns seconds per stage."""
    t: dict[str, float] = {}
    sanitizer = Sanitizer(SanitizerConfig(ner_model=None))
    ast, heur = AstChecker(), HeuristicFilter()
    edu = EduFilter(build_edu_scorer("rubric"), threshold=2)
    filtered: dict[str, list[dict]] = {}
    for s, rows in by_source.items():
        if only is not None and s not in only:
            filtered[s] = rows  # unchanged source: its earlier outputs are reused
            continue
        t0 = time.perf_counter()
        rows = [map_row_text(r, lambda x: sanitizer.sanitize(x).text) for r in rows]
        t["sanitize"] = t.get("sanitize", 0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = [r for r in rows if not ast.check_row(r)]
        t["ast"] = t.get("ast", 0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = [r for r in rows if not heur.check_row(r)]
        t["heuristics"] = t.get("heuristics", 0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = [r for r, reason in zip(rows, edu.check_rows(rows)) if not reason]
        t["edu_scorer"] = t.get("edu_scorer", 0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        compute_signatures(((r["id"], row_text(r)) for r in rows), tmp / "sig" / s)
        t["minhash_signatures"] = t.get("minhash_signatures", 0) + time.perf_counter() - t0
        filtered[s] = rows
    texts = {(s, r["id"]): row_text(r) for s, rows in filtered.items() for r in rows}
    t0 = time.perf_counter()
    ExactDeduper(sorted(by_source)).find_duplicates((s, i, x) for (s, i), x in texts.items())
    t["exact_dedup"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    near = find_near_duplicates({s: tmp / "sig" / s for s in filtered}, texts, priority=sorted(by_source))
    t["near_dedup_cluster"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dec = Decontaminator(index)
    # curated_rows caches decontamination per (source version, index version): only changed
    # sources are scanned again.
    contaminated = sum(1 for (s, _), x in texts.items() if (only is None or s in only) and dec.check(x))
    t["decontaminate"] = time.perf_counter() - t0
    t["_near_dropped"] = len(near.dropped)
    t["_contaminated"] = contaminated
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--sources", type=int, default=22)
    args = ap.parse_args()
    items, _ = load_benchmarks(names=["humaneval", "mbpp", "bfcl", "swebench_lite"])
    index = BenchmarkIndex.build(items, n=13)
    he = [i.text for i in items if i.benchmark == "humaneval"][:50]
    by_source = corpus(args.docs, args.sources, he)
    mb = sum(len(row_text(r).encode()) for rows in by_source.values() for r in rows) / 1e6
    print(f"corpus: {args.docs} docs, {mb:.1f} MB, {args.sources} sources")
    with tempfile.TemporaryDirectory() as d:
        full = run(by_source, None, Path(d), index)
        one = run(by_source, {"s00"}, Path(d), index)
    stages = [k for k in full if not k.startswith("_")]
    total = sum(full[k] for k in stages)
    print(f"\n{'stage':<20}{'seconds':>9}{'docs/s':>11}{'MB/s':>8}")
    for k in stages:
        print(f"{k:<20}{full[k]:>9.2f}{args.docs / full[k]:>11.0f}{mb / full[k]:>8.2f}")
    print(f"{'TOTAL':<20}{total:>9.2f}{args.docs / total:>11.0f}{mb / total:>8.2f}   (target >= 2 MB/s)")
    print(f"planted: near-duplicates dropped {full['_near_dropped']}, contaminated found {full['_contaminated']}")
    one_total = sum(one[k] for k in one if not k.startswith("_"))
    print(f"\nre-curating 1 of {args.sources} sources: {one_total:.2f}s = {100 * one_total / total:.1f}% "
          f"of the full run (baseline: the full run above; target <= 15%)")


if __name__ == "__main__":
    main()
