"""The evals' release environment shared by the release tests: a tiny Qwen2 standing in for every
checkpoint, a temp object store, an offline hub that pushes into a temp folder, and reports written
straight into the store (the harnesses are tested on their own)."""

from __future__ import annotations

from pathlib import Path

from surrogate_dagster.evals import assets as A
from surrogate_dagster.evals.config import TIER1, TIER2
from surrogate_dagster.evals.harness.common import EvalReport, unavailable
from surrogate_dagster.evals.reports import write_report
from surrogate_dagster.evals.resources import EvalSettings, dir_revision
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from surrogate_dagster.resources import HubResource, ObjectStoreResource


# lm-eval's RULER on the tiny model, one offline task (niah_single_1) at a length its tokenizer fits
RULER_TEST_OVERRIDE = {"length": 2048, "length_label": "test", "samples_per_task": 1, "timeout_s": 600,
                       "skip": {t: "test: one task is enough" for t in
                                ("niah_multikey_2", "niah_multikey_3", "ruler_vt", "ruler_cwe", "ruler_fwe")}}


def release_env(tmp: Path, thresholds: dict[str, float] | None = None) -> tuple[Path, dict]:
    """(the tiny model's folder, the resources of the evals assets) under `tmp`; ``thresholds``: the
    profile's labelled threshold overrides (they gate)."""
    model = build_tiny_qwen2(tmp / "model")
    section = {"offline": True, "work_dir": str(tmp / "work"),
               "overrides": {r: RULER_TEST_OVERRIDE for r in ("ruler_32k", "ruler_128k")}}
    if thresholds:
        section.update(thresholds=thresholds, thresholds_label="test: a gating bar")
    res = {"object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
           "hub": HubResource(mode="offline", mirror_dir=str(tmp / "mirror"), push_dir=str(tmp / "pushes"),
                              org="axentx"),
           "evals": EvalSettings(**section, model_dirs={c: str(model) for c in A.CATALOG.checkpoints})}
    return model, res


def write_passing_reports(store, model: Path, score: float = 95.0) -> None:
    """Every Tier-1 report of every evaluated model and every Tier-2 report of the release checkpoint,
    at `score` (GAIA unavailable: it has no target), on the model's current revision."""
    ckpt = {"name": "x", "revision": dir_revision(model)}
    for c in A.CATALOG.evaluated:  # the base model too: stage 1 regresses against it
        for b in TIER1:
            write_report(store, c, b, EvalReport(b, f"{b} test variant", "1", "ok", score, "pass@1", n_items=10,
                                                 samples=[{"i": 1}]), ckpt)
    for b in TIER2:
        rep = EvalReport(b, f"{b} test variant", "1", "ok", 100.0, "pass@1", n_items=3, samples=[{"i": 1}])
        if b == "gaia_level1":
            rep = unavailable(b, "GAIA", "no HF token")  # no target: informative only
        write_report(store, A.CATALOG.release.checkpoint, b, rep, ckpt)
