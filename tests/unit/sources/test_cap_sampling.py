"""Sampling under a cap spread over problems: round-robin over groups, seeded, order-free, stable
when rows are appended; the mirror reports problems and rows per problem (the source rows
asset's metadata: tests/integration/test_cap_sampling_materialize.py)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path


from surrogate_dagster.catalog.models import RowFilter, SourceSpec
from surrogate_dagster.hub import OfflineHub
from surrogate_dagster.sources.mirror import mirror_source
from surrogate_dagster.sources.sampling import candidate, group_of, spread_sample
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.parquet_io import parquet_bytes_to_rows

REV = "b" * 40


def _rows(sizes: dict[str, int]) -> list[dict]:
    """Rows grouped by problem, the way upstream files are: all of a problem's rows together."""
    return [{"question_id": q, "answer": f"{q}-{i}", "ok": i % 5 != 4} for q, n in sizes.items() for i in range(n)]


def _cands(rows, seed=0):
    return [candidate(i, r, ["question_id"], seed) for i, r in enumerate(rows)]


def _chosen_content(rows, cap, seed=0):
    return sorted(rows[c.ordinal]["answer"] for c in spread_sample(_cands(rows, seed), cap, seed))


def test_round_robin_reaches_every_problem_before_a_second_row():
    rows = _rows({"p0": 40, **{f"p{i}": 3 for i in range(1, 10)}})
    chosen = spread_sample(_cands(rows), 15, seed=0)
    per = Counter(rows[c.ordinal]["question_id"] for c in chosen)
    assert len(chosen) == 15 and len(per) == 10  # every problem once, then 5 get a second row
    assert sorted(per.values()) == [1] * 5 + [2] * 5
    # the old rule (first rows of the file) would have taken 15 rows of one problem
    assert Counter(r["question_id"] for r in rows[:15]) == {"p0": 15}
    assert [c.ordinal for c in chosen] == sorted(c.ordinal for c in chosen)  # kept in stream order


def test_choice_is_seeded_and_ignores_row_order():
    rows = _rows({f"p{i}": 1 + i % 4 for i in range(30)})
    a = _chosen_content(rows, 20, seed=0)
    assert a == _chosen_content(rows, 20, seed=0)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert _chosen_content(shuffled, 20, seed=0) == a
    assert _chosen_content(rows, 20, seed=1) != a


def test_appending_rows_moves_few_choices():
    rows = _rows({f"p{i}": 2 + i % 3 for i in range(50)})
    before = set(_chosen_content(rows, 60))
    appended = rows + _rows({"p3": 2, "p_new": 3})
    after = set(_chosen_content(appended, 60))
    assert len(before - after) <= 2 * 5  # at most two chosen rows move per appended row
    assert len(before & after) >= 50


def test_no_group_value_means_each_row_is_its_own_problem():
    rows = [{"answer": str(i)} for i in range(5)]
    cands = [candidate(i, r, ["question_id"], 0) for i, r in enumerate(rows)]
    assert len({c.group for c in cands}) == 5
    assert group_of({"question_id": "", "seed_question": "s"}, ["question_id", "seed_question"]) == "seed_question=s"
    assert len(spread_sample(cands, None, 0)) == 5


# ------------------------------------------------------------------ in the mirror

def _hub(tmp_path: Path, rows: list[dict]) -> OfflineHub:
    repo = tmp_path / "hub" / "datasets" / "org" / "ds"
    (repo / "default").mkdir(parents=True)
    (repo / "default" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (repo / "revision.txt").write_text(REV + "\n")
    return OfflineHub(tmp_path / "hub", tmp_path / "pushes", "org")


def _mirrored(store, rep):
    return [r for p in rep.parts for r in parquet_bytes_to_rows(store.get_bytes(p))]


def test_mirror_spreads_the_cap_over_problems(tmp_path):
    rows = _rows({"p0": 40, **{f"p{i}": 3 for i in range(1, 10)}})
    hub = _hub(tmp_path, rows)
    spec = SourceSpec(name="s", family="code_sft", hf_id="org/ds", cap=12, adapter="x", revision=REV,
                      group_by=["question_id"], filters=[RowFilter(column="ok", op="truthy")])
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    rep = mirror_source(spec, hub, store, log=lambda m: None)
    got = _mirrored(store, rep)
    assert rep.rows == 12 and rep.groups == 10 and rep.rows_per_group_max == 2
    assert rep.candidates == sum(r["ok"] for r in rows) and rep.groups_available == 10
    assert rep.filtered == {"filter_ok": sum(not r["ok"] for r in rows)}  # counted once, not per pass
    assert all(r["ok"] for r in got)
    assert [r["_index"] for r in got] == sorted(r["_index"] for r in got)
    assert all(rows[r["_index"]]["answer"] == r["answer"] for r in got)  # _index is the stream position

    # Without group_by: the first rows of the file, as before.
    plain = mirror_source(spec.model_copy(update={"group_by": None, "name": "t"}), hub, store, log=lambda m: None)
    assert plain.groups == plain.rows == 12 and plain.rows_per_group_max == 1
    assert {r["question_id"] for r in _mirrored(store, plain)} == {"p0"}

    # A pool bounds the first pass: only the first `sample_pool` candidates are considered.
    pooled = mirror_source(spec.model_copy(update={"sample_pool": 33, "name": "u"}), hub, store, log=lambda m: None)
    assert pooled.candidates == 33 and pooled.groups_available == 2
