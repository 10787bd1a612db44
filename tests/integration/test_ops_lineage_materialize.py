"""Lineage over materialized runs: a planted change named first (also ahead of a moved checkout path
and of the reference model it retrained), the report asset (the report rendered as metadata) and
CLI, checkpoint specs (the ranking rules: tests/unit/operations/test_ops_lineage.py)."""

from __future__ import annotations

import json
import sys
import types

import pytest
from dagster import DagsterInstance, Definitions, materialize

from surrogate_dagster.operations.lineage import diff_lineages, render_markdown, short_pair
from surrogate_dagster.operations.lineage_report import (
    CheckpointNotFound,
    build_report,
    collect_lineage,
    main,
    regression_lineage_report,
    report_link_metadata,
    resolve_checkpoint,
)
from surrogate_dagster.sources.assets import helper_rows, normalized_rows, source_rows
from tests.support.ops_support import TOOL_SOURCES, hub_copy, make_resources, move_pin, plant_change, toy_downstream


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lineage")
    hub = hub_copy(tmp)
    resources = make_resources(tmp, hub)
    toy_mixture, toy_checkpoint = toy_downstream()
    assets = [source_rows, helper_rows, normalized_rows, toy_mixture, toy_checkpoint, regression_lineage_report]
    instance = DagsterInstance.ephemeral()

    def run_all(sources):
        for s in sources:
            for a in (source_rows, normalized_rows):
                assert materialize(assets, selection=[a.key], partition_key=s, resources=resources,
                                   instance=instance).success
        for a in (toy_mixture, toy_checkpoint):
            assert materialize(assets, selection=[a.key], resources=resources, instance=instance).success

    run_all(TOOL_SOURCES)
    new_rev = plant_change(hub, "xlam_function_calling")
    undo = move_pin("xlam_function_calling", new_rev)  # the reviewed pin move
    try:
        run_all(["xlam_function_calling"])  # the re-curation re-runs only the changed source
        yield tmp, instance, assets, resources, new_rev
    finally:
        undo()


def test_planted_change_is_named_first(planted):
    _, instance, assets, resources, new_rev = planted
    graph = Definitions(assets=assets, resources=resources).resolve_asset_graph()
    rep = build_report(instance, graph, "toy_checkpoint@previous", "toy_checkpoint@latest")
    top = rep["causes"][0]
    assert top["partition"] == "xlam_function_calling" and top["kind"] == "hf_revision"
    assert top["changes"][0]["b"] == new_rev
    assert top["title"].startswith("xlam_function_calling: HF revision")
    assert "toy_mixture" in top["effects"] and "toy_checkpoint" in top["effects"]
    # row counts of the source's own chain are reported, other sources used the same materializations
    assert any(r["field"] == "rows" and r["node"] == "source_rows[xlam_function_calling]" for r in top["row_changes"])
    statuses = {n["id"]: n["status"] for n in rep["nodes"]}
    assert statuses["source_rows[hermes_function_calling]"] == "same_materialization"
    assert statuses["normalized_rows[xlam_function_calling]"] == "changed"
    assert statuses["normalized_rows[rstar_coder]"] == "missing"  # never materialized in this test
    md = render_markdown(rep)
    first = next(line for line in md.splitlines() if line.startswith("1. "))
    assert "xlam_function_calling" in first


def test_a_moved_pin_outranks_a_moved_path_and_what_it_retrained(planted):
    """B's checkpoint also records its base and work folder under another checkout (the same
    objects) and a reference model retrained on the moved data: the pin is still the top cause,
    the moved paths are no change, the reference model ranks after the pin and says it follows."""
    _, instance, assets, resources, new_rev = planted
    graph = Definitions(assets=assets, resources=resources).resolve_asset_graph()
    a = collect_lineage(instance, graph, resolve_checkpoint(instance, "toy_checkpoint@previous"))
    b = collect_lineage(instance, graph, resolve_checkpoint(instance, "toy_checkpoint@latest"))
    for lin, root, run in ((a, "/work/main", "run-a"), (b, "/tmp/f1clone", "run-b")):
        lin["nodes"]["toy_checkpoint"]["metadata"].update(
            base_checkpoint=f"{root}/var/object_store/training/stage1/0a1b2c3d4e/model",
            training_config={"lr": 1e-5, "epochs": 2, "output_dir": f"{root}/var/work/toy_checkpoint"},
            reference_model=f"{root}/var/object_store/training/stage1_6/{run}")
    rep = diff_lineages(a, b)
    top = rep["causes"][0]
    assert top["partition"] == "xlam_function_calling" and top["kind"] == "hf_revision"
    fields = {ch["field"] for c in rep["causes"] for ch in c["changes"]}
    assert "base_checkpoint" not in fields and "training_config" not in fields
    ref = next(c for c in rep["causes"] if c["kind"] == "model")
    assert ref["rank"] > top["rank"] and top["rank"] in ref["follows"]
    assert "stage1_6/run-a -> " in ref["title"] and ref["title"].endswith("stage1_6/run-b at toy_checkpoint")
    assert len({c["title"] for c in rep["causes"]}) == len(rep["causes"])
    # dicts are cut to the keys that differ, so two configs never read alike
    cfg_a = {"lr": 1e-5, "epochs": 2, "warmup_steps": 10, "datasets": {"code": 100, "tool": 50}}
    assert short_pair(cfg_a, {**cfg_a, "datasets": {"code": 100, "tool": 60}}) == \
        ("{datasets: {tool: 50}}", "{datasets: {tool: 60}}")


def test_report_asset_and_cli(planted, tmp_path, monkeypatch, capsys):
    tmp, instance, assets, resources, _ = planted
    mod = types.ModuleType("toy_location")
    mod.defs = Definitions(assets=assets, resources=resources)
    monkeypatch.setitem(sys.modules, "toy_location", mod)
    cfg = {"ops": {"regression_lineage_report": {"config": {"definitions": "toy_location:defs"}}}}
    res = materialize(assets, selection=[regression_lineage_report.key], resources=resources, instance=instance,
                      run_config=cfg)
    meta = res.asset_materializations_for_node("regression_lineage_report")[0].metadata
    assert meta["top_partition"].value == "xlam_function_calling"
    assert meta["checkpoint_b"].value == "toy_checkpoint@latest"  # default: latest training asset vs previous
    assert meta["compared_with"].value == "the previous materialization of toy_checkpoint"
    # the report renders in the UI: the summary names the top cause, the full report is Markdown
    assert f"**Top cause:** {meta['top_cause'].value}" in meta["summary"].value
    report_md = meta["report"].value
    assert report_md.startswith("# Why did it regress: toy_checkpoint (B) vs toy_checkpoint (A)")
    assert "1. **xlam_function_calling: HF revision" in report_md
    assert "| source_rows[hermes_function_calling] |" not in report_md  # unchanged nodes only counted

    # CLI, over the same instance on disk and a code location holding the toy graph
    home = tmp_path / "home"
    home.mkdir()
    with DagsterInstance.local_temp(str(home)) as disk:
        disk_res = make_resources(tmp_path, tmp / "hub")
        for a in assets[-3:-1]:
            for _ in range(2):
                assert materialize(assets, selection=[a.key], resources=disk_res, instance=disk, raise_on_error=False)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    out = tmp_path / "r.json"
    assert main(["--definitions", "toy_location:defs", "--json", str(out)]) == 0
    assert "# Why did it regress: toy_checkpoint (B) vs toy_checkpoint (A)" in capsys.readouterr().out
    assert json.loads(out.read_text())["checkpoint_a"] == "toy_checkpoint@previous"
    assert main(["--definitions", "toy_location:defs", "--checkpoint-b", "toy_checkpoint@-7"]) == 2


def test_checkpoint_specs(planted):
    _, instance, _, _, _ = planted
    latest = resolve_checkpoint(instance, "toy_checkpoint")
    assert resolve_checkpoint(instance, f"toy_checkpoint@{latest.storage_id}").storage_id == latest.storage_id
    assert resolve_checkpoint(instance, f"toy_checkpoint@{latest.run_id[:8]}").storage_id == latest.storage_id
    assert resolve_checkpoint(instance, "toy_checkpoint@-1").storage_id < latest.storage_id
    with pytest.raises(CheckpointNotFound, match="has 2 in this instance"):
        resolve_checkpoint(instance, "toy_checkpoint@-5")
    meta = report_link_metadata("stage2_checkpoint")
    assert "--checkpoint-a stage2_checkpoint@previous" in meta["why_regressed_cli"].value
