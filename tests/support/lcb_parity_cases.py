"""Hand-checked LiveCodeBench problem/solution pairs with the verdict lcb_runner gives each.

Every expected verdict was worked out by hand from lcb_runner's code paths
(``lcb_runner/evaluation/testing_util.py``): ``grade_stdio`` (``get_stripped_lines``, exact line
match, else ``convert_line_to_decimals`` equality; ``SystemExit`` swallowed by ``call_method``),
``grade_call_based`` (top-level tuple to list, then ``prediction == json.loads(output)``; a
wrong value is recorded as False there, -2 on stdin), the
TimeoutException / other-exception branches (-3 / -4) and what happens when the grading process
dies or overruns: ``check_correctness`` then fails on its empty metadata list and
``evaluate_generations_by_problem`` keeps its initial ``[-2]``. ``passed_tests`` is the number of leading
passing tests (lcb_runner stops at the first failure). ``kind``: None (pass), "wrong_answer" (-2),
"timeout" (-3), "runtime_error" (-4), "no_result" (the process died: -2 there, ``lcb_kind``).

``HALF`` splits the set alternately in two: a disagreement on the "tune" half may change the host
comparator, one on the "held_out" half is only reported (with the tune half beside it), so the
held-out agreement says how the comparator does on cases it was not fitted to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TIMEOUT_S = 2  # per test, as lcb_runner's --timeout (an int there)


@dataclass(frozen=True)
class Problem:
    id: str
    mode: str  # stdin | functional
    tests: list[dict]  # input, output (lcb's strings)
    fn_name: str = ""


@dataclass(frozen=True)
class Case:
    id: str
    problem: str
    code: str
    passed: bool
    passed_tests: int
    kind: str | None
    why: str
    lcb_kind: str | None = field(default=None)  # where lcb_runner names the failure differently


def _t(i: str, o: str) -> dict:
    return {"input": i, "output": o}


PROBLEMS = {p.id: p for p in [
    Problem("sum", "stdin", [_t("2 3\n", "5\n"), _t("10 -4\n", "6\n"), _t("0 0\n", "0\n")]),
    Problem("ratio", "stdin", [_t("1 3\n", "0.333333\n"), _t("5 2\n", "2.500000\n")]),
    Problem("cube", "stdin", [_t("10\n", "1000\n"), _t("3\n", "27\n")]),
    Problem("pair", "stdin", [_t("3\n", "3 4\n"), _t("0\n", "0 1\n")]),
    Problem("count", "stdin", [_t("3\n", "1\n2\n3\n"), _t("1\n", "1\n")]),
    Problem("yesno", "stdin", [_t("4\n", "YES\n"), _t("3\n", "NO\n")]),
    Problem("add", "functional", [_t("1\n2", "3"), _t("5\n7", "12"), _t("-1\n1", "0")], "add"),
    Problem("two_sum", "functional", [_t("[2, 7, 11]\n9", "[0, 1]"), _t("[3, 3]\n6", "[0, 1]")], "twoSum"),
    Problem("pairs", "functional", [_t("2", "[[0, 1], [1, 2]]")], "pairs"),
    Problem("half", "functional", [_t("5", "2.5"), _t("4", "2.0")], "half"),
    Problem("even", "functional", [_t("4", "true"), _t("3", "false")], "isEven"),
    Problem("counts", "functional", [_t("\"aab\"", "{\"a\": 2, \"b\": 1}")], "counts"),
    Problem("first", "functional", [_t("[]", "null"), _t("[4]", "4")], "first"),
    Problem("echo", "functional", [_t("\"abc\"", "\"abc\""), _t("\"x\"", "\"x\"")], "echo"),
]}

_SUM_READ = "a, b = map(int, input().split())\n"
_RATIO_READ = "a, b = map(int, input().split())\n"
_cls = "class Solution:\n    def {fn}(self, {args}):\n"

CASES = [
    # -- stdin: grade_stdio -----------------------------------------------------------------
    Case("sum_ok", "sum", _SUM_READ + "print(a + b)\n", True, 3, None, "exact lines"),
    Case("sum_trailing_ws", "sum", _SUM_READ + "print(str(a + b) + '   \\n\\n')\n", True, 3, None,
         "get_stripped_lines strips the whole text and each line"),
    Case("sum_leading_ws", "sum", _SUM_READ + "print('  ', a + b)\n", True, 3, None, "each line stripped"),
    Case("sum_no_newline", "sum", _SUM_READ + "print(a + b, end='')\n", True, 3, None, "text stripped"),
    Case("sum_wrong", "sum", _SUM_READ + "print(a - b)\n", False, 0, "wrong_answer", "-1 != 5"),
    Case("sum_wrong_second", "sum", _SUM_READ + "print(abs(a) + abs(b))\n", False, 1, "wrong_answer",
         "test 1: 14 != 6; stops there"),
    Case("sum_extra_line", "sum", _SUM_READ + "print(a + b)\nprint('done')\n", False, 0, "wrong_answer",
         "mismatched output length"),
    Case("sum_float_form", "sum", _SUM_READ + "print(float(a + b))\n", True, 3, None,
         "'5.0' != '5' as text, Decimal('5.0') == Decimal('5')"),
    Case("sum_runtime", "sum", _SUM_READ + "print(a + b)\nraise ValueError('boom')\n", False, 0,
         "runtime_error", "exception inside call_method: -4"),
    Case("sum_timeout", "sum", "while True:\n    pass\n", False, 0, "timeout", "alarm: -3"),
    Case("sum_exit_1_after_answer", "sum", _SUM_READ + "import sys\nprint(a + b)\nsys.exit(1)\n", True, 3, None,
         "call_method swallows SystemExit; the output is compared"),
    Case("sum_main_guard", "sum", "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n"
         "if __name__ == '__main__':\n    main()\n", True, 3, None, "clean_if_name runs the guarded body"),
    Case("sum_stdin_read", "sum", "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n",
         True, 3, None, "sys.stdin.read() gives the input"),
    Case("ratio_6dp", "ratio", _RATIO_READ + "print(f'{a / b:.6f}')\n", True, 2, None, "exact lines"),
    Case("ratio_full_float", "ratio", _RATIO_READ + "print(a / b)\n", False, 0, "wrong_answer",
         "0.3333333333333333 != 0.333333: Decimal equality, no tolerance"),
    Case("ratio_7dp", "ratio", _RATIO_READ + "print(f'{a / b:.7f}')\n", False, 0, "wrong_answer",
         "one more digit is another Decimal"),
    Case("ratio_round", "ratio", _RATIO_READ + "print(round(a / b, 6))\n", True, 2, None,
         "'2.5' vs '2.500000': equal Decimals"),
    Case("cube_exponent", "cube", "n = int(input())\nprint(f'{float(n ** 3):e}')\n", True, 2, None,
         "Decimal('1.000000e+03') == Decimal('1000')"),
    Case("cube_words", "cube", "n = int(input())\nprint('one thousand' if n == 10 else n ** 3)\n", False, 0,
         "wrong_answer", "not a Decimal: -2"),
    Case("pair_double_space", "pair", "n = int(input())\nprint(n, ' ', n + 1)\n", True, 2, None,
         "'3   4' != '3 4' as text; whitespace-split Decimals equal"),
    Case("pair_comma", "pair", "n = int(input())\nprint(f'{n},{n + 1}')\n", False, 0, "wrong_answer",
         "'3,4' is not a Decimal"),
    Case("count_lines", "count", "n = int(input())\nprint('\\n'.join(map(str, range(1, n + 1))))\n", True, 2,
         None, "three lines, exact"),
    Case("count_one_line", "count", "n = int(input())\nprint(*range(1, n + 1))\n", False, 0, "wrong_answer",
         "1 line vs 3: mismatched length"),
    Case("yesno_case", "yesno", "n = int(input())\nprint('yes' if n % 2 == 0 else 'no')\n", False, 0,
         "wrong_answer", "comparison is case-sensitive"),
    Case("yesno_ok", "yesno", "n = int(input())\nprint('YES' if n % 2 == 0 else 'NO')\n", True, 2, None,
         "exact"),
    Case("yesno_exit_early", "yesno", "import os\nos._exit(0)\n", False, 0, "no_result",
         "the grading process dies: no result, [-2]", lcb_kind="wrong_answer"),
    # -- functional: grade_call_based -----------------------------------------------------------
    Case("add_ok", "add", _cls.format(fn="add", args="a, b") + "        return a + b\n", True, 3, None, "=="),
    Case("add_wrong_last", "add", _cls.format(fn="add", args="a, b") + "        return abs(a) + b\n",
         False, 2, "wrong_answer", "abs(-1) + 1 = 2 != 0"),
    Case("add_runtime", "add", _cls.format(fn="add", args="a, b") + "        return [a][b]\n", False, 0,
         "runtime_error", "IndexError: -4"),
    Case("add_timeout", "add", _cls.format(fn="add", args="a, b") + "        while True:\n            pass\n",
         False, 0, "timeout", "alarm: -3"),
    Case("add_missing_method", "add", _cls.format(fn="plus", args="a, b") + "        return a + b\n",
         False, 0, "runtime_error", "get_function returns None; run_test's except gives [-4]"),
    Case("add_syntax_error", "add", "class Solution:\n    def add(self, a, b)\n        return a + b\n",
         False, 0, "runtime_error", "compile_code raises: [-4]"),
    Case("add_prints_pass", "add", _cls.format(fn="add", args="a, b") + "        print('PASS')\n"
         "        return 0\n", False, 0, "wrong_answer", "prints do not count; 0 != 3"),
    Case("two_sum_list", "two_sum", _cls.format(fn="twoSum", args="nums, target")
         + "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
           "                return [seen[target - x], i]\n            seen[x] = i\n", True, 2, None, "=="),
    Case("two_sum_tuple", "two_sum", _cls.format(fn="twoSum", args="nums, target") + "        return (0, 1)\n",
         True, 2, None, "a top-level tuple becomes a list"),
    Case("two_sum_reversed", "two_sum", _cls.format(fn="twoSum", args="nums, target") + "        return [1, 0]\n",
         False, 0, "wrong_answer", "order matters"),
    Case("two_sum_set", "two_sum", _cls.format(fn="twoSum", args="nums, target") + "        return {0, 1}\n",
         False, 0, "wrong_answer", "a set never equals a list"),
    Case("pairs_lists", "pairs", _cls.format(fn="pairs", args="n") + "        return [[i, i + 1] for i in range(n)]\n",
         True, 1, None, "=="),
    Case("pairs_nested_tuples", "pairs", _cls.format(fn="pairs", args="n")
         + "        return [(i, i + 1) for i in range(n)]\n", False, 0, "wrong_answer",
         "only the top level is converted: [(0, 1)] != [[0, 1]]"),
    Case("half_float", "half", _cls.format(fn="half", args="n") + "        return n / 2\n", True, 2, None,
         "2.5 == 2.5; 2.0 == 2.0"),
    Case("half_int_for_float", "half", _cls.format(fn="half", args="n")
         + "        return n // 2 if n % 2 == 0 else n / 2\n", True, 2, None, "2 == 2.0"),
    Case("half_close_float", "half", _cls.format(fn="half", args="n") + "        return n / 2 + 1e-9\n", False, 0,
         "wrong_answer", "no float tolerance in grade_call_based"),
    Case("even_bool", "even", _cls.format(fn="isEven", args="n") + "        return n % 2 == 0\n", True, 2, None, "=="),
    Case("even_int", "even", _cls.format(fn="isEven", args="n") + "        return 1 - n % 2\n", True, 2, None,
         "1 == True, 0 == False"),
    Case("even_str", "even", _cls.format(fn="isEven", args="n") + "        return 'true' if n % 2 == 0 else 'false'\n",
         False, 0, "wrong_answer", "'true' != True"),
    Case("counts_dict", "counts", _cls.format(fn="counts", args="s")
         + "        d = {}\n        for c in s:\n            d[c] = d.get(c, 0) + 1\n        return d\n",
         True, 1, None, "dict =="),
    Case("counts_int_keys", "counts", _cls.format(fn="counts", args="s")
         + "        return {ord(c) - 96: s.count(c) for c in set(s)}\n", False, 0, "wrong_answer",
         "{1: 2, 2: 1} != {'a': 2, 'b': 1}"),
    Case("first_none", "first", _cls.format(fn="first", args="xs") + "        return xs[0] if xs else None\n",
         True, 2, None, "None == null"),
    Case("echo_ok", "echo", _cls.format(fn="echo", args="s") + "        return s\n", True, 2, None, "=="),
    Case("echo_space", "echo", _cls.format(fn="echo", args="s") + "        return s + ' '\n", False, 0,
         "wrong_answer", "functional values are not stripped"),
    Case("echo_sys_exit", "echo", _cls.format(fn="echo", args="s") + "        raise SystemExit(0)\n", False, 0,
         "runtime_error", "SystemExit escapes grade_call_based's except Exception and ends the process: [-2]",
         lcb_kind="wrong_answer"),
    Case("echo_os_exit", "echo", "import os\n" + _cls.format(fn="echo", args="s") + "        os._exit(0)\n",
         False, 0, "no_result", "the process dies mid-test: [-2]", lcb_kind="wrong_answer"),
]

# every other case, in the order written, is held out
HALF = {c.id: ("tune" if i % 2 == 0 else "held_out") for i, c in enumerate(CASES)}
