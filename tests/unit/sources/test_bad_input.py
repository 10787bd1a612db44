"""Bad input gets a clear error or a quarantine row with a reason, and loses nothing else."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.catalog.models import SourceSpec
from surrogate_dagster.curation.benchmark_refs import BenchmarkFileMissing, load_benchmarks
from surrogate_dagster.curation.mixtures import build_mixture
from surrogate_dagster.hub import OfflineHub
from surrogate_dagster.sources.mirror import mirror_source
from surrogate_dagster.sources.normalize import normalize_source, read_normalized
from surrogate_dagster.storage import LocalObjectStore

REV = "d" * 40


def _hub(tmp_path, lines: list[bytes]) -> OfflineHub:
    repo = tmp_path / "hub" / "datasets" / "org" / "ds"
    (repo / "default").mkdir(parents=True)
    (repo / "default" / "train.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (repo / "revision.txt").write_text(REV)
    return OfflineHub(tmp_path / "hub", tmp_path / "push", "org")


def _row(i: int, answer: str = "Use `sorted(xs)`.") -> bytes:
    return json.dumps({"query": f"How do I sort list {i}?", "answer": answer, "lang": "python"}).encode()


SPEC = SourceSpec(name="codefeedback_filtered", family="code_sft", hf_id="org/ds",
                  adapter="codefeedback_filtered")


def test_non_utf8_and_non_object_rows_are_quarantined(tmp_path):
    hub = _hub(tmp_path, [_row(1), b'{"query": "caf\xe9", "answer": "x"}', b"[1, 2]", _row(2)])
    store = LocalObjectStore(tmp_path / "store")
    rep = mirror_source(SPEC, hub, store, log=lambda m: None)
    assert rep.rows == 2 and rep.quarantined == {"unreadable_row": 2}


def test_ten_megabyte_single_line_row_survives(tmp_path):
    huge = "```python\nx = 1\n" + "y" * (10 * 1024 * 1024) + "\n```"
    hub = _hub(tmp_path, [_row(1), _row(2, huge)])
    store = LocalObjectStore(tmp_path / "store")
    mirror_source(SPEC, hub, store, log=lambda m: None)
    rep = normalize_source(SPEC, store, log=lambda m: None)
    assert rep.rows_in == 2 and rep.rows_out + sum(rep.quarantined.values()) == 2
    from surrogate_dagster.curation.quality.heuristics import HeuristicFilter

    _, rows = read_normalized(store, SPEC.name)
    big = [r for r in rows if len(r["messages"][-1]["content"]) > 1_000_000]
    assert big and "quality_max_line_length" in HeuristicFilter().violations(big[0])


def test_empty_partition_writes_an_empty_table(tmp_path):
    hub = _hub(tmp_path, [])
    store = LocalObjectStore(tmp_path / "store")
    rep = mirror_source(SPEC, hub, store, log=lambda m: None)
    assert rep.rows == 0 and rep.parts == []
    norm = normalize_source(SPEC, store, log=lambda m: None)
    assert norm.rows_in == 0 and read_normalized(store, SPEC.name)[1] == []


def test_source_whose_every_row_is_dropped(tmp_path):
    hub = _hub(tmp_path, [json.dumps({"query": "", "answer": ""}).encode()] * 3)
    store = LocalObjectStore(tmp_path / "store")
    mirror_source(SPEC, hub, store, log=lambda m: None)
    rep = normalize_source(SPEC, store, log=lambda m: None)
    assert rep.rows_out == 0 and sum(rep.quarantined.values()) == 3
    # downstream a mixture with an empty member still builds, from the others
    build = build_mixture("code_sft", "sft", {"empty": [], "other": []}, {})
    assert build.n_rows == 0 and list(build.iter_rows()) == [] and build.data_version


def test_missing_benchmark_file_names_it(tmp_path):
    (tmp_path / "BFCL").mkdir()
    with pytest.raises(BenchmarkFileMissing) as e:
        load_benchmarks(tmp_path, ["humaneval"])
    assert "HumanEval" in str(e.value)
    items, manifest = load_benchmarks(tmp_path, ["humaneval"], on_missing="skip")
    assert items == [] and manifest["humaneval"]["present"] is False
