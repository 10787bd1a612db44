"""What the IaC scanner stands for in assets/synth.yaml, and the frameworks and file names it refuses
(checkov itself, in .venv-checkov: tests/env/test_iac_validators.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from surrogate_dagster.sandbox.iac import IacScanner
from surrogate_dagster.synth.graders import iac_checks


SYNTH_YAML = Path(__file__).resolve().parents[3] / "assets" / "synth.yaml"


def test_synth_yaml_says_what_checkov_stands_for_and_what_it_does_not_cover():
    text = SYNTH_YAML.read_text()
    section = text[text.index("iac_scanner") - 1500:]
    for word in ("tflint", "prowler", "NOT covered", "LIVE cloud account"):
        assert word in section, word
    cfg = yaml.safe_load(text)["exec_pairs"]["iac_scanner"]
    assert cfg["tool"] == "checkov" and set(cfg["checks"]) == {"terraform", "kubernetes", "dockerfile"}
    assert iac_checks() == cfg["checks"]


def test_scanner_refuses_unknown_frameworks_and_file_names():
    with pytest.raises(ValueError, match="unknown frameworks"):
        IacScanner({"helm": ["CKV_K8S_1"]})
    with pytest.raises(ValueError, match="no framework"):
        IacScanner({"terraform": ["CKV_AWS_20"]}).scan({"0/x.tf.json": "{}"})
