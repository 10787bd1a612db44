"""benchmarks/data/secret_contexts_labelled.jsonl is byte for byte what its generator writes, run as a script."""

from __future__ import annotations

import subprocess
import sys

from tests.unit.sanitize.test_secret_contexts_set import GEN, JSONL


def test_file_is_what_the_generator_writes(tmp_path):
    out = tmp_path / "regenerated.jsonl"
    subprocess.run([sys.executable, str(GEN), "--out", str(out)], check=True, capture_output=True)
    assert out.read_bytes() == JSONL.read_bytes()
