"""The whole curation chain on N synthetic code documents: docs/s and MB/s per stage and total.

    .venv/bin/python benchmarks/curation_chain.py [--docs 100000] [--sources 22] [--workers 2]

Documents are chat rows (user question + assistant answer with a fenced code block) generated
from varied templates, with 3% planted near-duplicates, 1% planted secrets, 0.2% planted
HumanEval prompts and, in one question of ten, a sentence with a person's name, a street address
or a number before a capitalised word (what sends prose to the NER model). The stages are the
blocks the curation assets run, in the same order:

  per source (re-run when that source changes; each over ``--workers`` worker processes forked
  once per process and kept, surrogate_dagster.curation.parallel.map_chunks, ``--chunk-rows``
  rows per chunk):
    sanitize            sanitize_stage.sanitize_rows: the Sanitizer with the local profile's NER
                        model (spaCy, prose only, batched per chunk; `--ner none` leaves it out)
    filter              executor.apply_blocks (the filter step's runner, on the pool): AST -> heuristics -> edu
                        scorer per chunk (curation.blocks.run_blocks), sharing the fence scan
                        and tree-sitter parses; its rows ast / heuristics / edu_scorer give
                        each block's CPU
    minhash_signatures  minhash.compute_signatures (numba kernels on ``--workers`` nogil threads;
                        without numba, numpy in forked workers; datatrove's exact file format)
    decontaminate       decontam.Decontaminator.check_many (cached per source version in
                        curated_rows, so it is a per-source stage)
  across sources (re-run on every change, like dedup_decisions):
    exact_digests       exact_dedup.digest_texts over every source's filtered rows (SHA-256 of
                        normalized text)
    exact_dedup         ExactDeduper.find_duplicates_digests over all sources' digests
    near_dedup_cluster  minhash.find_near_duplicates (bucket stage + true-Jaccard check)

How to read the table: ``wall s`` is elapsed time of the step (what the 2 MB/s target is about);
``CPU s`` adds this process's and its workers' user+system time, i.e. the cost with one core
(``CPU s / wall s`` is the parallel speed-up; on a machine shared with other jobs wall time is
the noisy one, compare stages by CPU). MB/s is corpus MB (UTF-8 of all turns) per wall second,
``MB/CPU-s`` per CPU second; the whole chain reaches 2 MB/s wall on 2 cores only if its
MB/CPU-s is about 1 or more. ``--workers 1`` gives the single-core figures (wall = CPU).
Cross-source texts for the true-Jaccard check are built outside the clock (the asset reads them
with the filtered rows). The first ``minhash_signatures`` call of a process also pays numba's
import and cached-kernel load (~0.5 s; a first-ever compile ~5 s).

Measured 2026-11-30 (third session) on this 2-core box with no other job running, default run
(100k docs, 128.9 MB, NER on, 2 workers, 256-row chunks). With workers kept per process
(``parallel.WorkerPool``), five runs: 57.0 / 60.7 / 50.2 / 51.3 / 46.3 s wall = 2.26 / 2.12 /
2.57 / 2.51 / 2.78 MB/s (108 / 114 / 94 / 96 / 87 CPU-s; the box's speed drifts ~15% within an
hour, so compare runs made back to back). Back to back against the previous commit (a pool
forked per step and partition): 64.2 s, 120.6 CPU-s, 2.01 MB/s old against 57.0 s, 107.8 CPU-s,
2.26 MB/s new; at 20k docs, three alternating pairs: 16.2 / 16.1 / (30.5) s old, 13.2 / 14.8 /
13.4 s new. Page faults at 100k fell from 1.27M to 87k in the workers (their system time from
7.6 to 0.8 CPU-s) and from 1.08M to 0.51M in the parent. Best run per stage, wall / CPU s:
sanitize 17.6 / 33.9 (NER model 13.3, the other detectors 18.8), filter 20.9 / 40.5 (AST 22.9
of which tree-sitter's own parse ~60%, heuristics 8.1, edu 7.7), minhash signatures 4.7 / 7.6,
decontamination 1.4 / 2.6, digests 0.7 / 1.0, exact 0.5, near dedup 0.5 / 0.9; without
sanitize 4.5 MB/s. Re-curating one source: 6.5-8.2% of the full run. Before the kept workers
this session measured 1.83-2.29 MB/s over five runs (2 MB/s met in two).

Where the session of 2026-11-30 started (same box, busier): 0.69 MB/s without NER; with NER
called text by text on all prose it would have been ~0.1 MB/s. What changed, each with identical
outputs unless said: sanitizer 2.7x (one-pass keyword scan, exact prefilters); NER only on prose
that can hold an accepted finding, batched per chunk, on the trigger sentences only (the one
change of output: 347 vs 349 names on 11k fixture texts, and two stdlib false positives fewer);
filter 1.5-1.9x; decontamination 6x; MinHash signatures 1.75x and on nogil threads; near dedup
3-8x; the sanitize step forked like the others. Third session: the spaCy pipeline no longer runs
its shared tok2vec, which only the excluded parser and tagger listened to (en_core_web_sm's ner
has its own; same entities, ~35% less model time), and the memos evict in O(1) (FIFO eviction
by ``next(iter(dict))`` had cost ~5% of the sanitize step), and the workers are kept per process
instead of forked per step and partition (the figures above).

Baseline for the incremental figure: the full run measured in the same process. Re-curating one
changed source of ``--sources`` re-runs its per-source stages plus the cross-source steps.
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
from surrogate_dagster.curation.exact_dedup import ExactDeduper, digest_texts  # noqa: E402
from surrogate_dagster.curation.minhash import compute_signatures, find_near_duplicates  # noqa: E402
from surrogate_dagster.curation.parallel import DEFAULT_CHUNK_ROWS, children_cpu_seconds, default_workers  # noqa: E402
from surrogate_dagster.curation.quality.edu_classifier import EduFilter, build_edu_scorer  # noqa: E402
from surrogate_dagster.curation.executor import apply_blocks  # noqa: E402
from surrogate_dagster.curation.quality.heuristics import HeuristicFilter  # noqa: E402
from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig  # noqa: E402
from surrogate_dagster.sanitize.ner import DEFAULT_NER_MODEL  # noqa: E402
from surrogate_dagster.curation.sanitize_stage import sanitize_rows  # noqa: E402
from surrogate_dagster.curation.text import dedup_text, row_text  # noqa: E402

VERBS = ["compute", "parse", "merge", "filter", "count", "normalize", "validate", "group", "rank", "cache"]
NOUNS = ["orders", "log lines", "user records", "invoices", "events", "tokens", "intervals", "paths"]


SYL = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "be", "do", "fi", "gu", "ha"]
OPS = ["+", "-", "*", "//", "%", "max", "min", "abs"]
PER_SOURCE = ("sanitize", "filter", "minhash_signatures", "decontaminate")


FIRST = ["Maria", "James", "Aiko", "Omar", "Lena", "Ravi", "Sofia", "Tom"]
LAST = ["Lopez", "Okafor", "Tanaka", "Novak", "Schmidt", "Iyer", "Rossi", "Brown"]
CITIES = ["Lisbon", "Denver", "Osaka", "Nairobi", "Krakow"]
# Prose the way chat prompts carry it; about one doc in ten gets one (the rest of the prose has no
# Capitalised pairs, cue words or numbers before a capital, so NER never sees it).
PROSE = ["My teammate {first} {last} wrote the first version.", "Thanks, {first}!",
         "We run it on {n} Linux hosts in {city}.", "{first} {last} from the data team asked for this.",
         "The report goes to {first} {last}, {n} Harbor Street, {city}."]


def prose_line(rng: random.Random) -> str:
    return rng.choice(PROSE).format(first=rng.choice(FIRST), last=rng.choice(LAST), city=rng.choice(CITIES),
                                    n=rng.randint(2, 400))


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
    question = f"Write a function to {verb} {noun} ({i})."
    if rng.random() < 0.1:
        question += " " + prose_line(rng)
    return {"id": f"d{i}", "source": "", "kind": "sft", "prompt": [], "chosen": "", "rejected": "",
            "tools": "", "meta": "{}",
            "messages": [{"role": "user", "content": question},
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


def _cpu() -> float:
    """User + system seconds of this process and of its workers (running or ended)."""
    return time.process_time() + children_cpu_seconds()


class Clock:
    """Accumulates wall and CPU seconds per stage."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        # CPU of the blocks inside a step: {"sanitize": {"ner": s, ...}, "filter": {"ast": s, ...}}
        self.blocks: dict[str, dict[str, float]] = {"sanitize": {}, "filter": {}}

    def add(self, stage: str, wall: float, cpu: float) -> None:
        self.wall[stage] = self.wall.get(stage, 0.0) + wall
        self.cpu[stage] = self.cpu.get(stage, 0.0) + cpu

    def timed(self, stage: str, fn, *args, **kwargs):
        w, c = time.perf_counter(), _cpu()
        out = fn(*args, **kwargs)
        self.add(stage, time.perf_counter() - w, _cpu() - c)
        return out


def run(by_source: dict[str, list[dict]], only: set[str] | None, tmp: Path, index: BenchmarkIndex,
        sanitizer: Sanitizer, workers: int, chunk_rows: int, outputs: dict[str, dict]) -> tuple[Clock, dict]:
    """Run the chain; per-source stages only for `only` (None = all), whose results replace
    their entry in `outputs`; other sources reuse theirs. Returns the clock and counts."""
    clock = Clock()
    ast, heur = AstChecker(), HeuristicFilter()
    edu = EduFilter(build_edu_scorer("rubric"), threshold=2)
    chain = (ast, heur, edu)  # one sequence object: the pool keeps its workers per chain
    dec = Decontaminator(index)
    contaminated = 0
    for s, rows in by_source.items():
        if only is not None and s not in only:
            continue  # unchanged source: its filtered rows, signatures and digests are reused
        san = clock.timed("sanitize", sanitize_rows, rows, sanitizer, workers, chunk_rows)
        rows = san.rows
        for block in ("ner", "detectors"):
            clock.blocks["sanitize"][block] = clock.blocks["sanitize"].get(block, 0.0) + san.cpu_seconds[block]
        res = clock.timed("filter", apply_blocks, rows, chain,
                          {"kind": "pool", "workers": workers, "chunk_rows": chunk_rows}, tmp / "blocks")
        for block, stage in (("ast", "ast"), ("heuristics", "heuristics"), ("edu", "edu_scorer")):
            clock.blocks["filter"][stage] = (clock.blocks["filter"].get(stage, 0.0)
                                             + res.stats.of(block).cpu_seconds)
        rows = [r for r, reason in zip(rows, res.reasons) if not reason]
        w, c = time.perf_counter(), _cpu()
        texts = [dedup_text(r) for r in rows]  # what dedup_decisions compares (no system turns)
        compute_signatures(zip([r["id"] for r in rows], texts), tmp / "sig" / s, workers=workers)
        clock.add("minhash_signatures", time.perf_counter() - w, _cpu() - c)
        matches = clock.timed("decontaminate", dec.check_many, [row_text(r) for r in rows], workers, chunk_rows)
        contaminated += sum(1 for m in matches if m)
        outputs[s] = {"ids": [r["id"] for r in rows], "texts": texts}
    # like dedup_decisions: digests of every source's filtered rows, then the cross-source pass
    keys = [(s, i) for s, o in outputs.items() for i in o["ids"]]
    digests = clock.timed("exact_digests", digest_texts, [t for o in outputs.values() for t in o["texts"]], workers)
    exact = clock.timed("exact_dedup", ExactDeduper(sorted(by_source)).find_duplicates_digests,
                        ((s, i, d) for (s, i), d in zip(keys, digests)))
    # like dedup_decisions, the true-Jaccard check reads candidate texts from the filtered rows
    texts_of = {(s, i): t for s, o in outputs.items() for i, t in zip(o["ids"], o["texts"])}
    near = clock.timed("near_dedup_cluster", find_near_duplicates, {s: tmp / "sig" / s for s in by_source},
                       texts_of, priority=sorted(by_source))
    return clock, {"near_dropped": len(near.dropped), "exact_dropped": len(exact), "contaminated": contaminated}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--sources", type=int, default=22)
    ap.add_argument("--workers", type=int, default=default_workers(),
                    help="processes per per-source stage (default: the CPUs available)")
    ap.add_argument("--chunk-rows", type=int, default=DEFAULT_CHUNK_ROWS,
                    help="rows per chunk handed to a worker (the profile's curation.chunk_rows)")
    ap.add_argument("--ner", default=DEFAULT_NER_MODEL,
                    help="the sanitizer's NER model, as the local profile runs it; 'none' for no NER")
    args = ap.parse_args()
    sanitizer = Sanitizer(SanitizerConfig(ner_model=None if args.ner == "none" else args.ner))
    items, _ = load_benchmarks(names=["humaneval", "mbpp", "bfcl", "swebench_lite"])
    index = BenchmarkIndex.build(items, n=13)
    he = [i.text for i in items if i.benchmark == "humaneval"][:50]
    by_source = corpus(args.docs, args.sources, he)
    mb = sum(len(row_text(r).encode()) for rows in by_source.values() for r in rows) / 1e6
    print(f"corpus: {args.docs} docs, {mb:.1f} MB, {args.sources} sources, {args.workers} worker(s) per stage, "
          f"NER {args.ner}")
    with tempfile.TemporaryDirectory() as d:
        outputs: dict[str, dict] = {}
        full, counts = run(by_source, None, Path(d), index, sanitizer, args.workers, args.chunk_rows, outputs)
        one, _ = run(by_source, {"s00"}, Path(d), index, sanitizer, args.workers, args.chunk_rows, outputs)
    print(f"\n{'stage':<22}{'wall s':>8}{'CPU s':>8}{'docs/s':>10}{'MB/s':>8}{'MB/CPU-s':>10}")
    for k in full.cpu:
        wall, cpu = full.wall[k], full.cpu[k]
        print(f"{k:<22}{wall:>8.2f}{cpu:>8.2f}{args.docs / wall:>10.0f}{mb / wall:>8.2f}{mb / cpu:>10.2f}")
        # the blocks inside a step, CPU only (they run interleaved per chunk)
        for block, bcpu in full.blocks.get(k, {}).items():
            if bcpu:
                print(f"  {block:<20}{'':>8}{bcpu:>8.2f}{'':>10}{'':>8}{mb / bcpu:>10.2f}")
    wall, cpu = sum(full.wall.values()), sum(full.cpu.values())
    print(f"{'TOTAL':<22}{wall:>8.2f}{cpu:>8.2f}{args.docs / wall:>10.0f}{mb / wall:>8.2f}{mb / cpu:>10.2f}"
          f"   (target >= 2 MB/s wall; CPU/wall = {cpu / wall:.2f}x)")
    per_source_cpu = sum(v for k, v in full.cpu.items() if k in PER_SOURCE)
    print(f"without sanitize: {mb / (wall - full.wall['sanitize']):.2f} MB/s wall, "
          f"{mb / (cpu - full.cpu['sanitize']):.2f} MB/CPU-s; per-source stages {per_source_cpu:.2f} CPU s")
    print(f"planted: near-duplicates dropped {counts['near_dropped']}, exact {counts['exact_dropped']}, "
          f"contaminated found {counts['contaminated']}")
    one_wall, one_cpu = sum(one.wall.values()), sum(one.cpu.values())
    print(f"\nre-curating 1 of {args.sources} sources: {one_wall:.2f}s wall = {100 * one_wall / wall:.1f}% "
          f"of the full run ({100 * one_cpu / cpu:.1f}% of its CPU); baseline: the full run above; "
          f"target <= 15%")


if __name__ == "__main__":
    main()
