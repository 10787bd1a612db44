"""Render every stage for the local executor around a tiny Qwen2, and run the axolotl reader probe.

Pipeline side of tests/env/test_axolotl_reader.py: the stage files are rendered with
``render_stage`` and the local executor's overrides (assets/training.yaml), every ``asset://``
model reference points at one tiny Qwen2 (tiny_base.build_tiny_qwen2: the real Qwen2.5 chat
template, a BPE learnt from the fixture rows), every mixture at its fixture JSONL, and
tests/support/axolotl_reader_probe.py runs axolotl's dataset preparation on each config in the trainer
environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.support.axolotl_reader_rows import MIXTURES, fixture_path
from surrogate_dagster.training.config import load_training_catalog
from surrogate_dagster.training.render import Resolution, render_stage, stage_refs
from surrogate_dagster.training.tiny_base import TinySpec, build_tiny_qwen2, row_texts

ROOT = Path(__file__).resolve().parents[2]
TRAINER_PY = ROOT / ".venv-trainer" / "bin" / "python"
PROBE = Path(__file__).resolve().parent / "axolotl_reader_probe.py"
CATALOG = load_training_catalog()
STAGE_MIXTURE = {"stage1": "code_sft", "stage1_5": "tool_sft", "stage1_6": "agent_sft",
                 "stage2": "code_dpo", "stage2_5": "tool_dpo"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_tokenizer_model(out: Path) -> Path:
    """A tiny Qwen2 whose BPE is learnt from every fixture row (so the probes' ids decode losslessly)."""
    texts = [t for m in MIXTURES for r in read_jsonl(fixture_path(m)) for t in row_texts(r)]
    build_tiny_qwen2(texts, out, TinySpec(vocab_size=600))
    return out


def render_local(stage_name: str, work: Path, model_dir: Path, data: dict[str, Path]) -> Path:
    """The config the local executor trains ``stage_name`` with, its inputs placed under ``work``."""
    stage = CATALOG.stage(stage_name)
    resolve = {}
    for ref in stage_refs(stage.load_config()):
        if ref.endswith("_mixture"):
            resolve[ref] = Resolution("key", f"mixtures/{ref}/v/train.jsonl", "v")
        else:
            resolve[ref] = Resolution("prefix", f"models/{ref}", "v")
    rendered = render_stage(stage, CATALOG, "local", resolve)
    for item in rendered.inputs:
        dest = work / item["dest"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        if "prefix" in item:  # base model, merged policy or adapter: the tiny model's directory
            shutil.copytree(model_dir, dest, dirs_exist_ok=True)
        else:
            name = item["key"].split("/")[1].removesuffix("_mixture")
            shutil.copyfile(data[name], dest)
    text = yaml.safe_dump(rendered.config, sort_keys=False).replace("{work}", str(work))
    path = work / "axolotl.yaml"
    path.write_text(text)
    return path


def run_probe(configs: dict[str, Path], cwd: Path, timeout: float = 900) -> dict[str, dict]:
    """Probe every config in one trainer process; returns name -> the probe's JSON."""
    outs = {name: cfg.with_name("probe.json") for name, cfg in configs.items()}
    argv = [str(p) for name, cfg in configs.items() for p in (cfg, outs[name])]
    proc = subprocess.run([str(TRAINER_PY), str(PROBE), *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=str(cwd), env={**os.environ, "AXOLOTL_DO_NOT_TRACK": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"axolotl probe failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    return {name: json.loads(out.read_text(encoding="utf-8")) for name, out in outs.items()}
