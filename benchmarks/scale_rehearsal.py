"""Scale rehearsal: sources -> curation -> mixtures on a synthetic corpus with the runbook's caps.

Run: .venv/bin/python benchmarks/scale_rehearsal.py [--scales 0.01 0.1 1.0] [--executors pool local]
                                                   [--workers 2] [--keep DIR]

Corpus. Every catalog source gets ``cap x scale`` rows (assets/sources.yaml caps: 388,230 rows
over 22 sources at 1.0), generated deterministically (seeded per source and row). A row's size
is drawn from the byte sizes of that source's shipped rows (fixtures/hub/datasets/<hf_id> and
the shared samples of the same dataset); a source whose shipped rows are trimmed stand-ins of
trajectories (``*swe*`` sources under 20 KB on average) draws from the full SWE trajectory
samples instead (20-110 KB). The table of distributions is printed first. Texts are Python-ish
lines of words from a 50k-word vocabulary (unique per row, so unrelated rows share few
5-grams); code rows carry a fenced Python block that parses. 1% of rows are planted exact copies
(whitespace changed) and 1% near copies (one word in 40 replaced: Jaccard ~0.75-0.85) of a row of another source of
the same kind, so both dedup passes have work.

Steps, each in its own forked process (so its peak RSS is its own), over all sources one at a
time, with the functions the assets call, on a temp-dir object store:

    sources      generate rows, write them (stage_io.write_step "normalized")
    sanitize     sanitize_stage.sanitize_rows (the ten detector categories; no NER model)
    filter[K]    executor.apply_blocks with the filter step's chain (AST validity, heuristics,
                 rubric edu scorer at threshold 0: scored, never dropping) on executor kind K (pool: the forked pool; local: datatrove's
                 LocalPipelineExecutor; in_process), same decisions (checked)
    signatures   minhash.compute_signatures per source
    dedup        dedup_sharded.cross_source_dedup (bounded memory)
    curate       the dedup decisions applied per source (decontamination is left out: its
                 index is built from the benchmark files, not from the corpus)
    mixtures     mixtures.build_mixture + write_mixture for the five mixtures

Reported per step and scale: wall seconds, peak RSS (MB) and bytes written; then, per step, the
time ratio between consecutive scales against the goal (10x rows -> at most 11x time) and peak
RSS at the largest scale against the 4 GB goal. The CPUs of a shared box are noisy: figures vary
by +-20% between runs.

Measured 2026-12-01 on the 2-core box, shared with other jobs (1% and 10% in one run, 100% in
another; wall s / peak RSS MB, workers' peak included):

    step            1% (3,882 rows)   10% (38,823)    100% (388,230, 945 MB)   10%->100% time
    sources           7.1 /  196       29.8 /  432     142.9 / 1948            4.8x
    sanitize          8.7 /  246       93.9 /  475     408.9 / 2281            4.4x
    filter[pool]     21.2 /  279       74.4 /  512     339.2 / 2388            4.6x
    filter[local]    45.5 /  251      107.2 /  501     342.0 / 2341 (ranks 1971)  3.2x
    signatures       14.2 /  313       20.8 /  585      41.4 / 2343            2.0x
    dedup             3.3 /  341       20.1 /  610      43.2 / 2612            2.1x
    curate            5.3 /  245       26.4 /  455      41.9 / 2289            1.6x
    mixtures          3.8 /  223       12.9 /  885      49.7 / 6273            3.9x

Every 10x step in rows took at most 4.8x the time (goal: 11x); peak RSS stayed under 2.7 GB in
every step but the mixtures (6.3 GB at 100%, over the 4 GB goal: build_mixture holds a whole
mixture's rows and its JSONL bytes). Dedup at 100%: 3,808 exact and 3,836 near duplicates from
7,739 candidate pairs (of ~3,900 planted of each).
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from surrogate_dagster.curation.stage_io import read_step, write_step  # noqa: E402
from surrogate_dagster.paths import FIXTURES_DIR, shared_dir  # noqa: E402
from surrogate_dagster.sources.assets import CATALOG  # noqa: E402
from surrogate_dagster.storage import LocalObjectStore  # noqa: E402

SAMPLES = shared_dir() / "data" / "samples"
FAMILY_KIND = {"code_sft": "sft", "tool": "sft", "agent": "sft", "dpo": "dpo"}
SWE_MIN_MEAN = 20_000


# ----------------------------------------------------------------------------- size model
def shipped_sizes(hf_id: str) -> list[int]:
    files = list((FIXTURES_DIR / "hub" / "datasets" / hf_id).rglob("*.jsonl"))
    files += [Path(p) for p in glob.glob(str(SAMPLES / f"{hf_id.replace('/', '__')}*.jsonl"))]
    return [len(line.encode()) for f in files for line in f.read_text().splitlines() if line.strip()]


def size_model() -> dict[str, tuple[list[int], str]]:
    """source -> (row sizes to draw from, where they come from)."""
    swe = [n for p in ("SWE-Gym__OpenHands-Sampled-Trajectories", "nebius__SWE-agent-trajectories")
           for f in SAMPLES.glob(f"{p}*.jsonl") for n in (len(x.encode()) for x in f.read_text().splitlines() if x)]
    model: dict[str, tuple[list[int], str]] = {}
    by_family: dict[str, list[int]] = {}
    for s in CATALOG.sources:
        sizes = shipped_sizes(s.hf_id)
        by_family.setdefault(s.family, []).extend(sizes)
        model[s.name] = (sizes, "shipped rows")
    for s in CATALOG.sources:
        sizes, _ = model[s.name]
        if "swe" in s.name and (not sizes or statistics.mean(sizes) < SWE_MIN_MEAN):
            model[s.name] = (swe, "SWE trajectory samples")
        elif not sizes:
            model[s.name] = (by_family[s.family], f"{s.family} family")
    return model


# ----------------------------------------------------------------------------- generator
_VOCAB: list[str] = []


def vocab() -> list[str]:
    if not _VOCAB:
        rng = random.Random(0)
        syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "qu", "sa", "do", "fi", "gu", "he", "jo",
                "ba", "ce", "xu", "wy"]
        seen = set()
        while len(seen) < 50_000:
            seen.add("".join(rng.choice(syll) for _ in range(rng.randint(2, 5))))
        _VOCAB.extend(sorted(seen))
    return _VOCAB


def text_of(rng: random.Random, nbytes: int, code: bool) -> str:
    """~nbytes of text: Python-ish lines (``name = other(a, b)``) of random vocabulary words."""
    words = vocab()
    n = max(6, nbytes // 7)
    toks = [words[i] for i in rng.choices(range(len(words)), k=n)]
    lines = []
    if not code:
        return " ".join(" ".join(toks[i:i + 12]) + "." for i in range(0, n, 12))
    for i in range(0, n - 11, 12):  # a documented function per 12 words: parses, scores as code
        a, b, c, d, e, f, g, h, j, k, m, o = toks[i:i + 12]
        lines.append(f"def {a}({b}, {c}):\n    \"\"\"{d} {e} {f}.\"\"\"\n    # {g} {h} {j}\n"
                     f"    return {k}({b}, {m}) + {o}\n")
    return "\n".join(lines) or f"{toks[0]} = {toks[1]}"


def make_row(source: str, family: str, i: int, size: int, seed_key: str) -> dict:
    rng = random.Random(f"{seed_key}")
    kind = FAMILY_KIND[family]
    if kind == "dpo":
        q = text_of(rng, size // 3, False)
        return {"id": f"{source}-{i}", "source": source, "kind": "dpo", "meta": {},
                "prompt": [{"role": "user", "content": q}],
                "chosen": "```python\n" + text_of(rng, size // 3, True) + "\n```",
                "rejected": "```python\n" + text_of(rng, size // 3, True) + "\n```"}
    if family == "code_sft":
        msgs = [{"role": "user", "content": text_of(rng, size // 4, False)},
                {"role": "assistant", "content": "Here:\n```python\n" + text_of(rng, 3 * size // 4, True) + "\n```"}]
    else:  # tool / agent: a multi-turn trajectory of ~2 KB turns
        turns = max(1, size // 2000)
        msgs = [{"role": "user", "content": text_of(rng, min(size, 2000), False)}]
        for t in range(turns - 1):
            msgs.append({"role": "assistant", "content": "```python\n" + text_of(rng, 1000, True) + "\n```"})
            msgs.append({"role": "tool", "content": f"<tool_response>\n{text_of(rng, 1000, False)}\n</tool_response>"})
        msgs.append({"role": "assistant", "content": text_of(rng, 500, False)})
    return {"id": f"{source}-{i}", "source": source, "kind": "sft", "meta": {}, "messages": msgs}


def perturb(row: dict, near: bool, rng: random.Random) -> dict:
    def edit(t: str) -> str:
        if not near:
            return "  " + t.replace("\n", "\n ", 5) + " "
        words = t.split(" ")
        for w in range(0, len(words), 40):
            if words[w].isalpha():  # leaves fences, tags and code punctuation intact
                words[w] = rng.choice(vocab())
        return " ".join(words)

    out = json.loads(json.dumps(row))
    if out["kind"] == "dpo":
        out["chosen"] = edit(out["chosen"])
        out["prompt"] = [{**m, "content": edit(m["content"])} for m in out["prompt"]]
    else:
        out["messages"] = [{**m, "content": edit(m["content"])} for m in out["messages"]]
    return out


def source_rows(spec, n: int, sizes: list[int], same_kind: list) -> list[dict]:
    """n rows of one source; 1% exact and 1% near copies of rows of another source of its family."""
    rng = random.Random(f"rows:{spec.name}")
    rows = []
    for i in range(n):
        r = rng.random()
        donors = [d for d in same_kind if d[0] != spec.name]
        if r < 0.02 and donors:
            donor, dfam, dsizes, dn = donors[rng.randrange(len(donors))]
            j = rng.randrange(max(1, dn))
            base = make_row(donor, dfam, j, dsizes[random.Random(f"size:{donor}:{j}").randrange(len(dsizes))],
                            f"{donor}:{j}")
            row = perturb(base, near=r >= 0.01, rng=rng)
            row.update(id=f"{spec.name}-{i}", source=spec.name)
        else:
            size = sizes[random.Random(f"size:{spec.name}:{i}").randrange(len(sizes))]
            row = make_row(spec.name, spec.family, i, size, f"{spec.name}:{i}")
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- steps
def _store(root: Path) -> LocalObjectStore:
    return LocalObjectStore(root / "store")


def step_sources(root: Path, scale: float, workers: int, executor: str) -> dict:
    model = size_model()
    counts = {s.name: max(1, round((s.cap or 0) * scale)) for s in CATALOG.sources}
    kinds: dict[str, list] = {}
    for s in CATALOG.sources:
        kinds.setdefault(s.family, []).append((s.name, s.family, model[s.name][0], counts[s.name]))
    store = _store(root)
    total = 0
    for s in CATALOG.sources:
        rows = source_rows(s, counts[s.name], model[s.name][0], kinds[s.family])
        write_step(store, "normalized", s.name, f"scale-{scale}", rows)
        total += len(rows)
        del rows
        gc.collect()
    return {"rows": total}


def step_sanitize(root: Path, scale: float, workers: int, executor: str) -> dict:
    from surrogate_dagster.curation.assets import CURATION
    from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig
    from surrogate_dagster.curation.sanitize_stage import sanitize_rows

    sanitizer = Sanitizer(SanitizerConfig(categories=tuple(CURATION.sanitize.categories), ner_model=None))
    store = _store(root)
    changed = 0
    for s in CATALOG.names:
        latest, rows = read_step(store, "normalized", s)
        res = sanitize_rows(rows, sanitizer, workers=workers)
        changed += res.changed
        write_step(store, "sanitized", s, latest["version"], res.rows)
        del rows, res
        gc.collect()
    return {"rows_changed": changed}


def filter_chain():
    from surrogate_dagster.curation.assets import _filter_blocks

    # edu threshold 0: the rubric is computed on every row as in production, but it does not
    # drop the synthetic code (nonsense words score 1-2), so later steps see a realistic volume
    return _filter_blocks("rubric", 0.0)


def step_filter(root: Path, scale: float, workers: int, executor: str) -> dict:
    from surrogate_dagster.curation.executor import apply_blocks

    settings = {"in_process": {"kind": "in_process"}, "pool": {"kind": "pool", "workers": workers},
                "local": {"kind": "local", "tasks": workers, "workers": workers}}[executor]
    chain = filter_chain()
    store = _store(root)
    kept = dropped = 0
    decided: dict[str, list] = {}
    for s in CATALOG.names:
        latest, rows = read_step(store, "sanitized", s)
        run = apply_blocks(rows, chain, settings, root / "work", workers=workers)
        decided[s] = run.reasons
        keep = [r for r, why in zip(rows, run.reasons) if why is None]
        kept += len(keep)
        dropped += len(rows) - len(keep)
        write_step(store, "filtered", s, latest["version"], keep)
        del rows, keep
        gc.collect()
    # the executors must agree: the first one run records its decisions, later ones compare
    ref = root / "filter_decisions.json"
    if ref.exists():
        if json.loads(ref.read_text()) != decided:
            raise AssertionError(f"filter decisions on {executor} differ from the first executor's")
    else:
        ref.write_text(json.dumps(decided))
    return {"kept": kept, "dropped": dropped}


def step_signatures(root: Path, scale: float, workers: int, executor: str) -> dict:
    from surrogate_dagster.curation.assets import minhash_spec
    from surrogate_dagster.curation.minhash import compute_signatures
    from surrogate_dagster.curation.text import dedup_text

    store = _store(root)
    too_short = 0
    for s in CATALOG.names:
        _, rows = read_step(store, "filtered", s)
        st = compute_signatures(((r["id"], dedup_text(r)) for r in rows), root / "work" / "minhash" / s,
                                minhash_spec(), workers=workers)
        too_short += st.n_without_shingles
        del rows
        gc.collect()
    return {"too_short": too_short}


def step_dedup(root: Path, scale: float, workers: int, executor: str) -> dict:
    from surrogate_dagster.curation.assets import CURATION
    from surrogate_dagster.curation.dedup_sharded import cross_source_dedup
    from surrogate_dagster.curation.text import dedup_text

    store = _store(root)

    def read_texts(source: str):
        _, rows = read_step(store, "filtered", source)
        return ((r["id"], dedup_text(r)) for r in rows)

    names = CATALOG.names
    out = cross_source_dedup(names, read_texts, {s: root / "work" / "minhash" / s for s in names},
                             root / "work" / "scratch", threshold=CURATION.minhash.threshold, workers=workers)
    store.put_bytes("curation/dedup/decisions.json", json.dumps(out.decisions).encode())
    return {**out.stats["dropped_by_reason"], "candidate_pairs": out.stats["near"]["candidate_pairs"]}


def step_curate(root: Path, scale: float, workers: int, executor: str) -> dict:
    store = _store(root)
    decisions = json.loads(store.get_bytes("curation/dedup/decisions.json"))
    kept = 0
    for s in CATALOG.names:
        latest, rows = read_step(store, "filtered", s)
        keep = [r for r in rows if f"{s}\t{r['id']}" not in decisions]
        dropped = [{"id": r["id"], "reason": decisions[f"{s}\t{r['id']}"]["reason"],
                    "detail": json.dumps(decisions[f"{s}\t{r['id']}"])} for r in rows
                   if f"{s}\t{r['id']}" in decisions]
        write_step(store, "curated", s, latest["version"], keep, dropped)
        kept += len(keep)
        del rows, keep
        gc.collect()
    return {"kept": kept}


def step_mixtures(root: Path, scale: float, workers: int, executor: str) -> dict:
    from surrogate_dagster.curation.assets import CURATION, _members, _rows_when_read
    from surrogate_dagster.curation.mixtures import build_mixture, write_mixture

    store = _store(root)
    rows_out = {}
    for name, cfg in CURATION.mixtures.items():
        rows_by_source = {s: _rows_when_read(store, "curated", s) for s in _members(name)}
        build = build_mixture(name, cfg.kind, rows_by_source, cfg.caps)
        write_mixture(store, build, f"# {name} (scale rehearsal)\n")
        rows_out[name] = build.n_rows
        del rows_by_source, build
        gc.collect()
    return rows_out


STEPS = [("sources", step_sources), ("sanitize", step_sanitize), ("filter", step_filter),
         ("signatures", step_signatures), ("dedup", step_dedup), ("curate", step_curate),
         ("mixtures", step_mixtures)]


def _bytes_since(root: Path, t0: float) -> int:
    """Bytes of the files written (created or rewritten) since ``t0``, still present."""
    return sum(st.st_size for p in root.rglob("*")
               if p.is_file() and p.name != "steps.log" and (st := p.stat()).st_mtime >= t0)


def _child(fn, root, scale, workers, executor, conn) -> None:
    from loguru import logger

    logger.remove()  # datatrove's per-task stats tables would drown the report
    log = os.open(str(root / "steps.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 2)  # ... and so would its forked ranks' loggers (errors come back through conn)
    try:
        t0 = time.monotonic()
        info = fn(root, scale, workers, executor)
        wall = time.monotonic() - t0
        from surrogate_dagster.curation.parallel import shutdown_pools

        shutdown_pools()  # reaped workers count in RUSAGE_CHILDREN
        # the child's own peak plus its forked workers' (pool / datatrove local processes)
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        conn.send({"ok": True, "wall": wall, "rss_mb": own / 1024, "child_rss_mb": kids / 1024, "info": info})
    except BaseException as e:  # reported by the parent, which stops the rehearsal
        import traceback

        conn.send({"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()})
    finally:
        conn.close()


def run_step(name, fn, root: Path, scale: float, workers: int, executor: str) -> dict:
    ctx = get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    t_start = time.time() - 1e-3
    p = ctx.Process(target=_child, args=(fn, root, scale, workers, executor, child))
    p.start()
    child.close()
    res = parent.recv()
    p.join()
    if not res["ok"]:
        raise RuntimeError(f"step {name} at scale {scale}: {res['error']}\n{res['trace']}")
    res["written_mb"] = _bytes_since(root, t_start) / 1e6
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--executors", nargs="+", default=["pool", "local"],
                    help="filter-step executor kinds to run side by side (first one feeds the later steps)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="keep the work folders under this directory")
    args = ap.parse_args()

    model = size_model()
    print("row size model (bytes per row; drawn per source from these samples):")
    print(f"  {'source':26s} {'family':8s} {'cap':>6s} {'n':>4s} {'median':>8s} {'mean':>8s} {'max':>8s}  from")
    total_mb = 0.0
    for s in CATALOG.sources:
        sizes, origin = model[s.name]
        total_mb += (s.cap or 0) * statistics.mean(sizes) / 1e6
        print(f"  {s.name:26s} {s.family:8s} {s.cap or 0:6d} {len(sizes):4d} {statistics.median(sizes):8.0f} "
              f"{statistics.mean(sizes):8.0f} {max(sizes):8d}  {origin}")
    print(f"  expected corpus at 1.0: {sum(s.cap or 0 for s in CATALOG.sources)} rows, ~{total_mb:.0f} MB of row JSON")
    print(f"  box: {os.cpu_count()} CPUs (shared with other work: expect +-20% noise), workers={args.workers}")

    table: dict[tuple[str, float], dict] = {}
    for scale in args.scales:
        base = args.keep or Path(tempfile.gettempdir())
        root = Path(tempfile.mkdtemp(prefix=f"rehearsal-{scale}-", dir=base))
        try:
            for name, fn in STEPS:
                kinds = args.executors if name == "filter" else [None]
                for kind in kinds:
                    label = f"filter[{kind}]" if kind else name
                    res = run_step(label, fn, root, scale, args.workers, kind or "pool")
                    table[(label, scale)] = res
                    print(f"  scale {scale:<5} {label:18s} {res['wall']:8.1f}s  rss {res['rss_mb']:7.0f} MB "
                          f"(workers {res['child_rss_mb']:6.0f} MB)  wrote {res['written_mb']:8.1f} MB  {res['info']}",
                          flush=True)
        finally:
            if args.keep is None:
                shutil.rmtree(root, ignore_errors=True)

    labels = list(dict.fromkeys(label for label, _ in table))
    print("\nstep                 " + "".join(f"{f'{s}: s / RSS MB / MB':>30s}" for s in args.scales)
          + "".join(f"   x{args.scales[i + 1] / args.scales[i]:.0f} rows: time" for i in range(len(args.scales) - 1)))
    for label in labels:
        cells = "".join(f"{table[(label, s)]['wall']:10.1f} {max(table[(label, s)]['rss_mb'], table[(label, s)]['child_rss_mb']):8.0f} "
                        f"{table[(label, s)]['written_mb']:10.1f}" for s in args.scales if (label, s) in table)
        ratios = ""
        for a, b in zip(args.scales, args.scales[1:]):
            if (label, a) in table and (label, b) in table:
                r = table[(label, b)]["wall"] / max(table[(label, a)]["wall"], 1e-9)
                goal = 1.1 * b / a
                ratios += f"   {r:6.1f}x ({'ok' if r <= goal else 'over'} <= {goal:.0f}x)"
        print(f"{label:20s} {cells}{ratios}")
    top = max(args.scales)
    peak = max(max(v["rss_mb"], v["child_rss_mb"]) for (label, s), v in table.items() if s == top)
    print(f"\npeak RSS of any step at scale {top}: {peak:.0f} MB (goal < 4096 MB: {'ok' if peak < 4096 else 'over'})")
    total = {s: sum(v["wall"] for (label, sc), v in table.items() if sc == s) for s in args.scales}
    print("total wall per scale: " + ", ".join(f"{s}: {t:.0f}s" for s, t in total.items()))
    if "pool" in args.executors and "local" in args.executors:
        for s in args.scales:
            print(f"filter step at {s}: pool {table[('filter[pool]', s)]['wall']:.1f}s vs datatrove local "
                  f"{table[('filter[local]', s)]['wall']:.1f}s")


if __name__ == "__main__":
    main()
