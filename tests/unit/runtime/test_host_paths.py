"""The folders a profile names are created before the first step writes, a benchmarks folder is
filled from the shipped copies and verified, and a folder that cannot be made fails naming the
path, the profile field and the fix (runtime/host_paths.py), on tmp paths only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.runtime import host_paths
from surrogate_dagster.runtime.host_paths import (HostPathError, plan_host_paths, prepare_host_paths, profile_paths,
                                                  required_benchmark_files, verify_benchmarks)

FIELDS = {"phases.curation.work_dir", "phases.curation.benchmarks_dir", "phases.synth.work_dir",
          "phases.training.work_dir", "phases.evals.work_dir", "phases.evals.benchmarks_dir",
          "phases.serving.vllm.log_dir"}


def _host_profile(tmp_path: Path, root: Path, bench: Path | None = None):
    """production with its /mnt folders moved under ``root`` (everything else as production says)."""
    bench = bench or root / "benchmarks"
    doc = {"extends": "production", "name": "host-test", "phases": {
        "curation": {"work_dir": str(root / "work"), "benchmarks_dir": str(bench)},
        "synth": {"work_dir": str(root / "work" / "synth")},
        "training": {"work_dir": str(root / "work" / "training")},
        "evals": {"work_dir": str(root / "work" / "evals"), "benchmarks_dir": str(bench)},
        "serving": {"vllm": {"log_dir": str(root / "work" / "serving")}},
        "ops": {"dagster_home": str(root / "work" / "dagster_home")}}}
    path = tmp_path / "host-test.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_profile(str(path))


def test_production_names_every_folder_under_mnt_and_cluster_keeps_training_in_its_pod():
    prod = profile_paths(load_profile("production"))
    assert FIELDS <= {f for e in prod for f in e.fields} <= FIELDS | {"phases.ops.dagster_home"}
    assert all(str(e.path).startswith("/mnt/") for e in prod)
    bench = [e for e in prod if e.role == "benchmarks"]
    assert len(bench) == 1 and set(bench[0].fields) == {"phases.curation.benchmarks_dir", "phases.evals.benchmarks_dir"}
    cluster = {f for e in profile_paths(load_profile("cluster")) for f in e.fields}
    assert "phases.training.work_dir" not in cluster  # executor k8s: phases.training.k8s.work_dir, in the pod


def test_prepare_creates_fills_and_verifies(tmp_path):
    prof = _host_profile(tmp_path, tmp_path / "mnt")
    assert all(st.ok and "will be created" in st.detail for st in plan_host_paths(prof))
    assert not (tmp_path / "mnt").exists()  # the plan is read-only
    rep = prepare_host_paths(prof)
    assert {f for e in profile_paths(prof) for f in e.fields} == FIELDS | {"phases.ops.dagster_home"}
    for e in profile_paths(prof):
        assert e.path.is_dir() and e.path in rep.created
    bench = tmp_path / "mnt" / "benchmarks"
    shipped = host_paths.shipped_benchmarks()
    n_shipped = sum(1 for p in shipped.rglob("*") if p.is_file())
    assert rep.filled[bench] == n_shipped and rep.verified[bench] >= len(required_benchmark_files())
    assert (bench / "BFCL" / "BFCL_v4_simple_python.json").read_bytes() == \
        (shipped / "BFCL" / "BFCL_v4_simple_python.json").read_bytes()
    assert os.access(bench / "HumanEval.jsonl.gz", os.W_OK)  # a copy of the read-only shipped file is the user's
    # a second start changes nothing: nothing created, nothing copied, still verified
    again = prepare_host_paths(prof)
    assert not again.created and not again.filled and again.verified[bench] == rep.verified[bench]
    assert all(st.ok and "verified" in st.detail or st.detail == "exists, writable" for st in plan_host_paths(prof))


def test_the_files_the_evals_read_are_required():
    req = required_benchmark_files()
    for rel in ("BFCL/BFCL_v4_simple_python.json", "BFCL/BFCL_v4_live_relevance.json", "BFCL/SHA256SUMS",
                "MbppPlus.PropertyEval.json", "leetcode_contests_20240121-Jul.OpenCoder.jsonl", "HumanEval.jsonl.gz"):
        assert rel in req


def test_a_partial_or_altered_benchmarks_folder(tmp_path):
    prof = _host_profile(tmp_path, tmp_path / "mnt")
    bench = tmp_path / "mnt" / "benchmarks"
    (bench / "BFCL").mkdir(parents=True)
    (bench / "BFCL" / "BFCL_v4_multiple.json").write_text("{}\n")  # someone's edited copy: never overwritten
    with pytest.raises(HostPathError, match=r"BFCL/BFCL_v4_multiple.json \(SHA-256 differs"):
        prepare_host_paths(prof)
    assert (bench / "BFCL" / "BFCL_v4_multiple.json").read_text() == "{}\n"
    assert (bench / "HumanEval.jsonl.gz").is_file()  # the missing files were filled
    (bench / "BFCL" / "BFCL_v4_multiple.json").unlink()
    prepare_host_paths(prof)  # refilled and verified
    (bench / "HumanEval.jsonl.gz").unlink()
    with pytest.raises(HostPathError, match=r"missing benchmark file\(s\) \['HumanEval.jsonl.gz'\]"):
        verify_benchmarks(bench, None)


def test_a_folder_that_cannot_be_created_names_path_field_and_fix(tmp_path):
    blocker = tmp_path / "mnt"
    blocker.write_text("a file where the folder should be")  # mkdir fails here, even for root
    prof = _host_profile(tmp_path, blocker)
    plan = plan_host_paths(prof)
    assert plan and not any(st.ok for st in plan)
    with pytest.raises(HostPathError) as err:
        prepare_host_paths(prof)
    text = str(err.value)
    for e in profile_paths(prof):
        assert str(e.path) in text
    assert "phases.evals.work_dir" in text and "(profile host-test)" in text and "sudo mkdir -p" in text


def test_an_unwritable_existing_folder_fails_for_an_unprivileged_user(tmp_path, monkeypatch):
    prof = _host_profile(tmp_path, tmp_path / "mnt")
    prepare_host_paths(prof)
    work = tmp_path / "mnt" / "work" / "evals"
    real = os.access
    # an unprivileged user on a root-owned /mnt (the tests run as root, for whom every folder is writable)
    monkeypatch.setattr(host_paths.os, "access", lambda p, mode: False if Path(p) == work else real(p, mode))
    with pytest.raises(HostPathError, match=rf"{work} exists but .* cannot write it; phases.evals.work_dir"):
        prepare_host_paths(prof)
    bad = [st for st in plan_host_paths(prof) if not st.ok]
    assert [st.entry.path for st in bad] == [work]


def test_empty_benchmarks_without_a_shipped_copy_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("SURROGATE_SHARED_DIR", str(tmp_path / "no-shared"))
    prof = _host_profile(tmp_path, tmp_path / "mnt")
    with pytest.raises(HostPathError, match=r"missing benchmark file.*phases.curation.benchmarks_dir"):
        prepare_host_paths(prof)
    assert any(not st.ok and "no shipped copy" in st.detail for st in plan_host_paths(prof))


def test_local_profile_reads_the_shipped_copies_in_place():
    prof = load_profile("local")
    bench = [e for e in profile_paths(prof) if e.role == "benchmarks"]
    assert bench and bench[0].path == host_paths.shipped_benchmarks()
    st = [s for s in plan_host_paths(prof) if s.entry.role == "benchmarks"]
    assert st[0].ok and "verified" in st[0].detail


def test_make_run_prepares_the_folders_before_anything_else(monkeypatch, capsys):
    from surrogate_dagster import cli

    seen = []

    def refuse(profile):
        seen.append(profile.name)
        raise HostPathError("cannot create /mnt/work: Permission denied; phases.curation.work_dir = '/mnt/work'")

    monkeypatch.delenv("SURROGATE_PROFILE", raising=False)
    monkeypatch.setattr(host_paths, "prepare_host_paths", refuse)
    monkeypatch.setattr(cli, "ensure_instance_home", lambda *a, **k: None)
    assert cli.run_all() == 2  # before the instance is opened or any run starts
    assert seen == ["local"] and "phases.curation.work_dir" in capsys.readouterr().err
