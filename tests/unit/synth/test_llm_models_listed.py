"""Every model the catalog and the production profile name is one the pinned anthropic SDK lists,
and has a list price beside it."""

import typing

import anthropic.types.model as sdk_model

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.llm.ledger import Price
from surrogate_dagster.synth.config import resolve_llm, synth_catalog


def _sdk_models() -> set[str]:
    literal = next(a for a in typing.get_args(sdk_model.Model) if typing.get_origin(a) is typing.Literal)
    return set(typing.get_args(literal))


def test_configured_models_are_listed_by_the_sdk_and_priced():
    listed = _sdk_models()
    assert "claude-opus-5-5" in listed  # the list read is the SDK's model literal
    catalog = synth_catalog()
    for section in (None, load_profile("production").phases.get("llm")):
        llm = resolve_llm(section, catalog)
        assert set(llm.models.values()) <= listed, sorted(set(llm.models.values()) - listed)
        for model in set(llm.models.values()):
            assert Price.parse(model, llm.prices_per_mtok[model]).output_per_mtok > 0


def test_a_models_own_cache_prices_replace_the_multipliers():
    own = Price.parse("m", {"input": 4.0, "output": 20.0, "cache_write": 5.0, "cache_read": 0.2})
    std = Price.parse("m", {"input": 4.0, "output": 20.0})
    assert own.cost(0, 0, cache_read_tokens=1_000_000) == 0.2
    assert std.cost(0, 0, cache_read_tokens=1_000_000) == 0.4
    assert own.cost(0, 0, cache_write_tokens=1_000_000) == std.cost(0, 0, cache_write_tokens=1_000_000) == 5.0
