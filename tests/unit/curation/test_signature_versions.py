"""MinHash signature folders are keyed by what they hold: the filtered rows' version, the text
view and the MinHash geometry; a local folder of another version is replaced, never reused."""

import io
import json
import tarfile

from surrogate_dagster.curation import assets as cur
from surrogate_dagster.curation.minhash import MANIFEST, MinhashSpec
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.storage import LocalObjectStore


def test_the_signature_key_moves_with_the_geometry(monkeypatch):
    key = cur._signature_key("src", "v1")
    assert cur._signature_key("src", "v1") == key
    assert cur._signature_key("src", "v2") != key
    monkeypatch.setattr(cur, "minhash_spec", lambda: MinhashSpec(n_grams=5, buckets=16, hashes_per_bucket=8))
    assert cur._signature_key("src", "v1") != key


def _tarball(version: str, marker: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in ((MANIFEST, json.dumps({"marker": marker})), (cur.SIGNATURE_VERSION_FILE, version)):
            data = text.encode()
            info = tarfile.TarInfo(f"src/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_a_local_folder_of_another_version_is_replaced_from_the_store(tmp_path):
    store = LocalObjectStore(root=str(tmp_path / "store"))
    curation = CurationSettings(ner_model=None, edu_scorer="rubric", work_dir=str(tmp_path / "work"))
    store.put_bytes("curation/filtered/src/_latest.json", json.dumps({"version": "v2", "key": "k", "rows": 0}).encode())
    store.put_bytes(cur._signature_key("src", "v2"), _tarball(cur._signature_version("v2"), "stored"))
    local = curation.work_path("minhash") / "src"
    local.mkdir(parents=True)
    (local / MANIFEST).write_text(json.dumps({"marker": "stale"}))
    (local / cur.SIGNATURE_VERSION_FILE).write_text(cur._signature_version("v1"))
    out = cur.signature_dir(store, curation, "src")
    assert json.loads((out / MANIFEST).read_text()) == {"marker": "stored"}
    # the wanted version is now local: no second restore (the stored tarball may be gone)
    store.delete(cur._signature_key("src", "v2")) if hasattr(store, "delete") else None
    assert cur.signature_dir(store, curation, "src") == out
