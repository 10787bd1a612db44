"""The extra secret-contexts tuning set is internally consistent (that its generator reproduces it:
tests/integration/test_secret_contexts_extra_regenerate.py)."""

from __future__ import annotations

import importlib.util
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
GEN = DATA / "secret_contexts_extra_gen.py"
JSONL = DATA / "secret_contexts_extra.jsonl"
KEYS = {"text", "secrets", "label", "class", "context", "service", "split"}
MIN_ROWS_PER_CLASS = 120
MIN_FAMILIES_PER_CLASS = 20


def _load_generator():
    spec = importlib.util.spec_from_file_location("secret_contexts_extra_gen", GEN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]


def test_rows_have_the_schema(rows: list[dict]) -> None:
    for row in rows:
        assert set(row) == KEYS
        assert isinstance(row["text"], str) and row["text"]
        assert isinstance(row["secrets"], list)
        assert row["split"] == "tune"
        assert row["context"].startswith("x_")
        assert row["label"] == (1 if row["secrets"] else 0)
        assert (row["class"] == "negative") == (row["label"] == 0)


def test_every_secret_occurs_verbatim(rows: list[dict]) -> None:
    for row in rows:
        for secret in row["secrets"]:
            assert secret and secret in row["text"], (row["context"], secret)


def test_class_counts_match_the_documented_ones(rows: list[dict]) -> None:
    gen = _load_generator()
    counts = Counter(row["class"] for row in rows)
    assert dict(counts) == gen.CLASS_ROWS
    for cls, n in gen.CLASS_ROWS.items():
        assert f"``{cls}`` ({n})" in gen.__doc__, f"docstring count for {cls} is stale"
        assert n >= MIN_ROWS_PER_CLASS


def test_each_class_spans_enough_template_families(rows: list[dict]) -> None:
    families: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        families[row["class"]].add(row["context"])
    for cls, ids in families.items():
        assert len(ids) >= MIN_FAMILIES_PER_CLASS, cls
    # A family id belongs to one class only, so per-family scores read unambiguously.
    all_ids = [i for ids in families.values() for i in ids]
    assert len(all_ids) == len(set(all_ids))


def test_no_secret_repeats_across_rows(rows: list[dict]) -> None:
    seen: dict[str, int] = {}
    for n, row in enumerate(rows):
        for secret in row["secrets"]:
            assert secret not in seen, (secret, seen.get(secret), n)
            seen[secret] = n
    assert len({row["text"] for row in rows}) == len(rows)


def test_secrets_are_not_placeholders(rows: list[dict]) -> None:
    gen = _load_generator()
    for row in rows:
        for secret in row["secrets"]:
            assert len(secret) >= 8, secret
            assert not any(b in secret.lower() for b in gen.BANNED), secret


def test_encoded_rows_list_the_encoded_form() -> None:
    """A URL-encoded, entity-encoded or escaped secret is listed as written, not decoded."""
    gen = _load_generator()
    by_id = {ctx: fn for ctx, _service, fn in gen.FAMILIES["encoded"]}
    _text, secrets = by_id["x_enc_url_query"](random.Random(7))
    assert all("%" in s for s in secrets)
    _text, secrets = by_id["x_enc_xml_attr_entities"](random.Random(7))
    assert all("&" in s and ";" in s for s in secrets)
    _text, secrets = by_id["x_enc_pypirc_percent"](random.Random(7))
    assert all("%%" in s for s in secrets)
