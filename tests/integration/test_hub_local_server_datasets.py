"""``datasets`` streaming and ``OnlineHub.iter_rows`` against the local Hub equal ``OfflineHub`` over
the mirror it serves: every source, config and split of assets/sources.yaml (sources and helpers),
and a mirror of deliberately broken JSON Lines (not JSON, not UTF-8, not an object) whose bad lines
come back as the same quarantine rows while the good lines around them survive.

``datasets`` and ``huggingface_hub`` read HF_ENDPOINT at import, so the clients run in a fresh
interpreter with HF_ENDPOINT as the only pointer to the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from surrogate_dagster.catalog import load_sources
from surrogate_dagster.hub.local_server import HubServer, HubUser
from surrogate_dagster.paths import REPO_ROOT

TOKEN = "hf_local_datasets_token_0123456789abcdef"
MIRROR = REPO_ROOT / "fixtures" / "hub"
BAD_LINES = [b'{"a": 1, "b": "x"}', b"not json at all", b"[1, 2, 3]", b'{"a": 2, "b": "y"}',
             b'{"a": "\xff\xfe broken"}', b"", b'{"a": 3, "b": "z"}']


def run_client(server: HubServer, tmp: Path, code: str, **env_extra: str) -> dict:
    """``code`` in a fresh interpreter pointed at the server; its last stdout line is JSON."""
    env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
           "HF_HOME": str(tmp / "hf_home"), "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": TOKEN, **env_extra}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert TOKEN not in proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fixture_hub(tmp_path_factory):
    with HubServer(MIRROR, [HubUser("alice", TOKEN, orgs={"axentx": "admin"})]) as server:
        yield server, tmp_path_factory.mktemp("datasets")


@pytest.fixture(scope="module")
def broken_hub(tmp_path_factory):
    """A mirror with one broken JSON Lines split, one clean split, and a parquet split."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("broken")
    repo = tmp / "mirror" / "datasets" / "org" / "broken"
    (repo / "default").mkdir(parents=True)
    (repo / "default" / "train.jsonl").write_bytes(b"\n".join(BAD_LINES) + b"\n")
    (repo / "default" / "test.jsonl").write_text('{"a": 10, "b": "t"}\n{"a": 11, "b": "u"}\n')
    (repo / "revision.txt").write_text("e" * 40 + "\n")
    pq_repo = tmp / "mirror" / "datasets" / "org" / "tabular"
    (pq_repo / "default").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2, 3], "b": ["p", "q", "r"]}), pq_repo / "default" / "train.parquet")
    (pq_repo / "revision.txt").write_text("f" * 40 + "\n")
    with HubServer(tmp / "mirror", [HubUser("alice", TOKEN)]) as server:
        yield server, tmp


def test_datasets_load_dataset_streams_a_mirrored_config_at_its_sha(fixture_hub):
    server, tmp = fixture_hub
    hf_id, config = "microsoft/rStar-Coder", "seed_sft"
    out = run_client(server, tmp, f"""
        import json
        from datasets import get_dataset_config_names, get_dataset_split_names, load_dataset
        ds = load_dataset("{hf_id}", "{config}", split="train", revision="{server.sha(hf_id)}", streaming=True)
        rows = list(ds)
        print(json.dumps({{"rows": rows, "configs": get_dataset_config_names("{hf_id}", revision="{server.sha(hf_id)}"),
                          "splits": get_dataset_split_names("nvidia/OpenCodeReasoning-2")}}, default=str))
    """)
    want = [json.loads(line) for line in (MIRROR / "datasets" / hf_id / config / "train.jsonl").read_text().splitlines()
            if line.strip()]
    assert out["rows"] == json.loads(json.dumps(want, default=str)) and len(want) > 0
    assert sorted(out["configs"]) == ["seed_sft", "synthetic_sft"]
    assert sorted(out["splits"]) == ["cpp", "python"]


PARITY = """
    import json
    from surrogate_dagster.catalog import load_sources
    from surrogate_dagster.hub.client import OfflineHub, OnlineHub
    online, offline = OnlineHub("axentx", "HF_TOKEN"), OfflineHub(MIRROR_PATH, "var/unused_pushes", "axentx")
    checked, diffs, counts = [], [], {}
    cat = load_sources()
    for spec in [*cat.sources, *cat.helpers]:
        on_sha = online.current_revision(spec.hf_id)
        off_sha = offline.current_revision(spec.hf_id)
        for config in spec.configs:
            for split in spec.splits:
                got = list(online.iter_rows(spec.hf_id, config, split, on_sha, spec.columns))
                want = list(offline.iter_rows(spec.hf_id, config, split, off_sha, spec.columns))
                checked.append([spec.name, config, split])
                counts["/".join(checked[-1])] = len(want)
                if json.dumps(got, sort_keys=True, default=str) != json.dumps(want, sort_keys=True, default=str):
                    diffs.append([spec.name, config, split, len(got), len(want)])
    print(json.dumps({"checked": checked, "diffs": diffs, "counts": counts}))
"""


def test_online_hub_iter_rows_equals_the_offline_mirror_for_every_catalog_split(fixture_hub):
    server, tmp = fixture_hub
    cat = load_sources()
    expected = sorted([s.name, c, sp] for s in [*cat.sources, *cat.helpers] for c in s.configs for sp in s.splits)
    out = run_client(server, tmp, PARITY.replace("MIRROR_PATH", repr(str(MIRROR))))
    assert sorted(out["checked"]) == expected
    assert out["diffs"] == []
    # Some helper splits are empty files in the mirror; every other split has rows on both sides.
    empty = {k for k, n in out["counts"].items() if n == 0}
    assert len(empty) < len(out["counts"]) / 4, empty
    # The JSON Lines were read through huggingface_hub, each file once, never the whole repo.
    resolved = [p for m, p, s in server.requests if m == "GET" and "/resolve/" in p and p.endswith(".jsonl")]
    assert resolved


def test_bad_lines_become_quarantine_rows_and_the_good_lines_survive(broken_hub):
    server, tmp = broken_hub
    out = run_client(server, tmp, f"""
        import json
        from surrogate_dagster.hub.client import OfflineHub, OnlineHub
        online, offline = OnlineHub("org", "HF_TOKEN"), OfflineHub({str(tmp / 'mirror')!r}, {str(tmp / 'p')!r}, "org")
        res = {{}}
        for split in ("train", "test"):
            res[split] = [list(online.iter_rows("org/broken", "default", split, "{server.sha('org/broken')}")),
                          list(offline.iter_rows("org/broken", "default", split, "{'e' * 40}"))]
        res["cols"] = [list(online.iter_rows("org/broken", "default", "train", "main", ["a"])),
                       list(offline.iter_rows("org/broken", "default", "train", "main", ["a"]))]
        res["parquet"] = list(online.iter_rows("org/tabular", "default", "train", "main"))
        res["parquet_cols"] = list(online.iter_rows("org/tabular", "default", "train", "main", ["b"]))
        try:
            from datasets import load_dataset
            list(load_dataset("org/broken", split="train", streaming=True))
            res["datasets_reader"] = "survived"
        except Exception as e:
            res["datasets_reader"] = type(e).__name__
        print(json.dumps(res))
    """)
    got, want = out["train"]
    assert got == want
    assert [r.get("a") for r in got if "__unreadable__" not in r] == [1, 2, 3]
    reasons = [r["__unreadable__"] for r in got if "__unreadable__" in r]
    assert len(reasons) == 3 and reasons[0].startswith("train.jsonl:2: ")
    assert "train.jsonl:3: a row must be a JSON object" in reasons and any("not UTF-8" in r for r in reasons)
    assert out["test"][0] == out["test"][1] == [{"a": 10, "b": "t"}, {"a": 11, "b": "u"}]
    assert out["cols"][0] == out["cols"][1]
    assert out["parquet"] == [{"a": 1, "b": "p"}, {"a": 2, "b": "q"}, {"a": 3, "b": "r"}]
    assert out["parquet_cols"] == [{"b": "p"}, {"b": "q"}, {"b": "r"}]
    # Why iter_rows reads JSON Lines itself: datasets' JSON reader fails the whole split.
    assert out["datasets_reader"] != "survived"
