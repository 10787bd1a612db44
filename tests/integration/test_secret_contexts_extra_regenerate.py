"""benchmarks/data/secret_contexts_extra.jsonl is byte for byte what its generator writes, run as a script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.unit.sanitize.test_secret_contexts_extra_set import GEN, JSONL


def test_file_is_the_generator_output(tmp_path: Path) -> None:
    out = tmp_path / "extra.jsonl"
    subprocess.run([sys.executable, str(GEN), "--out", str(out)], check=True, capture_output=True)
    assert out.read_bytes() == JSONL.read_bytes()
