"""`make run`'s terminal: the CLI's lines only; stdout/stderr of the process and of its subprocesses
go to the run's log file; a run's line carries its assets' counts; a failed step's error is shown
in full, a failed gate is not shown as an error."""

from __future__ import annotations

import subprocess
import sys

from dagster import AssetCheckResult, AssetCheckSeverity, DagsterInstance, MaterializeResult, asset, asset_check

from surrogate_dagster.cli import _materialize
from surrogate_dagster.runtime.console import RunConsole, asset_counts, counts_line, failure_text

RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def test_only_the_cli_lines_reach_the_terminal(tmp_path, capfd):
    log = tmp_path / "logs" / "run.log"
    with RunConsole(log) as console:
        console.say("  ok    - (1.0s)  a rows=3")
        print("from print")
        print("from stderr", file=sys.stderr)
        subprocess.run([sys.executable, "-c", "import sys; print('child out'); print('child err', file=sys.stderr)"],
                       check=True)
    out, err = capfd.readouterr()
    assert out == "  ok    - (1.0s)  a rows=3\n" and err == ""
    text = log.read_text()
    for line in ("  ok    - (1.0s)  a rows=3", "from print", "from stderr", "child out", "child err"):
        assert line in text
    print("after")  # the descriptors are back
    assert capfd.readouterr().out == "after\n"


@asset
def rows_step():
    return MaterializeResult(metadata={"rows_in": 10, "rows_kept": 7, "rows_dropped": 3, "uri": "s3://x",
                                       "seconds": 0.2})


@asset
def report_step():
    return MaterializeResult(metadata={"items": 16, "score": 0.125, "status": "ok"})


@asset_check(asset=report_step, blocking=True)
def target():
    return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR, description="score 0.125 < 84")


@asset
def broken_step():
    raise ValueError("a real bug")


def _run(assets, keys):
    return _materialize(assets, keys, None, DagsterInstance.ephemeral(), {}, RUN_CONFIG, {})


def test_a_run_line_has_each_assets_counts():
    res = _run([rows_step, report_step], [rows_step.key, report_step.key])
    assert res.success
    line = counts_line(res)
    assert "rows_step rows_in=10 rows_kept=7" in line and "rows_dropped" not in line
    assert "report_step items=16 score=0.125" in line and "uri" not in line and "seconds" not in line
    assert asset_counts({"rows": 5, "promoted": False, "note": "text"}) == ["rows=5", "promoted=no"]
    assert asset_counts({"rows": 5, "quarantined": 0, "findings": 2}) == ["rows=5", "findings=2"]


def test_failures_are_shown_in_full_and_gates_are_not():
    res = _run([broken_step], [broken_step.key])
    text = "\n".join(failure_text(res))
    assert "step broken_step failed:" in text and "ValueError: a real bug" in text
    assert 'File "' in text  # the stack trace
    gated = _run([report_step, target], [report_step.key])
    assert not gated.success and failure_text(gated) == []
