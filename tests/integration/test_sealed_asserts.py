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
    assert p.sealed and "x9z" not in p.child_source and p.child_source.rstrip().endswith("__sbx_fn1()")
    # a loop over a literal table: unrolled on the host, the table's expected column stays there
    p = plan_test("CASES = [(1, 'x9z'), (2, 'q7w')]\nfor n, want in CASES:\n    assert g(n) == want\n")
    assert p.sealed and p.straight == [True, True] and "x9z" not in p.child_source and "q7w" not in p.child_source
    assert "CASES" not in p.child_source and "g(1)" in p.child_source and "g(2)" in p.child_source


@pytest.mark.parametrize("src", ["for x in g(0):\n    assert g(x) == x", "assert g(1) == g(2)",
                                 "assert all(g(x) == x for x in g(0))", "g(1)",
                                 "ok = g(1) == 2\nassert ok",
                                 "def check(x):\n    r = g(x)\n    return r == 2\nassert check(1)",
                                 "while g(0):\n    assert g(1) == 2"])
def test_verdicts_the_sandbox_could_fake_are_unsealed(src: str) -> None:
    assert not plan_test(src).sealed


@pytest.mark.parametrize("src", ["for x in [1, 2]:\n    assert g(x) == x", "assert all(g(x) == x for x in [1])",
                                 "for i in range(3):\n    assert g(i) == 2 * i",
                                 "for a, b in zip([1, 2], [3, 4]):\n    assert g(a) == b",
                                 "for i, w in enumerate(['a', 'b']):\n    assert g(i) == w",
                                 "T = {1: 2, 3: 4}\nfor k, v in T.items():\n    assert g(k) == v",
                                 "def h(x, want):\n    assert g(x) == want\nh(1, 2)\nh(3, 4)",
                                 "def check(candidate):\n    assert candidate(1) == 2\ncheck(g)",
                                 "def check(a):\n    return g(a) == 2 * a\nassert check(1)",
                                 "def test_x():\n    assert g(1) == 2\ntest_x()",
                                 "if __name__ == '__main__':\n    assert g(1) == 2",
                                 "try:\n    g(-1)\n    assert False\nexcept ValueError:\n    pass",
                                 "import pytest\nwith pytest.raises(ValueError):\n    g(-1)",
                                 "import pytest\n@pytest.mark.parametrize('a,b', [(1, 2), (2, 4)])\n"
                                 "def test_g(a, b):\n    assert g(a) == b\n",
                                 "import unittest\nclass T(unittest.TestCase):\n    def setUp(self):\n"
                                 "        self.v = 1\n    def test_a(self):\n        self.assertEqual(g(self.v), 2)\n"
                                 "        self.assertRaises(ValueError, g, -1)\n"
                                 "if __name__ == '__main__':\n    unittest.main()\n",
                                 "xs = [3, 1]\nsort_in_place(xs)\nassert xs == [1, 3]"])
def test_shapes_the_host_rewrites_are_sealed(src: str) -> None:
    p = plan_test(src, {"g", "sort_in_place"})
    assert p.sealed and all(p.straight), (src, p.child_source)


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
             "nums = [4, 2]\nnums.sort()\nassert nums == [2, 4]",
             "try:\n    evens(None)\n    assert False\nexcept TypeError:\n    pass",
             # wrong on purpose: typed comparisons fail where Python's == would pass
             "assert is_even(4) == 1",
             "assert evens([2]) == (2,)",
             "assert evens([1, 3]) == [1]"]
    run = run_python_asserts(sb, code, tests)
    errs = run.report["errors"]
    assert errs[:13] == [None] * 13, errs
    assert all(e and e.startswith("AssertionError") for e in errs[13:]), errs
    assert run.report["unsealed"] == [] and run.report["tampered"] is None


def test_unsealed_tests_fail_unless_trusted_and_are_not_sent(sb: Sandbox) -> None:
    code = "def g(x):\n    return [x, x]\n"
    tests = ["TABLE = [9, 9]\nfor v in g(9):\n    assert v in TABLE", "g(1)", "assert g(2) == [2, 2]"]
    run = run_python_asserts(sb, code, tests)
    assert run.report["errors"][0].startswith("unsealed") and run.report["errors"][1].startswith("no assertion")
    assert run.report["errors"][2] is None
    trusted = run_python_asserts(sb, code, tests, trust_unsealed=True)
    assert trusted.report["errors"][0] is None and trusted.report["errors"][1].startswith("no assertion")
