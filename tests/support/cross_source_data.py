"""Filtered rows and MinHash signatures of every catalog source, with duplicates planted across
sources, for the tests that run the cross-source steps concurrently."""

from __future__ import annotations

import random
from pathlib import Path

WORDS = ("parse", "list", "value", "index", "error", "return", "sorted", "string", "count", "merge",
         "window", "buffer", "token", "graph", "path", "cache", "queue", "stack", "tree", "node")


def _sentence(rng: random.Random, n: int = 40) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def _row(source: str, i: int, user: str, answer: str) -> dict:
    return {"id": f"{source}-{i}", "source": source, "kind": "sft",
            "messages": [{"role": "system", "content": "You are a coder."},
                         {"role": "user", "content": user}, {"role": "assistant", "content": answer}]}


def planted_rows(sources: list[str], rows_per_source: int = 12, seed: int = 7) -> dict[str, list[dict]]:
    """Per source: unique rows, an exact copy of a row of the source before it, and a near copy
    (one word of forty changed) of a row of the source two before it."""
    rng = random.Random(seed)
    out: dict[str, list[dict]] = {}
    for k, source in enumerate(sources):
        rows = [_row(source, i, _sentence(rng), _sentence(rng)) for i in range(rows_per_source)]
        if k >= 1:
            prev = out[sources[k - 1]][0]
            rows.append(_row(source, rows_per_source, prev["messages"][1]["content"], prev["messages"][2]["content"]))
        if k >= 2:
            far = out[sources[k - 2]][1]
            answer = far["messages"][2]["content"].split(" ")
            answer[3] = "changed0"
            rows.append(_row(source, rows_per_source + 1, far["messages"][1]["content"], " ".join(answer)))
        out[source] = rows
    return out


def build_inputs(root: Path) -> None:
    """The object store under ``root/store`` as filtered_rows and minhash_signatures leave it
    (signatures made by the asset itself, invoked directly, with a work dir that is then dropped)."""
    import shutil

    from dagster import build_asset_context

    from surrogate_dagster.curation.assets import minhash_signatures
    from surrogate_dagster.curation.resource import CurationSettings
    from surrogate_dagster.curation.stage_io import write_step
    from surrogate_dagster.resources import ObjectStoreResource
    from surrogate_dagster.sources.assets import CATALOG

    store_res = ObjectStoreResource(kind="local", root=str(root / "store"))
    store = store_res.get_store()
    for source, rows in planted_rows(list(CATALOG.names)).items():
        write_step(store, "filtered", source, f"v-{source}", rows)
    curation = CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2, work_dir=str(root / "build"))
    for source in CATALOG.names:
        minhash_signatures(build_asset_context(partition_key=source), object_store=store_res, curation=curation)
    shutil.rmtree(root / "build")
