"""The filter step's blocks, one by one, and the heuristics group plain against fused.

    .venv/bin/python benchmarks/curation_blocks.py [--docs 20000] [--stress 3000] [--repeats 3]

Rows: ``--docs`` synthetic chat rows of benchmarks/curation_chain.py (a question and an answer
with one Python block) plus ``--stress`` rows of tests/unit/curation/test_blocks_outputs.py (fixture answers
with planted problems: every rule fires). Printed, best of ``--repeats`` alternating runs, in
CPU seconds of this process (one core, no workers):

- each block of the chain alone over all rows (``ast``, each heuristic rule, ``edu``), each
  paying the answers' fence scan itself (in the chain the blocks share it);
- the chain as the filter step runs it (``executor.apply_blocks`` on the pool, 256-row chunks, one
  process), so the blocks find the fence scans and parses the block before them made;
- the heuristics group both ways: ``plain`` (each rule's ``decide``, the reference) and
  ``fused`` (``HeuristicFilter.violations``: the row's texts visited once for all rules), with
  the ratio fused / plain measured in the same run, and a check that both found the same rules.

The fused path stays in the code only while this ratio shows it pays (see
``quality.heuristics``).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from curation_chain import make_doc  # noqa: E402

from surrogate_dagster.curation.ast_validity import AstChecker  # noqa: E402
from surrogate_dagster.curation.blocks import BlockStats, run_blocks  # noqa: E402
from surrogate_dagster.curation.quality.edu_classifier import EduFilter, build_edu_scorer  # noqa: E402
from surrogate_dagster.curation.executor import apply_blocks  # noqa: E402
from surrogate_dagster.curation.quality.heuristics import HeuristicFilter  # noqa: E402
from tests.unit.curation.test_blocks_outputs import stress_rows  # noqa: E402


def _cpu(fn) -> tuple[float, object]:
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--stress", type=int, default=3_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(0)
    rows = [make_doc(i, rng) for i in range(args.docs)] + stress_rows(args.stress, seed=3)
    print(f"{len(rows)} rows ({args.docs} synthetic, {args.stress} stress), best of {args.repeats}, CPU s")

    heur = HeuristicFilter()
    chain = [AstChecker(), heur, EduFilter(build_edu_scorer("rubric"), threshold=2)]
    best: dict[str, float] = {}
    plain_out = fused_out = None
    for _ in range(args.repeats):
        for name, fn in (("plain", heur.plain_violations), ("fused", heur.violations)):
            dt, out = _cpu(lambda: [fn(r) for r in rows])
            best[name] = min(best.get(name, float("inf")), dt)
            if name == "plain":
                plain_out = out
            else:
                fused_out = out
        for block in [*chain[:1], *heur.rules, chain[2]]:
            dt, _ = _cpu(lambda: run_blocks([block], rows, BlockStats()))
            best[block.name] = min(best.get(block.name, float("inf")), dt)
        dt, _ = _cpu(lambda: apply_blocks(rows, chain, {"kind": "pool", "workers": 1, "chunk_rows": 256}, "unused"))
        best["chain"] = min(best.get("chain", float("inf")), dt)
    if plain_out != fused_out:
        raise SystemExit("fused heuristics found other rules than the plain blocks")

    print("\nblock                   CPU s   rows/s")
    for name in ["ast", *(r.name for r in heur.rules), "edu"]:
        print(f"{name:22s} {best[name]:6.3f} {len(rows) / best[name]:9,.0f}")
    print(f"{'chain (ast>heur>edu)':22s} {best['chain']:6.3f} {len(rows) / best['chain']:9,.0f}")
    print(f"\nheuristics group, all rules on every row: plain {best['plain']:.3f} s, "
          f"fused {best['fused']:.3f} s, fused/plain = {best['fused'] / best['plain']:.2f}"
          f" (same rules found on all {len(rows)} rows)")


if __name__ == "__main__":
    main()
