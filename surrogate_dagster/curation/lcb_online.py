"""LiveCodeBench problems from the HF Hub (production decontamination source).

`livecodebench/code_generation_lite` is published with a loading script that recent `datasets`
refuse, so we read its raw JSONL files: release_vN is the union of test.jsonl,
test2.jsonl, ... testN.jsonl. Offline, the LeetCode 2024 contest stand-in is used instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from .benchmark_refs import items_from_livecodebench_rows
from .decontam import BenchmarkItem

REPO = "livecodebench/code_generation_lite"


def release_files(release: str) -> list[str]:
    """The JSONL files that make up `release_vN`."""
    n = int(release.removeprefix("release_v"))
    return ["test.jsonl"] + [f"test{i}.jsonl" for i in range(2, n + 1)]


def iter_rows(release: str = "release_v6", token_env: str = "HF_TOKEN") -> Iterator[dict]:
    from huggingface_hub import hf_hub_download

    for name in release_files(release):
        path = hf_hub_download(REPO, name, repo_type="dataset", token=os.environ.get(token_env) or None)
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def load_livecodebench_items(release: str = "release_v6") -> list[BenchmarkItem]:
    return list(items_from_livecodebench_rows(iter_rows(release)))
