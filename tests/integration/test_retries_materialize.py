"""A flaky step succeeds on its retry, in a materialized run (the policies: tests/unit/package/test_retries.py)."""

from dagster import DagsterInstance, MaterializeResult, asset, materialize

from surrogate_dagster.retries import MIRROR_RETRY


def test_a_flaky_step_succeeds_on_its_retry(tmp_path):
    attempts = tmp_path / "attempts"
    # the mirror's policy with the delay cut to nothing, so the test does not wait
    quick = MIRROR_RETRY._replace(delay=0.01)

    @asset(retry_policy=quick)
    def flaky(context) -> MaterializeResult:
        n = int(attempts.read_text()) if attempts.exists() else 0
        attempts.write_text(str(n + 1))
        if n == 0:
            raise ConnectionError("HTTP 429 from the hub")
        return MaterializeResult(metadata={"retry_number": context.retry_number})

    instance = DagsterInstance.ephemeral()
    res = materialize([flaky], instance=instance)
    assert res.success and attempts.read_text() == "2"
    mats = res.asset_materializations_for_node("flaky")
    assert len(mats) == 1 and mats[0].metadata["retry_number"].value == 1
    # without a policy the same failure fails the run
    attempts.unlink()

    @asset(name="flaky")
    def no_retry(context) -> MaterializeResult:
        return flaky.op.compute_fn.decorated_fn(context)

    assert not materialize([no_retry], instance=instance, raise_on_error=False).success
