"""Collect two checkpoints' lineages from the Dagster event log and report what differs.

    python -m surrogate_dagster.cli why-regressed --checkpoint-b stage2_checkpoint@latest \
        --checkpoint-a stage2_checkpoint@previous [--json out.json] [--markdown out.md]

(`python -m surrogate_dagster.operations.lineage_report` takes the same arguments.) Without a
previous materialization (a first run) A is the nearest earlier model that was materialized (the
previous stage, back to the base model), and the report says so; with none, it says why not.

A checkpoint is `ASSET[PARTITION]@WHICH`, WHICH one of `latest` (default), `previous`, `-N`
(the N-th materialization before the latest), a storage id, or a run id. For each upstream
(asset, partition) the lineage holds the materialization the checkpoint used: the one named by
Dagster's `dagster/input_event_pointer/<parent>` tag when it pins one (unpartitioned parents),
otherwise the latest one recorded before the consumer's own materialization.

The `regression_lineage_report` asset runs the same code from the UI; the eval gates link to it
(`report_link_metadata`), and the `regression_report_sensor` launches it when a gate fails.
"""


import argparse
import json
import re
import sys
from collections import deque
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetRecordsFilter,
    Config,
    DagsterInstance,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
)
from ..resources import ObjectStoreResource
from .lineage import diff_lineages, node_id, render_markdown

REPORT_ASSET = "regression_lineage_report"
DEFAULT_DEFINITIONS = "surrogate_dagster.definitions:defs"
# The tag prefix under which Dagster records, per parent, the materialization a step read
# (`dagster/input_event_pointer/<parent>`); Dagster exports no public name for it.
INPUT_EVENT_POINTER_TAG_PREFIX = "dagster/input_event_pointer"
_SEL = re.compile(r"^(?P<asset>[^\[@]+)(\[(?P<part>[^\]]+)\])?(@(?P<which>.+))?$")


class CheckpointNotFound(LookupError):
    """The checkpoint spec names no materialization in this instance."""


# ----------------------------------------------------------------------- event log access

def metadata_to_plain(metadata: dict) -> dict[str, Any]:
    """Dagster metadata values as plain JSON-able Python values."""
    out: dict[str, Any] = {}
    for k, v in (metadata or {}).items():
        val = getattr(v, "value", v)
        if hasattr(val, "to_string"):  # AssetKey values
            val = val.to_user_string()
        if isinstance(val, (str, int, float, bool, dict, list)) or val is None:
            out[k] = val
        else:
            out[k] = str(val)
    return out


def _event(record):
    entry = record.event_log_entry
    return entry.asset_materialization or entry.asset_observation


def _fetch(instance: DagsterInstance, key: AssetKey, partition: str | None, observable: bool,
           before: int | None = None, storage_ids: list[int] | None = None, limit: int = 1):
    flt = AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None,
                             before_storage_id=before, storage_ids=storage_ids)
    fetch = instance.fetch_observations if observable else instance.fetch_materializations
    return list(fetch(flt, limit=limit).records)


def parse_checkpoint(spec: str) -> tuple[AssetKey, str | None, str]:
    """`asset[partition]@which` -> (key, partition, which)."""
    m = _SEL.match(spec.strip())
    if not m:
        raise ValueError(f"checkpoint {spec!r}: expected ASSET[PARTITION]@WHICH, e.g. stage2_checkpoint@latest")
    return AssetKey.from_user_string(m["asset"]), m["part"], (m["which"] or "latest")


def resolve_checkpoint(instance: DagsterInstance, spec: str):
    """The materialization record a checkpoint spec names; CheckpointNotFound with what exists."""
    key, part, which = parse_checkpoint(spec)
    if which.isdigit() and len(which) < 16:
        recs = _fetch(instance, key, part, False, storage_ids=[int(which)])
    elif which in ("latest", "previous") or re.fullmatch(r"-\d+", which):
        back = 0 if which == "latest" else 1 if which == "previous" else int(which[1:])
        recs = _fetch(instance, key, part, False, limit=back + 1)[back:]
    else:  # a run id
        recs = [r for r in _fetch(instance, key, part, False, limit=200) if r.run_id.startswith(which)][:1]
    if not recs:
        n = len(_fetch(instance, key, part, False, limit=200))
        raise CheckpointNotFound(f"{spec}: no such materialization ({key.to_user_string()} has {n} in this instance)")
    return recs[0]


def latest_checkpoint_key(instance: DagsterInstance, asset_graph, group: str = "training") -> AssetKey:
    """The most recently materialized asset of `group` (the default checkpoint to explain)."""
    best = None
    for key in asset_graph.materializable_asset_keys:
        if asset_graph.get(key).group_name != group:
            continue
        recs = _fetch(instance, key, None, False)
        if recs and (best is None or recs[0].storage_id > best[0]):
            best = (recs[0].storage_id, key)
    if best is None:
        raise CheckpointNotFound(f"no asset of group {group!r} has been materialized yet")
    return best[1]


def _parent_partitions(instance, asset_graph, child: AssetKey, partition: str | None, parent: AssetKey):
    pnode = asset_graph.get(parent)
    if pnode.partitions_def is None:
        return [None]
    if partition is None:
        return list(pnode.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
    res = asset_graph.get_parent_partition_keys_for_child(partition, parent, child)
    return list(res.partitions_subset.get_partition_keys())


def collect_lineage(instance: DagsterInstance, asset_graph, record, max_nodes: int = 20000) -> dict:
    """Walk upstream from one materialization; every (asset, partition) with the event it used."""
    root_key = record.asset_key
    root = node_id(root_key.to_user_string(), record.partition_key)
    nodes: dict[str, dict] = {}
    queue = deque([(root_key, record.partition_key, record)])
    while queue:
        key, part, rec = queue.popleft()
        nid = node_id(key.to_user_string(), part)
        known = asset_graph.has(key)
        anode = asset_graph.get(key) if known else None
        entry: dict[str, Any] = {"asset": key.to_user_string(), "partition": part,
                                 "group": anode.group_name if anode else None, "parents": [], "missing": rec is None}
        if rec is not None:
            ev = _event(rec)
            tags = ev.tags or {}
            entry.update(storage_id=rec.storage_id, run_id=rec.run_id, timestamp=rec.timestamp,
                         data_version=tags.get("dagster/data_version"), code_version=tags.get("dagster/code_version"),
                         metadata=metadata_to_plain(ev.metadata))
        prev = nodes.get(nid)
        if prev is not None:
            # Reached again through another consumer: keep the newest version and note the others.
            if rec is None or prev.get("storage_id", -1) >= rec.storage_id:
                if rec is not None and rec.storage_id != prev.get("storage_id"):
                    prev.setdefault("also_used", []).append(rec.storage_id)
                continue
            entry.setdefault("also_used", []).append(prev.get("storage_id"))
        nodes[nid] = entry
        if len(nodes) > max_nodes:
            raise RuntimeError(f"lineage of {root} has more than {max_nodes} nodes; narrow it down")
        if anode is None or rec is None:
            continue
        tags = _event(rec).tags or {}
        for parent in sorted(anode.parent_keys, key=lambda k: k.to_user_string()):
            if not asset_graph.has(parent):
                continue
            observable = asset_graph.get(parent).is_observable and not asset_graph.get(parent).is_materializable
            ptr = tags.get(f"{INPUT_EVENT_POINTER_TAG_PREFIX}/{parent.to_user_string()}")
            for ppart in _parent_partitions(instance, asset_graph, key, part, parent):
                entry["parents"].append(node_id(parent.to_user_string(), ppart))
                prec = None
                if ppart is None and ptr and ptr.isdigit():
                    found = _fetch(instance, parent, None, observable, storage_ids=[int(ptr)])
                    prec = found[0] if found else None
                if prec is None:
                    found = _fetch(instance, parent, ppart, observable, before=rec.storage_id)
                    prec = found[0] if found else None
                queue.append((parent, ppart, prec))
    return {"root": root, "nodes": nodes}


def build_report(instance: DagsterInstance, asset_graph, checkpoint_a: str | None,
                 checkpoint_b: str | None, comparison: str | None = None) -> dict:
    """Resolve both checkpoints and diff their lineages. B defaults to the latest training asset;
    A defaults to B's previous materialization, or on a first run to what :func:`comparison_for`
    picks (the model before it). The report says what A is and why (`comparison`); with nothing
    to compare B with, it has no causes and `checkpoint_a` None, and `comparison` says why."""
    if not checkpoint_b:
        checkpoint_b = latest_checkpoint_key(instance, asset_graph).to_user_string() + "@latest"
    key, part, _ = parse_checkpoint(checkpoint_b)
    name_b = key.to_user_string() + (f"[{part}]" if part else "")
    if checkpoint_a in (None, "", f"{name_b}@previous") and part is None:
        checkpoint_a, comparison = comparison_for(instance, name_b, None)
    elif not checkpoint_a:
        checkpoint_a, comparison = f"{name_b}@previous", f"the previous materialization of {name_b}"
    rec_b = resolve_checkpoint(instance, checkpoint_b)
    if checkpoint_a is None:
        lin_b = collect_lineage(instance, asset_graph, rec_b)
        report = diff_lineages(lin_b, lin_b)
        report.update(causes=[], nodes=[], status_counts={}, a={"root": None})
    else:
        rec_a = resolve_checkpoint(instance, checkpoint_a)
        report = diff_lineages(collect_lineage(instance, asset_graph, rec_a),
                               collect_lineage(instance, asset_graph, rec_b))
    report["checkpoint_a"], report["checkpoint_b"] = checkpoint_a, checkpoint_b
    report["comparison"] = comparison or f"{checkpoint_a}, as asked"
    return report


def _count(instance, asset: str, limit: int = 2) -> int:
    return len(instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey(asset)), limit=limit).records)


def comparison_for(instance, checkpoint: str, baseline: str | None) -> tuple[str | None, str]:
    """What a checkpoint is compared with, and why: the gate's own baseline, else its previous
    materialization, else (a first run) the nearest earlier model of the eval catalog that has
    been materialized (the previous stage, back to the base model); (None, reason) when nothing
    to compare with exists yet."""
    from ..evals.config import load_eval_catalog

    if baseline:
        name = baseline.split("@", 1)[0]
        if _count(instance, name, 1):
            return (baseline if "@" in baseline else f"{baseline}@latest"), f"the gate's baseline {name}"
        return None, f"the gate's baseline {name} has no materialization"
    n = _count(instance, checkpoint)
    if n >= 2:
        return f"{checkpoint}@previous", f"the previous materialization of {checkpoint}"
    has = "has one materialization" if n else "has no materialization"
    catalog = load_eval_catalog()
    prev = catalog.previous(checkpoint) if checkpoint in catalog.checkpoints else None
    skipped = []
    while prev:
        if _count(instance, prev, 1):
            before = f" ({', '.join(skipped)} not materialized)" if skipped else ""
            what = "the base model" if prev == catalog.baseline else "the model before it"
            return f"{prev}@latest", f"{prev}, {what}{before}: {checkpoint} {has}"
        skipped.append(prev)
        prev = catalog.previous(prev) if prev in catalog.checkpoints else None
    return None, f"{checkpoint} {has} and no earlier model was materialized"


def report_link_metadata(checkpoint: str, baseline: str | None = None) -> dict[str, Any]:
    """Metadata an eval gate attaches to a failed check: a link to the report asset and the CLI line."""
    cmd = f"python -m surrogate_dagster.cli why-regressed --checkpoint-b {checkpoint}@latest " \
          f"--checkpoint-a {baseline or checkpoint + '@previous'}"
    return {"why_regressed": MetadataValue.asset(AssetKey(REPORT_ASSET)),
            "why_regressed_cli": MetadataValue.text(cmd),
            "checkpoint": checkpoint, **({"baseline_checkpoint": baseline} if baseline else {})}


# ----------------------------------------------------------------------- Dagster asset and job

def load_definitions(ref: str):
    """`MODULE:ATTR` -> the Definitions object it names (ATTR defaults to `defs`)."""
    import importlib

    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr or "defs")


def asset_graph_of(context: AssetExecutionContext, definitions: str = ""):
    """The code location's asset graph. A run launched by Dagster has its repository; an in-process
    `materialize()` has none (its job's graph holds only the selected assets): load `definitions`."""
    from dagster_shared.check import CheckError

    if definitions:
        return load_definitions(definitions).resolve_asset_graph()
    try:
        return context.repository_def.asset_graph
    except CheckError:
        return load_definitions(DEFAULT_DEFINITIONS).resolve_asset_graph()


class LineageReportConfig(Config):
    """Which checkpoints to compare (empty: the latest training asset vs its previous materialization)."""

    checkpoint_a: str = ""
    checkpoint_b: str = ""
    definitions: str = ""  # MODULE:ATTR whose asset graph to walk (default: this run's code location)
    comparison: str = ""  # why A was chosen (the sensor says; empty: the report works it out)


def _summary(report: dict, limit: int = 10) -> str:
    """What was compared with what (and why), the top cause, then the ranked causes as a table."""
    head = f"**{report['checkpoint_b']}** vs **{report['checkpoint_a'] or 'nothing'}**: {report['comparison']}"
    if report["checkpoint_a"] is None:
        return head + "\n\n_no report: nothing to compare with yet_"
    if not report["causes"]:
        return head + "\n\n_no upstream difference_"
    top = report["causes"][0]
    lines = [head, "", f"**Top cause:** {top['title']} (score {top['score']})", "",
             "| rank | cause | score |", "|---:|---|---:|"]
    for c in report["causes"][:limit]:
        lines.append(f"| {c['rank']} | {c['title'].replace('|', '/')} | {c['score']} |")
    return "\n".join(lines)


# The UI stores metadata in the event log and fetches it in one GraphQL answer: a report of a
# whole lineage (thousands of nodes) would exceed what the webserver accepts, so the metadata
# copy keeps the causes and the changed nodes, and the store keeps everything.
REPORT_METADATA_CHARS = 60_000


def report_for_ui(report: dict, limit: int = 20) -> str:
    """The Markdown report as the UI shows it: the ranked causes and the nodes that changed
    (unchanged ones only counted), cut at REPORT_METADATA_CHARS with a pointer to the full file."""
    changed = {**report, "nodes": [n for n in report["nodes"] if n["status"] not in
                                   ("same_materialization", "missing", "rematerialized_same_data")]}
    md = render_markdown(changed, limit=limit)
    if len(md) > REPORT_METADATA_CHARS:
        md = md[:REPORT_METADATA_CHARS].rsplit("\n", 1)[0] + "\n\n_(cut here: the full report is `report_uri`)_\n"
    return md


@asset(name=REPORT_ASSET, group_name="ops", kinds={"markdown"})
def regression_lineage_report(context: AssetExecutionContext, config: LineageReportConfig,
                              object_store: ObjectStoreResource) -> MaterializeResult:
    """Why did it regress: two checkpoints' lineages compared, causes ranked. The report renders in
    the UI (metadata `report`, the top cause in `summary`); the full JSON and Markdown are in the store."""
    graph = asset_graph_of(context, config.definitions)
    report = build_report(context.instance, graph, config.checkpoint_a or None, config.checkpoint_b or None,
                          config.comparison or None)
    context.log.info(f"{report['checkpoint_b']} compared with {report['checkpoint_a']}: {report['comparison']}")
    store = object_store.get_store()
    stem = f"ops/lineage_reports/{report['b'].get('storage_id')}_vs_{report['a'].get('storage_id')}"
    store.put_bytes(stem + ".json", json.dumps(report, default=str, indent=1).encode())
    store.put_bytes(stem + ".md", render_markdown(report).encode())
    top = report["causes"][0] if report["causes"] else None
    return MaterializeResult(metadata={
        "checkpoint_a": report["checkpoint_a"] or "none", "checkpoint_b": report["checkpoint_b"],
        "compared_with": report["comparison"],
        "top_cause": top["title"] if top else "none",
        "top_partition": (top or {}).get("partition") or "",
        "causes": len(report["causes"]), "nodes": len(report["nodes"]),
        "summary": MetadataValue.md(_summary(report)),
        "report": MetadataValue.md(report_for_ui(report)),
        "report_uri": store.uri(stem + ".md"), "report_json_uri": store.uri(stem + ".json"),
    })


regression_report_job = define_asset_job("regression_report_job", selection=[REPORT_ASSET],
                                         description="Explain a failed eval gate: lineage diff of two checkpoints")


# ----------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m surrogate_dagster.cli why-regressed", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint-a", default="", help="the good checkpoint (default: B's previous materialization)")
    ap.add_argument("--checkpoint-b", default="", help="the regressed checkpoint (default: latest training asset)")
    ap.add_argument("--json", help="write the full report as JSON here")
    ap.add_argument("--markdown", help="write the Markdown report here (default: print it)")
    ap.add_argument("--limit", type=int, default=20, help="causes to print")
    ap.add_argument("--definitions", default=DEFAULT_DEFINITIONS,
                    help="MODULE:ATTR of the Definitions whose asset graph to walk")
    args = ap.parse_args(argv)
    import os

    from .instance_home import NoInstanceHome, instance_home

    if not os.environ.get("DAGSTER_HOME"):
        # Read-only use of the instance `make run` created for the profile: no import of the CLI
        # (which loads the definitions, which load this module).
        try:
            home = instance_home()
        except NoInstanceHome as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if not (home / "dagster.yaml").is_file():
            print(f"error: no Dagster instance at {home} (run `make run` first, or set DAGSTER_HOME)",
                  file=sys.stderr)
            return 2
        os.environ["DAGSTER_HOME"] = str(home)
    defs = load_definitions(args.definitions)
    with DagsterInstance.get() as instance:
        try:
            report = build_report(instance, defs.resolve_asset_graph(), args.checkpoint_a or None,
                                  args.checkpoint_b or None)
        except (CheckpointNotFound, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    print(f"comparing {report['checkpoint_b']} with {report['checkpoint_a'] or 'nothing'}: {report['comparison']}",
          file=sys.stderr)
    md = render_markdown(report, limit=args.limit)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, default=str, indent=1)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(md)
    else:
        print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
