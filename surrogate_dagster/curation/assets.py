"""Curation group: per-source steps, cross-source dedup and decontamination, then the mixtures.

    normalized_rows[s] -> sanitized_rows[s] -> filtered_rows[s] -> minhash_signatures[s]
                                                      \\-> dedup_decisions (all sources) --\\
    benchmark_ngram_index ---------------------------------------------------> curated_rows[s]
    curated_rows[*] -> code_sft_mixture, tool_sft_mixture, agent_sft_mixture, code_dpo_mixture, tool_dpo_mixture
    <name>_mixture -> [blocking checks] -> <name>_hub (the Hub push; also waits for mixture_views)

Per-source steps re-run alone when one source changes; only the cheap cross-source steps
(dedup decisions, the per-source application of them, mixtures) follow.
"""

import functools
import io
import json
import shutil
import tarfile
import tempfile
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    DagsterError,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset_check,
)

from ..catalog.code_version import function_code_version
from ..catalog.keys import EVAL_CANARIES, MIXTURE_VIEWS
from ..catalog.loader import config_hash, load_profile, validate_phase
from ..metadata import bar_plot, counts_table, funnel_plot, histogram_plot
from ..resources import HubResource, ObjectStoreResource
from ..runtime.host_pools import holds_pool_slot
from ..retries import HUB_PUSH_RETRY
from ..runtime.step_scratch import step_scratch, sweep_ended_runs
from ..sources.assets import CATALOG, normalized_rows, source_partitions
from ..sources.normalize import read_normalized
from ..storage.layout import (BENCHMARK_INDEX, DECONTAM, DEDUP, MINHASH, mixture_pointer, mixture_version_prefix,
                              normalized_pointer, pointer, raw_pointer, step_pointer)
from .config import CurationProfile, load_curation
from .mixtures import hub_asset_name
from .resource import CurationSettings
from .sanitize_stage import sanitize_rows
from .stage_io import SYNTH_STEP, curated_synth_asset, read_pointer, read_step, version_of, write_step
from .text import dedup_text, row_text

CURATION = load_curation()
CURATION_VERSION = config_hash(CURATION)
# The active profile's phases.curation (SURROGATE_PROFILE, as the code location loads it): the
# settings each asset's code reads on its `curation` resource are part of its code version.
PROFILE_CURATION = validate_phase(load_profile(), "curation", CurationProfile)


def code_version_of(function: str, profile: CurationProfile | None = None) -> str:
    """The code version of the asset `function` (an asset, or a factory of assets) of this module
    computes: the curation sections and profile settings (``profile``, default the active
    profile's) it reads and the definitions it reaches."""
    return function_code_version(__name__, function, sections_of="CURATION",
                                 profile_section=("curation", profile or PROFILE_CURATION))


# What decides a source's decontamination matches besides its rows and the index: everything
# curated_rows reaches (the matcher, its kernels, the threshold). In the cache key, so a changed
# rule re-scans instead of reusing matches.
DECONTAM_CODE_VERSION = config_hash(code_version_of("curated_rows"))


@functools.lru_cache(maxsize=2)
def curation_sanitizer(categories: tuple[str, ...], ner_model: str | None, model_source=None):
    """One sanitizer per process: loading the NER model dominates small partitions. An online
    ``model_source`` (``CurationSettings.model_source()``) fetches an ``hf:`` NER model through
    the Hub first."""
    from ..sanitize import Sanitizer, SanitizerConfig, load_ner

    ner = None
    if ner_model and model_source is not None and {"person_names", "addresses"} & set(categories):
        ner = load_ner(ner_model, model_source)
    return Sanitizer(SanitizerConfig(categories=categories, ner_model=ner_model), ner=ner)


@functools.lru_cache(maxsize=2)
def _filter_blocks(edu_scorer: str, edu_threshold: float, model_source=None):
    """The filter step's chain of blocks (AST validity, heuristics, edu scorer), one per process
    and settings: the blocks hold no per-partition state, and keeping them keeps their worker
    pool (``parallel.pool_for`` keys on these objects), so every partition a process filters
    reuses warm workers."""
    from .ast_validity import AstChecker
    from .quality.edu_classifier import EduFilter, build_edu_scorer
    from .quality.heuristics import HeuristicFilter

    return (AstChecker(languages=CURATION.ast.languages), HeuristicFilter(CURATION.quality.heuristics),
            EduFilter(build_edu_scorer(edu_scorer, **({"source": model_source} if edu_scorer == "stack-edu" else {})),
                      threshold=edu_threshold))


def _canary_audit(store, rows: list[dict], sanitizer, curation: CurationSettings) -> dict | None:
    """Canaries planted into shadow copies of this source's picked rows, sanitized like the real
    rows and scanned: {"planted", "survived", "hits"}; None before eval_canaries ran. The copies
    are discarded here: no training row ever holds a canary."""
    from ..canary import CANARY_KEY, CanaryManifest, CanaryScanner, scan_rows, shadow_audit_rows

    if not store.exists(CANARY_KEY):
        return None
    manifest = CanaryManifest.from_json(store.get_bytes(CANARY_KEY))
    shadow = shadow_audit_rows(rows, manifest)
    cleaned = sanitize_rows(shadow, sanitizer, workers=curation.workers, chunk_size=curation.chunk_rows).rows
    hits = scan_rows(cleaned, CanaryScanner(manifest), row_text)["hits"]
    for h in hits:
        h["where"] = "shadow_audit"
    return {"planted": len(shadow), "survived": len(hits), "hits": hits[:50], "manifest": manifest.salt[:12]}


def _progress_logger(context: AssetExecutionContext, what: str):
    """A ``progress(done, total)`` callback that logs about every tenth of a large partition."""
    state = {"next": 0}

    def progress(done: int, total: int) -> None:
        if total >= 5000 and (done >= state["next"] or done == total):
            context.log.info(f"{what} {done}/{total} rows")
            state["next"] = done + total // 10

    return progress


def _mb(rows: list[dict]) -> float:
    return sum(len(row_text(r).encode()) for r in rows) / 1e6


@asset(group_name="curation", partitions_def=source_partitions, code_version=code_version_of("sanitized_rows"),
       deps=[normalized_rows, AssetKey(EVAL_CANARIES)], kinds={"parquet"})
def sanitized_rows(context: AssetExecutionContext, object_store: ObjectStoreResource,
                   curation: CurationSettings) -> MaterializeResult:
    """One source with secrets and PII replaced by consistent placeholders (ten categories + NER)."""
    store = object_store.get_store()
    source = context.partition_key
    revision, rows = read_normalized(store, source)
    sanitizer = curation_sanitizer(tuple(CURATION.sanitize.categories), curation.ner_model, curation.model_source())
    # Canaries (unique fake secrets) go into shadow copies only, sanitized by the same sanitizer;
    # the no-leak gate fails if one survives there, in a curated row or in a model output.
    audit = _canary_audit(store, rows, sanitizer, curation)
    planted = audit["planted"] if audit else 0
    t0 = time.monotonic()
    context.log.info(f"{source}: sanitizing {len(rows)} rows with {curation.workers} worker(s)")
    result = sanitize_rows(rows, sanitizer, workers=curation.workers, chunk_size=curation.chunk_rows,
                           progress=_progress_logger(context, f"{source}: sanitized"))
    out, counts, changed = result.rows, result.counts, result.changed
    dt = time.monotonic() - t0
    version = version_of(revision, CURATION.sanitize.model_dump(), curation.ner_model)
    write_step(store, "sanitized", source, version, out,
               summary={"counts": dict(counts), "canaries_planted": planted, "canary_audit": audit})
    mb = _mb(rows)
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={
            "rows": len(out), "rows_changed": changed, "canaries_planted": planted,
            "canaries_survived": audit["survived"] if audit else 0,
            "findings": sum(counts.values()),
            "findings_by_category": MetadataValue.md(counts_table(counts, "category", "findings")),
            **_plots({"findings_plot": bar_plot(counts, f"Sanitizer findings by category: {source}",
                                                xlabel="findings")}),
            "counts": MetadataValue.json(dict(counts)),
            "ner_model": curation.ner_model or "none",
            "mb": round(mb, 3), "mb_per_s": round(mb / dt, 2) if dt > 0 else 0.0,
            # where the step's CPU went, all workers: the NER model or the other detectors
            "cpu_seconds_ner": round(result.cpu_seconds["ner"], 2),
            "cpu_seconds_detectors": round(result.cpu_seconds["detectors"], 2),
        },
    )


@asset(group_name="curation", partitions_def=source_partitions, code_version=code_version_of("filtered_rows"),
       deps=[sanitized_rows], kinds={"parquet"})
def filtered_rows(context: AssetExecutionContext, object_store: ObjectStoreResource,
                  curation: CurationSettings) -> MaterializeResult:
    """One source after AST validity (tree-sitter), OpenCoder heuristics and the edu classifier."""
    from .executor import apply_blocks

    store = object_store.get_store()
    source = context.partition_key
    latest, rows = read_step(store, "sanitized", source)
    edu_threshold = (curation.edu_threshold if curation.edu_threshold is not None
                     else CURATION.quality.edu_threshold)
    blocks = _filter_blocks(curation.edu_scorer, edu_threshold, curation.model_source())
    checker, heur, edu = blocks
    t0 = time.monotonic()
    # One pass: each code block is found and parsed once and shared by the three blocks.
    # ... on the executor the profile names (phases.ops.datatrove_executor: pool here, Ray at scale)
    res = apply_blocks(rows, blocks, curation.datatrove_executor, curation.work_path("blocks"),
                       workers=curation.workers, chunk_size=curation.chunk_rows)
    reasons: Counter[str] = Counter()
    kept, dropped = [], []
    for row, reason in zip(rows, res.reasons):
        if reason:
            reasons[reason] += 1
            dropped.append({"id": row["id"], "reason": reason, "row_json": json.dumps(row, default=str)})
        else:
            kept.append(row)
    dt = time.monotonic() - t0
    version = version_of(latest["version"], CURATION.ast.model_dump(), CURATION.quality.model_dump(),
                         curation.edu_scorer, edu_threshold)
    write_step(store, "filtered", source, version, kept, dropped, summary={"dropped": dict(reasons)})
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={
            "rows_in": len(rows), "rows_kept": len(kept), "rows_dropped": len(dropped),
            "dropped_by_reason": MetadataValue.md(counts_table(reasons)),
            "counts": MetadataValue.json(dict(reasons)),
            "ast_by_language": MetadataValue.json(checker.metadata(res.stats.of(checker.name))),
            "heuristics": MetadataValue.json(heur.metadata(res.stats.of(heur.name))),
            "heuristics_by_rule": MetadataValue.md(heur.rule_table(res.stats.of(heur.name))),
            "edu_scores": MetadataValue.json(edu.metadata(res.stats.of(edu.name))),
            "edu_scorer": curation.edu_scorer, "edu_threshold": edu_threshold,
            "mb_per_s": round(_mb(rows) / dt, 2) if dt > 0 else 0.0,
            **_filter_plots(source, reasons, edu.metadata(res.stats.of(edu.name)), edu_threshold),
        },
    )


@asset(group_name="curation", partitions_def=source_partitions, code_version=code_version_of("minhash_signatures"),
       deps=[filtered_rows], kinds={"datatrove"})
def minhash_signatures(context: AssetExecutionContext, object_store: ObjectStoreResource,
                       curation: CurationSettings) -> MaterializeResult:
    """MinHash signatures (5-grams, 32x8 = 256 hashes) of one source's non-system turns, for
    cross-source near dedup."""
    from .minhash import compute_signatures

    store = object_store.get_store()
    source = context.partition_key
    latest, rows = read_step(store, "filtered", source)
    wanted = _signature_version(latest["version"])
    out_dir = _signature_folder(curation, source, wanted)
    t0 = time.monotonic()
    with run_step_scratch(context, curation, f"minhash_signatures.{source}") as scratch:
        built = scratch / source
        stats = compute_signatures(((r["id"], dedup_text(r)) for r in rows), built, minhash_spec(),
                                   workers=curation.workers)
        (built / SIGNATURE_VERSION_FILE).write_text(wanted)
        # The signature folder is a local cache; a tarball in the object store makes it durable.
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(built, arcname=source)
        key = _signature_key(source, latest["version"])
        store.put_bytes(key, buf.getvalue())
        _publish_signatures(built, out_dir)
    return MaterializeResult(
        data_version=DataVersion(version_of(latest["version"], DEDUP_VIEW)),
        metadata={"docs": stats.n_docs, "docs_too_short": stats.n_without_shingles,
                  "signature_dir": str(out_dir), "backup": store.uri(key),
                  "seconds": round(time.monotonic() - t0, 2)},
    )


def minhash_spec():
    from .minhash import MinhashSpec

    m = CURATION.minhash
    return MinhashSpec(n_grams=m.n_grams, buckets=m.buckets, hashes_per_bucket=m.hashes_per_bucket)


# Names the text view dedup compares (text.dedup_text): part of every signature and decision key,
# so signatures of another view are never reused.
DEDUP_VIEW = "turns-without-system/v1"


# Written into a signature folder: which rows and which MinHash geometry it holds. A local folder
# is reused only when it names the version wanted, so a changed geometry or row set re-reads.
SIGNATURE_VERSION_FILE = "signature_version"


def _signature_version(filtered_version: str) -> str:
    """The version of a source's signatures: its filtered rows, the text view and the geometry."""
    from dataclasses import asdict

    return version_of(filtered_version, DEDUP_VIEW, asdict(minhash_spec()))


def _signature_key(source: str, filtered_version: str) -> str:
    return f"{MINHASH}/{source}/{_signature_version(filtered_version)}.tar.gz"


def _local_signature_version(out_dir) -> str | None:
    path = out_dir / SIGNATURE_VERSION_FILE
    return path.read_text().strip() if path.is_file() else None


def _signature_folder(curation: CurationSettings, source: str, signature_version: str) -> Path:
    """``<work>/minhash/<source>/<signature version>``: written once, complete, never replaced, so
    a run reading it cannot see another run rewrite it."""
    return curation.work_path("minhash", source) / signature_version


def _publish_signatures(built: Path, final: Path) -> None:
    """Move a complete signature folder into its place; one already there holds the same
    signatures (same version) and may be being read, so it is kept and ``built`` is dropped."""
    try:
        built.rename(final)
    except OSError:
        if _local_signature_version(final) is None:  # not a published folder: something else is in the way
            raise
        shutil.rmtree(built, ignore_errors=True)


def signature_dir(store, curation: CurationSettings, source: str) -> Path:
    """The local signature folder of a source's current filtered rows and MinHash geometry,
    restored from the object store when this machine does not hold it yet."""
    from .minhash import MANIFEST

    latest = read_pointer(store, "filtered", source)  # the version only: rows are not needed here
    wanted = _signature_version(latest["version"])
    out_dir = _signature_folder(curation, source, wanted)
    if (out_dir / MANIFEST).is_file() and _local_signature_version(out_dir) == wanted:
        return out_dir
    # extracted beside its place in a folder of this call's own, then moved in whole
    tmp = Path(tempfile.mkdtemp(prefix=".restore-", dir=out_dir.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(store.get_bytes(_signature_key(source, latest["version"]))),
                          mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        if _local_signature_version(tmp / source) != wanted:
            raise RuntimeError(f"signature backup {_signature_key(source, latest['version'])} does not hold "
                               f"signature version {wanted}")
        _publish_signatures(tmp / source, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


# Steps that read or decide across every source: one at a time on an instance (the instance's
# pool limit, cli.INSTANCE_YAML), so a second run's step waits for the first to finish.
CROSS_SOURCE_POOL = "cross_source"


def _run_has_ended(instance, run_id: str) -> bool:
    run = instance.get_run_by_id(run_id)
    return run is not None and run.is_finished


@contextmanager
def run_step_scratch(context, curation: CurationSettings, step: str):
    """A scratch folder of this run's ``step`` (runtime/step_scratch.py), after removing the
    scratch of runs the instance reports as ended (killed before they could clean up). A step
    invoked directly (no run) gets a folder of its own invocation."""
    root = curation.work_path("scratch")
    try:
        run_id = context.run.run_id
    except DagsterError:  # invoked directly: no run, no instance to ask
        run_id = f"direct-{uuid.uuid4().hex}"
    else:
        sweep_ended_runs(root, lambda other: other != run_id and _run_has_ended(context.instance, other))
    with step_scratch(root, run_id, step) as folder:
        yield folder


@asset(group_name="curation", code_version=code_version_of("dedup_decisions"), deps=[filtered_rows, minhash_signatures],
       kinds={"datatrove"}, pool=CROSS_SOURCE_POOL)
@holds_pool_slot
def dedup_decisions(context: AssetExecutionContext, object_store: ObjectStoreResource,
                    curation: CurationSettings) -> MaterializeResult:
    """Exact (SHA-256) and near (MinHash + true Jaccard >= 0.7) duplicates across all sources, on
    each row's user, assistant and tool turns (system prompts and tool schemas left out)."""
    from .dedup_sharded import cross_source_dedup

    store = object_store.get_store()
    priority = CATALOG.names  # catalog order decides which twin is kept

    def read_texts(source: str):
        # one source's rows at a time: the step never holds the whole corpus
        _, rows = read_step(store, "filtered", source)
        return ((r["id"], dedup_text(r)) for r in rows)

    sig_dirs = {s: signature_dir(store, curation, s) for s in priority}
    with run_step_scratch(context, curation, "dedup_decisions") as scratch:
        outcome = cross_source_dedup(priority, read_texts, sig_dirs, scratch,
                                     threshold=CURATION.minhash.threshold, workers=curation.workers)
    decisions = outcome.decisions
    per_source: Counter[str] = Counter(k.split("\t")[0] for k in decisions)
    by_reason: Counter[str] = Counter(v["reason"] for v in decisions.values())
    cross = sum(1 for k, v in decisions.items() if k.split("\t")[0] != v["kept"][0])
    version = version_of(sorted(decisions.items()), DEDUP_VIEW)
    key = f"{DEDUP}/{version}.json"
    store.put_bytes(key, json.dumps(decisions).encode())
    store.put_bytes(pointer(DEDUP), json.dumps({"version": version, "key": key}).encode())
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={"docs": outcome.stats["docs"], "dropped": len(decisions), "cross_source_duplicates": cross,
                  "dropped_by_reason": MetadataValue.md(counts_table(by_reason)),
                  "dropped_by_source": MetadataValue.md(counts_table(per_source, "source")),
                  **_plots({"dropped_by_source_plot": bar_plot(
                      per_source, "Duplicates dropped, by source (the catalog's first twin is kept)")}),
                  "near_dup_stats": MetadataValue.json(outcome.stats["near"])},
    )


@asset(group_name="curation", code_version=code_version_of("benchmark_ngram_index"), kinds={"numpy"})
def benchmark_ngram_index(context: AssetExecutionContext, object_store: ObjectStoreResource,
                          curation: CurationSettings) -> MaterializeResult:
    """13-gram index of HumanEval(+), MBPP(+), LiveCodeBench, SWE-bench Lite and BFCL questions."""
    from .benchmark_refs import load_benchmarks
    from .decontam import BenchmarkIndex

    cfg = CURATION.decontamination
    names = list(cfg.benchmarks)
    online_lcb = curation.livecodebench_source == "hf" and "livecodebench" in names
    if online_lcb:
        names.remove("livecodebench")
    items, manifest = load_benchmarks(curation.benchmarks_path(), names, on_missing="error")
    if online_lcb:
        from .lcb_online import REPO, load_livecodebench_items

        lcb = load_livecodebench_items("release_v6")
        items += lcb
        manifest["livecodebench"] = {"present": True, "items": len(lcb), "source": f"hf://{REPO} release_v6"}
    index = BenchmarkIndex.build(items, n=cfg.n)
    if cfg.canonical is not None:  # the second index, over renamed-proof canonical code
        from .benchmark_refs import load_code_parts
        from .decontam_canonical import CanonicalIndex, CanonicalParams

        index.canonical = CanonicalIndex.build(
            load_code_parts(curation.benchmarks_path(), cfg.canonical.benchmarks),
            CanonicalParams(**cfg.canonical.model_dump(exclude={"benchmarks"})))
    data = index.to_bytes()
    version = version_of(cfg.model_dump(), manifest)
    key = f"{BENCHMARK_INDEX}/{version}.bin"
    store = object_store.get_store()
    store.put_bytes(key, data)
    store.put_bytes(pointer(BENCHMARK_INDEX), json.dumps({"version": version, "key": key}).encode())
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={"n": cfg.n, "items": len(items), "bytes": len(data),
                  "benchmarks": MetadataValue.json(manifest), "uri": store.uri(key),
                  **({"canonical_index": MetadataValue.json(index.canonical.meta)} if index.canonical else {})},
    )


@asset(group_name="curation", partitions_def=source_partitions, code_version=code_version_of("curated_rows"),
       deps=[filtered_rows, dedup_decisions, benchmark_ngram_index], kinds={"parquet"})
def curated_rows(context: AssetExecutionContext, object_store: ObjectStoreResource,
                 curation: CurationSettings) -> MaterializeResult:
    """One source after cross-source dedup and benchmark decontamination: training-ready rows."""
    from .decontam import BenchmarkIndex, Decontaminator

    store = object_store.get_store()
    source = context.partition_key
    latest, rows = read_step(store, "filtered", source)
    dedup_ptr = json.loads(store.get_bytes(pointer(DEDUP)))
    decisions = json.loads(store.get_bytes(dedup_ptr["key"]))
    idx_ptr = json.loads(store.get_bytes(pointer(BENCHMARK_INDEX)))
    decont = Decontaminator(BenchmarkIndex.from_bytes(store.get_bytes(idx_ptr["key"])),
                            min_matches=CURATION.decontamination.min_matches)
    # Decontamination depends only on this source's rows and the index: cache it, so a change
    # in another source (which re-runs this asset for its new dedup decisions) costs no re-scan.
    cache_key = f"{DECONTAM}/{source}/{latest['version']}-{idx_ptr['version']}-{DECONTAM_CODE_VERSION}.json"
    if store.exists(cache_key):
        matches = json.loads(store.get_bytes(cache_key))
    else:
        matches = {}
        found = decont.check_many([row_text(r) for r in rows], workers=curation.workers,
                                  chunk_size=curation.chunk_rows)
        for row, m in zip(rows, found):
            if m:
                matches[row["id"]] = {"benchmark": m.benchmark, "item_id": m.item_id, "reason": m.reason,
                                      "longest_match_tokens": m.longest_match_tokens,
                                      "matched_ngrams": m.matched_ngrams}
        store.put_bytes(cache_key, json.dumps(matches).encode())
    reasons: Counter[str] = Counter()
    kept, dropped, matched = [], [], []
    for row in rows:
        d = decisions.get(f"{source}\t{row['id']}")
        if d:
            reasons[d["reason"]] += 1
            dropped.append({"id": row["id"], "reason": d["reason"], "detail": json.dumps(d)})
            continue
        m = matches.get(row["id"])
        if m:
            reasons[m["reason"]] += 1
            dropped.append({"id": row["id"], "reason": m["reason"], "detail": json.dumps(m)})
            matched.append({"row": row["id"], **m})
            continue
        kept.append(row)
    version = version_of(latest["version"], dedup_ptr["version"], idx_ptr["version"])
    write_step(store, "curated", source, version, kept, dropped, summary={"dropped": dict(reasons)})
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={"rows_in": len(rows), "rows_kept": len(kept), "rows_dropped": len(dropped),
                  "dropped_by_reason": MetadataValue.md(counts_table(reasons)),
                  "counts": MetadataValue.json(dict(reasons)),
                  "decontaminated": MetadataValue.json(matched[:50]),
                  **_funnel_metadata(store, source, len(rows), len(kept)),
                  **({"dropped_by_reason_plot": MetadataValue.md(plot)} if (plot := bar_plot(
                      reasons, f"Rows dropped by dedup and decontamination, by reason: {source}")) else {})},
    )


def _plots(plots: dict) -> dict:
    """The plots that have something to show, as Markdown metadata (a plot of nothing is left out)."""
    return {k: MetadataValue.md(v) for k, v in plots.items() if v}


def _funnel_metadata(store, source: str, filtered: int, curated: int) -> dict:
    """Rows of one source after each step, from the steps' pointers: numbers (the Plots tab trends
    them) and the funnel plot, so mirrored-to-curated reads on one page."""
    steps: dict[str, int] = {}
    if store.exists(normalized_pointer(source)):
        norm = json.loads(store.get_bytes(normalized_pointer(source)))
        steps.update({"mirrored": int(norm["rows_in"]), "normalized": int(norm["rows_out"])})
    if store.exists(step_pointer("sanitized", source)):
        steps["sanitized"] = int(read_pointer(store, "sanitized", source)["rows"])
    steps.update({"filtered": filtered, "curated": curated})
    meta: dict = {f"rows_{step}": MetadataValue.int(n) for step, n in steps.items()}
    plot = funnel_plot(steps, f"Rows per curation step: {source}")
    if plot:
        meta["funnel_plot"] = MetadataValue.md(plot)
    return meta


def _filter_plots(source: str, reasons: Counter, edu_meta: dict, edu_threshold: float) -> dict:
    """The filter's drop reasons and edu-score histogram as plots, the scored rows as a number."""
    meta: dict = {"edu_rows_checked": MetadataValue.int(int(edu_meta.get("rows_checked", 0)))}
    drops = bar_plot(reasons, f"Rows dropped by the quality filters, by reason: {source}")
    if drops:
        meta["dropped_by_reason_plot"] = MetadataValue.md(drops)
    from .quality.edu_classifier import SCORE_BIN

    hist = histogram_plot(edu_meta.get("score_histogram") or {},
                          f"Edu scores, rows per half point (left of the line: dropped): {source}",
                          xlabel="edu score (row mean over its scored blocks)", threshold=edu_threshold,
                          threshold_label="edu_threshold", bin_width=SCORE_BIN)
    if hist:
        meta["edu_score_plot"] = MetadataValue.md(hist)
    return meta


def _members(name: str) -> list[str]:
    """The catalog sources of a mixture, in catalog order."""
    cfg = CURATION.mixtures[name]
    return [s.name for s in CATALOG.sources if s.family in cfg.families or s.name in cfg.sources]


def _mixture_asset(name: str):
    cfg = CURATION.mixtures[name]
    members = _members(name)

    @asset(name=f"{name}_mixture", group_name="curation", code_version=code_version_of("_mixture_asset"),
           deps=[curated_rows, *[AssetKey(curated_synth_asset(k)) for k in cfg.synth]],
           kinds={"jsonl"},
           description=f"The {name.replace('_', ' ')} stage dataset, backed up to the object store; "
                       f"{hub_asset_name(name)} pushes it to the hub as {cfg.hub_repo} (private) once "
                       f"its checks pass.")
    def _mixture(context: AssetExecutionContext, object_store: ObjectStoreResource,
                 hub: HubResource) -> MaterializeResult:
        from .mixtures import build_mixture, dataset_card, write_mixture

        store = object_store.get_store()
        rows_by_source, steps, sources_meta = {}, {}, {}
        for s in members:
            rows_by_source[s] = _rows_when_read(store, "curated", s)  # one source in memory at a time
            spec = CATALOG.by_name(s)
            rev = json.loads(store.get_bytes(raw_pointer(s)))["revision"]
            sources_meta[s] = {"hf_id": spec.hf_id, "revision": rev}
            steps[s] = _step_counts(store, s)
        for synth_name in cfg.synth:
            # synthesized sets arrive curated (sanitized, deduplicated, decontaminated)
            latest = read_pointer(store, SYNTH_STEP, synth_name)
            rows_by_source[synth_name] = _rows_when_read(store, SYNTH_STEP, synth_name)
            sources_meta[synth_name] = {"hf_id": "(synthesized)", "revision": latest["version"]}
            steps[synth_name] = {"curated_kept": latest["rows"],
                                 **(latest.get("summary") or {}).get("dropped", {})}
        build = build_mixture(name, cfg.kind, rows_by_source, cfg.caps)
        client = hub.get_client()
        repo_id = f"{client.org}/{cfg.hub_repo}"
        card = dataset_card(build, repo_id, sources_meta, steps, CURATION_VERSION)
        key = write_mixture(store, build, card)
        limit = CURATION.checks_for(name).max_source_share
        shares = {s: n / build.n_rows for s, n in build.by_source.items()} if build.n_rows else {}
        plot = bar_plot(shares, f"{name} mixture: share of rows by source (the source_shares check: at most "
                                f"max_source_share{', exempt with one member' if len(members) + len(cfg.synth) == 1 else ''})",
                        xlabel="share of rows", limit=limit, limit_label="max_source_share", percent=True)
        return MaterializeResult(
            data_version=DataVersion(build.data_version),
            metadata={**({"source_shares_plot": MetadataValue.md(plot)} if plot else {}),
                      "max_source_share": MetadataValue.float(limit),
                      "largest_source_share": MetadataValue.float(round(max(shares.values(), default=0.0), 4)),
                      "rows": build.n_rows,
                      "rows_by_source": MetadataValue.md(counts_table(build.by_source, "source")),
                      "composition": MetadataValue.json(build.by_source),
                      "capped": MetadataValue.json(build.capped),
                      # pairs the trainer would cut wrong (checks.dpo_cut_problem), by source/id
                      "dropped_unreadable": MetadataValue.json(build.dropped),
                      "backup_uri": store.uri(key), "kind": cfg.kind},
        )

    return _mixture


def _rows_when_read(store, step: str, source: str):
    """One step's rows of one source, read when the generator is first advanced."""
    yield from read_step(store, step, source)[1]


# The checks on every mixture (validators in checks.py), evaluated on the backed-up version the
# pointer names. Blocking, severity ERROR: in a run holding the mixture and its push, a failed
# check skips the push. Dagster blocks only inside one run, and runs are often split (`make run`
# plans a run per group of assets, a backfill a run per step), so each check op also stores its
# verdict beside the version (mixtures.record_gate) and the push asset refuses a version without
# a passing one.
MIXTURE_CHECKS = {
    "schema": "Every row has the mixture format of its kind: id, source, messages of {role, content} "
              "(system/user/assistant/tool); DPO rows also chosen/rejected assistant messages.",
    "trainable_rows": "Every SFT row has a non-empty assistant turn; every DPO row a non-empty chosen answer.",
    "row_count": "The mixture is not empty and lost at most max_row_drop of the previous version's rows.",
    "source_shares": "No source above max_source_share (unless the mixture has one member); no member "
                     "that had rows in the previous version at 0 rows.",
    "no_canaries": "No row holds a canary of the no-leak manifest (canary.CANARY_KEY).",
}


def _canary_hits(store):
    """The canary scanner's ``hits(text)``, or None before eval_canaries planted any."""
    from ..canary import CANARY_KEY, CanaryManifest, CanaryScanner

    if not store.exists(CANARY_KEY):
        return None
    return CanaryScanner(CanaryManifest.from_json(store.get_bytes(CANARY_KEY))).hits


def _check_metadata(meta: dict) -> dict:
    return {k: MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in meta.items()}


def _mixture_checks(name: str):
    cfg = CURATION.mixtures[name]
    bounds = CURATION.checks_for(name)
    members = [*_members(name), *cfg.synth]
    key = AssetKey(f"{name}_mixture")

    # One op for the five checks: the rows are read once (from one local copy) for all of them.
    @multi_asset_check(name=f"{name}_mixture_checks",
                       specs=[AssetCheckSpec(c, asset=key, blocking=True, description=d)
                              for c, d in MIXTURE_CHECKS.items()])
    def _checks(context: AssetCheckExecutionContext, object_store: ObjectStoreResource):
        from . import checks
        from .mixtures import local_rows, read_latest, record_gate

        store = object_store.get_store()
        latest = read_latest(store, name)
        if latest is None:
            raise Failure(f"mixture {name} has no pointer ({mixture_pointer(name)}) to check")
        previous = latest.get("previous") or {}
        with local_rows(store, latest["key"]) as rows:
            outcomes = {"schema": checks.check_schema(rows(), cfg.kind),
                        "trainable_rows": checks.check_turns(rows(), cfg.kind),
                        "no_canaries": checks.check_canaries(rows(), _canary_hits(store))}
        outcomes["row_count"] = checks.check_row_count(latest["rows"], previous.get("rows"), bounds.max_row_drop)
        outcomes["source_shares"] = checks.check_source_shares(latest.get("by_source") or {}, members,
                                                               previous.get("by_source"), bounds.max_source_share)
        version = latest["data_version"]
        record_gate(store, name, version, "curation",
                    {c: {"passed": o.passed, "description": o.description} for c, o in outcomes.items()})
        for c in MIXTURE_CHECKS:
            o = outcomes[c]
            if not o.passed:
                context.log.error(f"{name} mixture {version}: {c} failed: {o.description}")
            yield AssetCheckResult(asset_key=key, check_name=c, passed=o.passed,
                                   severity=AssetCheckSeverity.ERROR, description=o.description,
                                   metadata={"data_version": version, **_check_metadata(o.metadata)})

    return _checks


def _mixture_hub_asset(name: str):
    cfg = CURATION.mixtures[name]

    # mixture_views holds the token-length check: counting tokens needs the base model's tokenizer,
    # which lives in the training group and which curation never imports (a characters/2 estimate
    # here would be an upper bound that flags rows the tokenizer keeps). Depending on it makes the
    # push wait for that check too.
    @asset(name=hub_asset_name(name), group_name="curation", code_version=code_version_of("_mixture_hub_asset"),
           deps=[AssetKey(f"{name}_mixture"), AssetKey(MIXTURE_VIEWS)], kinds={"huggingface"}, retry_policy=HUB_PUSH_RETRY,
           description=f"The {name}_mixture version its pointer names, pushed to the hub as "
                       f"{cfg.hub_repo} (private) with its dataset card, once its checks and the "
                       f"token-length check on mixture_views passed.")
    def _push(context: AssetExecutionContext, object_store: ObjectStoreResource,
              hub: HubResource) -> MaterializeResult:
        from .mixtures import PUSH_GATES, read_latest, unpassed_gates

        store = object_store.get_store()
        latest = read_latest(store, name)
        if latest is None:
            raise Failure(f"mixture {name} has not been built (no {mixture_pointer(name)})",
                          allow_retries=False)  # a refusal: a step retry would refuse again
        version = latest["data_version"]
        blocked = unpassed_gates(store, name, version)
        if blocked:
            raise Failure(f"{name} mixture {version} not pushed: "
                          + "; ".join(f"{g}: {why}" for g, why in blocked.items()),
                          metadata={"data_version": version, "blocked_by": MetadataValue.json(blocked)},
                          allow_retries=False)
        # The exact backed-up bytes and card, so the Hub holds what the checks read.
        files = {"data/train.jsonl": store.get_bytes(latest["key"]),
                 "README.md": store.get_bytes(mixture_version_prefix(name, version) + "README.md")}
        uri = hub.get_client().push_files("dataset", cfg.hub_repo, files, f"{name} mixture {version}")
        return MaterializeResult(
            data_version=DataVersion(version),
            metadata={"hub_uri": uri, "data_version": version, "rows": latest["rows"],
                      "backup_uri": store.uri(latest["key"]), "gates": MetadataValue.json(list(PUSH_GATES))},
        )

    return _push


def _step_counts(store, source: str) -> dict[str, int]:
    """Rows kept/dropped per step for a source, for the dataset card and lineage reports."""
    out: dict[str, int] = {}
    for step in ("filtered", "curated"):
        latest = read_pointer(store, step, source)
        out[f"{step}_kept"] = latest["rows"]
        for reason, n in (latest.get("summary") or {}).get("dropped", {}).items():
            out[reason] = n
    return out


MIXTURE_ASSETS = [_mixture_asset(n) for n in CURATION.mixtures]
MIXTURE_HUB_ASSETS = [_mixture_hub_asset(n) for n in CURATION.mixtures]
CURATION_ASSETS = [sanitized_rows, filtered_rows, minhash_signatures, dedup_decisions,
                   benchmark_ngram_index, curated_rows, *MIXTURE_ASSETS, *MIXTURE_HUB_ASSETS]
CURATION_CHECKS = [_mixture_checks(n) for n in CURATION.mixtures]
