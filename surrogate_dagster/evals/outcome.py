"""What a release attempt reports, built from the gates, the report summaries and the lineage
(Dagster-free; the release asset gathers the inputs).

- ``scoreboard_rows``: one row per benchmark of the release checkpoint: score, target, verdict
  (``pass``, ``FAIL``, ``pending`` when a report it needs has not been computed yet, ``no target``
  where none is set, ``informative`` where the threshold is shown but does not gate) and variant, with the gates that did not pass.
- ``outcome_markdown`` (``outcome.md``): what was released (or why not): the checkpoint and its
  revision, the lineage (sources with their pins, mixtures, stages), the scoreboard, the gate
  verdict and the costs when the cost ledger has been materialized.
- ``knowledge_index_markdown`` (``knowledge_index.md``): every artifact of the release and where it
  lives: pushed repos with their revisions, eval reports, the model card, the scoreboard.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .gates import Gate, tally, tally_line

# What the release's own files in the model repo are (the rest is the policy, as it is served).
REPO_FILE_ROLES = {"README.md": "model card", "eval_results.json": "every report's score",
                   "release.json": "every gate's verdict", "outcome.md": "the release outcome",
                   "knowledge_index.md": "this index"}
_GATE_NAME = re.compile(r"^(?P<checkpoint>[^/]+)/(?P<bench>[^:]+): (?P<kind>.+)$")


def _parts(gate: Gate) -> tuple[str, str, str]:
    m = _GATE_NAME.match(gate.name)
    return (m["checkpoint"], m["bench"], m["kind"]) if m else ("", "", gate.name)


def _score(summary: dict | None) -> str:
    if summary is None:
        return "-"
    if summary.get("status") != "ok" or summary.get("score") is None:
        return "n/a"  # why: under the table (a long reason would widen every row)
    return f"{summary['score']:.2f}"


def scoreboard_rows(release_checkpoint: str, benches: Sequence[tuple[str, str]], summaries: dict,
                    gates: list[Gate]) -> list[dict[str, Any]]:
    """One row per (tier, benchmark): the release checkpoint's score and target, the verdict over
    every gate on that benchmark (the earlier checkpoints' regression gates included), its variant."""
    by_bench: dict[str, list[Gate]] = {}
    for g in gates:
        by_bench.setdefault(_parts(g)[1], []).append(g)
    rows = []
    for tier, b in benches:
        bg = by_bench.get(b, [])
        s = summaries.get((release_checkpoint, b))
        target = next((g.metadata.get("threshold") for g in bg
                       if _parts(g)[0] == release_checkpoint and _parts(g)[2] == "meets_target"), None)
        failed = [g for g in bg if not g.passed and not g.pending and g.blocking]
        pending = [g for g in bg if g.pending and g.blocking]
        informative = [g for g in bg if not g.passed and not g.blocking]
        target_gating = next((g.blocking for g in bg if _parts(g)[0] == release_checkpoint
                              and _parts(g)[2] == "meets_target"), True)
        verdict = ("FAIL" if failed else "pending" if pending else "no target" if target is None
                   else "informative" if not target_gating else "pass")
        rows.append({"benchmark": b, "tier": tier, "score": (s or {}).get("score") if (s or {}).get("status") == "ok"
                     else None, "score_text": _score(s), "target": target, "verdict": verdict,
                     "variant": (s or {}).get("variant") or "-",
                     "target_gating": target_gating,
                     "not_passed": [(g.name, g.description) for g in failed + pending + informative],
                     "not_evaluated": (s or {}).get("reason") or (s or {}).get("status")
                     if s is not None and s.get("status") != "ok" else None})
    return rows


def _esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def scoreboard_markdown(rows: list[dict[str, Any]]) -> str:
    """The table ("-": no report yet, "n/a": ran but not evaluated), then why each n/a was not evaluated."""
    lines = ["| benchmark | tier | score | target | verdict | variant |", "|---|---|---:|---:|---|---|"]
    for r in rows:
        target = "-" if r["target"] is None else f">= {r['target']:g}" + (
            "" if r.get("target_gating", True) else " (informative)")
        lines.append(f"| {r['benchmark']} | {r['tier']} | {_esc(r['score_text'])} | {target} | **{r['verdict']}** "
                     f"| {_esc(r['variant'])} |")
    notes = [f"- **{r['benchmark']}** not evaluated: {r['not_evaluated']}" for r in rows if r.get("not_evaluated")]
    return "\n".join(lines + ([""] + notes if notes else []))


def verdict_line(promoted: bool, gates: list[Gate]) -> str:
    return f"PROMOTED: every gate passed ({len(gates)} gates)" if promoted else \
        f"NOT PROMOTED: {tally_line(gates)}"


def _table(head: Sequence[str], rows: list[Sequence[Any]], empty: str) -> list[str]:
    if not rows:
        return [empty]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]


def outcome_markdown(*, repo_id: str, checkpoint: str, revision: str | None, promoted: bool, hub_uri: str | None,
                     gates: list[Gate], rows: list[dict[str, Any]], lineage: dict[str, Any],
                     pins: dict[str, dict[str, str]], costs: dict[str, Any] | None, generated_at: str) -> str:
    """``outcome.md``: the release attempt, every figure taken from its inputs."""
    t = tally(gates)
    lines = [f"# Release outcome: {repo_id}", "",
             f"- checkpoint: `{checkpoint}` at revision `{revision or 'never trained'}`",
             f"- verdict: **{verdict_line(promoted, gates)}**",
             f"- gates: {t['passed']} passed, {t['failed']} failed, {t['pending']} pending (not run yet), "
             f"{t['informative']} informative not met (not gating)",
             f"- pushed: {hub_uri or ('this repository' if promoted else 'nothing (the gates did not pass)')}",
             f"- written: {generated_at}", "", "## Scoreboard (release checkpoint)", "", scoreboard_markdown(rows), ""]
    lines += ["## Gates not passed", ""] + ([f"- `{name}`: {why}" for r in rows for name, why in r["not_passed"]]
                                            or ["none"]) + [""]
    lines += ["## Lineage", "", "### Stages", ""]
    lines += _table(["stage", "run (fingerprint)", "store prefix", "hub repo"],
                    [(a, s.get("run"), s.get("prefix"), s.get("hub_repo")) for a, s in lineage.get("stages", {}).items()],
                    "no stage checkpoint recorded")
    lines += ["", "### Mixtures", ""]
    lines += _table(["mixture", "data version", "rows"],
                    [(m, v.get("data_version"), v.get("rows")) for m, v in sorted(lineage.get("mixtures", {}).items())],
                    "no mixture recorded")
    lines += ["", "### Sources", ""]
    mirrored = lineage.get("sources", {})
    names = sorted(set(pins) | set(mirrored))
    lines += _table(["source", "hf id", "pinned revision", "mirrored revisions"],
                    [(n, pins.get(n, {}).get("hf_id", "-"), pins.get(n, {}).get("revision", "-"),
                      ", ".join(mirrored.get(n, [])) or "not mirrored") for n in names], "no source")
    lines += ["", "## Costs", ""]
    if costs:
        lines += _table(["figure", "value"], [(k, v) for k, v in costs.items()], "")
    else:
        lines.append("the cost ledger (`cost_ledger`) has not been materialized: no costs to report")
    return "\n".join(lines) + "\n"


def knowledge_index_markdown(*, repo_id: str, checkpoint: str, revision: str | None, promoted: bool,
                             hub_uri: str | None, repo_files: Sequence[str], store_files: dict[str, str],
                             lineage: dict[str, Any], stage_hub: dict[str, str], mixture_hub: dict[str, str],
                             mixture_store: dict[str, str], reports: dict[tuple[str, str], dict],
                             scoreboard_uri: str | None) -> str:
    """``knowledge_index.md``: every artifact of the release, where it lives and at which revision."""
    lines = [f"# Knowledge index: {repo_id}", "",
             f"Release of `{checkpoint}` at revision `{revision or 'never trained'}`; "
             + ("promoted." if promoted else "not promoted: nothing was pushed to the release repo."), "",
             "## Release", ""]
    rel_rows = [("release model repo", repo_id, hub_uri or ("this repository" if promoted else "not pushed"))]
    rel_rows += [(f"repo file `{f}` ({REPO_FILE_ROLES.get(f, 'policy')})", repo_id, "pushed" if promoted else "not pushed")
                 for f in repo_files]
    rel_rows += [(f"`{name}` (store copy)", uri, revision or "-") for name, uri in store_files.items()]
    if scoreboard_uri:
        rel_rows.append(("eval scoreboard", scoreboard_uri, "latest"))
    lines += _table(["artifact", "where", "revision"], rel_rows, "")
    lines += ["", "## Training stages", ""]
    lines += _table(["stage", "store prefix", "run (fingerprint)", "hub"],
                    [(a, s.get("prefix"), s.get("run"), stage_hub.get(a) or f"{s.get('hub_repo')} (not pushed)")
                     for a, s in lineage.get("stages", {}).items()], "no stage checkpoint recorded")
    lines += ["", "## Mixtures", ""]
    lines += _table(["mixture", "store (train.jsonl)", "data version", "hub"],
                    [(m, mixture_store.get(m, "-"), v.get("data_version"), mixture_hub.get(m, "not pushed"))
                     for m, v in sorted(lineage.get("mixtures", {}).items())], "no mixture recorded")
    lines += ["", "## Eval reports", ""]
    lines += _table(["checkpoint", "benchmark", "summary", "samples", "computed on revision"],
                    [(c, b, s.get("summary_uri", "-"), s.get("samples_uri", "-"),
                      (s.get("checkpoint") or {}).get("revision", "-")) for (c, b), s in sorted(reports.items())],
                    "no eval report")
    return "\n".join(lines) + "\n"
