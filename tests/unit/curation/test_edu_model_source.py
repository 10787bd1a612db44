"""The Stack-Edu scorer's models come through the Hub client on an online profile, from the
profile's hub settings; the local profile fetches nothing (rubric scorer, spaCy NER)."""

from __future__ import annotations

import pytest

from surrogate_dagster.catalog.loader import load_profile
from surrogate_dagster.curation.quality.edu_classifier import (STACK_EDU_MODELS, EduFilter, RubricScorer,
                                                               StackEduClassifier)
from surrogate_dagster.curation.resource import CurationSettings, curation_resources
from surrogate_dagster.hub import model_cache
from surrogate_dagster.hub.model_cache import ModelSource

PY = "```python\n" + "def double(x):\n    # twice x\n    return x * 2\n" * 3 + "```"


@pytest.fixture(autouse=True)
def _no_hf_home(monkeypatch):
    for var in ("HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)


def _source(profile: str) -> ModelSource:
    return curation_resources(load_profile(profile))["curation"].model_source()


def test_profiles_give_their_hub_settings_to_model_downloads():
    assert _source("local").offline
    prod = _source("production")
    assert not prod.offline and prod.token_env == "HF_TOKEN" and prod.endpoint is None
    assert prod.cache_dir is not None and prod.cache_dir.endswith("hf-models")
    rehearsal = _source("rehearsal")
    assert (rehearsal.endpoint, rehearsal.token_env) == ("http://127.0.0.1:9302", "REHEARSAL_HF_TOKEN")


def test_settings_built_without_a_profile_fetch_nothing():
    assert CurationSettings(ner_model=None, edu_scorer="rubric").model_source().offline


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    """A Stack-Edu classifier stand-in (one regression output, always 3.5)."""
    from surrogate_dagster.operations.rehearsal_models import (EDU_SCORE, build_edu_classifier,
                                                               encoder_tokenizer)

    out = tmp_path_factory.mktemp("stack-edu-python")
    build_edu_classifier(encoder_tokenizer(["def f(x):\n    return x * 2\n"] * 50, vocab_size=300), out)
    return out, EDU_SCORE


def test_online_source_fetches_each_model_once_and_loads_the_folder(monkeypatch, stand_in):
    folder, score = stand_in
    fetched = []
    monkeypatch.setattr(model_cache, "fetch_model",
                        lambda repo, rev, src: fetched.append((repo, rev, src)) or folder)
    source = ModelSource(endpoint="http://127.0.0.1:9", token_env="X_TOKEN")
    clf = StackEduClassifier(source=source, revision=None, max_length=64)
    items = [("def f(x):\n    return x\n", "python", ""), ("int main() { return 0; }", "cpp", ""),
             ("print(1)", "python", ""), ("a: 1", "yaml", "")]
    assert clf.score_many(items) == [pytest.approx(score)] * 3 + [None]
    assert fetched == [(STACK_EDU_MODELS["python"], None, source), (STACK_EDU_MODELS["cpp"], None, source)]


def test_offline_source_reads_local_folders_only(monkeypatch, stand_in):
    folder, score = stand_in
    monkeypatch.setattr(model_cache, "fetch_model", lambda *a: pytest.fail("fetched on an offline profile"))
    clf = StackEduClassifier(models={"python": str(folder)}, source=ModelSource(offline=True), local_files_only=True)
    assert clf.score_many([("x = 1", "python", "")]) == [pytest.approx(score)]


def test_stand_in_score_keeps_rows_at_production_threshold(monkeypatch, stand_in):
    folder, _ = stand_in
    clf = StackEduClassifier(models={"python": str(folder)}, local_files_only=True)
    row = {"kind": "sft", "messages": [{"role": "user", "content": "double it"}, {"role": "assistant", "content": PY}]}
    assert EduFilter(clf, threshold=3.0).decide(row) is None
    assert EduFilter(clf, threshold=4.0).decide(row) == "quality_edu_score"  # the score does reach the filter


def test_filter_blocks_give_the_scorer_the_profiles_source():
    from surrogate_dagster.curation.assets import _filter_blocks

    source = ModelSource(endpoint="http://127.0.0.1:9")
    edu = _filter_blocks("stack-edu", 3.0, source)[2]
    assert isinstance(edu.scorer, StackEduClassifier) and edu.scorer.source == source
    assert isinstance(_filter_blocks("rubric", 2.0, ModelSource(offline=True))[2].scorer, RubricScorer)
