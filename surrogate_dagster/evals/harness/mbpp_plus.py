"""MBPP+ through evalplus: its v0.2.0 release online, the shared 399-task copy offline.

The shared copy (``../shared/data/benchmarks/MbppPlus.PropertyEval.json``, PROVENANCE.md) is an
older MBPP+ (399 tasks; evalplus 0.3.1's default v0.2.0 has 378) stored as one JSON array; evalplus
reads JSON Lines, so it is rewritten line by line (content unchanged) and passed through
``MBPP_OVERRIDE_PATH``. evalplus' loader then applies ``mbpp_deserialize_inputs`` (tuples and sets
are JSON-encoded as lists). Every report names which of the two ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from surrogate_dagster.sandbox import Sandbox

from ...inference import InferenceClient
from .common import EvalReport, sha256_bytes
from .evalplus_core import EvalPlusConfig, compute_groundtruth, evaluate, load_problems, select_ids

BENCHMARK = "mbpp_plus"
ONLINE_VERSION = "v0.2.0"  # evalplus 0.3.1's MBPP_PLUS_VERSION
OFFLINE_FILE = "MbppPlus.PropertyEval.json"


def prepare_offline(path: str | Path, work_dir: Path) -> tuple[Path, dict]:
    """JSON array -> JSON Lines for evalplus (cached by sha256); returns (path, dataset info)."""
    src = Path(path)
    raw = src.read_bytes()
    digest = sha256_bytes(raw)
    out = Path(work_dir) / f"MbppPlus-{digest[:16]}.jsonl"
    if not out.exists():
        rows = json.loads(raw)
        if not isinstance(rows, list) or not rows or "base_input" not in rows[0]:
            raise ValueError(f"{src}: expected a JSON array of MBPP+ tasks in evalplus' format")
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.replace(out)
    return out, {"source": "shared MBPP+ copy (PropertyEval, pre-v0.2.0)", "file": str(src), "sha256": digest,
                 "converted_file": str(out)}


def run(client: InferenceClient, sandbox: Sandbox, cfg: EvalPlusConfig, *, offline: bool, work_dir: Path,
        offline_file: str | Path, groundtruth: Callable[[dict, str], dict] | None = None,
        log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint on MBPP+."""
    if offline:
        path, info = prepare_offline(offline_file, work_dir)
        problems = load_problems("mbpp", str(path))
        variant = f"MBPP+ (older {len(problems)}-task copy, PropertyEval; evalplus 0.3.1 harness)"
        version, notes = f"pre-v0.2.0-{len(problems)}", ["offline: not the v0.2.0 release (378 tasks)"]
    else:
        problems = load_problems("mbpp", None)
        from evalplus.data import get_mbpp_plus_hash

        variant, version, notes = f"MBPP+ {ONLINE_VERSION} (evalplus release)", ONLINE_VERSION, []
        info = {"source": f"evalplus/mbppplus_release {ONLINE_VERSION}", "md5": get_mbpp_plus_hash()}
    key = info.get("sha256") or info.get("md5", "")
    # expected outputs only for the tasks that will be scored (a subset on small machines)
    used = {t: problems[t] for t in select_ids(problems, cfg.max_items)}
    expected = groundtruth(used, key) if groundtruth else compute_groundtruth(sandbox, "mbpp", used, log=log)
    return evaluate(client, sandbox, benchmark=BENCHMARK, variant=variant, version=version, dataset_info=info,
                    problems=problems, expected=expected, cfg=cfg, notes=notes, log=log)
