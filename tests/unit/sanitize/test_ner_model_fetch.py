"""The hf: NER backend's model comes through the Hub client: where it is fetched from, how the
Hub's errors read (fake huggingface_hub exceptions, no server), and StarPII's label mapping."""

from __future__ import annotations

import httpx2
import pytest
from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)

from surrogate_dagster.hub import model_cache
from surrogate_dagster.hub.model_cache import ModelFetchError, ModelSource, fetch_model, model_folder
from surrogate_dagster.sanitize import ner
from surrogate_dagster.sanitize.ner import PERSON, canonical_label, load_ner

TOKEN = "hf_SECRETsecretSECRET0123456789"
REPO = "bigcode/starpii"
SOURCE = ModelSource(endpoint="http://127.0.0.1:9", token_env="TEST_NER_HF_TOKEN", cache_dir="/nonexistent-cache")


def _response(status: int, message: str = "", code: str | None = None, path: str = f"/api/models/{REPO}"):
    headers = {"X-Error-Message": message, **({"X-Error-Code": code} if code else {})}
    return httpx2.Response(status, headers=headers, request=httpx2.Request("GET", f"http://127.0.0.1:9{path}"))


def _raising(error: BaseException):
    calls = []

    def fake_snapshot_download(repo_id, **kw):
        calls.append((repo_id, kw))
        raise error

    return fake_snapshot_download, calls


@pytest.fixture
def token(monkeypatch):
    monkeypatch.setenv("TEST_NER_HF_TOKEN", TOKEN)
    return TOKEN


@pytest.fixture
def no_token(monkeypatch):
    monkeypatch.delenv("TEST_NER_HF_TOKEN", raising=False)


def _fetch_error(monkeypatch, error: BaseException, revision: str | None = None) -> str:
    fake, _ = _raising(error)
    monkeypatch.setattr("huggingface_hub.snapshot_download", fake)
    with pytest.raises(ModelFetchError) as info:
        fetch_model(REPO, revision, SOURCE)
    text = str(info.value)
    assert TOKEN not in text and TOKEN not in repr(info.value.__cause__)
    return text


def test_gated_repo_without_accepted_terms_names_the_repo_and_where_to_accept(monkeypatch, token):
    err = GatedRepoError(f"403 Client Error. Cannot access gated repo (token {TOKEN})",
                         response=_response(403, "Access restricted", "GatedRepo", f"/{REPO}/resolve/main/config.json"))
    text = _fetch_error(monkeypatch, err)
    assert REPO in text and "https://huggingface.co/bigcode/starpii" in text
    assert "accepted its terms" in text and "$TEST_NER_HF_TOKEN" in text


def test_gated_repo_without_a_token_says_to_set_the_variable(monkeypatch, no_token):
    err = GatedRepoError("401 Client Error.", response=_response(401, "log in", "GatedRepo"))
    text = _fetch_error(monkeypatch, err)
    assert "$TEST_NER_HF_TOKEN is not set" in text and "https://huggingface.co/bigcode/starpii" in text


def test_rejected_token_names_the_variable_never_the_value(monkeypatch, token):
    err = HfHubHTTPError(f"401 Client Error: Invalid credentials for Bearer {TOKEN}",
                         response=_response(401, "Invalid credentials in Authorization header"))
    text = _fetch_error(monkeypatch, err)
    assert "$TEST_NER_HF_TOKEN was rejected" in text


def test_missing_token_where_the_hub_wants_one(monkeypatch, no_token):
    err = HfHubHTTPError("401 Client Error", response=_response(401, "Unauthorized"))
    assert "set $TEST_NER_HF_TOKEN" in _fetch_error(monkeypatch, err)


def test_unknown_revision_names_repo_and_revision(monkeypatch, token):
    err = RevisionNotFoundError("404 Client Error. Revision Not Found",
                                response=_response(404, "Invalid rev id: deadbeef", "RevisionNotFound"))
    text = _fetch_error(monkeypatch, err, revision="deadbeef")
    assert REPO in text and "'deadbeef'" in text and "http://127.0.0.1:9" in text


def test_unknown_repo(monkeypatch, token):
    err = RepositoryNotFoundError("404 Client Error. Repository Not Found",
                                  response=_response(404, "Repository not found", "RepoNotFound"))
    text = _fetch_error(monkeypatch, err)
    assert "was not found on http://127.0.0.1:9" in text and "$TEST_NER_HF_TOKEN" in text


def test_unreachable_endpoint_names_the_endpoint(monkeypatch, token):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        raise httpx2.ConnectError("[Errno 111] Connection refused")
    except httpx2.ConnectError as cause:
        try:
            raise LocalEntryNotFoundError("An error happened while trying to locate the files on the Hub") from cause
        except LocalEntryNotFoundError as e:
            err = e
    text = _fetch_error(monkeypatch, err)
    assert "cannot reach the Hub at http://127.0.0.1:9" in text


def test_server_errors_read_as_the_hub_being_down(monkeypatch, token):
    err = HfHubHTTPError("500 Server Error", response=_response(500, "boom"))
    assert "HTTP 500" in _fetch_error(monkeypatch, err)


def test_errors_that_are_not_the_hubs_pass_through(monkeypatch, token):
    fake, _ = _raising(ValueError("not a Hub error"))
    monkeypatch.setattr("huggingface_hub.snapshot_download", fake)
    with pytest.raises(ValueError, match="not a Hub error"):
        fetch_model(REPO, None, SOURCE)


def test_fetch_passes_endpoint_token_revision_and_cache(monkeypatch, token, tmp_path):
    calls = []

    def fake(repo_id, **kw):
        calls.append((repo_id, kw))
        return str(tmp_path)

    monkeypatch.setattr("huggingface_hub.snapshot_download", fake)
    assert fetch_model(REPO, "abc123", SOURCE) == tmp_path
    (repo_id, kw), = calls
    assert repo_id == REPO and kw["revision"] == "abc123" and kw["endpoint"] == "http://127.0.0.1:9"
    assert kw["token"] == TOKEN and kw["cache_dir"] == "/nonexistent-cache" and kw["repo_type"] == "model"
    assert "*.safetensors" in kw["allow_patterns"] and "*.json" in kw["allow_patterns"]


def test_without_a_token_no_stored_login_is_sent(monkeypatch, no_token, tmp_path):
    calls = []
    monkeypatch.setattr("huggingface_hub.snapshot_download", lambda r, **kw: calls.append(kw) or str(tmp_path))
    fetch_model(REPO, None, SOURCE)
    assert calls[0]["token"] is False  # False: anonymous, not the token saved by `hf auth login`


def test_offline_source_fetches_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr("huggingface_hub.snapshot_download", lambda *a, **k: pytest.fail("fetched offline"))
    offline = ModelSource(offline=True)
    assert model_folder(REPO, offline) == REPO and model_folder(REPO, None) == REPO
    assert model_folder(str(tmp_path), SOURCE) == str(tmp_path)  # a local directory is loaded as it is
    with pytest.raises(ValueError, match="offline"):
        fetch_model(REPO, None, offline)


def test_online_source_fetches_then_loads_the_folder(monkeypatch):
    seen = []
    monkeypatch.setattr(model_cache, "fetch_model", lambda repo, rev, src: seen.append((repo, rev, src)) or "/fetched")
    assert model_folder(REPO, SOURCE, "sha1") == "/fetched" and seen == [(REPO, "sha1", SOURCE)]


def test_load_ner_hands_source_and_revision_to_the_backend(monkeypatch):
    got = {}

    class FakeBackend:
        def __init__(self, model, device=-1, source=None, revision=None):
            got.update(model=model, source=source, revision=revision)

    monkeypatch.setattr(ner, "TransformersNER", FakeBackend)
    load_ner("hf:bigcode/starpii", SOURCE, "abc")
    assert got == {"model": "bigcode/starpii", "source": SOURCE, "revision": "abc"}


def test_model_source_from_profile_hub_settings(monkeypatch, tmp_path):
    for var in ("HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    assert ModelSource.from_hub({"mode": "offline"}, tmp_path).offline
    src = ModelSource.from_hub({"mode": "online", "endpoint": "http://127.0.0.1:9302", "token_env": "REHEARSAL_HF_TOKEN"},
                               tmp_path)
    assert (src.endpoint, src.token_env, src.cache_dir) == ("http://127.0.0.1:9302", "REHEARSAL_HF_TOKEN",
                                                             str(tmp_path / "hf-models"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert ModelSource.from_hub({"mode": "online"}, tmp_path).cache_dir is None  # HF_HOME decides
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example")
    assert ModelSource().resolved_endpoint() == "http://mirror.example"
    monkeypatch.delenv("HF_ENDPOINT")
    assert ModelSource().resolved_endpoint() == "https://huggingface.co"
    hash(src)  # the curation memos key on it


# StarPII's id2label (bigcode/starpii config.json), as the rehearsal stand-in carries it.
STARPII_LABELS = ["O"] + [f"{p}-{c}" for c in ("AMBIGUOUS", "EMAIL", "IP_ADDRESS", "KEY", "NAME", "PASSWORD",
                                                "USERNAME") for p in "BI"]


def test_starpii_labels_map_names_to_person_and_drop_the_rest():
    mapped = {label: canonical_label(label) for label in STARPII_LABELS}
    assert {k for k, v in mapped.items() if v} == {"B-NAME", "I-NAME", "B-USERNAME", "I-USERNAME"}
    assert set(mapped.values()) == {PERSON, None}
    # the pipeline's "simple" aggregation reports groups without the B-/I- prefix
    assert canonical_label("NAME") == PERSON and canonical_label("name") == PERSON
    assert canonical_label("KEY") is None and canonical_label("EMAIL") is None


def test_rehearsal_stand_in_carries_starpii_labels():
    from surrogate_dagster.operations.rehearsal_models import STARPII_ID2LABEL

    assert [STARPII_ID2LABEL[i] for i in range(len(STARPII_ID2LABEL))] == STARPII_LABELS


def test_tag_keeps_only_mapped_groups():
    backend = ner.TransformersNER.__new__(ner.TransformersNER)
    backend._pipe = lambda texts: [[{"entity_group": "NAME", "start": 0, "end": 3},
                                    {"entity_group": "KEY", "start": 4, "end": 9},
                                    {"entity_group": "AMBIGUOUS", "start": 10, "end": 12}]]
    assert backend.tag(["Ada sk-12 xx"]) == [[(0, 3, PERSON)]]


def test_a_model_with_no_person_or_place_label_is_refused(tmp_path):
    import torch
    from transformers import BertConfig, BertForTokenClassification

    from surrogate_dagster.operations.rehearsal_models import encoder_tokenizer

    tok = encoder_tokenizer(["some text to learn from"] * 20, vocab_size=300)
    labels = {0: "O", 1: "B-EMAIL", 2: "I-EMAIL"}
    cfg = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, id2label=labels,
                     label2id={v: k for k, v in labels.items()})
    torch.manual_seed(0)
    BertForTokenClassification(cfg).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="none of its labels"):
        load_ner(f"hf:{tmp_path}")
