"""What curation puts in front of a person: the per-source funnel from the steps' pointers, the drop
reasons and edu scores as plots, the figures as numbers (curation/assets.py)."""

import json
from collections import Counter

from surrogate_dagster.curation.assets import _filter_plots, _funnel_metadata
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.layout import normalized_pointer, step_pointer


def test_funnel_reads_every_step_of_one_source(tmp_path):
    store = LocalObjectStore(tmp_path)
    store.put_bytes(normalized_pointer("src"), json.dumps({"rows_in": 120, "rows_out": 100}).encode())
    store.put_bytes(step_pointer("sanitized", "src"), json.dumps({"rows": 100, "version": "v"}).encode())
    meta = _funnel_metadata(store, "src", filtered=70, curated=61)
    assert {k: v.value for k, v in meta.items() if k.startswith("rows_")} == {
        "rows_mirrored": 120, "rows_normalized": 100, "rows_sanitized": 100, "rows_filtered": 70, "rows_curated": 61}
    assert meta["funnel_plot"].value.startswith("**Rows per curation step: src**")


def test_funnel_without_upstream_pointers_shows_what_exists(tmp_path):
    meta = _funnel_metadata(LocalObjectStore(tmp_path), "src", filtered=5, curated=5)
    assert sorted(k for k in meta if k.startswith("rows_")) == ["rows_curated", "rows_filtered"]


def test_filter_plots():
    meta = _filter_plots("src", Counter({"ast_invalid": 3, "edu_low": 1}),
                         {"rows_checked": 9, "score_histogram": {"1": 2, "3": 7}}, 2)
    assert meta["edu_rows_checked"].value == 9
    assert meta["dropped_by_reason_plot"].value.startswith("**Rows dropped by the quality filters, by reason: src**")
    assert meta["edu_score_plot"].value.startswith("**Edu scores (rounded), rows per score: src**")
    assert "dropped_by_reason_plot" not in _filter_plots("src", Counter(), {"rows_checked": 0}, 2)


def test_a_plot_of_nothing_is_left_out():
    from surrogate_dagster.curation.assets import _plots
    from surrogate_dagster.metadata import bar_plot

    meta = _plots({"a_plot": bar_plot({"x": 2}, "A"), "empty_plot": bar_plot({}, "B")})
    assert list(meta) == ["a_plot"] and meta["a_plot"].value.startswith("**A**")
