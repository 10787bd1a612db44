"""The DevSecOps eval's seed tasks have the shape the harness reads (the eval run:
tests/integration/test_evals_devsecops.py)."""

from __future__ import annotations

import pytest

from surrogate_dagster.evals.harness import devsecops as D
from surrogate_dagster.paths import ASSETS_DIR


@pytest.fixture(scope="module")
def seed() -> D.Seed:
    return D.load_seed(ASSETS_DIR / "devsecops_eval_seed.yaml")


def test_seed_shape(seed):
    cats = D.by_category(seed.tasks)
    assert all(len(v) >= 10 for v in cats.values()) and set(cats) == set(D.CATEGORIES)
    assert seed.target_total == 280
    assert all(t.meta["cve"].startswith("CVE-") for t in cats["cve"])
    from surrogate_dagster.synth.graders import load_devsecops_tasks

    train_prompts = [t.prompt for t in load_devsecops_tasks()]  # eval tasks are not training prompts
    assert not any(D.near_duplicate(t.prompt, train_prompts, 0.5) for t in seed.tasks)
