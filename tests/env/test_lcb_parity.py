"""Parity: lcb_runner's own grading (``evaluate_generations_by_problem`` of nvidia-livecodebench, LiveCodeBench's
lcb_runner packaged on PyPI, in its own environment ``.venv-lcb``) gives every hand-checked pair of
tests/support/lcb_parity_cases.py the verdict written there, and so the same verdict as the host
comparator (tests/integration/test_evals_lcb.py checks the latter against the same labels).

lcb_runner runs the programs itself, unsandboxed but under its reliability_guard, in a scratch
directory: the programs are the hand-written ones of the case file, nothing a model wrote.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.lcb_parity_cases import CASES, HALF, PROBLEMS, TIMEOUT_S

LCB_PYTHON = Path(__file__).resolve().parents[2] / ".venv-lcb" / "bin" / "python"
needs_lcb = pytest.mark.skipif(not LCB_PYTHON.exists(),
                               reason=f"no lcb_runner environment ({LCB_PYTHON}; `make setup` builds it)")

# lcb_runner's results to the host comparator's failure kinds (a wrong functional value is False)
KINDS = {False: "wrong_answer", -1: "no_result", -2: "wrong_answer", -3: "timeout", -4: "runtime_error"}

DRIVER = r'''
import json, sys
from livecodebench.evaluation.compute_code_generation_metrics import evaluate_generations_by_problem
cases = json.load(sys.stdin)
out = {}
for c in cases:
    sample = {"input_output": json.dumps({"inputs": c["inputs"], "outputs": c["outputs"],
                                          "fn_name": c["fn_name"] or None})}
    res, meta = evaluate_generations_by_problem([[c["code"]], sample, False, c["timeout"]])
    out[c["id"]] = [r if isinstance(r, bool) else int(r) for r in res[0]]
print("@@lcb " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def lcb_results(tmp_path_factory) -> dict[str, list]:
    payload = [{"id": c.id, "code": c.code, "timeout": TIMEOUT_S, "fn_name": PROBLEMS[c.problem].fn_name,
                "inputs": [t["input"] for t in PROBLEMS[c.problem].tests],
                "outputs": [t["output"] for t in PROBLEMS[c.problem].tests]} for c in CASES]
    proc = subprocess.run([str(LCB_PYTHON), "-I", "-c", DRIVER], input=json.dumps(payload), capture_output=True,
                          text=True, timeout=600, cwd=tmp_path_factory.mktemp("lcb"))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("@@lcb ")), None)
    assert line, f"lcb_runner driver gave no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(line[len("@@lcb "):])


def _verdict(results: list) -> tuple[bool, int, str | None]:
    """lcb_runner's pass (``np.all(gen > 0)``), the leading passes and the first failure's kind."""
    lead = next((i for i, r in enumerate(results) if r is not True), len(results))
    passed = bool(results) and all(r is True for r in results)
    first = results[lead] if lead < len(results) else None
    return passed, lead, None if passed else KINDS.get(first, f"code {first}")


@needs_lcb
def test_lcb_runner_gives_the_hand_labels(lcb_results):
    got = {c.id: _verdict(lcb_results[c.id]) for c in CASES}
    want = {c.id: (c.passed, c.passed_tests, c.lcb_kind or c.kind) for c in CASES}
    agree = {h: f"{sum(got[c.id] == want[c.id] for c in CASES if HALF[c.id] == h)}/"
                f"{sum(HALF[c.id] == h for c in CASES)}" for h in ("tune", "held_out")}
    wrong = {k: {"lcb_runner": got[k], "label": want[k], "raw": lcb_results[k]} for k in want if got[k] != want[k]}
    assert not wrong, f"agreement by half {agree}: {wrong}"


@needs_lcb
def test_parity_set_covers_both_modes_and_every_failure_kind(lcb_results):
    kinds = {_verdict(lcb_results[c.id])[2] for c in CASES}
    assert {None, "wrong_answer", "timeout", "runtime_error"} <= kinds
    assert {PROBLEMS[c.problem].mode for c in CASES} == {"stdin", "functional"}
