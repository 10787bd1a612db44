"""Generated text is cut at the first stop string (the inference backends:
tests/integration/test_evals_inference.py)."""

from __future__ import annotations

from surrogate_dagster.inference import cut_at_stop


def test_cut_at_stop():
    assert cut_at_stop("abc\nSTOP def", ["STOP", "\nX"]) == ("abc\n", True)
    assert cut_at_stop("abc", ["Z"]) == ("abc", False)
