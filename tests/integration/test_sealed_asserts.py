"""Assertions are split into sandbox probes and host-side verdicts; common test shapes still grade right."""

from __future__ import annotations

import pytest

from surrogate_dagster.sandbox import Sandbox, SandboxLimits
from surrogate_dagster.sandbox.runners import run_python_asserts
from surrogate_dagster.sandbox.sealed import plan_test


def test_expected_values_stay_on_the_host() -> None:
    p = plan_test("expected = [11, 22, 33]\nassert f([3, 1]) == expected")
    assert p.sealed and "11" not in p.child_source and "f([3, 1])" in p.child_source
    p = plan_test("assert abs(area(2.0) - 12.566370614) < 1e-6")
    assert p.sealed and "12.566" not in p.child_source and p.asserts[0].n_probes == 1
    p = plan_test("def test_it():\n    assert g(1) == 'x9z'\n")
    assert p.sealed and "x9z" not in p.child_source and p.child_source.rstrip().endswith("test_it()")


@pytest.mark.parametrize("src", ["for x in [1, 2]:\n    assert g(x) == x", "assert g(1) == g(2)",
                                 "assert all(g(x) == x for x in [1])", "g(1)",
                                 "try:\n    g(-1)\n    assert False\nexcept ValueError:\n    pass"])
def test_verdicts_the_sandbox_could_fake_are_unsealed(src: str) -> None:
    assert not plan_test(src).sealed


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox(SandboxLimits(wall_s=10, cpu_s=10, memory_mb=512, nproc=16))


def test_common_test_shapes_grade_as_python_would(sb: Sandbox) -> None:
    code = ("import math\ndef area(r):\n    return math.pi * r * r\n"
            "def evens(xs):\n    return [x for x in xs if x % 2 == 0]\n"
            "def is_even(n):\n    return n % 2 == 0\n"
            "def nothing():\n    return None\n"
            "class Stack:\n    def __init__(self):\n        self.items = []\n"
            "    def push(self, x):\n        self.items.append(x)\n"
            "    def size(self):\n        return len(self.items)\n")
    tests = ["assert abs(area(2.0) - 12.566370614359172) < 1e-9",
             "assert evens([1, 2, 3, 4]) == [2, 4]",
             "assert sorted(evens([4, 2])) == [2, 4]",
             "assert is_even(4)",
             "assert not is_even(3)",
             "assert nothing() is None",
             "assert isinstance(evens([]), list) and len(evens([2])) == 1",
             "s = Stack()\ns.push(1)\ns.push(2)\nassert s.size() == 2",
             "expected = [2]\nassert evens([1, 2]) == expected",
             "def test_stack():\n    s = Stack()\n    assert s.size() == 0\n",
             "for n in [2, 4]:\n    assert is_even(n)",
             # wrong on purpose: typed comparisons fail where Python's == would pass
             "assert is_even(4) == 1",
             "assert evens([2]) == (2,)",
             "assert evens([1, 3]) == [1]"]
    run = run_python_asserts(sb, code, tests)
    errs = run.report["errors"]
    assert errs[:11] == [None] * 11, errs
    assert all(e and e.startswith("AssertionError") for e in errs[11:]), errs
    assert run.report["unsealed"] == [10] and run.report["tampered"] is None
