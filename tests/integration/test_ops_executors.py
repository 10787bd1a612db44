"""Curation blocks on datatrove executors chosen by settings: local processes, and Ray on a local
cluster the test starts. The block is the project's real AST-validity check."""

import json
import time

import pytest

from surrogate_dagster.curation.ast_validity import check_row_code
from surrogate_dagster.runtime.executors import curation_pipeline, make_executor


def _row(i: int, code: str) -> dict:
    return {"id": f"r{i}", "source": "t", "kind": "sft", "meta": {},
            "messages": [{"role": "user", "content": "write it"},
                         {"role": "assistant", "content": f"Here:\n```python\n{code}\n```"}]}


GOOD = "def f(x):\n    return x + 1"
BAD = "def f(x)\n    return x +"


def _inputs(tmp_path, files: int = 2, per_file: int = 6):
    inp = tmp_path / "in"
    inp.mkdir()
    n = 0
    for f in range(files):
        with open(inp / f"part-{f}.jsonl", "w") as fh:
            for j in range(per_file):
                fh.write(json.dumps(_row(n, BAD if j % 3 == 0 else GOOD)) + "\n")
                n += 1
    return inp, n


def _read(folder):
    return [json.loads(line) for p in sorted(folder.rglob("*.jsonl")) for line in p.read_text().splitlines()]


def _check(tmp_path, total):
    kept, dropped = _read(tmp_path / "out"), _read(tmp_path / "dropped")
    assert len(kept) + len(dropped) == total and len(dropped) == total // 3
    assert {r["_drop_reason"] for r in dropped} == {"ast_error_python"}
    assert all(r["messages"][1]["content"].count("return x + 1") for r in kept)  # rows survive intact
    assert len({r["id"] for r in kept}) == len(kept)


def test_local_executor_runs_a_curation_block(tmp_path):
    inp, total = _inputs(tmp_path)
    pipe = curation_pipeline(str(inp), str(tmp_path / "out"), [check_row_code], str(tmp_path / "dropped"))
    # One worker: forking a pytest process that already runs threads (moto, dagster) can deadlock;
    # the multi-worker path is what the Ray test below exercises in separate processes.
    make_executor(pipe, {"kind": "local", "tasks": 2, "workers": 1}, str(tmp_path / "logs")).run()
    _check(tmp_path, total)


def test_ray_executor_on_a_local_cluster(tmp_path):
    ray = pytest.importorskip("ray")
    inp, total = _inputs(tmp_path)
    t0 = time.monotonic()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # a local cluster for this test
    try:
        pipe = curation_pipeline(str(inp), str(tmp_path / "out"), [check_row_code], str(tmp_path / "dropped"))
        ex = make_executor(pipe, {"kind": "ray", "tasks": 2, "cpus_per_task": 1, "mem_per_cpu_gb": 0.25},
                           str(tmp_path / "logs"))
        assert type(ex).__name__ == "RayPipelineExecutor"
        ex.run()
    finally:
        ray.shutdown()
    _check(tmp_path, total)
    assert len(list((tmp_path / "logs" / "completions").iterdir())) == 2
    print(f"ray local cluster run: {time.monotonic() - t0:.1f}s")
