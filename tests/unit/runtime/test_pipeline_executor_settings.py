"""Pipeline executor settings are validated, and a Slurm executor is built from them (the local and Ray
executors run: tests/integration/test_ops_executors.py)."""

import time

import pytest

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.curation.ast_validity import check_row_code
from surrogate_dagster.runtime.executors import curation_pipeline, executor_settings, make_executor, validate_settings


def test_settings_validation():
    with pytest.raises(ValueError, match="kind must be one of"):
        validate_settings({"kind": "dask"})
    with pytest.raises(ValueError, match="unknown keys"):
        validate_settings({"kind": "local", "task": 2})
    with pytest.raises(ValueError, match="missing"):
        validate_settings({"kind": "slurm", "tasks": 4})
    assert executor_settings(load_profile("local")) == {"kind": "pool", "workers": 2}
    assert executor_settings(load_profile("production"))["kind"] == "local"
    assert executor_settings(load_profile("cluster"))["kind"] == "ray"


def test_slurm_executor_is_built_from_settings(tmp_path):
    ex = make_executor(curation_pipeline(str(tmp_path), str(tmp_path / "o"), [check_row_code]),
                       {"kind": "slurm", "tasks": 8, "time": "01:00:00", "partition": "cpu", "cpus_per_task": 2},
                       str(tmp_path / "logs"))
    assert type(ex).__name__ == "SlurmPipelineExecutor" and ex.world_size == 8
