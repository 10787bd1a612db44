"""Canonical decontamination, one planted shape per class, each beside a clean look-alike.

The shapes are written out by hand (renamed, reformatted, line-numbered) or made by code the
detector does not use (``json`` for notebooks and chat rows, Pygments for highlighted HTML), so
a match here is not the canonicalizer agreeing with itself. Each look-alike is clean code in the
same shape, with the same vocabulary, that does something else. The index holds hand-written
items under the production parameters.
"""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.curation.decontam import BenchmarkIndex, Decontaminator
from surrogate_dagster.curation.decontam_canonical import CanonicalIndex, CanonicalParams
from surrogate_dagster.curation.decontam_text import BenchmarkItem

# a HumanEval-like item: prompt (signature + docstring), solution, tests
HE_PROMPT = '''from typing import List


def below_floor(operations: List[int], floor: int) -> bool:
    """ Given deposits and withdrawals, return True as soon as the running balance
    falls below floor, and otherwise return False.
    >>> below_floor([1, 2, -4, 5], 0)
    True
    """
'''
HE_SOLUTION = '''    balance = 0
    for op in operations:
        balance += op
        if balance < floor:
            return True
    return False
'''
HE_BARE = "from typing import List\n\n\ndef below_floor(operations: List[int], floor: int) -> bool:\n" + HE_SOLUTION
HE_TESTS = '''def check(candidate):
    assert candidate([], 0) == False
    assert candidate([1, 2, -3, 1, 2, -3], 0) == False
    assert candidate([1, 2, -4, 5, 6], 0) == True
'''
# a HumanEval-like one-liner: too short for shingles, matched as a whole function
SHORT = '''def count_distinct_characters(string: str) -> int:
    """ Given a string, find out how many distinct characters (regardless of case) it holds
    >>> count_distinct_characters('xyzXYZ')
    3
    """
    return len(set(string.lower()))
'''
SHORT_BARE = "def count_distinct_characters(string: str) -> int:\n    return len(set(string.lower()))\n"
# an MBPP-like item: code and asserts
MBPP = '''def max_run_uppercase(test_str):
  cnt = 0
  res = 0
  for idx in range(0, len(test_str)):
    if test_str[idx].isupper():
      cnt += 1
    else:
      res = cnt
      cnt = 0
  if test_str[len(test_str) - 1].isupper():
    res = cnt
  return (res)
assert max_run_uppercase('GeMKSForGERksISBESt') == 5
assert max_run_uppercase('PrECIOusMOVemENTSYT') == 6
assert max_run_uppercase('GooGLEFluTTER') == 4
'''


@pytest.fixture(scope="module")
def dec() -> Decontaminator:
    parts = [BenchmarkItem("humaneval", "HE/1", t) for t in (HE_PROMPT + HE_SOLUTION, HE_BARE, HE_BARE + HE_TESTS)]
    parts += [BenchmarkItem("humaneval", "HE/2", t) for t in (SHORT, SHORT_BARE)]
    parts += [BenchmarkItem("mbpp", "mbpp/1", MBPP)]
    exact = BenchmarkIndex.build([BenchmarkItem("humaneval", "HE/1", HE_PROMPT + HE_SOLUTION + HE_TESTS),
                                  BenchmarkItem("humaneval", "HE/2", SHORT), BenchmarkItem("mbpp", "mbpp/1", MBPP)])
    return Decontaminator(exact, canonical=CanonicalIndex.build(parts, CanonicalParams()))


def _cat_n(src: str) -> str:  # what `cat -n` prints
    return "".join(f"{i:6}\t{line}\n" for i, line in enumerate(src.splitlines(), 1))


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": i, "metadata": {}, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for i, c in enumerate(cells, 1)],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def _html(src: str) -> str:
    pygments = pytest.importorskip("pygments")
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return pygments.highlight(src, PythonLexer(), HtmlFormatter())


def _chat(text: str) -> str:
    return json.dumps({"messages": [{"role": "user", "content": "Can you look at this?"},
                                    {"role": "assistant", "content": f"Here it is:\n\n{text}\nDone."}]})


MBPP_RENAMED = '''def longest_caps(word):
  run = 0
  best = 0
  for pos in range(0, len(word)):
    if word[pos].isupper():
      run += 1
    else:
      best = run
      run = 0
  if word[len(word) - 1].isupper():
    best = run
  return (best)
assert longest_caps('GeMKSForGERksISBESt') == 5
assert longest_caps('PrECIOusMOVemENTSYT') == 6
assert longest_caps('GooGLEFluTTER') == 4
'''
MBPP_LOOKALIKE = '''def longest_digits(word):
  best = 0
  run = 0
  for ch in word:
    run = run + 1 if ch.isdigit() else 0
    best = max(best, run)
  return best
assert longest_digits('ab123c45') == 3
assert longest_digits('9x99') == 2
'''
HE_RENAMED_BARE = '''from typing import List


def dips_under(moves: List[int], limit: int) -> bool:
    total = 0
    for step in moves:
        total += step
        if total < limit:
            return True
    return False
'''
HE_LOOKALIKE_BARE = '''from typing import List


def count_over(values: List[float], cap: float) -> int:
    count = 0
    for v in values:
        if v > cap:
            count += 1
    return count
'''
HE_RENAMED_EVERYWHERE = '''from typing import List


def dips_under(moves: List[int], limit: int) -> bool:
    """ Given deposits and withdrawals, return True as soon as the running balance
    falls below limit, and otherwise return False.
    >>> dips_under([1, 2, -4, 5], 0)
    True
    """
    total = 0
    for step in moves:
        total += step
        if total < limit:
            return True
    return False
'''
HE_LOOKALIKE_DOCSTRING = '''from typing import List


def rises_over(moves: List[int], limit: int) -> bool:
    """ Given deposits and withdrawals, return True when the balance at the end
    is above limit, and otherwise return False.
    >>> rises_over([1, 2, -4, 5], 0)
    True
    """
    return sum(moves) > limit
'''
# ast.unparse-like: two-space indent, other quotes, parentheses and semicolons changed
HE_REFORMATTED = '''from typing import List

def below_floor(operations: List[int], floor: int) -> bool:
  \'\'\' Given deposits and withdrawals, return True as soon as the running balance
    falls below floor, and otherwise return False.
    >>> below_floor([1, 2, -4, 5], 0)
    True
    \'\'\'
  balance = (0);
  for op in (operations):
    balance += op
    if (balance < floor):
      return True
  return False
'''
HE_LOOKALIKE_REFORMATTED = '''from typing import List

def under_floor_count(operations: List[int], floor: int) -> int:
  \'\'\' Count the operations below floor. \'\'\'
  count = 0
  for op in operations:
    if (op < floor):
      count += 1
  return count
'''
COMBINED = '''def dips_under(moves: List[int], limit: int) -> bool:
  total = 0
  for step in moves:
    total += step
    if total < limit:
      return True
  return False
'''
CLASSES = {
    "rename": (MBPP_RENAMED, MBPP_LOOKALIKE, "mbpp/1"),
    "no docstring": ("def uniq_count(s: str) -> int:\n    return len(set(s.lower()))\n",
                     "def uniq_count(s: str) -> int:\n    return len(s.lower())\n", "HE/2"),
    "renamed docstring": (HE_RENAMED_EVERYWHERE, HE_LOOKALIKE_DOCSTRING, "HE/1"),
    "cat -n": (_cat_n(HE_PROMPT + HE_SOLUTION), _cat_n(HE_LOOKALIKE_BARE), "HE/1"),
    "notebook JSON": (_notebook(MBPP_RENAMED.split("assert")[0], "assert" + MBPP_RENAMED.split("assert", 1)[1]),
                      _notebook(MBPP_LOOKALIKE), "mbpp/1"),
    "reformatted": (HE_REFORMATTED, HE_LOOKALIKE_REFORMATTED, "HE/1"),
    "combined": (_chat(_cat_n(COMBINED)), _chat(_cat_n(HE_LOOKALIKE_BARE)), "HE/1"),
}


@pytest.mark.parametrize("cls", sorted(CLASSES))
def test_planted_shape_matches_and_its_look_alike_does_not(dec, cls) -> None:
    planted, lookalike, item_id = CLASSES[cls]
    m = dec.check(planted)
    assert m is not None and m.item_id == item_id, cls
    assert dec.check(lookalike) is None, cls
    # the batch path decides the same
    assert [x.item_id if x else None for x in dec.check_many([planted, lookalike])] == [item_id, None]


def test_highlighted_html(dec) -> None:
    assert dec.check(_html(HE_RENAMED_BARE)).item_id == "HE/1"
    assert dec.check(_html(HE_LOOKALIKE_BARE)) is None


def test_renamed_shapes_escape_the_exact_index(dec) -> None:
    # what the canonical index is for: the exact index alone misses these shapes
    exact_only = Decontaminator(dec.index, canonical=None)
    exact_only.canonical = None
    for cls in ("rename", "no docstring", "combined"):
        assert exact_only.check(CLASSES[cls][0]) is None, cls


def test_a_whole_function_must_be_specific_and_complete(dec) -> None:
    canon = dec.canonical
    # the one-liner inside a longer function is not the item's function
    assert canon.check("def uniq_count(s: str) -> int:\n    n = len(set(s.lower()))\n    return n\n") is None
    assert canon.check("def uniq_count(s: str) -> int:\n    return len(set(s.lower())) - 1\n") is None
    # beside other code it still is
    row = "import os\n\n" + CLASSES["no docstring"][0] + "\nprint(uniq_count(os.getcwd()))\n"
    assert canon.check(row).item_id == "HE/2"
    # a function with too few kept words is everyone's: never matched whole
    generic = CanonicalIndex.build([BenchmarkItem("b", "g", "def getter(obj, key):\n    return obj.fetch(key)\n")],
                                   CanonicalParams())
    assert generic.meta["fingerprinted_parts"] == 0
    assert generic.check("def pick(d, k):\n    return d.fetch(k)\n") is None


def test_batches_over_workers_decide_the_same(dec) -> None:
    rows = [r for planted, lookalike, _ in CLASSES.values() for r in (planted, lookalike)]
    one = [m.item_id if m else None for m in dec.check_many(rows)]
    assert one == [m.item_id if m else None for m in dec.check_many(rows, workers=2, chunk_size=3)]
    assert one == [m.item_id if m else None for m in map(dec.check, rows)]
