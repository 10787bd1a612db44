"""Why did it regress: the lineage diff (a planted upstream change found first, end to end:
tests/integration/test_ops_lineage_materialize.py)."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.operations.lineage import diff_lineages, parse_count_table, render_markdown


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
