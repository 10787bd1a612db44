"""A profile is refused before any work with every section's problems in one message, each line
naming the profile file and the key; the shipped profiles have none."""

from __future__ import annotations

import pytest

from surrogate_dagster.catalog.loader import CatalogError, load_profile
from surrogate_dagster.operations.profile_check import check_profile, profile_problems
from surrogate_dagster.paths import PROFILES_DIR


@pytest.mark.parametrize("name", sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
def test_shipped_profiles_have_no_problem(name):
    assert profile_problems(load_profile(name)) == []


def test_every_section_problem_in_one_message(tmp_path):
    text = (PROFILES_DIR / "local.yaml").read_text(encoding="utf-8")
    for old, new in [("    gpu_count: 0", "    gpu_count: true"),                      # training
                     ("    backend: transformers\n  evals:", "    backend: transformrs\n  evals:"),  # serving
                     ("    datatrove_executor: {kind: pool, workers: 2}",
                      "    datatrove_executor: {kind: pol, workers: 2}"),              # ops executor
                     ("  ops:\n", "  preflight:\n    hf_pln: free\n  k8s:\n    namespce: x\n  ops:\n")]:
        assert old in text, old
        text = text.replace(old, new, 1)
    p = tmp_path / "local.yaml"
    p.write_text(text, encoding="utf-8")
    prof = load_profile(p)  # the profile's own keys are fine: the sections are the phases' to check
    with pytest.raises(CatalogError) as e:
        check_profile(prof)
    lines = str(e.value).splitlines()
    assert all(line.startswith(f"{p}: phases.") for line in lines), lines
    keys = {line.split(": ")[1] for line in lines}
    assert {"phases.training.gpu_count", "phases.serving.backend", "phases.ops.datatrove_executor",
            "phases.preflight.hf_pln", "phases.k8s.namespce"} <= keys, lines
