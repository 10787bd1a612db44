"""One adapter call on one native row, where nothing the row does can fail its partition.

:func:`convert_row` returns a normalized row that meets the contract of adapters/base.py, or
raises :class:`Quarantine` with a stable reason; the caller stores the raw row under it:

- the adapter's own reasons (``missing_field``, ``bad_tool_call``, ...);
- ``too_deep``: the raw row, or JSON decoded from it, nests deeper than ``limits.MAX_DEPTH``
  (also when an adapter wrapped the depth error into a reason of its own: depth is the cause);
- ``adapter_timeout``: the call ran past the per-row budget (adapters/budget.py);
- ``adapter_error:<ExceptionType>``: any other exception, with its message as the detail. Such a
  row marks an adapter bug or an input nobody foresaw; it is kept and counted per type so it is
  seen, instead of failing every other row of the partition with it;
- ``adapter_incomplete`` / ``adapter_bad_output``: the adapter returned something off-contract;
- ``lone_surrogate``: some text of the output holds a lone UTF-16 surrogate.

:class:`CatalogError` (a config the adapter does not know) is not about the row and propagates.

Lone surrogates are quarantined, never repaired (e.g. to U+FFFD), and the same way wherever they
show up (``content_id`` raises the same reason): they only come from broken decoding upstream,
half of a UTF-16 pair escaped as ``\\udXXX`` in a JSON string or text cut mid-pair, so the rest
of the row is suspect too; a repair would put replacement characters into training targets,
which the model then learns to emit; and ids hashed from the native text inside an adapter would
no longer match a repaired text. Parquet cannot store them at all, so the check runs on every
output string before anything is written.
"""

from __future__ import annotations

from typing import Any, Callable

from .base import NORMALIZED_COLUMNS, AdapterContext, CatalogError, Quarantine
from .budget import BudgetExceeded, call_with_budget
from .limits import TooDeep, check_depth

ROW_BUDGET_S = 1.0  # seconds per row; real rows take milliseconds, a 10 MB row well under this
DETAIL_CHARS = 500


def convert_row(adapt: Callable[[dict, AdapterContext], dict], row: dict, ctx: AdapterContext,
                budget_s: float = ROW_BUDGET_S) -> dict:
    """``adapt(row, ctx)`` checked against the normalized contract; every failure is a Quarantine."""
    check_depth(row, "row")
    try:
        out = call_with_budget(lambda: adapt(row, ctx), budget_s)
    except CatalogError:
        raise
    except BudgetExceeded as exc:
        raise Quarantine("adapter_timeout", str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - every failure becomes a counted quarantine row
        deep = _too_deep_cause(exc)
        if deep is not None:
            raise deep from None
        if isinstance(exc, Quarantine):
            raise
        raise Quarantine(f"adapter_error:{type(exc).__name__}", _message(exc)) from exc
    return _checked(out)


def _too_deep_cause(exc: BaseException) -> TooDeep | None:
    """The TooDeep that ``exc`` is, or was raised from (a bounded walk of the cause chain)."""
    seen = 0
    node: BaseException | None = exc
    while node is not None and seen < 16:
        if isinstance(node, TooDeep):
            return node
        node = node.__cause__ or node.__context__
        seen += 1
    return None


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not fail the partition either
        text = f"<unprintable {type(exc).__name__}>"
    return text[:DETAIL_CHARS]


def _checked(out: Any) -> dict:
    """``out`` restricted to the normalized columns, after checking their types and text."""
    if not isinstance(out, dict):
        raise Quarantine("adapter_bad_output", f"returned a {type(out).__name__}")
    missing = [c for c in NORMALIZED_COLUMNS if c not in out]
    if missing:
        raise Quarantine("adapter_incomplete", f"missing {missing}")
    if not isinstance(out["id"], str) or not out["id"]:
        raise Quarantine("adapter_bad_output", f"id {out['id']!r:.80}")
    texts: list[str] = []
    for key in ("source", "kind", "chosen", "rejected", "tools", "meta"):
        if not isinstance(out[key], str):
            raise Quarantine("adapter_bad_output", f"{key} is a {type(out[key]).__name__}")
        texts.append(out[key])
    for key in ("messages", "prompt"):
        turns = out[key]
        if not isinstance(turns, list):
            raise Quarantine("adapter_bad_output", f"{key} is a {type(turns).__name__}")
        for i, m in enumerate(turns):
            if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise Quarantine("adapter_bad_output", f"{key}[{i}] is not a role/content turn")
            texts += (m["role"], m["content"])
    texts.append(out["id"])
    for text in texts:
        _require_utf8(text)
    return {c: out[c] for c in NORMALIZED_COLUMNS}


def _require_utf8(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Quarantine("lone_surrogate", f"{exc.object[exc.start:exc.end]!a} at {exc.start}") from None
