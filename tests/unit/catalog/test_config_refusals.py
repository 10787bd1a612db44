"""Bad configuration is refused at load, naming the file, the key and the reason.

Each case edits a temporary copy of a shipped YAML file as text (the way a person would), loads it
through the loader the pipeline uses, and checks the refusal names that copy, the key and why. The
last tests load every shipped YAML unmodified, so the refusals do not catch the real files.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from surrogate_dagster.catalog.loader import (CatalogError, load_profile, load_sources, parse_yaml,
                                              profile_source, read_yaml_mapping)
from surrogate_dagster.curation.config import load_curation
from surrogate_dagster.evals.config import evals_profile, load_eval_catalog
from surrogate_dagster.evals.harness.devsecops import load_seed
from surrogate_dagster.paths import ASSETS_DIR, PROFILES_DIR
from surrogate_dagster.synth.config import resolve_llm, resolve_synth
from surrogate_dagster.synth.graders import iac_checks, load_devsecops_tasks
from surrogate_dagster.synth.scenarios import load_synth_config
from surrogate_dagster.training.config import load_training_catalog, training_profile

SHIPPED = sorted([*ASSETS_DIR.rglob("*.yaml"), *PROFILES_DIR.rglob("*.yaml")])


def mutated(tmp_path: Path, src: Path, edit) -> Path:
    """A copy of ``src`` in tmp_path, its text passed through ``edit`` (which must change it)."""
    text = src.read_text(encoding="utf-8")
    new = edit(text)
    assert new != text, f"the edit did not apply to {src}"
    out = tmp_path / src.name
    out.write_text(new, encoding="utf-8")
    return out


def sub1(pattern: str, repl: str):
    """An edit replacing the first match of a multi-line regex."""
    return lambda text: re.sub(pattern, repl, text, count=1, flags=re.M)


def refused(load, path: Path, *needles: str) -> str:
    """``load()`` raises CatalogError naming ``path`` and every needle; the message."""
    with pytest.raises(CatalogError) as e:
        load()
    msg = str(e.value)
    assert str(path) in msg, msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


# ------------------------------------------------------------------ repeated keys and syntax errors

def test_second_top_level_sources_key_is_refused(tmp_path):
    # Last-key-wins would leave a one-source catalog.
    p = mutated(tmp_path, ASSETS_DIR / "sources.yaml", lambda t: t + (
        "\nsources:\n  - name: extra\n    family: helper\n    hf_id: org/extra\n"
        "    revision: " + "a" * 40 + "\n"))
    line = p.read_text().splitlines().index("sources:", 30) + 1
    msg = refused(lambda: load_sources(p), p, "key 'sources' appears twice")
    assert msg.startswith(f"{p}:{line}: key 'sources' appears twice"), msg


def test_repeated_cap_in_one_entry_is_refused(tmp_path):
    p = mutated(tmp_path, ASSETS_DIR / "sources.yaml", sub1(r"^(\s+)cap: (\d+)$", r"\1cap: \2\n\1cap: 5"))
    line = next(i for i, ln in enumerate(p.read_text().splitlines(), 1) if ln.strip() == "cap: 5")
    refused(lambda: load_sources(p), p, f"{p}:{line}: key 'cap' appears twice")


def test_repeated_key_in_a_flow_mapping_is_refused(tmp_path):
    p = mutated(tmp_path, ASSETS_DIR / "synth.yaml",
                sub1(r"^(\s+opencodeinstruct: \{)cap: 2500", r"\1cap: 2500, cap: 9"))
    refused(lambda: load_synth_config(p), p, "key 'cap' appears twice")


def test_merge_key_may_still_override():
    # `<<` is YAML's way to reuse a mapping and override part of it: not a repeat.
    assert parse_yaml("a: &x {k: 1, j: 2}\nb:\n  <<: *x\n  k: 3\n")["b"] == {"k": 3, "j": 2}


def test_repeated_key_refused_without_a_file_too():
    with pytest.raises(Exception, match="key 'k' appears twice"):
        parse_yaml("top:\n  k: 1\n  k: 2\n")


def test_stage_syntax_error_names_the_stage_file(tmp_path):
    stage = mutated(tmp_path, ASSETS_DIR / "stages/stage1.yaml", sub1(r"^lora_r: 64$", "lora_r: [64"))
    cat = _training_with_stage(tmp_path, stage)
    msg = refused(lambda: cat.stage("stage1").load_config(), stage, "not valid YAML at line")
    assert "<unicode string>" not in msg


def test_profile_syntax_error_names_the_profile(tmp_path):
    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^name: local$", "name: [local"))
    refused(lambda: load_profile(p), p, "not valid YAML")


# ------------------------------------------------------------------ types and bounds

def test_cap_true_is_not_one(tmp_path):
    p = mutated(tmp_path, ASSETS_DIR / "sources.yaml", sub1(r"^(\s+)cap: \d+$", r"\1cap: true"))
    msg = refused(lambda: load_sources(p), p, "sources.0.cap:", "integer")
    assert msg.startswith(f"{p}: sources.0.cap: "), msg


def test_cap_as_a_string_is_refused(tmp_path):
    p = mutated(tmp_path, ASSETS_DIR / "sources.yaml", sub1(r"^(\s+)cap: (\d+)$", r'\1cap: "\2"'))
    refused(lambda: load_sources(p), p, "sources.0.cap:", "integer")


def test_one_line_per_problem(tmp_path):
    p = mutated(tmp_path, ASSETS_DIR / "sources.yaml",
                lambda t: re.sub(r"^(\s+)cap: \d+$", r"\1cap: true", t, count=2, flags=re.M))
    msg = refused(lambda: load_sources(p), p, "sources.0.cap:", "sources.1.cap:")
    assert all(line.startswith(f"{p}: sources.") for line in msg.splitlines()), msg


@pytest.mark.parametrize("value, reason", [(".inf", "finite"), ("-5", "greater than 0"), ("0", "greater than 0"),
                                           ("true", "")])
def test_synth_budget_must_be_finite_and_positive(tmp_path, value, reason):
    p = mutated(tmp_path, ASSETS_DIR / "synth.yaml", sub1(r"^budget_usd: \d+", f"budget_usd: {value}"))
    refused(lambda: load_synth_config(p), p, f"{p}: budget_usd: ", reason)


@pytest.mark.parametrize("edit, key", [
    (sub1(r"^max_planner_turns: ", "max_planer_turns: 8\nmax_planner_turns: "), "max_planer_turns"),
    (sub1(r"^  min_margin: ", "  min_margn: 0.2\n  min_margin: "), "exec_pairs.min_margn"),
    (sub1(r"^    max_cases: ", "    max_case: 3\n    max_cases: "), "exec_pairs.io_tests.max_case"),
    (sub1(r"^  max_attempts_per_scenario: ", "  max_attempt_per_scenario: 2\n  max_attempts_per_scenario: "),
     "traces.max_attempt_per_scenario"),
    (sub1(r"^  planner: claude", "  planer: claude-opus-5-5\n  planner: claude"), "models"),
])
def test_synth_misspelt_keys_are_refused(tmp_path, edit, key):
    p = mutated(tmp_path, ASSETS_DIR / "synth.yaml", edit)
    refused(lambda: load_synth_config(p), p, f"{p}: {key}: ")


def test_synth_count_as_bool_is_refused(tmp_path):
    p = mutated(tmp_path, ASSETS_DIR / "synth.yaml", sub1(r"^max_planner_turns: \d+", "max_planner_turns: true"))
    refused(lambda: load_synth_config(p), p, f"{p}: max_planner_turns: ", "integer")


def _training_with_stage(tmp_path: Path, stage: Path, edit=None):
    """The real training catalog, copied, with stage1's config pointing at ``stage``."""
    text = (ASSETS_DIR / "training.yaml").read_text(encoding="utf-8")
    text = text.replace("config: stages/stage1.yaml", f"config: {stage}", 1)
    text = edit(text) if edit else text
    out = tmp_path / "training.yaml"
    out.write_text(text, encoding="utf-8")
    return load_training_catalog(out)


@pytest.mark.parametrize("line, key", [("max_steps: four", "max_steps"), ("save_steps: 0", "save_steps"),
                                       ("max_steps: true", "max_steps"), ('save_steps: "2"', "save_steps")])
def test_stage_step_counts_are_checked_at_load(tmp_path, line, key):
    stage = mutated(tmp_path, ASSETS_DIR / "stages/stage1.yaml", lambda t: t + f"\n{line}\n")
    cat = _training_with_stage(tmp_path, stage)
    refused(lambda: cat.stage("stage1").load_config(), stage, f"{stage}: {key}: must be an integer >= 1")


def test_stage_repeated_key_is_refused(tmp_path):
    stage = mutated(tmp_path, ASSETS_DIR / "stages/stage1.yaml", sub1(r"^lora_r: 64", "lora_r: 64\nlora_r: 8"))
    cat = _training_with_stage(tmp_path, stage)
    refused(lambda: cat.stage("stage1").load_config(), stage, "key 'lora_r' appears twice")


def test_executor_override_steps_are_checked(tmp_path):
    stage = tmp_path / "stage1.yaml"
    shutil.copy(ASSETS_DIR / "stages/stage1.yaml", stage)
    path = tmp_path / "training.yaml"
    with pytest.raises(CatalogError) as e:
        _training_with_stage(tmp_path, stage, sub1(r"^    max_steps: 4$", "    max_steps: four"))
    assert str(path) in str(e.value) and "local.max_steps: must be an integer >= 1" in str(e.value)


# ------------------------------------------------------------------ profiles

def test_profile_llm_budget_names_the_profile_file(tmp_path):
    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^    budget_usd: 200", "    budget_usd: .inf"))
    prof = load_profile(p)
    assert profile_source(prof) == str(p)
    msg = refused(lambda: resolve_llm(prof.phases.get("llm"), load_synth_config(ASSETS_DIR / "synth.yaml"),
                                      profile_source(prof)), p, "phases.llm.budget_usd: ", "finite")
    assert "validation error for" not in msg


def test_profile_synth_resources_name_the_profile_file(tmp_path):
    from surrogate_dagster.synth.resource import synth_resources

    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^    budget_usd: 200", "    budget_usd: -5"))
    refused(lambda: synth_resources(load_profile(p)), p, f"{p}: phases.llm.budget_usd: ", "greater than 0")


def test_profile_training_section_names_the_file_and_key(tmp_path):
    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^    gpu_count: 0", "    gpu_count: true"))
    refused(lambda: training_profile(load_profile(p)), p, f"{p}: phases.training.gpu_count: ", "integer")


def test_profile_top_level_problem_names_the_file(tmp_path):
    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^  mode: offline", "  mode: ofline"))
    refused(lambda: load_profile(p), p, f"{p}: hub.mode: ")


def test_profile_repeated_phase_key_is_refused(tmp_path):
    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^    budget_usd: 200", "    budget_usd: 200\n    budget_usd: 5"))
    refused(lambda: load_profile(p), p, "key 'budget_usd' appears twice")


# ------------------------------------------------------------------ the shipped files still load

@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_shipped_yaml_reads(path):
    assert isinstance(read_yaml_mapping(path), dict)


def test_shipped_catalogs_validate():
    assert len(load_sources().sources) == 22
    cat = load_training_catalog()
    for stage in cat.stages:
        stage.load_config()
    load_curation()
    load_eval_catalog()
    synth = load_synth_config(ASSETS_DIR / "synth.yaml")
    load_seed(ASSETS_DIR / "devsecops_eval_seed.yaml")
    assert load_devsecops_tasks() and iac_checks()
    for prof_path in sorted(PROFILES_DIR.glob("*.yaml")):
        prof = load_profile(prof_path)
        resolve_llm(prof.phases.get("llm"), synth, profile_source(prof))
        resolve_synth(prof.phases.get("synth"), synth, profile_source(prof))
        training_profile(prof)
        evals_profile(prof)


def test_profile_curation_section_names_the_file_and_key(tmp_path):
    from surrogate_dagster.curation.resource import curation_resources

    p = mutated(tmp_path, PROFILES_DIR / "local.yaml", sub1(r"^    workers: 2 ", '    workers: "2" '))
    refused(lambda: curation_resources(load_profile(p)), p, f"{p}: phases.curation.workers: ", "integer")


def test_serving_section_one_line_per_problem():
    from surrogate_dagster.inference.config import serving_section

    with pytest.raises(CatalogError) as e:
        serving_section({"serving": {"port": "8000", "max_context": 0}}, "local")
    lines = str(e.value).splitlines()
    assert [ln.split(":")[:2] for ln in lines] == [["profile local", " phases.serving.port"],
                                                   ["profile local", " phases.serving.max_context"]], lines
