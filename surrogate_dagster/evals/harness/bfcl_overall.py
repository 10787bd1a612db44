"""BFCL's leaderboard overall: the formula of bfcl-eval's ``generate_leaderboard_csv``, as data.

Standard library only: this module is imported by the pipeline and by :mod:`.bfcl_eval_runner`
inside the bfcl-eval environment. ``tests/env/test_bfcl_overall_parity.py`` holds it to bfcl-eval's
own ``generate_leaderboard_csv`` (every category present, and categories missing).

The leaderboard's overall is a tree of means over category accuracies (bfcl-eval 2026.3.23):

    overall     = weights 10/10/10/30/40 over  non_live, live, irrelevance, multi_turn, agentic
    non_live    = mean(simple (= mean of simple_python, simple_java, simple_javascript), multiple,
                       parallel, parallel_multiple)
    live        = mean of live_simple, live_multiple, live_parallel, live_parallel_multiple, weighted
                  by their question counts
    irrelevance = mean(irrelevance, live_irrelevance)
    multi_turn  = mean(multi_turn_base, multi_turn_miss_func, multi_turn_miss_param, multi_turn_long_context)
    agentic     = mean(web_search (= mean of web_search_base, web_search_no_snippet),
                       memory (= mean of memory_kv, memory_vector, memory_rec_sum))

``live_relevance`` is shown on the leaderboard but is in no mean. bfcl-eval counts a category that
was not evaluated as 0 (``missing="zero"``: its own figure). ``missing="drop"`` leaves it out and
renormalizes the weights of what remains at every level: the leaderboard's weighting over the
categories that ran, the figure the gate reads when some categories cannot run.
"""

from __future__ import annotations

from typing import Any, Mapping

# (kind, children): kind "mean" (unweighted), "count" (weighted by total_count) or a weight list.
LEADERBOARD: tuple = ("weights", [10, 10, 10, 30, 40], [
    ("non_live", ("mean", None, [("simple", ("mean", None, ["simple_python", "simple_java", "simple_javascript"])),
                                 "multiple", "parallel", "parallel_multiple"])),
    ("live", ("count", None, ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"])),
    ("irrelevance", ("mean", None, ["irrelevance", "live_irrelevance"])),
    ("multi_turn", ("mean", None, ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                   "multi_turn_long_context"])),
    ("agentic", ("mean", None, [("web_search", ("mean", None, ["web_search_base", "web_search_no_snippet"])),
                                ("memory", ("mean", None, ["memory_kv", "memory_vector", "memory_rec_sum"]))])),
])
SHOWN_NOT_SCORED = ("live_relevance",)


def leaves(node: Any = LEADERBOARD) -> list[str]:
    """Every category the overall averages, in the leaderboard's order."""
    if isinstance(node, str):
        return [node]
    if len(node) == 2:  # (name, subtree)
        return leaves(node[1])
    return [c for child in node[2] for c in leaves(child)]


def _eval(node: Any, scores: Mapping[str, Mapping[str, float]], missing: str, groups: dict) -> dict | None:
    """{"accuracy", "total_count"} of a node, or None when nothing under it was evaluated (drop mode)."""
    if isinstance(node, str):
        s = scores.get(node)
        if s is None:
            if missing == "drop":
                return None
            raise KeyError(f"{node}: missing='zero' needs its question count (pass totals)")
        return {"accuracy": float(s["accuracy"]), "total_count": int(s["total_count"])}
    if len(node) == 2:
        name, sub = node
        got = _eval(sub, scores, missing, groups)
        if got is not None:
            groups[name] = got["accuracy"]
        return got
    kind, weights, children = node
    got = [(_eval(c, scores, missing, groups), w) for c, w in zip(children, weights or [1] * len(children))]
    got = [(g, w) for g, w in got if g is not None]
    if not got:
        return None
    total = sum(g["total_count"] for g, _ in got)
    if kind == "count":
        acc = sum(g["accuracy"] * g["total_count"] for g, _ in got) / total if total else 0.0
    elif kind == "mean":
        acc = sum(g["accuracy"] for g, _ in got) / len(got)
    else:
        wsum = sum(w for _, w in got)
        acc = sum(g["accuracy"] * w / wsum for g, w in got)
    return {"accuracy": acc, "total_count": total}


def overall(scores: Mapping[str, Mapping[str, float]], *, missing: str = "drop",
            totals: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The leaderboard overall (0..1) of ``scores`` ({category: {"accuracy": 0..1, "total_count": n}}).

    ``missing="drop"``: categories absent from ``scores`` are left out, weights renormalized;
    ``missing="zero"``: they count as accuracy 0 with their full question count (``totals``), as
    bfcl-eval's leaderboard does. Returns the overall, each group's accuracy, and which of the
    leaderboard's categories were used and missing."""
    if missing not in ("drop", "zero"):
        raise ValueError(f"missing={missing!r}: expected 'drop' or 'zero'")
    used = [c for c in leaves() if c in scores]
    absent = [c for c in leaves() if c not in scores]
    full = dict(scores)
    if missing == "zero":
        for c in absent:
            if totals is None or c not in totals:
                raise KeyError(f"{c}: missing='zero' needs its question count in totals")
            full[c] = {"accuracy": 0.0, "total_count": totals[c]}
    groups: dict[str, float] = {}
    res = _eval(LEADERBOARD, full, missing, groups)
    return {"overall": None if res is None else res["accuracy"], "groups": groups, "used": used,
            "missing": absent}
