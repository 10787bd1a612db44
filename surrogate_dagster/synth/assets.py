"""Synth group: scenarios -> orchestrator traces (batched partitions), and execution-graded pairs.

    synth_scenarios -> orchestrator_traces[batch-000 .. batch-NNN]  -> agent SFT mixture
    curated_rows[exec_pairs.sources] + stage1_6_checkpoint -> exec_graded_pairs -> code DPO mixture

Partitions: the catalog's target (assets/synth.yaml: 500 scenarios / 25 per batch = 20 batches),
the same on every profile, so the graph, run history and backfills do not change between
deployments and batch-007 is the same 25 scenarios wherever it runs. A profile with a smaller
target (local: 50) fills the first batches; a partition past its scenarios materializes an
empty, clearly labelled result and pays nothing, rather than failing.

Money: every LLM call goes through one client per batch (cache in the object store, so a re-run
pays nothing for replies it already has; retries, breaker, ledger). Each request's spend is
recorded under llm-spend/ before it is sent and settled in the cache write of its reply; each
attempt's ledger summary is recorded under llm-ledger/ when it ends, and the budget guard of the
next batch counts all of them, the records of a killed attempt included (``spent_in_store``).
The assets share the pool "llm" so batches do not race the guard.
"""


import json
import time
from collections import Counter

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
)

from ..catalog.keys import AGENT_CHECKPOINT, SMOKE_GATE
from ..curation.assets import curated_rows
from ..llm.ledger import BudgetExceeded, record_batch_spend, spent_in_store
from ..metadata import counts_table
from ..scrub import scrub_value
from ..resources import ObjectStoreResource
from ..runtime.host_pools import holds_pool_slot
from ..retries import LLM_RETRY
from ..storage.layout import pointer, trace_batch_folder
from ..catalog.code_version import function_code_version
from ..runtime.smoke_gate import require_smoke_gate
from .config import (
    PAIRS_PREFIX,
    SCENARIOS_LEDGER_KEY,
    SCENARIOS_PREFIX,
    content_version,
    ledger_keys,
    load_exec_graded_pairs,
    load_orchestrator_traces,
    load_scenarios,
    read_pointer,
    read_table,
    synth_catalog,
    trace_batch_keys,
    write_table_set,
)
from .resource import LLMResource, SynthSettings, synth_resources

CATALOG = synth_catalog()  # validated at import: a broken synth.yaml fails definitions loading
SYNTH_CONFIG = content_version(CATALOG)
BATCH_KEYS = trace_batch_keys(CATALOG)
BATCH_SIZE = int(CATALOG["batch_size"])
batch_partitions = StaticPartitionsDefinition(BATCH_KEYS)
CHECKPOINT_KEY = AssetKey(AGENT_CHECKPOINT)  # runbook: pairs are sampled from the agent checkpoint
LLM_POOL = "llm"


def _attempt_id(context: AssetExecutionContext) -> str:
    # A step retry inside one run is another attempt: it must not overwrite the first one's spend.
    return f"{context.run_id}/{context.retry_number}"


def _backend(llm: LLMResource) -> str:
    if llm.is_local_standin:
        return "local stand-in model (NOT Claude; llm/standin.py)"
    return llm.base_url or "anthropic"


def _ledger_metadata(summary: dict) -> dict:
    return {"ledger": MetadataValue.json(summary), "batch_usd": summary["batch_usd"],
            "spent_total_usd": summary["spent_total_usd"], "budget_usd": summary["budget_usd"],
            "input_tokens": summary["input_tokens"], "output_tokens": summary["output_tokens"],
            "llm_calls": summary["counts"].get("calls", 0), "cache_hits": summary["counts"].get("cache_hits", 0)}


def _md_cell(text: object, limit: int = 160) -> str:
    s = " ".join(str(text).split())
    return (s[:limit] + "…" if len(s) > limit else s).replace("|", "\\|")


@asset(group_name="synth", code_version=function_code_version(__name__, "synth_scenarios", config=SYNTH_CONFIG), kinds={"anthropic", "parquet"}, pool=LLM_POOL, retry_policy=LLM_RETRY)
@holds_pool_slot
def synth_scenarios(context: AssetExecutionContext, object_store: ObjectStoreResource, llm: LLMResource,
                    synth: SynthSettings) -> MaterializeResult:
    """Startup-engineering tasks: the catalog's seeds expanded by the LLM to the profile's target,
    deduplicated (exact + word 3-gram Jaccard), each tagged parallel (3+ independent steps) and
    irreversible."""
    from .scenarios import expand_scenarios

    store = object_store.get_store()
    cfg = synth.profile()
    client = llm.make_client(cache_store=store, spent_before_usd=spent_in_store(store, ledger_keys(CATALOG)),
                             spend_batch=SCENARIOS_LEDGER_KEY, spend_attempt=_attempt_id(context))
    try:
        scenarios, summary = expand_scenarios(
            client, CATALOG["seeds"], target=cfg.target_count, per_request=int(CATALOG.get("per_request", 25)),
            dedup_threshold=float(CATALOG.get("dedup_jaccard", 0.6)),
            batch_runner=llm.make_batch_runner(client, store), batch_job="scenarios")
    except BudgetExceeded as exc:
        raise Failure(description=f"scenario expansion stopped by the budget guard: {exc}",
                      metadata=_ledger_metadata(client.ledger.summary()),
                      allow_retries=False) from exc  # the budget is spent: a retry would stop again
    finally:
        record_batch_spend(store, SCENARIOS_LEDGER_KEY, _attempt_id(context), client.ledger.summary())
    if len(scenarios) > cfg.target_count:  # the seeds alone exceed a small (local) target
        summary["dropped_by_reason"]["seed_over_target"] = len(scenarios) - cfg.target_count
        scenarios = scenarios[: cfg.target_count]
        summary["scenarios"] = len(scenarios)
        summary["seeds"] = sum(s["origin"] == "seed" for s in scenarios)
        summary["parallel"] = sum(s["parallel"] for s in scenarios)
        summary["irreversible"] = sum(s["irreversible"] for s in scenarios)
    if summary["shortfall"]:
        context.log.warning(f"only {len(scenarios)} of {cfg.target_count} scenarios after {summary['rounds']} rounds")
    version = content_version(scenarios)
    write_table_set(store, SCENARIOS_PREFIX, version, {"scenarios": scenarios},
                    {"target": cfg.target_count, "summary": {k: v for k, v in summary.items() if k != "ledger"}})
    drops = summary["dropped_by_reason"]
    n_batches = -(-len(scenarios) // BATCH_SIZE)
    lines = ["| id | task | steps | parallel | irreversible | origin |", "|---|---|---:|---|---|---|"]
    for s in scenarios[:: max(1, len(scenarios) // max(1, cfg.sample_rows))][: cfg.sample_rows]:
        lines.append(f"| {s['id']} | {_md_cell(s['task'])} | {s['independent_steps']} | {s['parallel']} | "
                     f"{s['irreversible']} | {s['origin']} |")
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={
            "scenarios": len(scenarios), "target": cfg.target_count, "shortfall": summary["shortfall"],
            "seeds": summary["seeds"], "generated": len(scenarios) - summary["seeds"], "rounds": summary["rounds"],
            "parallel_3plus_steps": summary["parallel"], "irreversible": summary["irreversible"],
            "dedup_drops": sum(v for k, v in drops.items() if k.endswith("duplicate")),
            "dropped_by_reason": MetadataValue.md(counts_table(drops, "reason", "items")),
            "batches_filled": f"{n_batches} of {len(BATCH_KEYS)} ({', '.join(BATCH_KEYS[:n_batches])}"
                              f"{'' if n_batches == len(BATCH_KEYS) else '; the rest materialize empty'})",
            "sample": MetadataValue.md("\n".join(lines)), "backend": _backend(llm),
            "uri": store.uri(pointer(SCENARIOS_PREFIX)), **_ledger_metadata(summary["ledger"]),
        },
    )


def _trace_markdown(row: dict, header: str, max_chars: int = 1200) -> str:
    """One trace as Markdown (the fixed system prompt left out), long turns cut in the middle."""
    out = [f"### {header}"]
    for m in row["messages"][1:]:
        text = m["content"]
        if len(text) > max_chars:
            text = text[: max_chars // 2] + "\n[... cut ...]\n" + text[-max_chars // 2:]
        out += [f"**{m['role']}**", "````", text.replace("````", "```"), "````"]  # 4-tick fence holds ``` blocks
    return "\n".join(out)


def _latest_rejections(rejected: list[dict]) -> list[dict]:
    """Each scenario's last rejection (the trace kept under its id is that attempt's)."""
    last: dict[str, dict] = {}
    for r in rejected:
        last[r["scenario_id"]] = r
    return list(last.values())


def _samples_markdown(kept: list[dict], rejected: list[dict], traces: dict[str, dict], n: int) -> str:
    parts = []

    def tag(row: dict) -> str:
        t = json.loads(row["meta"])["tags"]
        return "irreversible" if t["irreversible"] else "parallel" if t["parallel"] else "sequential"

    # one kept trace per kind of decision first (parallel, sequential, irreversible), then the rest
    firsts = {tag(r): r["id"] for r in reversed(kept)}
    kept = sorted(kept, key=lambda r: r["id"] not in firsts.values())
    for row in kept[:n]:
        meta = json.loads(row["meta"])
        verdicts = "; ".join(f"{v['model']}: accept, score {v.get('score')}" for v in meta["validation"]["verdicts"])
        parts.append(_trace_markdown(row, f"KEPT {row['id']}: {_md_cell(meta['task'], 120)}\n\n{verdicts}"))
    for rej in [r for r in rejected if r["id"] in traces][:n]:
        parts.append(_trace_markdown(traces[rej["id"]], f"REJECTED ({rej['stage']}) {rej['id']}: "
                                                        f"{_md_cell('; '.join(rej['reasons']), 300)}"))
    return "\n\n".join(parts) or "_no traces in this batch_"


def _projection(llm: LLMResource, spent_usd: float, client=None, recorder=None) -> dict:
    """The catalog's measured token profile priced with this deployment's models and prices; with a
    key (any endpoint but the local stand-in) and the requests this batch rendered, its input
    tokens re-measured with the Messages API's count_tokens (projection.project_counted)."""
    from .projection import project_counted

    kw = dict(models=dict(llm.models), prices={m: dict(p) for m, p in llm.prices_per_mtok.items()},
              budget_usd=llm.budget_usd, spent_usd=spent_usd)
    profile = CATALOG["traces"]["measured_tokens_per_trace"]
    if client is None or recorder is None or llm.is_local_standin:
        return project_counted(profile, **kw)
    try:
        return project_counted(profile, sdk=client.sdk, requests=recorder.requests, **kw)
    except Exception as exc:  # noqa: BLE001 - a failed count leaves the stand-in's projection, saying why
        return {**project_counted(profile, **kw), "count_tokens_error": client.scrub_text(str(exc))[:300]}


@asset(group_name="synth", partitions_def=batch_partitions, code_version=function_code_version(__name__, "orchestrator_traces", config=SYNTH_CONFIG), deps=[synth_scenarios],
       kinds={"anthropic", "parquet"}, pool=LLM_POOL, retry_policy=LLM_RETRY)
@holds_pool_slot
def orchestrator_traces(context: AssetExecutionContext, object_store: ObjectStoreResource, llm: LLMResource,
                        synth: SynthSettings) -> MaterializeResult:
    """One batch of orchestrator -> subagent traces (plan, parallel subagents, aggregate) in ChatML
    with Hermes tool calls, kept only when both judges accept. Rejected or failed scenarios are
    sampled again; scenarios that run out of attempts are replaced by fresh ones from the scenario
    writer (ids hashed from the writer's request, so a re-run hits the cache), until the batch has
    as many accepted traces as scenarios, the budget guard stops it or the cap on fresh scenarios is
    reached (``stop_reason``); every rejection is stored with its reasons. The cost
    projection (per trace, and how many traces the budget buys) is computed before the run."""
    from .orchestrator import BatchFailed
    from .projection import RequestRecorder, measure_profile
    from .scenarios import FreshScenarios
    from .volume import synthesize_until_accepted

    batch = context.partition_key
    store = object_store.get_store()
    cfg = synth.profile()
    sptr, scenarios = load_scenarios(store)
    index = BATCH_KEYS.index(batch)
    part = scenarios[index * BATCH_SIZE:(index + 1) * BATCH_SIZE]
    prefix = trace_batch_folder(batch)
    if not part:
        last = BATCH_KEYS[max(0, -(-len(scenarios) // BATCH_SIZE) - 1)]
        note = (f"EMPTY BATCH: the scenario set has {len(scenarios)} scenarios (this profile's target is "
                f"{sptr['target']}), which fill batches up to {last}; {batch} has none. "
                "Nothing was synthesized or paid.")
        write_table_set(store, prefix, content_version("empty", sptr["version"]), {"rows": [], "rejected": []},
                        {"batch": batch, "scenarios_version": sptr["version"], "empty": True, "note": note})
        context.log.info(note)
        return MaterializeResult(data_version=DataVersion(f"empty-{sptr['version']}"),
                                 metadata={"status": "empty: beyond this profile's scenario target", "note": note,
                                           "scenarios": 0, "kept": 0, "rejected": 0, "batch_usd": 0.0})
    spent_before = spent_in_store(store, ledger_keys(CATALOG))
    projection = _projection(llm, spent_before)
    context.log.info(f"projection: ${projection['projected_cost_per_trace_usd']:.4f} per accepted trace; the "
                     f"${projection['budget_left_usd']:.2f} left buys {projection['traces_the_budget_buys']} traces")
    client = llm.make_client(cache_store=store, spent_before_usd=spent_before, spend_batch=batch,
                             spend_attempt=_attempt_id(context))
    recorder = RequestRecorder(client)  # a few of the real requests per call kind, for count_tokens
    runner = llm.make_batch_runner(client, store)
    fresh = FreshScenarios(client, CATALOG["seeds"], [s["task"] for s in scenarios], batch_key=batch,
                           dedup_threshold=float(CATALOG.get("dedup_jaccard", 0.6)), batch_runner=runner)
    try:
        res = synthesize_until_accepted(
            client, part, target=len(part), batch_key=batch, max_turns=int(CATALOG.get("max_planner_turns", 8)),
            max_attempts_per_scenario=int(CATALOG["traces"]["max_attempts_per_scenario"]),
            n_samples=cfg.sample_traces, batch_runner=runner, fresh=fresh,
            max_fresh_scenarios=int(CATALOG["traces"]["max_fresh_scenarios_per_batch"]))
    except BatchFailed as exc:
        raise Failure(description=f"{exc}. Re-run this partition alone: the replies already received are "
                                  "cached and cost nothing again.",
                      metadata={"how_far": exc.summary["how_far"],
                                **_ledger_metadata(client.ledger.summary())}) from exc
    finally:
        record_batch_spend(store, batch, _attempt_id(context), client.ledger.summary())
    by_scn = {s["id"]: s for s in part + res["fresh_scenarios"]}
    kept, rejected, traces, vol = res["kept"], res["rejections"], res["traces"], res["summary"]
    rejections = [{"id": r["id"], "scenario_id": r["scenario_id"], "task": by_scn[r["scenario_id"]]["task"],
                   "attempt": r["attempt"], "stage": r["stage"], "reasons": list(r["reasons"]),
                   "detail": r.get("detail") or json.dumps(r.get("verdicts", []), ensure_ascii=False),
                   "trace": json.dumps(traces[r["id"]]["messages"], ensure_ascii=False)
                   if r["stage"] != "synthesis" and r["id"] in traces else ""} for r in rejected]
    # An error row keeps what a server said and the reply it refused: no credential it echoed.
    rejections = scrub_value(rejections)
    by_reason = Counter(vol["rejected_by_reason"])
    stop = vol["stop_message"]
    ledger = client.ledger.summary()
    usage = client.usage_by_role()
    # this batch's own per-trace figures (fresh draws and rejected attempts included), to re-project with
    measured = measure_profile(usage, len(kept)) if kept else {}
    # re-measured with count_tokens when keyed, and only when this attempt paid for replies: a batch
    # served whole from the cache sends nothing (its counted projection is its first run's metadata)
    projection = _projection(llm, spent_before, client, recorder if ledger["batch_usd"] > 0 else None)
    version = content_version(sptr["version"], kept)
    volume_meta = {k: vol[k] for k in ("target", "accepted", "rejected_by_reason", "attempts", "rounds", "stop_reason",
                                       "fresh_scenarios_drawn", "fresh_draws", "max_fresh_scenarios",
                                       "fresh_dropped_by_reason")}
    write_table_set(store, prefix, version, {"rows": kept, "rejected": rejections,
                                             "fresh_scenarios": res["fresh_scenarios"]},
                    {"batch": batch, "scenarios_version": sptr["version"], "empty": False, "stop_message": stop,
                     "ledger": ledger, "volume": {**volume_meta, "by_round": vol["by_round"]},
                     "projection": projection, "usage_by_call_kind": usage, "measured_tokens_per_trace": measured})
    if stop:
        context.log.warning(stop)
    unaccepted = len(vol["scenarios_without_trace"])
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={
            "status": "stopped by the budget guard" if vol["stop_reason"] == "budget" else "complete",
            "target": vol["target"], "accepted": vol["accepted"], "attempts": vol["attempts"],
            "rounds": vol["rounds"], "stop_reason": vol["stop_reason"],
            "fresh_scenarios_drawn": vol["fresh_scenarios_drawn"], "fresh_draws": vol["fresh_draws"],
            "max_fresh_scenarios": vol["max_fresh_scenarios"],
            "volume": MetadataValue.json({**volume_meta, "by_round": vol["by_round"]}),
            "projected_cost_per_trace_usd": projection["projected_cost_per_trace_usd"],
            "traces_the_budget_buys": projection["traces_the_budget_buys"],
            "projection": MetadataValue.json(projection),
            "usage_by_call_kind": MetadataValue.json(usage),
            "measured_tokens_per_trace": MetadataValue.json(measured),
            "scenarios": len(part), "traces_synthesized": sum(r["synthesized"] for r in vol["by_round"]),
            "kept": len(kept), "rejected": unaccepted, "rejections": len(rejections), "unjudged": vol["unjudged"],
            "kept_by_tag": MetadataValue.json(dict(Counter(
                "parallel" if json.loads(r["meta"])["tags"]["parallel"] else
                "irreversible" if json.loads(r["meta"])["tags"]["irreversible"] else "sequential" for r in kept))),
            "rejected_by_reason": MetadataValue.md(counts_table(by_reason, "reason", "traces")),
            "judge_agreement": MetadataValue.json(vol["judge_agreement"]),
            "sample_traces": MetadataValue.md(_samples_markdown(kept, _latest_rejections(rejected), traces,
                                                                cfg.sample_traces)),
            "budget_stop": stop or "none", "how_far": vol["how_far"], "backend": _backend(llm),
            "uri": store.uri(pointer(prefix)), **_ledger_metadata(ledger),
        },
    )


def _pass_rate_plot(summary: dict) -> str:
    """Per task kind: score histogram and how many of the k samples passed, as a Markdown image."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..metadata import png_markdown

    by_kind = summary["by_kind"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
    k = summary["samples_per_prompt"]
    width = 0.8 / max(1, len(by_kind))
    for i, (kind, s) in enumerate(by_kind.items()):
        off = (i - (len(by_kind) - 1) / 2) * width  # groups centred on their tick
        bins = list(s["score_histogram"])
        a1.bar([x + off for x in range(len(bins))], [s["score_histogram"][b] for b in bins], width, label=kind)
        a2.bar([x + off for x in range(k + 1)],
               [s["passing_samples_per_prompt"].get(x, 0) for x in range(k + 1)], width, label=kind)
    a1.set_xticks(range(5), ["[0,.25)", "[.25,.5)", "[.5,.75)", "[.75,1)", "1.0"])
    a1.set_title("score of each sample")
    a1.set_ylabel("samples")
    a2.set_xticks(range(k + 1))
    a2.set_title(f"passing samples per prompt (of {k})")
    a2.set_ylabel("prompts")
    a1.legend(fontsize=7)
    md = png_markdown(fig)
    plt.close(fig)
    return md


def _ordered_table(counts: dict, key: str, value: str) -> str:
    """A Markdown table in the mapping's own order (histogram bins stay in bin order)."""
    return "\n".join([f"| {key} | {value} |", "|---|---:|", *(f"| {k} | {v} |" for k, v in counts.items())])


def _model_ref(store, synth: SynthSettings, cfg):
    from ..inference import ModelRef
    from ..paths import resolve_repo_path
    from .exec_pairs import checkpoint_model_ref

    if cfg.model_dir:  # an explicit model (a deployment without the checkpoint; tests)
        path = resolve_repo_path(cfg.model_dir)
        cfg_file = path / "config.json"
        rev = content_version(cfg_file.read_text()) if cfg_file.is_file() else ""
        return ModelRef(name=f"model_dir:{path.name}", model_dir=str(path), revision=rev)
    try:
        return checkpoint_model_ref(store, synth.work_path("checkpoints", CHECKPOINT_KEY.to_user_string()),
                                    asset=CHECKPOINT_KEY.to_user_string(), base_model_dir=cfg.base_model_dir)
    except FileNotFoundError as exc:
        raise Failure(description=f"{exc}: the pairs are sampled from it (or set phases.synth.model_dir)") from exc


@asset(group_name="synth", code_version=function_code_version(__name__, "exec_graded_pairs", config=SYNTH_CONFIG), kinds={"pytorch", "parquet"},
       # stage1_6_smoke_gate: sampled only after stage 1.6's smoke tests pass (evals' blocking check)
       deps=[AssetDep(curated_rows, partition_mapping=AllPartitionMapping()), CHECKPOINT_KEY,
             AssetKey(SMOKE_GATE)])
def exec_graded_pairs(context: AssetExecutionContext, object_store: ObjectStoreResource,
                      synth: SynthSettings) -> MaterializeResult:
    """DPO pairs from execution: the hardest prompts with tests (up to exec_pairs.max_prompts), k
    samples each (temperature 1.0, from the agent checkpoint), each graded in the sandbox
    (pytest-style asserts, stdin/stdout and call-based cases, semgrep, shellcheck, hadolint, Terraform/Kubernetes validators, checkov),
    several pairs per prompt with a real margin (passing vs failing tests first), near-identical
    and duplicate pairs dropped."""
    from ..curation.stage_io import read_step
    from .exec_pairs import (build_exec_pairs, devsecops_tasks, exec_pairs_catalog, known_pass_rates,
                             load_case_lookup, make_sampler, select_tasks, tasks_from_rows)
    from ..sandbox.iac import IacScanner
    from .graders import Grader

    require_smoke_gate(context, "exec_graded_pairs")  # runbook Day 14, re-read in a run of its own

    store = object_store.get_store()
    cfg = synth.profile()
    cat = exec_pairs_catalog(CATALOG)
    max_prompts = cfg.max_prompts or cat.max_prompts
    min_margin = cfg.min_margin if cfg.min_margin is not None else cat.min_margin
    max_pairs = cfg.max_pairs_per_prompt or cat.max_pairs_per_prompt
    prev = read_pointer(store, PAIRS_PREFIX)  # the previous run's grades: known pass rates
    known = known_pass_rates(read_table(store, prev, "grades")) if prev else {}
    tasks, dropped = [], Counter()
    # the catalog's prompt sources, each under its cap (and the profile's per-source cap)
    pair_sources = cfg.pair_sources or list(cat.sources)
    curated = {source: list(read_step(store, "curated", source)[1]) for source in pair_sources}
    lookup = load_case_lookup(store, cat, curated)
    for source, rows in curated.items():
        caps = [c for c in (cfg.max_prompts_per_source, cat.sources[source].cap if source in cat.sources else None) if c]
        t, d = tasks_from_rows(rows, source, min(caps) if caps else None, cfg.max_prompt_chars,
                               known=known, cfg=cat.difficulty, lookup=lookup)
        tasks += t
        dropped.update(d)
    tasks, d = select_tasks(tasks, max_prompts)
    dropped.update(d)
    if cfg.devsecops:
        t, d = devsecops_tasks(cfg.max_devsecops_prompts, cfg.max_prompt_chars)
        tasks += t
        dropped.update(d)
    if not tasks:
        raise Failure(description=f"no prompts with tests in {pair_sources} (devsecops={cfg.devsecops})",
                      metadata={"left_out": MetadataValue.md(counts_table(dropped))})
    ref = _model_ref(store, synth, cfg)
    t0 = time.monotonic()
    if cfg.backend == "vllm_server" and synth.managed:  # phases.serving runs the server for this step
        srv = synth.server_for(ref, context.log.info)
        cfg = cfg.model_copy(update={"base_url": srv.base_url, "served_name": srv.served_name})
    sampler = make_sampler(ref, cfg)
    grader = Grader(workers=cfg.grader_workers, iac=IacScanner(cat.iac_scanner.checks))
    res = build_exec_pairs(tasks, sampler, grader, n=cfg.samples_per_prompt, temperature=cfg.temperature,
                           min_margin=min_margin, max_pairs_per_prompt=max_pairs,
                           drop_same_code=cat.drop_same_code, inject_pool=cfg.inject_pool)
    version = content_version(res.rows, ref.revision)
    write_table_set(store, PAIRS_PREFIX, version, {"rows": res.rows, "grades": res.grades},
                    {"model": {"name": ref.name, "model_dir": ref.model_dir, "adapter_dir": ref.adapter_dir,
                               "revision": ref.revision}, "summary": res.summary})
    s = res.summary
    kinds = [f"| {k} | {v['prompts']} | {s['pairs_by_kind'].get(k, 0)} | {v['pass_rate']:.3f} | "
             f"{v['mean_score']:.3f} | {v['pairable_prompts']} |" for k, v in s["by_kind"].items()]
    return MaterializeResult(
        data_version=DataVersion(version),
        metadata={
            "prompts": s["prompts"], "pairs": s["pairs"], "samples_per_prompt": s["samples_per_prompt"],
            "pairs_per_prompt_mean": round(s["pairs"] / s["prompts"], 3) if s["prompts"] else 0.0,
            "pairs_per_prompt": MetadataValue.md(_ordered_table(s["pairs_per_prompt"], "pairs made", "prompts")),
            "margin_histogram": MetadataValue.md(_ordered_table(s["margin_histogram"], "score margin", "pairs")),
            "pairs_by_tier": MetadataValue.md(counts_table(s["pairs_by_tier"], "tier", "pairs")),
            "candidate_pairs_left_out": MetadataValue.md(counts_table(s["candidate_pairs_left_out"], "reason",
                                                                      "candidate pairs")),
            "min_margin": min_margin, "max_pairs_per_prompt": max_pairs, "max_prompts": max_prompts,
            # the reference answers graded beside the model's samples (never counted as samples)
            "pool_injected": s["pool_injected"], "pairs_with_injected": s["pairs_with_injected"],
            "difficulty_basis": MetadataValue.json(s["difficulty_basis"]),
            "temperature": s["temperature"], "pass_rate": round(s["overall"]["pass_rate"], 4),
            "mean_score": round(s["overall"]["mean_score"], 4),
            "by_kind": MetadataValue.md("| kind | prompts | pairs | pass rate | mean score | pairable |\n"
                                        "|---|---:|---:|---:|---:|---:|\n" + "\n".join(kinds)),
            "pass_rate_plot": MetadataValue.md(_pass_rate_plot(s)),
            "pass_rate_distribution": MetadataValue.json(s),
            "no_pair_by_reason": MetadataValue.md(counts_table(s["no_pair_by_reason"], "reason", "prompts")),
            "prompts_left_out": MetadataValue.md(counts_table(dropped, "reason", "rows")),
            "model": MetadataValue.json({"name": ref.name, "model_dir": ref.model_dir,
                                         "adapter_dir": ref.adapter_dir or "", "revision": ref.revision,
                                         "backend": cfg.backend}),
            "seconds": round(time.monotonic() - t0, 1), "sample_s": s["sample_s"], "grade_s": s["grade_s"],
            "uri": store.uri(pointer(PAIRS_PREFIX)),
        },
    )


from .curated_assets import CURATED_SYNTH_ASSETS  # noqa: E402  (they read what the assets above write)

SYNTH_ASSETS = [synth_scenarios, orchestrator_traces, exec_graded_pairs, *CURATED_SYNTH_ASSETS]

__all__ = ["SYNTH_ASSETS", "synth_resources", "load_orchestrator_traces", "load_exec_graded_pairs",
           "synth_scenarios", "orchestrator_traces", "exec_graded_pairs", "batch_partitions"]
