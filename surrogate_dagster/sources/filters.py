"""Mirror-time keep-rules from the catalog (`filters:`), as pure functions."""

from __future__ import annotations

from typing import Any

from ..catalog.models import RowFilter

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f", ""}


class Uncoercible(ValueError):
    """A value whose type cannot be made to fit the rule (e.g. average_test_score = "n/a")."""


def _coerce(value: Any, how: str | None) -> Any:
    if how is None or value is None:
        return value
    try:
        if how == "float":
            return float(value)
        if how == "int":
            return int(float(value))
        if how == "str":
            return str(value)
        if how == "lower":
            return str(value).strip().lower()
        if how == "bool":
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s in _TRUE:
                return True
            if s in _FALSE:
                return False
            raise ValueError(s)
    except (TypeError, ValueError) as e:
        raise Uncoercible(f"{value!r} is not {how}") from e
    raise ValueError(f"unknown coercion {how!r}")


def passes(rule: RowFilter, row: dict, config: str) -> bool:
    """True when the row is kept by `rule`; raises Uncoercible for values of the wrong type."""
    if rule.configs is not None and config not in rule.configs:
        return True
    if rule.column not in row:
        raise Uncoercible(f"column {rule.column!r} missing")
    v = _coerce(row[rule.column], rule.coerce)
    if rule.op == "truthy":
        return bool(_coerce(v, "bool")) if isinstance(v, str) else bool(v)
    if v is None:
        return False
    target = rule.value
    if rule.coerce in ("float", "int") and target is not None and rule.op != "in":
        target = _coerce(target, rule.coerce)
    if rule.op == "in":
        return v in target
    try:
        return {
            ">=": v >= target, ">": v > target, "<=": v <= target, "<": v < target,
            "==": v == target, "!=": v != target,
        }[rule.op]
    except TypeError as e:  # comparing e.g. str with float: the value has the wrong type
        raise Uncoercible(f"{v!r} cannot be compared with {target!r}") from e
