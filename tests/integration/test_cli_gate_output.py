"""`make run` output: a failed blocking gate prints one line (gate, value, threshold), no stack
trace; any other step failure still logs its error in full."""

from dagster import AssetCheckResult, AssetCheckSeverity, DagsterInstance, asset, asset_check

from surrogate_dagster.cli import _failed_gate_lines, _materialize

RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@asset
def report():
    return 0.12


@asset_check(asset=report, blocking=True)
def meets_target():
    return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR,
                            description="humaneval_plus: score 0.12 < target 0.6 (pass@1)")


@asset_check(asset=report, name="informative")
def informative():  # not blocking: never printed as a gate line
    return AssetCheckResult(passed=False, severity=AssetCheckSeverity.WARN, description="warn only")


@asset(deps=[report])
def release():
    return 1


@asset
def broken():
    raise ValueError("a real bug")


def _run(keys, capfd):
    res = _materialize([report, release, broken, meets_target, informative], keys, None,
                       DagsterInstance.ephemeral(), {}, RUN_CONFIG, {})
    out, err = capfd.readouterr()
    return res, out + err


def test_failed_gate_is_one_line_without_traceback(capfd):
    res, printed = _run([report.key, release.key], capfd)
    assert not res.success
    assert "DagsterAssetCheckFailedError" not in printed and "Traceback" not in printed
    assert "Stack Trace" not in printed and "RUN_FAILURE" not in printed
    assert _failed_gate_lines(res) == ["report.meets_target: humaneval_plus: score 0.12 < target 0.6 (pass@1)"]


def test_other_failures_keep_their_error(capfd):
    res, printed = _run([broken.key], capfd)
    assert not res.success
    assert "ValueError: a real bug" in printed and "STEP_FAILURE" in printed
    assert _failed_gate_lines(res) == []


@asset
def smoke():
    return 1


@asset_check(asset=smoke, blocking=True)
def smoke_tests_pass():  # a blocking gate the profile overrides: it fails at WARN and blocks nothing
    return AssetCheckResult(passed=False, severity=AssetCheckSeverity.WARN,
                            description="FAILED, OVERRIDDEN by the profile: 5 of 18 smoke gates failed")


def test_an_overridden_gate_is_reported_not_hidden():
    res = _materialize([smoke, smoke_tests_pass], [smoke.key], None, DagsterInstance.ephemeral(), {},
                       RUN_CONFIG, {})
    assert res.success
    assert _failed_gate_lines(res) == []
    assert _failed_gate_lines(res, severity="WARN") == [
        "smoke.smoke_tests_pass: FAILED, OVERRIDDEN by the profile: 5 of 18 smoke gates failed"]
