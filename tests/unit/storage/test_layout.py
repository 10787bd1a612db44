"""The object-store layout (storage/layout.py) and the checkpoint resolver (storage/checkpoints.py):
the keys stay the ones already stored, and the trainer spells the commit files alike."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage import layout
from surrogate_dagster.storage.checkpoints import latest_checkpoint, read_checkpoint, write_checkpoint

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(tmp_path: Path) -> LocalObjectStore:
    return LocalObjectStore(tmp_path / "store")


def test_keys_are_the_stored_ones():
    assert layout.raw_pointer("xlam") == "raw/xlam/_latest.json"
    assert layout.success_marker(layout.raw_revision_prefix("xlam", "abc")) == "raw/xlam/abc/_SUCCESS.json"
    assert layout.normalized_pointer("xlam") == "normalized/xlam/_latest.json"
    assert layout.normalized_table("xlam", "abc", "quarantine") == "normalized/xlam/abc/quarantine.parquet"
    assert layout.step_pointer("curated", "xlam") == "curation/curated/xlam/_latest.json"
    assert layout.pointer(layout.DEDUP) == "curation/dedup/_latest.json"
    assert layout.pointer(layout.BENCHMARK_INDEX) == "curation/benchmark_index/_latest.json"
    assert f"{layout.MINHASH}/xlam/v.tar.gz" == "curation/minhash/xlam/v.tar.gz"
    assert f"{layout.DECONTAM}/xlam/v.json" == "curation/decont/xlam/v.json"
    assert layout.pointer(layout.SYNTH_SCENARIOS) == "synth/scenarios/_latest.json"
    assert layout.pointer(layout.trace_batch_folder("batch-003")) == "synth/orchestrator_traces/batch-003/_latest.json"
    assert layout.pointer(layout.SYNTH_PAIRS) == "synth/exec_graded_pairs/_latest.json"
    assert layout.mixture_pointer("code_sft") == "mixtures/code_sft/_latest.json"
    assert layout.mixture_version_prefix("code_sft", "v1") == "mixtures/code_sft/v1/"
    assert layout.mixture_view_folder("code_sft_mixture", "v1") == "views/mixtures/code_sft_mixture/v1"
    assert layout.pointer(layout.BASE_MODEL) == "models/base_model/_latest.json"
    assert layout.base_model_folder("v1") == "models/base_model/v1"
    assert layout.stage_pointer("stage1_6") == "training/stage1_6/_latest.json"
    assert layout.stage_started("stage1_6") == "training/stage1_6/_started.json"
    assert layout.stage_run_prefix("stage1_6", "fp") == "training/stage1_6/fp"
    assert layout.pointer(layout.DEVSECOPS_TASKS) == "evals/devsecops/_latest.json"
    assert (layout.EVAL_REPORTS, layout.EVAL_GROUNDTRUTH, layout.SCOREBOARD) == (
        "evals/reports", "evals/groundtruth", "evals/scoreboard.json")


def test_listings_read_pointers_and_revisions(store):
    for key in ("curation/curated/b/_latest.json", "curation/curated/a/_latest.json",
                "curation/curated/a/v1/rows.parquet", "curation/curated/c/v1/rows.parquet",
                "raw/xlam/r1/part-00000.parquet", "raw/xlam/r2/_SUCCESS.json", "raw/xlam/_latest.json"):
        store.put_bytes(key, b"{}")
    assert layout.step_sources(store, "curated") == ["a", "b"]  # c has tables but no pointer
    assert layout.child_pointers(store, layout.step_root("curated")) == {
        "a": "curation/curated/a/_latest.json", "b": "curation/curated/b/_latest.json"}
    assert layout.raw_revisions(store) == {"xlam": ["r1", "r2"]}
    assert layout.is_pointer("raw/xlam/_latest.json") and not layout.is_pointer("raw/xlam/r2/_SUCCESS.json")


def test_checkpoint_pointer_round_trip(store):
    assert read_checkpoint(store, "stage1") is None
    with pytest.raises(FileNotFoundError, match="stage1_checkpoint has not been materialized.*training/stage1/"):
        latest_checkpoint(store, "stage1", "stage1_checkpoint")
    write_checkpoint(store, "stage1", "training/stage1/fp1", "fp1", False)
    # the bytes the stage run has always written
    assert store.get_bytes("training/stage1/_latest.json") == json.dumps(
        {"output_prefix": "training/stage1/fp1", "data_version": "fp1", "merged": False}).encode()
    ckpt = latest_checkpoint(store, "stage1")
    assert (ckpt.data_version, ckpt.served_part, ckpt.part_prefix("adapter")) == (
        "fp1", "adapter", "training/stage1/fp1/adapter")
    with pytest.raises(ValueError, match="not merged"):
        ckpt.part_prefix("merged")
    with pytest.raises(ValueError, match="'adapter' and maybe a 'merged'"):
        ckpt.part_prefix("weights")
    write_checkpoint(store, "stage1", "training/stage1/fp2", "fp2", True)
    assert latest_checkpoint(store, "stage1").part_prefix("merged") == "training/stage1/fp2/merged"
    store.put_bytes("training/stage2/_latest.json", json.dumps({"data_version": "fp"}).encode())
    with pytest.raises(ValueError, match="pointer without"):
        read_checkpoint(store, "stage2")


# ------------------------------------------------------------------ the trainer's spelling
# trainer/ runs in its own venv and cannot import this package: any commit-file name it spells
# (`..._latest.json`, `..._SUCCESS.json`) must be the layout's.
COMMIT_FILE = re.compile(r"_(latest|SUCCESS)\.[A-Za-z]+")


def commit_file_names(root: Path) -> set[str]:
    """The commit-file names (``_latest.json``, ``_SUCCESS.json`` alike) in string literals under root."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        if ".venv" in path.parts or "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= {m.group(0) for m in COMMIT_FILE.finditer(node.value)}
    return found


def test_trainer_spells_commit_files_like_the_layout():
    assert commit_file_names(REPO / "trainer") <= {layout.POINTER_NAME, layout.SUCCESS_MARKER}


def test_commit_file_finder_finds_a_planted_spelling(tmp_path):
    (tmp_path / "m.py").write_text('KEY = f"{prefix}/_latest.jsonl"\nOK = "a/_SUCCESS.json"\nX = "latest.json"\n')
    assert commit_file_names(tmp_path) == {"_latest.jsonl", "_SUCCESS.json"}
