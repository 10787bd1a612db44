"""The sealed asserts' typed equality (the sealed runs in the sandbox: tests/integration/test_sealed_asserts.py)."""

from __future__ import annotations

import pytest

from surrogate_dagster.sandbox.plain import decode, typed_eq


def test_typed_equality() -> None:
    assert typed_eq([1, (2, "a")], [1, (2, "a")]) and typed_eq(2, 2.0)
    assert not typed_eq(True, 1) and not typed_eq([1], (1,)) and not typed_eq({1: True}, {1: 1})
    assert not typed_eq({True}, {1}) and typed_eq({"a": [1]}, {"a": [1]})
    assert decode(["tuple", [["int", "1"], ["str", "x"]]]) == (1, "x")
    for bad in (["object"], ["int", 1], ["set", [["list", []]]], "x"):
        with pytest.raises(ValueError):
            decode(bad)
