"""OpenCodeReasoning-2 helper lookups are keyed by the helper row's own id (APPS' problem_id, else
the position the mirror recorded upstream), never by where a row sits among the mirrored rows;
an OCR-2 row whose id is missing is quarantined with a reason naming the helper."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from surrogate_dagster.catalog.models import SourceSpec
from surrogate_dagster.hub import OfflineHub
from surrogate_dagster.paths import FIXTURES_DIR
from surrogate_dagster.sources.adapters import code_sft
from surrogate_dagster.sources.adapters.base import AdapterContext, Quarantine
from surrogate_dagster.sources.assets import CATALOG
from surrogate_dagster.sources.mirror import mirror_source
from surrogate_dagster.sources.normalize import iter_raw_rows, load_helper_questions
from surrogate_dagster.sources.ocr2_questions import HELPER_DATASETS, SPLIT_KEY, build_question_index
from surrogate_dagster.storage import LocalObjectStore

REV = "c" * 40


def _hub(tmp_path: Path, repo: str, files: dict[str, list]) -> OfflineHub:
    root = tmp_path / "hub" / "datasets" / repo
    for rel, rows in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    (root / "revision.txt").write_text(REV + "\n")
    return OfflineHub(tmp_path / "hub", tmp_path / "pushes", "org")


def _helper(name: str, repo: str, columns: list[str]) -> SourceSpec:
    return SourceSpec(name=name, family="helper", hf_id=repo, splits=["train", "test"], columns=columns, revision=REV)


def test_apps_is_keyed_by_problem_id_not_position():
    rows = {"train": [{"problem_id": 7, "question": "seven"}, {"problem_id": 0, "question": "zero"}],
            "test": [{"problem_id": 3, "question": "three"}, {"question": "no id"}]}
    index = build_question_index({"codeparrot/apps": rows})
    assert index == {("apps", "train", 7): "seven", ("apps", "train", 0): "zero", ("apps", "test", 3): "three"}
    assert ("apps", "train", 1) not in index  # position 1 is not an APPS id
    assert HELPER_DATASETS["apps"].id_field == "problem_id"


def test_unreadable_helper_row_does_not_shift_the_ids_after_it(tmp_path):
    """The mirror records each helper row's position upstream: a quarantined line keeps its slot."""
    taco = [{"question": "q0"}, "{broken json", {"question": "q2"}, {"question": "q3"}]
    hub = _hub(tmp_path, "BAAI/TACO", {"default/train.jsonl": taco, "default/test.jsonl": [{"question": "t0"}]})
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    rep = mirror_source(_helper("taco", "BAAI/TACO", ["question"]), hub, store, log=lambda m: None)
    assert rep.rows == 4 and rep.quarantined == {"unreadable_row": 1}
    _, rows = iter_raw_rows(store, "taco")
    index = build_question_index({"BAAI/TACO": list(rows)})
    # counting the mirrored rows would have put q2 at id 1 and q3 at id 2
    assert index == {("taco", "train", 0): "q0", ("taco", "train", 2): "q2", ("taco", "train", 3): "q3",
                     ("taco", "test", 0): "t0"}


def test_a_flat_stream_must_carry_positions():
    with pytest.raises(ValueError, match="_split_index"):
        build_question_index({"taco": [{SPLIT_KEY: "train", "question": "A"}]})


def _ocr2(dataset, split, index):
    return {"id": "r1", "question_id": "q1", "question": "-", "r1_generation": "```python\nprint(1)\n```",
            "dataset": dataset, "split": split, "index": index, "judgement": "right"}


def test_missing_id_is_quarantined_naming_the_helper_and_id():
    index = {("apps", "test", 3): "three", ("open-r1/codeforces", "train", 1): ""}
    ctx = AdapterContext("opencodereasoning_2", options={"split": "python"},
                         helper_questions=lambda d, s, i: index.get((d, s, i)))
    assert code_sft.adapt_opencodereasoning_2(_ocr2("apps", "test", "3"), ctx)["messages"][0]["content"] == "three"
    cases = [
        (("apps", "test", "77"), "ocr2_id_not_found_apps", "codeparrot/apps split 'test' has no row with id 77"),
        (("open-r1/codeforces", "train", "1"), "ocr2_question_empty_codeforces", "open-r1/codeforces split 'train' id 1"),
        (("mbpp", "train", "1"), "ocr2_unknown_helper", "'mbpp'"),
        (("taco", "train", "x1"), "bad_index", "'x1'"),
    ]
    for args, reason, detail in cases:
        with pytest.raises(Quarantine) as e:
            code_sft.adapt_opencodereasoning_2(_ocr2(*args), ctx)
        assert e.value.reason == reason and detail in e.value.detail, (args, e.value)


def test_helper_mirrors_resolve_the_fixture_rows():
    """The real path: every helper mirrored from the offline hub, indexed as normalize does it."""
    tmp = Path(tempfile.mkdtemp())
    store = LocalObjectStore(tmp / "store", fsync=False)
    hub = OfflineHub(FIXTURES_DIR / "hub", tmp / "pushes", "x")
    for h in CATALOG.helpers:
        mirror_source(h, hub, store, log=lambda m: None)
    lookup = load_helper_questions(store, CATALOG.helpers)
    apps_test = [json.loads(line) for line in (FIXTURES_DIR / "hub/datasets/codeparrot/apps/default/test.jsonl")
                 .read_text().splitlines() if line.strip()]
    assert lookup("apps", "test", apps_test[1]["problem_id"]) == apps_test[1]["question"]
    assert lookup("apps", "test", 77) is None
    assert lookup("taco", "train", 4) == "" and lookup("taco", "train", 999) is None
    assert lookup("open-r1/codeforces", "train", 3).startswith("Given a sequence")
