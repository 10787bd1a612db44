"""Scratch folders of one run's step: private, removed by their owner, swept only for ended runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from surrogate_dagster.runtime.step_scratch import step_scratch, sweep_ended_runs


def test_each_run_and_step_has_its_own_folder_removed_on_exit(tmp_path: Path) -> None:
    with step_scratch(tmp_path, "run-a", "dedup") as a, step_scratch(tmp_path, "run-b", "dedup") as b:
        assert a != b and a.is_dir() and b.is_dir() and not any(a.iterdir())
        (a / "digests-000.jsonl").write_text("a")
        (b / "digests-000.jsonl").write_text("b")
        with step_scratch(tmp_path, "run-a", "other_step") as a2:
            assert a2.parent == a.parent
        assert (a / "digests-000.jsonl").read_text() == "a"  # the sibling step's exit left it alone
    assert list(tmp_path.iterdir()) == []


def test_removed_also_when_the_step_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with step_scratch(tmp_path, "run-a", "dedup") as a:
            (a / "x").write_text("partial")
            raise RuntimeError("step failed")
    assert not (tmp_path / "run-a").exists()


def test_a_retry_in_the_same_run_starts_empty(tmp_path: Path) -> None:
    left = tmp_path / "run-a" / "dedup"
    left.mkdir(parents=True)
    (left / "stale").write_text("from the killed attempt")
    with step_scratch(tmp_path, "run-a", "dedup") as a:
        assert list(a.iterdir()) == []


@pytest.mark.parametrize("run_id", ["..", "../x", "a/b", "", ".hidden", "x" * 200])
def test_names_that_could_leave_the_root_are_refused(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ValueError, match="scratch folder"):
        with step_scratch(tmp_path, run_id, "dedup"):
            pass


def test_sweep_removes_only_runs_reported_ended(tmp_path: Path) -> None:
    for run in ("ended-1", "running-2", "unknown-3"):
        (tmp_path / run / "dedup").mkdir(parents=True)
    status = {"ended-1": True, "running-2": False}
    assert sweep_ended_runs(tmp_path, lambda r: status.get(r, False)) == ["ended-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["running-2", "unknown-3"]
    assert sweep_ended_runs(tmp_path / "missing", lambda r: True) == []
