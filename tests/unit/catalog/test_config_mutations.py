"""The 24 broken-configuration cases: each refused before any work, naming the file, key and reason.

`MUTATIONS` are 22 edits of a shipped catalog, profile or stage file (made as text on a copy, the
way a person would) loaded through the entry point the pipeline uses for that file; each must
raise CatalogError whose message names the copy and says what is wrong. `CODE_VERSION_MUTATIONS`
are the two profile edits that are valid but change what curation computes: they must move the
code version of exactly the assets whose code reads the edited setting (golden sets below), so
the stale plan of `make run` re-runs those assets and nothing else.

The entry points are imported inside each case, so the table runs against any revision of the
package (a case whose entry point is missing there fails like an accepted mutation).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from surrogate_dagster.paths import REPO_ROOT


def sub1(pattern: str, repl: str) -> Callable[[str], str]:
    """An edit replacing the first match of a multi-line regex."""
    return lambda text: re.sub(pattern, repl, text, count=1, flags=re.M)


def append(extra: str) -> Callable[[str], str]:
    return lambda text: text + extra


def _sources(p: Path):
    from surrogate_dagster.catalog.loader import load_sources
    return load_sources(p)


def _synth(p: Path):
    from surrogate_dagster.synth.scenarios import load_synth_config
    return load_synth_config(p)


def _stage1(p: Path):
    """stage1's config through the training catalog, its `config:` pointing at the copy."""
    from surrogate_dagster.catalog.loader import read_yaml_mapping  # noqa: F401 - the reader under test
    from surrogate_dagster.training.config import load_training_catalog

    text = (REPO_ROOT / "assets/training.yaml").read_text(encoding="utf-8")
    cat = p.parent / "training.yaml"
    cat.write_text(text.replace("config: stages/stage1.yaml", f"config: {p}", 1), encoding="utf-8")
    return load_training_catalog(cat).stage("stage1").load_config()


def _profile(p: Path):
    from surrogate_dagster.catalog.loader import load_profile
    return load_profile(p)


def _synth_resources(p: Path):
    from surrogate_dagster.synth.resource import synth_resources
    return synth_resources(_profile(p))


def _curation_resources(p: Path):
    from surrogate_dagster.curation.resource import curation_resources
    return curation_resources(_profile(p))


def _training_profile(p: Path):
    from surrogate_dagster.training.config import training_profile
    return training_profile(_profile(p))


def _k8s(p: Path):
    from surrogate_dagster.runtime.k8s import k8s_settings
    return k8s_settings(_profile(p))


def _preflight(p: Path):
    from surrogate_dagster.operations.preflight import preflight_config
    return preflight_config(_profile(p))


def _curation_catalog(p: Path):
    from surrogate_dagster.curation.config import load_curation
    return load_curation(p)


def _evals_catalog(p: Path):
    from surrogate_dagster.evals.config import load_eval_catalog
    return load_eval_catalog(p)


@dataclass(frozen=True)
class Mutation:
    name: str
    shipped: str                           # the file edited, relative to the repository
    edit: Callable[[str], str]
    load: Callable[[Path], object]         # loads the edited copy as the pipeline would
    says: tuple[str, ...]                  # what the refusal names beside the file ({file} is the copy)


MUTATIONS = [
    Mutation("second top-level sources key", "assets/sources.yaml",
             append("\nsources:\n  - name: extra\n    family: helper\n    hf_id: org/extra\n"),
             _sources, ("key 'sources' appears twice",)),
    Mutation("repeated cap", "assets/sources.yaml", sub1(r"^(\s+)cap: (\d+)$", r"\1cap: \2\n\1cap: 5"),
             _sources, ("key 'cap' appears twice",)),
    Mutation("cap: true", "assets/sources.yaml", sub1(r"^(\s+)cap: \d+$", r"\1cap: true"),
             _sources, ("{file}: sources.0.cap:", "integer")),
    Mutation("cap as a string", "assets/sources.yaml", sub1(r"^(\s+)cap: (\d+)$", r'\1cap: "\2"'),
             _sources, ("{file}: sources.0.cap:", "integer")),
    Mutation("cap: 0", "assets/sources.yaml", sub1(r"^(\s+)cap: \d+$", r"\1cap: 0"),
             _sources, ("{file}: sources.0.cap:", "greater than 0")),
    Mutation("sources.yaml syntax error", "assets/sources.yaml", sub1(r"^(\s+)cap: (\d+)$", r"\1cap: [\2"),
             _sources, ("not valid YAML at line",)),
    Mutation("synth budget_usd: .inf", "assets/synth.yaml", sub1(r"^budget_usd: \d+", "budget_usd: .inf"),
             _synth, ("{file}: budget_usd:", "finite")),
    Mutation("synth budget_usd: -5", "assets/synth.yaml", sub1(r"^budget_usd: \d+", "budget_usd: -5"),
             _synth, ("{file}: budget_usd:", "greater than 0")),
    Mutation("synth misspelt key", "assets/synth.yaml",
             sub1(r"^max_planner_turns: ", "max_planer_turns: 8\nmax_planner_turns: "),
             _synth, ("{file}: max_planer_turns:",)),
    Mutation("stage max_steps: four", "assets/stages/stage1.yaml", append("\nmax_steps: four\n"),
             _stage1, ("{file}: max_steps: must be an integer >= 1",)),
    Mutation("stage save_steps: 0", "assets/stages/stage1.yaml", append("\nsave_steps: 0\n"),
             _stage1, ("{file}: save_steps: must be an integer >= 1",)),
    Mutation("stage syntax error", "assets/stages/stage1.yaml", sub1(r"^lora_r: 64$", "lora_r: [64"),
             _stage1, ("not valid YAML at line",)),
    Mutation("profile phases opps", "resources/local.yaml", sub1(r"^  ops:$", "  opps:"),
             _profile, ("{file}: phases:", "'opps'")),
    Mutation("profile phases servng", "resources/local.yaml", sub1(r"^  serving:$", "  servng:"),
             _profile, ("{file}: phases:", "'servng'")),
    Mutation("profile llm budget_usd: .inf", "resources/local.yaml",
             sub1(r"^    budget_usd: 200", "    budget_usd: .inf"),
             _synth_resources, ("{file}: phases.llm.budget_usd:", "finite")),
    Mutation("profile llm budget_usd: -5", "resources/local.yaml",
             sub1(r"^    budget_usd: 200", "    budget_usd: -5"),
             _synth_resources, ("{file}: phases.llm.budget_usd:", "greater than 0")),
    Mutation("profile repeated budget_usd", "resources/local.yaml",
             sub1(r"^    budget_usd: 200", "    budget_usd: 200\n    budget_usd: 5"),
             _profile, ("key 'budget_usd' appears twice",)),
    Mutation("profile misspelt curation key", "resources/local.yaml",
             sub1(r"^    edu_threshold: 2$", "    edu_treshold: 2"),
             _curation_resources, ("{file}: phases.curation.edu_treshold:",)),
    Mutation("profile gpu_count: true", "resources/local.yaml", sub1(r"^    gpu_count: 0", "    gpu_count: true"),
             _training_profile, ("{file}: phases.training.gpu_count:", "integer")),
    Mutation("profile misspelt ops key", "resources/local.yaml",
             sub1(r"^    dagster_home: ", "    dagster_hom: "),
             _profile, ("{file}: phases.ops.dagster_hom:",)),
    Mutation("profile misspelt k8s key", "resources/cluster.yaml",
             sub1(r"^    namespace: surrogate$", "    namespace: surrogate\n    namespce: surrogate"),
             _k8s, ("{file}: phases.k8s.namespce:",)),
    Mutation("profile misspelt preflight key", "resources/production.yaml",
             sub1(r"^  ops:$", "  preflight:\n    hf_pln: free\n  ops:"),
             _preflight, ("{file}: phases.preflight.hf_pln:",)),
]


def _mutated(tmp_path: Path, m: Mutation) -> Path:
    src = REPO_ROOT / m.shipped
    text = src.read_text(encoding="utf-8")
    new = m.edit(text)
    assert new != text, f"{m.name}: the edit did not apply to {m.shipped}"
    out = tmp_path / src.name
    out.write_text(new, encoding="utf-8")
    return out


@pytest.mark.parametrize("m", MUTATIONS, ids=lambda m: m.name)
def test_mutation_refused_naming_file_key_and_reason(tmp_path, m):
    from surrogate_dagster.catalog.loader import CatalogError

    path = _mutated(tmp_path, m)
    with pytest.raises(CatalogError) as e:
        m.load(path)
    msg = str(e.value)
    assert str(path) in msg, msg
    for needle in m.says:
        assert needle.format(file=path) in msg, (needle, msg)
    assert "validation error for" not in msg and "<unicode string>" not in msg, msg
    # the one shape: every line starts with the file (and, for YAML errors, its line)
    assert all(line.startswith(f"{path}:") for line in msg.splitlines()), msg


# ------------------------------------------------------------------ valid edits that change outputs

CURATION_ASSETS = ("sanitized_rows", "filtered_rows", "minhash_signatures", "dedup_decisions",
                   "benchmark_ngram_index", "curated_rows", "_mixture_asset", "_mixture_hub_asset")

# (setting, new value, the curation assets whose code reads it): read off the asset functions.
CODE_VERSION_MUTATIONS = [
    ("edu_threshold", 2.5, {"filtered_rows"}),
    ("ner_model", "hf:bigcode/starpii", {"sanitized_rows"}),
]


@pytest.mark.parametrize("setting, value, readers", CODE_VERSION_MUTATIONS, ids=[c[0] for c in CODE_VERSION_MUTATIONS])
def test_profile_setting_moves_the_code_version_of_its_readers(setting, value, readers):
    from surrogate_dagster.curation import assets

    edited = assets.PROFILE_CURATION.model_copy(update={setting: value})
    moved = {f for f in CURATION_ASSETS if assets.code_version_of(f) != assets.code_version_of(f, edited)}
    assert moved == readers


def test_output_neutral_settings_move_no_code_version():
    from surrogate_dagster.curation import assets

    edited = assets.PROFILE_CURATION.model_copy(update={"workers": 7, "chunk_rows": 3, "work_dir": "elsewhere"})
    assert all(assets.code_version_of(f) == assets.code_version_of(f, edited) for f in CURATION_ASSETS)


def test_active_profile_setting_is_in_the_asset_code_version(tmp_path, monkeypatch):
    """An edited profile file (as SURROGATE_PROFILE names it) reaches the asset's code version:
    the version the code location computes for it is the one with the edited setting."""
    from surrogate_dagster.catalog.loader import load_profile, validate_phase
    from surrogate_dagster.curation import assets
    from surrogate_dagster.curation.config import CurationProfile

    m = Mutation("edu_threshold 2 -> 4", "resources/local.yaml", sub1(r"^    edu_threshold: 2$", "    edu_threshold: 4"),
                 _profile, ())
    path = _mutated(tmp_path, m)
    edited = validate_phase(load_profile(path), "curation", CurationProfile)
    assert edited.edu_threshold == 4
    assert assets.code_version_of("filtered_rows", edited) != assets.code_version_of("filtered_rows")
    assert assets.code_version_of("sanitized_rows", edited) == assets.code_version_of("sanitized_rows")


def test_the_synth_curated_assets_follow_ner_model():
    # curated_orchestrator_traces / curated_exec_graded_pairs sanitize with the profile's NER model too.
    from surrogate_dagster.catalog.code_version import function_code_version
    from surrogate_dagster.curation import assets

    mod = "surrogate_dagster.synth.curated_assets"
    import importlib
    importlib.import_module(mod)
    base = function_code_version(mod, "_curated_synth", sections_of="CURATION",
                                 profile_section=("curation", assets.PROFILE_CURATION))
    for setting, value, moves in [("ner_model", None, True), ("edu_threshold", 4.0, False)]:
        edited = assets.PROFILE_CURATION.model_copy(update={setting: value})
        other = function_code_version(mod, "_curated_synth", sections_of="CURATION", profile_section=("curation", edited))
        assert (other != base) is moves, setting


def test_twenty_four_cases():
    assert len(MUTATIONS) + len(CODE_VERSION_MUTATIONS) == 24
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS)
