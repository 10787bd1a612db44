"""LiveCodeBench verdicts, decided on the host from what a program produced in the sandbox.

The sandbox returns outputs only: the captured stdout of each stdin test, or the return value of
each functional call as a tagged plain-data tree (``sandbox/plain.py``'s encoding). Expected outputs
never enter it. The comparisons follow lcb_runner (``lcb_runner/evaluation/testing_util.py``):

- stdin (``grade_stdio``): both texts stripped and split on "\\n", each line stripped; the line
  counts must agree; a line passes when equal, else when both split on whitespace into Decimals
  and the two lists are equal (so "2.50" matches "2.5", "1e3" matches "1000"; there is no
  tolerance beyond exact decimal equality).
- functional (``grade_call_based``): ``prediction == expected`` where ``expected`` is the JSON of
  the test's output and a top-level tuple counts as a list. Here the prediction is a tree, compared
  with Python's ``==`` rules for the builtin types it can hold (a nested tuple or any set never
  equals JSON data; dict keys must be strings; True equals 1), without building the candidate's
  sets or dicts on the host (hash-flooding them would cost quadratic time).
- a problem passes when every test passes; tests are judged in order and the first failure stops
  (``passed_tests`` counts the tests before it). A missing result (the program died, exited early
  or ran past the problem's global deadline) fails, as lcb_runner's ``[-1] * n`` does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Sequence

from surrogate_dagster.sandbox.plain import BadValue, decode

# lcb_runner's result codes: True pass, -1 global timeout / no result, -2 wrong answer,
# -3 time limit exceeded, -4 runtime error
WRONG, TLE, RUNTIME, NO_RESULT = "wrong_answer", "timeout", "runtime_error", "no_result"
_INT_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_SCALARS = ("none", "bool", "int", "float", "complex", "str", "bytes")


@dataclass(frozen=True)
class Verdict:
    """A problem's outcome: ``error`` is None when every test passed."""

    passed: bool
    passed_tests: int
    error: str | None
    detail: str = ""


def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(tok) for tok in line.split()]
    except (InvalidOperation, ValueError):
        return None


def stdout_matches(got: str, want: str) -> bool:
    """lcb_runner's stdin comparison (see the module docstring)."""
    g, w = _stripped_lines(got), _stripped_lines(want)
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        if a == b:
            continue
        da, db = _decimals(a), _decimals(b)
        if da is None or db is None or da != db:
            return False
    return True


class _BigInt(str):
    """An integer literal of the expected output too long for ``int()`` on the host."""


def _parse_int(text: str) -> int | _BigInt:
    return int(text) if len(text) <= 4000 else _BigInt(text)


def load_expected(output: str) -> Any:
    """A functional test's expected value (JSON), long integers kept as their digits."""
    return json.loads(output, parse_int=_parse_int)


def _int_equals(digits: str, want: Any) -> bool:
    if not _INT_TEXT.match(digits):
        raise BadValue("malformed int")
    if type(want) is _BigInt:
        return digits == want
    if type(want) is bool or type(want) is int:
        return digits == str(int(want))
    if type(want) is float:
        return len(digits) <= 400 and int(digits) == want  # longer ints exceed every finite float
    return False


def value_matches(tree: Any, want: Any, top: bool = True) -> bool:
    """lcb_runner's ``prediction == expected`` for a tagged tree; malformed trees never match."""
    try:
        return _matches(tree, want, top)
    except BadValue:
        return False


def _matches(tree: Any, want: Any, top: bool) -> bool:
    if type(tree) is not list or not tree or type(tree[0]) is not str:
        raise BadValue("malformed value")
    tag = tree[0]
    if tag == "tuple" and top:  # lcb_runner: "don't penalize model if it produces tuples"
        tag = "list"
    if tag == "list":
        if len(tree) != 2 or type(tree[1]) is not list:
            raise BadValue("malformed list")
        return type(want) is list and len(tree[1]) == len(want) and \
            all(_matches(t, w, False) for t, w in zip(tree[1], want))
    if tag in ("tuple", "set", "frozenset"):  # never equal to JSON data (lists, dicts, scalars)
        return False
    if tag == "dict":
        if len(tree) != 2 or type(tree[1]) is not list:
            raise BadValue("malformed dict")
        if type(want) is not dict or len(tree[1]) != len(want):
            return False
        seen: set[str] = set()
        for kv in tree[1]:
            if type(kv) is not list or len(kv) != 2:
                raise BadValue("malformed dict item")
            key = kv[0]
            if type(key) is not list or len(key) != 2 or key[0] != "str" or type(key[1]) is not str:
                return False  # a non-str key never equals a JSON object's key
            if key[1] in seen:
                raise BadValue("repeated dict key")
            seen.add(key[1])
            if key[1] not in want or not _matches(kv[1], want[key[1]], False):
                return False
        return True
    if tag not in _SCALARS:
        raise BadValue(f"unknown tag {tag!r}")
    if tag == "int":
        if len(tree) != 2 or type(tree[1]) is not str:
            raise BadValue("malformed int")
        return _int_equals(tree[1], want)
    if type(want) in (list, dict):
        return False
    value = decode(tree)
    if type(want) is _BigInt:
        return False  # only an int can equal an integer that long
    return bool(value == want)


def judge(mode: str, tests: Sequence[dict], records: Sequence[dict], problem: str | None = None) -> Verdict:
    """Verdict of one program on ``tests`` (``input``/``output``) from the sandbox's ``records``:
    one per test in order, ``{"out": stdout}`` (stdin), ``{"v": tree}`` (functional) or
    ``{"err": "timeout" | "runtime: ..."}``, optionally led by ``{"compile": error}``.
    ``problem`` says why records stop short (global timeout, output cap, crash)."""
    recs = list(records)
    if recs and "compile" in recs[0]:
        err = recs.pop(0)["compile"]
        if err:
            return Verdict(False, 0, RUNTIME, str(err)[:300])
    for i, test in enumerate(tests):
        if i >= len(recs):
            return Verdict(False, i, NO_RESULT, problem or "the program stopped before this test")
        rec = recs[i]
        if type(rec) is not dict:
            return Verdict(False, i, NO_RESULT, "malformed record")
        if "err" in rec:
            err = str(rec["err"])
            return Verdict(False, i, TLE if err == "timeout" else RUNTIME, err[:300])
        if mode == "stdin":
            out = rec.get("out")
            if type(out) is not str:
                return Verdict(False, i, NO_RESULT, "malformed record")
            if not stdout_matches(out, test["output"]):
                return Verdict(False, i, WRONG, f"test {i}: got {out[:120]!r}")
        else:
            if "v" not in rec:
                reason = rec.get("enc") or "malformed record"
                return Verdict(False, i, WRONG, f"test {i}: {str(reason)[:200]}")
            if not value_matches(rec["v"], load_expected(test["output"])):
                return Verdict(False, i, WRONG, f"test {i}: got {json.dumps(rec['v'])[:120]}")
    return Verdict(True, len(tests), None)
