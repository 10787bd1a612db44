"""Shared pieces of the tests/integration/test_ops_*.py files: a writable copy of the offline hub, a planted
upstream change, and a small downstream graph (mixture -> checkpoint) over the real sources group."""


import hashlib
import json
import shutil
from pathlib import Path

from dagster import AssetExecutionContext, DataVersion, MaterializeResult, MetadataValue, asset

from surrogate_dagster.paths import FIXTURES_DIR
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.sources.assets import CATALOG
from surrogate_dagster.sources.normalize import read_normalized

TOOL_SOURCES = ["hermes_function_calling", "xlam_function_calling", "when2call_sft"]


def hub_copy(tmp: Path) -> Path:
    """A writable copy of the shipped offline hub mirror."""
    dst = tmp / "hub"
    shutil.copytree(FIXTURES_DIR / "hub", dst)
    return dst


def plant_change(hub_dir: Path, source: str, keep_every: int = 2) -> str:
    """Upstream publishes a new commit of `source` with every `keep_every`-th row only.

    The old commit stays readable by its sha (`@<sha>/`, as the Hub keeps history), so the
    catalog's pin still mirrors what it mirrored before; `move_pin` is the reviewed edit.
    """
    spec = CATALOG.by_name(source)
    repo = hub_dir / "datasets" / spec.hf_id
    old = (repo / "revision.txt").read_text().strip()
    for d in [d for d in repo.iterdir() if d.is_dir() and not d.name.startswith("@")]:
        shutil.copytree(d, repo / f"@{old}" / d.name)
    for f in repo.rglob("*.jsonl"):
        if "@" in f.relative_to(repo).parts[0]:
            continue
        lines = f.read_text().splitlines(keepends=True)
        f.write_text("".join(lines[::keep_every]))
    new = hashlib.sha1(f"{old}:planted".encode()).hexdigest()
    (repo / "revision.txt").write_text(new + "\n")
    return new


def move_pin(source: str, revision: str):
    """Point the loaded catalog's entry at `revision` (what a one-line sources.yaml edit does).

    Returns the undo: the catalog object is shared by every module of the process.
    """
    i = next(i for i, s in enumerate(CATALOG.sources) if s.name == source)
    old = CATALOG.sources[i]
    CATALOG.sources[i] = old.model_copy(update={"revision": revision})

    def undo() -> None:
        CATALOG.sources[i] = old

    return undo


def make_resources(tmp: Path, hub_dir: Path) -> dict:
    return {"object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
            "hub": HubResource(mode="offline", mirror_dir=str(hub_dir), push_dir=str(tmp / "pushes"), org="test")}


def toy_downstream(sources: list[str] = TOOL_SOURCES):
    """A mixture over some sources' normalized rows and a checkpoint trained on it."""

    @asset(group_name="curation", deps=["normalized_rows"], code_version="mix-1")
    def toy_mixture(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
        store = object_store.get_store()
        comp, h = {}, hashlib.sha256()
        for s in sources:
            _, rows = read_normalized(store, s)
            comp[s] = len(rows)
            h.update(json.dumps(rows, sort_keys=True, default=str).encode())
        return MaterializeResult(data_version=DataVersion(h.hexdigest()[:16]),
                                 metadata={"rows": sum(comp.values()), "composition": MetadataValue.json(comp)})

    @asset(group_name="training", deps=[toy_mixture], code_version="train-1")
    def toy_checkpoint(context: AssetExecutionContext) -> MaterializeResult:
        return MaterializeResult(metadata={"training_config": MetadataValue.json({"lr": 1e-5, "epochs": 2}),
                                           "reference_model": "Qwen/Qwen2.5-Coder-7B-Instruct", "gpu_hours": 0.0})

    return toy_mixture, toy_checkpoint
