"""The RULER dataset cache (evals/harness/ruler_dataset_cache.py): an entry loads back as the datasets
lm-eval's generator returned, a damaged or foreign entry is refused, the random state round-trips
and is part of the key, and a tokenizer's identity is what it does to text, not where it lives."""

from __future__ import annotations

import gzip
import json
import random

import datasets
import numpy as np
import pytest

from surrogate_dagster.evals.harness import ruler_dataset_cache as cache


def _splits():
    rows = [{"input": "Some special magic numbers ... ", "outputs": ["1234567"], "length": 2000, "max_length": 2048,
             "gen_prefix": "The special magic number is"},
            {"input": "ünïcode \u2028 text", "outputs": ["a", "b"], "length": 1990, "max_length": 2048,
             "gen_prefix": ""}]
    return {"test": datasets.Dataset.from_list(rows, split=datasets.Split.TEST)}


def test_an_entry_loads_back_as_the_generators_datasets(tmp_path):
    out = _splits()
    path = cache.entry_path(tmp_path, "niah_single_1", "k" * 64)
    cache.store(path, {"format": cache.FORMAT, "key": "k" * 64, "rng_after": {"x": 1}}, out)
    head, back = cache.load(path, "k" * 64)
    assert head["rng_after"] == {"x": 1} and head["splits"]["test"]["rows"] == 2
    assert back["test"].to_list() == out["test"].to_list() and back["test"].features == out["test"].features
    assert back["test"].split == out["test"].split
    assert not list(tmp_path.rglob(".tmp-*"))


def test_a_foreign_or_truncated_entry_is_refused(tmp_path):
    path = cache.entry_path(tmp_path, "ruler_cwe", "a" * 64)
    cache.store(path, {"format": cache.FORMAT, "key": "a" * 64, "rng_after": {}}, _splits())
    with pytest.raises(ValueError, match="header key/format do not match"):
        cache.load(path, "b" * 64)
    lines = gzip.decompress(path.read_bytes()).decode().split("\n")[:-1]  # U+2028 in a row is no line end
    path.write_bytes(gzip.compress(("\n".join(lines[:-1]) + "\n").encode()))
    with pytest.raises(ValueError, match="test has 1 rows, header says 2"):
        cache.load(path, "a" * 64)


def test_the_random_state_round_trips_and_moves_the_key():
    class Module:
        RNG = random.Random(42)

    random.seed(0)
    np.random.seed(1234)
    before = cache.rng_state(Module)
    assert json.loads(json.dumps(before)) == before
    draws = (random.random(), float(np.random.rand()), Module.RNG.random())
    after = cache.rng_state(Module)
    assert after != before
    cache.set_rng_state(before, Module)
    assert (random.random(), float(np.random.rand()), Module.RNG.random()) == draws
    assert cache.rng_state(Module) == after
    ident = {"task": "t", "rng": json.dumps(before)}
    assert cache.entry_key(ident) != cache.entry_key({**ident, "rng": json.dumps(after)})
    assert cache.entry_key(ident) == cache.entry_key(dict(reversed(list(ident.items()))))


def test_a_tokenizers_identity_is_its_behaviour_not_its_folder(tmp_path):
    from transformers import AutoTokenizer

    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2

    a = AutoTokenizer.from_pretrained(str(build_tiny_qwen2(tmp_path / "a", seed=0)))
    b = AutoTokenizer.from_pretrained(str(build_tiny_qwen2(tmp_path / "b", seed=1)))
    c = AutoTokenizer.from_pretrained(str(tmp_path / "a"))
    c.add_tokens(["<|haystack|>"])  # one more token: other ids for some text
    assert cache.tokenizer_identity(a) == cache.tokenizer_identity(b)
    assert cache.tokenizer_identity(a) != cache.tokenizer_identity(c)

    class Slow:
        is_fast = False

    assert cache.tokenizer_identity(Slow()) is None
