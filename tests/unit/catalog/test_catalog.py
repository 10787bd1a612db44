"""Every catalog and profile file parses and validates; broken files fail with file, key, expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from surrogate_dagster.catalog import CatalogError, load_profile, load_sources
from surrogate_dagster.catalog.models import SourcesCatalog
from surrogate_dagster.paths import ASSETS_DIR, PROFILES_DIR

RUNBOOK_SOURCES = {
    "microsoft/rStar-Coder": 30000, "nvidia/OpenCodeReasoning-2": 20000,
    "nvidia/OpenCodeInstruct": 10000, "inclusionAI/Ling-Coder-SFT": 10000,
    "OpenCoder-LLM/opc-sft-stage1": 5000, "OpenCoder-LLM/opc-sft-stage2": 5000,
    "bigcode/self-oss-instruct-sc2-exec-filter-50k": 50000,
    "m-a-p/CodeFeedback-Filtered-Instruction": 10000,
    "NousResearch/hermes-function-calling-v1": 7930, "Salesforce/xlam-function-calling-60k": 30000,
    "Agent-Ark/Toucan-1.5M": 80000, "Nanbeige/ToolMind": 10000, "nvidia/Nemotron-SWE-v1": 5000,
    "SWE-Gym/OpenHands-Sampled-Trajectories": 2400, "lambda/hermes-agent-reasoning-traces": 14000,
    "nebius/SWE-agent-trajectories": 5000, "SWE-Gym/SWE-Gym": 400,
    "microsoft/orca-agentinstruct-1M-v1": 1500, "Vezora/Code-Preference-Pairs": 55000,
    "argilla/distilabel-capybara-dpo-7k-binarized": 7000,
}


def test_sources_catalog_has_the_runbooks_22_sources():
    cat = load_sources()
    assert len(cat.sources) == 22
    caps = {s.hf_id: s.cap for s in cat.sources if s.hf_id != "nvidia/When2Call"}
    assert caps == RUNBOOK_SOURCES
    w2c = sorted(s.configs[0] for s in cat.sources if s.hf_id == "nvidia/When2Call")
    assert w2c == ["train_pref", "train_sft"]
    assert {h.hf_id for h in cat.helpers} == {"BAAI/TACO", "codeparrot/apps", "deepmind/code_contests",
                                              "open-r1/codeforces"}


def test_runbook_filters_are_declared():
    cat = load_sources()
    oci = cat.by_name("opencodeinstruct").filters[0]
    assert (oci.column, oci.op, oci.value, oci.coerce) == ("average_test_score", ">=", 0.7, "float")
    assert cat.by_name("rstar_coder").filters[0].column == "is_passed"
    assert cat.by_name("swe_gym_openhands").filters[0].column == "resolved"
    assert cat.by_name("nebius_swe_agent").filters[0].column == "target"


@pytest.mark.parametrize("path", sorted(PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_profile_validates(path: Path):
    prof = load_profile(str(path))  # an `extends:` overlay is validated once merged over its base
    assert prof.name == path.stem


def test_profile_selected_by_env(monkeypatch):
    monkeypatch.setenv("SURROGATE_PROFILE", "production")
    assert load_profile().object_store.kind == "s3"
    monkeypatch.delenv("SURROGATE_PROFILE")
    assert load_profile().name == "local"


def test_production_profile_names_secrets_by_env_var_only():
    text = (PROFILES_DIR / "production.yaml").read_text()
    prof = load_profile("production")
    assert prof.object_store.access_key_env == "WASABI_ACCESS_KEY"
    assert "aws_secret_access_key" not in text and "AKIA" not in text


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "sources.yaml"
    p.write_text(text)
    return p


def test_broken_yaml_names_file_and_line(tmp_path):
    p = _write(tmp_path, "sources:\n  - name: x\n   family: [\n")
    with pytest.raises(CatalogError) as e:
        load_sources(p)
    assert str(p) in str(e.value) and "line" in str(e.value)


def test_bad_value_names_the_key_and_expectation(tmp_path):
    p = _write(tmp_path, "sources:\n  - name: ok_name\n    family: code_sft\n    hf_id: a/b\n"
                         "    adapter: x\n    cap: -5\n")
    with pytest.raises(CatalogError) as e:
        load_sources(p)
    msg = str(e.value)
    assert "sources.0.cap" in msg and "greater than 0" in msg


def test_unknown_key_is_an_error(tmp_path):
    p = _write(tmp_path, "sources:\n  - name: ok_name\n    family: code_sft\n    hf_id: a/b\n"
                         "    adapter: x\n    capp: 5\n")
    with pytest.raises(CatalogError, match="sources.0.capp"):
        load_sources(p)


def test_bad_revision_and_family(tmp_path):
    p = _write(tmp_path, "sources:\n  - name: Bad-Name\n    family: nope\n    hf_id: nobody\n"
                         "    revision: not a ref!\n")
    with pytest.raises(CatalogError) as e:
        load_sources(p)
    msg = str(e.value)
    for key in ("sources.0.name", "sources.0.family", "sources.0.hf_id", "sources.0.revision"):
        assert key in msg


def test_duplicate_names_rejected(tmp_path):
    entry = "  - {name: a, family: dpo, hf_id: a/b, adapter: x}\n"
    with pytest.raises(CatalogError, match="duplicate source name"):
        load_sources(_write(tmp_path, "sources:\n" + entry + entry))


def test_offline_hub_needs_its_dirs(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: p\nobject_store: {kind: local, root: x}\nhub: {mode: offline, org: o}\n")
    with pytest.raises(CatalogError, match="offline hub needs mirror_dir"):
        load_profile(p)


def test_every_catalog_yaml_in_assets_loads():
    """Every YAML under assets/ parses (typed validation of each lives with its phase's tests)."""
    import yaml

    for path in sorted(ASSETS_DIR.rglob("*.yaml")):
        assert isinstance(yaml.safe_load(path.read_text()), dict), path
    assert isinstance(load_sources(), SourcesCatalog)


def test_a_misspelt_phases_section_is_refused_with_a_hint(tmp_path):
    import yaml

    prof = yaml.safe_load((PROFILES_DIR / "local.yaml").read_text())
    prof["phases"]["servng"] = prof["phases"].pop("serving")
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(prof))
    with pytest.raises(CatalogError, match=r"'servng' \(did you mean 'serving'\?\)"):
        load_profile(str(path))
