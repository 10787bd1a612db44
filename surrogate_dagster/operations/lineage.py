"""Why did it regress: diff two checkpoints' lineages and rank what changed. No Dagster imports.

A lineage is a plain dict, built from the Dagster event log by `lineage_report.collect_lineage`:

    {"root": "stage2_checkpoint",
     "nodes": {"source_rows[xlam]": {"asset": "source_rows", "partition": "xlam", "group": "sources",
                                     "storage_id": 812, "run_id": "...", "timestamp": 1.7e9,
                                     "data_version": "...", "code_version": "...",
                                     "metadata": {"revision": "...", "rows": 40, ...},
                                     "parents": ["hf_revisions[xlam]"], "missing": False}, ...}}

`diff_lineages(a, b)` compares node by node (same asset and partition), classifies every field
that differs (HF revision, row and drop counts, composition, config and code versions, training
config, reference model), then groups the changes into *causes*: a change that originates at a
node (its own code/config/revision changed, or its data changed while none of its parents did).
Downstream changes are attached to the cause they follow from, and causes are ranked by how much
of the training data or recipe they moved (`score`, explained in `SCORING`). A config or model field
that changed below a changed input (a reference model retrained on moved data) is a *derived*
cause: listed, but ranked after every cause upstream of it. A value that only moved (the same path
under another checkout or store root, `relocated`) is no change at all.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from ..catalog.code_version import changed_modules

# Metadata keys that differ on every run and explain nothing (timings, locations, cache flags).
IGNORED_KEYS = {"seconds", "uri", "backup_uri", "hub_uri", "reused_existing_mirror", "signature_dir",
                "backup", "quarantine_table", "path", "key", "duration_s", "wall_seconds",
                "tokens_per_s", "samples_per_s", "timestamp", "started_at", "finished_at", "loss_curve"}
REVISION_KEYS = {"revision", "hf_revision", "upstream_revision"}
MODEL_KEYS = {"reference_model", "ref_model", "base_model", "model", "model_id", "base_checkpoint"}
COMPOSITION_KEYS = {"composition"}
ROW_KEY_RE = re.compile(r"(^|_)(rows?|docs|kept|dropped|quarantined|shortfall|items|pairs|examples)(_|$)")
CONFIG_KEY_RE = re.compile(r"(config|hyperparam|recipe)")

# How a cause's score is made (all terms are fractions in [0, 1], so they add up comparably):
#   composition: the largest change of the cause's share in any mixture downstream of it
#                (for a cause that is not one source, the mixture's total-variation distance)
#   rows:        the largest relative change of a row/drop count at the cause or its effects
#   prior:       a fixed weight by kind: a changed training config or reference model moves the
#                whole recipe, a bare data-version change with no visible size change moves little
SCORING = {"composition": 1.0, "rows": 0.5,
           "prior": {"training_config": 0.5, "model": 0.5, "code_version_training": 0.3,
                     "added": 0.2, "removed": 0.2, "hf_revision": 0.02, "config": 0.02,
                     "code_version": 0.02, "data": 0.01,
                     # a changed module that computes the data (named by the code version): a
                     # definite change of behaviour, weighed like a changed training recipe
                     "code_modules": 0.5}}


def node_id(asset: str, partition: str | None) -> str:
    """The id of an (asset, partition) node: `asset[partition]`, or `asset` when unpartitioned."""
    return f"{asset}[{partition}]" if partition is not None else asset


# ----------------------------------------------------------------------- field comparison

_MD_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*(-?[0-9][0-9_.,eE+-]*)\s*\|\s*$")


def parse_count_table(text: str) -> dict[str, float] | None:
    """A two-column Markdown table of counts (as `metadata.counts_table` writes) as a dict."""
    if not isinstance(text, str) or "|" not in text:
        return None
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _MD_ROW.match(line.strip())
        if m:
            try:
                out[m.group(1)] = float(m.group(2).replace(",", "").replace("_", ""))
            except ValueError:
                continue
    return out or None


def _numeric_dict(v: Any) -> dict[str, float] | None:
    if isinstance(v, dict) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                         for x in v.values()):
        return {str(k): float(x) for k, x in v.items()}
    return None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def relative_change(a: float, b: float) -> float:
    """|b - a| relative to the larger magnitude (0 when both are 0), in [0, 1]."""
    den = max(abs(a), abs(b))
    return 0.0 if den == 0 else min(1.0, abs(b - a) / den)


def shares(counts: dict[str, float]) -> dict[str, float]:
    total = sum(counts.values())
    return {k: (v / total if total else 0.0) for k, v in counts.items()}


def composition_shift(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """Per key, the absolute change of its share between two compositions."""
    sa, sb = shares(a), shares(b)
    return {k: abs(sb.get(k, 0.0) - sa.get(k, 0.0)) for k in set(sa) | set(sb)}


def total_variation(a: dict[str, float], b: dict[str, float]) -> float:
    return 0.5 * sum(composition_shift(a, b).values())


def classify(key: str, a: Any, b: Any, group: str | None = None) -> str:
    """The kind of a differing metadata field."""
    k = key.lower()
    if k in REVISION_KEYS or k.endswith("_revision"):
        return "hf_revision"
    if k in COMPOSITION_KEYS:
        return "composition"
    if k in MODEL_KEYS or k.endswith("_model"):
        return "model"
    if CONFIG_KEY_RE.search(k):
        return "training_config" if group == "training" else "config"
    if _numeric_dict(a) is not None or _numeric_dict(b) is not None:
        return "drop_counts"
    if parse_count_table(a) is not None or parse_count_table(b) is not None:
        return "drop_counts"
    if _is_number(a) or _is_number(b):
        return "rows" if ROW_KEY_RE.search(k) else "metric"
    return "text"


_HEXISH = re.compile(r"[0-9a-f]{7,}")


def _path_parts(v: Any) -> list[str] | None:
    """The components of an absolute path or URI (`/a/b`, `file:///a/b`, `s3://bucket/a/b`), else None."""
    if not isinstance(v, str) or any(c.isspace() for c in v):
        return None
    if "://" in v:
        v = v.split("://", 1)[1]
    elif not v.startswith("/"):
        return None
    return [p for p in v.split("/") if p]


def relocated(a: Any, b: Any) -> bool:
    """Whether two values name the same object at another location: two paths or URIs whose last
    two or more components agree and whose differing leading parts carry no revision-like token
    (a checkout at /work/main vs /tmp/clone, a local store vs a bucket holding the same keys)."""
    pa, pb = _path_parts(a), _path_parts(b)
    if pa is None or pb is None or pa == pb:
        return False
    k = 0
    while k < min(len(pa), len(pb)) and pa[-1 - k] == pb[-1 - k]:
        k += 1
    if k < 2:
        return False
    head = pa[:len(pa) - k] + pb[:len(pb) - k]
    return not any(_HEXISH.fullmatch(h) for h in head)


def equivalent(a: Any, b: Any) -> bool:
    """Equal, up to paths that only moved (:func:`relocated`), at any depth of dicts and lists."""
    if a == b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equivalent(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equivalent(x, y) for x, y in zip(a, b))
    return relocated(a, b)


def field_changes(ma: dict[str, Any], mb: dict[str, Any], group: str | None = None) -> list[dict]:
    """Every metadata field that differs between two materializations, with kind and magnitude.
    A value that only moved (the same path under another checkout or store root) is no change."""
    out = []
    for key in sorted(set(ma) | set(mb)):
        if key in IGNORED_KEYS or key.startswith("dagster/"):
            continue
        a, b = ma.get(key), mb.get(key)
        if equivalent(a, b):
            continue
        kind = classify(key, a, b, group)
        change: dict[str, Any] = {"field": key, "kind": kind, "a": a, "b": b, "magnitude": 1.0}
        if kind == "composition":
            da, db = _numeric_dict(a) or {}, _numeric_dict(b) or {}
            change["shift"] = composition_shift(da, db)
            change["magnitude"] = total_variation(da, db)
        elif kind == "drop_counts":
            da = _numeric_dict(a) or parse_count_table(a) or {}
            db = _numeric_dict(b) or parse_count_table(b) or {}
            if da == db:
                continue  # same counts, rendered differently
            change["a"], change["b"] = da, db
            change["delta"] = {k: db.get(k, 0) - da.get(k, 0) for k in sorted(set(da) | set(db))
                               if db.get(k, 0) != da.get(k, 0)}
            den = max(sum(da.values()), sum(db.values()), 1.0)
            change["magnitude"] = min(1.0, sum(abs(v) for v in change["delta"].values()) / den)
        elif _is_number(a) and _is_number(b):
            change["magnitude"] = relative_change(float(a), float(b))
        out.append(change)
    return out


# ----------------------------------------------------------------------- node comparison

def compare_nodes(na: dict | None, nb: dict | None) -> dict:
    """How one (asset, partition) differs between lineage A and B."""
    base = nb or na or {}
    res: dict[str, Any] = {"asset": base.get("asset"), "partition": base.get("partition"),
                           "group": base.get("group"), "a": _pointer(na), "b": _pointer(nb), "changes": []}
    if na is None or na.get("missing"):
        res["status"] = "missing" if (nb is None or nb.get("missing")) else "added"
        return res
    if nb is None or nb.get("missing"):
        res["status"] = "removed"
        return res
    if na.get("storage_id") is not None and na.get("storage_id") == nb.get("storage_id"):
        res["status"] = "same_materialization"
        return res
    changes = field_changes(na.get("metadata") or {}, nb.get("metadata") or {}, base.get("group"))
    if na.get("code_version") != nb.get("code_version"):
        kind = "code_version_training" if base.get("group") == "training" else "code_version"
        # Self-describing versions (catalog/code_version.py) name the modules whose source changed.
        changes.insert(0, {"field": "code_version", "kind": kind, "a": na.get("code_version"),
                           "b": nb.get("code_version"), "magnitude": 1.0,
                           "modules": changed_modules(na.get("code_version"), nb.get("code_version"))})
    dv_changed = na.get("data_version") != nb.get("data_version")
    if dv_changed:
        changes.insert(0, {"field": "data_version", "kind": "data", "a": na.get("data_version"),
                           "b": nb.get("data_version"), "magnitude": 1.0})
    res["changes"] = changes
    if dv_changed or (na.get("data_version") is None and changes):
        res["status"] = "changed"
    else:
        res["status"] = "rematerialized_same_data" if not changes else "changed_metadata_only"
    return res


def _pointer(n: dict | None) -> dict | None:
    if not n or n.get("missing"):
        return None
    return {k: n.get(k) for k in ("storage_id", "run_id", "timestamp", "data_version", "code_version")}


def _changed(c: dict) -> bool:
    return c["status"] in ("changed", "added", "removed", "changed_metadata_only")


# ----------------------------------------------------------------------- causes and ranking

_OWN_KINDS = {"hf_revision", "config", "training_config", "model", "code_version", "code_version_training"}


def _descendants(nodes: dict[str, dict]) -> dict[str, set[str]]:
    children: dict[str, set[str]] = defaultdict(set)
    for nid, n in nodes.items():
        for p in n.get("parents", []):
            children[p].add(nid)
    memo: dict[str, set[str]] = {}

    def walk(nid: str) -> set[str]:
        if nid in memo:
            return memo[nid]
        memo[nid] = set()  # cycle guard (lineage graphs are DAGs, but a bad input must not hang)
        out: set[str] = set()
        for c in children.get(nid, ()):
            out |= {c} | walk(c)
        memo[nid] = out
        return out

    return {nid: walk(nid) for nid in nodes}


def diff_lineages(a: dict, b: dict) -> dict:
    """Compare lineages A (the good checkpoint) and B (the regressed one); rank the causes."""
    ids = sorted(set(a["nodes"]) | set(b["nodes"]))
    merged = {i: (b["nodes"].get(i) or a["nodes"].get(i)) for i in ids}
    parents = {i: set((b["nodes"].get(i) or {}).get("parents", [])) | set((a["nodes"].get(i) or {}).get("parents", []))
               for i in ids}
    graph = {i: {**merged[i], "parents": sorted(parents[i])} for i in ids}
    desc = _descendants(graph)
    diffs = {i: compare_nodes(a["nodes"].get(i), b["nodes"].get(i)) for i in ids}
    changed = {i for i, d in diffs.items() if _changed(d)}

    # Own changes -> raw causes, then merged across partitions when the same change hit many.
    raw: list[dict] = []
    for i in ids:
        d = diffs[i]
        if i not in changed:
            continue
        if d["status"] in ("added", "removed"):
            raw.append(_cause(d["status"], i, d, [{"field": "lineage", "kind": d["status"], "a": None, "b": None}]))
            continue
        own = [c for c in d["changes"] if c["kind"] in _OWN_KINDS]
        parent_changed = any(p in changed for p in parents[i])
        if not parent_changed and own:
            raw.append(_cause(_strongest(own), i, d, own))
        elif not parent_changed:
            raw.append(_cause("data", i, d, d["changes"][:1]))
        else:
            # A code version is the node's own even when its inputs also changed (it hashes the
            # node's modules and config section). A config or model field can follow from the
            # inputs (a reference model retrained because its data moved): still listed, as a
            # *derived* cause, ranked after every change upstream of it.
            mine = [c for c in own if c["kind"] != "hf_revision"]
            if mine:
                cause = _cause(_strongest(mine), i, d, mine)
                cause["derived"] = not any(c["kind"].startswith("code_version") for c in mine)
                raw.append(cause)
    causes = _merge_partitions(raw)

    mixtures = {i: next(c for c in diffs[i]["changes"] if c["kind"] == "composition")
                for i in ids if any(c["kind"] == "composition" for c in diffs[i]["changes"])}
    for cause in causes:
        _score(cause, diffs, desc, changed, mixtures)
    causes.sort(key=lambda c: (-c["score"], c["title"]))
    causes = _upstream_first(causes, desc)
    for rank, c in enumerate(causes, 1):
        c["rank"] = rank
    for c in causes:
        c["follows"] = [causes[j]["rank"] for j in c.pop("_after", ())]
    counts: dict[str, int] = defaultdict(int)
    for d in diffs.values():
        counts[d["status"]] += 1
    return {"a": {"root": a["root"], **(_pointer(a["nodes"].get(a["root"])) or {})},
            "b": {"root": b["root"], **(_pointer(b["nodes"].get(b["root"])) or {})},
            "status_counts": dict(counts), "causes": causes,
            "nodes": [{"id": i, **diffs[i]} for i in ids], "scoring": SCORING}


def _upstream_first(causes: list[dict], desc: dict[str, set[str]]) -> list[dict]:
    """`causes` (sorted by score) with every derived cause moved after the causes upstream of it:
    an input whose revision or content moved outranks a config or model change it brought about.
    Each derived cause keeps the positions of those upstream causes in `_after`."""
    reach = [set().union(*(desc.get(n, set()) for n in c["nodes"])) for c in causes]
    waits = {i: ({j for j in range(len(causes)) if j != i and set(causes[i]["nodes"]) & reach[j]}
                 if causes[i].get("derived") else set()) for i in range(len(causes))}
    order: list[int] = []
    pending = list(range(len(causes)))
    while pending:
        # the best-scored cause whose upstream causes are placed (the first one: a cycle guard)
        pick = next((i for i in pending if waits[i] <= set(order)), pending[0])
        pending.remove(pick)
        order.append(pick)
    pos = {i: k for k, i in enumerate(order)}
    out = []
    for i in order:
        c = causes[i]
        c["_after"] = sorted(pos[j] for j in waits[i])
        out.append(c)
    return out


def _strongest(changes: list[dict]) -> str:
    """The kind among `changes` with the highest prior (a node's own changes form one cause)."""
    return max((c["kind"] for c in changes), key=lambda k: SCORING["prior"].get(k, 0.0))


def _cause(kind: str, nid: str, d: dict, changes: list[dict]) -> dict:
    return {"kind": kind, "nodes": [nid], "asset": d["asset"], "partition": d["partition"],
            "group": d["group"], "changes": [{k: c[k] for k in ("field", "kind", "a", "b", "modules") if k in c} for c in changes]}


def _merge_partitions(raw: list[dict]) -> list[dict]:
    """One cause per (asset, kind, a->b) when the same code/config change hit many partitions."""
    merged: dict[tuple, dict] = {}
    out = []
    for c in raw:
        if c["kind"] in ("code_version", "code_version_training", "config", "training_config"):
            sig = (c["asset"], c["kind"], repr([(x["field"], x["a"], x["b"]) for x in c["changes"]]))
            if sig in merged:
                merged[sig]["nodes"].append(c["nodes"][0])
                merged[sig]["partition"] = None
                continue
            merged[sig] = c
        out.append(c)
    return out


def _score(cause: dict, diffs: dict, desc: dict, changed: set, mixtures: dict) -> None:
    reach = set(cause["nodes"])
    for n in cause["nodes"]:
        reach |= desc.get(n, set())
    effects = sorted((reach - set(cause["nodes"])) & changed)
    part = cause["partition"]
    comp, comp_detail = 0.0, []
    for m, change in mixtures.items():
        if m not in reach:
            continue
        shift = change.get("shift", {})
        if part is not None and part in shift:
            s = shift[part]
            a = (_numeric_dict(change["a"]) or {}).get(part, 0)
            b = (_numeric_dict(change["b"]) or {}).get(part, 0)
            comp_detail.append({"mixture": m, "key": part, "share_shift": round(s, 4), "rows_a": a, "rows_b": b,
                                "share_a": round(shares(_numeric_dict(change["a"]) or {}).get(part, 0.0), 4),
                                "share_b": round(shares(_numeric_dict(change["b"]) or {}).get(part, 0.0), 4)})
        else:
            s = change["magnitude"]
            comp_detail.append({"mixture": m, "total_variation": round(s, 4)})
        comp = max(comp, s)
    rows = 0.0
    row_detail = []
    for n in [*cause["nodes"], *effects]:
        if part is not None and diffs[n]["partition"] not in (part, None):
            continue  # another source's counts moved for its own reasons (or via cross-source steps)
        for c in diffs[n]["changes"]:
            if c["kind"] in ("rows", "drop_counts"):
                rows = max(rows, c["magnitude"])
                row_detail.append({"node": n, "field": c["field"], "a": c["a"], "b": c["b"],
                                   "change": round(c["magnitude"], 4)})
    prior = SCORING["prior"].get(cause["kind"], 0.01)
    if any(m != "cfg" for c in cause["changes"] for m in c.get("modules") or ()):
        prior = max(prior, SCORING["prior"]["code_modules"])
    cause["score"] = round(SCORING["composition"] * comp + SCORING["rows"] * rows + prior, 4)
    cause["composition"] = sorted(comp_detail, key=lambda x: -x.get("share_shift", x.get("total_variation", 0)))
    cause["row_changes"] = sorted(row_detail, key=lambda x: -x["change"])[:20]
    cause["effects"] = effects
    cause["title"] = _title(cause)


def _short(v: Any) -> str:
    s = str(v)
    return s[:12] if re.fullmatch(r"[0-9a-f]{16,}", s) else (s if len(s) <= 40 else s[:37] + "...")


def short_pair(a: Any, b: Any, width: int = 40) -> tuple[str, str]:
    """Short forms of two differing values that keep where they differ: of two dicts, only the
    keys whose values differ (three at most, then a count); of two long paths that differ at
    their end, their last components; of other long strings, the part from just before the first
    differing character; a long hex digest, its first 12 characters."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in sorted(set(a) | set(b), key=str) if not equivalent(a.get(k), b.get(k))]
        more = f", +{len(keys) - 3} more" if len(keys) > 3 else ""
        parts = [(k, *short_pair(a.get(k, "-"), b.get(k, "-"), 24)) for k in keys[:3]]
        return ("{" + ", ".join(f"{k}: {x}" for k, x, _ in parts) + more + "}",
                "{" + ", ".join(f"{k}: {y}" for k, _, y in parts) + more + "}")
    sa, sb = str(a), str(b)
    if re.fullmatch(r"[0-9a-f]{16,}", sa) and re.fullmatch(r"[0-9a-f]{16,}", sb):
        return sa[:12], sb[:12]
    if len(sa) <= width and len(sb) <= width:
        return sa, sb
    pa, pb = _path_parts(sa), _path_parts(sb)
    if pa and pb and pa[-2:] != pb[-2:]:
        # paths that differ at the end: their last components (where checkouts never differ)
        def tail(parts: list[str]) -> str:
            out = parts[-1]
            for p in reversed(parts[:-1]):
                if len(out) + len(p) + 1 > width:
                    return ".../" + out
                out = f"{p}/{out}"
            return out

        return tail(pa), tail(pb)
    same = 0
    while same < min(len(sa), len(sb)) and sa[same] == sb[same]:
        same += 1
    start = max(0, same - 8)

    def cut(s: str) -> str:
        return ("..." if start else "") + s[start:start + width] + ("..." if len(s) > start + width else "")

    return cut(sa), cut(sb)


def _title(c: dict) -> str:
    who = c["partition"] or c["asset"]
    where = c["nodes"][0] if len(c["nodes"]) == 1 else f"{c['asset']} ({len(c['nodes'])} partitions)"
    ch = c["changes"][0] if c["changes"] else {}
    what = {"hf_revision": "HF revision", "code_version": "code version", "code_version_training": "code version",
            "config": "config", "training_config": "training config", "model": "model", "data": "data",
            "added": "added (not in A's lineage)", "removed": "removed (only in A's lineage)"}.get(c["kind"], c["kind"])
    text = f"{who}: {what}"
    if ch.get("modules"):
        text += " changed in " + ", ".join(m if m != "cfg" else "its config" for m in ch["modules"])
    elif c["kind"] not in ("added", "removed"):
        sa, sb = short_pair(ch.get("a"), ch.get("b"))
        text += f" {sa} -> {sb}"
    text += f" at {where}"
    if c.get("composition") and "share_shift" in c["composition"][0]:
        top = c["composition"][0]
        text += f"; {top['mixture']} share {top['share_a']:.1%} -> {top['share_b']:.1%}"
    elif c.get("composition"):
        text += f"; {c['composition'][0]['mixture']} composition moved (TV {c['composition'][0]['total_variation']:.3f})"
    return text


# ----------------------------------------------------------------------- rendering

def render_markdown(report: dict, limit: int = 20) -> str:
    """The report as Markdown: ranked causes first, then every node and which materialization each used."""
    a, b = report["a"], report["b"]
    if "checkpoint_a" in report and report["checkpoint_a"] is None:
        return f"# Why did it regress: {b['root']}\n\nNothing to compare it with yet: {report['comparison']}\n"
    lines = [f"# Why did it regress: {b['root']} (B) vs {a['root']} (A)", "",
             f"A: storage id {a.get('storage_id')}, run {str(a.get('run_id'))[:8]}; "
             f"B: storage id {b.get('storage_id')}, run {str(b.get('run_id'))[:8]}", "",
             *([f"Compared with {report['checkpoint_a']}: {report['comparison']}", ""]
               if report.get("comparison") else []),
             "Nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(report["status_counts"].items())), "",
             "## Causes, most likely first", ""]
    if not report["causes"]:
        lines.append("_no upstream difference: both checkpoints used the same materializations_")
    for c in report["causes"][:limit]:
        lines.append(f"{c['rank']}. **{c['title']}** (score {c['score']})")
        if c.get("follows"):
            lines.append("   - follows from " + ", ".join(f"#{r}" for r in c["follows"])
                         + " (upstream of it; ranked after)")
        for ch in c["changes"][:4] if c["kind"] not in ("added", "removed") else ():
            sa, sb = short_pair(ch["a"], ch["b"])
            lines.append(f"   - {ch['field']}: `{sa}` -> `{sb}`")
        for r in c["row_changes"][:4]:
            lines.append(f"   - {r['node']} {r['field']}: {_fmt(r['a'])} -> {_fmt(r['b'])}")
        if c["effects"]:
            more = f" (+{len(c['effects']) - 6} more)" if len(c["effects"]) > 6 else ""
            lines.append(f"   - downstream: {', '.join(c['effects'][:6])}{more}")
    lines += ["", "## Every upstream node", "", "| node | status | A (storage id, data version) | "
              "B (storage id, data version) | changed fields |", "|---|---|---|---|---|"]
    order = {"changed": 0, "added": 1, "removed": 2, "changed_metadata_only": 3}
    for n in sorted(report["nodes"], key=lambda n: (order.get(n["status"], 9), n["id"])):
        pa, pb = n["a"] or {}, n["b"] or {}
        fields = ", ".join(sorted({c["field"] for c in n["changes"]}))[:80]
        lines.append(f"| {n['id']} | {n['status']} | {pa.get('storage_id', '-')}, {_short(pa.get('data_version', '-'))} | "
                     f"{pb.get('storage_id', '-')}, {_short(pb.get('data_version', '-'))} | {fields} |")
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in list(v.items())[:5]) + ("..." if len(v) > 5 else "") + "}"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
