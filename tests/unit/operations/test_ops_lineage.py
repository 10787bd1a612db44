"""Why did it regress: the lineage diff (pure) and a planted upstream change found first (end to end)."""

from __future__ import annotations

import json
import sys
import types

import pytest
from dagster import DagsterInstance, Definitions, materialize

from surrogate_dagster.operations.lineage import diff_lineages, parse_count_table, render_markdown
from surrogate_dagster.operations.lineage_report import (
    CheckpointNotFound,
    build_report,
    main,
    regression_lineage_report,
    report_link_metadata,
    resolve_checkpoint,
)
from surrogate_dagster.sources.assets import helper_rows, normalized_rows, source_rows
from tests.support.ops_support import TOOL_SOURCES, hub_copy, make_resources, move_pin, plant_change, toy_downstream


def _node(asset, part, sid, dv, meta=None, parents=(), group="curation", cv="c1"):
    return {"asset": asset, "partition": part, "group": group, "storage_id": sid, "run_id": f"r{sid}",
            "data_version": dv, "code_version": cv, "metadata": meta or {}, "parents": list(parents), "missing": False}


def _lineage(root, nodes):
    return {"root": root, "nodes": {(n["asset"] + (f"[{n['partition']}]" if n["partition"] else "")): n for n in nodes}}


def _pair(comp_a, comp_b, changed_src, dv_b="x2", rows=(10, 10)):
    """Two lineages: src[s] -> mix -> ckpt, with one or more sources changed in B."""
    def build(comp, which):
        nodes = []
        for s in comp:
            dv = ("x1" if which == "a" or s not in changed_src else dv_b) + s
            rev = "r1" if which == "a" or s not in changed_src else "r2"
            nodes.append(_node("src", s, 1 if which == "a" else (20 if s in changed_src else 1), dv,
                               {"revision": rev, "rows": comp[s]}, group="sources"))
        same = which == "a" or not changed_src
        nodes.append(_node("mix", None, 5 if same else 25, "m-" + json.dumps(comp, sort_keys=True),
                           {"composition": comp, "rows": sum(comp.values())}, parents=[f"src[{s}]" for s in comp]))
        nodes.append(_node("ckpt", None, 6 if same else 26, f"c-{6 if same else 26}",
                           {"training_config": {"lr": 1e-5}}, parents=["mix"], group="training"))
        return _lineage("ckpt", nodes)
    return build(comp_a, "a"), build(comp_b, "b")


def test_biggest_composition_shift_ranks_first():
    a, b = _pair({"s1": 100, "s2": 100, "s3": 100}, {"s1": 95, "s2": 20, "s3": 100}, {"s1", "s2"})
    rep = diff_lineages(a, b)
    assert [c["partition"] for c in rep["causes"][:2]] == ["s2", "s1"]
    top = rep["causes"][0]
    assert top["kind"] == "hf_revision" and "mix" in top["effects"] and "ckpt" in top["effects"]
    assert top["composition"][0]["share_a"] == pytest.approx(1 / 3, abs=1e-3)
    # the mixture and checkpoint changed because of the sources: effects, not causes of their own
    assert {c["nodes"][0] for c in rep["causes"]} == {"src[s1]", "src[s2]"}


def test_identical_lineages_have_no_causes():
    a, _ = _pair({"s1": 1}, {"s1": 1}, set())
    rep = diff_lineages(a, a)
    assert rep["causes"] == [] and set(rep["status_counts"]) == {"same_materialization"}
    assert "no upstream difference" in render_markdown(rep)


def test_training_config_and_reference_model_are_own_causes():
    a, b = _pair({"s1": 10}, {"s1": 10}, set())
    b["nodes"]["ckpt"].update(storage_id=99, data_version="c-99",
                              metadata={"training_config": {"lr": 2e-5}, "reference_model": "other/model"})
    rep = diff_lineages(a, b)
    assert len(rep["causes"]) == 1 and rep["causes"][0]["kind"] in ("model", "training_config")
    assert rep["causes"][0]["score"] >= 0.5
    fields = {ch["field"] for ch in rep["causes"][0]["changes"]}
    assert fields == {"reference_model", "training_config"}


def test_code_version_change_on_many_partitions_is_one_cause():
    comp = {f"s{i}": 10 for i in range(5)}
    a, b = _pair(comp, comp, set(comp), dv_b="same")  # every source re-run with new code, same rows
    for n in b["nodes"].values():
        if n["asset"] == "src":
            n["code_version"] = "c2"
            n["metadata"]["revision"] = "r1"
    rep = diff_lineages(a, b)
    code = [c for c in rep["causes"] if c["kind"] == "code_version"]
    assert len(code) == 1 and len(code[0]["nodes"]) == 5 and code[0]["partition"] is None


def test_added_source_and_drop_count_tables():
    a, b = _pair({"s1": 10}, {"s1": 10, "s2": 10}, {"s2"})
    rep = diff_lineages(a, b)
    assert rep["causes"][0]["kind"] == "added" and rep["causes"][0]["partition"] == "s2"
    assert parse_count_table("| reason | rows |\n|---|---:|\n| ast_error_python | 3 |\n| x | 1 |") == \
        {"ast_error_python": 3.0, "x": 1.0}


# ------------------------------------------------------------------ end to end on the real sources group

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


def test_planted_code_change_names_the_module_and_ranks_first():
    from surrogate_dagster.catalog.code_version import function_code_version

    comp_a = {f"s{i}": 10 for i in range(5)}
    a, b = _pair(comp_a, {**comp_a, "s0": 12}, {"s0"})  # s0's revision moved, its share barely
    old = function_code_version("surrogate_dagster.curation.assets", "_mixture_asset", config="c" * 16)
    mod = old.split(";")[1].split("=")[0]  # the first module the mixture's version names
    a["nodes"]["mix"]["code_version"] = old
    b["nodes"]["mix"]["code_version"] = old.replace(f"{mod}=", f"{mod}=f")  # that module's source changed
    rep = diff_lineages(a, b)
    top = rep["causes"][0]
    assert top["kind"] == "code_version" and top["nodes"] == ["mix"]
    assert top["changes"][0]["modules"] == [mod]
    assert top["title"].startswith(f"mix: code version changed in {mod} at mix")
    assert any(c["kind"] == "hf_revision" and c["partition"] == "s0" for c in rep["causes"][1:])
