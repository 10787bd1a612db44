"""Run every benchmark in turn (`make bench`); each prints its own figures and baseline ratios.

    .venv/bin/python benchmarks/run_all.py [name ...]     # e.g. sanitizer_bench curation_chain
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["sanitizer_bench", "secrets_blind_eval", "minhash_scurve", "decontam_bench", "decontam_renamed_bench",
         "quality_classifier_agreement", "quality_rule_shares", "curation_blocks", "curation_chain", "scale_rehearsal",
         "sandbox_bench", "eval_throughput", "ruler_dataset_cache", "synth_cost_projection", "ui_chain", "gpu_stage1_step"]


def main(names: list[str]) -> int:
    failed = []
    for name in names or ORDER:
        print(f"\n===== {name} =====", flush=True)
        t0 = time.monotonic()
        rc = subprocess.call([sys.executable, str(HERE / f"{name}.py")])
        print(f"===== {name}: exit {rc} in {time.monotonic() - t0:.0f}s =====", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
