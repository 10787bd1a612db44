"""The fresh-scenario cap is validated in the catalog (the traces asset drawing fresh scenarios:
tests/integration/test_synth_fresh_scenarios.py)."""

from __future__ import annotations

import pytest
import yaml

from surrogate_dagster.paths import ASSETS_DIR
from surrogate_dagster.synth.config import synth_catalog
from surrogate_dagster.synth.scenarios import load_synth_config


CAT = synth_catalog()


def test_fresh_cap_is_validated_in_the_catalog(tmp_path):
    assert CAT["traces"]["max_fresh_scenarios_per_batch"] == 25
    raw = yaml.safe_load((ASSETS_DIR / "synth.yaml").read_text())
    bad = tmp_path / "synth.yaml"
    for value in (-1, "25", None):
        raw["traces"]["max_fresh_scenarios_per_batch"] = value
        bad.write_text(yaml.safe_dump(raw))
        with pytest.raises(ValueError, match="max_fresh_scenarios_per_batch"):
            load_synth_config(bad)
