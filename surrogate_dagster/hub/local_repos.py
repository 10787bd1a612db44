"""The repos the local Hub server (``local_server.py``) serves, read from and written to disk.

Three roots, one layout per repo (``revision.txt`` holds the commit ``main`` points at, the files
lie beside it, older revisions in ``@<sha>/`` folders; a file named ``private`` marks a private
repo; none of these is a repo file):

- the dataset mirror, ``<mirror_dir>/datasets/<org>/<name>/`` (``<config>/<split>.jsonl``). Its
  ``main`` commit is a sha1 of its files, not ``revision.txt``: that file holds the offline
  mirror's pin, which no Hub has, so a pin copied from the mirror fails against this server as it
  would on the Hub. A repo without a ``README.md`` gets a generated dataset card whose ``configs:``
  block lists each config's data files, so ``datasets`` finds configs and splits as on the Hub;
- read-only models, ``<models_dir>/<org>/<name>/`` (``main`` = ``revision.txt``, or a sha1 of the
  files when there is none);
- the push root, ``<push_dir>/{models,datasets}/<org>/<name>/``, where repos created and committed
  through the API are written (the offline hub's push layout, so it can serve those pushes too).
  Each commit gets a new sha; the previous tree moves to ``@<old sha>/`` (hard links, so nothing is
  copied), and new files replace old ones by rename, never in place. LFS uploads wait in
  ``<push_dir>/.lfs/<sha256>`` until a commit names them.

The tree is re-read from disk on every lookup (digests are memoized by path, size and mtime), so
files written into a root after the server started are served.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import threading
import time
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .client import write_file

# The patterns the Hub's default .gitattributes stores in LFS; a file over LFS_THRESHOLD is always LFS.
LFS_PATTERNS = ("*.7z", "*.arrow", "*.bin", "*.bz2", "*.ckpt", "*.ftz", "*.gz", "*.h5", "*.joblib", "*.jsonl",
                "*.lz4", "*.mlmodel", "*.model", "*.msgpack", "*.npy", "*.npz", "*.onnx", "*.ot", "*.parquet",
                "*.pb", "*.pickle", "*.pkl", "*.pt", "*.pth", "*.rar", "*.safetensors", "*.tar", "*.tflite",
                "*.tgz", "*.wasm", "*.xz", "*.zip", "*.zst", "*tfevents*")
LFS_THRESHOLD = 10 * 1024 * 1024
GITATTRIBUTES = "".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in LFS_PATTERNS).encode()
_META = {"revision.txt", "private"}
_SHA = re.compile(r"[0-9a-f]{40}")
_DATA_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


def is_lfs(path: str, size: int) -> bool:
    """Whether the Hub keeps this file in LFS (a pointer in git, the bytes elsewhere)."""
    name = path.rsplit("/", 1)[-1]
    return size >= LFS_THRESHOLD or any(fnmatch.fnmatch(name, p) for p in LFS_PATTERNS)


@dataclass(frozen=True)
class Blob:
    """One file of a revision: on disk (``path``) or generated (``data``), with the Hub's digests."""

    size: int
    git_oid: str  # git's blob sha1 of the content
    sha256: str
    lfs: bool
    path: Path | None = None
    data: bytes | None = None

    @property
    def pointer(self) -> bytes:
        """The LFS pointer git stores instead of an LFS file's bytes."""
        return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\n"
                f"size {self.size}\n").encode()

    @property
    def oid(self) -> str:
        """The oid the Hub lists in a tree: the pointer's blob sha1 for an LFS file."""
        if not self.lfs:
            return self.git_oid
        p = self.pointer
        return hashlib.sha1(b"blob %d\0" % len(p) + p, usedforsecurity=False).hexdigest()

    @property
    def etag(self) -> str:
        """What ``resolve`` answers as the file's etag (X-Linked-Etag for LFS): sha256 or git oid."""
        return self.sha256 if self.lfs else self.git_oid

    def read(self, start: int = 0, end: int | None = None) -> Iterable[bytes]:
        """The bytes [start, end) in chunks."""
        end = self.size if end is None else end
        if self.data is not None:
            yield self.data[start:end]
            return
        assert self.path is not None
        with open(self.path, "rb") as fh:
            fh.seek(start)
            left = end - start
            while left > 0:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
                yield chunk


def _digests(chunks: Iterable[bytes], size: int) -> tuple[str, str]:
    git, sha = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False), hashlib.sha256()
    for chunk in chunks:
        git.update(chunk)
        sha.update(chunk)
    return git.hexdigest(), sha.hexdigest()


def _file_chunks(path: Path) -> Iterable[bytes]:
    with open(path, "rb") as fh:
        yield from iter(lambda: fh.read(1 << 20), b"")


_memo: dict[tuple[str, int, int], tuple[str, str]] = {}
_memo_lock = threading.Lock()


def file_blob(rel: str, path: Path) -> Blob:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _memo_lock:
        digests = _memo.get(key)
    if digests is None:
        digests = _digests(_file_chunks(path), st.st_size)
        with _memo_lock:
            _memo[key] = digests
    return Blob(st.st_size, digests[0], digests[1], is_lfs(rel, st.st_size), path=path)


def bytes_blob(rel: str, data: bytes) -> Blob:
    git, sha = _digests([data], len(data))
    return Blob(len(data), git, sha, is_lfs(rel, len(data)), data=data)


def tree_sha(files: dict[str, Blob]) -> str:
    """A sha1 of a tree's paths and content digests: changes exactly when a file does."""
    digest = hashlib.sha1(usedforsecurity=False)
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + bytes.fromhex(files[rel].sha256))
    return digest.hexdigest()


def dataset_card(files: Iterable[str]) -> bytes:
    """A README.md whose ``configs:`` block names ``<config>/<split>.<ext>`` files one split each."""
    configs: dict[str, list[dict[str, str]]] = {}
    for rel in sorted(files):
        parts = rel.split("/")
        if len(parts) == 2 and parts[1].endswith(_DATA_SUFFIXES):
            split = parts[1].rsplit(".", 1)[0]
            configs.setdefault(parts[0], []).append({"split": split, "path": rel})
    listed = [{"config_name": name, "data_files": data} for name, data in sorted(configs.items())]
    head = yaml.safe_dump({"configs": listed}, sort_keys=False) if listed else ""
    return f"---\n{head}---\n\nServed by the local Hub from the offline mirror.\n".encode()


@dataclass
class Revision:
    sha: str
    files: dict[str, Blob]
    date: float  # commit time, seconds since the epoch


@dataclass
class Repo:
    """A repo as found on disk now: its kind, where it lies, which revisions it has."""

    repo_type: str  # "model" | "dataset"
    repo_id: str
    root: Path
    kind: str  # "mirror" | "models" | "push"
    private: bool
    main: str
    older: list[str] = field(default_factory=list)  # the @<sha>/ revisions

    @property
    def writable(self) -> bool:
        return self.kind == "push"


class RepoStore:
    """Finds repos in the three roots, resolves revisions, creates repos and records commits."""

    def __init__(self, mirror_dir: Path | None, models_dir: Path | None, push_dir: Path | None,
                 mirror_pins: bool = False) -> None:
        self.mirror_dir, self.models_dir, self.push_dir = mirror_dir, models_dir, push_dir
        # mirror_pins: the mirror's ``main`` is its revision.txt, i.e. this server holds the commits
        # the catalog pins (the rehearsal runs the catalog as it is); default: a sha1 of the files.
        self.mirror_pins = mirror_pins
        self.lock = threading.RLock()  # commits, and reads of a push repo's tree while one runs

    # -- lookup --------------------------------------------------------------------------------
    def _candidates(self, repo_type: str, repo_id: str) -> list[tuple[str, Path]]:
        out: list[tuple[str, Path]] = []
        if self.push_dir is not None:
            out.append(("push", self.push_dir / f"{repo_type}s" / repo_id))
        if repo_type == "dataset" and self.mirror_dir is not None:
            out.append(("mirror", self.mirror_dir / "datasets" / repo_id))
        if repo_type == "model" and self.models_dir is not None:
            out.append(("models", self.models_dir / repo_id))
        return out

    def get(self, repo_type: str, repo_id: str) -> Repo | None:
        if repo_id.count("/") != 1 or ".." in repo_id.split("/") or repo_type not in ("model", "dataset"):
            return None
        for kind, root in self._candidates(repo_type, repo_id):
            if root.is_dir():
                return self._repo(repo_type, repo_id, kind, root)
        return None

    def _guard(self, kind: str):
        """The lock a read of this root needs: only the push root changes while it is served (hashing
        a large read-only file must not stall every other request)."""
        return self.lock if kind == "push" else nullcontext()

    def _repo(self, repo_type: str, repo_id: str, kind: str, root: Path) -> Repo:
        with self._guard(kind):
            older = sorted(p.name[1:] for p in root.iterdir() if p.is_dir() and _SHA.fullmatch(p.name[1:])
                           and p.name.startswith("@"))
            rev_file = root / "revision.txt"
            if (kind == "mirror" and not self.mirror_pins) or not rev_file.is_file():
                main = tree_sha(self._files(kind, root))
            else:
                main = rev_file.read_text().strip()
            private = (root / "private").is_file() and (root / "private").read_text().strip() != "false"
        return Repo(repo_type, repo_id, root, kind, private, main, older)

    def list_ids(self, repo_type: str) -> list[str]:
        """Every repo id of one type across the roots."""
        bases: list[Path] = []
        if self.push_dir is not None:
            bases.append(self.push_dir / f"{repo_type}s")
        if repo_type == "dataset" and self.mirror_dir is not None:
            bases.append(self.mirror_dir / "datasets")
        if repo_type == "model" and self.models_dir is not None:
            bases.append(self.models_dir)
        ids = {f"{org.name}/{repo.name}" for base in bases if base.is_dir()
               for org in base.iterdir() if org.is_dir() and not org.name.startswith(".")
               for repo in org.iterdir() if repo.is_dir()}
        return sorted(ids)

    def _files(self, kind: str, folder: Path) -> dict[str, Blob]:
        files: dict[str, Blob] = {}
        for p in sorted(folder.rglob("*")):
            rel = p.relative_to(folder).as_posix()
            if not p.is_file() or rel in _META or rel.startswith("@") or (p.name.startswith(".") and p.name.endswith(".tmp")):
                continue
            files[rel] = file_blob(rel, p)
        files.setdefault(".gitattributes", bytes_blob(".gitattributes", GITATTRIBUTES))
        if kind == "mirror" and "README.md" not in files:
            files["README.md"] = bytes_blob("README.md", dataset_card(files))
        return files

    def resolve(self, repo: Repo, rev: str) -> Revision | None:
        """The revision a branch name or commit sha names; None when the repo has no such revision."""
        if rev in ("main", "refs/heads/main", repo.main):
            folder = repo.root
            sha = repo.main
        elif rev in repo.older:
            folder, sha = repo.root / f"@{rev}", rev
        else:
            return None
        with self._guard(repo.kind):
            files = self._files(repo.kind, folder)
            date = (folder / "revision.txt").stat().st_mtime if (folder / "revision.txt").is_file() \
                else folder.stat().st_mtime
        return Revision(sha, files, date)

    # -- writes --------------------------------------------------------------------------------
    def create(self, repo_type: str, repo_id: str, private: bool) -> bool:
        """Create an empty repo (one commit holding .gitattributes) in the push root; False if it exists."""
        if self.get(repo_type, repo_id) is not None:
            return False
        assert self.push_dir is not None
        root = self.push_dir / f"{repo_type}s" / repo_id
        with self.lock:
            root.mkdir(parents=True)
            (root / ".gitattributes").write_bytes(GITATTRIBUTES)
            (root / "private").write_text("true\n" if private else "false\n")
            sha = hashlib.sha1(f"{repo_type}:{repo_id}:{time.time_ns()}".encode(), usedforsecurity=False).hexdigest()
            (root / "revision.txt").write_text(sha + "\n")
        return True

    def lfs_object(self, oid: str) -> Path:
        assert self.push_dir is not None and re.fullmatch(r"[0-9a-f]{64}", oid)
        return self.push_dir / ".lfs" / oid

    def has_lfs_object(self, oid: str, size: int) -> bool:
        p = self.lfs_object(oid)
        return p.is_file() and p.stat().st_size == size

    def store_lfs_object(self, oid: str, chunks: Iterable[bytes]) -> bool:
        """Write an uploaded LFS object; False (and nothing kept) when its sha256 is not ``oid``."""
        target = self.lfs_object(oid)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{oid}.{threading.get_ident()}.tmp")
        digest = hashlib.sha256()
        with open(tmp, "wb") as fh:
            for chunk in chunks:
                digest.update(chunk)
                fh.write(chunk)
        if digest.hexdigest() != oid:
            tmp.unlink()
            return False
        os.replace(tmp, target)
        return True

    def commit(self, repo: Repo, adds: dict[str, bytes | Path], deletes: list[str], deleted_folders: list[str],
               summary: str) -> str:
        """Apply one commit to a push repo; returns its new sha (``main`` moves there)."""
        assert repo.writable
        with self.lock:
            root = repo.root
            current = self._files("push", root)
            old = repo.main
            archive = root / f"@{old}"
            if not archive.exists():  # the previous tree stays resolvable at its sha
                for rel, blob in current.items():
                    dst = archive / rel
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    if blob.path is None:
                        dst.write_bytes(blob.data or b"")
                        continue
                    try:
                        os.link(blob.path, dst)
                    except OSError:
                        shutil.copyfile(blob.path, dst)
            for rel in deletes:
                (root / rel).unlink(missing_ok=True)
            for folder in deleted_folders:
                target = root / folder.strip("/")
                if target.is_dir() and target != root:
                    shutil.rmtree(target)
            for rel, data in adds.items():
                write_file(root / rel, data, ".commit.tmp")  # a rename: the hard link in @<old>/ keeps the old bytes
            new_files = self._files("push", root)
            seed = f"{old}\n{summary}\n{tree_sha(new_files)}\n{time.time_ns()}".encode()
            sha = hashlib.sha1(seed, usedforsecurity=False).hexdigest()
            tmp = root / ".revision.txt.tmp"
            tmp.write_text(sha + "\n")
            os.replace(tmp, root / "revision.txt")
        return sha
