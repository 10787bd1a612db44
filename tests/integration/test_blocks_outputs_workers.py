"""The filter decisions made in fork workers, chunk by chunk, equal the recorded ones
(tests/unit/curation/test_blocks_baseline.json, made in one process)."""

from __future__ import annotations

from tests.unit.curation.test_blocks_outputs import _baseline, decisions, stress_rows


def test_filter_decisions_in_workers_equal_the_recorded_ones():
    stress = stress_rows()
    got = decisions(stress, workers=2, chunk_size=37)
    want = _baseline()["corpora"]["_stress"]
    assert {k: got[k] for k in want} == want
