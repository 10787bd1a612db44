"""Canonical decontamination: display wrappers stripped, renamed code matched, clean code kept.

Expected values are hand-written: the stripped texts, and which hand-made rows match which
hand-made items.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from surrogate_dagster.curation.benchmark_refs import benchmarks_dir, load_code_parts, without_docstrings
from surrogate_dagster.curation.decontam import BenchmarkIndex, BenchmarkItem, Decontaminator
from surrogate_dagster.curation.canonical_code import canonical_tokens, shingle_hashes
from surrogate_dagster.curation.decontam_canonical import CanonicalIndex, CanonicalParams
from surrogate_dagster.curation.decontam import normalize
from surrogate_dagster.curation.decontam_views import normalized_and_stripped, strip_views

ITEM = textwrap.dedent('''\
    def running_max_gap(values, window):
        best = 0
        for start in range(len(values) - window + 1):
            chunk = values[start:start + window]
            gap = max(chunk) - min(chunk)
            if gap > best:
                best = gap
        return best

    assert running_max_gap([1, 5, 2, 8, 3], 2) == 6
    assert running_max_gap([4, 4, 4], 3) == 0
    ''')
RENAMED = textwrap.dedent('''\
    def widest_spread(seq, k):
        top = 0
        for i in range(len(seq) - k + 1):
            part = seq[i:i + k]
            d = max(part) - min(part)
            if d > top:
                top = d
        return top

    assert widest_spread([1, 5, 2, 8, 3], 2) == 6
    assert widest_spread([4, 4, 4], 3) == 0
    ''')
# the same vocabulary and layout, another algorithm
NEAR_MISS = textwrap.dedent('''\
    def running_total(values, window):
        total = 0
        for start in range(0, len(values), window):
            total += sum(values[start:start + window])
        return total

    assert running_total([1, 5, 2, 8, 3], 2) == 19
    ''')
OTHER_ITEM = textwrap.dedent('''\
    def count_vowel_runs(text):
        runs, inside = 0, False
        for ch in text.lower():
            vowel = ch in "aeiou"
            if vowel and not inside:
                runs += 1
            inside = vowel
        return runs
    ''')
PARAMS = CanonicalParams(k=10, min_shingles=8, min_fraction=0.4, max_item_df=3)


@pytest.fixture(scope="module")
def canon() -> CanonicalIndex:
    return CanonicalIndex.build([BenchmarkItem("bench", "item/1", ITEM), BenchmarkItem("bench", "item/2", OTHER_ITEM)],
                                PARAMS)


# ----------------------------------------------------------------------------- views


def test_cat_n_gutter_is_stripped_and_prose_numbers_are_kept() -> None:
    listing = "     1\tdef f(x):\n     2\t    return x + 1\n     3\t\n"
    assert strip_views(listing).split("\n") == ["def f(x):", "    return x + 1", "", ""]
    assert strip_views("12 | a = 1\n13 | b = 2") == "a = 1\nb = 2"
    # a number opening one line, with no neighbour continuing the count, is content
    assert strip_views("10 items were sold\nthen 3 more") == "10 items were sold\nthen 3 more"


def test_notebook_json_quoting_is_stripped() -> None:
    nb = json.dumps({"cells": [{"cell_type": "code", "source": ["def f(x):\n", "    return x\n"]}]}, indent=1)
    toks, _ = canonical_tokens(nb)
    plain, _ = canonical_tokens("def f(x):\n    return x\n")
    joined, want = " ".join(toks), " ".join(plain)
    assert want in joined


def test_notebook_structure_lines_go_and_cells_keep_their_indentation() -> None:
    nb = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": ["def f(x):\n", "    return {x: 1}\n"]},
                               {"cell_type": "code", "outputs": [], "source": ["assert f(2) == {2: 1}\n"]}]}, indent=1)
    lines = [ln for ln in strip_views(nb).split("\n") if ln.strip()]
    assert lines == ["def f(x):", "    return {x: 1}", "assert f(2) == {2: 1}"]
    # inside a chat row's JSON (escaped twice) the same
    chat = json.dumps({"content": nb})
    assert [ln for ln in strip_views(chat).split("\n") if ln.strip()][1:-1] == lines


def test_escaped_tabs_stay_tabs_so_a_gutter_keeps_the_code_indentation() -> None:
    listing = "     1\tdef f(x):\n     2\t    return x\n"
    assert strip_views(json.dumps({"content": "Here:\n" + listing})).split("\n")[1:3] == ["def f(x):", "    return x"]


def test_one_pass_gives_the_normalized_and_the_stripped_text() -> None:
    rows = ["def f(a):\n    # note\n    return a", '<pre><span class="k">if</span> a &lt; b</pre>',
            json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1\n"]}]}), "1\tx = 1\n2\ty = 2", ""]
    for row in rows:
        assert normalized_and_stripped(row) == (normalize(row), strip_views(row))
    plain = normalized_and_stripped(rows[0])
    assert plain[0] is plain[1]  # no view: one string for both


def test_highlighted_html_tags_and_entities_are_stripped() -> None:
    html = ('<div class="highlight"><pre><span class="k">if</span> <span class="n">a</span> '
            '<span class="o">&lt;</span> <span class="n">b</span><span class="p">:</span></pre></div>')
    assert strip_views(html).strip() == "if a < b:"
    # a comparison that only looks like a tag stays
    assert strip_views("if a<b and c>d: pass  </x>").startswith("if a<b and c>d")


# ----------------------------------------------------------------------------- shingles


def test_renaming_leaves_the_shingles_unchanged() -> None:
    a = shingle_hashes(*canonical_tokens("def add(a, b):\n    total = a + b\n    return total * 2\n"), 8)
    b = shingle_hashes(*canonical_tokens("def plus(x, y):\n    s = x + y\n    return s * 2\n"), 8)
    c = shingle_hashes(*canonical_tokens("def plus(x, y):\n    s = x - y\n    return s * 2\n"), 8)
    assert a.size > 0 and np.array_equal(a, b)
    assert not np.array_equal(a, c)  # the operator is structure, not a name
    # a name reused at another distance is another shingle: (a, a) is not (a, b)
    d = shingle_hashes(*canonical_tokens("def plus(x, x):\n    s = x + x\n    return s * 2\n"), 8)
    assert not np.array_equal(a, d)


def test_shingles_are_position_stable() -> None:
    code = "def add(a, b):\n    total = a + b\n    return total * 2\n"
    alone = set(shingle_hashes(*canonical_tokens(code), 8).tolist())
    prefixed = set(shingle_hashes(*canonical_tokens("import os\nb = os.getcwd()\n" + code), 8).tolist())
    assert alone <= prefixed  # first-seen numbering over the row would renumber every name


def test_semicolons_and_parentheses_are_not_structure() -> None:
    a = canonical_tokens("s = (n * (n + 1)) // 2;\nreturn s;")[0]
    b = canonical_tokens("s = n * (n + 1) // 2\nreturn s")[0]
    assert a == b and ";" not in a and "(" not in a


def test_numbers_are_kept_or_replaced_as_configured() -> None:
    one = canonical_tokens("x = 10 + y", keep_numbers=True)
    assert one[1].tolist() == [1, 0, 0, 0, 1]
    two = canonical_tokens("x = 10 + y", keep_numbers=False)
    assert two[1].tolist() == [1, 0, 2, 0, 1]


# ----------------------------------------------------------------------------- index and rule


def test_renamed_item_matches_its_part(canon) -> None:
    m = canon.check(RENAMED)
    assert m is not None and (m.benchmark, m.item_id) == ("bench", "item/1")
    assert m.reason == "decontam_bench"


@pytest.mark.parametrize("shape", ["cat -n", "html", "notebook", "json"])
def test_renamed_item_in_a_view_matches(canon, shape) -> None:
    if shape == "cat -n":
        row = "\n".join(f"{i:6}\t{ln}" for i, ln in enumerate(RENAMED.split("\n"), 1))
    elif shape == "html":
        row = "<pre>" + "".join(f'<span class="n">{w}</span>' if w.isidentifier() else
                                w.replace("<", "&lt;").replace(">", "&gt;")
                                for w in __import__("re").split(r"(\W)", RENAMED)) + "</pre>"
    elif shape == "notebook":
        row = json.dumps({"cells": [{"cell_type": "code", "source": RENAMED.splitlines(keepends=True)}]}, indent=1)
    else:
        row = json.dumps({"messages": [{"role": "assistant", "content": f"```python\n{RENAMED}```"}]})
    m = canon.check(row)
    assert m is not None and m.item_id == "item/1"


def test_clean_near_miss_and_unrelated_code_do_not_match(canon) -> None:
    assert canon.check(NEAR_MISS) is None
    assert canon.check("def greet(name):\n    return f'hello {name}'\n") is None
    assert canon.check("") is None


def test_min_fraction_counts_a_share_of_the_part(canon) -> None:
    half = "\n".join(RENAMED.split("\n")[:4])  # the loop head only: under 40% of the part
    assert canon.check(half) is None
    loose = CanonicalIndex.build([BenchmarkItem("bench", "item/1", ITEM)], CanonicalParams(k=10, min_shingles=1,
                                                                                              min_fraction=0.05))
    assert loose.check(half) is not None


def test_shingles_common_to_many_items_are_pruned() -> None:
    body = "def f{i}(a):\n    result = []\n    for x in a:\n        result.append(x * {i})\n    return result\n"
    items = [BenchmarkItem("b", f"i{i}", body.format(i=i)) for i in range(6)]
    idx = CanonicalIndex.build(items, CanonicalParams(k=6, min_shingles=1, min_fraction=0.1, max_item_df=3))
    assert idx.meta["pruned_common_shingles"] > 0
    # what is left of each item is only the shingles holding its own number
    assert idx.check("def g(b):\n    out = []\n    for y in b:\n        out.append(y") is None


def test_fingerprints_common_to_many_items_are_pruned() -> None:
    body = "def f{i}(a: list) -> int:\n    return len(set(a))\n"
    items = [BenchmarkItem("b", f"i{i}", body.format(i=i)) for i in range(5)]
    idx = CanonicalIndex.build(items, CanonicalParams(max_item_df=3))
    assert idx.meta["pruned_common_fingerprints"] == 1 and idx.meta["fingerprinted_parts"] == 0
    assert idx.check("def g(b: list) -> int:\n    return len(set(b))\n") is None
    few = CanonicalIndex.build(items[:3], CanonicalParams(max_item_df=3))
    assert few.check("def g(b: list) -> int:\n    return len(set(b))\n") is not None


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        CanonicalIndex.build([], CanonicalParams(min_fraction=0))
    with pytest.raises(ValueError):
        CanonicalIndex.build([], CanonicalParams(k=1))


def test_stored_with_the_exact_index_and_used_by_the_decontaminator(canon) -> None:
    exact = BenchmarkIndex.build([BenchmarkItem("bench", "item/1", ITEM)], n=13)
    exact.canonical = canon
    back = BenchmarkIndex.from_bytes(exact.to_bytes())
    assert back.canonical is not None and np.array_equal(back.canonical.hashes, canon.hashes)
    assert canon.fp_hashes.size and np.array_equal(back.canonical.fp_hashes, canon.fp_hashes)
    assert np.array_equal(back.canonical.part_functions, canon.part_functions)
    dec = Decontaminator(back)
    assert Decontaminator(BenchmarkIndex.from_bytes(BenchmarkIndex.build([], n=13).to_bytes())).canonical is None
    # the exact index misses the renamed copy; the canonical index finds it, in check and check_many
    assert dec.check_exact(RENAMED) is None
    rows = [RENAMED, NEAR_MISS, ITEM]
    found = dec.check_many(rows)
    assert [m.item_id if m else None for m in found] == ["item/1", None, "item/1"]
    assert [m.item_id if m else None for m in map(dec.check, rows)] == ["item/1", None, "item/1"]


def test_without_docstrings() -> None:
    src = 'def f(x):\n    """Doc\n    more."""\n    return x\n\nclass A:\n    "one line"\n    y = 1\n'
    assert without_docstrings(src) == "def f(x):\n    return x\n\nclass A:\n    y = 1"
    assert without_docstrings("def (:") == "def (:"


@pytest.mark.skipif(not benchmarks_dir().is_dir(), reason="benchmark files not present")
def test_code_parts_of_the_benchmark_files() -> None:
    parts = load_code_parts(benchmarks_dir())
    he = [p for p in parts if p.item_id == "HumanEval/0"]
    assert len(he) == 3 and '"""' in he[0].text and '"""' not in he[1].text and "def check(candidate)" in he[2].text
    assert {p.benchmark for p in parts} == {"humaneval", "mbpp", "mbppplus"}
    with pytest.raises(KeyError):
        load_code_parts(benchmarks_dir(), ["bfcl"])
