"""The labelled secret-contexts set itself: well-formed and split without leakage (that its generator
reproduces it: tests/integration/test_secret_contexts_regenerate.py)."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
GEN = DATA / "secret_contexts_gen.py"
JSONL = DATA / "secret_contexts_labelled.jsonl"
KEYS = {"text", "secrets", "label", "class", "context", "service", "split"}


def _load_gen():
    spec = importlib.util.spec_from_file_location("secret_contexts_gen", GEN)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


gen = _load_gen()


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]


def test_generator_uses_the_standard_library_only():
    tree = ast.parse(GEN.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)


def test_rows_are_well_formed(rows):
    for row in rows:
        assert set(row) == KEYS
        assert row["split"] in ("tune", "heldout")
        assert row["class"] in gen.CLASS_COUNTS
        assert 1 <= row["text"].count("\n") + 1 <= 15, row["context"]
        if row["class"] == "negative":
            assert row["label"] == 0 and row["secrets"] == []
        else:
            assert row["label"] == 1 and row["secrets"] and row["service"], row["context"]


def test_every_positive_secret_occurs_verbatim_in_its_text(rows):
    for row in rows:
        for secret in row["secrets"]:
            assert secret in row["text"], (row["context"], secret[:6])


def test_tune_and_heldout_share_no_template_family_and_no_service(rows):
    contexts = {side: {r["context"] for r in rows if r["split"] == side} for side in ("tune", "heldout")}
    services = {side: {r["service"] for r in rows if r["split"] == side} - {""}
                for side in ("tune", "heldout")}
    assert not contexts["tune"] & contexts["heldout"]
    assert not services["tune"] & services["heldout"]


def test_class_counts_are_as_documented(rows):
    counts = Counter(r["class"] for r in rows)
    assert dict(counts) == gen.CLASS_COUNTS
    documented = dict(re.findall(r"\b([a-z_]+) (\d+)\b", gen.__doc__.split("Class counts")[1].split("Split:")[0]))
    assert {k: int(v) for k, v in documented.items() if k not in ("positives", "negatives")} == gen.CLASS_COUNTS
    positives = sum(n for c, n in gen.CLASS_COUNTS.items() if c != "negative")
    assert f"positives {positives:,}, negatives {gen.CLASS_COUNTS['negative']}" in gen.__doc__
    assert all(n >= 80 for n in gen.CLASS_COUNTS.values())


def test_each_class_is_half_tune_half_heldout_over_several_families(rows):
    by_side = Counter((r["class"], r["split"]) for r in rows)
    families = {}
    for r in rows:
        families.setdefault((r["class"], r["split"]), set()).add(r["context"])
    for cls, total in gen.CLASS_COUNTS.items():
        assert abs(by_side[(cls, "tune")] - by_side[(cls, "heldout")]) <= 1, cls
        assert by_side[(cls, "tune")] + by_side[(cls, "heldout")] == total
        for side in ("tune", "heldout"):
            assert len(families[(cls, side)]) >= 5, (cls, side)


def test_vendor_tokens_cover_at_least_120_services(rows):
    services = {r["service"] for r in rows if r["class"] == "vendor_token"}
    assert len(services) >= 120


def test_no_secret_is_repeated_across_rows(rows):
    counts = Counter(s for r in rows for s in r["secrets"])
    assert [s[:6] for s, n in counts.items() if n > 1] == []
    # nor does one row's secret show up inside another row's text
    for r in rows:
        others = [s for s in counts if s not in r["secrets"] and len(s) >= 12]
        assert not [s for s in others if s in r["text"]], r["context"]


def test_secrets_do_not_look_fake(rows):
    fake = ("example", "changeme", "dummy", "placeholder", "your_", "xxxxx", "123456")
    for r in rows:
        for s in r["secrets"]:
            assert not any(f in s.lower() for f in fake), (r["context"], s)


def test_generator_is_seeded_and_split_changes_with_the_seed():
    a, b = gen.build(), gen.build()
    assert a == b
    other = gen.build(seed=gen.SEED + 1)
    split_of = lambda rs: {r["context"]: r["split"] for r in rs}  # noqa: E731
    assert split_of(other) != split_of(a)
