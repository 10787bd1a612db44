"""Two implementations of one small Hub interface; no Dagster imports.

Offline mirror layout (one folder per repo, like the Hub's URL space):

    <mirror>/datasets/<org>/<name>/revision.txt            the sha `main` points at
    <mirror>/datasets/<org>/<name>/<config>/<split>.jsonl  rows, native schema ("default" config)
    <mirror>/datasets/<org>/<name>/@<sha>/<config>/...     older revisions kept for a pin (optional)

Pushes on the offline hub land in `<push_dir>/{datasets,models}/<org>/<name>/` with a revision.txt
holding the content hash, so a push is visible and versioned exactly as on the Hub. Under
`<push_dir>/models/` a pushed model is at its Hub id (`OfflineHub.model_dir`): run from there, a
repo id given to `from_pretrained` (or an adapter's `base_model_name_or_path`) resolves to it.

`push_files` takes each file as bytes or as a local path (model weights: streamed, not read whole).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..paths import resolve_repo_path
from ..scrub import scrub_methods

FileData = bytes | Path  # a file's content, or a local file holding it


def _sha256(data: FileData) -> bytes:
    if isinstance(data, bytes):
        return hashlib.sha256(data).digest()
    digest = hashlib.sha256()
    with open(data, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.digest()


def jsonl_rows(lines: Iterable[bytes], name: str, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of a JSON Lines file given as its raw lines; a line that is not UTF-8, not JSON or not
    an object becomes ``{"__unreadable__": "<name>:<line>: reason", "__line__": text}`` (the mirror
    quarantines it), so one bad line never loses the rest of the file."""
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
            row = json.loads(line)
        except UnicodeDecodeError as e:
            # Surfaced, not skipped: the mirror quarantines it with this reason.
            yield {"__unreadable__": f"{name}:{lineno}: not UTF-8 ({e.reason} at byte {e.start})",
                   "__line__": raw.decode("utf-8", errors="replace")}
            continue
        except json.JSONDecodeError as e:
            yield {"__unreadable__": f"{name}:{lineno}: {e.msg}", "__line__": line}
            continue
        if not isinstance(row, dict):
            yield {"__unreadable__": f"{name}:{lineno}: a row must be a JSON object", "__line__": line}
            continue
        yield {k: row.get(k) for k in columns} if columns else row


def _split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Lines (with their b"\\n") of a byte stream read in chunks."""
    rest = b""
    for chunk in chunks:
        rest += chunk
        *lines, rest = rest.split(b"\n")
        for line in lines:
            yield line + b"\n"
    if rest:
        yield rest


def write_file(target: Path, data: FileData, tmp_suffix: str = ".tmp") -> None:
    """``data`` (bytes, or a local file streamed) at ``target``, whole or not at all: written beside it,
    then renamed over it (a rename also leaves any hard link to the old file its old bytes)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}{tmp_suffix}")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        shutil.copyfile(data, tmp)
    os.replace(tmp, target)


class RevisionNotFound(LookupError):
    """A pinned revision that the hub (or mirror) does not have."""


class HubClient(ABC):
    @abstractmethod
    def current_revision(self, hf_id: str, revision: str = "main") -> str:
        """Resolve `revision` (a branch or sha) of dataset `hf_id` to a commit sha."""

    @abstractmethod
    def iter_rows(self, hf_id: str, config: str, split: str, revision: str,
                  columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """Stream rows of one config/split at an exact revision (never a whole-repo download)."""

    @abstractmethod
    def push_files(self, repo_type: str, repo_name: str, files: dict[str, FileData],
                   message: str) -> str:
        """Create (private) or update `<org>/<repo_name>` with `files`; returns a URI with revision."""


class OfflineHub(HubClient):
    def __init__(self, mirror_dir: str | Path, push_dir: str | Path, org: str) -> None:
        self.mirror_dir = resolve_repo_path(mirror_dir)
        self.push_dir = resolve_repo_path(push_dir)
        self.org = org

    def _repo(self, hf_id: str) -> Path:
        repo = self.mirror_dir / "datasets" / hf_id
        if not repo.is_dir():
            raise FileNotFoundError(f"offline hub: no mirror of dataset {hf_id!r} at {repo}")
        return repo

    def current_revision(self, hf_id: str, revision: str = "main") -> str:
        repo = self._repo(hf_id)
        head = (repo / "revision.txt").read_text().strip()
        if revision in ("main", head):
            return head
        if (repo / f"@{revision}").is_dir():
            return revision
        raise RevisionNotFound(f"offline hub: {hf_id} has no revision {revision!r} (main is {head})")

    def _revision_root(self, hf_id: str, revision: str) -> Path:
        repo = self._repo(hf_id)
        sha = self.current_revision(hf_id, revision)
        head = (repo / "revision.txt").read_text().strip()
        return repo if sha == head else repo / f"@{sha}"

    def iter_rows(self, hf_id, config, split, revision, columns=None):
        path = self._revision_root(hf_id, revision) / config / f"{split}.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"offline hub: {hf_id} has no {config}/{split} at {path}")
        with path.open("rb") as fh:
            yield from jsonl_rows(fh, path.name, columns)

    def push_files(self, repo_type, repo_name, files, message):
        repo = self.push_dir / f"{repo_type}s" / self.org / repo_name
        repo.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha1()
        for rel in sorted(files):
            data = files[rel]
            digest.update(rel.encode() + b"\0" + _sha256(data))
            write_file(repo / rel, data)
        sha = digest.hexdigest()
        (repo / "revision.txt").write_text(sha + "\n")
        (repo / "private").write_text("true\n")  # the Hub pushes are private; mirror that
        return f"hf-offline://{repo_type}s/{self.org}/{repo_name}@{sha}"

    def model_dir(self, repo_id: str) -> Path:
        """Where a pushed model repo (``org/name``) lies: what ``from_pretrained(repo_id)`` loads."""
        return self.push_dir / "models" / repo_id


@scrub_methods  # a Hub that echoes the token in an error body: every exception leaves scrubbed
class OnlineHub(HubClient):
    """The real Hub (or any server speaking its API, ``endpoint_url``/``HF_ENDPOINT``): streamed reads
    (JSON Lines through ``huggingface_hub``, other formats through ``datasets``), `HfApi` for
    revisions and pushes."""

    def __init__(self, org: str, token_env: str = "HF_TOKEN", endpoint_url: str | None = None) -> None:
        self.org = org
        self.token_env = token_env
        self.endpoint_url = endpoint_url

    def _token(self) -> str | None:
        return os.environ.get(self.token_env) or None  # public datasets read without a token

    def endpoint(self) -> str | None:
        """The profile's hub endpoint, else ``HF_ENDPOINT`` read now (huggingface_hub reads it once,
        at import); None: huggingface.co."""
        return self.endpoint_url or os.environ.get("HF_ENDPOINT") or None

    def current_revision(self, hf_id, revision="main"):
        from huggingface_hub import HfApi
        from huggingface_hub.errors import RevisionNotFoundError

        try:
            # Only the sha: without `expand` the reply also lists every file of the repo.
            return HfApi(token=self._token(), endpoint=self.endpoint()).dataset_info(hf_id, revision=revision, expand=["sha"]).sha
        except RevisionNotFoundError as e:
            raise RevisionNotFound(f"{hf_id}@{revision}: {e}") from e

    def iter_rows(self, hf_id, config, split, revision, columns=None):
        """Rows of one config/split at ``revision``, streamed.

        The split's data files are the ones ``datasets`` resolves for it (the dataset card's
        ``configs:`` block, else its layout conventions). When every one is JSON Lines
        (``.jsonl``), this reads them itself through ``huggingface_hub`` (``HfFileSystem``, one
        streamed GET per file, line by line, in order) with ``jsonl_rows``' quarantine rows: a bad
        line becomes an ``__unreadable__`` row, where ``datasets``' JSON reader would fail the whole
        split. Any other format (parquet, csv, compressed JSON) streams through ``datasets``.
        """
        files = self._data_files(hf_id, config, split, revision)
        if files and all(urlsplit(f).path.endswith(".jsonl") for f in files):
            yield from self._jsonl_split(files, columns)
            return
        from datasets import load_dataset

        ds = load_dataset(hf_id, None if config == "default" else config, split=split,
                          revision=revision, streaming=True, token=self._token())
        if columns:
            ds = ds.select_columns(columns)
        yield from ds

    def _data_files(self, hf_id: str, config: str, split: str, revision: str) -> list[str]:
        """The ``hf://`` URLs of the split's data files at ``revision`` (empty: unknown split; then
        ``datasets`` raises its own error)."""
        from datasets import load_dataset_builder

        builder = load_dataset_builder(hf_id, None if config == "default" else config, revision=revision,
                                       token=self._token())
        data_files = builder.config.data_files or {}
        return [str(f) for f in data_files.get(split, [])]

    def _jsonl_split(self, files: list[str], columns: list[str] | None) -> Iterator[dict[str, Any]]:
        from huggingface_hub import HfFileSystem

        fs = HfFileSystem(endpoint=self.endpoint(), token=self._token())
        for url in files:
            name = url.rsplit("/", 1)[-1]
            with fs.open(url, "rb", block_size=0) as fh:  # block_size=0: one streamed GET, no seeks
                yield from jsonl_rows(_split_lines(iter(lambda: fh.read(1 << 20), b"")), name, columns)

    def push_files(self, repo_type, repo_name, files, message):
        from huggingface_hub import CommitOperationAdd, HfApi

        token = os.environ.get(self.token_env)
        if not token:
            raise RuntimeError(f"pushing to the HF Hub needs a token in ${self.token_env}")
        api = HfApi(token=token, endpoint=self.endpoint())
        repo_id = f"{self.org}/{repo_name}"
        api.create_repo(repo_id, repo_type=repo_type, private=True, exist_ok=True)
        ops = [CommitOperationAdd(path_in_repo=k, path_or_fileobj=v if isinstance(v, bytes) else str(v))
               for k, v in files.items()]
        info = api.create_commit(repo_id, ops, commit_message=message, repo_type=repo_type)
        return f"hf://{repo_type}s/{repo_id}@{info.oid}"


def make_hub(cfg) -> HubClient:
    """Build the hub client for a profile's `hub:` section."""
    if cfg.mode == "offline":
        return OfflineHub(cfg.mirror_dir, cfg.push_dir, cfg.org)
    return OnlineHub(cfg.org, cfg.token_env, getattr(cfg, "endpoint", None))
