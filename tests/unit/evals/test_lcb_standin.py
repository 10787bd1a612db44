"""LiveCodeBench's stand-in problems are dated and parsed, and encoded tests refuse code objects
(the sandboxed runs: tests/integration/test_evals_lcb.py)."""

from __future__ import annotations

import base64
import pickle
import zlib
from datetime import date

import pytest

from surrogate_dagster.evals.harness import livecodebench as L
from surrogate_dagster.paths import shared_dir


STANDIN = shared_dir() / "data/benchmarks/leetcode_contests_20240121-Jul.OpenCoder.jsonl"


@pytest.fixture(scope="module")
def problems():
    return L.load_standin(STANDIN)


def test_standin_is_dated_and_parsed(problems):
    assert len(problems) == 180
    assert min(p.date for p in problems) == date(2023, 7, 2) and max(p.date for p in problems) == date(2024, 1, 21)
    p = problems[0]
    assert p.starter_code.startswith("class Solution:") and "Telephone keypads" in p.question
    assert p.mode == "asserts" and "my_solution" in p.tests[0]


def test_encoded_tests_refuse_code_objects():
    evil = base64.b64encode(zlib.compress(pickle.dumps(OSError("x")))).decode()
    with pytest.raises(pickle.UnpicklingError):
        L._decode_tests(evil)
