"""The rehearsal stand-ins (operations/rehearsal_models.py): one repo per production model id in
the local Hub's models_dir layout, the shapes of the real models' configs, byte-identical on a
rebuild, built in seconds, served by the local Hub at the shas the builder reports; the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surrogate_dagster.curation.quality.edu_classifier import STACK_EDU_MODELS
from surrogate_dagster.hub.local_server import HubServer
from surrogate_dagster.operations.rehearsal_models import (EDU_SCORE, STARPII_ID, STARPII_ID2LABEL,
                                                           build_rehearsal_models, content_sha)
from surrogate_dagster.training.config import load_training_catalog

BASE = load_training_catalog().base_model
# What the builder may take on the 2-core box (measured 3.3-4.2 s while other tests ran).
BUILD_BUDGET_S = 60


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("rehearsal_models")
    t0 = time.monotonic()
    shas = build_rehearsal_models(out)
    return out, shas, time.monotonic() - t0


def test_one_repo_per_production_model_id(built):
    out, shas, seconds = built
    expected = {BASE.hf_id, STARPII_ID, *STACK_EDU_MODELS.values()}
    assert set(shas) == expected and len(shas) == 2 + 15  # TSX is scored by the TypeScript classifier
    for repo_id, sha in shas.items():
        root = out / repo_id
        assert (root / "revision.txt").read_text().strip() == sha
        assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= \
            {p.name for p in root.iterdir()}
    assert shas[BASE.hf_id] == BASE.revision  # the production pin resolves on the local Hub
    for repo_id in set(shas) - {BASE.hf_id}:
        assert shas[repo_id] == content_sha(out / repo_id)
    assert len(set(shas.values())) == len(shas)
    assert not [p for p in out.rglob(".*") if p.is_dir()]  # no half-built repo left behind
    print(f"build_rehearsal_models: {len(shas)} repos in {seconds:.1f} s")
    assert seconds < BUILD_BUDGET_S


def test_stand_ins_have_the_real_config_shapes(built):
    out, _, _ = built
    pii = json.loads((out / STARPII_ID / "config.json").read_text())
    assert pii["model_type"] == "bert" and pii["architectures"] == ["BertForTokenClassification"]
    assert {int(k): v for k, v in pii["id2label"].items()} == STARPII_ID2LABEL
    for repo_id in set(STACK_EDU_MODELS.values()):
        cfg = json.loads((out / repo_id / "config.json").read_text())
        assert cfg["architectures"] == ["BertForSequenceClassification"]
        assert len(cfg["id2label"]) == 1 and cfg["problem_type"] == "regression"
        assert cfg["max_position_embeddings"] >= 1024  # the scorer truncates at 1024 tokens
    base = json.loads((out / BASE.hf_id / "config.json").read_text())
    assert base["architectures"] == ["Qwen2ForCausalLM"] and base["hidden_size"] == BASE.tiny.hidden_size
    assert "<|im_start|>" in (out / BASE.hf_id / "chat_template.jinja").read_text()


def test_starpii_stand_in_tags_nothing_and_edu_stand_ins_score_3_5(built):
    from surrogate_dagster.curation.quality.edu_classifier import StackEduClassifier
    from surrogate_dagster.sanitize.ner import TransformersNER

    out, _, _ = built
    ner = TransformersNER(str(out / STARPII_ID))
    texts = ["Contact Jane Doe at jane@example.com, 10 Downing Street", "password = 'hunter2'", "x" * 3000]
    assert ner.tag(texts) == [[], [], []]
    models = {lang: str(out / repo) for lang, repo in STACK_EDU_MODELS.items()}
    scores = StackEduClassifier(models=models, local_files_only=True).score_many(
        [("def f():\n    return 1\n", "python", ""), ("fn main() {}", "rust", ""), ("SELECT 1;" * 900, "sql", "")])
    assert scores == [pytest.approx(EDU_SCORE)] * 3


def test_rebuild_is_byte_identical(built, tmp_path):
    out, shas, _ = built
    again = build_rehearsal_models(tmp_path / "again")
    assert again == shas
    assert content_sha(tmp_path / "again" / BASE.hf_id) == content_sha(out / BASE.hf_id)


def test_local_hub_serves_them_at_the_builders_shas(built):
    out, shas, _ = built
    with HubServer(None, models_dir=out) as server:
        assert set(server.model_ids) == set(shas)
        assert {r: server.sha(r, "model") for r in shas} == shas


def test_cli_prints_repo_ids_and_shas(built, tmp_path):
    _, shas, _ = built
    proc = subprocess.run([sys.executable, "-m", "surrogate_dagster.operations.rehearsal_models", str(tmp_path / "cli")],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert dict(line.split(" ", 1) for line in lines[:-1]) == shas
    assert lines[-1].startswith(f"{len(shas)} model repos in ")
