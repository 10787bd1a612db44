"""The block seam gives the same per-row decisions in-process, on the pool, on datatrove's local
executor and on Ray's local cluster; the profile's setting reaches the curation resource."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from surrogate_dagster.curation.ast_validity import check_row_code
from surrogate_dagster.curation.blocks import BlockStats, run_blocks
from surrogate_dagster.curation.executor import apply_blocks, as_block

GOOD = "def f(x):\n    return x + 1"
BAD = "def f(x)\n    return x +"


class TooLong:
    """A block object (name + decide), as opposed to the plain callable check_row_code."""

    name = "too_long"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def decide(self, row: dict) -> str | None:
        return "too_long" if sum(len(m["content"]) for m in row["messages"]) > self.limit else None


def _rows(n: int = 24) -> list[dict]:
    rows = []
    for i in range(n):
        code = BAD if i % 3 == 0 else GOOD
        extra = "x" * 200 if i % 4 == 1 else ""
        rows.append({"id": f"r{i}", "source": "t", "kind": "sft", "meta": {"n": i, "tags": ["é", None]},
                     "messages": [{"role": "user", "content": f"write it {extra}"},
                                  {"role": "assistant", "content": f"Here:\n```python\n{code}\n```"}]})
    return rows


BLOCKS = (check_row_code, TooLong(150))


def test_same_decisions_on_every_executor(tmp_path) -> None:
    rows = _rows()
    chain = [as_block(b) for b in BLOCKS]
    assert [b.name for b in chain] == ["check_row_code", "too_long"]
    ref_stats = BlockStats()
    expected = run_blocks(chain, rows, ref_stats)
    assert {"ast_error_python", "too_long", None} <= set(expected)
    runs = {"in_process": apply_blocks(rows, BLOCKS, None, tmp_path),
            "pool": apply_blocks(rows, BLOCKS, {"kind": "pool", "workers": 2, "chunk_rows": 5}, tmp_path),
            # one worker process: forking a pytest process that runs threads can deadlock
            "local": apply_blocks(rows, BLOCKS, {"kind": "local", "tasks": 3, "workers": 1}, tmp_path)}
    ray = pytest.importorskip("ray")
    t0 = time.monotonic()
    # a local cluster for this test; its workers import TooLong from this file's folder
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    try:
        runs["ray"] = apply_blocks(rows, BLOCKS, {"kind": "ray", "tasks": 2, "cpus_per_task": 1,
                                                  "mem_per_cpu_gb": 0.25}, tmp_path)
    finally:
        ray.shutdown()
    for kind, run in runs.items():
        assert run.kind == kind and run.reasons == expected, kind
        assert run.stats.as_metadata() == ref_stats.as_metadata(), kind
    assert list(tmp_path.iterdir()) == []  # every run folder removed
    print(f"ray local cluster run: {time.monotonic() - t0:.1f}s")


def test_rows_that_do_not_come_back_fail_the_run(tmp_path, monkeypatch) -> None:
    from surrogate_dagster.curation import executor as seam

    real = seam._position_out

    def lossy(self, doc):  # a writer that loses row 3, as a crashed rank would
        return {"i": -1} if doc.id == "3" else real(self, doc)

    monkeypatch.setattr(seam, "_position_out", lossy)
    with pytest.raises(RuntimeError, match="unknown row position -1"):
        apply_blocks(_rows(6), BLOCKS, {"kind": "local", "tasks": 1, "workers": 1}, tmp_path)


class ParentOnly:
    """A block that must not leave the calling process (fork_safe = False, like a torch model)."""

    name = "parent_only"
    fork_safe = False

    def __init__(self) -> None:
        import os

        self.pid = os.getpid()

    def decide(self, row: dict) -> str | None:
        import os

        assert os.getpid() == self.pid, "a fork_safe=False block ran in a worker"
        return "odd" if row["meta"]["n"] % 2 else None


def test_blocks_that_are_not_fork_safe_run_in_the_calling_process(tmp_path) -> None:
    rows = _rows(12)
    chain = [as_block(check_row_code), ParentOnly(), TooLong(150)]
    ref_stats = BlockStats()
    expected = run_blocks(chain, rows, ref_stats)
    for settings in ({"kind": "pool", "workers": 2, "chunk_rows": 3}, {"kind": "local", "tasks": 2, "workers": 1}):
        run = apply_blocks(rows, chain, settings, tmp_path)
        assert run.reasons == expected and run.stats.as_metadata() == ref_stats.as_metadata()


_UNDER_A_STEP = r"""
import signal, sys
sys.path.insert(0, {root!r})
from tests.integration.test_executor_seam import BLOCKS, _rows
from surrogate_dagster.curation.executor import apply_blocks


class Interrupted(Exception):
    pass


def raising_handler(signum, frame):  # what an orchestrator's step installs: a signal becomes an exception
    raise Interrupted(signum)


signal.signal(signal.SIGTERM, raising_handler)
signal.signal(signal.SIGINT, raising_handler)
for k in range(3):  # one run per source, as the curation chain does
    run = apply_blocks(_rows(12), BLOCKS, {{"kind": "local", "tasks": 2, "workers": 2}}, {work!r} + f"/{{k}}")
    assert sum(r is None for r in run.reasons) == 6, run.reasons
assert signal.getsignal(signal.SIGTERM) is raising_handler  # the step's own handlers are back
print("three datatrove runs done")
"""


def test_datatrove_local_runs_complete_under_a_step_signal_handler(tmp_path) -> None:
    """A Dagster step turns SIGTERM into an exception; datatrove's local executor terminates its forked
    pool with SIGTERM. Workers that inherited the step's handler died holding the pool's queue lock
    and the next source's run hung: the seam gives the workers the default handlers."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])
    code = _UNDER_A_STEP.format(root=root, work=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=root)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "three datatrove runs done" in out.stdout
    assert "Interrupted" not in out.stderr  # no worker raised the step's exception on its way out
