"""The compiled row pass of the canonical index finds what the numpy path finds.

Rows cover what either pass reads: line breaks and indentation (function spans), closing
brackets opening a line, ``async def``, nested functions, semicolons and parentheses (dropped),
quotes (unified), numbers, rows shorter than a shingle, empty rows and rows the compiled pass
does not take (non-ASCII). The index is built from hand-written items; the expected values are
the numpy path's, which the other canonical tests check against hand-written ones.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from surrogate_dagster.curation import minhash_numpy as mnp
from surrogate_dagster.curation.decontam_canonical import CanonicalIndex, CanonicalParams
from surrogate_dagster.curation.decontam_text import BenchmarkItem

ITEMS = [
    'def pair_sum(xs, target):\n    seen = set()\n    for x in xs:\n        if target - x in seen:\n'
    '            return True\n        seen.add(x)\n    return False\n\nassert pair_sum([1, 2, 3], 5) == True\n',
    'def area(w: float, h: float) -> float:\n    return w * h / 2.0\n',
    'async def fetch_all(urls):\n    out = []\n    for u in urls:\n        out.append(await get(u))\n    return out\n',
    'def outer(n):\n    def inner(k):\n        return k * k\n    return sum(inner(i) for i in range(n))\n',
    'def spaced(\n    a,\n    b,\n):\n    return {"a": a, "b": b}; \n',
]
ROWS = ITEMS + [
    'def add_pairs(vals, goal):\n  got = set()\n  for v in vals:\n    if goal - v in got:\n      return True\n'
    '    got.add(v)\n  return False\n',
    "def tri(b: float, c: float) -> float:\n    return b * c / 2.0\n\nprint(tri(3, 4))",
    "def tri(b: float, c: float) -> float:\n    return b * c / 2.0 + 1\n",
    "x = 1; y = (2); z = 'q'\n" * 3,
    "def f(a):\n    return a\n" * 2,
    "    def indented(a, b):\n        return a - b\n    y = 2\n",
    "async def fetch_all(x):\n    pass\n",
    "def café(n):\n    return n * 2.0 / 2.0\n",  # not ASCII: the numpy path
    "",
    "def",
    "\n\n   \n",
    "a b c",
    "prose with def in the middle\ndef\n",
]


@pytest.fixture(scope="module")
def index() -> CanonicalIndex:
    items = [BenchmarkItem("b", f"i{i}", t) for i, t in enumerate(ITEMS)]
    return CanonicalIndex.build(items, CanonicalParams(k=6, min_shingles=2, min_fraction=0.3, min_fingerprint_words=1))


def _same(a, b) -> None:
    for field in ("rows", "parts", "shared", "whole_rows", "whole_parts"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.skipif(mnp.kernels() is None, reason="numba not installed")
def test_compiled_pass_equals_numpy_path(index, monkeypatch) -> None:
    rng = random.Random(5)
    # rows glued together in random orders, so spans and shingles cross row boundaries
    rows = ROWS + ["\n".join(rng.sample(ROWS, 4)) for _ in range(40)]
    compiled = index.evidence(rows)
    assert compiled.whole_rows.size and compiled.rows.size  # the rows do hit the index
    monkeypatch.setattr(mnp, "_KERNELS", False)
    _same(compiled, index.evidence(rows))


@pytest.mark.skipif(mnp.kernels() is None, reason="numba not installed")
def test_compiled_pass_in_several_batches(index, monkeypatch) -> None:
    import surrogate_dagster.curation.decontam_canonical as dc

    rows = ROWS * 5
    whole = index.evidence(rows)
    monkeypatch.setattr(dc, "_BATCH_BYTES", 64)  # a batch per row or two
    _same(whole, index.evidence(rows))
