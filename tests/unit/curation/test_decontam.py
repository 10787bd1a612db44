"""Decontamination: benchmark loaders, the n-gram index, positive and negative controls."""

from __future__ import annotations

import gzip
import inspect
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from surrogate_dagster.curation.benchmark_refs import (
    LOADERS,
    BenchmarkFileMissing,
    benchmarks_dir,
    items_from_livecodebench_rows,
    load_benchmarks,
    load_humaneval,
)
from surrogate_dagster.curation.decontam import BenchmarkIndex, BenchmarkItem, Decontaminator, tokenize

BENCH = benchmarks_dir()
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason=f"benchmark files not at {BENCH}")


@pytest.fixture(scope="module")
def loaded():
    return load_benchmarks(BENCH)


@pytest.fixture(scope="module")
def index(loaded) -> BenchmarkIndex:
    items, manifest = loaded
    return BenchmarkIndex.build(items, n=13, sources=manifest)


@pytest.fixture(scope="module")
def dec(index) -> Decontaminator:
    return Decontaminator(index)  # default rule: min_matches=4


@pytest.fixture(scope="module")
def prompts() -> dict[str, str]:
    """HumanEval prompts only (an index item also holds the solution and tests)."""
    with gzip.open(BENCH / "HumanEval.jsonl.gz", "rt") as fh:
        return {r["task_id"]: r["prompt"] for r in map(json.loads, fh)}


# ----------------------------------------------------------------------------- loaders


def test_all_benchmarks_load_and_are_recorded(loaded, index) -> None:
    items, manifest = loaded
    assert set(manifest) == set(LOADERS)
    assert all(m["present"] for m in manifest.values())
    counts = {k: m["items"] for k, m in manifest.items()}
    assert counts["humaneval"] == 164 and counts["swebench_lite"] == 300 and counts["livecodebench"] == 180
    assert counts["mbpp"] == 974 and counts["mbppplus"] == 399 and counts["bfcl"] > 4000
    assert "stand_in" in manifest["livecodebench"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for m in manifest.values() for h in m["files"].values())
    assert index.meta["sources"] == manifest
    bfcl = next(i for i in items if i.item_id == "simple_python_0")
    assert "area of a triangle" in bfcl.text


def test_missing_file_error_names_it(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkFileMissing, match=re.escape(str(tmp_path / "HumanEval.jsonl.gz"))):
        load_humaneval(tmp_path)
    shutil.copy(BENCH / "HumanEval.jsonl.gz", tmp_path)
    with pytest.raises(BenchmarkFileMissing, match="sanitized-mbpp.json"):
        load_benchmarks(tmp_path, names=["humaneval", "mbpp"])
    items, manifest = load_benchmarks(tmp_path, names=["humaneval", "mbpp"], on_missing="skip")
    assert manifest["humaneval"]["present"] and not manifest["mbpp"]["present"]
    assert "sanitized-mbpp.json" in manifest["mbpp"]["error"] and len({i.item_id for i in items}) == 164
    assert BenchmarkIndex.build(items, sources=manifest).meta["sources"]["mbpp"]["present"] is False


def test_livecodebench_hf_rows() -> None:
    rows = [{"question_id": "3275", "question_title": "t", "question_content": "c", "starter_code": "s"}]
    assert list(items_from_livecodebench_rows(rows)) == [BenchmarkItem("livecodebench", "3275", "t\nc\ns")]


# ----------------------------------------------------------------------------- positive controls


def _reindent(code: str) -> str:
    return "\n".join(re.sub(r"^( {4})+", lambda m: "\t" * (len(m.group(0)) // 4), ln) for ln in code.split("\n"))


PLANTINGS = {
    "exact": lambda t: t,
    "reindented": _reindent,
    "recased": str.upper,
    "embedded": lambda t: "Here is a helper from our utils module.\n\n```python\nimport os\n\n"
                          + textwrap.indent(t, "    ") + "\n```\nIt is used by the CLI to parse flags.",
}


@pytest.mark.parametrize("style", list(PLANTINGS))
@pytest.mark.parametrize("task", ["HumanEval/0", "HumanEval/53", "HumanEval/163"])
def test_planted_humaneval_prompt_is_caught(dec, prompts, style, task) -> None:
    text = PLANTINGS[style](prompts[task])
    m = dec.check(text)
    assert m is not None and (m.benchmark, m.item_id) == ("humaneval", task)
    assert m.reason == "decontam_humaneval" and dec(text) == "decontam_humaneval"
    assert m.longest_match_tokens >= 13 and m.matched_ngrams >= 3


def test_longest_match_covers_the_whole_embedded_prompt(dec, prompts) -> None:
    prompt = prompts["HumanEval/0"]
    m = dec.check("Some chat before.\n" + prompt + "\nAnd after, unrelated words follow here.")
    # every informative 13-gram of the prompt matches; the run spans (nearly) all its tokens
    assert m.longest_match_tokens >= 0.8 * len(tokenize(prompt))


def test_other_benchmarks_are_caught(dec, loaded) -> None:
    items, _ = loaded
    by_key = {(i.benchmark, i.item_id): i for i in items}
    lcb = next(k for k in by_key if k[0] == "livecodebench")
    want = {("swebench_lite", "django__django-11099"), lcb}
    want |= {("bfcl", "live_multiple_0-0-0"), ("mbppplus", "Mbpp/2")}
    for key in want:
        m = dec.check("user: please help\n" + by_key[key].text.lower())
        assert m is not None and m.benchmark == key[0], key


def test_short_bfcl_questions(dec, index, loaded) -> None:
    items, _ = loaded
    by_id = {i.item_id: i for i in items if i.benchmark == "bfcl"}
    q = by_id["irrelevance_182"].text  # 12 tokens: indexed whole
    assert len(tokenize(q)) == 12 and 12 in index.short_lengths
    m = dec.check(f"[user] {q}\n[assistant] <tool_call>...")
    assert m is not None and m.item_id in {i for i, it in by_id.items() if it.text == q}
    assert dec.check(by_id["live_irrelevance_174-27-1"].text) is None  # "Where is my order": too short
    assert index.meta["unmatchable"]["bfcl"] > 0


# ----------------------------------------------------------------------------- rule and negatives


def test_min_match_rule(index, prompts) -> None:
    assert Decontaminator(index).min_matches == 4
    toks = tokenize(prompts["HumanEval/10"])
    # the first window of 15 tokens that are all words: its 3 13-grams are all informative
    s = next(i for i in range(len(toks)) if all(t.isalpha() for t in toks[i:i + 15]))
    one_gram = " ".join(toks[s:s + 13])  # exactly 13 tokens: one n-gram of the item
    assert Decontaminator(index, min_matches=1).check(one_gram) is not None
    assert Decontaminator(index, min_matches=3).check(one_gram) is None
    assert Decontaminator(index, min_matches=3).check(" ".join(toks[s:s + 14])) is None  # 2 n-grams
    m = Decontaminator(index, min_matches=3).check(" ".join(toks[s:s + 15]))  # 3 n-grams
    assert m is not None and m.item_id == "HumanEval/10" and m.longest_match_tokens == 15
    with pytest.raises(ValueError):
        Decontaminator(index, min_matches=0)


SNIPPETS = [
    "for i in range(10):\n    print(i)",
    'if __name__ == "__main__":\n    main()',
    "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt",
    "def __init__(self, *args, **kwargs):\n    super().__init__(*args, **kwargs)",
    "result = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]",
    "with open(path) as f:\n    data = json.load(f)\nreturn data",
    "Traceback (most recent call last):\n  File \"main.py\", line 1, in <module>",
    "for i in range(n):\n    for j in range(n):\n        total += grid[i][j]",  # flagged with k=3
]

CLEAN_CODE = '''
class LRUCache:
    """A fixed-size mapping that evicts the least recently used key."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: "OrderedDict[str, bytes]" = OrderedDict()

    def get(self, key: str) -> bytes | None:
        if key not in self._data:
            return None
        self._data.move_to_end(key)
        return self._data[key]

    def put(self, key: str, value: bytes) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)


def parse_duration(spec: str) -> int:
    """'1h30m' -> 5400 seconds."""
    total, number = 0, ""
    for ch in spec:
        if ch.isdigit():
            number += ch
        else:
            total += int(number) * {"h": 3600, "m": 60, "s": 1}[ch]
            number = ""
    return total
'''


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_common_snippets_not_flagged(dec, snippet) -> None:
    assert dec.check(snippet) is None


def test_clean_code_not_flagged(dec) -> None:
    assert dec.check(CLEAN_CODE) is None
    for mod in (textwrap, json.encoder, shutil):
        src = inspect.getsource(mod)
        blocks = src.split("\ndef ")  # function-sized rows, like the training data
        assert [b[:60] for b in blocks if dec.check(b)] == [], mod.__name__


def test_index_roundtrip_bytes(index, dec, prompts) -> None:
    data = index.to_bytes()
    again = BenchmarkIndex.from_bytes(data)
    assert again.n == 13 and again.items == index.items and again.meta == index.meta
    assert again.short_lengths == index.short_lengths
    text = prompts["HumanEval/1"]
    assert Decontaminator(again).check(text) == dec.check(text)
    assert len(data) < 10_000_000


def test_configurable_n() -> None:
    item = BenchmarkItem("toy", "t1", "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi")
    idx = BenchmarkIndex.build([item], n=8, min_item_tokens=4)
    assert idx.n == 8 and idx.item_ngrams[0] == 7
    text = "prefix ALPHA beta\tgamma delta\n  epsilon zeta eta theta iota suffix"  # 9 tokens = 2 8-grams
    assert Decontaminator(idx, min_matches=3).check(text) is None
    m = Decontaminator(idx, min_matches=2).check(text)
    assert m is not None and (m.benchmark, m.item_id) == ("toy", "t1")
    assert (m.longest_match_tokens, m.matched_ngrams) == (9, 2)
    assert m.snippet == "alpha beta gamma delta epsilon zeta eta theta iota"


# ----------------------------------------------------------------------------- batched screening


def test_combine_lengths_equals_combine() -> None:
    from surrogate_dagster.curation.decontam import combine, combine_lengths, token_hashes

    th = token_hashes(tokenize(CLEAN_CODE))
    for lengths in [(13, 10, 11, 12), (1,), (5, 300), (th.size, th.size + 1)]:
        got = combine_lengths(th, lengths)
        assert [g.tolist() for g in got] == [combine(th, n).tolist() for n in lengths]


def test_index_membership_filter_has_no_false_negatives(index) -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    q = np.concatenate([index.hashes[::7], rng.integers(0, 2**63, 50_000, dtype=np.uint64)])
    assert (index.contains(q) == np.isin(q, index.hashes)).all()
    assert index.may_contain(index.hashes).all()
    assert index.may_contain(rng.integers(0, 2**63, 50_000, dtype=np.uint64)).mean() < 0.02


@pytest.mark.parametrize("workers,chunk_size", [(1, 256), (1, 3), (2, 5)])
def test_check_many_equals_check(index, prompts, loaded, workers, chunk_size) -> None:
    items, _ = loaded
    bfcl_short = next(i.text for i in items if i.benchmark == "bfcl" and 10 <= len(tokenize(i.text)) < 13)
    texts = [PLANTINGS[s](prompts[t]) for s in PLANTINGS for t in ("HumanEval/0", "HumanEval/53")]
    texts += SNIPPETS + [CLEAN_CODE, "", "x", bfcl_short, f"[user] {bfcl_short}\n[assistant] ok",
                         " ".join(tokenize(prompts["HumanEval/10"])[:14])]
    texts += [b for b in inspect.getsource(textwrap).split("\ndef ")]
    for min_matches in (1, 4):
        dec = Decontaminator(index, min_matches=min_matches)
        expected = [dec.check(t) for t in texts]
        assert dec.check_many(texts, workers=workers, chunk_size=chunk_size) == expected
        assert sum(m is not None for m in expected) >= 7


def _odd_texts() -> list[str]:
    """ASCII (every character, case, long words of every XXH3 size class) and non-ASCII texts
    (NFKC changes, other scripts, combining marks)."""
    import random

    rng = random.Random(7)
    pieces = [chr(i) for i in range(128)] + ["Word", "UPPER", "x" * 17, "y" * 130, "z" * 241, "w" * 1500]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 60))) for _ in range(300)]
    texts += ["ﬁle Ｆｕｌｌ ２ é e\u0301 Straße ΣΑΣ İ ½ x²", "日本語のテキスト def f(x): return x", "\u00a0a\u2003b"]
    return texts + [t + " é" for t in texts[:50]]


def test_compiled_token_hashes_equal_python() -> None:
    import numpy as np

    from surrogate_dagster.curation import minhash_numpy as mnp
    from surrogate_dagster.curation.decontam import token_hashes

    k = mnp.kernels()
    if k is None:
        pytest.skip("numba not installed: the Python paths are the only ones")
    for text in _odd_texts():
        expected = token_hashes(tokenize(text)).tolist()
        joined = "\n".join(tokenize(text)).encode("utf-8")
        assert k.joined_token_hashes(np.frombuffer(joined, dtype=np.uint8)).tolist() == expected
        if text.isascii():
            raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
            assert k.ascii_token_hashes(raw, k.IS_WORD, k.IS_SPACE).tolist() == expected


def test_compiled_screen_equals_numpy_screen(index, prompts, loaded, monkeypatch) -> None:
    from surrogate_dagster.curation import minhash_numpy as mnp

    items, _ = loaded
    short = [i.text for i in items if i.benchmark == "bfcl" and 10 <= len(tokenize(i.text)) < 13][:5]
    texts = _odd_texts() + [PLANTINGS[s](prompts[t]) for s in PLANTINGS for t in ("HumanEval/0", "HumanEval/53")]
    texts += short + [s.upper() + " é" for s in short] + [prompts["HumanEval/2"].replace("a", "ä")]
    texts += [CLEAN_CODE] + SNIPPETS
    dec = Decontaminator(index, min_matches=1)
    lengths = sorted({index.n, *index.short_lengths})
    numpy_hits = dec._hits_numpy(texts, lengths)
    assert len(numpy_hits) >= 10
    k = mnp.kernels()
    if k is not None:
        assert dec._hits_compiled(k, texts, lengths) == numpy_hits
    expected = [dec.check(t) for t in texts]
    assert dec.check_many(texts) == expected
    monkeypatch.setattr(mnp, "_KERNELS", False)  # the pure numpy path, numba installed or not
    assert mnp.kernels() is None
    assert dec.check_many(texts, chunk_size=7) == expected
