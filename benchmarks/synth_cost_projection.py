"""Trace-synthesis cost: tokens per accepted trace by call kind on the local stand-in, priced with
the catalog's (or a profile's) models and prices, with and without prompt caching + Message Batches.

    .venv/bin/python benchmarks/synth_cost_projection.py [--scenarios 50] [--profile production]

Both runs use the same scenarios (the catalog's seeds expanded by the stand-in scenario writer),
the same stand-in Messages server code and the same loop (synthesize, judge, re-sample rejected
scenarios up to the catalog's attempts). The baseline sends every call directly at list price
with no cache_control; the optimized run marks the repeated system prompts for caching and sends
the judges and the scenario writer as Message Batches. Printed: per call kind calls and tokens
(input, output, cache write, cache read) per accepted trace, the projected $ per trace, how many
traces the budget buys, and the ratio of the two runs. ``--yaml`` prints the optimized profile in
the form of ``traces.measured_tokens_per_trace`` in assets/synth.yaml.

The stand-in's tokens are characters / 4 of template text, not Claude's: the projection gives the
method and the shape of the spend (which call kinds dominate, what caching and batching save),
not the dollars of a paid run.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from surrogate_dagster.llm.batches import MessageBatchRunner  # noqa: E402
from surrogate_dagster.llm.client import LLMClient  # noqa: E402
from surrogate_dagster.llm.local_server import MessagesServer  # noqa: E402
from surrogate_dagster.synth.config import resolve_llm, synth_catalog  # noqa: E402
from surrogate_dagster.synth.projection import measure_profile, project  # noqa: E402
from surrogate_dagster.synth.scenarios import expand_scenarios  # noqa: E402
from surrogate_dagster.synth.volume import synthesize_until_accepted  # noqa: E402


def measure(scenario_target: int, optimized: bool, llm_cfg, batch_size: int, attempts: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, MessagesServer() as srv:
        client = LLMClient(models=llm_cfg.models, prices=llm_cfg.prices_per_mtok, max_tokens=llm_cfg.max_tokens,
                           budget_usd=1e9, base_url=srv.url, api_key_env=None, cache_store=Path(tmp) / "cache",
                           **({} if optimized else {"cache_roles": ()}))
        runner = MessageBatchRunner(client, Path(tmp) / "store", poll_s=0.01, poll_max_s=0.05) if optimized else None
        cat = synth_catalog()
        t0 = time.perf_counter()
        scenarios, _ = expand_scenarios(client, cat["seeds"], target=scenario_target,
                                        per_request=int(cat["per_request"]), batch_runner=runner)
        accepted, stops = 0, []
        for i in range(0, len(scenarios), batch_size):
            part = scenarios[i:i + batch_size]
            res = synthesize_until_accepted(client, part, target=len(part), batch_key=f"batch-{i // batch_size:03d}",
                                            max_attempts_per_scenario=attempts, batch_runner=runner)
            accepted += res["summary"]["accepted"]
            stops.append(res["summary"]["stop_reason"])
        usage = client.usage_by_role()
        return {"seconds": time.perf_counter() - t0, "scenarios": len(scenarios), "accepted": accepted,
                "stops": stops, "usage": usage, "profile": measure_profile(usage, accepted),
                "billed_usd": client.ledger.summary()["billed_usd"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--profile", default=None, help="price with this profile's phases.llm (default: the catalog)")
    ap.add_argument("--yaml", action="store_true", help="print the optimized profile for assets/synth.yaml")
    args = ap.parse_args()
    cat = synth_catalog()
    section = None
    if args.profile:
        from surrogate_dagster.catalog import load_profile

        section = dict(load_profile(args.profile).phases.get("llm") or {})
    section = {**(section or {}), "base_url": "local"}
    llm_cfg = resolve_llm(section, cat)
    attempts = int(cat["traces"]["max_attempts_per_scenario"])
    runs = {name: measure(args.scenarios, name == "optimized", llm_cfg, int(cat["batch_size"]), attempts)
            for name in ("baseline", "optimized")}
    projections = {name: project(r["profile"], models=llm_cfg.models, prices=llm_cfg.prices_per_mtok,
                                 budget_usd=llm_cfg.budget_usd) for name, r in runs.items()}
    for name, r in runs.items():
        p = projections[name]
        print(f"\n== {name}: {r['scenarios']} scenarios, {r['accepted']} accepted traces, stops {sorted(set(r['stops']))}, "
              f"{r['seconds']:.1f}s, billed ${r['billed_usd']:.4f} (stand-in tokens at list prices)")
        print(f"{'call kind':16s} {'model':18s} {'calls':>6s} {'batched':>7s} {'input':>8s} {'output':>8s} "
              f"{'c.write':>8s} {'c.read':>8s} {'$/trace':>9s}")
        for kind, k in p["by_kind"].items():
            print(f"{kind:16s} {k['model']:18s} {k['calls']:6.1f} {k['batched_calls']:7.1f} {k['input_tokens']:8.1f} "
                  f"{k['output_tokens']:8.1f} {k['cache_creation_input_tokens']:8.1f} "
                  f"{k['cache_read_input_tokens']:8.1f} {k['usd_per_trace']:9.5f}")
        print(f"projected cost per accepted trace: ${p['projected_cost_per_trace_usd']:.5f}; "
              f"${p['budget_usd']:.0f} buys {p['traces_the_budget_buys']} traces")
    base, opt = projections["baseline"], projections["optimized"]
    print(f"\nratio optimized / baseline, $ per trace: "
          f"{opt['projected_cost_per_trace_usd'] / base['projected_cost_per_trace_usd']:.3f}; traces the budget buys: "
          f"{opt['traces_the_budget_buys'] / base['traces_the_budget_buys']:.2f}x")
    if args.yaml:
        print("\nmeasured_tokens_per_trace:")
        for kind, k in runs["optimized"]["profile"].items():
            print(f"    {kind}: " + json.dumps(k).replace('"', ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
