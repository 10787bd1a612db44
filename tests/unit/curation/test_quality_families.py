"""The OpenCoder rule families (strings, n-grams, generated code, data files, per-language rules):
each rule with a hand-written answer it must drop and one it must keep (tests/support/quality_cases.py),
and the catalog blocks that document and parametrize every rule."""

from __future__ import annotations

import pytest

from surrogate_dagster.curation.config import load_curation
from surrogate_dagster.curation.quality.heuristics import DOC_KEYS, RULES, RULES_BY_NAME, HeuristicFilter
from tests.support.quality_cases import CASES, GOOD, fence, lines, sft

NEW_RULES = [r.name for r in RULES][16:]


def test_every_new_rule_has_a_case():
    assert set(CASES) == set(NEW_RULES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_positive_and_negative(name):
    bad, good = CASES[name]
    only = HeuristicFilter({n: {"enabled": n == name} for n in RULES_BY_NAME})
    assert only.decide(sft(bad)) == f"quality_{name}"
    assert only.decide(sft(good)) is None
    # the good example passes every rule (no other rule misfires on it)
    assert HeuristicFilter().violations(sft(good)) == []


@pytest.mark.parametrize("lang", sorted(GOOD))
def test_good_code_of_every_language_passes_every_rule(lang):
    assert HeuristicFilter().violations(sft(fence(lang, GOOD[lang]))) == []


def test_language_rules_read_only_their_language():
    prints = lines("print('step {i} done')", 12)
    rule = RULES_BY_NAME["python_print_lines"]()
    assert rule.check(prints, "python") == "quality_python_print_lines"
    assert rule.check(prints, "javascript") is None and rule.check(prints, None) is None
    # a data rule ignores code blocks, a code rule ignores data blocks
    numbers = "[" + ", ".join(str(i * 7919) for i in range(150)) + "]"
    assert RULES_BY_NAME["data_digit_fraction"]().check(numbers, "python") is None
    assert RULES_BY_NAME["data_digit_fraction"]().check(numbers, "json") == "quality_data_digit_fraction"


def test_snippets_under_the_line_floor_are_judged_by_no_ratio_rule():
    # a 4-line answer that is one def and a print is fine, whatever its ratios
    short = "def add(a, b):\n    return a + b\n\nprint(add(2, 3))"
    assert HeuristicFilter().violations(sft(fence("python", short))) == []


def test_catalog_block_per_rule_with_family_reason_and_known_parameters():
    blocks = load_curation().quality.heuristics
    assert set(blocks) == set(RULES_BY_NAME)
    families: dict[str, int] = {}
    for name, block in blocks.items():
        assert block.get("family") and block.get("reason"), name
        params = set(block) - set(DOC_KEYS) - {"enabled", "skip_languages"}
        assert params <= set(RULES_BY_NAME[name].defaults), (name, params)
        families[block["family"].split("_")[0]] = families.get(block["family"].split("_")[0], 0) + 1
    assert len(RULES) >= 100
    assert {"general", "auto", "data", "language"} <= set(families)
    assert len({b["family"] for b in blocks.values() if b["family"].startswith("language_")}) >= 10


def test_catalog_parameters_reach_the_rules():
    blocks = load_curation().quality.heuristics
    rules = {r.name: r for r in HeuristicFilter(blocks).rules}
    assert rules["python_print_lines"].params["max_fraction"] == blocks["python_print_lines"]["max_fraction"]
    changed = HeuristicFilter({**blocks, "python_print_lines": {**blocks["python_print_lines"], "min_lines": 50}})
    assert {r.name: r for r in changed.rules}["python_print_lines"].params["min_lines"] == 50
    with pytest.raises(ValueError, match="unknown parameters"):
        HeuristicFilter({"python_print_lines": {"family": "x", "reason": "y", "max_fractio": 1}})


def test_metadata_gives_shares_and_a_table_of_every_rule():
    from surrogate_dagster.curation.blocks import BlockStats, run_blocks

    filt = HeuristicFilter()
    stats = BlockStats()
    bad, good = CASES["python_print_lines"]
    run_blocks([filt], [sft(bad), sft(good), sft(good), sft(good)], stats)
    counts = stats.of("heuristics")
    meta = filt.metadata(counts)
    assert meta["dropped_share_by_rule"] == {"quality_python_print_lines": 0.25}
    assert meta["flagged_share_by_rule"]["quality_python_print_lines"] == 0.25
    table = filt.rule_table(counts)
    assert "| python_print_lines | languages | 1 | 0.2500 | 1 | 0.2500 |" in table
    assert table.count("\n| ") == len(filt.rules) + 1  # the header and one row per rule


def test_catalog_parameters_equal_the_rules_defaults():
    # the unit tests build rules from their defaults; the pipeline from the catalog: one set of values
    blocks = load_curation().quality.heuristics
    for name, block in blocks.items():
        params = {k: v for k, v in block.items() if k not in DOC_KEYS}
        assert params == RULES_BY_NAME[name].defaults, name
