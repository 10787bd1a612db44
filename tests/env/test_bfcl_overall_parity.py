"""Parity: the project's leaderboard formula (evals/harness/bfcl_overall.py) and bfcl-eval's own
generate_leaderboard_csv give the same overall, on every category present and with categories missing
(bfcl-eval counts those as 0: ``missing="zero"``). bfcl-eval runs in its own environment (skipped,
with the reason, where it is absent). Accuracies are seeded random draws, not values either side made."""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from surrogate_dagster.evals.harness import bfcl_official, bfcl_overall

OFFICIAL = bfcl_official.official_python()
pytestmark = pytest.mark.skipif(OFFICIAL is None, reason=f"no bfcl-eval environment ({bfcl_official.DEFAULT_PYTHON})")

# Run in .venv-bfcl: bfcl-eval's generate_leaderboard_csv on a leaderboard table, its "Overall Acc" back.
SCRIPT = r"""
import csv, json, sys, tempfile
from pathlib import Path
from bfcl_eval.eval_checker.eval_runner_helper import generate_leaderboard_csv
scores = json.loads(sys.stdin.read())
out = Path(tempfile.mkdtemp())
generate_leaderboard_csv({"Qwen_Qwen3-8B-FC": scores}, out)
row = next(csv.DictReader(open(out / "data_overall.csv")))
print(json.dumps({"overall": float(row["Overall Acc"].rstrip("%"))}))
"""


def official_overall(scores: dict) -> float:
    r = subprocess.run([str(OFFICIAL), "-I", "-c", SCRIPT], input=json.dumps(scores), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])["overall"]


def totals() -> dict[str, int]:
    r = subprocess.run([str(OFFICIAL), "-I", "-c", "import json; from bfcl_eval.utils import load_dataset_entry; "
                        f"print(json.dumps({{c: len(load_dataset_entry(c, include_prereq=False)) "
                        f"for c in {bfcl_overall.leaves()!r}}}))"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("seed, drop", [(0, 0), (1, 0), (2, 3), (3, 8), (4, 15)])
def test_overall_matches_generate_leaderboard_csv(seed, drop):
    rng = random.Random(seed)
    n = totals()
    scores = {c: {"accuracy": rng.random(), "total_count": n[c]} for c in bfcl_overall.leaves()}
    for c in rng.sample(sorted(scores), drop):
        del scores[c]
    mine = bfcl_overall.overall(scores, missing="zero", totals=n)["overall"]
    assert round(100 * mine, 2) == pytest.approx(official_overall(scores), abs=0.006)
    if drop == 0:  # nothing missing: the renormalized figure is the leaderboard's
        assert bfcl_overall.overall(scores)["overall"] == pytest.approx(mine)
