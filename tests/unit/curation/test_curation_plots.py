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
                         {"rows_checked": 9, "score_histogram": {"1.5": 2, "3": 7}}, 2)
    assert meta["edu_rows_checked"].value == 9
    assert meta["dropped_by_reason_plot"].value.startswith("**Rows dropped by the quality filters, by reason: src**")
    assert meta["edu_score_plot"].value.startswith("**Edu scores, rows per half point (left of the line: dropped): src**")
    assert "dropped_by_reason_plot" not in _filter_plots("src", Counter(), {"rows_checked": 0}, 2)


def test_a_plot_of_nothing_is_left_out():
    from surrogate_dagster.curation.assets import _plots
    from surrogate_dagster.metadata import bar_plot

    meta = _plots({"a_plot": bar_plot({"x": 2}, "A"), "empty_plot": bar_plot({}, "B")})
    assert list(meta) == ["a_plot"] and meta["a_plot"].value.startswith("**A**")


def test_edu_bins_fall_on_one_side_of_the_threshold():
    """A row's bar says whether it was kept: its half-point bin starts at or above the threshold
    (kept) or ends at or below it (dropped), for whole and half thresholds."""
    from collections import Counter

    from surrogate_dagster.curation.blocks import BlockCounts
    from surrogate_dagster.curation.quality.edu_classifier import EduFilter, score_bin

    PAD = "# the block is long enough to be scored\n"

    class Fixed:  # scores each row's only block with the number on its first line
        def score_many(self, items):
            return [float(code.split()[0]) for code, _, _ in items]

    rows = [{"id": str(i), "kind": "sft", "messages": [{"role": "user", "content": "q"},
                                        {"role": "assistant", "content": f"```python\n{s}\n{PAD}```"}]}
            for i, s in enumerate([1.4, 1.6, 1.99, 2.0, 2.4, 2.5, 3.7])]
    for threshold in (2, 2.5):
        f = EduFilter(Fixed(), threshold=threshold)
        notes: Counter = Counter()
        reasons = f.decide_batch(rows, notes)
        for r, why in zip(rows, reasons):
            s = float(r["messages"][1]["content"].split("\n")[1])
            lo = score_bin(s)
            assert (why is None) == (lo >= threshold) and (why is not None) == (lo + 0.5 <= threshold), (s, threshold)
        counts = BlockCounts(seen=len(rows), notes=notes)
        assert EduFilter.metadata(counts)["score_histogram"] == {"1": 1, "1.5": 2, "2": 2, "2.5": 1, "3.5": 1}
