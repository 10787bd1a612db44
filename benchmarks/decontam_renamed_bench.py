"""Decontamination on renamed and re-displayed items: the exact index alone vs with the canonical index.

Planted set, by class, from the code benchmarks the project reads (HumanEval, MBPP, MBPP+):
- ``rename``: identifiers renamed in code and tests (MBPP/MBPP+: reference code + asserts, no
  statement; HumanEval: prompt + solution, the docstring's text left as it was);
- ``no docstring``: HumanEval, renamed signature + solution, docstring removed;
- ``renamed docstring``: HumanEval, renamed everywhere, inside the docstring too;
- ``cat -n``, ``notebook JSON``, ``highlighted HTML``: the original code + tests shown as a
  line-numbered listing, an ``.ipynb`` (code and tests in two cells) and Pygments HTML;
- ``reformatted``: ``ast.unparse`` (quotes, spacing, parentheses, blank lines) re-indented to 2;
- ``combined``: renamed, reformatted, then one of the three views, inside a chat row's JSON.
The shapes come from code the detector does not use: the renamer works on Python's own
tokenizer and ``ast``, docstrings are cut by ``ast`` positions (:func:`drop_docstrings`, not the
index's own removal), views by ``json`` and Pygments; new names are drawn from a word list with
a seeded generator.

Clean set: Python functions (4-80 lines) from the code in the fixture mirror's rows
(fixtures/hub: competition solutions, chat answers; no benchmark), the standard library and
pandas, and the 2-3 line functions of the same stdlib and pandas files (the shape of the
shortest solutions, which the whole-function fingerprints match); each once as is and once
through a seeded choice of the same shapes (renamed, cat -n, notebook, HTML, reformatted).

Items and each clean set are split in halves by a seeded shuffle. The canonical rule's
parameters are chosen on the tuning half: among the settings that add no false positive to the
exact index's, the best worst class, then the largest recall over all classes (a tie goes to
the stricter setting); the held-out half is reported beside it. Throughput: ``check_many`` over
the clean and planted rows, exact index alone (before, the pre-canonical baseline) and with the
canonical index (after), interleaved rounds in the same run, medians and their ratio.

Run: .venv/bin/python benchmarks/decontam_renamed_bench.py [--clean-files 400] [--mbpp 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import itertools
import json
import keyword
import random
import re
import statistics
import sys
import sysconfig
import textwrap
import time
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pygments import highlight  # noqa: E402
from pygments.formatters import HtmlFormatter  # noqa: E402
from pygments.lexers import PythonLexer  # noqa: E402

from surrogate_dagster.curation.benchmark_refs import benchmarks_dir, load_benchmarks, load_code_parts  # noqa: E402
from surrogate_dagster.curation.code_blocks import extract_code_blocks  # noqa: E402
from surrogate_dagster.curation.decontam import BenchmarkIndex, Decontaminator  # noqa: E402
from surrogate_dagster.curation.decontam_canonical import CanonicalIndex, CanonicalParams  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("alpha beta gamma delta item entry value data result total acc buf node elem seq arr "
         "lst num cnt idx pos key val tmp res out src dst first second left right lo hi mid "
         "prev cur nxt part piece chunk block cell slot field record row col").split()
_BUILTINS = set(dir(__builtins__)) if isinstance(__builtins__, dict) is False else set(__builtins__)


# ----------------------------------------------------------------------------- shapes
def defined_names(src: str) -> list[str]:
    """Names the code defines (functions, classes, arguments, assigned names), in order."""
    tree = ast.parse(src)
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
    return [n for n in dict.fromkeys(names) if n not in _BUILTINS and not keyword.iskeyword(n)
            and not n.startswith("__")]


def rename_map(names: list[str], rng: random.Random, taken: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for n in names:
        for _ in range(100):
            new = rng.choice(WORDS) + (f"_{rng.choice(WORDS)}" if rng.random() < 0.5 else str(rng.randint(1, 9)))
            if new not in taken and new not in out.values():
                break
        out[n] = new
    return out


def rename_code(src: str, mapping: dict[str, str]) -> str:
    """NAME tokens renamed through Python's tokenizer (strings and comments untouched)."""
    toks = []
    for t in tokenize.generate_tokens(io.StringIO(src).readline):
        if t.type == tokenize.NAME and t.string in mapping:
            t = t._replace(string=mapping[t.string])
        toks.append(t)
    return tokenize.untokenize(toks)


def rename_everywhere(src: str, mapping: dict[str, str]) -> str:
    """Every whole-word occurrence renamed, inside strings and docstrings too."""
    if not mapping:
        return src
    pat = re.compile(r"\b(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")\b")
    return pat.sub(lambda m: mapping[m.group(1)], src)


def drop_docstrings(src: str) -> str:
    """Docstrings cut out by their exact spans (``ast`` positions); a line the cut leaves blank
    goes. Written here, apart from the index's own docstring removal, so the planted shape does
    not come from the code under test."""
    spans = []
    for node in ast.walk(ast.parse(src)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                spans.append((first.lineno, first.col_offset, first.end_lineno, first.end_col_offset))
    lines = [ln.encode() for ln in src.splitlines(keepends=True)]  # ast offsets count UTF-8 bytes
    for l0, c0, l1, c1 in sorted(spans, reverse=True):
        merged = lines[l0 - 1][:c0] + lines[l1 - 1][c1:]
        lines[l0 - 1:l1] = [merged] if merged.strip() else []
    return b"".join(lines).decode()


def cat_n(src: str) -> str:
    return "\n".join(f"{i:6}\t{ln}" for i, ln in enumerate(src.split("\n"), 1))


def notebook(cells: list[str]) -> str:
    nb = {"cells": [{"cell_type": "code", "execution_count": i + 1, "metadata": {}, "outputs": [],
                     "source": [ln + "\n" for ln in c.rstrip("\n").split("\n")]} for i, c in enumerate(cells)],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1)


def html_view(src: str) -> str:
    return highlight(src, PythonLexer(), HtmlFormatter())


def reformat(src: str) -> str:
    out = ast.unparse(ast.parse(src))
    return "\n".join(" " * ((len(ln) - len(ln.lstrip(" "))) // 2) + ln.lstrip(" ") for ln in out.split("\n"))


def chat_row(text: str) -> str:
    return json.dumps({"messages": [{"role": "user", "content": "Can you review this?"},
                                    {"role": "assistant", "content": f"Sure, here it is:\n\n{text}\n\nLooks fine."}]})


def view(src: str, cells: list[str], rng: random.Random) -> str:
    kind = rng.choice(("cat -n", "notebook", "html"))
    return cat_n(src) if kind == "cat -n" else notebook(cells) if kind == "notebook" else html_view(src)


# ----------------------------------------------------------------------------- data
def load_code_items(mbpp_n: int) -> list[dict]:
    """HumanEval, MBPP (sanitized) and MBPP+ items as code, tests and docstring-free code."""
    root = benchmarks_dir()
    out = []
    with gzip.open(root / "HumanEval.jsonl.gz", "rt") as fh:
        for r in map(json.loads, fh):
            code = r["prompt"] + r["canonical_solution"]
            out.append({"bench": "humaneval", "id": r["task_id"], "code": code, "tests": r["test"]})
    mbpp = json.loads((root / "sanitized-mbpp.json").read_text())
    for r in random.Random("mbpp").sample(mbpp, min(mbpp_n, len(mbpp))):
        out.append({"bench": "mbpp", "id": f"mbpp/{r['task_id']}", "code": r["code"],
                    "tests": "\n".join(r["test_list"])})
    plus = json.loads((root / "MbppPlus.PropertyEval.json").read_text())
    for r in random.Random("mbppplus").sample(plus, min(mbpp_n, len(plus))):
        out.append({"bench": "mbppplus", "id": r["task_id"], "code": r["canonical_solution"],
                    "tests": r.get("assertion") or ""})
    return out


def plant(item: dict, cls: str, rng: random.Random) -> str | None:
    code, tests = item["code"].strip("\n") + "\n", item["tests"].strip("\n") + "\n"
    try:
        names = defined_names(code)
    except SyntaxError:
        return None
    taken = set(re.findall(r"\w+", code + tests))
    mapping = rename_map(names, rng, taken)
    he = item["bench"] == "humaneval"
    both = code + "\n\n" + tests
    if cls == "rename":
        return rename_code(code, mapping) if he else rename_code(both, mapping)
    if cls == "no docstring":
        return rename_code(drop_docstrings(code), mapping) if he else None
    if cls == "renamed docstring":
        return rename_everywhere(code, mapping) if he else None
    src = code if he else both
    if cls == "cat -n":
        return cat_n(src)
    if cls == "notebook JSON":
        return notebook([code] if he else [code, tests])
    if cls == "highlighted HTML":
        return html_view(src)
    if cls == "reformatted":
        return reformat(src)
    if cls == "combined":
        renamed = reformat(rename_code(src, mapping))
        cells = [renamed] if he else [reformat(rename_code(code, mapping)), reformat(rename_code(tests, mapping))]
        return chat_row(view(renamed, cells, rng))
    raise KeyError(cls)


CLASSES = ("rename", "no docstring", "renamed docstring", "cat -n", "notebook JSON", "highlighted HTML",
           "reformatted", "combined")
TARGET = ("rename", "no docstring", "renamed docstring", "reformatted", "combined")  # the >= 0.95 classes


def _functions(src: str, lines_range: tuple[int, int] = (4, 80)) -> list[str]:
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return []
    lines = src.splitlines(keepends=True)
    lo, hi = lines_range
    return [textwrap.dedent("".join(lines[n.lineno - 1:n.end_lineno])) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and lo <= n.end_lineno - n.lineno + 1 <= hi]


def _fn_name(src: str) -> str:
    m = re.search(r"def\s+(\w+)", src)
    return m.group(1) if m else ""


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def fixture_functions() -> list[tuple[str, str]]:
    """Python functions in the fixture mirror's rows: fenced blocks and whole-string programs."""
    out = []
    for f in sorted((ROOT / "fixtures" / "hub").rglob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            for s in _strings(row):
                if "def " not in s:
                    continue
                blocks = [b.code for b in extract_code_blocks(s) if b.language == "python"] or [s]
                for b in blocks:
                    out += [(f"fixtures/{f.parent.parent.name}", fn) for fn in _functions(b)]
    return list({fn: (src, fn) for src, fn in out}.values())


def library_functions(root: Path, n_files: int, label: str,
                      lines_range: tuple[int, int] = (4, 80)) -> list[tuple[str, str]]:
    files = sorted(root.rglob("*.py"))
    random.Random(0).shuffle(files)
    out = []
    for f in files[:n_files]:
        try:
            out += [(label, fn) for fn in _functions(f.read_text(encoding="utf-8"), lines_range)]
        except (UnicodeDecodeError, OSError):
            continue
    return out


def clean_shape(fn: str, rng: random.Random) -> str:
    kind = rng.choice(("rename", "cat -n", "notebook JSON", "highlighted HTML", "reformatted"))
    try:
        if kind == "rename":
            return rename_code(fn, rename_map(defined_names(fn), rng, set(re.findall(r"\w+", fn))))
        if kind == "reformatted":
            return reformat(fn)
    except (SyntaxError, tokenize.TokenError, IndentationError):
        return fn
    return cat_n(fn) if kind == "cat -n" else notebook([fn]) if kind == "notebook JSON" else html_view(fn)


# ----------------------------------------------------------------------------- run
def halves(xs: list, seed: str) -> tuple[list, list]:
    xs = list(xs)
    random.Random(seed).shuffle(xs)
    return xs[: len(xs) // 2], xs[len(xs) // 2:]


def main(clean_files: int, mbpp_n: int, rounds: int) -> None:
    rng = random.Random(0)
    items = load_code_items(mbpp_n)
    planted: list[tuple[str, dict, str]] = []
    for it in items:
        for cls in CLASSES:
            try:
                row = plant(it, cls, rng)
            except (SyntaxError, tokenize.TokenError, IndentationError):
                row = None
            if row is not None:
                planted.append((cls, it, row))
    tune_ids, held_ids = (set(h) for h in halves(sorted({(i["bench"], i["id"]) for i in items}), "split:items"))
    # the fixture mirror holds some benchmark solutions itself (HumanEval's has_close_elements
    # in a chat answer): a function named like a benchmark's entry point is not clean code
    entry_points = set()
    for part in load_code_parts():
        try:
            entry_points.update(n.name for n in ast.walk(ast.parse(part.text))
                                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        except SyntaxError:
            pass
    fx_all = fixture_functions()
    fx = [(label, fn) for label, fn in fx_all if _fn_name(fn) not in entry_points]
    print(f"fixture functions named like a benchmark entry point, left out of the clean set: {len(fx_all) - len(fx)}")
    import pandas
    roots = {"stdlib": Path(sysconfig.get_paths()["stdlib"]), "pandas": Path(pandas.__file__).parent}
    stdlib, pd_fns = (library_functions(roots[name], clean_files, name) for name in ("stdlib", "pandas"))
    # one- and two-line functions: the shape of the shortest solutions, which whole-function
    # fingerprints match
    short = [(f"{name} short", fn) for name in roots
             for _, fn in library_functions(roots[name], clean_files, name, lines_range=(2, 3))]
    crng = random.Random(1)
    clean: list[tuple[str, str]] = []
    clean_split: list[str] = []
    is_short: list[bool] = []
    for src, seed in ((fx + stdlib + pd_fns, "split:clean"), (short, "split:clean short")):  # halves of each
        tune_i, held_i = halves(range(len(src)), seed)
        half = {i: "tune" for i in tune_i} | {i: "held-out" for i in held_i}
        clean += src + [(label + " (shaped)", clean_shape(fn, crng)) for label, fn in src]
        clean_split += [half[i % len(src)] for i in range(2 * len(src))]
        is_short += [src is short] * (2 * len(src))
    print(f"planted rows: {len(planted)} ({len(items)} items: "
          + ", ".join(f"{b}={sum(i['bench'] == b for i in items)}" for b in ("humaneval", "mbpp", "mbppplus"))
          + f"); clean: {len(clean)} ({len(fx)} fixture, {len(stdlib)} stdlib, {len(pd_fns)} pandas functions of"
          f" 4-80 lines, {len(short)} stdlib/pandas functions of 2-3 lines; each plain and shaped)")

    bench_items, manifest = load_benchmarks()
    t0 = time.perf_counter()
    exact = BenchmarkIndex.build(bench_items, n=13, sources=manifest)
    parts = load_code_parts()
    t1 = time.perf_counter()
    print(f"exact index build {t1 - t0:.1f}s; canonical parts {len(parts)}")
    dec_exact = Decontaminator(exact)
    planted_rows = [r for _, _, r in planted]
    clean_rows = [s for _, s in clean]
    exact_hit = [m is not None for m in dec_exact.check_many(planted_rows)]
    exact_fp = [m is not None for m in dec_exact.check_many(clean_rows)]
    planted_half = ["tune" if (it["bench"], it["id"]) in tune_ids else "held-out" for _, it, _ in planted]

    def evaluate(canon: CanonicalIndex, ev_planted, ev_clean) -> tuple[dict, dict, list, list]:
        """Recall by (class, half), FP by half (clean rows, the exact index's matches included),
        and the canonical matches of each planted and clean row, under ``canon.params``."""
        hit = [e or m is not None for e, m in zip(exact_hit, canon.decide(ev_planted))]
        cm = canon.decide(ev_clean)
        fp_hit = [e or m is not None for e, m in zip(exact_fp, cm)]
        rec: dict[tuple[str, str], list[int]] = {}
        for (cls, _, _), h, half in zip(planted, hit, planted_half):
            acc = rec.setdefault((cls, half), [0, 0])
            acc[0] += h
            acc[1] += 1
        fp: dict[str, list[int]] = {}
        for f, half in zip(fp_hit, clean_split):
            acc = fp.setdefault(half, [0, 0])
            acc[0] += f
            acc[1] += 1
        return rec, fp, hit, cm

    def recall(rec: dict, half: str, classes=CLASSES) -> float:
        hits = sum(rec[(c, half)][0] for c in classes if (c, half) in rec)
        return hits / max(1, sum(rec[(c, half)][1] for c in classes if (c, half) in rec))

    def worst(rec: dict, half: str) -> float:
        return min(rec[(c, h)][0] / rec[(c, h)][1] for c, h in rec if h == half)

    print("\nsweep on the tuning half (worst class, all classes, renamed/reformatted classes; FP on clean):")
    best = None
    # the choice: no false positive added to the exact index's own on the tuning half's clean
    # functions, then the best worst class, then the largest recall (a tie goes to the stricter
    # setting, visited later)
    exact_fp_tune = sum(f for f, h in zip(exact_fp, clean_split) if h == "tune")
    for k in (10, 12, 14):
        canon = CanonicalIndex.build(parts, CanonicalParams(k=k))
        ev_p, ev_c = canon.evidence(planted_rows), canon.evidence(clean_rows)
        for m, frac, words in itertools.product((6, 8, 10, 12), (0.4, 0.5, 0.6), (1, 2, 3, 4)):
            canon.params = CanonicalParams(k=k, min_shingles=m, min_fraction=frac, min_fingerprint_words=words)
            rec, fp, _, _ = evaluate(canon, ev_p, ev_c)
            score = (worst(rec, "tune"), recall(rec, "tune"))
            print(f"  k={k:2} min_shingles={m:2} min_fraction={frac:.2f} min_fingerprint_words={words}: worst "
                  f"{score[0]:.3f}  all {score[1]:.3f}  renamed {recall(rec, 'tune', TARGET):.3f}  FP {fp['tune'][0]}"
                  f" / {fp['tune'][1]}")
            if fp["tune"][0] == exact_fp_tune and (best is None or score >= best[0]):
                best = (score, canon.params)
    if best is None:
        raise SystemExit("every setting adds false positives on the tuning half")
    params = best[1]
    print(f"chosen on the tuning half: {params}")
    t2 = time.perf_counter()
    canon = CanonicalIndex.build(parts, params)
    t3 = time.perf_counter()
    print(f"canonical index: {canon.meta['indexed_shingles']:,} shingles ({canon.meta['pruned_common_shingles']} "
          f"pruned), {canon.meta['indexed_fingerprints']:,} function fingerprints "
          f"({canon.meta['pruned_common_fingerprints']} pruned; {canon.meta['fingerprinted_parts']} parts matchable"
          f" by them), unmatchable parts {canon.meta['unmatchable_parts']}; build {t3 - t2:.1f}s")
    rec, fp, hit, clean_match = evaluate(canon, canon.evidence(planted_rows), canon.evidence(clean_rows))
    rec_before: dict[tuple[str, str], list[int]] = {}
    for (cls, _, _), e, half in zip(planted, exact_hit, planted_half):
        acc = rec_before.setdefault((cls, half), [0, 0])
        acc[0] += e
        acc[1] += 1
    print("\nrecall by class: exact index alone (before) vs with the canonical index (after)")
    print(f"  {'class':20} {'n':>5} {'before tune':>12} {'before held':>12} {'after tune':>11} {'after held':>11}")
    for cls in CLASSES:
        if (cls, "tune") not in rec:
            continue
        n = rec[(cls, "tune")][1] + rec[(cls, "held-out")][1]
        cells = [rec_before[(cls, h)][0] / rec_before[(cls, h)][1] for h in ("tune", "held-out")]
        cells += [rec[(cls, h)][0] / rec[(cls, h)][1] for h in ("tune", "held-out")]
        print(f"  {cls:20} {n:5} {cells[0]:12.3f} {cells[1]:12.3f} {cells[2]:11.3f} {cells[3]:11.3f}")
    for name, classes in (("renamed+reformatted", TARGET), ("all classes", CLASSES)):
        print(f"  {name:20} {'':5} {recall(rec_before, 'tune', classes):12.3f} "
              f"{recall(rec_before, 'held-out', classes):12.3f} {recall(rec, 'tune', classes):11.3f} "
              f"{recall(rec, 'held-out', classes):11.3f}")
    by_bench: dict[tuple[str, str], list[int]] = {}
    for (cls, it, _), h, half in zip(planted, hit, planted_half):
        acc = by_bench.setdefault((it["bench"], half), [0, 0])
        acc[0] += h
        acc[1] += 1
    print("  by benchmark (all classes, after): " + ", ".join(
        f"{b} {by_bench[(b, 'tune')][0] / by_bench[(b, 'tune')][1]:.3f}/{by_bench[(b, 'held-out')][0] / by_bench[(b, 'held-out')][1]:.3f}"
        for b in ("humaneval", "mbpp", "mbppplus")))
    for (cls, it, row), h in zip(planted, hit):
        if not h and cls in ("no docstring", "combined"):
            print(f"    missed [{cls}] {it['id']}: {row[:90]!r}")
    print("\nfalse positives on clean functions (plain and shaped; before: exact index, after: + canonical):")
    for h in ("tune", "held-out"):
        for sub, want in (("4-80 lines", False), ("2-3 lines", True)):
            sel = [i for i in range(len(clean)) if clean_split[i] == h and is_short[i] == want]
            before = sum(exact_fp[i] for i in sel)
            after = sum(exact_fp[i] or clean_match[i] is not None for i in sel)
            print(f"  {h:9} {sub:10}: before {before} / {len(sel)} = {before / len(sel):.4%}; "
                  f"after {after} / {len(sel)} = {after / len(sel):.4%}")
    for (label, src), m, e in zip(clean, clean_match, exact_fp):
        if m is not None and not e:
            print(f"    canonical FP [{label}] {m.benchmark} {m.item_id}: {m.snippet}  {src[:80]!r}")

    corpus = clean_rows + planted_rows
    mb = sum(map(len, corpus)) / 1e6
    after = Decontaminator(exact, canonical=canon)
    dec_exact.check_many(corpus[:50])
    after.check_many(corpus[:50])
    times: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(rounds):  # interleaved: the box is shared, so both see the same load
        for name, dec in (("before", dec_exact), ("after", after)):
            t = time.perf_counter()
            dec.check_many(corpus)
            times[name].append(time.perf_counter() - t)
    before_s, after_s = (statistics.median(times[n]) for n in ("before", "after"))
    print(f"\nthroughput, check_many over {len(corpus)} rows ({mb:.1f} MB), one worker, median of {rounds} "
          f"interleaved rounds:")
    print(f"  before (exact index):  {len(corpus) / before_s:8,.0f} rows/s  {mb / before_s:6.2f} MB/s")
    print(f"  after (+ canonical):   {len(corpus) / after_s:8,.0f} rows/s  {mb / after_s:6.2f} MB/s"
          f"  ratio after/before {before_s / after_s:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clean-files", type=int, default=400)
    ap.add_argument("--mbpp", type=int, default=300, help="MBPP and MBPP+ items sampled (each)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (median reported)")
    a = ap.parse_args()
    main(a.clean_files, a.mbpp, a.rounds)
