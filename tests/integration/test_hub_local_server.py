"""The local Hub answers the real huggingface_hub client as the Hub does: downloads (hf_hub_download,
snapshot_download, Range reads), repo info, refs, tree listings and paths-info, repo creation and
commits (regular files, LFS files over the batch API, upload_file/upload_folder), whoami, and the
errors huggingface_hub maps to its exception types (401 bad token, 403 GatedRepo, 404 RepoNotFound /
RevisionNotFound / EntryNotFound). No token ever shows in a response or in the server's log.

huggingface_hub uploads through Xet whenever hf_xet is installed; the server speaks plain LFS, so
the tests switch Xet off (HF_HUB_DISABLE_XET=1 does the same in a rehearsal)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import httpx
import huggingface_hub.constants
import pytest
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, RemoteEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)

from surrogate_dagster.hub import local_server
from surrogate_dagster.hub.local_server import HubServer, HubUser
from surrogate_dagster.paths import REPO_ROOT

ALICE = "hf_alice_localhub_token_0123456789abcdef"   # admin of axentx, accepted the gated terms
BOB = "hf_bob_localhub_token_0123456789abcdef"       # no org, has not accepted
READER = "hf_reader_localhub_token_0123456789abcdef"  # axentx admin with a read-only token
BAD = "hf_not_a_token_of_this_hub_0123456789abcdef"
TOKENS = (ALICE, BOB, READER, BAD)
GATED = "Salesforce/xlam-function-calling-60k"
DATASET = "microsoft/rStar-Coder"
MODEL = "tiny-org/plain-model"
MODEL_SHA = "12" * 20
OLD_SHA = "34" * 20
MIRROR = REPO_ROOT / "fixtures" / "hub"


class _Tee:
    """Every status line, header and body the handler writes, to search for tokens afterwards."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def install(self, monkeypatch) -> None:
        handler = local_server._Handler
        orig_header, orig_send = handler.send_header, handler._send

        def send_header(h, key, value):
            self.chunks.append(f"{key}: {value}".encode())
            return orig_header(h, key, value)

        def _send(h, status, body, headers=None, content_type="application/json"):
            self.chunks.append(body)
            return orig_send(h, status, body, headers, content_type)

        monkeypatch.setattr(handler, "send_header", send_header)
        monkeypatch.setattr(handler, "_send", _send)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("localhub")
    model = tmp / "models" / MODEL
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "plain"}\n')
    (model / "sub" / "notes.txt").write_text("nested\n")
    (model / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (model / "revision.txt").write_text(MODEL_SHA + "\n")
    (model / f"@{OLD_SHA}").mkdir()
    (model / f"@{OLD_SHA}" / "config.json").write_text('{"model_type": "older"}\n')
    users = [HubUser("alice", ALICE, is_pro=True, orgs={"axentx": "admin", "tiny-org": "admin"}, accepted={GATED}),
             HubUser("bob", BOB), HubUser("reader", READER, orgs={"axentx": "admin"}, token_role="read")]
    with HubServer(MIRROR, users, gated={GATED: "manual"}, models_dir=tmp / "models",
                   push_dir=tmp / "push") as server:
        yield server, tmp


@pytest.fixture
def env(hub, monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # conftest sets offline
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    tee = _Tee()
    tee.install(monkeypatch)
    caplog.set_level(logging.INFO, logger=local_server.__name__)
    server, _ = hub
    yield {"server": server, "url": server.url, "cache": tmp_path / "cache", "tee": tee,
           "api": HfApi(endpoint=server.url, token=ALICE)}
    records = caplog.get_records("call")
    seen = b"\n".join(tee.chunks) + "\n".join(r.getMessage() for r in records).encode()
    assert records and tee.chunks, "the server logs and answers each request"
    for token in TOKENS:
        assert token.encode() not in seen


def test_hf_hub_download_of_a_mirror_file_at_its_sha_with_the_hubs_headers(env):
    server, url = env["server"], env["url"]
    sha = server.sha(DATASET)
    path = hf_hub_download(DATASET, "seed_sft/train.jsonl", repo_type="dataset", revision=sha, endpoint=url,
                           cache_dir=env["cache"], token=ALICE)
    disk = (MIRROR / "datasets" / DATASET / "seed_sft" / "train.jsonl").read_bytes()
    assert Path(path).read_bytes() == disk
    assert f"/snapshots/{sha}/" in path
    head = httpx.head(f"{url}/datasets/{DATASET}/resolve/main/seed_sft/train.jsonl")
    assert head.status_code == 200 and head.headers["X-Repo-Commit"] == sha
    assert head.headers["Content-Length"] == str(len(disk)) == head.headers["X-Linked-Size"]
    assert head.headers["X-Linked-Etag"] == f'"{hashlib.sha256(disk).hexdigest()}"'  # jsonl is an LFS file
    card = httpx.head(f"{url}/datasets/{DATASET}/resolve/{sha}/PROVENANCE.md")
    blob = (MIRROR / "datasets" / DATASET / "PROVENANCE.md").read_bytes()
    git_oid = hashlib.sha1(b"blob %d\0" % len(blob) + blob).hexdigest()
    assert card.headers["ETag"] == f'"{git_oid}"' and "X-Linked-Etag" not in card.headers


def test_range_requests_answer_206_with_the_bytes_asked_for(env):
    url = env["url"]
    data = (env["server"].state.store.models_dir / MODEL / "weights.bin").read_bytes()
    part = httpx.get(f"{url}/{MODEL}/resolve/main/weights.bin", headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == data[100:200]
    assert part.headers["Content-Range"] == f"bytes 100-199/{len(data)}"
    tail = httpx.get(f"{url}/{MODEL}/resolve/main/weights.bin", headers={"Range": "bytes=-10"})
    assert tail.status_code == 206 and tail.content == data[-10:]
    assert httpx.get(f"{url}/{MODEL}/resolve/main/weights.bin",
                     headers={"Range": f"bytes={len(data)}-"}).status_code == 416


def test_snapshot_download_of_a_model_and_an_older_revision(env):
    url, cache = env["url"], env["cache"]
    path = Path(snapshot_download(MODEL, endpoint=url, cache_dir=cache))
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    assert files == [".gitattributes", "config.json", "sub/notes.txt", "weights.bin"]
    assert path.name == MODEL_SHA and (path / "sub" / "notes.txt").read_text() == "nested\n"
    old = Path(snapshot_download(MODEL, revision=OLD_SHA, endpoint=url, cache_dir=cache))
    assert (old / "config.json").read_text() == '{"model_type": "older"}\n'
    only = Path(snapshot_download(MODEL, endpoint=url, cache_dir=cache / "2", allow_patterns=["*.json"]))
    assert sorted(p.name for p in only.rglob("*") if p.is_file()) == ["config.json"]


def test_model_and_dataset_info_refs_tree_and_paths_info(env):
    api, server = env["api"], env["server"]
    info = api.model_info(MODEL, files_metadata=True)
    assert info.sha == MODEL_SHA and info.id == MODEL and info.private is False
    sizes = {s.rfilename: (s.size, s.lfs is not None) for s in info.siblings}
    assert sizes["weights.bin"] == (256 * 64, True) and sizes["config.json"][1] is False
    assert api.model_info(MODEL, revision=OLD_SHA).sha == OLD_SHA
    ds = api.dataset_info(DATASET)
    assert ds.sha == server.sha(DATASET) and "README.md" in {s.rfilename for s in ds.siblings}
    assert {c["config_name"] for c in ds.card_data["configs"]} == {"seed_sft", "synthetic_sft"}
    only = api.dataset_info(DATASET, expand=["sha"])
    assert only.sha == ds.sha and only.siblings is None
    refs = api.list_repo_refs(DATASET, repo_type="dataset")
    assert [(b.name, b.target_commit) for b in refs.branches] == [("main", ds.sha)] and refs.tags == []
    top = list(api.list_repo_tree(MODEL))
    assert [(e.path, type(e).__name__) for e in top] == [
        ("sub", "RepoFolder"), (".gitattributes", "RepoFile"), ("config.json", "RepoFile"), ("weights.bin", "RepoFile")]
    deep = {e.path for e in api.list_repo_tree(MODEL, recursive=True)}
    assert {"sub", "sub/notes.txt", "weights.bin"} <= deep
    sub = list(api.list_repo_tree(MODEL, path_in_repo="sub", expand=True))
    assert [e.path for e in sub] == ["sub/notes.txt"] and sub[0].last_commit.oid == MODEL_SHA
    weights = next(e for e in top if e.path == "weights.bin")
    data = bytes(range(256)) * 64
    assert weights.lfs.sha256 == hashlib.sha256(data).hexdigest() and weights.size == len(data)
    paths = api.get_paths_info(MODEL, ["config.json", "sub", "missing.txt"])
    assert [(p.path, type(p).__name__) for p in paths] == [("config.json", "RepoFile"), ("sub", "RepoFolder")]
    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree(MODEL, path_in_repo="nowhere"))


def test_errors_map_to_huggingface_hub_exceptions(env):
    url, cache, api = env["url"], env["cache"], env["api"]
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("nobody/nothing")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("nobody/nothing", "x.txt", endpoint=url, cache_dir=cache)
    with pytest.raises(RevisionNotFoundError):
        api.model_info(MODEL, revision="f" * 40)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(MODEL, "config.json", revision="f" * 40, endpoint=url, cache_dir=cache)
    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(MODEL, "no-such-file.json", endpoint=url, cache_dir=cache)


def test_gated_repo_403_for_a_user_without_accepted_terms_401_anonymous(env):
    url, cache = env["url"], env["cache"]
    with pytest.raises(GatedRepoError) as bob:
        hf_hub_download(GATED, "default/train.jsonl", repo_type="dataset", endpoint=url, cache_dir=cache, token=BOB)
    assert bob.value.response.status_code == 403
    with pytest.raises(GatedRepoError) as anon:
        hf_hub_download(GATED, "default/train.jsonl", repo_type="dataset", endpoint=url, cache_dir=cache,
                        token=False)
    assert anon.value.response.status_code == 401
    ok = hf_hub_download(GATED, "default/train.jsonl", repo_type="dataset", endpoint=url, cache_dir=cache,
                         token=ALICE)
    assert Path(ok).read_bytes() == (MIRROR / "datasets" / GATED / "default" / "train.jsonl").read_bytes()
    assert HfApi(endpoint=url, token=BOB).dataset_info(GATED).gated == "manual"


def test_whoami_and_a_bad_token(env):
    url = env["url"]
    me = HfApi(endpoint=url, token=ALICE).whoami()
    assert me["name"] == "alice" and me["isPro"] is True and [o["name"] for o in me["orgs"]] == ["axentx", "tiny-org"]
    assert me["auth"]["accessToken"]["role"] == "write"
    with pytest.raises(HfHubHTTPError) as bad:
        HfApi(endpoint=url, token=BAD).whoami()
    assert bad.value.response.status_code == 401
    with pytest.raises(HfHubHTTPError) as bad_read:
        HfApi(endpoint=url, token=BAD).model_info(MODEL)
    assert bad_read.value.response.status_code == 401
    with pytest.raises(HfHubHTTPError) as bad_download:
        hf_hub_download(MODEL, "config.json", endpoint=url, cache_dir=env["cache"], token=BAD)
    assert bad_download.value.response.status_code == 401


def test_create_repo_private_exist_ok_and_permissions(env):
    url, api = env["url"], env["api"]
    repo = api.create_repo("axentx/created-private", private=True)
    assert repo.repo_id == "axentx/created-private"
    assert api.create_repo("axentx/created-private", private=True, exist_ok=True).repo_id == repo.repo_id
    with pytest.raises(HfHubHTTPError) as again:
        api.create_repo("axentx/created-private")
    assert again.value.response.status_code == 409
    assert api.model_info("axentx/created-private").private is True
    with pytest.raises(RepositoryNotFoundError):  # private: invisible outside the org
        HfApi(endpoint=url, token=BOB).model_info("axentx/created-private")
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=url, token=False).model_info("axentx/created-private")
    with pytest.raises(HfHubHTTPError) as bob:
        HfApi(endpoint=url, token=BOB).create_repo("axentx/bobs-repo")
    assert bob.value.response.status_code == 403
    with pytest.raises(HfHubHTTPError) as reader:
        HfApi(endpoint=url, token=READER).create_repo("axentx/readers-repo")
    assert reader.value.response.status_code == 403
    public = api.create_repo("axentx/created-public-ds", repo_type="dataset", private=False)
    assert HfApi(endpoint=url, token=False).dataset_info(public.repo_id).private is False


def test_commits_regular_and_lfs_files_each_a_new_sha_old_revisions_resolvable(env, tmp_path):
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    url, api, server, cache = env["url"], env["api"], env["server"], env["cache"]
    repo_id = "axentx/pushed-model"
    api.create_repo(repo_id, private=True)
    first = api.create_commit(repo_id, [CommitOperationAdd("config.json", b'{"v": 1}'),
                                        CommitOperationAdd("docs/a.txt", b"a")], commit_message="first")
    big = tmp_path / "big.safetensors"
    big.write_bytes(hashlib.sha256(b"seed").digest() * (11 * 1024 * 1024 // 32 + 1))  # > 10 MB: LFS
    before = len(server.requests)
    second = api.upload_file(path_or_fileobj=str(big), path_in_repo="model.safetensors", repo_id=repo_id,
                             commit_message="weights")
    lfs_calls = [(m, p, s) for m, p, s in server.requests[before:] if "lfs" in p]
    assert [m for m, _, _ in lfs_calls] == ["POST", "PUT", "POST"]  # batch, upload, verify
    assert all(s == 200 for _, _, s in lfs_calls)
    folder = tmp_path / "folder"
    (folder / "nested").mkdir(parents=True)
    (folder / "nested" / "b.txt").write_text("b")
    (folder / "config.json").write_text('{"v": 3}')
    third = api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message="folder")
    fourth = api.create_commit(repo_id, [CommitOperationDelete("docs/a.txt")], commit_message="delete")
    shas = [first.oid, second.oid, third.oid, fourth.oid]
    assert len(set(shas)) == 4 and server.sha(repo_id, "model") == fourth.oid
    assert api.list_repo_refs(repo_id).branches[0].target_commit == fourth.oid
    at = {sha: {s.rfilename for s in api.model_info(repo_id, revision=sha).siblings} for sha in shas}
    assert at[first.oid] == {".gitattributes", "config.json", "docs/a.txt"}
    assert at[second.oid] == at[first.oid] | {"model.safetensors"}
    assert at[third.oid] == at[second.oid] | {"nested/b.txt"}
    assert at[fourth.oid] == at[third.oid] - {"docs/a.txt"}

    def read(name: str, sha: str) -> bytes:
        return Path(hf_hub_download(repo_id, name, revision=sha, endpoint=url, cache_dir=cache, token=ALICE)).read_bytes()

    assert read("config.json", first.oid) == b'{"v": 1}' and read("config.json", fourth.oid) == b'{"v": 3}'
    assert read("model.safetensors", fourth.oid) == big.read_bytes()
    head = httpx.head(f"{url}/{repo_id}/resolve/main/model.safetensors", headers={"Authorization": f"Bearer {ALICE}"})
    assert head.headers["X-Linked-Etag"] == f'"{hashlib.sha256(big.read_bytes()).hexdigest()}"'
    # The same LFS content again: the batch API answers it is already there (no upload action).
    before = len(server.requests)
    api.upload_file(path_or_fileobj=str(big), path_in_repo="copy.safetensors", repo_id=repo_id)
    assert [m for m, p, _ in server.requests[before:] if "lfs" in p] == ["POST"]
    # Persisted in the push root in the models layout: revision.txt + files, older trees in @<sha>/.
    root = server.state.store.push_dir / "models" / repo_id
    assert (root / "revision.txt").read_text().strip() == server.sha(repo_id, "model")
    assert (root / f"@{first.oid}" / "config.json").read_bytes() == b'{"v": 1}'


def test_a_stale_parent_commit_is_refused(env):
    from huggingface_hub import CommitOperationAdd

    api = env["api"]
    api.create_repo("axentx/parent-check")
    first = api.create_commit("axentx/parent-check", [CommitOperationAdd("a.txt", b"1")], commit_message="1")
    api.create_commit("axentx/parent-check", [CommitOperationAdd("a.txt", b"2")], commit_message="2")
    with pytest.raises(HfHubHTTPError) as stale:
        api.create_commit("axentx/parent-check", [CommitOperationAdd("a.txt", b"3")], commit_message="3",
                          parent_commit=first.oid)
    assert stale.value.response.status_code == 412


def test_the_models_folder_is_read_only_and_commits_need_an_existing_repo(env):
    from huggingface_hub import CommitOperationAdd

    api = env["api"]
    with pytest.raises(RepositoryNotFoundError):
        api.create_commit("axentx/created-nowhere", [CommitOperationAdd("a.txt", b"1")], commit_message="x")
    with pytest.raises(HfHubHTTPError) as exists:
        api.create_repo(MODEL)
    assert exists.value.response.status_code == 409
    with pytest.raises(HfHubHTTPError) as models:
        api.create_commit(MODEL, [CommitOperationAdd("a.txt", b"1")], commit_message="x")
    assert models.value.response.status_code == 403
    assert env["server"].sha(MODEL, "model") == MODEL_SHA


def test_online_hub_push_files_lands_a_private_versioned_repo(env, tmp_path, monkeypatch):
    from surrogate_dagster.hub.client import OnlineHub

    server = env["server"]
    monkeypatch.setenv("SURROGATE_TEST_LOCALHUB_TOKEN", ALICE)
    hub = OnlineHub("axentx", "SURROGATE_TEST_LOCALHUB_TOKEN", endpoint_url=env["url"])
    weights = tmp_path / "adapter_model.safetensors"
    weights.write_bytes(b"\0" * 4096)
    uri = hub.push_files("model", "pushed-by-online-hub", {"README.md": b"# card\n", "adapter_model.safetensors": weights},
                         "first push")
    sha = server.sha("axentx/pushed-by-online-hub", "model")
    assert uri == f"hf://models/axentx/pushed-by-online-hub@{sha}"
    again = hub.push_files("model", "pushed-by-online-hub", {"README.md": b"# card v2\n"}, "second push")
    assert again != uri and again.endswith(server.sha("axentx/pushed-by-online-hub", "model"))
    api = env["api"]
    assert api.model_info("axentx/pushed-by-online-hub").private is True
    assert {s.rfilename for s in api.model_info("axentx/pushed-by-online-hub", revision=sha).siblings} == {
        ".gitattributes", "README.md", "adapter_model.safetensors"}


def test_command_line_help_names_the_roots():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "surrogate_dagster.hub.local_server", "--help"], capture_output=True,
                         text=True, timeout=60, cwd=REPO_ROOT)
    assert out.returncode == 0
    assert "--mirror" in out.stdout and "--models-dir" in out.stdout and "--push-dir" in out.stdout


def test_xet_token_requests_say_how_to_upload_here(env):
    answer = httpx.get(f"{env['url']}/api/models/{MODEL}/xet-write-token/main",
                       headers={"Authorization": f"Bearer {ALICE}"})
    assert answer.status_code == 501 and "HF_HUB_DISABLE_XET=1" in answer.json()["error"]


def test_listing_an_orgs_repos_shows_private_ones_to_members_only(env):
    url, api = env["url"], env["api"]
    api.create_repo("axentx/listed-private", private=True, exist_ok=True)
    api.create_repo("axentx/listed-public-ds", repo_type="dataset", private=False, exist_ok=True)
    mine = {m.id: m for m in api.list_models(author="axentx")}
    assert "axentx/listed-private" in mine and mine["axentx/listed-private"].private is True
    assert all(m.startswith("axentx/") for m in mine)
    assert "axentx/listed-public-ds" in {d.id for d in api.list_datasets(author="axentx")}
    assert "axentx/listed-private" not in {m.id for m in HfApi(endpoint=url, token=BOB).list_models(author="axentx")}
    assert DATASET in {d.id for d in api.list_datasets(search="rstar")}
    assert MODEL in {m.id for m in api.list_models(author="tiny-org")}
