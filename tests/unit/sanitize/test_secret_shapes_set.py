"""The secret-shapes labelled set (benchmarks/data/secret_shapes_labelled.jsonl): reproducible from
its seeded generator, split without template or service leakage, and the sanitizer's recall and
false-positive rate on it, tune and held-out halves each (secret string gone from the output)."""
from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from surrogate_dagster.sanitize import SECRET_CATEGORIES, Sanitizer, SanitizerConfig

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
GEN = DATA / "secret_shapes_gen.py"
JSONL = DATA / "secret_shapes_labelled.jsonl"
RECALL_FLOOR = 0.95
FP_CEILING = 0.02


def _load_gen():
    spec = importlib.util.spec_from_file_location("secret_shapes_gen", GEN)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]


def test_generator_reproduces_the_stored_set(rows):
    assert _load_gen().generate() == rows


def test_halves_share_no_template_and_no_service(rows):
    by_split: dict[str, dict[str, set]] = {"tune": defaultdict(set), "heldout": defaultdict(set)}
    for r in rows:
        by_split[r["split"]]["origin"].add(r["origin"])
        if "service" in r:
            by_split[r["split"]]["service"].add(r["service"])
    for key in ("origin", "service"):
        assert by_split["tune"][key] and by_split["heldout"][key]
        assert not by_split["tune"][key] & by_split["heldout"][key], key


def test_every_class_has_both_halves_and_positives_name_their_secrets(rows):
    classes = {r["class"] for r in rows}
    for cls in classes:
        splits = {r["split"] for r in rows if r["class"] == cls}
        assert splits == {"tune", "heldout"}, cls
    for r in rows:
        texts = r.get("turns") or [r["text"]]
        if r["label"]:
            assert r["secrets"] and all(any(s in t for t in texts) for s in r["secrets"]), r
        else:
            assert r["secrets"] == []


def _outputs(san: Sanitizer, r: dict) -> tuple[str, list]:
    if "turns" in r:
        res = san.sanitize_row(r["turns"])
        return "\n".join(x.text for x in res), [f for x in res for f in x.findings]
    res = san.sanitize(r["text"])
    return res.text, res.findings


def test_recall_per_class_and_false_positives_on_both_halves(rows):
    san = Sanitizer(SanitizerConfig(ner_model=None))
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        text, findings = _outputs(san, r)
        if r["label"]:
            ok = all(s not in text for s in r["secrets"])
        else:  # look-alike negative: no secret-category finding (PII is redacted by policy)
            ok = not any(f.category in SECRET_CATEGORIES for f in findings)
        cell = cells[(r["class"], r["split"])]
        cell[0] += ok
        cell[1] += 1
    short = {k: f"{a}/{n}" for k, (a, n) in cells.items() if k[0] != "negative" and a / n < RECALL_FLOOR}
    assert not short, short
    for split in ("tune", "heldout"):
        a, n = cells[("negative", split)]
        assert (n - a) / n <= FP_CEILING, (split, n - a, n)
