"""A code location holding the cross-source dedup step alone, on the store and work dir under
``$CROSS_SOURCE_TEST_ROOT`` (``$CROSS_SOURCE_STORE`` and ``$CROSS_SOURCE_WORK_DIR`` override them).
tests/integration/test_cross_source_concurrency.py runs Dagster's CLI on it, twice at once."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import Definitions

from surrogate_dagster.curation.assets import dedup_decisions
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.resources import ObjectStoreResource

ROOT = Path(os.environ["CROSS_SOURCE_TEST_ROOT"])

defs = Definitions(
    assets=[dedup_decisions],
    resources={
        "object_store": ObjectStoreResource(kind="local", root=os.environ.get("CROSS_SOURCE_STORE", str(ROOT / "store"))),
        "curation": CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                     work_dir=os.environ.get("CROSS_SOURCE_WORK_DIR", str(ROOT / "work"))),
    },
)
