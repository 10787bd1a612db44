"""Decontamination: recall on planted benchmark items and false positives on clean code.

Index: every local benchmark (benchmark_refs.load_benchmarks). Planted rows: each item's text
(HumanEval: the prompt alone, which is what leaks into instruction data) in five styles:
exact, re-indented (4 spaces -> tab, 2 spaces), re-cased (upper), embedded between two clean
stdlib functions, and half (only the first half of its lines, embedded). Clean rows: functions
(6-80 lines) from the Python standard library, which no benchmark item should contain.

Compared in the same run against a named baseline, the plain 13-gram filter (what
datatrove's NGramsDecontFilter does): any single shared 13-gram flags, every n-gram counts, no
boilerplate pruning.

Run: .venv/bin/python benchmarks/decontam_bench.py [--per-benchmark 150] [--clean-files 600]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import random
import re
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from surrogate_dagster.curation.benchmark_refs import benchmarks_dir, load_benchmarks  # noqa: E402
from surrogate_dagster.curation.decontam import BenchmarkIndex, Decontaminator, tokenize  # noqa: E402


def clean_functions(n_files: int, seed: int = 0) -> list[tuple[str, str]]:
    """(name, source) of standard-library functions of 6 to 80 lines, dedented."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))
    random.Random(seed).shuffle(files)
    out = []
    for f in files[:n_files]:
        try:
            src = f.read_text(encoding="utf-8")
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # test fixtures with deliberately bad syntax or encodings
        lines = src.splitlines(keepends=True)  # ast.get_source_segment re-splits per call: quadratic
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and 6 <= node.end_lineno - node.lineno + 1 <= 80:
                out.append((f"{f.name}:{node.name}", textwrap.dedent("".join(lines[node.lineno - 1:node.end_lineno]))))
    return out


def _reindent(text: str) -> str:
    lines = []
    for ln in text.split("\n"):
        indent = len(ln) - len(ln.lstrip(" "))
        lines.append("\t" * (indent // 4) + "  " * (indent % 4 // 2) + ln.lstrip(" "))
    return "\n".join(lines)


def plantings(clean: list[tuple[str, str]], rng: random.Random) -> dict:
    def embed(t: str) -> str:
        (_, before), (_, after) = rng.sample(clean, 2)
        return f"{before}\n\n# adapted from a forum answer\n{t}\n\n{after}"

    return {
        "exact": lambda t: t,
        "reindented": _reindent,
        "recased": str.upper,
        "embedded": embed,
        "half, embedded": lambda t: embed("\n".join(t.split("\n")[: max(1, len(t.split("\n")) // 2)])),
    }


def main(per_benchmark: int, clean_files: int) -> None:
    rng = random.Random(0)
    t0 = time.perf_counter()
    items, manifest = load_benchmarks()
    t1 = time.perf_counter()
    index = BenchmarkIndex.build(items, n=13, sources=manifest)
    t2 = time.perf_counter()
    baseline_index = BenchmarkIndex.build(items, n=13, max_item_df=10**9, min_alpha_fraction=0.0,
                                          min_item_tokens=10**9, sources=manifest)
    ours, base = Decontaminator(index), Decontaminator(baseline_index, min_matches=1)
    size = len(index.to_bytes())
    counts = ", ".join(f"{k}={v['items']}" for k, v in manifest.items())
    print(f"benchmarks: {counts}")
    print(f"index: {index.meta['indexed_ngrams']:,} 13-grams ({index.meta['informative_ngrams']:,} informative), "
          f"{index.meta['pruned_common_ngrams']} pruned as boilerplate, unmatchable items: {index.meta['unmatchable']}, "
          f"whole-item lengths {index.short_lengths}; load {t1 - t0:.1f}s, build {t2 - t1:.1f}s, {size / 1e6:.1f} MB")

    # planted rows: HumanEval as its prompt, the others as their indexed text
    with gzip.open(benchmarks_dir() / "HumanEval.jsonl.gz", "rt") as fh:
        he_prompts = {r["task_id"]: r["prompt"] for r in map(json.loads, fh)}
    by_bench: dict[str, dict[str, str]] = {}
    for it in items:
        text = he_prompts[it.item_id] if it.benchmark == "humaneval" else it.text
        by_bench.setdefault(it.benchmark, {}).setdefault(it.item_id, text)
    clean = clean_functions(clean_files)
    styles = plantings(clean, rng)

    print(f"\nrecall on planted items (up to {per_benchmark} per benchmark; items under 10 tokens left out)")
    print(f"  {'benchmark':14} {'n':>4} " + " ".join(f"{s:>15}" for s in styles) + "   | baseline exact")
    totals = {s: [0, 0] for s in styles}
    wrong_item = 0
    half_rows: list[str] = []
    t3 = time.perf_counter()
    checks = 0
    for bench, texts in by_bench.items():
        chosen = [(i, t) for i, t in texts.items() if len(tokenize(t)) >= 10]
        chosen = rng.sample(chosen, min(per_benchmark, len(chosen)))
        cells, base_hits = [], 0
        for style, plant in styles.items():
            hits = 0
            for item_id, text in chosen:
                row = plant(text)
                m = ours.check(row)
                checks += 1
                if style == "half, embedded":
                    half_rows.append(row)
                if m is not None:
                    hits += 1
                    # another item with the same text (BFCL categories share questions) is right too
                    right = (m.benchmark, m.item_id) == (bench, item_id) \
                        or by_bench[m.benchmark].get(m.item_id) == text
                    if style == "exact" and not right:
                        wrong_item += 1
                        print(f"    (planted {bench} {item_id}, matched {m.benchmark} {m.item_id})")
                if style == "exact":
                    base_hits += base.check(text) is not None
            totals[style][0] += hits
            totals[style][1] += len(chosen)
            cells.append(f"{hits / len(chosen):15.3f}")
        print(f"  {bench:14} {len(chosen):4} " + " ".join(cells) + f"   | {base_hits / len(chosen):.3f}")
    t4 = time.perf_counter()
    print(f"  {'all':14} {totals['exact'][1]:4} "
          + " ".join(f"{h / n:15.3f}" for h, n in totals.values()))
    print(f"  exact plants attributed to another item (different text): {wrong_item}")

    t5 = time.perf_counter()
    fp_ours = [(name, m) for name, src in clean if (m := ours.check(src))]
    t6 = time.perf_counter()
    fp_base = [(name, m) for name, src in clean if (m := base.check(src))]
    n_tok = sum(len(tokenize(s)) for _, s in clean)
    print(f"\nfalse positives on {len(clean)} clean stdlib functions ({n_tok:,} tokens):")
    print(f"  ours (n=13, min_matches=4, informative, df<=10): {len(fp_ours)} = {len(fp_ours) / len(clean):.4%}")
    print(f"  baseline plain 13-gram any-match:               {len(fp_base)} = {len(fp_base) / len(clean):.4%}"
          f"  (ratio baseline/ours {len(fp_base) / max(1, len(fp_ours)):.1f}x)")
    for name, m in fp_ours:
        print(f"    ours FP  {name}: {m.benchmark} {m.item_id} longest={m.longest_match_tokens} "
              f"ngrams={m.matched_ngrams} '{m.snippet[:90]}'")
    print("\nminimum-match sweep (same index): false positives vs recall on 'half, embedded' plants")
    # a row flagged with min_matches=k is flagged with k=1 too: re-check only those
    one = Decontaminator(index, min_matches=1)
    clean_1 = [src for _, src in clean if one.check(src)]
    half_1 = [r for r in half_rows if one.check(r)]
    for k in (1, 2, 3, 4, 5, 8):
        d = Decontaminator(index, min_matches=k)
        fp = sum(d.check(src) is not None for src in clean_1)
        rec = sum(d.check(r) is not None for r in half_1) / len(half_rows)
        print(f"  min_matches={k}: FP {fp:4d} = {fp / len(clean):.4%}   half-plant recall {rec:.3f}")
    print(f"\nthroughput: planted {checks / (t4 - t3):,.0f} checks/s; clean {n_tok / (t6 - t5):,.0f} tokens/s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-benchmark", type=int, default=150)
    ap.add_argument("--clean-files", type=int, default=600)
    args = ap.parse_args()
    main(args.per_benchmark, args.clean_files)
